"""A Claude Code event's store rows, made from the body the reader built, not parsed again.

The reader builds each event in ADK's Event shape. Written as JSON, the normaliser
parses it (`json_transform`) and sizes it in SQL (queries/families/adk/stage_events.sql,
stage_parts.sql, event_rows.sql); but the reader holds the body as Python values
already, so `made` gives the same rows from them: the event's columns and each part's kind,
characters, relay characters and preview, and each tool result's payload for the
sizing of its rows (families/adk/results.py). What the SQL defines, this module
computes the same way; where it cannot be sure to, it declines (None) and the event
goes through the SQL as before:

- a payload (a tool call's args, a tool result's response, a block kept whole) is
  measured on DuckDB's compact JSON of it, which msgspec writes the same but for the
  hex digits of `\\u` escapes (DuckDB writes them in upper case) and the spelling of a
  float from 1e-6 to 1e-5 and from 1e16 to 1e21 (`1e16` is `10000000000000000.0`
  there; measured on 300,000 floats of every exponent: `awkward`): a
  payload holding either, or one msgspec cannot write (nested about 1,000 deep: DuckDB
  reads and writes what it can), is declined. The reader's decoder counts such floats
  as it reads (transcript._float), so that `made` looks for them only in a session
  that read one;
- a body or a part holding a key or a type the reader does not write is declined, as is
  an event whose time is not one the store keeps.

A body is made only while every line of its session was read by msgspec (the reader's
`plain`) and its identity and thread are valid Unicode: no string of it is then a lone
surrogate, which Python's json reads (and a file's name may hold) and Arrow cannot.
tests/test_claude_code_rows.py holds every row equal to the SQL's, and the store equal.
"""

from __future__ import annotations

from typing import Any

import msgspec

HEAD = 8192  # characters of a payload whose separators are counted (stage_parts.sql)
PREVIEW = 2000  # characters of a part's preview
EVENT_CHARS = 200  # about an event's JSON beside its parts (its keys, ids and usage)
_INT64 = 1 << 63
# the times the store holds (stage_events.sql's `valid`: 1970 to 3000), the reader's too
EARLIEST, LATEST = 0.0, 32_503_680_000.0

_BODY_KEYS = frozenset({
    "author", "timestamp", "branch", "id", "invocation_id", "model_version", "content",
    "usage_metadata", "error_code", "error_message", "actions"})  # fmt: skip
_TEXT_KEYS = ("author", "branch", "model_version", "error_code", "error_message")
_USAGE = ("prompt_token_count", "candidates_token_count", "cached_content_token_count",
          "thoughts_token_count", "tool_use_prompt_token_count", "total_token_count")  # fmt: skip
_PART_KEYS = frozenset({"text", "thought", "thought_signature", "function_call",
                        "function_response", "inline_data"})  # fmt: skip
_RANKS = {"text": 0, "thought": 1, "function_call": 2, "function_response": 3, "other": 4}

_encode = msgspec.json.Encoder().encode
_WALKED = (dict, list, float)

# one part's row: (origin, part_index, kind, tool_name, function_call_id,
# has_thought_signature, chars, relay_chars, preview, payload); the payload is a tool
# result's response as JSON (for the sizing of its rows), else None
Part = tuple[str, int, str, str | None, str | None, bool, int, int, str | None, str | None]


class _Declined(Exception):
    pass


def made(body: dict[str, Any], *, floats: bool = True) -> tuple[dict[str, Any], list[Part]] | None:
    """The event columns the body gives (those the reader's row does not: its ids,
    time and invocation are the row's) and its parts' rows; None where the SQL is the
    definition (above). `floats`: whether a payload may hold an `awkward` float (False
    where the caller's decoder counted none: the reader's), looked for where it may."""
    try:
        return _made(body, floats)
    except _Declined:
        return None


def awkward(value: float) -> bool:
    """A float DuckDB writes in positional notation where msgspec writes an exponent:
    its size in [1e-6, 1e-5) or [1e16, 1e21) (the reader asks it of every float it
    reads: the spans are written out, not looped over)."""
    size = abs(value)
    return 1e-6 <= size < 1e-5 or 1e16 <= size < 1e21


def size(parts: list[Part]) -> int:
    """What a made event weighs in a batch (whose event JSON is cut at a number of
    characters): its parts' relay characters (their text, or their payload's JSON and a
    little), and EVENT_CHARS for the rest of it."""
    return EVENT_CHARS + sum(part[7] for part in parts)


