"""Reading one field of a logged document: a path that may be a dotted key or nested
objects, a time in any of the spellings loggers use, a count that may be a string."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?\s*(Z|[+-]\d\d:?\d\d)?$",
    re.I,
)


def get(document: Any, path: str) -> Any:
    """The value at `path`: a literal key first (`"traceGroupFields.endTime"`, Data
    Prepper writes those), else nested objects, trying every split of the dots."""
    if not isinstance(document, dict):
        return None
    if path in document:
        return document[path]
    head, dot, rest = path.partition(".")
    while dot:
        inner = document.get(head)
        if isinstance(inner, dict):
            found = get(inner, rest)
            if found is not None:
                return found
        more, dot, rest = rest.partition(".")
        head = f"{head}.{more}"
    return None


def flattened(document: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Attributes of the default shape: `<prefix>.a@b` keys (older releases wrote
    `<prefix>@a@b` or kept the dots), as {"a.b": value}."""
    out: dict[str, Any] = {}
    for key, value in document.items():
        if key.startswith(prefix + ".") or key.startswith(prefix + "@"):
            out[key[len(prefix) + 1 :].replace("@", ".")] = value
    nested = get(document, prefix)
    if isinstance(nested, dict):
        for key, value in nested.items():
            out.setdefault(key.replace("@", "."), value)
    return out


def first(document: Any, *paths: str) -> Any:
    for path in paths:
        value = get(document, path)
        if value not in (None, ""):
            return value
    return None


def epoch(value: Any) -> float | None:
    """Epoch seconds (UTC) from an ISO-8601 text (nanoseconds allowed; no zone means UTC)
    or a number of seconds, milliseconds, microseconds or nanoseconds (by magnitude).
    ValueError when the value is not a time."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, int | float):
        return _scaled(float(value))
    if not isinstance(value, str):
        raise ValueError(f"not a time: {type(value).__name__}")
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return _scaled(float(text))
    found = _ISO.match(text)
    if not found:
        raise ValueError(f"not a time: {text[:40]!r}")
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    when = datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=UTC
    )
    seconds = when.timestamp() + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)
    if zone and zone.upper() != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return seconds


def _scaled(number: float) -> float:
    for scale in (1.0, 1e3, 1e6, 1e9):  # seconds until year 5138, then ms, us, ns
        if abs(number) < 1e11 * scale:
            return number / scale
    return number / 1e9


def count(value: Any) -> int | None:
    """A token count: an int, an integral float, or a string of digits; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def text(value: Any, limit: int = 2000) -> str | None:
    """A value as text for a message column: strings as they are, anything else as
    compact JSON; cut at `limit` characters."""
    if value is None or value == "":
        return None
    out = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return out[:limit]


def chars(value: Any) -> int | None:
    """The size of a captured content attribute, in characters; None when content capture
    was off (ADK writes "{}" or "N/A" then) or nothing was captured."""
    if value is None or value in ("", "{}", "N/A", "[]"):
        return None
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def digest(document: Any) -> str:
    """A stable key for a document with no id of its own: its canonical JSON, hashed."""
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:24]
