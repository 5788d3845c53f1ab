"""ADK trace exports into the store: each traced request's sizes, one transaction per run."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import NUMBER_TOO_LONG, TOO_DEEP
from ..families.adk.traces import traced_call
from ..families.fields import json_error
from ..json_text import after_space, value_end
from ..model import Skip, TracedCall
from ..sources.files import otlp
from ..store import Store, ledger
from ..store.ledger import IngestResult
from ..store.writes import insert_traced


def _documents(path: Path, skips: list[Skip]) -> list[tuple[str, Any]]:
    """(locator, JSON document) of one file: one document, or one per line (the
    collector's file exporter writes an ExportTraceServiceRequest per line). A dev UI
    list that cannot be read whole is read span by span (`_list_spans`)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        skips.append(Skip(str(path), f"cannot read file: {e}"))
        return []
    try:
        return [(str(path), json.loads(text))]
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            return _lines(path, text, skips)
        error: RecursionError | ValueError = e
    except (RecursionError, ValueError) as e:  # JSONDecodeError is a ValueError: above
        error = e
    if text.lstrip().startswith("["):
        return [(str(path), _list_spans(path, text, skips))]
    if isinstance(error, json.JSONDecodeError):
        skips.append(Skip(f"{path}:{error.lineno}:{error.colno}", f"not valid JSON: {error.msg}"))
    elif _one_per_line(text):
        return _lines(path, text, skips)
    else:
        skips.append(Skip(str(path), _unreadable(error)))  # one document (pretty-printed too)
    return []


def _one_per_line(text: str) -> bool:
    """Whether a text json cannot read whole holds a document per line: more than one
    line, the first of them a document on its own (a pretty-printed one's is "{")."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return False
    try:
        json.loads(lines[0])
    except json.JSONDecodeError:
        return False
    except (RecursionError, ValueError):  # a document json refuses, on its line alone
        return True
    return True


def _unreadable(error: RecursionError | ValueError) -> str:
    """Why json could not read text it found no syntax error in."""
    return TOO_DEEP if isinstance(error, RecursionError) else NUMBER_TOO_LONG


def _lines(path: Path, text: str, skips: list[Skip]) -> list[tuple[str, Any]]:
    """One document per line. Lines end at "\n" only: JSON strings may hold U+2028,
    U+2029 or U+0085 raw, where `str.splitlines` would also split."""
    documents = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            documents.append((f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as e:
            skips.append(Skip(f"{path}:{number}:{e.colno}", f"not valid JSON: {e.msg}"))
        except (RecursionError, ValueError) as e:
            skips.append(Skip(f"{path}:{number}", _unreadable(e)))
    return documents


def _list_spans(path: Path, text: str, skips: list[Skip]) -> list[Any]:
    """The spans of a dev UI list that json cannot read whole, parsed one at a time: a
    span nested too deeply or holding too long a number is kept as the ValueError that
    skips it by its position; where the list breaks (a file cut short), the complete
    spans before the break are kept and the rest skipped, naming the line and column."""
    decoder = json.JSONDecoder()
    spans: list[Any] = []
    pos = after_space(text, text.index("[") + 1)
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            try:
                span, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as e:
                return _broken(path, e, spans, skips)
            except (RecursionError, ValueError) as e:
                found = value_end(text, pos)
                if found is None:  # the too-deep span is the one cut short
                    error = json.JSONDecodeError("Unterminated array or object", text, pos)
                    return _broken(path, error, spans, skips)
                span, end = ValueError(_unreadable(e)), found
            spans.append(span)
            pos = after_space(text, end)
            if text.startswith(",", pos):
                pos = after_space(text, pos + 1)
                continue
            if text.startswith("]", pos):
                pos += 1
                break
            error = json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            return _broken(path, error, spans, skips)
    rest = after_space(text, pos)
    if rest < len(text):
        error = json.JSONDecodeError("Extra data", text, rest)
        skips.append(Skip(f"{path}:{error.lineno}:{error.colno}", "not valid JSON: Extra data"))
    return spans


def _broken(
    path: Path, error: json.JSONDecodeError, spans: list[Any], skips: list[Skip]
) -> list[Any]:
    """Skip the rest of a list from where it breaks; the spans before it are kept."""
    reason = f"not valid JSON: {error.msg}"
    if spans:
        reason = (
            f"not valid JSON: {json_error(error)} (cut short?); "
            f"the {len(spans)} complete spans before it were read"
        )
    skips.append(Skip(f"{path}:{error.lineno}:{error.colno}", reason))
    return spans


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
            except RecursionError:  # a request nested just below json's limit, sized
                skips.append(Skip(where, f"llm_request is {TOO_DEEP}"))
                continue
            except (TypeError, AttributeError, OverflowError) as e:
                # the last line of defence: a shape traced_call does not check yet
                skips.append(Skip(where, f"span of an unexpected shape ({type(e).__name__}: {e})"))
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
