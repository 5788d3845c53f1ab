"""The ingest ledger: one row per run (what was read, loaded, skipped and why, the
watermark), and the skipped rows themselves, the first few hundred of each run."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import duckdb

from ..errors import TERMINATED
from ..model import Skip
from ..sanitize import storable
from .handle import Store, _interrupted

MAX_SKIPS_KEPT = 500  # per ingest: enough to name bad rows without bloating the ledger
WATERMARK_OVERLAP_S = 600.0


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
    notes: dict[str, object] = field(default_factory=dict)  # what the source found out
    rows_ignored: int = 0  # read and understood, but not about agents (a web server's span)
    rows_conflicting: int = 0  # of the skips: events stored already with other content
    source_key: str | None = None  # what the watermark is kept by; None: the location

    @property
    def rows_skipped(self) -> int:
        return len(self.skips)

    @property
    def rows_already_stored(self) -> int:
        return self.rows_read - self.rows_loaded - self.rows_skipped - self.rows_ignored

    @property
    def nothing_loaded(self) -> bool:
        """Nothing loaded because nothing read could be: every row skipped, none already
        stored (an event stored already with other content is: read again, it is no
        failure). The command fails, and the ledger says so (not `ok`)."""
        return bool(self.rows_skipped and not self.rows_loaded and not self.rows_already_stored
                    and not self.rows_conflicting)  # fmt: skip

    @property
    def skip_reasons(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skips).most_common())

    def as_record(self) -> dict[str, object]:
        """The run as one row of the `ingest_run` JSON contract (skip_reasons as JSON text)."""
        return {
            "ingest_id": self.ingest_id,
            "source": storable(f"{self.kind}:{self.location}"),
            "rows_read": self.rows_read,
            "rows_loaded": self.rows_loaded,
            "rows_skipped": self.rows_skipped,
            "rows_already_stored": self.rows_already_stored,
            "skip_reasons": json.dumps(self.skip_reasons),
            "watermark": self.watermark,
            "seconds": round(self.seconds, 3),
            "notes": json.dumps(self.notes),
        }


def now() -> datetime:
    """The ledger's clock: UTC, naive (the store's TIMESTAMP columns hold UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


def filters_json(filters: dict[str, object]) -> str:
    return json.dumps(filters, sort_keys=True)


def watermark(store: Store, kind: str, key: str, filters: dict[str, object]) -> float | None:
    """Newest event timestamp a previous successful ingest of this source (its key, not
    the location it was given as) and filters saw."""
    row = store.run(
        "SELECT max(watermark) FROM ingests WHERE status = 'ok' AND kind = ? "
        "AND source_key = ? AND filters = ?::JSON",
        [kind, storable(key), filters_json(filters)],  # (as `write` stores them)
    )
    return row[0][0] if row else None


def next_id(store: Store) -> int:
    return int(store.run("SELECT nextval('ingest_ids')")[0][0])


def write(
    store: Store,
    result: IngestResult,
    started: datetime,
    finished: datetime,
    status: str,
    error: str | None,
    committed: bool = False,
) -> None:
    """The run's ledger row and its first MAX_SKIPS_KEPT skipped rows; `committed`: a run
    that committed as it went, so what it loaded counts whatever its status. A run that
    finished having loaded nothing it read (`nothing_loaded`) is `failed`."""
    if status == "ok" and result.nothing_loaded:
        status = "failed"
        error = f"nothing loaded: each of the {result.rows_skipped:,} read was skipped"
    store.run(
        "INSERT INTO ingests VALUES "
        "(?, ?, ?, ?::JSON, ?, ?, ?, ?, ?, ?, ?, ?::JSON, ?, ?, ?::JSON, ?)",
        [
            result.ingest_id,
            result.kind,
            storable(result.location),
            filters_json(result.filters),
            started,
            finished,
            status,
            None if error is None else storable(error),
            result.rows_read,
            result.rows_loaded if status == "ok" or committed else 0,
            result.rows_skipped,
            json.dumps(result.skip_reasons),
            result.watermark_before,
            result.watermark if status == "ok" else None,
            json.dumps(result.notes) if result.notes else None,
            storable(result.source_key or result.location),
        ],
    )
    kept = result.skips[:MAX_SKIPS_KEPT]
    if kept:
        store.con.executemany(
            "INSERT INTO ingest_skips VALUES (?, ?, ?)",
            [(result.ingest_id, storable(s.locator), storable(s.reason)) for s in kept],
        )


def finished_ok(store: Store, ingest_id: int) -> bool:
    """Whether the run's own ledger row says `ok`: its last transaction committed (a stop
    that lands just after that COMMIT, before the code knows, stops a run that ended).
    False where the store cannot say."""
    try:
        rows = store.run("SELECT count(*) FROM ingests WHERE ingest_id = ? AND status = 'ok'",
                         [ingest_id])  # fmt: skip
    except duckdb.Error:
        return False
    return bool(rows[0][0])


def is_interrupt(error: BaseException) -> bool:
    """Ctrl-C, however it surfaced: Python's, or DuckDB's own forms of it (handle's
    `_interrupted`: its InterruptException, a bare RuntimeError from inside an Arrow
    scan, its InvalidInputException naming the KeyboardInterrupt)."""
    return isinstance(error, KeyboardInterrupt) or _interrupted(error)


def write_stopped(
    store: Store,
    result: IngestResult,
    started: datetime,
    finished: datetime,
    error: BaseException,
    committed: bool = False,
) -> None:
    """The ledger row of a run that did not finish (`interrupted` or `failed`, with why),
    in a transaction of its own; it never raises over the error it records. `committed`:
    the run committed as it went, and what it loaded stays."""
    stopped = is_interrupt(error)
    status = "interrupted" if stopped else "failed"
    kept = (
        f"the {result.rows_loaded:,} records loaded before it are kept; the same run again "
        "loads the rest"
        if committed
        else "nothing committed"
    )
    how = "terminated (SIGTERM)" if TERMINATED.is_set() else "interrupted (Ctrl-C)"
    why = f"{how}; {kept}" if stopped else f"{type(error).__name__}: {error}"
    try:
        with store.transaction():
            write(store, result, started, finished, status, why, committed)
    except (duckdb.Error, KeyboardInterrupt):
        pass
