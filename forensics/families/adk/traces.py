"""ADK's own trace of a model request: what the request really held, part by part.

The dev UI's trace export is a JSON list of spans; a `call_llm` span carries the
stored event of the model's response (`gcp.vertex.agent.event_id`), the session,
the measured input tokens and the whole request as sent
(`gcp.vertex.agent.llm_request`: model, config with system_instruction and tools,
contents). Only sizes are kept, by the project's character definition (the same as
the stored parts': text as written, a call's name plus compact JSON args, a
response's name plus compact JSON response); of the system instruction and the tool
declarations, their SHA-256 and first 2,000 characters too, so that two requests' can
be told apart and where they differ named (`forensics cache`: a prefix broken by a
timestamp in the system prompt, a changed tool list). Never the request's contents.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from ...errors import NUMBER_TOO_LONG, TOO_DEEP
from ...model import TracedCall, TracedPart
from ...sanitize import storable
from ..fields import count

_VERSION = re.compile(r"google-adk/(\d+\.\d+\.\d+)")


def _compact(value: Any) -> int:
    return len(_compact_text(value))


def _compact_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


HEAD_CHARS = 2_000  # of a system instruction or tool declarations kept to say where two differ


def _kept(text: str | None) -> tuple[str | None, str | None]:
    """(SHA-256, first HEAD_CHARS characters) of a request's system instruction or tool
    declarations; (None, None) for none."""
    if not text:
        return None, None
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return digest, storable(text[:HEAD_CHARS])


def _object(value: Any, what: str) -> dict[str, Any]:
    """`value` when it is a JSON object, {} when it is absent or empty; ValueError naming
    `what` for any other type."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{what} is {type(value).__name__}, not an object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not value:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} is {type(value).__name__}, not a list")
    return value


def _name(value: Any, what: str) -> str | None:
    """A tool's or role's name as stored: text (a lone surrogate written as its escape),
    None when absent; ValueError for any other type."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} is {type(value).__name__}, not text")
    return storable(value)


def _text(value: Any) -> str | None:
    """An id or model name as stored: text only (anything else is unknown), a lone
    surrogate written as its escape."""
    return storable(value) if isinstance(value, str) else None


def part_size(part: dict[str, Any], where: str = "part") -> tuple[str, str | None, int]:
    """(kind, tool name, characters) of one request part, as the store sizes parts;
    ValueError naming `where` for a call or response that is not an object."""
    call = part.get("function_call") or part.get("functionCall")
    if call is not None:
        call = _object(call, f"{where}.function_call")
        name = _name(call.get("name"), f"{where}.function_call.name")
        args = call.get("args")
        return "function_call", name, len(call.get("name") or "") + _compact(
            args if args is not None else {}
        )
    response = part.get("function_response") or part.get("functionResponse")
    if response is not None:
        response = _object(response, f"{where}.function_response")
        name = _name(response.get("name"), f"{where}.function_response.name")
        body = response.get("response")
        return (
            "function_response",
            name,
            len(response.get("name") or "") + _compact(body if body is not None else {}),
        )
    if isinstance(part.get("text"), str):
        return ("thought" if part.get("thought") else "text"), None, len(part["text"])
    other = sum(
        _compact(part[k])
        for k in ("inline_data", "file_data", "executable_code", "code_execution_result")
        if part.get(k) is not None
    )
    return "other", None, other


def _seconds(nanos: Any, field: str) -> float | None:
    """Epoch seconds of a span's time in nanoseconds; None when it is not a number;
    ValueError for a number that is no time (NaN, infinite, beyond a float)."""
    if isinstance(nanos, bool) or not isinstance(nanos, int | float):
        return None
    try:
        seconds = (int(nanos) if isinstance(nanos, float) else nanos) / 1e9
    except (OverflowError, ValueError):  # inf; NaN; an integer beyond a float
        seconds = math.nan
    if not math.isfinite(seconds):
        raise ValueError(f"{field} is not a time in nanoseconds: {str(nanos)[:40]}")
    return seconds


def traced_call(span: dict[str, Any]) -> TracedCall | None:
    """The call a `call_llm` span traced, or None for any other span; ValueError when
    the span names a call but its request cannot be read (a field of the wrong type,
    nested too deeply, a time that is none). Counts beyond the store's BIGINT are
    unknown; text is stored with each lone surrogate as its escape."""
    if span.get("name") != "call_llm":
        return None
    attributes = _object(span.get("attributes"), "attributes")
    event_id = attributes.get("gcp.vertex.agent.event_id")
    session_id = attributes.get("gcp.vertex.agent.session_id")
    if not isinstance(event_id, str) or not isinstance(session_id, str):
        return None  # a request whose response ADK never stored
    raw = attributes.get("gcp.vertex.agent.llm_request")
    try:
        request = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as e:
        raise ValueError(f"llm_request is not valid JSON: {e.msg} at column {e.colno}") from e
    except RecursionError:
        raise ValueError(f"llm_request is {TOO_DEEP}") from None
    except ValueError:
        raise ValueError(f"llm_request {NUMBER_TOO_LONG}") from None
    if not isinstance(request, dict):
        raise ValueError("llm_request is not a JSON object")
    config = _object(request.get("config"), "llm_request config")
    system = config.get("system_instruction")
    system_text = system if isinstance(system, str) else _compact_text(system or "")
    tools_text = _compact_text(config.get("tools")) if config.get("tools") else ""
    http_options = _object(config.get("http_options"), "llm_request config.http_options")
    headers = json.dumps(http_options.get("headers") or {})
    version = _VERSION.search(headers)
    scope = _object(span.get("scope"), "scope")  # OTLP: ADK's tracer carries its release
    scoped = scope.get("version") if scope.get("name") == "gcp.vertex.agent" else None
    contents = _list(request.get("contents"), "llm_request contents")
    call = TracedCall(
        session_id=storable(session_id),
        event_id=storable(event_id),
        span_id=storable(str(span.get("span_id"))),
        trace_id=storable(str(span.get("trace_id"))),
        invocation_id=_text(attributes.get("gcp.vertex.agent.invocation_id")),
        model=_text(request.get("model")) or _text(attributes.get("gen_ai.request.model")),
        adk_version=version.group(1) if version else _text(scoped),
        started_at=_seconds(span.get("start_time"), "start_time"),
        ended_at=_seconds(span.get("end_time"), "end_time"),
        input_tokens=count(attributes.get("gen_ai.usage.input_tokens")),
        output_tokens=count(attributes.get("gen_ai.usage.output_tokens")),
        system_chars=len(system_text),
        tools_chars=len(tools_text),
        contents=len(contents),
    )
    call.system_sha256, call.system_head = _kept(system_text)
    call.tools_sha256, call.tools_head = _kept(tools_text)
    for c, content in enumerate(contents):
        where = f"llm_request contents[{c}]"
        content = _object(content, where)
        role = _name(content.get("role"), f"{where}.role") or "user"
        for p, part in enumerate(_list(content.get("parts"), f"{where}.parts")):
            if not isinstance(part, dict):
                raise ValueError(f"{where}.parts[{p}] is {type(part).__name__}, not an object")
            kind, tool, chars = part_size(part, f"{where}.parts[{p}]")
            shown = "tool" if kind == "function_response" else role
            call.parts.append(TracedPart(c, p, shown, kind, tool, chars))
    return call
