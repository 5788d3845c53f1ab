"""ADK session databases in SQLite: DatabaseSessionService V0/V1 and SqliteSessionService.

Opened read-only (`mode=ro`). The layout is read from the `events` table's
columns: `event_data` is V1 (or SqliteSessionService, whose timestamps are REAL),
`actions` is V0. Anything else is refused with the columns found.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from ...errors import MissingRelationError, SourceError
from ...families.adk import v0
from ...model import RAW_SESSION_SCHEMA, Batch
from ...selection import Selection
from ...store.arrow import rows_table  # (pyarrow's builders import pandas)
from ..base import BATCH_ROWS, ActionFields, EventBatcher, layout_problem
from .clock import WriterClock
from .clock import detect as detect_clock
from .clock import parse as parse_clock
from .clock import stored_epoch as _epoch

V1_COLUMNS = ("id", "app_name", "user_id", "session_id", "invocation_id", "timestamp", "event_data")


def quote_identifier(name: str) -> str:
    """A SQLite identifier, quoted: column names come from an untrusted file."""
    return '"' + name.replace('"', '""') + '"'


def _bound(epoch: float, real: bool, clock: WriterClock) -> object:
    if real:
        return epoch
    stored = clock.from_utc(epoch)  # the instant as the file's clock wrote it
    return datetime.fromtimestamp(stored, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def where_clause(
    selection: Selection, since: float | None, real_ts: bool, clock: WriterClock | None = None
) -> tuple[str, list[object]]:
    """(fragment, params) for the filters, in index column order (app, user, session, ts)."""
    clock = clock or WriterClock()
    fragments: list[str] = []
    params: list[object] = []
    for column, value in (
        ("app_name", selection.app),
        ("user_id", selection.user),
        ("session_id", selection.session),
    ):
        if value is not None:
            fragments.append(f"{column} = ?")
            params.append(value)
    bounds = [x for x in (selection.since, since) if x is not None]
    lower = max(bounds) if bounds else None
    if lower is not None:
        fragments.append("timestamp >= ?")
        params.append(_bound(lower, real_ts, clock))
    if selection.until is not None:
        fragments.append("timestamp < ?")
        params.append(_bound(selection.until, real_ts, clock))
    return (" WHERE " + " AND ".join(fragments)) if fragments else "", params


class _NotUtf8(bytes):
    """A TEXT value that is not UTF-8, as its bytes (a BLOB value stays plain bytes)."""


def _text(raw: bytes) -> str | bytes:
    """SQLite TEXT as str; one that is not UTF-8 as _NotUtf8, so that one bad row is a
    skip that says so, or its text read with U+FFFD (sqlite3's own decoding stops the
    whole read at it)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _NotUtf8(raw)


