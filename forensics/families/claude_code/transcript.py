"""Claude Code transcript lines as the store's events: one call per model response.

Claude Code keeps a session in `<config>/projects/<project>/<session>.jsonl`, one JSON
object a line (docs/claude-code.md). What this module reads, from real files of 1.0.x,
2.0.x and 2.1.x:

- `assistant` lines: one per content block of a model response, each repeating
  `message.id`, `requestId` and `message.usage`. Early lines carry a streaming
  placeholder usage (output 10, 10, then the final 441 on the last), so a call is one
  (message.id, requestId) and keeps the largest usage; a copy of it in another of the
  session's files (a sidechain's mirror of it) is the same call, read once. A
  response's lines may be separated by the results of the tools it called: tools run
  while it streams.
- `user` lines: a prompt (text), or tool results (`tool_result` blocks, each answering a
  `tool_use` id). `isMeta` lines and a slash command's output are sent to the model
  but start no turn; the `isCompactSummary` line after a compaction boundary is that
  compaction's summary.
- `system` lines: `compact_boundary` (`compactMetadata {trigger, preTokens}`) becomes a
  compaction event; `api_error` (a request the API refused, retried after it) a failed
  call; an assistant line with `isApiErrorMessage` (the last, unretried failure, model
  `<synthetic>`) a failed call too. Other subtypes are skipped by kind.
- `progress`, `file-history-snapshot`, `queue-operation`, `summary` and unknown types
  are skipped by kind and counted, never errors.
- Subagents: `<session>/subagents/agent-<id>.jsonl` (2.1), a top-level
  `agent-<id>.jsonl` naming its parent's sessionId (2.0), or lines marked `isSidechain`
  inline in the session's own file (1.0). Each is a thread of its own (the event's
  `branch`); its author is the subagent type the Task call that started it named
  (`compact` for the summarizer of a compaction, `subagent` when no call names it).

A turn starts at each prompt of the main thread; a subagent's events belong to the turn
in progress when they happen. Each event is built in ADK's Event shape, and its store
rows made from that body as the normaliser's SQL would read them from its JSON
(rows.py: characters, previews, relay sizes; a tool result's rows are sized by the same
code as ADK's); where rows.py cannot be sure to match the SQL, the event is written as
JSON and the normaliser reads it. A tool result is stored as
`{"result": <its text, or the JSON the text holds>}` (ADK's wrapping of a tool's
return), sized as its text (its tool's name and the text, as ADK sizes a response by
name and payload), an image as its type and size only. What the store's event columns cannot
hold (the cache writes by TTL, message and request ids, the file and line, a
boundary's trigger and preTokens) is kept per event in `transcript_events`. While a
thread is read, its tool results are searched for anchors (anchors.py: the strings a
later call reproduced from them), emitted at the end of each file.

Within one file, events keep the file's order: an event stamped at most an hour before
the one before it is placed 1 microsecond after it (a time further back is kept, so one
wrong time moves no other event). An event id is one event of its session: the same
line read twice (a file under two roots) is one event; another line that reuses an id
gets `<id>@<thread>`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec

from ...model import parse_version
from ...sanitize import encodable
from ..fields import count, epoch, json_error
from ..fields import number as finite
from .anchors import AnchorIndex, strings
from .files import TranscriptFile
from .rows import EARLIEST, LATEST, awkward, made, size

# an event's store rows made by the reader (rows.py) where it can; False: every event's
# JSON is parsed by the normaliser, as before (the tests compare the two stores)
MAKE_ROWS = True

FAMILY = "claude-code"
MAIN_AGENT = "main"
COMPACT_AGENT = "compact"
SUBAGENT = "subagent"
COMPACT_PREFIX = "acompact"  # agent ids of the compaction summarizer (agent-acompact-<hex>)
# line types that are not part of the conversation: skipped by kind, counted
SKIPPED_TYPES = ("progress", "file-history-snapshot", "queue-operation", "summary")
NUDGE_S = 1e-6  # an out-of-order event goes this far after the one before it
NUDGE_WINDOW_S = 3600.0  # ... when it is stamped at most this much before it
MAX_MESSAGE_CHARS = 2000  # of an error's text, kept
TASK_TOOLS = ("Task", "Agent")  # the tool that starts a subagent (renamed Agent in 2.1)
# a slash command's output (its own user line, after the command's): the command's turn
LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>")
MAX_TOKENS = 10**12  # a usage count above this is no count (so sums stay in 64 bits)
MAX_USD = 1e9  # a costUSD above this is no cost


class Sink(Protocol):
    """Where the reader's output goes: the source batches it."""

    def event(self, row: dict[str, Any]) -> None: ...
    def detail(self, row: dict[str, Any]) -> None: ...
    def skip(self, locator: str, reason: str) -> None: ...
    def anchor(self, row: dict[str, Any]) -> None: ...


def _str(value: Any) -> str | None:
    """A text field's value, or None when it is not text."""
    return value if isinstance(value, str) else None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# `\ud` or `\uD` in a line's text: one compiled search, a quarter of the time of two
# `in` tests over each line (0.06 s against 0.24 s for the 199 MB set)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD]")


