"""A user's mapping file: which fields of their own log documents hold what.

```toml
name = "app-logs"                      # a label for the records it maps
[match]                                # optional: only documents where these hold
"service.name" = "agent-api"
[fields]                               # document paths (a dotted key or nested objects)
time = "@timestamp"                    # required
session = "labels.session_id"
invocation = "labels.invocation_id"
agent = "labels.agent"
kind = "event.action"                  # its values are mapped by [kinds]
model = "llm.model"
input_tokens = "llm.usage.prompt"
output_tokens = "llm.usage.completion"
cache_read_tokens = "llm.usage.cached"
cache_write_tokens = "llm.usage.cache_write"
context_tokens = "llm.context_size"    # the size figure logged at failure
error_code = "error.code"
error_text = "error.message"
tool = "tool.name"
latency_ms = "duration_ms"             # or latency_s
[kinds]                                # values of fields.kind -> call | tool | agent | turn | log
"llm.response" = "call"
"tool.done" = "tool"
```

A document that `[match]` excludes, or whose time is missing, maps to nothing. A bad
file is an error naming the file, the table and the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TOML_NUMBER_TOO_LONG, ForensicsError
from ..model import LOGGED_KINDS, LoggedRecord
from ..sanitize import not_utf8
from . import context_limit
from .fields import count, digest, epoch, get, number, text

FIELDS = {
    "time": "when the record happened (ISO-8601, or epoch s/ms/us/ns)",
    "end_time": "when it ended",
    "session": "the session id (ADK's session_id, when it is an ADK app)",
    "invocation": "the turn's invocation id",
    "event": "the ADK event id",
    "turn": "not read: turns are counted from the records (kept for documentation)",
    "agent": "the agent's name",
    "service": "the service that logged it",
    "kind": "a field whose values [kinds] maps to call | tool | agent | turn | log",
    "model": "the model's name",
    "input_tokens": "prompt tokens as logged",
    "output_tokens": "output tokens as logged",
    "cache_read_tokens": "cache reads",
    "cache_write_tokens": "cache writes",
    "context_tokens": "the context-size figure logged (at failure)",
    "context_limit": "the model's maximum, when logged",
    "error_code": "an error code or class",
    "error_text": "an error message",
    "tool": "a tool's name",
    "latency_ms": "latency in milliseconds",
    "latency_s": "latency in seconds",
    "trace_id": "trace id",
    "span_id": "span id",
    "id": "a unique id of the document (else its content's digest is its key)",
}


@dataclass(frozen=True)
class Mapping:
    name: str
    source: str  # the file, for messages
    fields: dict[str, str]
    match: dict[str, Any] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def matches(self, document: dict[str, Any]) -> bool:
        return all(get(document, path) == value for path, value in self.match.items())

    def record(self, document: dict[str, Any], locator: str) -> LoggedRecord | None:
        """The record of one document, or None when it maps to nothing; ValueError for
        a field that holds something else than it should."""
        if not self.matches(document):
            return None
        value = {name: get(document, path) for name, path in self.fields.items()}
        try:
            started = epoch(value.get("time"))
            ended = epoch(value.get("end_time"))
        except ValueError as e:
            raise ValueError(f"mapping {self.name}: [fields] time or end_time: {e}") from None
        if started is None:
            return None
        kind = "log"
        if "kind" in value:
            kind = self.kinds.get(str(value["kind"]), self.kinds.get("default", "log"))
        error_code, error_text = text(value.get("error_code")), text(value.get("error_text"))
        found = context_limit.parse(error_code, error_text) if (error_code or error_text) else None
        logged_size = count(value.get("context_tokens"))
        latency = number(value.get("latency_s"))
        if latency is None and number(value.get("latency_ms")) is not None:
            latency = number(value.get("latency_ms")) / 1000  # type: ignore[operator]
        key = text(value.get("id"))
        return LoggedRecord(
            record_key=f"mapped:{self.name}:{key or digest(document)}",
            family=f"mapping:{self.name}",
            shape="mapping",
            kind=kind,
            locator=locator,
            name=text(value.get("kind") or value.get("error_text"), 200),
            started_at=started,
            ended_at=ended,
            session_id=text(value.get("session")),
            invocation_id=text(value.get("invocation")),
            event_id=text(value.get("event")),
            agent=text(value.get("agent")),
            service=text(value.get("service")),
            model=text(value.get("model")),
            input_tokens=count(value.get("input_tokens")),
            output_tokens=count(value.get("output_tokens")),
            cache_read_tokens=count(value.get("cache_read_tokens")),
            cache_write_tokens=count(value.get("cache_write_tokens")),
            status="error" if (error_code or error_text) else ("ok" if kind == "call" else None),
            error_code=error_code,
            error_text=error_text,
            context_failure=found is not None,
            context_tokens=context_limit.figure(logged_size, found),
            context_limit=count(value.get("context_limit")) or (found.limit if found else None),
            tool_name=text(value.get("tool")),
            latency_s=latency,
            trace_id=text(value.get("trace_id")),
            span_id=text(value.get("span_id")),
        )


def _dotted(table: dict[str, Any], where: str, prefix: str = "") -> dict[str, Any]:
    """[match] with nested tables (`[match.labels] env = "prod"`) as dotted paths; its
    values must be what a JSON document holds: text, a number or true/false."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_dotted(value, where, f"{path}."))
        elif isinstance(value, str | int | float | bool):
            out[path] = value
        else:
            raise ForensicsError(
                f"{where}: [match] {path!r} must be text, a number or true/false, "
                f"not {type(value).__name__}"
            )
    return out


