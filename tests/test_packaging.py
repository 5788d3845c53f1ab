"""A plain, non-editable wheel carries the SQL, the report folder and the sample data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_ships_queries_and_samples(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                    str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("agent_forensics-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    queries = sorted((ROOT / "queries").rglob("*.sql"))
    assert queries
    for sql in queries:
        assert f"forensics/queries/{sql.relative_to(ROOT / 'queries').as_posix()}" in names
    for sample in ("adk_v1.db", "adk_v0.db", "adk_sqlite_service.db",
                   "exports/incident.camel.json"):
        assert f"forensics/sample_data/{sample}" in names
    assert "forensics/report_templates/incident.html.j2" in names
    assert "forensics/cli/__init__.py" in names
    assert "forensics/py.typed" in names
