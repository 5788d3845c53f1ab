"""The local DuckDB store: schema, idempotent ingest of loader batches, the ledger."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import duckdb

from . import queries
from .errors import StoreError
from .normalize import Normalized, Normalizer
from .sources.base import Skip, Source

SCHEMA_VERSION = 1
DEFAULT_DB = "forensics.duckdb"
MAX_SKIPS_KEPT = 500  # per ingest: enough to name bad rows without bloating the ledger
WATERMARK_OVERLAP_S = 600.0
# While ingesting, the store's DuckDB buffers at most this much (see normalize.MEMORY_LIMIT).
INGEST_MEMORY_LIMIT = "256MB"


def run(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> list[tuple]:
    """Execute and fetch to the end: DuckDB 2 refuses new work while a result is open."""
    return con.execute(sql, params).fetchall()


def default_db_path() -> Path:
    return Path(os.environ.get("FORENSICS_DB") or DEFAULT_DB)


def connect(
    path: str | Path | None = None, *, read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open the store; a read-only open of a missing file is a StoreError with a hint."""
    path = Path(path) if path is not None else default_db_path()
    if read_only and not path.exists():
        raise StoreError(
            f"no store at {path}",
            hint="load something first, e.g. `forensics ingest adk-sqlite sessions.db`, "
            "or point --db / FORENSICS_DB at an existing store",
        )
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as e:
        raise StoreError(f"cannot open store {path}: {e}") from e
    if read_only:
        _check_version(con, path)
    else:
        _migrate(con, path)
    return con


def _stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    exists = run(
        con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'store_meta'"
    )[0][0]
    if not exists:
        return None
    rows = run(con, "SELECT value FROM store_meta WHERE key = 'schema_version'")
    return int(rows[0][0]) if rows else None


def _check_version(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    version = _stored_version(con)
    if version is None:
        raise StoreError(f"{path} is not a forensics store (no store_meta table)")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema {version}; this forensics reads up to {SCHEMA_VERSION}",
            hint="upgrade agent-forensics",
        )


