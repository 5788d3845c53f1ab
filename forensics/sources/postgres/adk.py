"""ADK DatabaseSessionService tables in PostgreSQL (schema V1 or V0), read-only and streamed.

Every read runs in a READ ONLY transaction with a `statement_timeout` (connection.py);
rows arrive through a server-side cursor, so memory stays flat whatever the table
size. Filters are pushed down as equality on (app_name, user_id, session_id) and a
range on timestamp: the columns of ADK's composite index, in its order. The
statements are built here once, for the loader and for `forensics plan`, which
explains exactly what the loader would send.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql
from psycopg.types.string import TextLoader

from ...errors import MissingRelationError
from ...families.adk import v0
from ...model import RAW_SESSION_SCHEMA, Batch
from ...selection import Selection
from ...store.arrow import rows_table  # (pyarrow's builders import pandas)
from ..base import BATCH_ROWS, ActionFields, EventBatcher, layout_problem
from .connection import ReadOnlyServer, one

FETCH_ROWS = 500
V1_NAMES = ("app_name", "user_id", "session_id", "id", "invocation_id", "epoch", "event_data")
SESSION_COLUMNS = ("app_name", "user_id", "id", "create_time", "update_time")


def where_clause(
    selection: Selection, since: float | None
) -> tuple[sql.Composable, dict[str, Any]]:
    """(fragment, params) in ADK's index column order; values are always bound."""
    fragments: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for column, value in (
        ("app_name", selection.app),
        ("user_id", selection.user),
        ("session_id", selection.session),
    ):
        if value is not None:
            fragments.append(
                sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(column))
            )
            params[column] = value
    bounds = [x for x in (selection.since, since) if x is not None]
    if bounds:
        fragments.append(sql.SQL("timestamp >= %(since)s"))
        params["since"] = datetime.fromtimestamp(max(bounds), UTC).replace(tzinfo=None)
    if selection.until is not None:
        fragments.append(sql.SQL("timestamp < %(until)s"))
        params["until"] = datetime.fromtimestamp(selection.until, UTC).replace(tzinfo=None)
    if not fragments:
        return sql.SQL(""), params
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(fragments), params


