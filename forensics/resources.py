"""Files that ship with the package: SQL, report templates, the bundled sample data."""

from __future__ import annotations

from pathlib import Path

# In a wheel the top-level folders sit inside the package (pyproject.toml's force-include);
# the templates under another name, as forensics/reports/ is the reports' code.
_IN_WHEEL = {"reports": "report_templates"}


def resource_dir(name: str) -> Path:
    """The folder `name` of the source tree's top level, or its copy in an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / _IN_WHEEL.get(name, name), here.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"{name}/ is neither in {here} nor in {here.parent}")
