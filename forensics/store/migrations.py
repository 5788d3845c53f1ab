"""The store's schema, versioned in `store_meta`: created on first write, upgraded in steps.

Version 1 is queries/store/schema_1.sql; each later version N is the step
queries/store/migrate_N.sql from N-1. A store of an older version opened read-only is
upgraded first (handle.py): the store is this toolkit's own file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import sql
from ..errors import StoreError

SCHEMA_VERSION = 15
Run = Callable[..., list[tuple[Any, ...]]]


def stored_version(run: Run) -> int | None:
    exists = run("SELECT count(*) FROM information_schema.tables WHERE table_name = 'store_meta'")[
        0
    ][0]
    if not exists:
        return None
    rows = run("SELECT value FROM store_meta WHERE key = 'schema_version'")
    return int(rows[0][0]) if rows else None


def check(run: Run, path: Path) -> None:
    version = stored_version(run)
    if version is None and is_blank(run):
        return
    if version is None:
        raise StoreError(f"{path} is not a forensics store (no store_meta table)")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema {version}; this forensics reads up to {SCHEMA_VERSION}",
            hint="upgrade agent-forensics",
        )


def is_blank(run: Run) -> bool:
    """A DuckDB file with no tables: a store whose creation was interrupted (Ctrl-C
    between creating the file and committing the schema)."""
    return run("SELECT count(*) FROM information_schema.tables")[0][0] == 0


def needs_upgrade(run: Run) -> bool:
    version = stored_version(run)
    if version is None:
        return is_blank(run)  # create the schema it never got
    return version < SCHEMA_VERSION


def migrate(run: Run, path: Path) -> None:
    """Create the schema, or bring an older one up to SCHEMA_VERSION, in one transaction."""
    version = stored_version(run)
    if version is not None:
        check(run, path)
    if version == SCHEMA_VERSION:
        return
    run("BEGIN")
    if version is None:
        run(sql.load("store/schema_1").sql)
        run("INSERT INTO store_meta VALUES ('schema_version', '1')")
        version = 1
    for step in range(version + 1, SCHEMA_VERSION + 1):
        run(sql.load(f"store/migrate_{step}").sql)
    run("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])
    run("COMMIT")
