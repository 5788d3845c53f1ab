"""read -> normalise -> store, each stage in a thread of its own; all or nothing per run."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import TypeVar

import pyarrow as pa

from ..families.adk.normalize import Normalized, Normalizer
from ..families.adk.releases import from_pickled_actions
from ..model import Release
from ..sources.base import ActionFields, Source
from ..store import Store, ledger
from ..store.ledger import WATERMARK_OVERLAP_S, IngestResult
from ..store.writes import (
    insert_batch,
    insert_releases,
    insert_side,
    set_session_family,
    set_session_sources,
)

# While ingesting, the store's DuckDB buffers at most this much (see
# families.adk.normalize.MEMORY_LIMIT for the measurement behind both caps).
INGEST_MEMORY_LIMIT = "256MB"

Progress = Callable[[IngestResult], None]
T = TypeVar("T")


def ingest(
    store: Store,
    source: Source,
    *,
    filters: dict[str, object] | None = None,
    incremental: bool = True,
    progress: Progress | None = None,
    release: Release | None = None,
) -> IngestResult:
    """Load every batch of `source` in one transaction; a failure commits nothing.

    `release` (from `--adk-version`) is recorded for every session the run read;
    without it, a release the rows themselves bound (V0 pickles) is recorded.

    A failed run is still written to the ledger (status `failed`, with the error)
    in a transaction of its own, so the ledger tells what was tried.
    """
    filters = filters or {}
    newest_seen = (
        ledger.watermark(store, source.kind, source.location, filters) if incremental else None
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
    )
    started = ledger.now()
    clock = time.monotonic()
    label = f"{source.kind}:{source.location}"
    with store.memory_limit(INGEST_MEMORY_LIMIT):
        try:
            with store.transaction():
                seen: set[tuple[str, str, str]] = set()
                conflicts: list[int] = []
                for batch in prefetch(_normalized(source, since)):
                    if release is not None:
                        seen |= _keys(batch.events)
                    result.rows_read += batch.rows_read
                    result.skips.extend(batch.skipped)
                    result.rows_loaded += insert_batch(
                        store,
                        events=batch.events,
                        parts=batch.parts,
                        sessions=batch.sessions,
                        ingest_id=result.ingest_id,
                        source=label,
                        conflicts=conflicts,
                    )
                    for name, table in batch.side.items():
                        insert_side(store, name, table, result.ingest_id)
                    if batch.newest is not None:
                        result.watermark = max(batch.newest, result.watermark or batch.newest)
                    if progress:
                        progress(result)
                sources = getattr(source, "session_sources", None)
                if sources is not None:
                    set_session_sources(store, sources(), result.ingest_id)
                family = getattr(source, "family", None)
                if family is not None:
                    set_session_family(store, family, result.ingest_id)
                found = _releases(source, seen, release)
                insert_releases(store, found, result.ingest_id)
                result.seconds = time.monotonic() - clock
                result.notes = dict(source.notes)
                if found:
                    result.notes["adk_release"] = _release_note(found)
                if sum(conflicts):
                    result.notes["conflicting_events"] = (
                        f"{sum(conflicts):,} events already stored with other content (time, "
                        "size, author or turn): the first stored was kept"
                    )
                ledger.write(store, result, started, ledger.now(), "ok", None)
                # the commit writes the whole transaction's rows and their keys' index
                # at once: under the cap, a million events fail to commit (measured)
                store.run("RESET memory_limit")
        except BaseException as e:
            result.seconds = time.monotonic() - clock
            result.notes = dict(getattr(source, "notes", {}))
            ledger.write_stopped(store, result, started, ledger.now(), e)
            if ledger.is_interrupt(e) and not isinstance(e, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            raise
    return result


def _keys(events: pa.Table) -> set[tuple[str, str, str]]:
    columns = [events.column(c).to_pylist() for c in ("app_name", "user_id", "session_id")]
    return set(zip(*columns, strict=True))


def _releases(
    source: Source, seen: set[tuple[str, str, str]], release: Release | None
) -> dict[tuple[str, str, str], Release]:
    if release is not None:
        return dict.fromkeys(seen, release)
    fields: ActionFields | None = getattr(source, "action_fields", None)
    found = {}
    for key, sets in (fields.by_session if fields else {}).items():
        inferred = from_pickled_actions(sets)
        if inferred is not None:
            found[key] = inferred
    return found


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
            item = box.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]  # anything else the reader put is a T
    finally:
        stop.set()
        thread.join(timeout=5)
