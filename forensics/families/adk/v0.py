"""ADK schema V0 rows (one column per field, `actions` pickled) as V1-shaped event dicts."""

from __future__ import annotations

import json
from typing import Any

from ...errors import NUMBER_TOO_LONG, TOO_DEEP, UnsafePickleError

# V0 columns holding JSON (TEXT on SQLite, jsonb on PostgreSQL), by event field.
JSON_COLUMNS = (
    "content",
    "grounding_metadata",
    "custom_metadata",
    "usage_metadata",
    "citation_metadata",
    "input_transcription",
    "output_transcription",
)
PLAIN_COLUMNS = (
    "branch",
    "partial",
    "turn_complete",
    "error_code",
    "error_message",
    "interrupted",
)
REQUIRED_COLUMNS = (
    "id",
    "app_name",
    "user_id",
    "session_id",
    "invocation_id",
    "author",
    "timestamp",
    "actions",
)


# Every V0 column a loader reads, when the table has it (column sets vary by release).
ALL_COLUMNS = (*REQUIRED_COLUMNS, *PLAIN_COLUMNS, *JSON_COLUMNS, "long_running_tool_ids_json")


class RowError(ValueError):
    """A V0 row that cannot become an event; the message is the skip reason."""


def _json(value: Any, column: str) -> Any:
    """A JSON column's value; one that cannot be read raises RowError, worded as the V1
    and JSON paths word it (not UTF-8, nested too deeply, a number too long)."""
    if value is None or isinstance(value, dict | list):
        return value
    if isinstance(value, bytes | memoryview):
        raw = bytes(value)
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RowError(
                f"column {column} is not UTF-8 text: byte {e.start:,} is {raw[e.start]:#04x}"
            ) from None
    try:
        return json.loads(value)
    except RecursionError:
        raise RowError(f"column {column} is {TOO_DEEP}") from None
    except (json.JSONDecodeError, TypeError) as e:
        raise RowError(f"column {column} is not valid JSON: {e}") from e
    except ValueError:  # (not a JSONDecodeError: an integer of over 4,300 digits)
        raise RowError(f"column {column} {NUMBER_TOO_LONG}") from None


def row_to_event(row: dict[str, Any], epoch: float) -> dict[str, Any]:
    """Build the event dict ADK's V0 `to_event` would, from plain data only."""
    event: dict[str, Any] = {
        "id": row["id"],
        "invocation_id": row["invocation_id"],
        "author": row["author"],
        "timestamp": epoch,
    }
    for column in PLAIN_COLUMNS:
        if row.get(column) is not None:
            value = row[column]
            event[column] = (
                bool(value) if column in ("partial", "turn_complete", "interrupted") else value
            )
    for column in JSON_COLUMNS:
        value = _json(row.get(column), column)
        if value is not None:
            event[column] = value
    lrt = row.get("long_running_tool_ids_json")
    if lrt:
        event["long_running_tool_ids"] = _json(lrt, "long_running_tool_ids_json")
    actions = row.get("actions")
    if actions is not None:
        from .v0_pickle import decode_actions

        try:
            event["actions"] = decode_actions(actions)
        except UnsafePickleError as e:
            raise RowError(f"actions: {e}") from e
    return event
