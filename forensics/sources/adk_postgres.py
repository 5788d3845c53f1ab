"""ADK DatabaseSessionService tables in PostgreSQL (schema V1 or V0), read-only and streamed.

Every read runs in a READ ONLY transaction with a `statement_timeout`; rows
arrive through a server-side cursor, so memory stays flat whatever the table
size. Filters are pushed down as equality on (app_name, user_id, session_id)
and a range on timestamp: the columns of ADK's composite index, in its order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql

from ..dsn import Secret, password
from ..errors import MissingRelationError, SourceError, TransientSourceError
from . import adk_v0
from .base import BATCH_ROWS, RAW_SESSION_SCHEMA, Batch, EventBatcher, Filters

FETCH_ROWS = 500


def where_clause(filters: Filters, since: float | None) -> tuple[sql.Composable, dict[str, Any]]:
    """(fragment, params) in ADK's index column order; values are always bound."""
    fragments: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for column, value in (
        ("app_name", filters.app),
        ("user_id", filters.user),
        ("session_id", filters.session),
    ):
        if value is not None:
            fragments.append(
                sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(column))
            )
            params[column] = value
    bounds = [x for x in (filters.since, since) if x is not None]
    if bounds:
        fragments.append(sql.SQL("timestamp >= %(since)s"))
        params["since"] = datetime.fromtimestamp(max(bounds), UTC).replace(tzinfo=None)
    if filters.until is not None:
        fragments.append(sql.SQL("timestamp < %(until)s"))
        params["until"] = datetime.fromtimestamp(filters.until, UTC).replace(tzinfo=None)
    if not fragments:
        return sql.SQL(""), params
    return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(fragments), params


def _scrub(message: str, dsn: Secret) -> str:
    """Driver messages must not carry the password, whatever they quote."""
    secret = password(dsn.reveal())
    return message.replace(secret, "***") if secret else message


