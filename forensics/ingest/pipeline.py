"""read -> normalise -> store, each stage in a thread of its own; all or nothing per run
(an ADK run commits batch by batch and is undone whole when it stops)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from .. import sql
from ..errors import FactsInterrupted, stops_held
from ..families.adk import releases
from ..families.adk.normalize import Normalized, Normalizer
from ..model import Release, Skip
from ..sanitize import storable
from ..sources.base import ActionFields, Source
from ..store import Store, ledger
from ..store.arrow import session_keys_table
from ..store.ledger import WATERMARK_OVERLAP_S, IngestResult
from ..store.writes import (
    insert_batch,
    insert_releases,
    insert_side,
    replace_sessions,
    set_session_family,
    set_session_sources,
)

# While ingesting, the store's DuckDB buffers at most this much (see
# families.adk.normalize.MEMORY_LIMIT for the measurement behind both caps). The
# primary keys' index lives under the same cap and grows with the store: at 128 MB an
# ingest of 1,000,000 events ran out at 571,000, so a batch that meets the cap is
# inserted again with it doubled (Store.raise_memory_limit).
INGEST_MEMORY_LIMIT = "256MB"

Progress = Callable[[IngestResult], None]
T = TypeVar("T")
R = TypeVar("R")


def ingest(
    store: Store,
    source: Source,
    *,
    filters: dict[str, object] | None = None,
    incremental: bool = True,
    progress: Progress | None = None,
    release: Release | None = None,
    commit_each_batch: bool = False,
) -> IngestResult:
    """Load every batch of `source`, each in a transaction of its own.

    DuckDB holds a transaction's uncommitted rows in memory whatever its memory limit:
    200,000 ADK events in one transaction peaked at 1.25 GB and grew with the run, batch
    by batch they stay under 0.9 GB at any size. A run that stops (an error, Ctrl-C) is
    undone: what it stored is deleted, so the store is as it was, and the ledger says
    why. `commit_each_batch`: keep what was committed instead, for sources whose batches
    each leave the store whole (Claude Code: a session is a batch's, and a rerun loads
    the rest). A process killed outright leaves its committed batches (ledger.newest
    counts their ingest, so the facts see them); the same run again completes them.

    `release` (from `--adk-version`) is recorded for every session the run read;
    without it, a release the rows themselves bound (V0 pickles) is recorded.

    A failed run is still written to the ledger (status `failed`, with the error)
    in a transaction of its own, so the ledger tells what was tried.
    """
    filters = filters or {}
    begun = time.time()
    key = getattr(source, "watermark_key", None) or source.location  # (a file: resolved)
    newest_seen = (
        held_watermark(ledger.watermark(store, source.kind, key, filters), begun)
        if incremental
        else None
    )
    # Re-read a margin before it: a writer's clock, or a commit that landed after
    # the last read with an earlier timestamp, must not drop events; the store
    # keeps an event once, so the overlap costs reading only.
    since = None if newest_seen is None else newest_seen - WATERMARK_OVERLAP_S
    result = IngestResult(
        ledger.next_id(store),
        source.kind,
        source.location,
        filters,
        watermark_before=since,
        incremental=incremental,
        source_key=key,
    )
    run = _Run(store, source, result, release, progress, begun)
    finished = False
    try:
        with store.memory_limit(INGEST_MEMORY_LIMIT):
            try:
                batches = prefetch(_normalized(source, since))
                try:
                    for batch in batches:
                        run.insert(batch)
                finally:  # (here: a stop its wait raises, raised when it was collected,
                    batches.close()  # was printed as "Exception ignored in", and lost)
                with store.transaction():
                    run.finish()
                finished = True
            except BaseException as e:
                if _quietly_held(ledger.finished_ok, store, result.ingest_id):  # it landed
                    finished = True  # after the run's COMMIT: nothing to undo (ledger: ok)
                    raise
                result.seconds = time.monotonic() - run.clock
                result.notes = dict(getattr(source, "notes", {}))
                # a second stop may cut the undo short: what it left is then said kept
                kept = commit_each_batch or not _undo(store, result.ingest_id)
                _quietly_held(ledger.write_stopped, store, result, run.started, ledger.now(),
                              e, kept)  # fmt: skip
                if ledger.is_interrupt(e):
                    if kept and result.rows_loaded:  # (said: not "nothing committed")
                        raise FactsInterrupted.batches_kept(result.rows_loaded) from None
                    if not isinstance(e, KeyboardInterrupt):
                        raise KeyboardInterrupt from None
                raise
    except BaseException as e:
        # stopped after the run was committed (while the memory cap was set back): the
        # run stays, and is said to (not "nothing was committed")
        if finished and ledger.is_interrupt(e):
            raise FactsInterrupted.after_commit(result.rows_loaded) from None
        raise
    return result


CONFLICT = ("an event stored already with other content (time, size, author or turn): "
            "the first stored was kept")


def _conflicting(keys: list[tuple[str, str, str, str]], located: pa.Table | None) -> list[Skip]:
    """A skip per event of `keys` (stored already with other content), where its row came
    from (its session and id where the batch does not say: a made row)."""
    if not keys:
        return []
    where: dict[tuple[str, ...], str] = {}
    wanted = set(keys)
    rows = () if located is None else zip(*(c.to_pylist() for c in located.columns), strict=True)
    for *key, locator in rows:
        if tuple(key) in wanted:
            where[tuple(key)] = locator  # (a key is one row of a batch: the batcher's)
    return [Skip(where.get(key) or f"session {key[2]} event {key[3]}", CONFLICT)
            for key in keys]  # (one reason: the place says which event)


def held_watermark(newest: float | None, begun: float) -> float | None:
    """A watermark as a run keeps or reads it: never after the run began (a row dated
    ahead, a writer's clock or a hostile row's year 2100 or 1e300, would hide every row
    written until then from the next runs, which read it again instead and find it
    stored), and none when it is no time (NaN, before 1970)."""
    if newest is None or not newest >= 0:  # (NaN too)
        return None
    return min(newest, begun)


class _Run:
    """One ingest's batches into the store, and its end: what the run found out."""

    def __init__(
        self,
        store: Store,
        source: Source,
        result: IngestResult,
        release: Release | None,
        progress: Progress | None,
        begun: float,
    ):
        self.store, self.source, self.result = store, source, result
        self.begun = begun  # epoch seconds: no watermark is later (held_watermark)
        self.release, self.progress = release, progress
        self.label = storable(f"{source.kind}:{source.location}")  # (a path may hold bytes)
        self.family: str | None = getattr(source, "family", None)
        self.seen: set[tuple[str, str, str]] = set()
        # per session, what its events' keys say of its ADK release, the batches merged
        self.keys: dict[tuple[str, str, str], dict[str, object]] = {}
        self.replaced = 0  # stored events of sessions read whole again
        self.replaced_keys: set[tuple[str, str, str]] = set()  # and those sessions
        self.appending = True  # until a batch holds an event stored already (insert)
        self.started = ledger.now()
        self.clock = time.monotonic()

    def insert(self, batch: Normalized) -> None:
        """Store one batch in a transaction of its own, then count it. A batch that
        meets the store's memory cap is undone and stored again with the cap doubled
        (it stays raised for the rest of the run: the index only grows). Its rows are
        appended as new (`Query.appending`, a third of the insert's cost) until an event
        is stored already or a row comes twice, or until DuckDB holds more than half its
        cap before the batch's commit: that batch is undone and stored again as before,
        and so is every later batch of the run. (A COMMIT that meets the cap makes DuckDB
        refuse the database until it is opened again, where a statement that meets it
        is undone; the checked statements need more than the commit, so they meet it
        first, and the batch is stored again with the cap doubled. Half is wide: a
        batch of 773 Claude Code events, 23 MiB held, committed and checkpointed with
        0.25 MiB over what DuckDB held; under a cap of 3 MB a commit needed more.)
        A stop (Ctrl-C, SIGTERM) is held from the COMMIT to the count: one between them
        left a committed batch out of the ledger's count and the stop's message."""
        store = self.store
        while True:
            committed = False
            try:
                store.run("BEGIN")  # (in the block that rolls back: a stop may land after it)
                replaced, loaded, conflicts = self._write(batch)
                if self.appending and self._crowded():
                    raise _Crowded
                with stops_held(second_now=True):  # (a second stop is not held)
                    store.run("COMMIT")
                    committed = True
                    self._count(batch, replaced, loaded, conflicts)
                return
            except BaseException as e:
                if committed:  # (a held stop, or the progress callback's error: stored)
                    raise
                store.quietly("ROLLBACK")  # (as Store.transaction: the first error stands)
                if isinstance(e, duckdb.ConstraintException | _Crowded) and self.appending:
                    self.appending = False
                    continue
                # (in a statement: undone. A COMMIT that runs out fails otherwise, and
                # DuckDB then refuses the database: that stops the run as any error does)
                if isinstance(e, duckdb.OutOfMemoryException) and store.raise_memory_limit():
                    continue
                raise

    def _count(self, batch: Normalized, replaced: int, loaded: int,
               conflicts: list[tuple[str, str, str, str]]) -> None:  # fmt: skip
        """A committed batch in the run's result (and its progress told)."""
        result = self.result
        if self.release is not None:
            self.seen |= _keys(batch.events)
        for row in batch.release_keys:
            _merge(self.keys, row)
        result.rows_read += batch.rows_read
        result.skips.extend(batch.skipped)
        self.replaced += replaced
        result.rows_loaded += loaded
        result.rows_conflicting += len(conflicts)
        result.skips.extend(_conflicting(conflicts, batch.located))
        newest = held_watermark(batch.newest, self.begun)
        if newest is not None:
            result.watermark = max(newest, result.watermark or newest)
        if self.progress:
            self.progress(result)

    def _crowded(self) -> bool:
        """DuckDB holds more than half its cap (an appending batch's commit could meet it)."""
        used, limit = self.store.memory_mib()
        return limit is None or used * 2 > limit

    def _write(self, batch: Normalized) -> tuple[int, int, list[tuple[str, str, str, str]]]:
        """The batch's rows into the store (inside the caller's transaction): the events
        of sessions it replaced, the events it loaded, the conflicts it found."""
        store, ingest_id = self.store, self.result.ingest_id
        replaced = replace_sessions(store, batch.replaces) if batch.replaces else 0
        self.replaced_keys.update(batch.replaces)
        conflicts: list[tuple[str, str, str, str]] = []
        loaded = 0
        if batch.events.num_rows or batch.sessions.num_rows:  # (normalize._nothing's)
            loaded = insert_batch(
                store,
                events=batch.events,
                parts=batch.parts,
                sessions=batch.sessions,
                ingest_id=ingest_id,
                source=self.label,
                conflicts=conflicts,
                appending=self.appending,
            )
        for name, table in batch.side.items():
            insert_side(store, name, table, ingest_id, self.appending)
        # with the batch, so that a session committed before a stop says what it is
        if self.family is not None:
            set_session_family(store, self.family, ingest_id)
        self._sources(_keys(batch.sessions))
        return replaced, loaded, conflicts

    def _sources(self, only: set[tuple[str, str, str]] | None = None) -> None:
        """The sessions this run created or read whole again take the file(s) their events
        came from as source (the UPDATE touches only those). After a batch, those of its own
        sessions (`only`): a session's row exists once its first batch is stored, and
        the whole map each batch was a pass over the run's sessions per batch (1.2 s of
        a 2 GB Claude Code ingest, growing with the run); at the end, the whole map."""
        sources = getattr(self.source, "session_sources", None)
        if sources is None:
            return
        found = sources()
        if only is not None:
            found = {key: where for key, where in found.items() if key in only}
        set_session_sources(self.store, found, self.result.ingest_id, self.replaced_keys)

    def finish(self) -> None:
        store, source, result = self.store, self.source, self.result
        self._sources()
        found, contradicted = _releases(source, self.seen, self.release, self.keys)
        if self.release is None:  # narrowed by what earlier ingests inferred, said once
            found = _narrowed(store, found, contradicted)
        insert_releases(store, found, result.ingest_id)
        result.seconds = time.monotonic() - self.clock
        result.notes = dict(source.notes)
        if found:
            result.notes["adk_release"] = _release_note(found)
        if self.replaced:
            result.notes["events_replaced"] = self.replaced
        if result.rows_conflicting:
            result.notes["conflicting_events"] = (
                f"{result.rows_conflicting:,} events already stored with other content (time, "
                "size, author or turn): the first stored was kept"
            )
        ledger.write(store, result, self.started, ledger.now(), "ok", None)


