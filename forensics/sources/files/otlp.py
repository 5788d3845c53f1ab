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
        return _int(value["intValue"])
    if "doubleValue" in value:
        return _double(value["doubleValue"])
    if "arrayValue" in value:
        array = _object(value["arrayValue"], "arrayValue")
        items = array.get("values") or []
        if not isinstance(items, list):
            raise ValueError(f"arrayValue.values is {type(items).__name__}, not a list")
        return [_value(v) for v in items]
    if "kvlistValue" in value:
        return _attributes(_object(value["kvlistValue"], "kvlistValue").get("values"))
    if "bytesValue" in value:
        raw = value["bytesValue"]
        if not isinstance(raw, str):
            raise ValueError(f"bytesValue is {type(raw).__name__}, not base64 text")
        return base64.b64decode(raw)  # binascii.Error, a ValueError, for what is not base64
    raise ValueError(f"unknown OTLP attribute value: {sorted(value)}")


def _object(value: Any, field: str) -> dict[str, Any]:
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{field} is {type(value).__name__}, not an object")
    return value


def _int(value: Any) -> int:
    """An intValue: a JSON string (int64) or number."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return int(value)
        except ValueError:  # not digits, or over 4,300 of them
            raise ValueError(f"intValue is not an integer: {str(value)[:40]!r}") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"intValue is not an integer: {str(value)[:40]}")


def _double(value: Any) -> float:
    """A doubleValue: a JSON number, or a string ("NaN", "Infinity" are how OTLP/JSON
    spells those)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return float(value)
        except (ValueError, OverflowError):  # not a number; an integer beyond a double
            pass
    raise ValueError(f"doubleValue is not a number: {str(value)[:40]}")


def _attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if not isinstance(items, list):
        raise ValueError("attributes is not a list of key/value objects")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError("an attribute has no string key")
        try:
            out[item["key"]] = _value(item.get("value"))
        except ValueError as e:
            raise ValueError(f"attribute {item['key'][:80]!r}: {e}") from None
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
    if value is None or value == "":
        return None
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return int(value)
        except (ValueError, OverflowError):  # not digits, NaN; infinite
            pass
    raise ValueError(f"{field} is not an integer of nanoseconds")


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
                except RecursionError:
                    # kvlistValue within kvlistValue: json reads deeper than Python
                    # recurses from 3.12 on
                    yield where, ValueError("attributes are nested too deeply to read")
