"""The local engine: bring the store's facts up to date, sessions spread over the cores.

Only sessions whose inputs or rules changed are rebuilt (store/facts.py). Their events
and parts are read a run of sessions at a time (about CHUNK_EVENTS events), so memory
holds a few runs' rows and one batch of fact rows (written every BATCH_EVENTS events,
each batch its own transaction): it does not grow with the number of sessions. An
interrupted refresh keeps the batches it wrote; the next one rebuilds the rest.

Sessions are independent, so the runs are rebuilt in worker processes (`workers`), each
run's fact rows handed back as Arrow tables and written in the order the runs were read:
the store is the same whatever the number of workers (tests/test_facts_workers.py).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import duckdb
import pyarrow as pa

from ..analysis import kept_growth
from ..analysis.facts import (
    FACT_SCHEMAS,
    FACT_TABLES,
    RULES_VERSION,
    TracedSizes,
    failed_facts,
    session_facts,
)
from ..analysis.reconstruct import StageProgress
from ..analysis.stored import store_fits, stored_fits
from ..cost import stored as priced
from ..cost.billed import price_store
from ..cost.prices import PriceBook
from ..cost.stored import book_of
from ..errors import (
    FactsInterrupted,
    ForensicsError,
    StoreError,
    cancelled,
    stops_held,
    waited,
    worker_pool,
)
from ..model import Release
from ..settings import workers  # (--workers, FORENSICS_WORKERS)
from ..store import Store
from ..store import facts as stored
from ..store.arrow import columns_table
from ..store.facts import Key
from ..store.ledger import is_interrupt
from ..store.reads import session_of, session_release_evidence, session_tables, traced_windows
from ..whatif import kept as guard_kept

BATCH_EVENTS = 20_000  # fact rows of about this many events are written at once
# The store's DuckDB buffers at most this much while the stale sessions are read out
# of it, as while ingesting (ingest/pipeline.py).
FACTS_MEMORY_LIMIT = "256MB"
# Below this many events, the rebuild stays in this process: a worker's start (a fresh
# interpreter importing the analyses, about 0.5 s) costs more than it saves.
POOL_MIN_EVENTS = 40_000


@dataclass(frozen=True)
class Refresh:
    """What one refresh rebuilt."""

    sessions: int  # sessions rebuilt
    events: int  # their events
    calls: int  # fact rows of calls written
    seconds: float
    failed: tuple[tuple[Key, str], ...] = ()  # sessions whose rebuild raised, and why
    workers: int = 1  # processes that rebuilt them


def refresh(
    store: Store,
    progress: StageProgress | None = None,
    *,
    every: bool = False,
    workers_count: int | None = None,
) -> Refresh:
    """Rebuild the facts of every session whose inputs or rules changed (all of them
    with `every`); a no-op when no ingest ran since the last refresh. `workers_count`:
    see `workers`."""
    started = time.perf_counter()
    if store.read_only:
        raise StoreError(f"{store.path} is open read-only; building facts needs it writable")
    if not every and stored.is_current(store, RULES_VERSION):
        if stored_fits(store) is None:  # a store whose facts an older release built
            store_fits(store)
        _price(store, _book(store), only_stale=True)
        _keep_guards(store)
        return Refresh(0, 0, 0, 0.0)
    through = stored.newest_ingest(store)
    _release_freed()
    # facts of sessions whose events are gone: stale_sessions starts from the events
    orphans = stored.drop_orphans(store)
    todo = stored.stale(store, RULES_VERSION, every=every)
    book = _book(store)
    # nothing the kept fit read changed (no session rebuilt or dropped, and the fit held:
    # events deleted, a session read again with nothing in it, leave no session stale):
    # the kept ratios stand, and the calls priced with them by the same book
    fit_holds = not todo and not orphans and stored_fits(store) is not None
    was_priced = book is not None and fit_holds and priced.current(store, book)
    count = workers(workers_count)
    if sum(n for _, n, _, _ in todo) < POOL_MIN_EVENTS:
        count = 1
    with store.memory_limit(FACTS_MEMORY_LIMIT):
        done = _rebuild(store, todo, progress, count)
    stored.mark_current(store, RULES_VERSION, through)
    if not fit_holds:
        store_fits(store)  # the ratios every query command would fit, fitted once here
    if not was_priced:
        _price(store, book)  # and the calls every cost command would price
    _keep_guards(store)  # and what the guards audit and the growth read of every tool call
    seconds = time.perf_counter() - started
    return Refresh(len(todo), done.events, done.calls, seconds, tuple(done.failed), count)


def _release_freed() -> None:
    """Give back to the system the memory an ingest's batches freed but Arrow's pool and
    the C heap keep, before the rebuild and the pricing add theirs. Measured after an
    ingest of 1,000,000 events: 512 MB resident before, 447 MB after."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # glibc's; elsewhere there is none to call
    except (OSError, AttributeError, TypeError):  # (TypeError: Windows has no CDLL(None))
        pass