class _Crowded(Exception):
    """An appending batch undone before its commit: DuckDB holds too much (_Run.insert)."""


def _quietly_held(step: Callable[..., R], *args: Any) -> R | None:
    """`step(*args)`, work after a stop, with further stops held over it and passed over
    (the first is being said): a second Ctrl-C raised inside the ledger's row lost the
    row (an ingest listed `unrecorded`) and the stop's message."""
    done = None
    try:
        with stops_held():
            done = step(*args)
    except KeyboardInterrupt:  # (the held one, delivered after the step)
        pass
    return done


def _undo(store: Store, ingest_id: int) -> bool:
    """Delete what a stopped run stored; whether it did (it never raises over the error
    that stopped it: a second Ctrl-C leaves the committed batches, which the same run
    again completes)."""
    try:
        store.con.register("undone_ingest", pa.table({"ingest_id": [ingest_id]}))
        with store.transaction():
            store.run(sql.load("store/undo_ingest").sql)
        return True
    except (duckdb.Error, KeyboardInterrupt):
        return False
    finally:
        try:
            store.unregister("undone_ingest")
        except KeyboardInterrupt:  # (a second stop: the first is said, and the ledger too)
            pass


def _keys(rows: pa.Table) -> set[tuple[str, str, str]]:
    """The session keys of a batch's events or sessions."""
    if not rows.num_rows:  # (normalize._nothing's have no columns)
        return set()
    columns = [rows.column(c).to_pylist() for c in ("app_name", "user_id", "session_id")]
    return set(zip(*columns, strict=True))


