"""`forensics demo` from a plain, non-editable install in a fresh virtual environment."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_from_a_wheel_in_a_fresh_venv(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("agent_forensics-*.whl")
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    result = subprocess.run([str(tmp_path / "env" / "bin" / "forensics"), "demo", "--db",
                             str(tmp_path / "demo.duckdb")], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    report = Path(re.search(r"Incident report: (\S+)", result.stdout).group(1))
    assert report.is_file() and report.stat().st_size > 20_000
    con = sqlite3.connect(ROOT / "sample_data" / "adk_v1.db")
    events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    assert f"Loaded {events:,} events" in result.stdout
    # the installed package does not reach back into the source tree
    where = subprocess.run([str(python), "-c", "import forensics; print(forensics.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert str(tmp_path / "env") in where
