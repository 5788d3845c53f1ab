"""`forensics.plan` on a real PostgreSQL holding ADK's V1 schema and 150,000 events.

The planner's choices depend on table size and statistics, so the module fills
one database with generated events (tests/benchmarks/generate_pg_events.py,
which ends with VACUUM ANALYZE) and every test reads plans from it.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from forensics import plan
from forensics.errors import MissingRelationError, TransientSourceError
from forensics.plan import advice
from forensics.selection import Selection
from forensics.sources.postgres.adk import where_clause
from tests.benchmarks import generate_pg_events
from tests.pg import PgServer, create_adk_schema

COMPOSITE_INDEX = "idx_events_app_user_session_ts_id"
EVENTS = 150_000
# One day inside the generated month: selective enough that an index on timestamp pays.
DAY = Selection(
    since=generate_pg_events.BASE_TS + 9 * 86400, until=generate_pg_events.BASE_TS + 10 * 86400
)
ENV_REQUIRE_HYPOPG = "FORENSICS_REQUIRE_HYPOPG"


@pytest.fixture(scope="module")
def plan_db(pg_server: PgServer) -> Iterator[str]:
    name = f"t_plan_{uuid.uuid4().hex[:8]}"
    dsn = pg_server.create_database(name)
    try:
        generate_pg_events.generate(
            dsn, events=EVENTS, sessions=3_000, big_fraction=0.0, verbose=False
        )
        with psycopg.connect(dsn, autocommit=True) as con:
            # test setup on the test's own database: autovacuum must not touch the
            # counters the no-writes test compares
            for table in ("events", "sessions", "app_states", "user_states"):
                con.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
            # ANALYZE samples 300 x the statistics target rows at random: with a target
            # that covers every row, the statistics are the same on every run (the test
            # server runs without autovacuum, tests/pg.py, so the visibility map is too)
            con.execute("SET default_statistics_target = 1000")
            con.execute("ANALYZE events")
            con.execute("ANALYZE sessions")
            # the visibility map is set by whichever VACUUM (the generator's) found no
            # older snapshot open, which depends on what else runs: measured in CI, a
            # table whose pages are all-visible gets an Index Only Scan where a freshly
            # loaded one gets a sequential scan. The planner reads only relallvisible:
            # fixed at 0, the state of a table no VACUUM has reached yet
            con.execute(
                "UPDATE pg_class SET relallvisible = 0 "
                "WHERE relname IN ('events', 'sessions') AND relnamespace = 'public'::regnamespace"
            )
        yield dsn
    finally:
        pg_server.drop_database(name)


def by_name(frame) -> dict[str, dict]:
    return {row["name"]: row for row in frame.to_dicts()}


# ---------------------------------------------------------------------------
# What the plans say
# ---------------------------------------------------------------------------


def test_time_only_range_is_a_sequential_scan_with_a_suggested_index(plan_db):
    rows = by_name(plan.plan_frame(plan_db, selection=DAY))
    time_range = rows["time_range"]
    # on failure, say which plan the server chose (the flake seen once under full load)
    assert time_range["seq_scan_relations"] == ["events"], (time_range["top_node"],
                                                            time_range["scans"])
    assert time_range["uses_index"] is False and time_range["indexes_used"] == []
    assert time_range["top_node"].endswith("Aggregate")
    scans = json.loads(time_range["scans"])
    assert [s["node_type"] for s in scans] in (["Seq Scan"], ["Parallel Seq Scan"])
    assert time_range["total_cost"] > 10_000
    assert json.loads(time_range["relation_rows"])["events"] > 0.9 * EVENTS
    assert time_range["suggested_index"] == (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_events_timestamp"
        ' ON public.events ("timestamp")'
    )
    assert "Seq Scan on events (1" in time_range["advice"]
    assert time_range["suggested_index"] in time_range["advice"]
    # the HypoPG status is said plainly, whichever it is on this server
    assert (
        "CREATE EXTENSION hypopg would be needed; not done: read-only" in time_range["advice"]
        or "HypoPG is absent from this server" in time_range["advice"]
    )
    assert time_range["hypothetical_cost"] is None
    # the loader with only a time filter takes the same path
    assert rows["loader_events"]["seq_scan_relations"] == ["events"]
    assert rows["loader_events"]["suggested_index"] == time_range["suggested_index"]


def test_session_lookups_use_adks_composite_index(plan_db):
    rows = by_name(plan.plan_frame(plan_db))
    for name in ("by_session", "session_events", "compaction_range"):
        assert rows[name]["indexes_used"] == [COMPOSITE_INDEX], name
        assert rows[name]["uses_index"] is True
        assert rows[name]["seq_scan_relations"] == []
        assert rows[name]["suggested_index"] is None
        assert rows[name]["advice"] == f"uses index {COMPOSITE_INDEX}"
    assert rows["session_events"]["top_node"] == "Index Scan"  # the index gives the order
    invocation = rows["by_invocation"]
    assert invocation["seq_scan_relations"] == ["events"]
    assert "(invocation_id)" in invocation["suggested_index"]
    # the default time-only range (the 30 days before now) lies past the data, so the
    # planner walks the whole composite index instead: said so, and the same index suggested
    time_range = rows["time_range"]
    assert time_range["indexes_used"] == [COMPOSITE_INDEX]
    assert "leading column app_name is not constrained" in time_range["advice"]
    assert time_range["suggested_index"].endswith('public.events ("timestamp")')
    # without filters the loader reads everything, by design: no index to suggest
    assert rows["loader_events"]["suggested_index"] is None
    assert "with no condition" in rows["loader_events"]["advice"]
    params = json.loads(rows["by_session"]["params"])
    assert set(params) == {"app_name", "user_id", "session_id"}


def test_the_loader_lookup_is_the_statement_ingest_sends_with_values_bound(plan_db):
    app = 'o\'brien "quoted" %s; DROP TABLE events --'
    filters = Selection(app=app, user="u'1", since=DAY.since)
    report = plan.plan_report(plan_db, selection=filters)
    rows = by_name(report.lookups)
    loader = rows["loader_events"]
    where, params = where_clause(filters, None)
    with psycopg.connect(plan_db) as con:
        assert loader["sql"].endswith(where.as_string(con))
    assert json.loads(loader["params"])["app_name"] == app
    assert loader["indexes_used"] == [COMPOSITE_INDEX]
    assert json.loads(rows["loader_sessions"]["params"]) == {"app": app, "user": "u'1"}
    assert json.loads(rows["by_session"]["params"])["app_name"] == app
    assert report.notes and "placeholder values" in report.notes[0]
    assert set(report.lookups.columns) == set(plan.SCHEMA)


def test_indexes_on_events_and_sessions(plan_db):
    indexes = plan.plan_indexes(plan_db)
    assert set(zip(indexes["table"], indexes["name"], strict=True)) == {
        ("events", "events_pkey"),
        ("events", COMPOSITE_INDEX),
        ("sessions", "sessions_pkey"),
    }
    definition = dict(zip(indexes["name"], indexes["definition"], strict=True))[COMPOSITE_INDEX]
    assert '(app_name, user_id, session_id, "timestamp" DESC, id DESC)' in definition


def test_condition_columns_put_equality_before_ranges():
    condition = (
        "((\"timestamp\" >= '2026-09-10 00:00:00'::timestamp without time zone) AND "
        "((app_name)::text = 'it''s user_id'::text))"
    )
    columns = ["id", "app_name", "user_id", "timestamp"]
    assert advice.condition_columns(condition, columns) == [
        ("app_name", "eq"),
        ("timestamp", "range"),
    ]


# ---------------------------------------------------------------------------
# Nothing is written
# ---------------------------------------------------------------------------


def _wait_for_other_backends(con: psycopg.Connection) -> None:
    """A backend flushes its statistics before it leaves pg_stat_activity."""
    deadline = time.monotonic() + 10
    while con.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
    ).fetchone()[0]:
        assert time.monotonic() < deadline, "another session stays connected"
        time.sleep(0.05)


def snapshot(dsn: str) -> dict[str, list]:
    """Every sign of a write: tuple counters, relations, extensions, indexes."""
    with psycopg.connect(dsn, autocommit=True) as con:
        _wait_for_other_backends(con)
        con.execute("SELECT pg_stat_clear_snapshot()")
        queries = {
            "tables": "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, "
            "n_live_tup, n_dead_tup FROM pg_stat_user_tables ORDER BY relname",
            "database": "SELECT tup_inserted, tup_updated, tup_deleted, conflicts, temp_files "
            "FROM pg_stat_database WHERE datname = current_database()",
            "relations": "SELECT n.nspname, c.relname, c.relkind FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast_temp%' "
            "ORDER BY 1, 2",
            "extensions": "SELECT extname, extversion FROM pg_extension ORDER BY 1",
            "indexes": "SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes "
            "ORDER BY 1, 2, 3",
        }
        return {key: con.execute(query).fetchall() for key, query in queries.items()}


def test_the_snapshot_notices_a_write(pg_db):
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("CREATE TABLE t (x int)")
    before = snapshot(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("INSERT INTO t VALUES (1)")
    after = snapshot(pg_db)
    assert before["tables"] != after["tables"]
    assert before["database"] != after["database"]


def test_nothing_is_written_even_with_analyze(plan_db, tmp_path):
    query = tmp_path / "mine.sql"
    query.write_text("SELECT count(*) FROM events WHERE invocation_id LIKE 'e-%';\n")
    before = snapshot(plan_db)
    plain = plan.plan_frame(plan_db, selection=DAY, extra_queries=[query])
    analyzed = plan.plan_frame(plan_db, selection=DAY, analyze=True, extra_queries=[query])
    after = snapshot(plan_db)
    assert after == before
    assert plain["actual_ms"].null_count() == len(plain)
    assert analyzed["actual_ms"].null_count() == 0
    assert (analyzed["actual_ms"] >= 0).all()
    rows = by_name(analyzed)
    assert rows["query:mine.sql"]["actual_rows"] == 1  # one count(*) row
    # the same plans, measured or not
    assert analyzed["top_node"].to_list() == plain["top_node"].to_list()


# ---------------------------------------------------------------------------
# HypoPG
# ---------------------------------------------------------------------------


def test_hypopg_shows_the_plan_with_the_suggested_index_without_building_it(plan_db):
    with psycopg.connect(plan_db, autocommit=True) as con:
        available = con.execute(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'hypopg'"
        ).fetchone()[0]
    if not available:
        reason = (
            "HypoPG is not available on the test server (Debian: apt-get install "
            "postgresql-<major>-hypopg)"
        )
        if os.environ.get(ENV_REQUIRE_HYPOPG, "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"{ENV_REQUIRE_HYPOPG}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    with psycopg.connect(plan_db, autocommit=True) as con:
        con.execute("CREATE EXTENSION hypopg")  # setup on the test's own database
    try:
        before = snapshot(plan_db)
        report = plan.plan_report(plan_db, selection=DAY)
        after = snapshot(plan_db)
    finally:
        with psycopg.connect(plan_db, autocommit=True) as con:
            con.execute("DROP EXTENSION hypopg")
    assert after == before
    assert report.hypopg == "installed"
    rows = by_name(report.lookups)
    for name in ("time_range", "by_invocation"):
        row = rows[name]
        assert row["seq_scan_relations"] == ["events"], (name, row["top_node"], row["scans"])
        assert row["hypothetical_uses_index"] is True, name
        assert row["hypothetical_cost"] < row["total_cost"], name
        assert "as a hypothetical index (HypoPG) the cost would be" in row["advice"]
    # the hypothetical index left no trace in the plans that follow
    assert rows["loader_events"]["seq_scan_relations"] == ["events"]
    assert rows["by_session"]["hypothetical_cost"] is None


# ---------------------------------------------------------------------------
# --query files
# ---------------------------------------------------------------------------


def test_a_select_file_is_explained(plan_db, tmp_path):
    query = tmp_path / "by_author.sql"
    query.write_text(
        "-- events of one turn; a ; in a comment\n"
        "SELECT id, ';' AS semi, $$ ; $$ AS dollar\n"
        "FROM events WHERE invocation_id = 'e-x' /* ; */ ;\n"
        "-- trailing comment\n"
    )
    rows = by_name(plan.plan_frame(plan_db, extra_queries=[query]))
    row = rows["query:by_author.sql"]
    assert row["kind"] == "query"
    assert row["seq_scan_relations"] == ["events"]
    assert "(invocation_id)" in row["suggested_index"]
    assert row["sql"].endswith("WHERE invocation_id = 'e-x'")  # up to its last token


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("DELETE FROM events", "refused: a DELETE statement"),
        ("SELECT 1; DELETE FROM events;", "refused: holds 2 statements, not one"),
        ("SELECT 1;\nSELECT 2", "refused: holds 2 statements, not one"),
        ("WITH d AS (DELETE FROM events RETURNING id) SELECT count(*) FROM d", "contains DELETE"),
        ("SELECT * INTO copy_of_events FROM events", "contains INTO"),
        ("SELECT * FROM events FOR UPDATE", "contains UPDATE"),
        ("SELECT * FROM events FOR SHARE", "contains FOR SHARE"),
        ("-- nothing here\n", "holds no SQL statement"),
        ("SELECT 'unterminated", "unterminated ' quote"),
    ],
)
def test_a_file_that_is_not_one_select_is_refused_naming_the_file(plan_db, tmp_path, text, reason):
    query = tmp_path / "bad.sql"
    query.write_text(text)
    with pytest.raises(plan.QueryFileError) as caught:
        plan.plan_frame(plan_db, extra_queries=[query])
    assert str(caught.value).startswith(f"query file {query}")
    assert reason in str(caught.value)
    with psycopg.connect(plan_db) as con:
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == EVENTS


def test_a_file_postgresql_cannot_plan_is_named(plan_db, tmp_path):
    query = tmp_path / "typo.sql"
    query.write_text("SELECT no_such_column FROM events")
    with pytest.raises(plan.QueryFileError, match=r"typo\.sql: PostgreSQL cannot plan it: .*"):
        plan.plan_frame(plan_db, extra_queries=[query])


def test_a_refused_file_is_refused_before_connecting(tmp_path):
    query = tmp_path / "drop.sql"
    query.write_text("DROP TABLE events")
    with pytest.raises(plan.QueryFileError, match="drop.sql: refused: a DROP statement"):
        plan.plan_frame("postgresql://nobody@127.0.0.1:1/none", extra_queries=[query])


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_an_unreachable_server_is_transient_and_keeps_the_password_out(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dsn = f"postgresql://forensics:s3cret-pw@127.0.0.1:{port}/adk?connect_timeout=2"
    with pytest.raises(TransientSourceError) as caught:
        plan.plan_frame(dsn)
    assert "cannot connect to postgresql://forensics@127.0.0.1" in str(caught.value)
    assert "s3cret-pw" not in str(caught.value) and "s3cret-pw" not in str(caught.value.hint)


def test_a_database_without_events_is_named(pg_db):
    with pytest.raises(MissingRelationError, match="no table 'events' in schema 'public'"):
        plan.plan_frame(pg_db)
    with pytest.raises(MissingRelationError, match="not an ADK session database"):
        plan.plan_indexes(pg_db)


def test_an_empty_v0_database_is_planned_with_placeholder_values(pg_db):
    create_adk_schema(pg_db, "0")
    report = plan.plan_report(pg_db)
    assert report.layout == "v0"
    assert "placeholder values" in report.notes[0]
    loader = by_name(report.lookups)["loader_events"]
    assert '"actions"' in loader["sql"] and "event_data" not in loader["sql"]
    assert len(report.lookups) == len(plan.CATALOGUE) + 2


# ---------------------------------------------------------------------------
# the advice on JSON keys, and HypoPG as the judge of a suggestion
# ---------------------------------------------------------------------------


def test_a_json_key_filter_gets_an_expression_index_not_one_on_the_document(plan_db, tmp_path):
    query = tmp_path / "by_json_author.sql"
    query.write_text("SELECT id FROM events WHERE event_data->>'author' = 'orders_agent'")
    row = by_name(plan.plan_frame(plan_db, extra_queries=[query]))["query:by_json_author.sql"]
    assert row["seq_scan_relations"] == ["events"]
    suggested = row["suggested_index"] or ""
    assert "((event_data ->> 'author'::text))" in suggested, row["advice"]
    assert "(event_data)" not in suggested
    assert "idx_events_event_data_author" in suggested


def test_with_hypopg_only_an_index_that_helps_is_suggested(plan_db, tmp_path):
    with psycopg.connect(plan_db, autocommit=True) as con:
        available = con.execute(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'hypopg'"
        ).fetchone()[0]
    if not available:
        if os.environ.get(ENV_REQUIRE_HYPOPG, "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"{ENV_REQUIRE_HYPOPG}=1 but HypoPG is not available", pytrace=False)
        pytest.skip("HypoPG is not available on the test server")
    query = tmp_path / "not_user.sql"
    # nearly every event matches: the planner reads the table whatever index exists
    query.write_text("SELECT id FROM events WHERE invocation_id <> 'nobody-at-all'")
    with psycopg.connect(plan_db, autocommit=True) as con:
        con.execute("CREATE EXTENSION hypopg")  # setup on the test's own database
    try:
        rows = by_name(plan.plan_frame(plan_db, extra_queries=[query]))
    finally:
        with psycopg.connect(plan_db, autocommit=True) as con:
            con.execute("DROP EXTENSION hypopg")
    row = rows["query:not_user.sql"]
    assert row["seq_scan_relations"] == ["events"]
    assert row["suggested_index"] is None, row["advice"]
    assert "and one would not help: as a hypothetical index (HypoPG)" in row["advice"]
    assert rows["time_range"]["suggested_index"]  # one that helps is still suggested