def _whole(value: Any) -> Any:
    """`value` with every lone surrogate (JSON allows one, and JavaScript writes one when
    it cuts an emoji in half) replaced by U+FFFD: text the store can hold."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def _amount(value: Any) -> float | None:
    """A costUSD as an amount: a finite number of dollars below MAX_USD, else None."""
    found = finite(value)
    return found if found is not None and abs(found) < MAX_USD else None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text_of(content: Any) -> str:
    """The text a user message or a tool result holds: a string, or its text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def _image(block: dict[str, Any]) -> dict[str, Any]:
    """An image block as its type and size: its bytes are not the model's tokens."""
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    data = source.get("data") if isinstance(source, dict) else None
    return {
        "inline_data": {
            "mime_type": (source or {}).get("media_type") or "image",
            "data_chars": len(data) if isinstance(data, str) else 0,
        }
    }


def _other(block: Any) -> dict[str, Any]:
    """A block of a type this reader does not interpret, kept whole (sized as JSON)."""
    if isinstance(block, dict) and block.get("type") == "image":
        return _image(block)
    return {"inline_data": block}


def _user_block(block: Any) -> dict[str, Any]:
    """A block of a prompt: its text, or the block kept whole (an image: its size)."""
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return {"text": block["text"]}
    return _other(block)


def _result_value(text: str) -> Any:
    """A tool result's text, or the JSON it holds (MCP tools return JSON as text), so
    that a guard can find its rows."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            return loads(text)
        except (ValueError, RecursionError):
            return text
    return text


def _result_parts(block: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], str]:
    """A tool_result block as one function_response part, and its images beside it; and
    the text the model read."""
    content = block.get("content")
    images: list[dict[str, Any]] = []
    if isinstance(content, list):
        texts = []
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            else:
                images.append(_other(b))
        text = "\n".join(texts)
    elif isinstance(content, str):
        text = content
    elif content is None:
        text = ""
    else:
        text = json.dumps(content, ensure_ascii=False)
    response: dict[str, Any] = {"result": _result_value(text)}
    if block.get("is_error") is True:
        response["is_error"] = True
    call_id = block.get("tool_use_id")
    part = {
        "function_response": {
            "id": call_id if isinstance(call_id, str) else None,
            "name": name,
            "response": response,
            # what the model read: the text, not the JSON the store keeps it as (escapes
            # add a fifth to code; a pretty-printed JSON text loses its spaces)
            "chars": len(name) + len(text),
        }
    }
    return [part, *images], text


_USAGE_FIELDS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_creation_tokens", "cache_creation_input_tokens"),
)
_SPLIT_FIELDS = (
    ("cache_write_5m_tokens", "ephemeral_5m_input_tokens"),
    ("cache_write_1h_tokens", "ephemeral_1h_input_tokens"),
)


def usage_counts(usage: Any) -> tuple[dict[str, int | None] | None, str | None]:
    """A message's usage as counts: uncached input, output, cache reads, the cache
    writes as recorded (`cache_creation_input_tokens`) and their 5-minute and 1-hour
    split (from the `cache_creation` object, when the line has one); and why it is
    refused, when one of its counts is none (negative, fractional, text, or over
    MAX_TOKENS): a usage is kept whole or not at all."""
    if not isinstance(usage, dict):
        return None, None
    split = usage.get("cache_creation")
    found: dict[str, int | None] = {}
    fields = [(usage, ours, theirs) for ours, theirs in _USAGE_FIELDS]
    if isinstance(split, dict):
        fields += [(split, ours, theirs) for ours, theirs in _SPLIT_FIELDS]
    for source, ours, theirs in fields:
        value = source.get(theirs)
        tokens = count(value)
        if value is not None and (tokens is None or tokens > MAX_TOKENS):
            return None, f"usage: {theirs} {str(value)[:40]!r} is not a token count"
        found[ours] = tokens
    for ours, _ in _SPLIT_FIELDS:
        found[ours] = (found.get(ours) or 0) if isinstance(split, dict) else None
    if found["input_tokens"] is None and found["output_tokens"] is None:
        return None, None
    return found, None


def _final(usage: dict[str, Any]) -> bool:
    """Whether a line's usage is a response's final one: from 2.1, Claude Code writes it
    on the response's last line with keys the streaming placeholders lack."""
    return "iterations" in usage or "server_tool_use" in usage


def _writes_final(version: Any) -> bool:
    """Whether this Claude Code release marks a final usage (2.1 on): then a response
    without one kept only its streaming placeholder (its output count, far too low)."""
    try:
        return parse_version(version) >= (2, 1, 0) if isinstance(version, str) else False
    except ValueError:
        return False


def usage_total(usage: dict[str, int | None] | None) -> int:
    if usage is None:
        return -1
    return sum(
        usage[k] or 0
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")
    )


def _writes(usage: dict[str, int | None]) -> int:
    """Cache writes as billed: the recorded count, else the split's sum."""
    if usage["cache_creation_tokens"] is not None:
        return usage["cache_creation_tokens"]
    return (usage["cache_write_5m_tokens"] or 0) + (usage["cache_write_1h_tokens"] or 0)