def _migrate(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    version = _stored_version(con)
    if version is not None:
        _check_version(con, path)
        return
    run(con, "BEGIN")
    run(con, queries.load("schema_1").sql)
    run(con, "INSERT INTO store_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
    run(con, "COMMIT")


@dataclass
class IngestResult:
    """What one ingest run read, loaded and skipped."""

    ingest_id: int
    kind: str
    location: str
    filters: dict[str, object]
    rows_read: int = 0
    rows_loaded: int = 0
    skips: list[Skip] = field(default_factory=list)
    watermark_before: float | None = None
    watermark: float | None = None
    seconds: float = 0.0
    incremental: bool = False

    @property
    def rows_skipped(self) -> int:
        return len(self.skips)

    @property
    def rows_already_stored(self) -> int:
        return self.rows_read - self.rows_loaded - self.rows_skipped

    @property
    def skip_reasons(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skips).most_common())

    def as_record(self) -> dict[str, object]:
        """The run as one row of the `ingests` JSON contract (skip_reasons as JSON text)."""
        return {
            "ingest_id": self.ingest_id,
            "source": f"{self.kind}:{self.location}",
            "rows_read": self.rows_read,
            "rows_loaded": self.rows_loaded,
            "rows_skipped": self.rows_skipped,
            "rows_already_stored": self.rows_already_stored,
            "skip_reasons": json.dumps(self.skip_reasons),
            "watermark": self.watermark,
            "seconds": round(self.seconds, 3),
        }


def watermark(
    con: duckdb.DuckDBPyConnection, kind: str, location: str, filters: dict
) -> float | None:
    """Newest event timestamp a previous successful ingest of this source and filters saw."""
    row = run(
        con,
        "SELECT max(watermark) FROM ingests WHERE status = 'ok' AND kind = ? AND location = ? "
        "AND filters = ?::JSON",
        [kind, location, json.dumps(filters, sort_keys=True)],
    )
    return row[0][0] if row else None


Progress = Callable[[IngestResult], None]
T = TypeVar("T")


def ingest(
    con: duckdb.DuckDBPyConnection,
    source: Source,
    *,
    filters: dict[str, object] | None = None,
    incremental: bool = True,
    progress: Progress | None = None,
) -> IngestResult:
    """Load every batch of `source` in one transaction; a failure commits nothing.

    A failed run is still written to the ledger (status `failed`, with the error)
    in a transaction of its own, so the ledger tells what was tried.
    """
    filters = filters or {}
    filters_json = json.dumps(filters, sort_keys=True)
    newest_seen = watermark(con, source.kind, source.location, filters) if incremental else None
    # Re-read a margin before it: a writer's clock, or a commit that landed after
    # the last read with an earlier timestamp, must not drop events; the store
    # keeps an event once, so the overlap costs reading only.
    since = None if newest_seen is None else newest_seen - WATERMARK_OVERLAP_S
    ingest_id = run(con, "SELECT nextval('ingest_ids')")[0][0]
    result = IngestResult(
        ingest_id,
        source.kind,
        source.location,
        filters,
        watermark_before=since,
        incremental=incremental,
    )
    started = datetime.now(UTC).replace(tzinfo=None)
    clock = time.monotonic()
    source_label = f"{source.kind}:{source.location}"
    (memory_before,) = run(con, "SELECT current_setting('memory_limit')")[0]
    run(con, f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
    run(con, "BEGIN")
    try:
        for batch in prefetch(_normalized(source, since)):
            result.rows_read += batch.rows_read
            result.skips.extend(batch.skipped)
            con.register("new_events", batch.events)
            con.register("new_parts", batch.parts)
            con.register("new_sessions", batch.sessions)
            try:
                insert = queries.load("insert_events").sql
                result.rows_loaded += run(con, insert, {"ingest_id": ingest_id})[0][0]
                run(con, queries.load("insert_parts").sql)
                run(
                    con,
                    queries.load("insert_sessions").sql,
                    {"source": source_label, "ingest_id": ingest_id},
                )
            finally:
                for name in ("new_events", "new_parts", "new_sessions"):
                    con.unregister(name)
            if batch.newest is not None:
                result.watermark = max(batch.newest, result.watermark or batch.newest)
            if progress:
                progress(result)
        result.seconds = time.monotonic() - clock
        _write_ledger(con, result, filters_json, started, "ok", None)
        run(con, "COMMIT")
    except BaseException as e:
        run(con, "ROLLBACK")
        result.seconds = time.monotonic() - clock
        try:
            run(con, "BEGIN")
            _write_ledger(con, result, filters_json, started, "failed", _describe(e))
            run(con, "COMMIT")
        except duckdb.Error:
            pass
        raise
    finally:
        run(con, "SET memory_limit = ?", [memory_before])
    return result


def _normalized(source: Source, since: float | None) -> Iterator[Normalized]:
    """The source's batches, normalised; reading runs one batch ahead in its own thread."""
    normalizer = Normalizer()
    batches = prefetch(source.batches(since))
    try:
        for batch in batches:
            yield normalizer(batch)
    finally:
        batches.close()
        normalizer.close()


def prefetch(batches: Iterator[T], depth: int = 1) -> Iterator[T]:
    """Run `batches` in a thread of its own, `depth` items ahead of the consumer.

    Ingest chains two: reading (network, JSON text) runs ahead of normalising,
    which runs ahead of inserting; DuckDB releases the GIL while it works, so
    the three overlap. The reader stops, and closes its source, as soon as the
    consumer goes away (error, interrupt) or the source is done.
    """
    box: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def reader() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        box.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            item: object = done
        except BaseException as e:  # handed to the consumer, raised there
            item = e
        finally:
            close = getattr(batches, "close", None)
            if close:
                close()
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    thread = threading.Thread(target=reader, name="forensics-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = box.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)


def _describe(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    return f"{type(error).__name__}: {error}"


def _write_ledger(
    con, result: IngestResult, filters_json: str, started: datetime, status: str, error: str | None
) -> None:
    run(
        con,
        "INSERT INTO ingests VALUES (?, ?, ?, ?::JSON, ?, ?, ?, ?, ?, ?, ?, ?::JSON, ?, ?)",
        [
            result.ingest_id,
            result.kind,
            result.location,
            filters_json,
            started,
            datetime.now(UTC).replace(tzinfo=None),
            status,
            error,
            result.rows_read,
            result.rows_loaded if status == "ok" else 0,
            result.rows_skipped,
            json.dumps(result.skip_reasons),
            result.watermark_before,
            result.watermark if status == "ok" else None,
        ],
    )
    kept = result.skips[:MAX_SKIPS_KEPT]
    if kept:
        con.executemany(
            "INSERT INTO ingest_skips VALUES (?, ?, ?)",
            [(result.ingest_id, s.locator, s.reason) for s in kept],
        )
