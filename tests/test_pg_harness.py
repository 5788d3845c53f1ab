"""The PostgreSQL test harness itself: the server, ADK's schema, and the SQLite copy."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import psycopg
import pytest

from tests.pg import (
    copy_adk_sqlite_to_pg,
    create_adk_schema,
    sqlalchemy_url,
    sqlite_adk_version,
    with_dbname,
)

pytestmark = pytest.mark.postgres

APP, USER, SESSION = "harness_app", "user-1", "session-1"


def test_server_answers(pg_server, pg_db):
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert pg_db.startswith("postgresql://")
    assert pg_server.dsn("other").rsplit("/", 1)[1] == "other"


def test_pg_db_is_fresh_per_test(pg_db):
    with psycopg.connect(pg_db) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)


def test_with_dbname_keeps_server_and_credentials():
    assert (
        with_dbname("host=127.0.0.1 port=5433 user=u password=p dbname=a", "b")
        == "postgresql://u:p@127.0.0.1:5433/b"
    )
    assert with_dbname("postgresql://u@h:1/a?sslmode=disable", "b") == (
        "postgresql://u@h:1/b?sslmode=disable"
    )
    assert sqlalchemy_url("postgresql://u@h:1/b").startswith("postgresql+psycopg://u@h:1/b")


def _tables_and_indexes(dsn: str) -> tuple[set[str], set[str]]:
    with psycopg.connect(dsn) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            )
        }
    return tables, indexes


def _adk_version(dsn: str) -> str:
    from google.adk.sessions.migration import _schema_check_utils

    return _schema_check_utils.get_db_schema_version(sqlalchemy_url(dsn))


def test_create_adk_schema_v1(pg_db):
    create_adk_schema(pg_db, "1")
    create_adk_schema(pg_db, "1")  # idempotent
    tables, indexes = _tables_and_indexes(pg_db)
    assert {"sessions", "events", "app_states", "user_states", "adk_internal_metadata"} <= tables
    assert "idx_events_app_user_session_ts_id" in indexes
    with psycopg.connect(pg_db) as conn:
        types = dict(
            conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_name = 'events'"
            ).fetchall()
        )
        meta = conn.execute("SELECT key, value FROM adk_internal_metadata").fetchall()
    assert types["event_data"] == "jsonb"
    assert types["timestamp"] == "timestamp without time zone"
    assert meta == [("schema_version", "1")]
    assert _adk_version(pg_db) == "1"


def test_create_adk_schema_v0(pg_db):
    create_adk_schema(pg_db, "0")
    tables, indexes = _tables_and_indexes(pg_db)
    assert {"sessions", "events", "app_states", "user_states"} <= tables
    assert "adk_internal_metadata" not in tables
    assert "idx_events_app_user_session_ts_id" in indexes
    assert _adk_version(pg_db) == "0"


# ---------------------------------------------------------------------------
# SQLite written by ADK -> PostgreSQL -> read back by ADK
# ---------------------------------------------------------------------------


def _events():
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    t0 = time.time() - 60
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=120,
        candidates_token_count=30,
        total_token_count=150,
        cached_content_token_count=64,
    )
    return [
        Event(
            invocation_id="e-1",
            author="user",
            timestamp=t0 + 1,
            content=types.Content(role="user", parts=[types.Part(text="How many orders?")]),
        ),
        Event(
            invocation_id="e-1",
            author="analyst",
            timestamp=t0 + 2,
            usage_metadata=usage,
            content=types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(
                            id="adk-call-1", name="run_sql", args={"query": "select 1"}
                        )
                    )
                ],
            ),
        ),
        Event(
            invocation_id="e-1",
            author="analyst",
            timestamp=t0 + 3,
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="adk-call-1",
                            name="run_sql",
                            response={"status": "success", "data": [{"n": 42}]},
                        )
                    )
                ],
            ),
        ),
        Event(
            invocation_id="e-1",
            author="analyst",
            timestamp=t0 + 4,
            usage_metadata=usage,
            actions=EventActions(state_delta={"last_answer": 42, "user:seen": True}),
            content=types.Content(role="model", parts=[types.Part(text="There are 42 orders.")]),
        ),
    ]


async def _write_adk_sqlite(db_path: Path) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    async with DatabaseSessionService(f"sqlite+aiosqlite:///{db_path}") as svc:
        session = await svc.create_session(
            app_name=APP, user_id=USER, session_id=SESSION, state={"topic": "orders"}
        )
        for event in _events():
            await svc.append_event(session, event)
        await svc.create_session(app_name=APP, user_id="user-2", session_id="empty")


async def _read_adk(url: str):
    from google.adk.sessions.database_session_service import DatabaseSessionService

    async with DatabaseSessionService(url) as svc:
        session = await svc.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        empty = await svc.get_session(app_name=APP, user_id="user-2", session_id="empty")
    return session, empty


def _sqlite_counts(db_path: Path) -> dict[str, int]:
    con = sqlite3.connect(db_path)
    try:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608
            for t in ("sessions", "events", "app_states", "user_states")
        }
    finally:
        con.close()


def _pg_counts(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608
            for t in ("sessions", "events", "app_states", "user_states")
        }


def _dump(session) -> list[dict]:
    return [e.model_dump(mode="json") for e in session.events]


def _check_copy_roundtrip(db_path: Path, dsn: str, version: str) -> None:
    assert sqlite_adk_version(db_path) == version
    copied = copy_adk_sqlite_to_pg(db_path, dsn)
    assert copied == _sqlite_counts(db_path) == _pg_counts(dsn)
    assert copied["events"] == len(_events())
    assert _adk_version(dsn) == version

    from_sqlite, _ = asyncio.run(_read_adk(f"sqlite+aiosqlite:///{db_path}"))
    from_pg, empty = asyncio.run(_read_adk(sqlalchemy_url(dsn)))
    assert from_pg is not None and empty is not None
    assert empty.events == []
    assert [e.id for e in from_pg.events] == [e.id for e in from_sqlite.events]
    assert _dump(from_pg) == _dump(from_sqlite)
    assert from_pg.state == from_sqlite.state
    assert from_pg.state["topic"] == "orders" and from_pg.state["user:seen"] is True
    assert from_pg.last_update_time == pytest.approx(from_sqlite.last_update_time, abs=1e-6)


def test_copy_v1_sqlite_is_adk_readable(pg_db, tmp_path):
    db_path = tmp_path / "adk_v1.db"
    asyncio.run(_write_adk_sqlite(db_path))
    _check_copy_roundtrip(db_path, pg_db, "1")
    from_pg, _ = asyncio.run(_read_adk(sqlalchemy_url(pg_db)))
    parts = [p for e in from_pg.events for p in e.content.parts]
    assert parts[1].function_call.args == {"query": "select 1"}
    assert parts[2].function_response.response["data"] == [{"n": 42}]
    assert from_pg.events[1].usage_metadata.cached_content_token_count == 64


def test_copy_v0_sqlite_is_adk_readable(pg_db, tmp_path):
    from google.adk.sessions.schemas import v0
    from sqlalchemy import create_engine

    # ADK writes V0 into a database whose events table already has that layout.
    db_path = tmp_path / "adk_v0.db"
    engine = create_engine(f"sqlite:///{db_path}")
    v0.Base.metadata.create_all(engine)
    engine.dispose()
    asyncio.run(_write_adk_sqlite(db_path))
    _check_copy_roundtrip(db_path, pg_db, "0")
    with psycopg.connect(pg_db) as conn:
        kind = conn.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_name = 'events' AND column_name = 'actions'"
        ).fetchone()
    assert kind == ("bytea",)
