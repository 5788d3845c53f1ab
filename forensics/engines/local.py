"""The local engine: bring the store's facts up to date, one session at a time.

Only sessions whose inputs or rules changed are rebuilt (store/facts.py). Their events
and parts are read a run of sessions at a time (about CHUNK_EVENTS events), so memory
holds one run's rows and one batch of fact rows (written every BATCH_EVENTS events,
each batch its own transaction): it does not grow with the number of sessions. An
interrupted refresh keeps the batches it wrote; the next one rebuilds the rest.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from ..analysis.facts import (
    FACT_SCHEMAS,
    FACT_TABLES,
    RULES_VERSION,
    failed_facts,
    session_facts,
)
from ..analysis.reconstruct import StageProgress
from ..errors import FactsInterrupted, StoreError
from ..store import Store
from ..store import facts as stored
from ..store.facts import Key
from ..store.reads import build_sessions, session_release_evidence, traced_windows

BATCH_EVENTS = 20_000  # fact rows of about this many events are written at once
# The store's DuckDB buffers at most this much while the stale sessions are read out
# of it, as while ingesting (ingest/pipeline.py).
FACTS_MEMORY_LIMIT = "256MB"



@dataclass(frozen=True)
class Refresh:
    """What one refresh rebuilt."""

    sessions: int  # sessions rebuilt
    events: int  # their events
    calls: int  # fact rows of calls written
    seconds: float
    failed: tuple[tuple[Key, str], ...] = ()  # sessions whose rebuild raised, and why


def refresh(store: Store, progress: StageProgress | None = None, *, every: bool = False) -> Refresh:
    """Rebuild the facts of every session whose inputs or rules changed (all of them
    with `every`); a no-op when no ingest ran since the last refresh."""
    started = time.perf_counter()
    if store.read_only:
        raise StoreError(f"{store.path} is open read-only; building facts needs it writable")
    if not every and stored.is_current(store, RULES_VERSION):
        return Refresh(0, 0, 0, 0.0)
    through = stored.newest_ingest(store)
    todo = stored.stale(store, RULES_VERSION, every=every)
    with store.memory_limit(FACTS_MEMORY_LIMIT):
        done = _rebuild(store, todo, progress)
    stored.mark_current(store, RULES_VERSION, through)
    seconds = time.perf_counter() - started
    return Refresh(len(todo), done.events, done.calls, seconds, tuple(done.failed))


@dataclass
class _Batch:
    """Fact rows not written yet, and the running counts."""

    tables: dict[str, list] = field(default_factory=lambda: {t: [] for t in FACT_TABLES})
    stamps: dict[Key, str] = field(default_factory=dict)
    failed: list[tuple[Key, str]] = field(default_factory=list)  # all failed so far
    pending: int = 0  # events of the sessions in `tables`
    events: int = 0  # events rebuilt so far
    calls: int = 0
    written: int = 0  # sessions written

    def flush(self, store: Store) -> None:
        if self.stamps:
            stored.write(store, self.tables, self.stamps, FACT_SCHEMAS)
            self.written += len(self.stamps)
        self.tables, self.stamps, self.pending = {t: [] for t in FACT_TABLES}, {}, 0


def _rebuild(
    store: Store, todo: list[tuple[Key, int, str]], progress: StageProgress | None
) -> _Batch:
    """Stream the sessions of `todo` out of the store, rebuild each, write in batches."""
    batch = _Batch()
    if not todo:
        return batch
    total = sum(n for _, n, _ in todo)
    stamps = {key: stamp for key, _, stamp in todo}
    evidence = session_release_evidence(store)
    traced: dict[str, dict[str, tuple[dict[str, int], int]]] = defaultdict(dict)
    for (session_id, event_id), sizes in traced_windows(store).items():
        traced[session_id][event_id] = sizes
    try:
        counts = {key: n for key, n, _ in todo}
        for key, event_rows, part_rows in stored.stale_rows(store, list(counts), counts):
            try:
                (session,) = build_sessions(event_rows, part_rows)
                session.release = evidence.get(key)
                facts = session_facts(session, traced.get(key[2], {}))
            except Exception as e:  # one session's data never stops the others
                (row,) = failed_facts(key, len(event_rows), e).tables["fact_sessions"]
                batch.tables["fact_sessions"].append(row)
                batch.failed.append((key, row["error"]))
                batch.stamps[key] = stamps[key]
                continue
            for table, rows in facts.tables.items():
                batch.tables[table] += rows
            batch.stamps[key] = stamps[key]
            batch.pending += len(event_rows)
            batch.events += len(event_rows)
            batch.calls += len(facts.tables["fact_calls"])
            if batch.pending >= BATCH_EVENTS:
                batch.flush(store)
            if progress:
                progress("building facts", batch.events, total)
        batch.flush(store)
    except KeyboardInterrupt:
        raise FactsInterrupted(
            f"Interrupted: the facts of {batch.written:,} of {len(todo):,} sessions were built"
            " and kept; `forensics analyze` builds the rest."
        ) from None
    return batch