def _releases(
    source: Source,
    seen: set[tuple[str, str, str]],
    release: Release | None,
    keys: dict[tuple[str, str, str], dict[str, object]],
) -> tuple[dict[tuple[str, str, str], Release], set[tuple[str, str, str]]]:
    """Each session's release: the one given; else inferred from its V0 pickles' fields
    or, for events stored as JSON, from their keys (never for a V0 session: its rows
    are not the JSON ADK wrote); and the sessions whose keys contradict each other."""
    if release is not None:
        return dict.fromkeys(seen, release), set()
    fields: ActionFields | None = getattr(source, "action_fields", None)
    found = {}
    pickled = fields.by_session if fields else {}
    for key, sets in pickled.items():
        inferred = releases.from_pickled_actions(sets)
        if inferred is not None:
            found[key] = inferred
    contradicted = set()
    if getattr(source, "family", "adk") == "adk":
        layout = getattr(source, "layout", None)  # the tables read, where a release made them
        tables = layout if isinstance(layout, str) else None
        for key, evidence in keys.items():
            if key not in pickled:
                inferred = releases.from_event_keys(evidence, tables)
                if inferred is not None:
                    found[key] = inferred
                elif releases.contradicted(evidence):
                    contradicted.add(key)
    return found, contradicted


def _narrowed(
    store: Store,
    found: dict[tuple[str, str, str], Release],
    contradicted: set[tuple[str, str, str]],
) -> dict[tuple[str, str, str], Release]:
    """This ingest's inferred ranges (each from the events it read) narrowed by those an
    earlier ingest stored; a range that stays as stored is not written again (its ingest
    is what the facts' stamp reads: writing it would rebuild them); a session whose
    ranges allow no release in common, or whose events this time contradict each other,
    has its inferred range forgotten (two releases wrote it)."""
    contradicted = set(contradicted)
    asked = [k for k, r in found.items() if r.basis == "inferred"] + sorted(contradicted)
    if not asked:
        return found
    store.con.register("release_keys_of", session_keys_table(asked))
    try:
        out = dict(found)
        for app, user, session, version, detail, since, until in store.run(
            sql.load("store/inferred_releases").sql
        ):
            key = (app, user, session)
            if key not in out:
                continue
            stored = Release(version, "inferred", detail, since, until)
            both = releases.narrowed(stored, out[key])
            if both is None:
                contradicted.add(key)
                del out[key]
            elif (both.since, both.until) == (since, until):
                del out[key]  # as stored: its row and its ingest stay
            else:
                out[key] = both
        if contradicted:
            store.con.register("release_keys_of", session_keys_table(sorted(contradicted)))
            store.run(sql.load("store/delete_inferred_releases").sql)
        return out
    finally:
        store.unregister("release_keys_of")