class AdkPostgresSource:
    kind = "adk-postgres"

    def __init__(
        self,
        dsn: str,
        selection: Selection | None = None,
        *,
        batch_size: int = BATCH_ROWS,
        statement_timeout_ms: int = 60_000,
        connect_timeout_s: int = 10,
    ):
        self.server = ReadOnlyServer(
            dsn, statement_timeout_ms=statement_timeout_ms, connect_timeout_s=connect_timeout_s
        )
        self.location = self.server.location
        self.selection = selection or Selection()
        self.batch_size = batch_size
        self.layout: str | None = None
        self.notes: dict[str, object] = {}
        self.action_fields = ActionFields()

    def __repr__(self) -> str:
        return f"AdkPostgresSource({self.location!r})"

    def detect(self, con: psycopg.Connection) -> tuple[str, list[str]]:
        """("v1" | "v0", the events table's columns), or MissingRelationError naming them."""
        columns = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'events' AND table_schema = current_schema() "
                "ORDER BY ordinal_position"
            ).fetchall()
        ]
        if not columns:
            raise MissingRelationError(
                f"{self.location}: no table 'events' in schema "
                f"{one(con, 'SELECT current_schema()')[0]!r}; not an ADK session "
                "database (or set search_path / options in the DSN)"
            )
        if "event_data" in columns and all(
            c in columns for c in ("id", "app_name", "user_id", "session_id")
        ):
            return "v1", columns
        if "actions" in columns and all(c in columns for c in v0.REQUIRED_COLUMNS):
            return "v0", columns
        v1 = ("id", "app_name", "user_id", "session_id", "event_data")
        raise MissingRelationError(
            f"{self.location}: {layout_problem(columns, v1, v0.REQUIRED_COLUMNS)}"
        )

    def events_statement(
        self, layout: str, columns: list[str], since_watermark: float | None
    ) -> tuple[sql.Composed, dict[str, Any], list[str]]:
        """The loader's SELECT on events: (statement, params, the names of its columns)."""
        where, params = where_clause(self.selection, since_watermark)
        if layout == "v1":
            select = sql.SQL(
                "SELECT app_name, user_id, session_id, id, invocation_id, "
                # event_data as it is stored: its text is what the server sends either
                # way, and a ::text cast copies it once more (measured on 1.85 GB of
                # jsonb: psql's \\copy of the cast took 23.0 s, of the column 13.5 s)
                "extract(epoch FROM timestamp)::float8, event_data FROM events"
            )
            return select + where, params, list(V1_NAMES)
        present = [c for c in v0.ALL_COLUMNS if c in columns and c != "timestamp"]
        v0_select = sql.SQL("SELECT {}, extract(epoch FROM timestamp)::float8 FROM events").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in present)
        )
        return v0_select + where, params, [*present, "epoch"]

    def sessions_statement(
        self, con: psycopg.Connection
    ) -> tuple[sql.Composed, dict[str, Any]] | None:
        """The loader's SELECT on sessions, or None when the table lacks ADK's columns."""
        found = one(
            con,
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'sessions' "
            "AND table_schema = current_schema() AND column_name = ANY(%s)",
            [list(SESSION_COLUMNS)],
        )[0]
        if found < len(SESSION_COLUMNS):
            return None
        fragments: list[sql.Composable] = []
        params: dict[str, Any] = {}
        for column, key, value in (
            ("app_name", "app", self.selection.app),
            ("user_id", "user", self.selection.user),
            ("id", "session", self.selection.session),
        ):
            if value is not None:
                fragments.append(
                    sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(key))
                )
                params[key] = value
        statement = sql.Composed(
            [
                sql.SQL(
                    "SELECT app_name, user_id, id, extract(epoch FROM create_time)::float8, "
                    "extract(epoch FROM update_time)::float8 FROM sessions"
                )
            ]
        )
        if fragments:
            statement += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(fragments)
        return statement, params

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        hint = "raise --statement-timeout or narrow with --app/--user/--session/--since"
        with self.server.transaction(hint) as con:
            self.layout, columns = self.detect(con)
            sessions = self._sessions(con)
            statement, params, names = self.events_statement(self.layout, columns, since_watermark)
            out = EventBatcher(self.batch_size)
            with con.cursor(name="forensics_events") as cur:
                for kind in ("json", "jsonb"):  # the JSON text, never parsed in Python
                    cur.adapters.register_loader(kind, TextLoader)
                cur.itersize = FETCH_ROWS
                cur.execute(statement, params)
                while rows := cur.fetchmany(FETCH_ROWS):
                    if self.layout == "v1":
                        self._add_v1(out, rows)
                    else:
                        for values in rows:
                            self._add_v0(out, dict(zip(names, values, strict=True)))
                    if out.full():
                        yield out.take(sessions)
                        sessions = None
            if out.pending() or sessions is not None:
                yield out.take(sessions)

    def _add_v1(self, out: EventBatcher, rows: list[tuple[Any, ...]]) -> None:
        # the hot path: one call per fetched block, no dict per row
        for app_name, user_id, session_id, event_id, invocation_id, epoch, event_data in rows:
            out.rows_read += 1
            locator = f"events row id={event_id!r} session={session_id!r}"
            if event_data is None:
                out.skip(locator, "event_data is NULL")
                continue
            out.add(
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                event_id=event_id,
                invocation_id=invocation_id,
                timestamp=epoch,
                event_json=event_data,
                locator=locator,
            )

    def _add_v0(self, out: EventBatcher, row: dict[str, Any]) -> None:
        out.rows_read += 1
        locator = f"events row id={row['id']!r} session={row['session_id']!r}"
        try:
            event = v0.row_to_event(row, row["epoch"])
        except v0.RowError as e:
            out.skip(locator, str(e))
            return
        key = (str(row["app_name"]), str(row["user_id"]), str(row["session_id"]))
        self.action_fields.add(key, event.get("actions"))
        out.add(
            app_name=row["app_name"],
            user_id=row["user_id"],
            session_id=row["session_id"],
            event_id=row["id"],
            invocation_id=row["invocation_id"],
            timestamp=row["epoch"],
            event_json=json.dumps(event, ensure_ascii=False),
            locator=locator,
        )

    def _sessions(self, con: psycopg.Connection) -> pa.Table | None:
        found = self.sessions_statement(con)
        if found is None:
            return None
        statement, params = found
        rows = con.execute(statement, params).fetchall()
        return rows_table(
            [
                {"app_name": a, "user_id": u, "session_id": s, "create_time": c, "update_time": t}
                for a, u, s, c, t in rows
            ],
            RAW_SESSION_SCHEMA,
        )
