"""The store's schema, versioned in `store_meta`: created on first write, checked on read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import sql
from ..errors import StoreError

SCHEMA_VERSION = 1
Run = Callable[..., list[tuple[Any, ...]]]


def stored_version(run: Run) -> int | None:
    exists = run(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'store_meta'"
    )[0][0]
    if not exists:
        return None
    rows = run("SELECT value FROM store_meta WHERE key = 'schema_version'")
    return int(rows[0][0]) if rows else None


def check(run: Run, path: Path) -> None:
    version = stored_version(run)
    if version is None:
        raise StoreError(f"{path} is not a forensics store (no store_meta table)")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema {version}; this forensics reads up to {SCHEMA_VERSION}",
            hint="upgrade agent-forensics",
        )


def migrate(run: Run, path: Path) -> None:
    if stored_version(run) is not None:
        check(run, path)
        return
    run("BEGIN")
    run(sql.load("store/schema_1").sql)
    run("INSERT INTO store_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    run("COMMIT")