def _api_error(error: Any) -> tuple[str, str]:
    """(code, message) of an `api_error` line's error: the API's error type and text."""
    status = message = kind = None
    if isinstance(error, dict):
        status = error.get("status")
        inner = error.get("error")
        while isinstance(inner, dict):
            kind = inner.get("type") if isinstance(inner.get("type"), str) else kind
            message = inner.get("message") if isinstance(inner.get("message"), str) else message
            inner = inner.get("error")
        if message is None and isinstance(error.get("message"), str):
            message = error["message"]
        cause = error.get("cause")
        if message is None and isinstance(cause, dict) and isinstance(cause.get("code"), str):
            message = cause["code"]
    elif isinstance(error, str):
        message = error
    code = kind if kind and kind != "error" else (str(status) if status is not None else None)
    shown = " ".join(str(x) for x in (status, message) if x is not None) or "API error"
    return code or "api_error", shown[:MAX_MESSAGE_CHARS]


def _synthetic_error(line: dict[str, Any], text: str) -> tuple[str, str]:
    """(code, message) of a failed request Claude Code recorded as an assistant line
    (`isApiErrorMessage`): the error type in its text when it has one."""
    code = line.get("error") if isinstance(line.get("error"), str) else None
    start = text.find("{")
    if start >= 0:
        try:  # (counted as every read: a value only json reads makes no rows, _emit)
            body = loads(text[start:])
        except (ValueError, RecursionError):
            body = None
        if isinstance(body, dict):
            inner = body.get("error")
            if isinstance(inner, dict) and isinstance(inner.get("type"), str):
                code = inner["type"]
    status = line.get("apiErrorStatus")
    return code or (str(status) if status is not None else "api_error"), text[:MAX_MESSAGE_CHARS]


# msgspec reads a line in about 0.4 of json's time (the 199 MB benchmark set: 0.09 s
# against 0.23 s); what it refuses (NaN, a number past a double's range, a lone
# surrogate escape, nesting too deep, text that is not JSON) json reads, or refuses
# with its own message, as before. Both give the same objects: dicts in key order, the
# last of a repeated key, ints of any size, floats read alike (tests/test_claude_code.py).
_encode = msgspec.json.Encoder().encode
_json_reads = 0  # texts msgspec refused, read by json in this process so far
_awkward_reads = 0  # floats read in this process so far that rows.py's payloads decline


def _float(text: str) -> float:
    """A float as msgspec reads it, counted where DuckDB writes it otherwise than msgspec
    (rows.awkward): only in a session that read one does rows.py look through the
    payloads it writes for it (see `_emit`; a search of every payload's text was half
    its time)."""
    global _awkward_reads
    value = float(text)
    if math.isinf(value):
        raise ValueError("Number out of range")  # (as msgspec says it: json reads it)
    if awkward(value):
        _awkward_reads += 1
    return value


_decode = msgspec.json.Decoder(float_hook=_float).decode


def loads(text: str) -> Any:
    """`json.loads(text)`, sooner."""
    global _json_reads
    try:
        return _decode(text)
    except (ValueError, RecursionError):  # (msgspec's DecodeError is a ValueError)
        value = json.loads(text)
        _json_reads += 1  # (a value json read: a text neither reads gives none)
        return value


def dumps(value: Any, plain: bool) -> str:
    """`value` as compact JSON, as `json.dumps(value, ensure_ascii=False)` writes it or in
    msgspec's spelling of the same JSON (`1e-7` for `1e-07`; DuckDB reads both alike),
    about five times sooner, where `plain`: no value came from a text json read (a NaN
    json reads, msgspec would write as null; a lone surrogate it cannot write)."""
    if plain:
        try:
            return _encode(value).decode("utf-8")
        except (TypeError, ValueError, OverflowError):  # (EncodeError is a TypeError)
            pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:  # msgspec's writer goes a few levels deeper: whatever was read
        # before, a value it can write is kept (a NaN in one so deep, written as null)
        return _encode(value).decode("utf-8")


def passed_over(text: str) -> str | None:
    """The type of a line the conversation passes over unparsed, told by its head: a
    file-history snapshot or a progress line (the largest lines of 2.1 files)."""
    head = text[:1000]
    if head.startswith('{"type":"file-history-snapshot"'):
        return "file-history-snapshot"
    at = head.find('"type":"progress","data":')
    if at >= 0 and head.find('"type":"') == at:  # the line's own type, not a nested one
        return "progress"
    return None


def read_line(
    text: str, locator: str, sink: Sink, kinds: Counter[str]
) -> tuple[dict[str, Any], str, float] | None:
    """One line as the conversation reads it: its JSON object, its type (`user`,
    `assistant` or `system`) and its time; None for a line that is none of those (counted
    by kind in `kinds`) or that cannot be read (a skip with its place, told to `sink`)."""
    passed = passed_over(text)
    if passed is not None:
        kinds[passed] += 1
        return None
    try:
        line = loads(text)
    except json.JSONDecodeError as e:
        sink.skip(locator, f"not valid JSON: {json_error(e)}")
        return None
    except (ValueError, RecursionError):
        sink.skip(locator, "not valid JSON: nested too deeply to read")
        return None
    if not isinstance(line, dict):
        sink.skip(locator, "not a JSON object")
        return None
    if _SURROGATE_ESCAPE.search(text):  # an escaped surrogate, maybe a lone one
        try:
            line = _whole(line)
        except RecursionError:
            sink.skip(locator, "nested too deeply to read (with an escaped surrogate)")
            return None
    kind = line.get("type")
    if kind in SKIPPED_TYPES or kind not in ("user", "assistant", "system"):
        kinds[kind if isinstance(kind, str) and kind else "no type"] += 1
        return None
    stamp = line.get("timestamp")
    try:
        when = epoch(stamp)
    except ValueError as e:
        sink.skip(locator, f"timestamp: {e}")
        return None
    if when is None:
        sink.skip(locator, "no timestamp")
        return None
    if not EARLIEST <= when <= LATEST:
        sink.skip(locator, f"timestamp {str(stamp)[:40]!r}: not between 1970 and 3000")
        return None
    return line, kind, when


