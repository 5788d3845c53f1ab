"""A Parquet export (`forensics export parquet`) read back into a store, as one ingest."""

from __future__ import annotations

import time
from pathlib import Path

from .. import sql
from ..errors import ForensicsError
from ..sanitize import shell_word
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
            _sessions_held(store, folder, result.ingest_id)
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


def _sessions_held(store: Store, folder: Path, ingest_id: int) -> None:
    """Refused (the run undone) when an event loaded has no session: an export's files
    are found by their folders (app_name=..., user_id=...), so a folder renamed or moved
    by hand stored its events under an app or user their session is not of."""
    found = store.run(sql.load("store/import/sessionless_events").sql, {"ingest_id": ingest_id})
    if found:
        app, user, session, events = found[0]
        raise ForensicsError(
            f"{folder}: {events:,} event{'s' if events != 1 else ''} of app "
            f"{shell_word(app)}, user {shell_word(user)}, session {shell_word(session)} "
            "belong to no session of the export or the store (a partition folder such as "
            f"events/app_name={app} renamed or moved?); nothing was loaded",
            hint="copy the export again as it was written, or export again with "
            "`forensics export parquet DIR`",
        )
