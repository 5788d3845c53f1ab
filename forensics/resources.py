"""Files that ship with the package: SQL, report templates, the bundled sample data."""

from __future__ import annotations

from pathlib import Path


def resource_dir(name: str) -> Path:
    """`forensics/<name>` in an installed wheel, else `<name>/` at the top of the source tree."""
    here = Path(__file__).resolve().parent
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"{name}/ is neither in {here} nor in {here.parent}")
