"""The records every layer shares, free of any one framework's storage.

Two groups: what a loader hands the pipeline (`Batch`: raw events as Arrow, `Skip`:
a row not loaded and why), and what the analyses read back from the store (`Session`,
`Event`, `Part`) and build from it (`Call`, `WindowPart`). docs/architecture.md
defines the words.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    RAW_EVENT_SCHEMA: pa.Schema
    RAW_SESSION_SCHEMA: pa.Schema
    LOGGED_SCHEMA: pa.Schema
    MADE_EVENT_SCHEMA: pa.Schema
    MADE_PART_SCHEMA: pa.Schema

# The Arrow schemas below are made at their first use (`__getattr__`), not at import:
# pyarrow (with numpy) is 55 ms of a command that reads no batch (an ingest that finds
# nothing new), and every layer imports this module.

# ---------------------------------------------------------------------------
# Loader output
# ---------------------------------------------------------------------------


def _raw_event_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("app_name", pa.string()),
            ("user_id", pa.string()),
            ("session_id", pa.string()),
            ("event_id", pa.string()),
            ("invocation_id", pa.string()),
            ("timestamp", pa.float64()),  # epoch seconds, UTC
            ("event_json", pa.large_string()),
            ("locator", pa.string()),  # where the row came from, for messages
        ]
    )


def _raw_session_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("app_name", pa.string()),
            ("user_id", pa.string()),
            ("session_id", pa.string()),
            ("create_time", pa.float64()),
            ("update_time", pa.float64()),
        ]
    )


_KEY_FIELDS = ("app_name", "user_id", "session_id", "event_id")


def _made_event_schema() -> pa.Schema:
    """An event's columns as a family made them (Made): the raw row's identity and time,
    and what the normaliser's SQL would read from its JSON (queries/families/adk/
    made_event_rows.sql gives them the store's types)."""
    import pyarrow as pa

    text, count = pa.string(), pa.int64()
    return pa.schema(
        [(name, text) for name in (*_KEY_FIELDS, "invocation_id")]
        + [("epoch", pa.float64())]
        + [(name, text) for name in ("author", "branch", "model_version", "error_code",
                                      "error_message")]  # fmt: skip
        + [(f"{name}_token_count", count) for name in ("prompt", "candidates",
           "cached_content", "thoughts", "tool_use_prompt", "total")]  # fmt: skip
        + [("is_compaction", pa.bool_()), ("compaction_start", pa.float64()),
           ("compaction_end", pa.float64()), ("part_count", count), ("chars", count),
           ("kinds", pa.list_(text))]  # fmt: skip
    )


def _made_part_schema() -> pa.Schema:
    """A part's row as a family made it (stage_parts.sql's columns), and a tool result's
    response as JSON for the sizing of its rows (`payload`, else null)."""
    import pyarrow as pa

    text, count = pa.string(), pa.int64()
    return pa.schema(
        [(name, text) for name in (*_KEY_FIELDS, "origin")]
        + [("part_index", count), ("kind", text), ("tool_name", text),
           ("function_call_id", text), ("has_thought_signature", pa.bool_()),
           ("chars", count), ("relay_chars", count), ("preview", text),
           ("payload", pa.large_string())]  # fmt: skip
    )


@dataclass(frozen=True)
class Skip:
    """One source row that was not loaded, and why."""

    locator: str
    reason: str


@dataclass
class Batch:
    """Raw events (RAW_EVENT_SCHEMA), the sessions they belong to, and rows not loaded."""

    events: pa.Table
    sessions: pa.Table | None = None
    skipped: list[Skip] = field(default_factory=list)
    rows_read: int = 0
    # a family's own details of these events, by store table (store.writes.SIDE_TABLES)
    side: dict[str, pa.Table] = field(default_factory=dict)
    # sessions this batch replaces whole: their stored rows go before its own are stored
    replaces: list[tuple[str, str, str]] = field(default_factory=list)
    # events whose rows the family made itself (not in `events`: not parsed again)
    made: Made | None = None


@dataclass
class Made:
    """Events whose store rows a family made from the values it read, and their parts
    (MADE_EVENT_SCHEMA, MADE_PART_SCHEMA): the normaliser's SQL is their definition, and
    the family declines (writes the event's JSON) where it could differ from it."""

    events: pa.Table
    parts: pa.Table


# ---------------------------------------------------------------------------
# Stored events, as the analyses read them
# ---------------------------------------------------------------------------

ROLES = ("user", "model", "tool", "summary")


# 3000-01-01: the last time the store takes (stage_events.sql's valid range)
LAST_EPOCH = 32503680000.0