def call_detail(
    line: dict[str, Any], message: dict[str, Any], number: int, when: float
) -> dict[str, Any]:
    """What `transcript_events` keeps of a response's line beside its usage."""
    stamp = line.get("timestamp")
    usage = message.get("usage")
    speed = usage.get("speed") if isinstance(usage, dict) else None
    return {
        "line": number,
        "timestamp": stamp if isinstance(stamp, str) else None,
        "epoch": when,
        "message_id": _str(message.get("id")),
        "request_id": _str(line.get("requestId")),
        "model": _str(message.get("model")),
        "is_sidechain": line.get("isSidechain") is True,
        "speed": _str(speed),
        "cost_usd": _amount(line.get("costUSD")),
        "version": _str(line.get("version")),
    }


def failure_detail(
    line: dict[str, Any], number: int, when: float
) -> tuple[dict[str, Any], dict[str, int | None] | None, str | None]:
    """What `transcript_events` keeps of a failed request's line, its usage (None: none
    recorded) and why its usage is refused (None: it is not)."""
    stamp = line.get("timestamp")
    usage, refused = None, None
    body = line.get("message")
    if isinstance(body, dict):
        usage, refused = usage_counts(body.get("usage"))
    details: dict[str, Any] = {
        "line": number,
        "timestamp": stamp if isinstance(stamp, str) else None,
        "epoch": when,
        "is_sidechain": line.get("isSidechain") is True,
        "version": _str(line.get("version")),
    }
    if isinstance(body, dict):
        details["message_id"] = _str(body.get("id"))
        details["model"] = _str(body.get("model"))
    return details, usage, refused


class _PlainSplit(msgspec.Struct):
    ephemeral_5m_input_tokens: int | None = None
    ephemeral_1h_input_tokens: int | None = None


class _PlainUsage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_creation: _PlainSplit | None = None
    speed: str | None = None


