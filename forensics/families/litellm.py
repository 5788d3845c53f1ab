"""LiteLLM's standard logging payload: one document per model call, as its logging
callbacks emit it (real example: shared/real_data/litellm/standard_logging_payload.json).

Keys read: `id`, `status` (success | failure), `model`, `custom_llm_provider`,
`prompt_tokens`, `completion_tokens`, `response_cost`, `startTime`/`endTime` (strings
with no zone: read as UTC, which is what LiteLLM's proxy writes on a UTC host),
`error_str`, `error_information.error_class` (e.g. `ContextWindowExceededError`), and
`metadata.usage_object` (a dump of LiteLLM's Usage: `cache_read_input_tokens`,
`cache_creation_input_tokens`, or `prompt_tokens_details.cached_tokens`). The ids an
application passed in its request metadata (`metadata.requester_metadata` or
`metadata.spend_logs_metadata`: `session_id`, `invocation_id`, `agent_name`,
`event_id`) tie a payload to an ADK session. A document that wraps the payload
(`standard_logging_object`) is unwrapped.
"""

from __future__ import annotations

from typing import Any

from ..model import LoggedRecord
from . import context_limit
from .fields import count, digest, epoch, first, number, text

_META = ("metadata.requester_metadata", "metadata.spend_logs_metadata", "metadata")


def is_payload(document: dict[str, Any]) -> bool:
    inner = document.get("standard_logging_object")
    if isinstance(inner, dict):
        document = inner
    return "call_type" in document and "model" in document and (
        "status" in document or "response_cost" in document
    )


def _meta(payload: dict[str, Any], *keys: str) -> Any:
    return first(payload, *(f"{where}.{key}" for where in _META for key in keys))


def record(document: dict[str, Any], locator: str) -> LoggedRecord:
    payload = document.get("standard_logging_object")
    payload = payload if isinstance(payload, dict) else document
    status = payload.get("status")
    failed = status == "failure" or bool(payload.get("error_str"))
    error_class = text(first(payload, "error_information.error_class"))
    error_text = text(payload.get("error_str")) or text(
        first(payload, "error_information.error_message")
    )
    found = context_limit.parse(error_class, error_text) if failed else None
    usage = first(payload, "metadata.usage_object")
    usage = usage if isinstance(usage, dict) else {}
    started = epoch(payload.get("startTime"))
    ended = epoch(payload.get("endTime"))
    identity = payload.get("id")
    return LoggedRecord(
        # a cache hit repeats the cached response's id: its start time tells them apart
        record_key=f"litellm:{identity}:{payload.get('startTime')}"
        if identity
        else f"litellm:{digest(payload)}",
        family="litellm",
        shape="litellm",
        kind="call",
        locator=locator,
        name=text(payload.get("call_type"), 200),
        started_at=started,
        ended_at=ended,
        session_id=text(_meta(payload, "session_id")),
        invocation_id=text(_meta(payload, "invocation_id")),
        event_id=text(_meta(payload, "event_id")),
        agent=text(_meta(payload, "agent_name", "agent")),
        model=text(payload.get("model")),
        provider=text(payload.get("custom_llm_provider")),
        input_tokens=count(payload.get("prompt_tokens")),
        output_tokens=count(payload.get("completion_tokens")),
        cache_read_tokens=count(
            first(usage, "cache_read_input_tokens", "prompt_tokens_details.cached_tokens")
        ),
        cache_write_tokens=count(usage.get("cache_creation_input_tokens")),
        logged_cost_usd=number(payload.get("response_cost")),
        status="error" if failed else ("ok" if status == "success" else None),
        error_code=error_class or text(first(payload, "error_information.error_code")),
        error_text=error_text,
        context_failure=found is not None,
        context_tokens=found.requested if found else None,
        context_limit=found.limit if found else None,
        latency_s=ended - started if ended is not None and started is not None else None,
        trace_id=text(payload.get("trace_id")),
    )
