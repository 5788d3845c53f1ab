"""A Parquet export (`forensics export parquet`) read back into a store, as one ingest."""

from __future__ import annotations

import time
from pathlib import Path

from ..store import Store, ledger
from ..store.ledger import IngestResult
from ..store.parquet import Export, load, read_export


def ingest_parquet(store: Store, folder: Path, export: Export | None = None) -> IngestResult:
    """Every row of the export the store lacks, in one transaction; the ledger records
    the run (rows read: the export's events; loaded: those newly stored). `export`: the
    folder's `read_export`, where the caller has it."""
    if export is None:
        export = read_export(folder)  # refused before anything is written
    manifest = export.manifest
    result = IngestResult(ledger.next_id(store), "parquet", str(folder), {})
    started, clock = ledger.now(), time.monotonic()
    try:
        with store.transaction():
            read, not_read = load(store, export, result.ingest_id)
            result.rows_read = read["events"]
            (loaded,) = store.run(
                "SELECT count(*) FROM events WHERE ingest_id = ?", [result.ingest_id]
            )[0]
            result.rows_loaded = int(loaded)
            result.notes = {
                "export": f"format {manifest['version']}, store schema "
                f"{manifest.get('store_schema')}, exported {manifest.get('exported_at')}",
                "rows_read": read,
            }
            if not_read:  # columns of a newer forensics, links to folders
                result.notes["not_read"] = not_read
            result.seconds = time.monotonic() - clock
            ledger.write(store, result, started, ledger.now(), "ok", None)
    except BaseException as e:
        result.seconds = time.monotonic() - clock
        ledger.write_stopped(store, result, started, ledger.now(), e)
        raise
    return result