def is_time(value: float | None) -> bool:
    """Whether epoch seconds are a time the store takes, 1970 to 3000 (NaN is not)."""
    return value is not None and 0 <= value <= LAST_EPOCH


@dataclass(frozen=True, slots=True)
class CompactionRange:
    """[start, end] in epoch seconds: the raw events a compaction summary replaces."""

    start: float
    end: float

    def covers(self, epoch: float) -> bool:
        return self.start <= epoch <= self.end


@dataclass(slots=True)
class Part:
    origin: str  # content | compaction
    index: int
    kind: str  # text | thought | function_call | function_response | other
    tool_name: str | None
    call_id: str | None
    has_signature: bool
    chars: int
    relay_chars: int  # size of the part as another agent's relayed text shows it
    row_count: int | None

    @property
    def visible(self) -> bool:
        if self.kind in ("function_call", "function_response"):
            return True
        if self.has_signature:
            return True
        return self.kind != "thought" and self.chars > 0


@dataclass(slots=True)
class Event:
    event_id: str
    invocation_id: str | None
    author: str | None
    branch: str | None
    scope: str | None
    epoch: float
    partial: bool
    error_code: str | None
    error_message: str | None
    is_compaction: bool
    compaction: CompactionRange | None
    prompt_tokens: int | None
    cached_tokens: int | None
    candidates_tokens: int | None
    long_running: frozenset[str]
    model_version: str | None
    parts: list[Part] = field(default_factory=list)
    summary: list[Part] = field(default_factory=list)


INFERRED_CALL_ID = "inferred:"  # the head of an id pair_unidentified_calls gave


def pair_unidentified_calls(events: list[Event]) -> None:
    """Give each function call stored without an id (ADK before its calls had ids) one,
    `inferred:<event id>:<part index>`, and the same to the first later response of
    that tool without an id in the same turn: such a release answered them in order.
    Without it nothing pairs a result with its call (no growth, no re-sends)."""
    waiting: dict[tuple[str | None, str | None], deque[str]] = defaultdict(deque)
    for event in events:
        for part in event.parts:
            if part.call_id:
                continue
            if part.kind == "function_call":
                part.call_id = f"{INFERRED_CALL_ID}{event.event_id}:{part.index}"
                waiting[(event.invocation_id, part.tool_name)].append(part.call_id)
            elif part.kind == "function_response":
                queue = waiting.get((event.invocation_id, part.tool_name))
                if queue:
                    part.call_id = queue.popleft()


def parse_version(text: str) -> tuple[int, int, int]:
    """`1.18.0` -> (1, 18, 0); ValueError for anything that is not X.Y.Z."""
    found = re.fullmatch(r"\s*v?(\d+)\.(\d+)\.(\d+)\s*", text or "")
    if not found:
        raise ValueError(f"not a release number (X.Y.Z): {text!r}")
    major, minor, patch = (int(x) for x in found.groups())
    return (major, minor, patch)


@dataclass(frozen=True)
class Release:
    """The google-adk release that wrote a session, and how that is known."""

    version: str  # X.Y.Z whose rules apply (for a range: its newest release)
    basis: str  # given (--adk-version) | traced | inferred
    detail: str  # the evidence, in words
    since: str | None = None  # an inferred range: first release it allows
    until: str | None = None  # ... and the first it rules out (None: open)


@dataclass(slots=True)
class Session:
    app_name: str
    user_id: str
    session_id: str
    events: list[Event]
    source: str = ""
    release: Release | None = None  # the release that wrote it, when known
    family: str = "adk"  # the agent software that wrote it: adk | claude-code

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.app_name, self.user_id, self.session_id)


@dataclass(slots=True)
class WindowPart:
    """One part as the request carried it: its own or relayed, its role and size."""

    event_id: str
    part_index: int  # -1: the preamble ADK adds to another agent's message
    part_kind: str  # the stored kind, or "preamble"
    origin: str
    author: str | None
    role: str  # user | model | tool | summary
    relayed: bool
    tool_name: str | None
    function_call_id: str | None
    chars: int


@dataclass(slots=True)
class Call:
    """One model call and what its request held."""

    event: Event
    index: int  # position of the call's event in the session
    kind: str  # agent | failed | summarizer
    turn: int | None
    chars_by_role: dict[str, int]
    response_ids: list[str]  # call ids of the function_response parts it carried (not relayed)
    relayed_ids: list[str] = field(default_factory=list)  # results it carried as quoted text
    # the model that read the window (its model_version, else that of the agent's other
    # calls in the session): whose tokenizer sizes it; "" when no call says
    model: str = ""
    # `traced`: chars_by_role are the traced request's (ADK's trace of it), and the
    # system instruction and tool declarations are known characters; else `rebuilt`
    window_source: str = "rebuilt"
    system_tools_chars: int | None = None  # traced calls only

    @property
    def chars(self) -> int:
        return sum(self.chars_by_role.values())


