"""Facts as Parquet: the folder both engines write (`forensics analyze --output DIR`).

One folder per fact table (FACT_SCHEMAS' columns; Parquet files inside, however many
the engine wrote) and `manifest.json`: the format, the rules version that built the
facts, the engine and its master, the export it read and the rows per table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..analysis.facts import RULES_VERSION
from ..errors import ForensicsError

FORMAT = "agent-forensics-facts"
FORMAT_VERSION = 1


def check_output(folder: Path) -> None:
    """`folder` is new (it is created) or empty: facts never mix with other files."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ForensicsError(
            f"{folder} is not an empty folder: the facts are never written over other files",
            hint="give a new folder (it is created), or empty this one",
        )
    folder.mkdir(parents=True, exist_ok=True)


def write_manifest(
    folder: Path,
    engine: str,
    master: str | None,
    source: dict[str, Any],
    rows: dict[str, int],
    seconds: float,
) -> None:
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "rules_version": RULES_VERSION,
        "engine": engine,
        "master": master,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "seconds": round(seconds, 3),
        "source": {k: source.get(k) for k in ("format", "version", "store_schema", "selection")},
        "tables": {name: {"rows": n} for name, n in rows.items()},
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
