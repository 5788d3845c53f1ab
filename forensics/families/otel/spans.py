"""OpenTelemetry span documents as Data Prepper indexes them, read as logged records.

Data Prepper's `otel_traces` processor writes each span into `otel-v1-apm-span-*` in one
of two shapes (real examples: shared/real_data/opensearch/):

- the default: span attributes flattened into top-level keys with `@` for the dots
  (`span.attributes.gen_ai@usage@input_tokens`), resource attributes likewise
  (`resource.attributes.service@name`), `status.code` as a dotted key (0 unset, 1 ok,
  2 error), `kind` as `SPAN_KIND_*`, nanosecond ISO times, arrays and maps stored as
  JSON strings, `traceGroupFields.*` dotted or nested;
- the `otel` output format: `attributes{...}` and `resource{attributes{...}}` with the
  original keys, `status{code, message}`.

Both become one normalised span, then a record by the span's operation: ADK's
`call_llm` (telemetry schema 1) and `generate_content {model}` (schema 2, ADK 2.13's
default) are calls; `execute_tool {name}` tool calls; `invoke_agent` agents;
`invocation` (schema 1) and `invoke_workflow` (schema 2) turns. Other tracers' GenAI
spans (any span with `gen_ai.usage.*` counts, Claude Code's `claude_code.llm_request`)
are calls too. Any other span is not an agent record (None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...model import LoggedRecord
from .. import context_limit
from ..fields import chars, count, digest, epoch, first, get, text

_ERROR_CODES = {2, "2", "STATUS_CODE_ERROR", "ERROR", "Error", "error"}
_OK_CODES = {1, "1", "STATUS_CODE_OK", "OK", "Ok", "ok"}
# the spellings of OTel GenAI, Claude Code, OpenInference and OpenLLMetry, in that order
INPUT = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "input_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
)
OUTPUT = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "output_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
)
AGENT = ("gen_ai.agent.name", "gen_ai.workflow.name", "agent.name", "traceloop.entity.name")
MODEL = (
    "gen_ai.request.model",
    "gen_ai.response.model",
    "model",
    "llm.model_name",
    "llm.request.model",
)


@dataclass
class Span:
    shape: str  # data-prepper | otel
    name: str
    trace_id: str | None
    span_id: str | None
    parent_span_id: str | None
    started_at: float | None
    ended_at: float | None
    status_code: Any
    status_message: str | None
    service: str | None
    attributes: dict[str, Any]
    events: list[Any]


def is_span(document: dict[str, Any]) -> bool:
    return (
        isinstance(document.get("name"), str)
        and "spanId" in document
        and "traceId" in document
        and ("startTime" in document or "endTime" in document)
    )


def _default_shape(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(span attributes, resource attributes) of the default shape, in one pass over the
    keys: `span.attributes.a@b` (older releases kept the dots) and `resource.attributes.`
    or `resource.attributes@` keys, and nested objects where a collector kept them."""
    attributes: dict[str, Any] = {}
    resource: dict[str, Any] = {}
    for key, value in document.items():
        if key.startswith("span.attributes."):
            attributes[key[16:].replace("@", ".")] = value
        elif key.startswith(("resource.attributes.", "resource.attributes@")):
            resource[key[20:].replace("@", ".")] = value
    for prefix, into in (("span.attributes", attributes), ("resource.attributes", resource)):
        nested = get(document, prefix)
        if isinstance(nested, dict):
            for key, value in nested.items():
                into.setdefault(key.replace("@", "."), value)
    return attributes, resource


def _pick(attributes: dict[str, Any], *keys: str) -> Any:
    """The first of `keys` an attribute dict holds (its keys are the original ones)."""
    for key in keys:
        value = attributes.get(key)
        if value is not None and value != "":
            return value
    return None


def normalise(document: dict[str, Any]) -> Span:
    """One span document of either shape; ValueError for a time that is not one."""
    nested = document.get("attributes")
    if isinstance(nested, str):  # a collector that stored the map as JSON text
        try:
            nested = json.loads(nested)
        except json.JSONDecodeError:
            nested = None
    if isinstance(nested, dict):
        shape, attributes = "otel", dict(nested)
        resource = get(document, "resource.attributes")
        resource = resource if isinstance(resource, dict) else {}
    else:
        shape = "data-prepper"
        attributes, resource = _default_shape(document)
    status = document.get("status")
    status = status if isinstance(status, dict) else {}
    code = status.get("code", document.get("status.code"))
    message = status.get("message", document.get("status.message"))
    events = document.get("events")
    if isinstance(events, str):  # stored as JSON text
        try:
            events = json.loads(events)
        except json.JSONDecodeError:
            events = []
    return Span(
        shape=shape,
        name=document["name"],
        trace_id=text(document.get("traceId")),
        span_id=text(document.get("spanId")),
        parent_span_id=text(document.get("parentSpanId")),
        started_at=epoch(document.get("startTime")),
        ended_at=epoch(document.get("endTime")),
        status_code=code,
        status_message=text(message) if isinstance(message, str) else None,
        service=text(
            _pick(resource, "service.name")
            or document.get("serviceName")
        ),
        attributes=attributes,
        events=events if isinstance(events, list) else [],
    )