# ---------------------------------------------------------------------------
# Traced requests: what a model request really held, by size
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TracedPart:
    content_index: int
    part_index: int
    role: str  # user | model | tool: the content's role; a function_response is `tool`
    kind: str  # text | thought | function_call | function_response | other
    tool_name: str | None
    chars: int


@dataclass
class TracedCall:
    session_id: str
    event_id: str
    span_id: str
    trace_id: str
    invocation_id: str | None
    model: str | None
    adk_version: str | None  # from the request's x-goog-api-client header
    started_at: float | None  # epoch seconds
    ended_at: float | None
    input_tokens: int | None
    output_tokens: int | None
    system_chars: int
    tools_chars: int
    contents: int
    parts: list[TracedPart] = field(default_factory=list)
    # the system instruction and tool declarations as sent: SHA-256 and first characters
    system_sha256: str | None = None
    system_head: str | None = None
    tools_sha256: str | None = None
    tools_head: str | None = None


# ---------------------------------------------------------------------------
# Logged records: what an application's logs and traces said (OpenSearch, files)
# ---------------------------------------------------------------------------

LOGGED_KINDS = ("call", "tool", "agent", "turn", "log")


@dataclass(slots=True)
class LoggedRecord:
    """One document of logs or traces, read by the family its shape belongs to.

    `kind`: call (a model request), tool (a tool's execution), agent / turn (an agent's
    run, a whole invocation), log (an application log line). Every figure is as logged;
    `context_tokens` is the size figure a log or error text gave, `context_limit` the
    model maximum it named, `context_failure` whether the record is a context failure.
    """

    record_key: str  # what makes two documents the same record (span ids, payload id, digest)
    family: str  # otel-span | otel-log | litellm | mapping:<name>
    shape: str  # data-prepper | otel | litellm | mapping
    kind: str
    locator: str  # where it was read: index/_id, or file:line
    name: str | None = None  # the span's or log's name or body (truncated)
    started_at: float | None = None  # epoch seconds, UTC
    ended_at: float | None = None
    session_id: str | None = None
    invocation_id: str | None = None
    event_id: str | None = None
    agent: str | None = None
    service: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    logged_cost_usd: float | None = None  # the logger's own cost figure (LiteLLM response_cost)
    status: str | None = None  # ok | error | None when the record does not say
    error_code: str | None = None
    error_text: str | None = None
    context_failure: bool = False
    context_tokens: int | None = None
    context_limit: int | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    latency_s: float | None = None
    args_chars: int | None = None
    result_chars: int | None = None
    trace_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None


def _logged_schema() -> pa.Schema:
    import pyarrow as pa

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    return pa.schema(
        [
            (name, types[str(annotation).split(" ")[0].split("|")[0].strip()])
            for name, annotation in LoggedRecord.__annotations__.items()
        ]
    )


def logged_table(records: list[LoggedRecord]) -> pa.Table:
    """Records as one Arrow table of LOGGED_SCHEMA, column by column."""
    import pyarrow as pa

    schema = _schema("LOGGED_SCHEMA")
    return pa.table(
        {name: [getattr(r, name) for r in records] for name in schema.names}, schema=schema
    )


_SCHEMAS = {
    "RAW_EVENT_SCHEMA": _raw_event_schema,
    "RAW_SESSION_SCHEMA": _raw_session_schema,
    "LOGGED_SCHEMA": _logged_schema,
    "MADE_EVENT_SCHEMA": _made_event_schema,
    "MADE_PART_SCHEMA": _made_part_schema,
}


@cache
def _schema(name: str) -> pa.Schema:
    return _SCHEMAS[name]()


def __getattr__(name: str) -> Any:
    """The Arrow schemas, made once at their first use (see the top of the module)."""
    if name in _SCHEMAS:
        return _schema(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------
# Task outcomes: which executions of which task succeeded, under which arm
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """One execution of a task: an ADK session (or one of its turns, by invocation id),
    the task it ran, the arm it ran under, and whether it succeeded."""

    session_id: str
    invocation_id: str | None  # None: the whole session is the execution
    task_id: str
    arm: str  # '' when the file names none
    success: bool | None  # None: not evaluated
    score: float | None
    source: str  # csv | json | adk-eval
    locator: str  # file:row, for messages
