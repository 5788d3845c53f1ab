"""Logged documents (OpenSearch, or its files) into the store, as one ingest.

Each document is read by the family its shape belongs to (families/documents.py);
records go to the `logged` table a batch (a page) at a time, each batch committed:
DuckDB keeps a transaction's uncommitted rows in memory whatever its memory_limit
(measured: 600,000 records in one transaction peak at 585 MB and grow, committed per
batch of 5,000 they stay near 270 MB). A record is stored once by its key, so an
interrupted run keeps what it committed, the ledger says how much, and the same run
again loads only the rest. A document that maps to nothing is a skip with its
locator; a span of another service (an HTTP server's) is read, counted as not about
agents, and not stored.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from ..errors import FactsInterrupted
from ..families.documents import read
from ..families.mapping import Mapping
from ..model import LoggedRecord, Skip, logged_table
from ..sanitize import storable
from ..sources.base import not_unicode
from ..store import Store, ledger
from ..store.ledger import IngestResult
from ..store.writes import insert_logged

BATCH_RECORDS = 5000  # one page of the live source: an Arrow batch of ~2 MB
# DuckDB's buffer while loading: each batch only probes the stored keys, which need not
# stay cached (measured at 1M span documents: 501 MB peak RSS with 256MB, the ADK
# ingest's limit, flat from 500k on)
LOGGED_MEMORY_LIMIT = "128MB"



def ingest_documents(
    store: Store,
    documents: Iterable[tuple[str, Any] | Skip],
    *,
    kind: str,
    location: str,
    filters: dict[str, object],
    mapping: Mapping | None = None,
    progress: Callable[[IngestResult], None] | None = None,
) -> IngestResult:
    """Read, map and store every document; the ledger records the run, also when it stops."""
    result = IngestResult(ledger.next_id(store), kind, location, filters)
    shapes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    started, clock = ledger.now(), time.monotonic()

    def commit(batch: list[LoggedRecord]) -> None:
        try:
            table = logged_table(batch)
        except (UnicodeEncodeError, OverflowError, pa.ArrowException):
            kept = []
            for record in batch:
                why = unstorable(record)
                if why is None:
                    kept.append(record)
                else:
                    result.skips.append(Skip(record.locator, why))
            table = logged_table(kept)
        with store.transaction():
            result.rows_loaded += insert_logged(store, table, result.ingest_id)

    try:
        with store.memory_limit(LOGGED_MEMORY_LIMIT):
            batch: list[LoggedRecord] = []
            for item in documents:
                result.rows_read += 1
                if isinstance(item, Skip):
                    result.skips.append(item)
                    continue
                locator, document = item
                locator = storable(locator)  # (a file's place: its name may hold any byte)
                found = read(document, locator, mapping)
                if found.problem is not None:
                    result.skips.append(Skip(locator, found.problem))
                    continue
                shapes[found.shape or "?"] += 1
                if found.record is None:
                    result.rows_ignored += 1
                    continue
                kinds[found.record.kind] += 1
                batch.append(found.record)
                if len(batch) >= BATCH_RECORDS:
                    commit(batch)
                    batch = []
                    if progress is not None:
                        progress(result)
            if batch:
                commit(batch)
            result.notes.update(
                {
                    "shapes": dict(sorted(shapes.items())),
                    "records": dict(sorted(kinds.items())),
                    "not_about_agents": result.rows_ignored,
                }
            )
            result.seconds = time.monotonic() - clock
            with store.transaction():
                ledger.write(store, result, started, ledger.now(), "ok", None)
    except BaseException as e:
        result.seconds = time.monotonic() - clock
        ledger.write_stopped(store, result, started, ledger.now(), e, committed=True)
        if ledger.is_interrupt(e) and result.rows_loaded:  # (said: not "nothing committed")
            raise FactsInterrupted.batches_kept(result.rows_loaded) from None
        raise
    return result


def unstorable(record: LoggedRecord) -> str | None:
    """Why a record cannot be stored, naming the field: text that is not valid Unicode
    (a lone surrogate, which Python's json reads from "\\ud800"), or a whole number
    beyond the store's BIGINT (a count in an error text, say); else None."""
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if isinstance(value, str) and (why := not_unicode(field.name, value)):
            return why
        if isinstance(value, int) and not isinstance(value, bool) and not (
            -(2**63) <= value < 2**63
        ):
            return f"{field.name} is {str(value)[:30]}, beyond a 64-bit integer"
    return None


def explain(
    documents: Iterable[tuple[str, Any] | Skip], mapping: Mapping | None, sample: int
) -> list[dict[str, Any]]:
    """What the first `sample` documents map to, without loading anything."""
    rows: list[dict[str, Any]] = []
    for item in documents:
        if len(rows) >= sample:
            break
        if isinstance(item, Skip):
            rows.append({"locator": item.locator, "problem": item.reason})
            continue
        locator, document = item
        found = read(document, locator, mapping)
        row: dict[str, Any] = {"locator": locator, "shape": found.shape, "problem": found.problem}
        if found.record is None and found.problem is None:
            row["problem"] = "not about agents (read, not stored)"
        if found.record is not None:
            r = found.record
            row.update(
                {
                    "kind": r.kind,
                    "name": r.name,
                    "time": r.started_at,
                    "session_id": r.session_id,
                    "invocation_id": r.invocation_id,
                    "agent": r.agent,
                    "model": r.model,
                    "input_tokens": r.input_tokens,
                    "output_tokens": r.output_tokens,
                    "cache_read_tokens": r.cache_read_tokens,
                    "cache_write_tokens": r.cache_write_tokens,
                    "status": r.status,
                    "error": r.error_code or r.error_text,
                    "context_failure": r.context_failure,
                    "context_tokens": r.context_tokens,
                    "tool": r.tool_name,
                }
            )
        rows.append(row)
    return rows