class AdkPostgresSource:
    kind = "adk-postgres"

    def __init__(
        self,
        dsn: str,
        filters: Filters | None = None,
        *,
        batch_size: int = BATCH_ROWS,
        statement_timeout_ms: int = 60_000,
        connect_timeout_s: int = 10,
    ):
        self._dsn = Secret(dsn)  # str() and repr() show it redacted
        self.location = str(self._dsn)
        self.filters = filters or Filters()
        self.batch_size = batch_size
        self.statement_timeout_ms = statement_timeout_ms
        self.connect_timeout_s = connect_timeout_s
        self.layout: str | None = None

    def __repr__(self) -> str:
        return f"AdkPostgresSource({self.location!r})"

    def connect(self) -> psycopg.Connection:
        """A read-only connection whose every statement is bounded by the timeout."""
        try:
            con = psycopg.connect(
                self._dsn.reveal(),
                connect_timeout=self.connect_timeout_s,
                application_name="agent-forensics",
            )
        except psycopg.OperationalError as e:
            raise TransientSourceError(
                f"cannot connect to {self.location}: {_scrub(str(e).strip(), self._dsn)}",
                hint="check host, port and credentials; the server must accept connections",
            ) from e
        except psycopg.ProgrammingError as e:
            raise SourceError(
                f"invalid connection string {self.location}: {_scrub(str(e), self._dsn)}"
            ) from e
        try:
            # set after connecting, not as startup `options`: those would replace
            # any the DSN carries (search_path) and poolers refuse them
            con.execute(
                "SELECT set_config('statement_timeout', %s, false)",
                [f"{int(self.statement_timeout_ms)}ms"],
            )
            con.commit()
        except psycopg.Error as e:
            con.close()
            raise SourceError(f"{self.location}: {_scrub(str(e).strip(), self._dsn)}") from e
        con.read_only = True  # every transaction: BEGIN READ ONLY
        return con

    def detect(self, con: psycopg.Connection) -> tuple[str, list[str]]:
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
                f"{con.execute('SELECT current_schema()').fetchone()[0]!r}; not an ADK session "
                "database (or set search_path / options in the DSN)"
            )
        if "event_data" in columns and all(
            c in columns for c in ("id", "app_name", "user_id", "session_id")
        ):
            return "v1", columns
        if "actions" in columns and all(c in columns for c in adk_v0.REQUIRED_COLUMNS):
            return "v0", columns
        raise MissingRelationError(
            f"{self.location}: unknown layout of table 'events' (columns: {', '.join(columns)}); "
            "expected ADK schema V1 (event_data) or V0 (actions)"
        )

    @contextmanager
    def read_only(self, hint: str = "raise --statement-timeout") -> Iterator[psycopg.Connection]:
        """One read-only transaction on a fresh connection, always rolled back; driver
        errors become SourceErrors that name the server and never the password."""
        con = self.connect()
        try:
            with con.transaction():
                yield con
                raise psycopg.Rollback()  # read-only: end the transaction, commit nothing
        except psycopg.errors.QueryCanceled as e:
            raise TransientSourceError(
                f"{self.location}: a statement ran past statement_timeout "
                f"({self.statement_timeout_ms} ms): {_scrub(str(e).strip(), self._dsn)}",
                hint=hint,
            ) from e
        except psycopg.OperationalError as e:
            raise TransientSourceError(
                f"{self.location}: {_scrub(str(e).strip(), self._dsn)}"
            ) from e
        except psycopg.Error as e:
            raise SourceError(f"{self.location}: {_scrub(str(e).strip(), self._dsn)}") from e
        finally:
            con.close()

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        hint = "raise --statement-timeout or narrow with --app/--user/--session/--since"
        with self.read_only(hint) as con:
            self.layout, columns = self.detect(con)
            sessions = self._sessions(con)
            where, params = where_clause(self.filters, since_watermark)
            if self.layout == "v1":
                select = sql.SQL(
                    "SELECT app_name, user_id, session_id, id, invocation_id, "
                    "extract(epoch FROM timestamp)::float8, event_data::text FROM events"
                )
                names = [
                    "app_name",
                    "user_id",
                    "session_id",
                    "id",
                    "invocation_id",
                    "epoch",
                    "event_data",
                ]
            else:
                present = [c for c in adk_v0.ALL_COLUMNS if c in columns]
                names = [c for c in present if c != "timestamp"] + ["epoch"]
                select = sql.SQL(
                    "SELECT {}, extract(epoch FROM timestamp)::float8 FROM events"
                ).format(sql.SQL(", ").join(sql.Identifier(c) for c in names[:-1]))
            out = EventBatcher(self.batch_size)
            with con.cursor(name="forensics_events") as cur:
                cur.itersize = FETCH_ROWS
                cur.execute(select + where, params)
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

    def _add_v1(self, out: EventBatcher, rows: list[tuple]) -> None:
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
            event = adk_v0.row_to_event(row, row["epoch"])
        except adk_v0.RowError as e:
            out.skip(locator, str(e))
            return
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
        exists = con.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'sessions' "
            "AND table_schema = current_schema() AND column_name IN "
            "('app_name', 'user_id', 'id', 'create_time', 'update_time')"
        ).fetchone()[0]
        if exists < 5:
            return None
        fragments: list[sql.Composable] = []
        params: dict[str, Any] = {}
        for column, key, value in (
            ("app_name", "app", self.filters.app),
            ("user_id", "user", self.filters.user),
            ("id", "session", self.filters.session),
        ):
            if value is not None:
                fragments.append(
                    sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(key))
                )
                params[key] = value
        where = (
            (sql.SQL(" WHERE ") + sql.SQL(" AND ").join(fragments)) if fragments else sql.SQL("")
        )
        rows = con.execute(
            sql.SQL(
                "SELECT app_name, user_id, id, extract(epoch FROM create_time)::float8, "
                "extract(epoch FROM update_time)::float8 FROM sessions"
            )
            + where,
            params,
        ).fetchall()
        return pa.Table.from_pylist(
            [
                {"app_name": a, "user_id": u, "session_id": s, "create_time": c, "update_time": t}
                for a, u, s, c, t in rows
            ],
            schema=RAW_SESSION_SCHEMA,
        )