def load(path: Path) -> Mapping:
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ForensicsError(f"cannot read mapping file {where}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ForensicsError(f"{where}: not valid TOML: {not_utf8(e)}") from None
    except tomllib.TOMLDecodeError as e:
        raise ForensicsError(f"{where}: not valid TOML: {e}") from e
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise ForensicsError(f"{where}: not valid TOML: nested too deeply to read") from None
    except ValueError:  # (no TOMLDecodeError: an integer past Python's 4,300 digits)
        raise ForensicsError(f"{where}: not valid TOML: {TOML_NUMBER_TOO_LONG}") from None
    unknown = sorted(set(data) - {"name", "match", "fields", "kinds"})
    if unknown:
        raise ForensicsError(
            f"{where}: unknown key {unknown[0]!r}; a mapping has name, [match], [fields], [kinds]"
        )
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ForensicsError(f"{where}: name must be a non-empty string")
    fields = data.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ForensicsError(f"{where}: [fields] is missing; it names at least `time`")
    for key, value in fields.items():
        if key not in FIELDS:
            raise ForensicsError(
                f"{where}: [fields] {key!r} is not a field a mapping knows",
                hint="known: " + ", ".join(FIELDS),
            )
        if not isinstance(value, str) or not value:
            raise ForensicsError(f"{where}: [fields] {key} must be a document path (a string)")
    if "time" not in fields:
        raise ForensicsError(f"{where}: [fields] has no `time`: every record needs one")
    match = data.get("match", {})
    if not isinstance(match, dict):
        raise ForensicsError(f"{where}: [match] must be a table of path = value")
    try:
        match = _dotted(match, where)
    except RecursionError:
        raise ForensicsError(f"{where}: [match] is nested too deeply to read") from None
    kinds = data.get("kinds", {})
    if not isinstance(kinds, dict):
        raise ForensicsError(f"{where}: [kinds] must be a table of value = kind")
    for value, kind in kinds.items():
        if kind not in LOGGED_KINDS:
            raise ForensicsError(
                f"{where}: [kinds] {value!r} = {kind!r} is not a kind",
                hint="kinds: " + ", ".join(LOGGED_KINDS),
            )
    if kinds and "kind" not in fields:
        raise ForensicsError(f"{where}: [kinds] is given but [fields] has no `kind` to read")
    return Mapping(name, where, dict(fields), dict(match), dict(kinds))