def _undecodable(raw: bytes) -> str:
    """Where bytes stop being UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"byte {e.start:,} is {raw[e.start]:#04x}"
    return "it is bytes"


class AdkSqliteSource:
    kind = "adk-sqlite"

    def __init__(
        self,
        path: Path,
        selection: Selection | None = None,
        batch_size: int = BATCH_ROWS,
        *,
        source_tz: str | None = None,
    ):
        self.path = Path(path)
        self.location = str(self.path)
        self.selection = selection or Selection()
        self.source_tz = source_tz
        self.clock = parse_clock(source_tz) if source_tz else WriterClock()
        self.notes: dict[str, object] = {}
        self.action_fields = ActionFields()
        self.batch_size = batch_size
        self.layout: str | None = None

    def _connect(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise SourceError(
                f"{self.path} is a directory, not an ADK SQLite file",
                hint="give the session database file itself, e.g. .adk/session.db",
            )
        if not self.path.is_file():
            raise SourceError(f"{self.path}: no such file")
        # (from its bytes: a name no encoding decodes is the file's all the same)
        uri = f"file:{quote(os.fsencode(self.path.resolve()))}?mode=ro"
        try:
            con = sqlite3.connect(uri, uri=True)
            con.text_factory = _text
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as e:
            raise SourceError(f"{self.path}: not a SQLite database ({e})") from e
        return con

    def _detect(self, con: sqlite3.Connection) -> tuple[str, dict[str, str]]:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        if "events" not in tables:
            raise MissingRelationError(
                f"{self.path}: no 'events' table, so not an ADK session database "
                f"(tables found: {', '.join(tables) or 'none'})"
            )
        columns = {r[1]: (r[2] or "").upper() for r in con.execute("PRAGMA table_info(events)")}
        if "event_data" in columns and all(c in columns for c in V1_COLUMNS):
            layout = "sqlite-service" if columns["timestamp"] == "REAL" else "v1"
        elif "actions" in columns and all(c in columns for c in v0.REQUIRED_COLUMNS):
            layout = "v0"
        else:
            raise MissingRelationError(
                f"{self.path}: {layout_problem(list(columns), V1_COLUMNS, v0.REQUIRED_COLUMNS)}"
            )
        return layout, columns

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        con = self._connect()
        try:
            self.layout, columns = self._detect(con)
            real_ts = columns["timestamp"] == "REAL"
            if self.layout == "v0":
                # V0 stores the writer's local time; everything else true epoch seconds
                if self.source_tz is None:
                    comparable = {"app_name", "user_id", "id", "update_time"}
                    self.clock = detect_clock(con, comparable <= self._session_columns(con))
                self.notes["event_times"] = self.clock.how
            elif self.source_tz is not None:
                self.clock = WriterClock()
                self.notes["event_times"] = (
                    f"UTC: --source-tz {self.source_tz} not applied, a {self.layout} file "
                    "stores epoch seconds"
                )
            where, params = where_clause(self.selection, since_watermark, real_ts, self.clock)
            sessions = self._sessions(con)
            if self.layout == "v0":
                wanted = [c for c in v0.ALL_COLUMNS if c in columns]
            else:
                wanted = list(V1_COLUMNS)
            select = ", ".join(quote_identifier(c) for c in wanted)
            cur = con.execute(f"SELECT {select} FROM events{where}", params)  # noqa: S608
            out = EventBatcher(self.batch_size)
            for values in iter(lambda: cur.fetchmany(500), []):
                for value in values:
                    self._add(out, dict(zip(wanted, value, strict=True)))
                if out.full():
                    yield out.take(sessions)
                    sessions = None
            if out.pending() or sessions is not None:
                yield out.take(sessions)
        except sqlite3.DatabaseError as e:
            raise SourceError(f"{self.path}: {e}") from e
        finally:
            con.close()

    def _add(self, out: EventBatcher, row: dict[str, object]) -> None:
        out.rows_read += 1
        locator = f"{self.path}: events row id={row['id']!r} session={row['session_id']!r}"
        for name, value in row.items():
            if not isinstance(value, _NotUtf8):
                continue
            if name in ("app_name", "user_id", "session_id", "id", "invocation_id"):
                out.skip(locator, f"{name} is not UTF-8 text: {_undecodable(value)}")
                return
            row[name] = value.decode("utf-8", errors="replace")  # as event_data's always was
        epoch = _epoch(row["timestamp"])
        if epoch is None:
            out.skip(locator, f"unreadable timestamp {row['timestamp']!r}")
            return
        event_json: object
        if self.layout == "v0":
            epoch = self.clock.to_utc(epoch)
            try:
                event = v0.row_to_event(row, epoch)
            except v0.RowError as e:
                out.skip(locator, str(e))
                return
            key = (str(row["app_name"]), str(row["user_id"]), str(row["session_id"]))
            self.action_fields.add(key, event.get("actions"))
            event_json = json.dumps(event, ensure_ascii=False)
        else:
            event_json = row["event_data"]
            if isinstance(event_json, bytes):
                event_json = event_json.decode("utf-8", errors="replace")
            if event_json is None:
                out.skip(locator, "event_data is NULL")
                return
        out.add(
            app_name=row["app_name"],
            user_id=row["user_id"],
            session_id=row["session_id"],
            event_id=row["id"],
            invocation_id=row["invocation_id"],
            timestamp=epoch,
            event_json=event_json,
            locator=locator,
        )

    @staticmethod
    def _session_columns(con: sqlite3.Connection) -> set[str]:
        try:
            return {r[1] for r in con.execute("PRAGMA table_info(sessions)")}
        except sqlite3.DatabaseError:
            return set()

    def _sessions(self, con: sqlite3.Connection) -> pa.Table | None:
        cols = self._session_columns(con)
        if not {"app_name", "user_id", "id"} <= cols:
            return None
        fragments: list[str] = []
        params: list[object] = []
        for column, value in (
            ("app_name", self.selection.app),
            ("user_id", self.selection.user),
            ("id", self.selection.session),
        ):
            if value is not None:
                fragments.append(f"{column} = ?")
                params.append(value)
        where = (" WHERE " + " AND ".join(fragments)) if fragments else ""
        create = "create_time" if "create_time" in cols else "NULL"
        update = "update_time" if "update_time" in cols else "NULL"
        rows = con.execute(
            f"SELECT app_name, user_id, id, {create}, {update} FROM sessions{where}",  # noqa: S608
            params,
        ).fetchall()
        return rows_table(
            [
                {
                    "app_name": a,
                    "user_id": u,
                    "session_id": s,
                    "create_time": _epoch(c),
                    "update_time": _epoch(t),
                }
                for a, u, s, c, t in rows
                if not any(isinstance(v, _NotUtf8) for v in (a, u, s))  # its events: skips
            ],
            RAW_SESSION_SCHEMA,
        )
