"""The interface every transport shares: raw events as Arrow batches, plus skips.

A loader does not interpret events. It hands the pipeline each event as JSON text
(ADK's own `Event.model_dump` shape, snake_case or camelCase) with its identity
columns (`model.Batch`); the ADK family's normaliser (queries/adk_stage_*.sql)
extracts parts, usage and compaction from that text, so every transport is
measured by the same code.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import pyarrow as pa

from ..model import MADE_EVENT_SCHEMA, MADE_PART_SCHEMA, RAW_EVENT_SCHEMA, Batch, Made, Skip
from ..sanitize import storable
from ..store.arrow import columns_table

# Normalising a batch costs about 0.1 s whatever its size (measured), so batches
# are large; the character cap keeps one of fat tool results near 100 MB.
BATCH_ROWS = 20_000
BATCH_CHARS = 32_000_000


SessionKey = tuple[str, str, str]


def layout_problem(
    found: Sequence[str], v1_required: Sequence[str], v0_required: Sequence[str]
) -> str:
    """Why an `events` table is neither ADK layout: what it lacks of the one it resembles."""
    have = set(found)
    shown = ", ".join(found) or "none"
    if "event_data" in have:
        missing = [c for c in v1_required if c not in have]
        return (
            f"table 'events' has event_data like ADK schema V1 but lacks "
            f"{', '.join(missing)} (columns: {shown})"
        )
    if "actions" in have:
        missing = [c for c in v0_required if c not in have]
        return (
            f"table 'events' has actions like ADK schema V0 but lacks "
            f"{', '.join(missing)} (columns: {shown})"
        )
    return (
        f"table 'events' is neither ADK layout: it has neither event_data (schema V1) nor "
        f"actions (schema V0) (columns: {shown})"
    )


class ActionFields:
    """The distinct EventActions field sets each session's V0 pickles hold: they bound
    the release that wrote it (families.adk.releases.from_pickled_actions)."""

    def __init__(self) -> None:
        self.by_session: dict[SessionKey, set[frozenset[str]]] = {}

    def add(self, key: SessionKey, actions: object) -> None:
        if isinstance(actions, dict):
            self.by_session.setdefault(key, set()).add(frozenset(actions))


class Source(Protocol):
    """What the ingest pipeline reads: batches of raw events newer than a watermark."""

    kind: str  # "adk-postgres", "adk-sqlite", "adk-json"
    location: str  # path or DSN, password already redacted
    notes: dict[str, object]  # what the reading found out, for the ledger (e.g. its clock)

    def batches(self, since_watermark: float | None) -> Iterator[Batch]: ...


def not_unicode(name: str, value: object) -> str | None:
    """Why text cannot be stored (a lone surrogate, which Python's json reads from
    "\\ud800" and UTF-8 cannot hold), or None."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        shown = "the event's text" if name == "event_json" else name
        code = ord(value[e.start])
        return (f"{shown} is not valid Unicode: a lone surrogate \\u{code:04x} at character "
                f"{e.start:,}")  # fmt: skip
    return None


_MADE_KEYS = ("app_name", "user_id", "session_id", "event_id")
_ROW_FIELDS = (*_MADE_KEYS, "invocation_id", "epoch")  # a made event's, from its raw row
# a made part's fields, in the order families/claude_code/rows.py's Part gives them
_PART_FIELDS = ("origin", "part_index", "kind", "tool_name", "function_call_id",
                "has_thought_signature", "chars", "relay_chars", "preview", "payload")  # fmt: skip


