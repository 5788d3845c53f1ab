"""ADK session databases in SQLite: DatabaseSessionService V0/V1 and SqliteSessionService.

Opened read-only (`mode=ro`). The layout is read from the `events` table's
columns: `event_data` is V1 (or SqliteSessionService, whose timestamps are REAL),
`actions` is V0. Anything else is refused with the columns found.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from ...errors import TOO_DEEP, MissingRelationError, SourceError, TransientSourceError
from ...families.adk import v0
from ...model import RAW_SESSION_SCHEMA, Batch
from ...sanitize import shell_word
from ...selection import Selection
from ...store.arrow import rows_table  # (pyarrow's builders import pandas)
from ..base import BATCH_ROWS, ActionFields, EventBatcher, layout_problem
from .clock import WriterClock
from .clock import detect as detect_clock
from .clock import parse as parse_clock
from .clock import stored_epoch as _epoch

V1_COLUMNS = ("id", "app_name", "user_id", "session_id", "invocation_id", "timestamp", "event_data")
SESSION_KEYS = ("app_name", "user_id", "id")


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


def _database_error(path: Path, e: sqlite3.DatabaseError, what: str) -> SourceError:
    """A SQLite error as the source's: a lock held by a writer is worth a retry."""
    code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF  # (an extended code's primary)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return TransientSourceError(
            f"{path}: locked by a process writing to it ({e})",
            hint="retry when the writer is done (an ADK server holds the lock while it "
            "writes)",
        )
    if code == sqlite3.SQLITE_CORRUPT:
        return SourceError(
            f"{path}: {e}",
            hint=f"the file is damaged: `sqlite3 {shell_word(str(path))} .recover | sqlite3 "
            "recovered.db` "
            "salvages what it can into a new file, which this command reads",
        )
    return SourceError(f"{path}: {what} ({e})" if what else f"{path}: {e}")


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
        self.location = str(self.path)  # as given: what outputs name
        # what its watermark is kept by: `.adk/session.db` from two projects' folders is
        # two files, one file given by two paths one
        self.watermark_key = os.path.realpath(self.path)
        self.selection = selection or Selection()
        self.source_tz = source_tz
        self.clock = parse_clock(source_tz) if source_tz else WriterClock()
        self.notes: dict[str, object] = {}
        self.action_fields = ActionFields()
        self.batch_size = batch_size
        self.layout: str | None = None
        self.started = time.time()  # (set again when a run begins: the watermark's cap)
        self.ahead = 0  # rows whose timestamp column is after the run began

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
            raise _database_error(self.path, e, "not a SQLite database") from e
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
        self.started, self.ahead = time.time(), 0
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
            out = EventBatcher(self.batch_size)
            sessions = self._sessions(con, out)
            if self.layout == "v0":
                wanted = [c for c in v0.ALL_COLUMNS if c in columns]
            else:
                wanted = list(V1_COLUMNS)
            select = ", ".join(quote_identifier(c) for c in wanted)
            cur = con.execute(f"SELECT {select} FROM events{where}", params)  # noqa: S608
            for values in iter(lambda: cur.fetchmany(500), []):
                for value in values:
                    self._add(out, dict(zip(wanted, value, strict=True)))
                if out.full():
                    yield out.take(sessions)
                    sessions = None
            if self.ahead:
                self.notes["rows_ahead"] = self.ahead
            if out.pending() or sessions is not None:
                yield out.take(sessions)
        except sqlite3.DatabaseError as e:
            raise _database_error(self.path, e, "") from e
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
        if epoch is None or (self.layout == "v0" and not math.isfinite(epoch)):
            out.skip(locator, f"unreadable timestamp {row['timestamp']!r}")
            return
        event_json: object
        if self.layout == "v0":
            try:
                epoch = self.clock.to_utc(epoch)
            except (OverflowError, ValueError, OSError):  # (a named zone's, beyond datetime)
                out.skip(locator, f"timestamp {row['timestamp']!r} is not a time between "
                                  "1970 and 3000")  # fmt: skip
                return
            try:
                event = v0.row_to_event(row, epoch)
                key = (str(row["app_name"]), str(row["user_id"]), str(row["session_id"]))
                self.action_fields.add(key, event.get("actions"))
                event_json = json.dumps(event, ensure_ascii=False)
            except v0.RowError as e:
                out.skip(locator, str(e))
                return
            except RecursionError:  # (read a little less deep than it is written back)
                out.skip(locator, TOO_DEEP)
                return
        else:
            event_json = row["event_data"]
            if isinstance(event_json, bytes):
                event_json = event_json.decode("utf-8", errors="replace")
            if event_json is None:
                out.skip(locator, "event_data is NULL")
                return
        if epoch > self.started:  # dated ahead: said (the watermark stays at the start)
            self.ahead += 1
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

    def _sessions(self, con: sqlite3.Connection, out: EventBatcher) -> pa.Table | None:
        """The sessions table's rows; one whose key is not text is a skip that says so."""
        cols = self._session_columns(con)
        if not set(SESSION_KEYS) <= cols:
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
        kept = []
        for a, u, s, c, t in rows:
            if any(isinstance(v, _NotUtf8) for v in (a, u, s)):
                continue  # (its events are skips that say so)
            why = _key_problem(dict(zip(SESSION_KEYS, (a, u, s), strict=True)))
            if why is not None:
                out.rows_read += 1  # (read and skipped, as an event row is: the counts add up)
                out.skip(f"{self.path}: sessions row app_name={a!r} user_id={u!r} id={s!r}", why)
                continue
            kept.append({"app_name": a, "user_id": u, "session_id": s,
                         "create_time": _epoch(c), "update_time": _epoch(t)})  # fmt: skip
        return rows_table(kept, RAW_SESSION_SCHEMA)


def _key_problem(keys: dict[str, object]) -> str | None:
    """Why a sessions row's key cannot be stored (NULL, empty, not text), or None."""
    for name, value in keys.items():
        if value is None:
            return f"{name} is NULL, not text"
        if not isinstance(value, str):
            return f"{name} is {type(value).__name__}, not text"
        if not value:
            return f"{name} is empty, not text"
    return None
