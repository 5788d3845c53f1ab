"""The lookups `forensics plan` explains: a catalogue of forensic questions, and the loader's
own statements, taken from the loader itself (`AdkPostgresSource.events_statement`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.sql import SQL

from .. import sql as queries
from ..selection import Selection
from ..sources.postgres.adk import AdkPostgresSource, where_clause

CATALOGUE = (
    "plan/by_session",
    "plan/session_events",
    "plan/compaction_range",
    "plan/by_invocation",
    "plan/time_range",
)
TIME_RANGE_DEFAULT = timedelta(days=30)  # the founding document's 30-day count
COMPACTION_RANGE = timedelta(hours=1)


@dataclass(frozen=True)
class Lookup:
    name: str
    kind: str  # catalogue | loader | query
    sql: str  # as passed to psycopg: %(name)s placeholders
    params: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def _naive_utc(epoch: float) -> datetime:
    # ADK stores naive UTC timestamps; bound the way the loader binds them
    return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)


def _sample(con: psycopg.Connection, selection: Selection, notes: list[str]) -> dict[str, Any]:
    """Key values for the catalogue: the selection', else those of the first matching event."""
    keys = Selection(app=selection.app, user=selection.user, session=selection.session)
    where, params = where_clause(keys, None)
    row = con.execute(
        SQL('SELECT app_name, user_id, session_id, invocation_id, "timestamp" FROM events')
        + where
        + SQL(" LIMIT 1"),
        params,
    ).fetchone()
    if row is None:
        notes.append(
            "no event matches the selection (or events is empty): the session and invocation "
            "lookups use placeholder values"
        )
        row = (None, None, None, None, None)
    app, user, session, invocation, ts = row
    ts = ts or _naive_utc(selection.since or datetime.now(UTC).timestamp())
    return {
        "app_name": selection.app or app or "app",
        "user_id": selection.user or user or "user",
        "session_id": selection.session or session or "session",
        "invocation_id": invocation or "invocation",
        "timestamp": ts,
    }


def catalogue(con: psycopg.Connection, selection: Selection, notes: list[str]) -> list[Lookup]:
    sample = _sample(con, selection, notes)
    until = _naive_utc(selection.until) if selection.until is not None else None
    since = _naive_utc(selection.since) if selection.since is not None else None
    until = until or datetime.now(UTC).replace(tzinfo=None)
    since = since or until - TIME_RANGE_DEFAULT
    # a compaction range is an hour of the sample session; the rest use the time-only range
    ranges = {
        "plan/compaction_range": (sample["timestamp"], sample["timestamp"] + COMPACTION_RANGE)
    }
    out = []
    for name in CATALOGUE:
        query = queries.load(name)
        first, last = ranges.get(name, (since, until))
        values = {**sample, "since": first, "until": last}
        params = {p: values[p] for p in query.params}
        out.append(Lookup(name.removeprefix("plan/"), "catalogue", _psycopg_text(query), params))
    return out


def _psycopg_text(query: queries.Query) -> str:
    """A queries/ file's statement with its `$name` parameters as psycopg's `%(name)s`."""
    body = "\n".join(
        line for line in query.sql.splitlines()[3:] if not line.startswith("--")
    ).strip()
    if not query.params:  # sent without parameters: psycopg leaves `%` alone
        return body
    return queries.PARAM.sub(r"%(\1)s", body.replace("%", "%%"))


def loader_lookups(
    con: psycopg.Connection, source: AdkPostgresSource, layout: str, columns: list[str]
) -> list[Lookup]:
    """The statements `AdkPostgresSource.batches` sends, built by the source itself."""
    statement, params, _ = source.events_statement(layout, columns, None)
    out = [Lookup("loader_events", "loader", statement.as_string(con), params)]
    sessions = source.sessions_statement(con)
    if sessions is not None:
        session_statement, session_params = sessions
        out.append(
            Lookup("loader_sessions", "loader", session_statement.as_string(con), session_params)
        )
    return out
