"""The layout holds: the layer contracts of pyproject.toml, and mypy finds no error.

Both are the checks a reviewer runs by hand (`lint-imports`, `mypy`); here they run
with the suite so a broken layer or a type error fails CI.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"{name} is not installed next to {sys.executable}: pip install -e '.[dev]'")
    return found


def test_import_contracts_are_kept():
    out = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout
    kept = [line for line in out.stdout.splitlines() if line.rstrip().endswith("KEPT")]
    assert len(kept) >= 6, out.stdout


def test_mypy_finds_no_error():
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-2000:]


def test_the_package_ships_its_type_information():
    assert (ROOT / "forensics" / "py.typed").is_file()