def _merge(into: dict[tuple[str, str, str], dict[str, object]], row: dict[str, object]) -> None:
    """One batch's release_keys row into a session's: counts summed, flags or-ed."""
    key = (str(row["app_name"]), str(row["user_id"]), str(row["session_id"]))
    mine = into.setdefault(key, {})
    for name, value in row.items():
        if name in ("app_name", "user_id", "session_id"):
            continue
        if isinstance(value, bool) or value is None:
            mine[name] = bool(mine.get(name)) or bool(value)
        else:
            mine[name] = int(mine.get(name) or 0) + int(value)  # type: ignore[call-overload]


def _release_note(found: dict[tuple[str, str, str], Release]) -> str:
    """One line for the ledger: how many sessions, which release, on what basis."""
    counts: dict[str, int] = {}
    for r in found.values():
        text = r.version if r.basis == "given" else r.detail
        counts[f"{r.basis}: {text}"] = counts.get(f"{r.basis}: {text}", 0) + 1
    return "; ".join(f"{n:,} session{'s' if n != 1 else ''} {what}" for what, n in counts.items())



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


READER_JOIN_S = 5.0  # how long a closed prefetch waits for its thread to end


def prefetch(batches: Iterator[T], depth: int = 1) -> Generator[T, None, None]:
    """Run `batches` in a thread of its own, `depth` items ahead of the consumer.

    Ingest chains two: reading (network, JSON text) runs ahead of normalising,
    which runs ahead of inserting; DuckDB releases the GIL while it works, so
    the three overlap. The reader stops, and closes its source, as soon as the
    consumer goes away (error, interrupt) or the source is done.
    """
    box: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def reader() -> None:
        item: object = done
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
            # a stop is acted on between the waits, not raised inside the queue's lock
            # (see errors.waited)
            with stops_held() as check:
                while True:
                    try:
                        item = box.get(timeout=0.2)
                        break
                    except queue.Empty:
                        if not thread.is_alive() and box.empty():  # (it ended, no word)
                            raise RuntimeError(
                                "the reading thread ended without its batches"
                            ) from None
                    check()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]  # anything else the reader put is a T
    finally:
        stop.set()
        # a stop is held over the wait (raised after it): a second Ctrl-C raised inside
        # it left the thread inside DuckDB's normaliser as the interpreter exited, and a
        # thread there as it ends aborts the process ("FATAL: exception not rethrown",
        # SIGABRT: once in 180 double stops)
        with stops_held():
            thread.join(timeout=READER_JOIN_S)
