"""The interface every loader shares: raw events as Arrow batches, plus skips.

A loader does not interpret events. It hands the store each event as JSON text
(ADK's own `Event.model_dump` shape, snake_case or camelCase) with its identity
columns; the store's SQL (queries/normalize_*.sql) extracts parts, usage and
compaction from that text, so every source is measured by the same code.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

RAW_EVENT_SCHEMA = pa.schema(
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

RAW_SESSION_SCHEMA = pa.schema(
    [
        ("app_name", pa.string()),
        ("user_id", pa.string()),
        ("session_id", pa.string()),
        ("create_time", pa.float64()),
        ("update_time", pa.float64()),
    ]
)


@dataclass(frozen=True)
class Skip:
    """One source row that was not loaded, and why."""

    locator: str
    reason: str


@dataclass
class Batch:
    events: pa.Table
    sessions: pa.Table | None = None
    skipped: list[Skip] = field(default_factory=list)
    rows_read: int = 0


@dataclass(frozen=True)
class Filters:
    """Row filters a database loader pushes down into its SQL."""

    app: str | None = None
    user: str | None = None
    session: str | None = None
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class Source(Protocol):
    kind: str  # "adk-postgres", "adk-sqlite", "adk-json"
    location: str  # path or DSN, password already redacted

    def batches(self, since_watermark: float | None) -> Iterator[Batch]: ...


class EventBatcher:
    """Collects raw event rows and cuts them into Arrow tables of `size` rows."""

    def __init__(self, size: int = 5000, max_chars: int = 64_000_000):
        self.size = size
        self.max_chars = max_chars  # keeps a batch of fat tool results from holding GBs
        self._chars = 0
        self._cols: dict[str, list] = {name: [] for name in RAW_EVENT_SCHEMA.names}
        self.skipped: list[Skip] = []
        self.rows_read = 0

    def add(self, **row: object) -> None:
        for name, values in self._cols.items():
            values.append(row.get(name))
        self._chars += len(row["event_json"])  # type: ignore[arg-type]

    def skip(self, locator: str, reason: str) -> None:
        self.skipped.append(Skip(locator, reason))

    def full(self) -> bool:
        return len(self._cols["event_id"]) >= self.size or self._chars >= self.max_chars

    def pending(self) -> bool:
        return bool(self._cols["event_id"] or self.skipped or self.rows_read)

    def take(self, sessions: pa.Table | None = None) -> Batch:
        table = pa.Table.from_pydict(self._cols, schema=RAW_EVENT_SCHEMA)
        batch = Batch(table, sessions, self.skipped, self.rows_read)
        self._cols = {name: [] for name in RAW_EVENT_SCHEMA.names}
        self.skipped = []
        self.rows_read = 0
        self._chars = 0
        return batch
