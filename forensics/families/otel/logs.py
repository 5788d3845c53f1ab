"""OpenTelemetry log documents as Data Prepper indexes them (`logs-otel-v1-*`).

A document (real example: shared/real_data/opensearch/dashboards-observability/
logs_otel_v1_explore.data.ndjson) has `time`, `observedTimestamp`, `severityNumber`,
`severityText`, `body`, `traceId`, `spanId`, `attributes{...}` with the original keys
and `resource{attributes{service.name ...}}`; the default shape flattens attributes
as `log.attributes.a@b` / `attributes.a@b`, which are read too.

The session, turn, agent and size figures are the application's own attribute names;
the common spellings are tried (OTel GenAI's `gen_ai.conversation.id`, ADK's
`gcp.vertex.agent.*`, plain `session.id`); anything else needs a mapping file.
"""

from __future__ import annotations

from typing import Any

from ...model import LoggedRecord
from .. import context_limit
from ..fields import count, digest, epoch, first, flattened, get, text

SESSION = ("session.id", "gen_ai.conversation.id", "gcp.vertex.agent.session_id", "session_id")
INVOCATION = ("invocation.id", "gcp.vertex.agent.invocation_id", "invocation_id")
EVENT = ("event.id", "gcp.vertex.agent.event_id", "event_id")
AGENT = ("gen_ai.agent.name", "agent.name", "agent")
CONTEXT = (
    "gen_ai.request.context_tokens",
    "context.tokens",
    "context_tokens",
    "context.size",
    "context_size",
)
ERROR_CODE = ("error.code", "error.type", "exception.type", "error_code")
ERROR_TEXT = ("exception.message", "error.message", "error_message")


def is_log(document: dict[str, Any]) -> bool:
    return ("body" in document or "severityText" in document or "severityNumber" in document) and (
        "time" in document or "observedTimestamp" in document or "@timestamp" in document
    )


def _attributes(document: dict[str, Any]) -> dict[str, Any]:
    nested = document.get("attributes")
    if isinstance(nested, dict):
        return nested
    found = flattened(document, "log.attributes")
    return found or flattened(document, "attributes")


def record(document: dict[str, Any], locator: str) -> LoggedRecord | None:
    """The record of a log line about agents (it names a session, turn, event, agent or
    model, or is a context failure); None for another service's line."""
    a = _attributes(document)
    body = document.get("body")
    severity = count(document.get("severityNumber"))
    severity_text = str(document.get("severityText") or "").upper()
    failed = (severity is not None and severity >= 17) or severity_text in (
        "ERROR",
        "FATAL",
        "CRITICAL",
    )
    error_code = text(first(a, *ERROR_CODE))
    error_text = text(first(a, *ERROR_TEXT)) or (text(body) if failed or error_code else None)
    found = context_limit.parse(error_code, error_text) if (failed or error_code) else None
    logged_size = count(first(a, *CONTEXT))
    ids = [first(a, *names) for names in (SESSION, INVOCATION, EVENT, AGENT)]
    if found is None and not any(ids) and first(a, "gen_ai.request.model", "model") is None:
        return None
    resource = get(document, "resource.attributes")
    service = first(resource, "service.name") if isinstance(resource, dict) else None
    return LoggedRecord(
        record_key=f"log:{digest(document)}",
        family="otel-log",
        shape="data-prepper",
        kind="log",
        locator=locator,
        name=text(body, 200),
        started_at=epoch(first(document, "time", "@timestamp", "observedTimestamp")),
        session_id=text(ids[0]),
        invocation_id=text(ids[1]),
        event_id=text(ids[2]),
        agent=text(ids[3]),
        service=text(service or document.get("serviceName")),
        model=text(first(a, "gen_ai.request.model", "model")),
        status="error" if failed else None,
        error_code=error_code,
        error_text=error_text,
        context_failure=found is not None,
        context_tokens=context_limit.figure(logged_size, found),
        context_limit=found.limit if found else None,
        trace_id=text(document.get("traceId")),
        span_id=text(document.get("spanId")),
    )