def _keep_guards(store: Store) -> None:
    """whatif/kept.py and analysis/kept_growth.py; a store the audit or the growth
    cannot read is told by the command itself."""
    for kept in (guard_kept, kept_growth):
        try:
            kept.keep(store)
        except duckdb.Error as e:
            if is_interrupt(e):  # (a stop DuckDB named as its own error: not passed over)
                raise KeyboardInterrupt from None
            continue


def _book(store: Store) -> PriceBook | None:
    """The store's book, None when its prices file cannot be read (told per query)."""
    try:
        return book_of(store)
    except ForensicsError:
        return None


def _price(store: Store, book: PriceBook | None, *, only_stale: bool = False) -> None:
    """Price every call with the store's book (`_book`) and keep them (cost/stored.py).
    A prices file that cannot be read stops no refresh: the calls are then priced per
    query, where the error is told."""
    if book is None:
        return
    try:
        if not (only_stale and priced.current(store, book)):
            price_store(store, book)
    except ForensicsError:
        return


@dataclass
class Run:
    """One run of sessions to rebuild, as a worker gets it."""

    keys: list[Key]
    events: pa.Table
    parts: pa.Table
    releases: dict[Key, Release]
    traced: dict[Key, TracedSizes]


@dataclass
class Built:
    """The facts of one run: a table per fact table, and per session its events, calls
    and error (None when it was built)."""

    tables: dict[str, pa.Table]
    sessions: list[tuple[Key, int, int, str | None]]
    interrupted: bool = False  # Ctrl-C stopped it (in this process): the sessions before


def build_run(run: Run) -> Built:
    """Rebuild every session of `run` (in a worker, or in this process): a session whose
    rebuild raises keeps a row saying so, and never stops the others."""
    rows: dict[str, list[dict[str, object]]] = {t: [] for t in FACT_TABLES}
    carried: dict[str, list[object]] = {c: [] for c in FACT_SCHEMAS["fact_carried"].names}
    sessions: list[tuple[Key, int, int, str | None]] = []
    interrupted = False
    for key, event_rows, part_rows, family in session_tables(run.events, run.parts):
        try:
            session = session_of(key, event_rows, part_rows, family=family)
            session.release = run.releases.get(key)
            facts = session_facts(session, run.traced.get(key, {}))
        except KeyboardInterrupt:  # the sessions rebuilt so far are kept
            interrupted = True
            break
        except Exception as e:  # one session's data never stops the others
            (row,) = failed_facts(key, len(event_rows), e).rows["fact_sessions"]
            rows["fact_sessions"].append(row)
            sessions.append((key, len(event_rows), 0, str(row["error"])))
            continue
        for table, found in facts.rows.items():
            rows[table] += found
        # fact_carried by column, its tuples transposed: no dict per row
        n = len(facts.carried)
        for name, value in zip(("app_name", "user_id", "session_id"), key, strict=True):
            carried[name] += [value] * n
        for name, values in zip(("call_id", "function_call_id", "relayed"),
                                zip(*facts.carried, strict=True) if n else ((), (), ()),
                                strict=True):  # fmt: skip
            carried[name] += values
        sessions.append((key, len(event_rows), len(facts.rows["fact_calls"]), None))
    tables = {t: _arrow(rows[t], FACT_SCHEMAS[t]) for t in FACT_TABLES if t != "fact_carried"}
    tables["fact_carried"] = _columns(carried, FACT_SCHEMAS["fact_carried"])
    return Built(tables, sessions, interrupted)


def _arrow(rows: list[dict[str, object]], schema: pa.Schema) -> pa.Table:
    """Rows as a table, column by column (twice as fast as Table.from_pylist)."""
    return _columns({c: list(map(itemgetter(c), rows)) for c in schema.names}, schema)


def _columns(columns: dict[str, list[Any]], schema: pa.Schema) -> pa.Table:
    """Columns as a table: in this process through polars (store/arrow.py: pyarrow's
    builders import pandas, 43 MB of an ingest that rebuilds here), in a forked worker
    by pyarrow (polars' thread pool does not survive a fork of a process that used it:
    the worker hangs)."""
    if multiprocessing.parent_process() is None:
        return columns_table(columns, schema)
    return pa.table(columns, schema=schema)


