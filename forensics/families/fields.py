"""Reading one field of a logged document: a path that may be a dotted key or nested
objects, a time in any of the spellings loggers use, a count that may be a string."""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime
from typing import Any

_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?\s*(Z|[+-]\d\d:?\d\d)?$",
    re.I,
)


def json_error(error: json.JSONDecodeError, where: str = "column") -> str:
    """A JSON parse error in words: 'Unterminated string starting at column 5'."""
    place = error.colno if where == "column" else error.pos
    joint = " " if error.msg.endswith(" at") else " at "
    return f"{error.msg}{joint}{where} {place}"


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
        return _scaled(value)
    if not isinstance(value, str):
        raise ValueError(f"not a time: {type(value).__name__}")
    text = value.strip()
    if re.fullmatch(r"\d{1,20}(\.\d{1,9})?", text):
        return _scaled(float(text))
    found = _ISO.match(text)
    if not found:
        raise ValueError(f"not a time: {text[:40]!r}")
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    try:
        when = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=UTC
        )
    except ValueError as e:
        raise ValueError(f"not a time: {text[:40]!r} ({e})") from None
    fraction = (fraction or "")[:9]
    seconds = when.timestamp() + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)
    if zone and zone.upper() != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:])
        if hours > 14 or minutes > 59:
            raise ValueError(f"not a time zone: {zone!r} in {text[:40]!r}")
        seconds -= sign * (hours * 3600 + minutes * 60)
    return _bounded(seconds, text)


_EARLIEST, _AFTER = -62_135_596_800.0, 253_402_300_800.0  # years 1 to 9999, UTC


def _bounded(seconds: float, shown: object) -> float:
    if not math.isfinite(seconds) or not _EARLIEST <= seconds < _AFTER:
        raise ValueError(f"not a time between years 1 and 9999: {str(shown)[:40]!r}")
    return seconds


def _scaled(number: int | float) -> float:
    """Epoch seconds from a count of seconds (before year 5138), else milliseconds,
    microseconds or nanoseconds; ValueError for what is none of them (inf, NaN, 1e30)."""
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"not a time: {number!r}")
    for scale in (1, 1_000, 1_000_000, 1_000_000_000):
        if abs(number) < 100_000_000_000 * scale:
            return _bounded(number / scale, number)
    raise ValueError(f"not a time: {str(number)[:40]!r} (too large for epoch nanoseconds)")


_MAX_COUNT = 2**63 - 1  # what the store's BIGINT holds


def count(value: Any) -> int | None:
    """A token count: a non-negative int, integral float or string of digits that fits
    a BIGINT; else None (a count cannot be negative, and a huge one is not a count)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else None
    elif isinstance(value, str):
        value = int(value) if re.fullmatch(r"\s*\d{1,19}\s*", value) else None
    if isinstance(value, int) and 0 <= value <= _MAX_COUNT:
        return value
    return None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            found = float(value)
        except OverflowError:
            return None
    elif isinstance(value, str):
        try:
            found = float(value)
        except ValueError:
            return None
    else:
        return None
    return found if math.isfinite(found) else None


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
