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
import re
from typing import Any

from ...model import TracedCall, TracedPart

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
    return digest, text[:HEAD_CHARS]


def part_size(part: dict[str, Any]) -> tuple[str, str | None, int]:
    """(kind, tool name, characters) of one request part, as the store sizes parts."""
    call = part.get("function_call") or part.get("functionCall")
    if call is not None:
        return (
            "function_call",
            call.get("name"),
            len(call.get("name") or "")
            + _compact(call.get("args") if call.get("args") is not None else {}),
        )
    response = part.get("function_response") or part.get("functionResponse")
    if response is not None:
        body = response.get("response")
        return (
            "function_response",
            response.get("name"),
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


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _seconds(nanos: Any) -> float | None:
    value = _int(nanos)
    return value / 1e9 if value is not None else None


def traced_call(span: dict[str, Any]) -> TracedCall | None:
    """The call a `call_llm` span traced, or None for any other span; ValueError when
    the span names a call but its request cannot be read."""
    if span.get("name") != "call_llm":
        return None
    attributes = span.get("attributes") or {}
    event_id = attributes.get("gcp.vertex.agent.event_id")
    session_id = attributes.get("gcp.vertex.agent.session_id")
    if not isinstance(event_id, str) or not isinstance(session_id, str):
        return None  # a request whose response ADK never stored
    raw = attributes.get("gcp.vertex.agent.llm_request")
    try:
        request = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as e:
        raise ValueError(f"llm_request is not valid JSON: {e.msg} at column {e.colno}") from e
    if not isinstance(request, dict):
        raise ValueError("llm_request is not a JSON object")
    config = request.get("config") or {}
    system = config.get("system_instruction")
    system_text = system if isinstance(system, str) else _compact_text(system or "")
    tools_text = _compact_text(config.get("tools")) if config.get("tools") else ""
    headers = json.dumps((config.get("http_options") or {}).get("headers") or {})
    version = _VERSION.search(headers)
    scope = span.get("scope") or {}  # OTLP: ADK's tracer carries its release
    scoped = scope.get("version") if scope.get("name") == "gcp.vertex.agent" else None
    call = TracedCall(
        session_id=session_id,
        event_id=event_id,
        span_id=str(span.get("span_id")),
        trace_id=str(span.get("trace_id")),
        invocation_id=attributes.get("gcp.vertex.agent.invocation_id"),
        model=request.get("model") or attributes.get("gen_ai.request.model"),
        adk_version=version.group(1) if version else (scoped if isinstance(scoped, str) else None),
        started_at=_seconds(span.get("start_time")),
        ended_at=_seconds(span.get("end_time")),
        input_tokens=_int(attributes.get("gen_ai.usage.input_tokens")),
        output_tokens=_int(attributes.get("gen_ai.usage.output_tokens")),
        system_chars=len(system_text),
        tools_chars=len(tools_text),
        contents=len(request.get("contents") or []),
    )
    call.system_sha256, call.system_head = _kept(system_text)
    call.tools_sha256, call.tools_head = _kept(tools_text)
    for c, content in enumerate(request.get("contents") or []):
        role = (content or {}).get("role") or "user"
        for p, part in enumerate((content or {}).get("parts") or []):
            kind, tool, chars = part_size(part)
            shown = "tool" if kind == "function_response" else role
            call.parts.append(TracedPart(c, p, shown, kind, tool, chars))
    return call