@dataclass
class _Batch:
    """Fact tables not written yet, and the counts of what was written."""

    tables: dict[str, list[pa.Table]] = field(
        default_factory=lambda: {t: [] for t in FACT_TABLES}
    )
    stamps: dict[Key, str] = field(default_factory=dict)
    held: list[tuple[Key, int, int, str | None]] = field(default_factory=list)  # unwritten
    failed: list[tuple[Key, str]] = field(default_factory=list)  # all failed so far
    events: int = 0  # events written so far
    calls: int = 0
    done: set[Key] = field(default_factory=set)  # sessions written

    @property
    def pending(self) -> int:
        """Events of the sessions built and not written yet."""
        return sum(events for _, events, _, error in self.held if error is None)

    @property
    def written(self) -> int:
        return len(self.done)

    def add(self, built: Built, stamps: dict[Key, str]) -> None:
        for table, frame in built.tables.items():
            self.tables[table].append(frame)
        for key, events, calls, error in built.sessions:
            self.stamps[key] = stamps[key]
            self.held.append((key, events, calls, error))

    def flush(self, store: Store, built: set[Key]) -> None:
        """Write what is held, and count it. A stop is held over both (a second is not):
        raised at the write's COMMIT or its clean-up, it left a batch that was written
        out of the sessions said built and kept."""
        with stops_held(second_now=True):
            if self.stamps:
                tables = {t: pa.concat_tables(frames)
                          for t, frames in self.tables.items() if frames}  # fmt: skip
                stored.write(store, tables, self.stamps, FACT_SCHEMAS, built)
                self.done.update(self.stamps)
                for key, events, calls, error in self.held:
                    if error is not None:
                        self.failed.append((key, error))
                        continue
                    self.events += events
                    self.calls += calls
            self.drop()

    def drop(self) -> None:
        """Forget what is not written (it is built again)."""
        self.tables, self.stamps, self.held = {t: [] for t in FACT_TABLES}, {}, []


def _runs(store: Store, todo: list[tuple[Key, int, str, bool]]) -> Iterator[Run]:
    """The stale sessions, read out of the store a run at a time, with what each needs."""
    evidence = session_release_evidence(store)
    traced: dict[str, dict[str, tuple[dict[str, int], int]]] = defaultdict(dict)
    for (session_id, event_id), sizes in traced_windows(store).items():
        traced[session_id][event_id] = sizes
    counts = {key: n for key, n, _, _ in todo}
    chunks = stored.CHUNK_EVENTS  # read when called: tests cut runs smaller
    for keys, events, parts in stored.stale_tables(store, list(counts), counts, chunks):
        yield Run(
            keys,
            events,
            parts,
            {k: evidence[k] for k in keys if k in evidence},
            {k: traced[k[2]] for k in keys if k[2] in traced},
        )


def _built(runs: Iterator[Run], count: int) -> Iterator[Built]:
    """Each run rebuilt, in the order read: in this process, or by `count` workers with
    at most two runs each in flight (memory holds those, not the store)."""
    if count == 1:
        yield from map(build_run, runs)
        return
    with worker_pool(count) as pool:  # (forked: a worker runs Python and Arrow only)
        pending: deque[Future[Built]] = deque()
        try:
            for run in runs:
                with stops_held():  # (a stop raised inside submit hangs the pool)
                    pending.append(pool.submit(build_run, run))
                while len(pending) > 2 * count:
                    yield _result(pending.popleft())
            while pending:
                yield _result(pending.popleft())
        finally:
            cancelled(pending)


def _result(future: Future[Built]) -> Built:
    """A worker's run; a worker the system killed (out of memory, most often) is said."""
    try:
        return waited(future)
    except BrokenProcessPool:
        raise ForensicsError(
            "a process building the facts was killed before it finished (the system stops"
            " one that runs out of memory); the events stay stored, their facts unbuilt",
            hint="`forensics --workers 1 analyze` builds them in one process, and says which"
            " session fails",
        ) from None


def _rebuild(
    store: Store,
    todo: list[tuple[Key, int, str, bool]],
    progress: StageProgress | None,
    count: int,
) -> _Batch:
    """Rebuild the sessions of `todo` (in `count` processes), write in batches."""
    batch = _Batch()
    if not todo:
        return batch
    total = sum(n for _, n, _, _ in todo)
    stamps = {key: stamp for key, _, stamp, _ in todo}
    built = {key for key, _, _, had in todo if had}
    report: Callable[[str, int, int], None] = progress or (lambda *_: None)
    left = todo
    interrupted = False
    try:
        while True:
            try:
                for run in _built(_runs(store, left), count):
                    batch.add(run, stamps)
                    interrupted = run.interrupted
                    if batch.pending >= BATCH_EVENTS or interrupted:
                        batch.flush(store, built)
                    if interrupted:
                        raise KeyboardInterrupt
                    report("building facts", batch.events + batch.pending, total)
                batch.flush(store, built)
                break
            except duckdb.OutOfMemoryException:
                # the cap (FACTS_MEMORY_LIMIT) holds the fact tables' index, which grows
                # with the store: what was written stays, the rest is built again (a
                # statement that runs out is rolled back with its transaction)
                batch.drop()
                if interrupted:  # Ctrl-C came before: it stops the rebuild still
                    raise KeyboardInterrupt from None
                if not store.raise_memory_limit():
                    raise
                left = [item for item in left if item[0] not in batch.done]
    except KeyboardInterrupt:
        raise FactsInterrupted(
            f"the facts of {batch.written:,} of {len(todo):,} sessions were built"
            " and kept; `forensics analyze` builds the rest."
        ) from None
    return batch