def _made(body: dict[str, Any], floats: bool) -> tuple[dict[str, Any], list[Part]]:
    if not _BODY_KEYS.issuperset(body):
        raise _Declined
    when = _double(body.get("timestamp"))
    if when is None or not EARLIEST <= when <= LATEST:
        raise _Declined
    event: dict[str, Any] = {name: _text(body.get(name)) for name in _TEXT_KEYS}
    usage = body.get("usage_metadata")
    if usage is None:
        usage = {}
    elif not isinstance(usage, dict) or not set(_USAGE).issuperset(usage):
        raise _Declined
    for name in _USAGE:
        event[name] = _bigint(usage.get(name))
    parts: list[Part] = []
    content = body.get("content")
    if content is not None:
        parts += _parts(_dict(content).get("parts"), "content", floats)
    start = end = None
    actions = body.get("actions")
    if actions is not None:
        actions = _dict(actions)
        if set(actions) - {"compaction"}:
            raise _Declined
        compaction = actions.get("compaction")
        if compaction is not None:
            compaction = _dict(compaction)
            if set(compaction) - {"start_timestamp", "end_timestamp", "compacted_content"}:
                raise _Declined
            start = _double(compaction.get("start_timestamp"))
            end = _double(compaction.get("end_timestamp"))
            summary = compaction.get("compacted_content")
            if summary is not None:
                parts += _parts(_dict(summary).get("parts"), "compaction", floats)
    event["is_compaction"] = start is not None or end is not None
    event["compaction_start"], event["compaction_end"] = start, end
    own = [p for p in parts if p[0] == "content"]
    event["part_count"] = len(own)
    event["chars"] = sum(p[6] for p in own)
    event["kinds"] = sorted({p[2] for p in own}, key=_RANKS.__getitem__)
    return event, parts


def _parts(found: Any, origin: str, floats: bool) -> list[Part]:
    if found is None:
        return []
    if not isinstance(found, list):
        raise _Declined
    return [_part(_dict(part), origin, i, floats) for i, part in enumerate(found)]


def _part(part: dict[str, Any], origin: str, index: int, floats: bool) -> Part:
    """stage_parts.sql's row of one part."""
    if not _PART_KEYS.issuperset(part):
        raise _Declined
    text = _text(part.get("text"))
    thought = part.get("thought")
    if thought is not None and type(thought) is not bool:
        raise _Declined
    signed = _text(part.get("thought_signature")) is not None
    call, response = part.get("function_call"), part.get("function_response")
    if call is not None:
        call = _dict(call)
        if set(call) - {"id", "name", "args"}:
            raise _Declined
        name, call_id = _text(call.get("name")), _text(call.get("id"))
        payload = _json(call.get("args"), floats) or "{}"
        chars = len(name or "") + len(payload)
        return (origin, index, "function_call", name, call_id, signed, chars,
                _relay(payload), payload[:PREVIEW], None)  # fmt: skip
    if response is not None:
        response = _dict(response)
        if set(response) - {"id", "name", "response", "chars"}:
            raise _Declined
        name, call_id = _text(response.get("name")), _text(response.get("id"))
        given = _bigint(response.get("chars"))
        value = _json(response.get("response"), floats)
        payload = value or "{}"
        chars = given if given is not None else len(name or "") + len(payload)
        # (result_payloads.sql: a response that is there, of the conversation's own parts)
        sized = value if origin == "content" else None
        return (origin, index, "function_response", name, call_id, signed, chars,
                _relay(payload), payload[:PREVIEW], sized)  # fmt: skip
    if text is not None:
        kind = "thought" if thought else "text"
        return origin, index, kind, None, None, signed, len(text), len(text), text[:PREVIEW], None
    kept = _json(part.get("inline_data"), floats)
    chars = len(kept) if kept is not None else 0
    return (origin, index, "other", None, None, signed, chars, chars,
            kept[:PREVIEW] if kept is not None else None, None)  # fmt: skip


def _relay(payload: str) -> int:
    """stage_parts.sql's relay_chars of a payload: its length, plus a space after each
    ':' and ',' outside its strings and less a backslash for each escaped quote, counted
    on its first HEAD characters (head_pieces and head_separators in macros.sql) and
    scaled to the rest, rounded half away from zero as DuckDB's round."""
    head = payload[:HEAD]
    pieces = head.replace("\\\\", "").replace('\\"', "").split('"')
    # the pieces outside strings (the first, the third, ...) and a string the head cuts
    outside = "".join(pieces[0::2] + pieces[-1:] * (len(pieces) % 2 == 0))
    separators = outside.count(":") + outside.count(",")
    extra = separators - head.count('\\"')
    size = len(payload)
    if size <= HEAD:
        return size + extra
    scaled = extra * size / HEAD
    return size + (int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5))


def _json(value: Any, floats: bool) -> str | None:
    """DuckDB's compact JSON of a value (None: JSON's null, which it reads as no value)."""
    if value is None:
        return None
    try:
        text = _encode(value).decode("utf-8")
    except (TypeError, ValueError, OverflowError, RecursionError):  # (EncodeError: TypeError)
        raise _Declined from None
    if "\\u" in text:  # a control character (or a backslash and a u: declined alike)
        raise _Declined
    if floats:
        _plain(value)
    return text


def _plain(value: Any) -> None:
    """Declines a value holding an `awkward` float."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack += [v for v in item.values() if type(v) in _WALKED]
        elif kind is list:
            stack += [v for v in item if type(v) in _WALKED]
        elif kind is float:
            if awkward(item):
                raise _Declined


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise _Declined


def _dict(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    raise _Declined


def _bigint(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is int and -_INT64 <= value < _INT64:
        return value
    raise _Declined


def _double(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) in (float, int):
        return float(value)
    raise _Declined
