"""The library API: every question the CLI asks, answered as a polars DataFrame."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from . import queries, store
from .errors import ForensicsError
from .sources.adk_json import AdkJsonSource
from .sources.adk_sqlite import AdkSqliteSource
from .sources.base import Filters


def _frame(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> pl.DataFrame:
    query = queries.load(name)
    relation = con.sql(query.sql, params={k: params.get(k) for k in query.params})
    return pl.from_arrow(relation.to_arrow_table())


def ingest_postgres(
    db: str | Path | None,
    dsn: str,
    filters: Filters | None = None,
    *,
    incremental: bool = True,
    statement_timeout_ms: int = 60_000,
    progress: store.Progress | None = None,
) -> store.IngestResult:
    """Load ADK events from a PostgreSQL DatabaseSessionService database (V0 or V1)."""
    from .sources.adk_postgres import AdkPostgresSource  # psycopg only when it is used

    filters = filters or Filters()
    source = AdkPostgresSource(dsn, filters, statement_timeout_ms=statement_timeout_ms)
    return _ingest(db, source, filters, incremental, progress)


def ingest_sqlite(
    db: str | Path | None,
    path: str | Path,
    filters: Filters | None = None,
    *,
    incremental: bool = True,
    progress: store.Progress | None = None,
) -> store.IngestResult:
    """Load ADK events from a SQLite file (DatabaseSessionService V0/V1 or SqliteSessionService)."""
    filters = filters or Filters()
    return _ingest(db, AdkSqliteSource(Path(path), filters), filters, incremental, progress)


def ingest_json(
    db: str | Path | None,
    paths: Sequence[str | Path],
    *,
    app: str | None = None,
    user: str | None = None,
    session: str | None = None,
    progress: store.Progress | None = None,
) -> store.IngestResult:
    """Load ADK JSON exports: Session objects (camelCase or snake_case), event lists, NDJSON."""
    source = AdkJsonSource([Path(p) for p in paths], app=app, user=user, session=session)
    # recorded in the ledger as what they are: defaults for files that do not say
    defaults = {
        f"default_{k}": v for k, v in (("app", app), ("user", user), ("session", session)) if v
    }
    return _ingest(db, source, Filters(), False, progress, extra=defaults)


def _ingest(db, source, filters: Filters, incremental: bool, progress, extra=None):
    con = store.connect(db)
    try:
        return store.ingest(
            con,
            source,
            filters={**filters.as_dict(), **(extra or {})},
            incremental=incremental,
            progress=progress,
        )
    finally:
        con.close()


def sessions(
    db: str | Path | None = None, *, app: str | None = None, user: str | None = None
) -> pl.DataFrame:
    """One row per session: events, turns, first/last event, errors, measured prompt tokens."""
    with store.connect(db, read_only=True) as con:
        return _frame(con, "sessions", app=app, user=user)


def resolve_session(
    con: duckdb.DuckDBPyConnection, session_id: str, app: str | None = None, user: str | None = None
) -> tuple[str, str, str]:
    """The one (app, user, session) key a session id names; an error lists the choices."""
    keys = con.execute(
        queries.load("session_keys").sql, {"session": session_id, "app": app, "user": user}
    ).fetchall()
    if not keys:
        known = [
            r[0]
            for r in con.execute(
                "SELECT session_id FROM sessions ORDER BY session_id LIMIT 10"
            ).fetchall()
        ]
        raise ForensicsError(
            f"no session {session_id!r} in the store",
            hint=f"known sessions include: {', '.join(known)}"
            if known
            else "the store holds no sessions yet; run `forensics ingest ...`",
        )
    if len(keys) > 1:
        choices = "; ".join(f"--app {a} --user {u}" for a, u, _ in keys)
        raise ForensicsError(
            f"session id {session_id!r} exists in {len(keys)} apps/users",
            hint=f"add one of: {choices}",
        )
    return keys[0]


def events(
    session_id: str,
    db: str | Path | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """The session's events in order: kinds, parts, characters, usage, errors, compaction."""
    with store.connect(db, read_only=True) as con:
        app_name, user_id, sid = resolve_session(con, session_id, app, user)
        return _frame(con, "events", app=app_name, user=user_id, session=sid)


def ingests(db: str | Path | None = None) -> pl.DataFrame:
    """The ingest ledger, newest first."""
    with store.connect(db, read_only=True) as con:
        return _frame(con, "ingests")


def ingest_skips(ingest_id: int, db: str | Path | None = None) -> pl.DataFrame:
    """The rows one ingest skipped (the first few hundred), with locator and reason."""
    with store.connect(db, read_only=True) as con:
        return _frame(con, "ingest_skips", ingest_id=ingest_id)


def _reconstruct(db, session_id: str | None, app: str | None, user: str | None):
    from .analyses import reconstruct

    with store.connect(db, read_only=True) as con:
        if session_id is not None:
            resolve_session(con, session_id, app, user)
        rec = reconstruct(con, session_id)
    if app or user:
        rec.calls = [
            (s, c)
            for s, c in rec.calls
            if (not app or s.app_name == app) and (not user or s.user_id == user)
        ]
        rec.sessions = [
            s
            for s in rec.sessions
            if (not app or s.app_name == app) and (not user or s.user_id == user)
        ]
    return rec


def calls(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    turn: int | None = None,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """Per call: window occupancy (measured, estimated, by role) and cumulative input so far."""
    from .analyses import calls_frame

    return calls_frame(_reconstruct(db, session_id, app, user), turn)


def window(
    session_id: str,
    call_id: str,
    db: str | Path | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """What one call's request contained: each event's parts, in order, with sizes."""
    from .analyses import window_frame

    rec = _reconstruct(db, session_id, app, user)
    try:
        return window_frame(rec, call_id)
    except LookupError:
        known = [c.event.event_id for _, c in rec.calls if c.kind != "summarizer"][:5]
        raise ForensicsError(
            f"no agent call {call_id!r} in session {session_id!r}",
            hint=f"call ids come from `forensics calls {session_id}`"
            + (f", e.g. {', '.join(known)}" if known else ""),
        ) from None


def growth(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    top: int | None = None,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """Tool calls ranked by how much they grew the window, with what re-sending them cost."""
    from .analyses import growth_frame

    frame = growth_frame(_reconstruct(db, session_id, app, user))
    return frame.head(top) if top else frame


def turns(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, error."""
    from .analyses import turns_frame

    return turns_frame(_reconstruct(db, session_id, app, user))


def ratios(db: str | Path | None = None, session_id: str | None = None) -> dict:
    """Per source, the chars-per-token ratio the estimates use: fitted, or the default."""
    return _reconstruct(db, session_id, None, None).ratios


def compaction(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """Per compaction event: its range, what it covers (stored), what the next call sent."""
    from .compaction import audit_ranges

    return audit_ranges(_reconstruct(db, session_id, app, user))


def compaction_sessions(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    threshold_tokens: int | None = None,
    app: str | None = None,
    user: str | None = None,
) -> pl.DataFrame:
    """Per session: the raw window retained after the last range; calls over a threshold."""
    from .compaction import audit_sessions

    return audit_sessions(_reconstruct(db, session_id, app, user), threshold_tokens)


def reconstruction(
    session_id: str | None = None,
    db: str | Path | None = None,
    *,
    app: str | None = None,
    user: str | None = None,
):
    """Every call of the selected sessions with its window sizes: what the frames are built
    from. Build it once when you need several frames (`forensics.analyses.*_frame`)."""
    return _reconstruct(db, session_id, app, user)
