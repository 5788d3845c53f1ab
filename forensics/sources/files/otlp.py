"""OpenTelemetry spans in the OTLP/JSON encoding, as plain span dicts.

A collector's file exporter writes one `ExportTraceServiceRequest` per line
(`{"resourceSpans": [{"resource": ..., "scopeSpans": [{"scope": ..., "spans": [...]}]}]}`),
and a single request is often saved as one JSON document. OTLP/JSON spells fields in
lowerCamelCase, trace and span ids in hex, 64-bit integers as strings, attribute
values as `{"stringValue": ...}`, `{"intValue": "7"}`, `{"arrayValue": {"values": [...]}}`.
The spans come out in the shape of ADK's dev UI export (snake_case keys, integer ids
and nanosecond times, attributes as a flat dict), so one reader serves both.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any


def is_otlp(document: Any) -> bool:
    return isinstance(document, dict) and "resourceSpans" in document


def _value(value: Any) -> Any:
    """An OTLP AnyValue as a Python value; ValueError for a shape OTLP does not define."""
    if not isinstance(value, dict):
        raise ValueError(f"attribute value is not an OTLP AnyValue object: {type(value).__name__}")
    if not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])  # a JSON string (int64) or number
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    raise ValueError(f"unknown OTLP attribute value: {sorted(value)}")


def _attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if not isinstance(items, list):
        raise ValueError("attributes is not a list of key/value objects")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError("an attribute has no string key")
        out[item["key"]] = _value(item.get("value"))
    return out


def _id(text: Any, field: str) -> int | None:
    if text in (None, ""):
        return None
    if not isinstance(text, str):
        raise ValueError(f"{field} is not a hex string")
    try:
        return int(text, 16)
    except ValueError:
        raise ValueError(f"{field} is not hex: {text[:40]!r}") from None


def _nanos(value: Any, field: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field} is not an integer of nanoseconds") from None


def spans(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | ValueError]]:
    """(position, span dict) for each span of one request; a span that cannot be read
    yields (position, ValueError) so that the others are still read."""
    resources = document.get("resourceSpans")
    if not isinstance(resources, list):
        yield "resourceSpans", ValueError("resourceSpans is not a list")
        return
    for r, resource in enumerate(resources):
        scopes = (resource or {}).get("scopeSpans") if isinstance(resource, dict) else None
        if scopes is None and isinstance(resource, dict):
            scopes = resource.get("instrumentationLibrarySpans")  # before OTLP 0.15
        for s, scope in enumerate(scopes or []):
            found = scope.get("spans") if isinstance(scope, dict) else None
            about = (
                (scope.get("scope") or scope.get("instrumentationLibrary") or {}) if found else {}
            )
            if not isinstance(about, dict):
                about = {}
            for k, span in enumerate(found or []):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                if not isinstance(span, dict):
                    yield where, ValueError("span is not a JSON object")
                    continue
                try:
                    yield (
                        where,
                        {
                            "name": span.get("name"),
                            "trace_id": _id(span.get("traceId"), "traceId"),
                            "span_id": _id(span.get("spanId"), "spanId"),
                            "parent_span_id": _id(span.get("parentSpanId"), "parentSpanId"),
                            "start_time": _nanos(
                                span.get("startTimeUnixNano"), "startTimeUnixNano"
                            ),
                            "end_time": _nanos(span.get("endTimeUnixNano"), "endTimeUnixNano"),
                            "attributes": _attributes(span.get("attributes")),
                            # the tracer's library and release, e.g. gcp.vertex.agent 1.18.0
                            "scope": {"name": about.get("name"), "version": about.get("version")},
                        },
                    )
                except ValueError as e:
                    yield where, e
