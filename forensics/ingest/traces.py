"""ADK trace exports into the store: each traced request's sizes, one transaction per run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..families.adk.traces import traced_call
from ..model import Skip, TracedCall
from ..sources.files import otlp
from ..store import Store, ledger
from ..store.ledger import IngestResult
from ..store.writes import insert_traced


def _documents(path: Path, skips: list[Skip]) -> list[tuple[str, Any]]:
    """(locator, JSON document) of one file: one document, or one per line (the
    collector's file exporter writes an ExportTraceServiceRequest per line)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        skips.append(Skip(str(path), f"cannot read file: {e}"))
        return []
    try:
        return [(str(path), json.loads(text))]
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":
            skips.append(Skip(f"{path}:{e.lineno}:{e.colno}", f"not valid JSON: {e.msg}"))
            return []
    documents = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            documents.append((f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as e:
            skips.append(Skip(f"{path}:{number}:{e.colno}", f"not valid JSON: {e.msg}"))
    return documents


def _spans(locator: str, document: Any) -> Iterator[tuple[str, Any]]:
    if otlp.is_otlp(document):
        for where, span in otlp.spans(document):
            yield f"{locator}: {where}", span
    elif isinstance(document, list):
        for index, span in enumerate(document):
            yield f"{locator}: span {index}", span
    else:
        found = type(document).__name__
        yield (
            locator,
            ValueError(
                "wrong shape: expected the dev UI's JSON list of spans or OTLP JSON "
                f"(an object with resourceSpans), found {found}"
            ),
        )


def read_trace_file(path: Path, skips: list[Skip]) -> list[TracedCall]:
    """The traced calls of one trace file (`call_llm` spans that name a stored event):
    the dev UI's export, or OTLP JSON; what cannot be read is skipped with the file
    and the span's position."""
    found_calls = []
    for locator, document in _documents(path, skips):
        for where, span in _spans(locator, document):
            if isinstance(span, ValueError):
                skips.append(Skip(where, str(span)))
                continue
            if not isinstance(span, dict):
                skips.append(Skip(where, "span is not a JSON object"))
                continue
            try:
                call = traced_call(span)
            except ValueError as e:
                skips.append(Skip(where, str(e)))
                continue
            if call is not None:
                found_calls.append(call)
    return found_calls


def ingest_traces(store: Store, paths: Sequence[Path]) -> IngestResult:
    """Load the traced requests of every file in one transaction; the ledger records the run."""
    shown = ", ".join(str(p) for p in paths[:3])
    location = shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    result = IngestResult(ledger.next_id(store), "adk-trace", location, {})
    started, clock = ledger.now(), time.monotonic()
    try:
        with store.transaction():
            versions: set[str] = set()
            completed = 0
            for path in paths:
                skipped = len(result.skips)
                calls = read_trace_file(Path(path), result.skips)
                # read: the traced requests found, and what could not be read
                result.rows_read += len(calls) + len(result.skips) - skipped
                loaded, done = insert_traced(store, calls, result.ingest_id)
                result.rows_loaded += loaded
                completed += done
                versions |= {c.adk_version for c in calls if c.adk_version}
            if versions:
                result.notes["adk_versions"] = sorted(versions)
            if completed:  # stored before store schema 11: their texts' digests added
                result.notes["traced_requests_completed"] = completed
            result.seconds = time.monotonic() - clock
            ledger.write(store, result, started, ledger.now(), "ok", None)
    except BaseException as e:
        result.seconds = time.monotonic() - clock
        ledger.write_stopped(store, result, started, ledger.now(), e)
        raise
    return result