class _PlainMessage(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    usage: _PlainUsage | None = None


class _PlainLine(msgspec.Struct):
    """The fields of a response's line that `plain_response` reads (any other is passed
    over unread; a field of another type fails the decode)."""

    type: str | None = None
    timestamp: str | None = None
    message: _PlainMessage | None = None
    requestId: str | None = None  # noqa: N815 - the line's own key
    isSidechain: bool | None = None  # noqa: N815
    isApiErrorMessage: bool | None = None  # noqa: N815
    uuid: str | None = None
    costUSD: float | None = None  # noqa: N815


_decode_response = msgspec.json.Decoder(_PlainLine).decode
_PLAIN_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z")
_DAYS: dict[str, float] = {}  # "YYYY-MM-DD": the day's first second (epoch)

# (epoch, message id, request id, model, is_sidechain, speed, cost_usd, input, output,
#  cache reads, cache writes, 5-minute writes, 1-hour writes, uuid)
PlainResponse = tuple[
    float, str | None, str | None, str | None, bool, str | None, float | None,
    int | None, int | None, int | None, int | None, int | None, int | None, str | None,
]  # fmt: skip


def plain_response(text: str) -> PlainResponse | None:
    """What `read_line`, `call_detail` and `usage_counts` make of a plain response's line
    (an assistant line, not an API error, stamped `YYYY-MM-DDTHH:MM:SS[.fff]Z` in range,
    every kept field of its type, every count in range, input or output counted), read
    by a typed decode about eight times sooner; None for any other line, which those
    read. Whatever this returns, they return the same of the line
    (tests/test_ccusage_straight.py holds the two equal on every corpus)."""
    if passed_over(text) is not None:
        return None
    try:
        line = _decode_response(text)
    except (ValueError, RecursionError):  # (msgspec's errors are ValueErrors; it refuses
        return None  # a lone surrogate anywhere in the line, which read_line reads)
    message = line.message
    if line.type != "assistant" or line.isApiErrorMessage is True or message is None:
        return None
    usage = message.usage
    when = _plain_epoch(line.timestamp)
    if usage is None or when is None:
        return None
    counts = [usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens,
              usage.cache_creation_input_tokens]  # fmt: skip
    split = usage.cache_creation
    if split is not None:
        counts += [split.ephemeral_5m_input_tokens, split.ephemeral_1h_input_tokens]
    for value in counts:
        if value is not None and not 0 <= value <= MAX_TOKENS:
            return None
    if counts[0] is None and counts[1] is None:
        return None
    cost = line.costUSD
    if cost is not None and not (math.isfinite(cost) and abs(cost) < MAX_USD):
        cost = None
    five, hour = (counts[4] or 0, counts[5] or 0) if split is not None else (None, None)
    return (when, message.id, line.requestId, message.model, line.isSidechain is True,
            usage.speed, cost, counts[0], counts[1], counts[2], counts[3], five, hour,
            line.uuid)  # fmt: skip


def _plain_epoch(stamp: str | None) -> float | None:
    """`epoch(stamp)` for a time in range written as Claude Code writes it; else None."""
    found = _PLAIN_TIME.fullmatch(stamp) if stamp is not None else None
    if found is None:
        return None
    hour, minute, second = int(found[4]), int(found[5]), int(found[6])
    if hour > 23 or minute > 59 or second > 59:
        return None
    day = _DAYS.get(stamp[:10])  # type: ignore[index]
    if day is None:
        try:
            day = datetime(int(found[1]), int(found[2]), int(found[3]), tzinfo=UTC).timestamp()
        except ValueError:
            return None
        if len(_DAYS) > 100_000:
            _DAYS.clear()
        _DAYS[stamp[:10]] = day  # type: ignore[index]
    fraction = found[7]
    # as epoch() sums them: the whole seconds (exact in a float), then the fraction
    when = (day + (hour * 3600 + minute * 60 + second)) + (
        int(fraction) / 10 ** len(fraction) if fraction else 0.0)  # fmt: skip
    return when if EARLIEST <= when <= LATEST else None


@dataclass
class _Thread:
    """One conversation in a session: the main thread, or one subagent's."""

    branch: str | None
    author: str
    started: float | None = None  # first event since the last compaction boundary
    last: float | None = None  # the newest event
    message: _Message | None = None  # the response being read
    results: _Event | None = None  # tool results since that response began
    boundary: _Event | None = None  # a compaction waiting for its summary line
    anchors: AnchorIndex = field(default_factory=AnchorIndex)  # its results, indexed


@dataclass
class _Event:
    """One event being built: its identity, where it was read, and its JSON."""

    event_id: str
    epoch: float
    locator: str
    invocation_id: str | None
    body: dict[str, Any]


@dataclass
class _Message:
    """One model response being read: its lines' blocks and the largest usage seen."""

    key: tuple[str, str]
    event: _Event
    usage: dict[str, int | None] | None
    detail: dict[str, Any]
    total: int = -1
    final: bool = False  # a line held the response's final usage (2.1's last-line shape)
    parts: list[dict[str, Any]] = field(default_factory=list)


class SessionReader:
    """Reads the files of one session, its own file first, then its subagents', and
    hands the sink its events (RAW_EVENT_SCHEMA rows) and their transcript details."""

    def __init__(self, app: str, user: str, session_id: str, sink: Sink):
        self.app, self.user, self.session_id = app, user, session_id
        self.sink = sink
        self.json_reads = _json_reads  # (see `dumps`)
        self.awkward_reads = _awkward_reads  # (see `_emit`)
        self.tool_names: dict[str, str] = {}  # tool_use id -> tool name
        self.task_prompts: dict[str, str] = {}  # digest of a Task prompt -> subagent type
        self.task_calls: dict[str, str] = {}  # Task tool_use id -> subagent type
        self.agent_types: dict[str, str] = {}  # agent id -> subagent type
        self.turns: list[tuple[float, str]] = []  # (epoch, invocation id) of each prompt
        self.seen_calls: set[tuple[str, str]] = set()
        self.event_ids: dict[str, tuple[str, int]] = {}  # id -> (file, line) that took it
        self.kinds: Counter[str] = Counter()
        self.anchor_counts: Counter[str] = Counter()  # anchors emitted per result's call id
        self.encodable = all(map(encodable, (app, user, session_id)))  # (see _emit)

    # -- the session's timeline ---------------------------------------------------

    def _turn_at(self, when: float) -> str | None:
        k = bisect_right(self.turns, (when, "\uffff")) - 1
        return self.turns[k][1] if k >= 0 else (self.turns[0][1] if self.turns else None)

    # -- reading ------------------------------------------------------------------

    def read(self, file: TranscriptFile, lines: Iterable[tuple[int, str]]) -> Iterator[int]:
        """Every line of one file, in order, yielding each line's number once it is read
        (the caller may take a batch then); the file's open response and results are
        emitted at its end."""
        self.file = file
        self.threads: dict[str | None, _Thread] = {}
        self.side_threads: dict[str, str] = {}  # uuid of an inline sidechain line -> branch
        self.last_epoch: float | None = None
        for number, text in lines:
            self._line(number, text)
            yield number
        for thread in self.threads.values():
            self._close(thread)
            self._flush_results(thread)
            self._flush_boundary(thread, None)
        for thread in self.threads.values():
            for row in thread.anchors.rows():  # numbered per result's call id, whatever file
                index = self.anchor_counts[row["function_call_id"]]
                self.anchor_counts[row["function_call_id"]] += 1
                self.sink.anchor({"app_name": self.app, "user_id": self.user,
                                  "session_id": self.session_id, "anchor_index": index,
                                  **row})  # fmt: skip

    def _line(self, number: int, text: str) -> None:
        self.number = number
        locator = f"{self.file.path or self.file.rel}:{number}"
        found = read_line(text, locator, self.sink, self.kinds)
        if found is None:
            return
        line, kind, when = found
        stamp = line.get("timestamp")
        thread = self._thread(line)
        if kind == "assistant":
            self._assistant(line, thread, when, locator, number, stamp)
        elif kind == "user":
            self._user(line, thread, when, locator)
        else:
            self._system(line, thread, when, locator, number, stamp)

    def _epoch(self, when: float) -> float:
        """`when`, or just after the file's previous event when it is stamped at most
        NUDGE_WINDOW_S before it: events keep the file's order. A time further back is
        kept as written (the one before was the odd one), so one wrong time moves no
        other event."""
        last = self.last_epoch
        if last is not None and last - NUDGE_WINDOW_S < when <= last:
            when = last + NUDGE_S
        self.last_epoch = when
        return when

    def _thread(self, line: dict[str, Any]) -> _Thread:
        if self.file.role != "main":
            branch: str | None = self.file.branch
            key = branch
        elif line.get("isSidechain") is True:
            uuid, parent = line.get("uuid"), line.get("parentUuid")
            branch = self.side_threads.get(parent) if isinstance(parent, str) else None
            if branch is None:
                root = uuid if isinstance(uuid, str) and uuid else f"{len(self.threads)}"
                branch = f"sidechain-{root}"
            if isinstance(uuid, str):
                self.side_threads[uuid] = branch
            key = branch
        else:
            branch, key = None, None
        thread = self.threads.get(key)
        if thread is None:
            thread = _Thread(branch, MAIN_AGENT if branch is None else "")
            self.threads[key] = thread
        return thread

    def _author(self, thread: _Thread, prompt: str | None) -> str:
        """A subagent thread's author, fixed at its first event: the type its Task call
        named (by agent id, else by its prompt), `compact`, or `subagent`."""
        if not thread.author:
            agent_id = self.file.agent_id
            if agent_id and agent_id.startswith(COMPACT_PREFIX):
                thread.author = COMPACT_AGENT
            elif agent_id and agent_id in self.agent_types:
                thread.author = self.agent_types[agent_id]
            elif prompt is not None and _digest(prompt) in self.task_prompts:
                thread.author = self.task_prompts[_digest(prompt)]
            else:
                thread.author = SUBAGENT
        return thread.author

    def _invocation(self, thread: _Thread, when: float) -> str | None:
        if thread.branch is None and self.file.role == "main":
            return self.turns[-1][1] if self.turns else None
        return self._turn_at(when)

    def _new_event(
        self, thread: _Thread, event_id: str, when: float, locator: str, body: dict[str, Any]
    ) -> _Event:
        # an id is one event of its session: the same line read again (one file under two
        # roots) is that event; another line with an id taken gets an id of its own
        origin = (self.file.rel, self.number)
        first = self.event_ids.setdefault(event_id, origin)
        if first != origin:
            base = f"{event_id}@{thread.branch or MAIN_AGENT}"
            event_id, n = base, 1
            while self.event_ids.setdefault(event_id, origin) != origin:
                n += 1
                event_id = f"{base}#{n}"
        at = self._epoch(when)
        if thread.started is None:
            thread.started = at
        thread.last = at
        body["timestamp"] = at
        if thread.branch is not None:
            body["branch"] = thread.branch
        return _Event(event_id, at, locator, self._invocation(thread, at), body)

    def _emit(self, event: _Event) -> None:
        body = event.body
        body["id"] = event.event_id
        if event.invocation_id is not None:
            body["invocation_id"] = event.invocation_id
        # (msgspec's writer while every line of the session was read by msgspec)
        plain = _json_reads == self.json_reads
        row: dict[str, Any] = {
            "app_name": self.app,
            "user_id": self.user,
            "session_id": self.session_id,
            "event_id": event.event_id,
            "invocation_id": event.invocation_id,
            "timestamp": event.epoch,
            "event_json": None,
            "locator": event.locator,
        }
        # its store rows made here, not parsed from the JSON again (rows.py), where they
        # are sure to be the SQL's: no string of the session read by json (a lone
        # surrogate), and its identity and thread valid Unicode (a file's name may not
        # be: the JSON path skips such an event, saying why)
        found = None
        if MAKE_ROWS and plain and self.encodable and all(map(encodable, (
                event.event_id, event.invocation_id, body.get("author"),
                body.get("branch")))):  # fmt: skip
            # (a float rows.py declines was read in this session: it looks for it)
            found = made(body, floats=_awkward_reads != self.awkward_reads)
        if found is None:
            row["event_json"] = dumps(body, plain)
        else:
            row["json_chars"], row["made"] = size(found[1]), found
        self.sink.event(row)

    def _detail(self, event_id: str, kind: str, **values: Any) -> dict[str, Any]:
        return {
            "app_name": self.app,
            "user_id": self.user,
            "session_id": self.session_id,
            "event_id": event_id,
            "kind": kind,
            "file": self.file.rel,
            **values,
        }

    # -- assistant lines: one call per (message.id, requestId) --------------------

    def _assistant(
        self,
        line: dict[str, Any],
        thread: _Thread,
        when: float,
        locator: str,
        number: int,
        stamp: Any,
    ) -> None:
        message = line.get("message")
        if not isinstance(message, dict):
            self.sink.skip(locator, "an assistant line without a message object")
            return
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        elif not isinstance(blocks, list):
            blocks = []
        if line.get("isApiErrorMessage") is True:
            self._close(thread)
            self._flush_results(thread)
            self._failed(line, thread, when, locator, number, stamp, _text_of(blocks))
            return
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        request_id = line.get("requestId") if isinstance(line.get("requestId"), str) else None
        uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
        key = (message_id or uuid or locator, request_id or "")
        usage, refused = usage_counts(message.get("usage"))
        if refused:
            self.sink.skip(locator, f"{refused}: the response is kept without this line's usage")
        current = thread.message
        if current is not None and current.key != key:
            self._close(thread)
            current = None
        if current is None:
            if key in self.seen_calls:
                self.kinds["repeated response"] += 1
                return
            self._flush_boundary(thread, None)
            self._flush_results(thread)
            model = message.get("model") if isinstance(message.get("model"), str) else None
            body: dict[str, Any] = {"author": self._author(thread, None)}
            if model and model != "<synthetic>":
                body["model_version"] = model
            event = self._new_event(thread, key[0], when, locator, body)
            current = _Message(key, event, None, {})
            thread.anchors.began()
            thread.message = current
        for block in blocks:
            part = self._block(block, thread, current)
            if part is not None:
                current.parts.append(part)
        total = usage_total(usage)
        if usage is not None and _final(message["usage"]):
            current.final = True
        if usage is not None and total > current.total:
            current.usage, current.total = usage, total
            current.detail = call_detail(line, message, number, when)

    def _block(self, block: Any, thread: _Thread, message: _Message) -> dict[str, Any] | None:
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                return None
            thread.anchors.reproduced([("text", text)], message.event.event_id, None, None)
            return {"text": text}
        if kind == "thinking":
            text = block.get("thinking")
            part: dict[str, Any] = {"text": text if isinstance(text, str) else "", "thought": True}
            if block.get("signature"):
                part["thought_signature"] = "1"  # kept: a signed thought is sent back
            return part
        if kind == "redacted_thinking":
            return {"text": "", "thought": True, "thought_signature": "1"}
        if kind in ("tool_use", "server_tool_use"):
            call_id, name = block.get("id"), block.get("name")
            name = name if isinstance(name, str) else "unknown"
            tool_input = block.get("input")
            if isinstance(call_id, str):
                self.tool_names[call_id] = name
                if name in TASK_TOOLS and isinstance(tool_input, dict):
                    kind_named = tool_input.get("subagent_type")
                    agent_type = kind_named if isinstance(kind_named, str) else "general-purpose"
                    self.task_calls[call_id] = agent_type
                    prompt = tool_input.get("prompt")
                    if isinstance(prompt, str):
                        self.task_prompts[_digest(prompt)] = agent_type
            thread.anchors.reproduced(strings(tool_input, "input"), message.event.event_id,
                                      call_id if isinstance(call_id, str) else None, name)
            return {
                "function_call": {
                    "id": call_id if isinstance(call_id, str) else None,
                    "name": name,
                    "args": tool_input if tool_input is not None else {},
                }
            }
        return _other(block)

    def _close(self, thread: _Thread) -> None:
        """Emit the response being read, with the largest usage its lines carried."""
        current = thread.message
        if current is None:
            return
        thread.message = None
        thread.anchors.responded()
        self.seen_calls.add(current.key)
        event = current.event
        event.body["content"] = {"role": "model", "parts": current.parts}
        usage = current.usage
        if usage is not None:
            prompt = (
                (usage["input_tokens"] or 0) + (usage["cache_read_tokens"] or 0) + _writes(usage)
            )
            event.body["usage_metadata"] = {
                "prompt_token_count": prompt,
                "cached_content_token_count": usage["cache_read_tokens"] or 0,
                "candidates_token_count": usage["output_tokens"] or 0,
                "total_token_count": prompt + (usage["output_tokens"] or 0),
            }
            placeholder = not current.final and _writes_final(current.detail.get("version"))
            self.sink.detail(
                self._detail(
                    event.event_id,
                    "call",
                    **current.detail,
                    **usage,
                    output_placeholder=placeholder,
                )
            )
        self._emit(event)

    # -- user lines: prompts, tool results, the compaction summary ----------------

    def _user(self, line: dict[str, Any], thread: _Thread, when: float, locator: str) -> None:
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        uuid = _str(line.get("uuid")) or locator
        if line.get("isCompactSummary") is True and thread.boundary is not None:
            self._flush_boundary(thread, _text_of(content))
            return
        self._flush_boundary(thread, None)
        if line.get("isVisibleInTranscriptOnly") is True:
            self.kinds["user line shown in the transcript only"] += 1  # never sent
            return
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            self._results(line, thread, when, locator, uuid, content)
            return
        # a prompt (or a meta message): the response before it is complete
        self._close(thread)
        self._flush_results(thread)
        if isinstance(content, str):
            parts: list[dict[str, Any]] = [{"text": content}]
        elif isinstance(content, list):
            parts = [_user_block(b) for b in content]
        else:
            self.sink.skip(locator, "a user line without message content")
            return
        # a summary with no boundary before it (a 1.0 session continued from another)
        # is sent like a meta message: it starts no turn
        starts_turn = (
            thread.branch is None
            and self.file.role == "main"
            and line.get("isMeta") is not True
            and line.get("isCompactSummary") is not True
            and not _text_of(content).lstrip().startswith(LOCAL_OUTPUT)
        )
        self._author(thread, _text_of(content))
        thread.anchors.sent(_text_of(content))
        event = self._new_event(thread, uuid, when, locator, {"author": "user"})
        if starts_turn:
            self.turns.append((event.epoch, event.event_id))
            event.invocation_id = event.event_id
        event.body["content"] = {"role": "user", "parts": parts}
        self._emit(event)

    def _results(
        self,
        line: dict[str, Any],
        thread: _Thread,
        when: float,
        locator: str,
        uuid: str,
        content: list[Any],
    ) -> None:
        """Tool results join the thread's pending results event (parallel calls' results
        are one event, as ADK stores them)."""
        found = line.get("toolUseResult")
        if isinstance(found, dict) and isinstance(found.get("agentId"), str):
            for b in content:
                call_id = _str(b.get("tool_use_id")) if isinstance(b, dict) else None
                if call_id in self.task_calls:
                    self.agent_types[found["agentId"]] = self.task_calls[call_id]
        if thread.results is None:
            event = self._new_event(
                thread, uuid, when, locator, {"author": self._author(thread, None)}
            )
            event.body["content"] = {"role": "user", "parts": []}
            thread.results = event
        parts = thread.results.body["content"]["parts"]
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_result":
                call_id = b.get("tool_use_id")
                name = (
                    self.tool_names.get(call_id, "unknown")
                    if isinstance(call_id, str)
                    else ("unknown")
                )
                found_parts, text = _result_parts(b, name)
                parts += found_parts
                thread.anchors.result(call_id if isinstance(call_id, str) else None, name, text)
            elif b.get("type") == "text" and isinstance(b.get("text"), str):
                parts.append({"text": b["text"]})
            else:
                parts.append(_other(b))
        thread.last = self._epoch(when)

    def _flush_results(self, thread: _Thread) -> None:
        if thread.results is not None:
            event, thread.results = thread.results, None
            self._emit(event)

    # -- system lines: compaction, failed requests --------------------------------

    def _system(
        self,
        line: dict[str, Any],
        thread: _Thread,
        when: float,
        locator: str,
        number: int,
        stamp: Any,
    ) -> None:
        subtype = line.get("subtype")
        if subtype == "compact_boundary":
            self._close(thread)
            self._flush_results(thread)
            self._flush_boundary(thread, None)
            self._boundary(line, thread, when, locator, number, stamp)
        elif subtype == "api_error":
            self._close(thread)
            self._flush_results(thread)
            self._failed(line, thread, when, locator, number, stamp, None)
        else:
            self.kinds[f"system {subtype}" if isinstance(subtype, str) else "system"] += 1

    def _failed(
        self,
        line: dict[str, Any],
        thread: _Thread,
        when: float,
        locator: str,
        number: int,
        stamp: Any,
        text: str | None,
    ) -> None:
        uuid = _str(line.get("uuid")) or locator
        if text is None:
            code, message = _api_error(line.get("error"))
        else:
            code, message = _synthetic_error(line, text)
        event = self._new_event(
            thread,
            uuid,
            when,
            locator,
            {"author": self._author(thread, None), "error_code": code, "error_message": message},
        )
        details, usage, refused = failure_detail(line, number, when)
        if refused:
            self.sink.skip(locator, f"{refused}: the failure is kept without it")
        self.sink.detail(self._detail(event.event_id, "failed", **details, **(usage or {})))
        self._emit(event)

    def _boundary(
        self,
        line: dict[str, Any],
        thread: _Thread,
        when: float,
        locator: str,
        number: int,
        stamp: Any,
    ) -> None:
        """A compaction: everything of the thread before it is replaced by the summary
        that the next line carries."""
        uuid = _str(line.get("uuid")) or locator
        end = thread.last
        # nothing since the boundary before: this one covers that boundary's summary alone
        start = thread.started if thread.started is not None else end
        event = self._new_event(thread, uuid, when, locator, {"author": "user"})
        event.invocation_id = event.event_id  # a compaction is no turn
        event.body["actions"] = {
            "compaction": {
                "start_timestamp": start if start is not None else event.epoch,
                "end_timestamp": end if end is not None else event.epoch,
            }
        }
        found = line.get("compactMetadata")
        meta: dict[str, Any] = found if isinstance(found, dict) else {}
        trigger = _str(meta.get("trigger"))
        self.sink.detail(
            self._detail(
                event.event_id,
                "compaction",
                line=number,
                timestamp=stamp if isinstance(stamp, str) else None,
                epoch=when,
                trigger=trigger,
                pre_tokens=count(meta.get("preTokens")),
                version=line.get("version") if isinstance(line.get("version"), str) else None,
                is_sidechain=line.get("isSidechain") is True,
            )
        )
        thread.boundary = event
        thread.started = None
        thread.anchors.compacted()

    def _flush_boundary(self, thread: _Thread, summary: str | None) -> None:
        """Emit a waiting compaction, with its summary when the line after it held one."""
        event = thread.boundary
        if event is None:
            return
        thread.boundary = None
        if summary is not None:
            thread.anchors.sent(summary)
            event.body["actions"]["compaction"]["compacted_content"] = {
                "role": "user",
                "parts": [{"text": summary}],
            }
        self._emit(event)