class EventBatcher:
    """Collects raw event rows and cuts them into Arrow tables of at most `size` rows.

    Rows turn into Arrow every `CHUNK_ROWS`, so the Python strings of a batch
    never all live at once: a batch costs its Arrow size, not twice that.
    """

    CHUNK_ROWS = 1000

    def __init__(self, size: int = BATCH_ROWS, max_chars: int = BATCH_CHARS):
        self.size = size
        self.max_chars = max_chars  # keeps a batch of fat tool results from holding GBs
        self.skipped: list[Skip] = []
        self.rows_read = 0
        self._reset()

    def _reset(self) -> None:
        self._chunks: list[pa.RecordBatch] = []
        self._cols: dict[str, list[object]] = {name: [] for name in RAW_EVENT_SCHEMA.names}
        # rows a family made itself (`made` of add), made into tables every CHUNK_ROWS
        self._made: list[dict[str, object]] = []
        self._made_chunks: list[Made] = []
        self._rows = 0
        self._chars = 0
        self._keys: set[tuple[object, ...]] = set()
        self._file_keys: set[tuple[object, ...]] = set()  # of the file being read
        self._held: dict[str, object] | None = None  # an event the next batch begins with

    def add(self, **row: object) -> None:
        """Add one event; a row whose identity is not text is skipped with the reason. A
        row with `made` (a family's own columns of the event and its parts' rows,
        families/claude_code/rows.py) has no `event_json` but its length, `json_chars`:
        its rows are stored as made, not parsed from JSON."""
        for name in ("app_name", "user_id", "session_id", "event_id", "invocation_id"):
            value = row.get(name)
            if not (isinstance(value, str) and value) and not (
                name == "invocation_id" and value is None
            ):
                shown = type(value).__name__ if value not in (None, "") else "empty"
                self.skip(str(row["locator"]), f"{name} is {shown}, not text")
                return
        if not isinstance(row.get("timestamp"), float | int | None):
            self.skip(str(row["locator"]), "timestamp is not a number")
            return
        key = (row["app_name"], row["user_id"], row["session_id"], row["event_id"])
        if key in self._keys:
            if key not in self._file_keys:
                # an event an earlier file of this batch also holds: it begins the next
                # batch, so that the store compares it with the one it stored (and says
                # so when they differ), as when each file was a batch of its own
                self._held = row
            return  # the same event twice in one file: the store keeps the first
        self._keys.add(key)
        self._file_keys.add(key)
        self._rows += 1
        made = row.get("made")
        if made is not None:
            self._made.append(row)
            self._chars += row["json_chars"]  # type: ignore[operator]
            if len(self._made) >= self.CHUNK_ROWS:
                self._made_chunks.append(self._made_tables())
                self._made = []
            return
        for name, values in self._cols.items():
            values.append(row.get(name))
        self._chars += len(row["event_json"])  # type: ignore[arg-type]
        if len(self._cols["event_id"]) >= self.CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        # built through polars (store/arrow.py): pyarrow's from_pydict imported pandas,
        # 43 MB of every ingest's peak and 0.13 s
        if self._cols["event_id"]:
            try:
                chunk = columns_table(self._cols, RAW_EVENT_SCHEMA)
            except UnicodeEncodeError:  # a lone surrogate (Python's json reads "\ud800")
                chunk = columns_table(self._encodable(), RAW_EVENT_SCHEMA)
            self._chunks += chunk.to_batches()
            self._cols = {name: [] for name in RAW_EVENT_SCHEMA.names}

    def _made_tables(self) -> Made:
        """The made rows held as their two tables (a family makes rows only of text that
        is valid Unicode: families/claude_code/rows.py)."""
        keys = _MADE_KEYS
        events: dict[str, list[object]] = {name: [] for name in MADE_EVENT_SCHEMA.names}
        parts: dict[str, list[object]] = {name: [] for name in MADE_PART_SCHEMA.names}
        own = [name for name in MADE_EVENT_SCHEMA.names if name not in _ROW_FIELDS]
        for row in self._made:
            made: tuple[dict[str, object], list[tuple[object, ...]]] = row["made"]  # type: ignore[assignment]
            columns, made_parts = made
            ids = [row[name] for name in keys]
            for name, value in zip(keys, ids, strict=True):
                events[name].append(value)
            events["invocation_id"].append(row["invocation_id"])
            events["epoch"].append(row["timestamp"])
            for name in own:
                events[name].append(columns[name])
            for part in made_parts:
                for name, value in zip(keys, ids, strict=True):
                    parts[name].append(value)
                for name, value in zip(_PART_FIELDS, part, strict=True):
                    parts[name].append(value)
        return Made(columns_table(events, MADE_EVENT_SCHEMA),
                    columns_table(parts, MADE_PART_SCHEMA))  # fmt: skip

    def _encodable(self) -> dict[str, list[object]]:
        """The pending rows without those holding text that is not valid Unicode, each
        of those a skip that says which field and where (the others are kept). A place
        (`locator`: a file's path, which may hold bytes no encoding decodes) is written
        with its escapes instead: it is where to look, not what is stored."""
        kept: dict[str, list[object]] = {name: [] for name in RAW_EVENT_SCHEMA.names}
        for i in range(len(self._cols["event_id"])):
            row = {name: values[i] for name, values in self._cols.items()}
            row["locator"] = storable(str(row["locator"]))
            bad = next(
                (why for name, value in row.items() if (why := not_unicode(name, value))), None
            )
            if bad is None:
                for name, value in row.items():
                    kept[name].append(value)
                continue
            self.skip(str(row["locator"]), bad)
            self._rows -= 1
        return kept

    def skip(self, locator: str, reason: str) -> None:
        self.skipped.append(Skip(locator, reason))

    def new_file(self) -> None:
        """The events added from now on come from another file (see `add`)."""
        self._file_keys = set()

    def full(self) -> bool:
        return self._held is not None or self._rows >= self.size or self._chars >= self.max_chars

    def pending(self) -> bool:
        return bool(self._rows or self.skipped or self.rows_read)

    def take(self, sessions: pa.Table | None = None) -> Batch:
        self._flush()
        table = pa.Table.from_batches(self._chunks, schema=RAW_EVENT_SCHEMA)
        if self._made:
            self._made_chunks.append(self._made_tables())
        chunks = self._made_chunks
        made = None
        if chunks:
            made = Made(pa.concat_tables([c.events for c in chunks]),
                        pa.concat_tables([c.parts for c in chunks]))  # fmt: skip
        batch = Batch(table, sessions, self.skipped, self.rows_read, made=made)
        self.skipped = []
        self.rows_read = 0
        held = self._held
        self._reset()
        if held is not None:
            self.add(**held)
        return batch