def _operation(span: Span) -> str | None:
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    name = span.name
    if name == "call_llm" or name.startswith("generate_content") or op in (
        "generate_content",
        "chat",
        "text_completion",
    ):
        return "call"
    if name.startswith("execute_tool") or op == "execute_tool":
        if span.attributes.get("gen_ai.tool.name") == "(merged tools)":
            return None  # ADK's merge of parallel responses; each tool has its own span
        return "tool"
    if name.startswith("invoke_agent") or op == "invoke_agent":
        return "agent"
    if name == "invocation" or name.startswith("invoke_workflow") or op == "invoke_workflow":
        return "turn"
    if (
        name == "claude_code.llm_request"
        or a.get("openinference.span.kind") == "LLM"  # OpenInference
        or a.get("llm.request.type") in ("chat", "completion")  # OpenLLMetry
        or "gen_ai.request.model" in a
        or any(k.startswith(("gen_ai.usage.", "llm.token_count.", "llm.usage.")) for k in a)
    ):
        return "call"
    if a.get("openinference.span.kind") == "TOOL":
        return "tool"
    if a.get("openinference.span.kind") == "AGENT":
        return "agent"
    return None


def _exception(span: Span) -> str | None:
    for event in span.events:
        if not isinstance(event, dict) or event.get("name") != "exception":
            continue
        attributes = event.get("attributes")
        found = first(attributes, "exception.message") if isinstance(attributes, dict) else None
        found = found or first(event, "attributes.exception@message", "exception.message")
        if found:
            return text(found)
    return None


def record(document: dict[str, Any], locator: str) -> LoggedRecord | None:
    """The agent record a span document carries, or None for a span that is not one."""
    span = normalise(document)
    kind = _operation(span)
    if kind is None:
        return None
    a = span.attributes
    code = span.status_code if isinstance(span.status_code, int | str) else None
    failed = code in _ERROR_CODES
    status = "error" if failed else ("ok" if code in _OK_CODES else None)
    if a.get("success") is False:  # Claude Code's llm_request spans
        status, failed = "error", True
    elif kind == "call" and status is None and (
        a.get("success") is True or count(_pick(a, *OUTPUT)) is not None
    ):
        status = "ok"  # a call that answered: its usage was recorded
    error_code = text(_pick(a, "error.type", "gcp.vertex.agent.error_code"))
    error_text = span.status_message or _exception(span)
    found = context_limit.parse(error_code, error_text) if (failed or error_code) else None
    latency = (
        span.ended_at - span.started_at
        if span.ended_at is not None and span.started_at is not None
        else None
    )
    agent = _pick(a, *AGENT)
    return LoggedRecord(
        record_key=f"span:{span.trace_id}:{span.span_id}"
        if span.trace_id and span.span_id
        else f"span:{digest(document)}",  # no ids: the document is its own key
        family="otel-span",
        shape=span.shape,
        kind=kind,
        locator=locator,
        name=span.name[:200],
        started_at=span.started_at,
        ended_at=span.ended_at,
        session_id=text(
            _pick(a, "gcp.vertex.agent.session_id", "gen_ai.conversation.id", "session.id")
        ),
        invocation_id=text(_pick(a, "gcp.vertex.agent.invocation_id")),
        event_id=text(_pick(a, "gcp.vertex.agent.event_id")),
        agent=text(agent),
        service=span.service,
        model=text(_pick(a, *MODEL)),
        provider=text(_pick(a, "gen_ai.provider.name", "gen_ai.system", "llm.provider")),
        input_tokens=count(_pick(a, *INPUT)),
        output_tokens=count(_pick(a, *OUTPUT)),
        cache_read_tokens=count(
            _pick(
                a,
                "gen_ai.usage.cache_read.input_tokens",
                "gen_ai.usage.cache_read_input_tokens",
                "cache_read_tokens",
            )
        ),
        cache_write_tokens=count(
            _pick(
                a,
                "gen_ai.usage.cache_creation.input_tokens",
                "gen_ai.usage.cache_creation_input_tokens",
                "cache_creation_tokens",
            )
        ),
        status=status,
        error_code=error_code,
        error_text=error_text,
        context_failure=found is not None,
        context_tokens=found.requested if found else None,
        context_limit=found.limit if found else None,
        tool_name=text(a.get("gen_ai.tool.name")) if kind == "tool" else None,
        tool_call_id=text(a.get("gen_ai.tool.call.id")) if kind == "tool" else None,
        latency_s=latency,
        args_chars=chars(_pick(a, "gcp.vertex.agent.tool_call_args", "gen_ai.tool.call.arguments"))
        if kind == "tool"
        else None,
        result_chars=chars(_pick(a, "gcp.vertex.agent.tool_response", "gen_ai.tool.call.result"))
        if kind == "tool"
        else None,
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
    )
