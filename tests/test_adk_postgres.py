"""ADK tables in a real PostgreSQL: same answers as SQLite, read-only, secrets kept."""

from __future__ import annotations

import pickle
from pathlib import Path

import psycopg
import pytest
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.errors import SourceError, TransientSourceError
from forensics.selection import Selection
from forensics.sources.postgres.adk import AdkPostgresSource, where_clause
from forensics.store import Store
from tests.pg import copy_adk_sqlite_to_pg, create_adk_schema

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"
runner = CliRunner()

EVENT_FACTS = ("SELECT app_name, user_id, session_id, event_id, invocation_id, author, epoch, "
               "chars, part_count, kinds, prompt_tokens, candidates_tokens, cached_tokens, "
               "error_code, is_compaction, compaction_start, compaction_end "
               "FROM events ORDER BY ALL")
# previews, and relay sizes of payloads over 8 KB (scaled from their first 8 KB),
# depend on key order: jsonb stores object keys sorted by length
PART_FACTS = ("SELECT * EXCLUDE (app_name, user_id, preview, relay_chars), "
              "CASE WHEN chars <= 8192 THEN relay_chars END FROM parts ORDER BY ALL")


def _facts(db: Path) -> tuple[list, list]:
    with Store.open(db, read_only=True) as con:
        return con.run(EVENT_FACTS), con.run(PART_FACTS)


@pytest.mark.parametrize("sample", ["adk_v1.db", "adk_v0.db"])
def test_postgres_gives_the_same_events_and_sizes_as_sqlite(tmp_path, pg_db, sample):
    copied = copy_adk_sqlite_to_pg(SAMPLES / sample, pg_db)
    from_sqlite = api.ingest_sqlite(tmp_path / "a.duckdb", SAMPLES / sample)
    from_pg = api.ingest_postgres(tmp_path / "b.duckdb", pg_db)
    assert from_pg.rows_loaded == from_sqlite.rows_loaded == copied["events"]
    assert from_pg.rows_skipped == from_sqlite.rows_skipped == 0
    sqlite_events, sqlite_parts = _facts(tmp_path / "a.duckdb")
    pg_events, pg_parts = _facts(tmp_path / "b.duckdb")
    assert pg_events == sqlite_events
    assert pg_parts == sqlite_parts
    again = api.ingest_postgres(tmp_path / "b.duckdb", pg_db)
    assert again.rows_loaded == 0


def test_filters_push_down_in_index_order():
    fragment, params = where_clause(Selection(app="store", user="u'1", session="s",
                                            since=1_761_123_600.0), since=None)
    text = fragment.as_string(None)
    assert text == (' WHERE "app_name" = %(app_name)s AND "user_id" = %(user_id)s AND '
                    '"session_id" = %(session_id)s AND timestamp >= %(since)s')
    assert params["user_id"] == "u'1"
    # the later of --since and the watermark wins
    _, params = where_clause(Selection(since=100.0), since=200.0)
    assert params["since"].timestamp() == pytest.approx(200.0)


def test_a_row_dated_ahead_hides_no_row_written_after_it(tmp_path, pg_db):
    """A row whose timestamp column is in 2100 (a writer's clock, a hostile row) does not
    move the watermark past the ingest's start (pipeline.held_watermark): the next run
    reads the rows written since, and the ahead row again, which the store finds stored.
    The watermark was 2100 before, and every later run read nothing new."""
    copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", pg_db)
    with psycopg.connect(pg_db) as con:
        row = con.execute("SELECT id, app_name, user_id, session_id, invocation_id, "
                          "event_data FROM events ORDER BY timestamp LIMIT 1").fetchone()
        con.execute("UPDATE events SET timestamp = '2100-01-01' WHERE id = %s", [row[0]])
    db = tmp_path / "w.duckdb"
    first = api.ingest_postgres(db, pg_db)
    assert first.watermark is not None and first.watermark < 4_102_444_800  # 2100
    with psycopg.connect(pg_db) as con:  # a later event, written now
        con.execute("INSERT INTO events (id, app_name, user_id, session_id, invocation_id, "
                    "timestamp, event_data) VALUES ('later', %s, %s, %s, %s, now() AT TIME "
                    "ZONE 'UTC', %s)", [*row[1:5], Jsonb(row[5])])  # fmt: skip
    again = api.ingest_postgres(db, pg_db)
    assert again.rows_loaded == 1
    with Store.open(db, read_only=True) as store:
        assert store.run("SELECT count(*) FROM events WHERE event_id = 'later'")[0][0] == 1


def test_filters_select_sessions_on_the_server(tmp_path, pg_db):
    copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", pg_db)
    with psycopg.connect(pg_db) as con:
        session, count = con.execute(
            "SELECT session_id, count(*) FROM events GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
    result = api.ingest_postgres(tmp_path / "f.duckdb", pg_db, Selection(session=session))
    assert result.rows_read == result.rows_loaded == count


def test_the_connection_is_read_only_and_bounded(pg_db):
    create_adk_schema(pg_db, "1")
    source = AdkPostgresSource(pg_db, statement_timeout_ms=1234)
    with source.server.connect() as con:
        assert con.execute("SHOW statement_timeout").fetchone()[0] == "1234ms"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            con.execute("CREATE TABLE intruder (a int)")


def test_ingest_writes_nothing_to_the_source(tmp_path, pg_db):
    copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", pg_db)
    probe = ("SELECT sum(n_tup_ins + n_tup_upd + n_tup_del), count(*) "
             "FROM pg_stat_user_tables")
    with psycopg.connect(pg_db) as con:
        con.execute("SELECT pg_stat_force_next_flush()")
        before = con.execute(probe).fetchone()
    api.ingest_postgres(tmp_path / "f.duckdb", pg_db)
    with psycopg.connect(pg_db) as con:
        con.execute("SELECT pg_stat_clear_snapshot()")
        assert con.execute(probe).fetchone() == before


def test_a_statement_past_the_timeout_is_a_clear_error(tmp_path, pg_db):
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("CREATE VIEW events AS SELECT 'a'::text AS id, 'a'::text AS app_name, "
                    "'u'::text AS user_id, 's'::text AS session_id, 'i'::text AS invocation_id, "
                    "now()::timestamp AS timestamp, '{}'::jsonb AS event_data "
                    "FROM pg_sleep(3)")
    with pytest.raises(TransientSourceError) as error:
        api.ingest_postgres(tmp_path / "f.duckdb", pg_db, statement_timeout_ms=200)
    assert "ran past statement_timeout (200 ms)" in str(error.value)
    assert "--statement-timeout" in error.value.hint


def test_unknown_layouts_are_named(tmp_path, pg_db):
    with pytest.raises(SourceError, match="no table 'events' in schema 'public'"):
        api.ingest_postgres(tmp_path / "f.duckdb", pg_db)
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("CREATE TABLE events (id text, body text)")
    layout = r"table 'events' is neither ADK layout: .* \(columns: id, body\)"
    with pytest.raises(SourceError, match=layout):
        api.ingest_postgres(tmp_path / "f.duckdb", pg_db)
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("ALTER TABLE events ADD COLUMN event_data jsonb")
    resembles = r"has event_data like ADK schema V1 but lacks app_name, user_id, session_id"
    with pytest.raises(SourceError, match=resembles):
        api.ingest_postgres(tmp_path / "f.duckdb", pg_db)


def _with_password(dsn: str, user: str, password: str) -> str:
    return dsn.replace("postgresql://postgres@", f"postgresql://{user}:{password}@")


def test_a_password_never_reaches_output_ledger_or_store(tmp_path, pg_db):
    password = "Pw-7f3c1e-never-shown"
    copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", pg_db)
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute(f"CREATE ROLE reader LOGIN PASSWORD '{password}'")
        con.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    dsn = _with_password(pg_db, "reader", password)
    assert password in dsn
    db = tmp_path / "f.duckdb"
    outputs = []
    for args in (["ingest", "adk-postgres", dsn], ["ingest", "adk-postgres", dsn, "-f", "json"],
                 ["ingests"], ["ingests", "-f", "json"], ["sessions", "-f", "csv"]):
        result = runner.invoke(app, [*args, "--db", str(db)])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert "reader@" in outputs[0]
    assert not any(password in out for out in outputs)
    for path in tmp_path.iterdir():
        assert password.encode() not in path.read_bytes(), path


def test_an_unreachable_server_is_a_clear_error_without_the_password(tmp_path):
    dsn = "postgresql://ann:Pw-unreachable-9@127.0.0.1:9/adk"
    result = runner.invoke(app, ["ingest", "adk-postgres", dsn, "--db",
                                 str(tmp_path / "f.duckdb")])
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("Error: cannot connect to postgresql://ann@127.0.0.1:9/adk: ")
    assert "Pw-unreachable-9" not in result.output
    assert "Hint: check host, port and credentials" in result.stderr


class Hostile:
    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.target}",))


def test_a_hostile_v0_pickle_is_skipped_and_its_neighbours_loaded(tmp_path, pg_db):
    from google.adk.events.event_actions import EventActions

    create_adk_schema(pg_db, "0")
    target = tmp_path / "pwned"
    good = pickle.dumps(EventActions(transfer_to_agent="orders_specialist"))
    with psycopg.connect(pg_db) as con:
        con.execute("INSERT INTO sessions (app_name, user_id, id, state, create_time, "
                    "update_time) VALUES ('store', 'u1', 's1', '{}', now(), now())")
        for i, actions in enumerate([good, pickle.dumps(Hostile(target)), good]):
            con.execute(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, author, "
                "actions, timestamp, content) VALUES (%s, 'store', 'u1', 's1', 'inv', 'agent', "
                "%s, now() + %s * interval '1 second', %s)",
                (f"e{i}", actions, i, '{"role": "model", "parts": [{"text": "hi"}]}'))
    result = api.ingest_postgres(tmp_path / "f.duckdb", pg_db)
    assert not target.exists()
    assert result.rows_loaded == 2
    assert [s.locator for s in result.skips] == ["events row id='e1' session='s1'"]
    assert "os.system" in result.skips[0].reason or "posix.system" in result.skips[0].reason
    with Store.open(tmp_path / "f.duckdb", read_only=True) as con:
        assert con.run("SELECT DISTINCT transfer_to_agent FROM events") == [("orders_specialist",)]


def test_options_in_the_dsn_are_kept(tmp_path, pg_db):
    """A search_path given in the DSN reaches the server (the timeout is set apart)."""
    with psycopg.connect(pg_db, autocommit=True) as con:
        con.execute("CREATE SCHEMA adk")
    dsn = pg_db + "?options=-csearch_path%3Dadk"
    copied = copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", dsn)
    with psycopg.connect(pg_db) as con:
        assert con.execute("SELECT count(*) FROM adk.events").fetchone()[0] == copied["events"]
    source = AdkPostgresSource(dsn, statement_timeout_ms=4321)
    with source.server.connect() as con:
        assert con.execute("SHOW statement_timeout").fetchone()[0] == "4321ms"
        assert con.execute("SELECT current_schema()").fetchone()[0] == "adk"
    assert api.ingest_postgres(tmp_path / "f.duckdb", dsn).rows_loaded == copied["events"]


def test_the_reconstruction_is_the_same_from_postgres(tmp_path, pg_db):
    copy_adk_sqlite_to_pg(SAMPLES / "adk_v1.db", pg_db)
    api.ingest_sqlite(tmp_path / "a.duckdb", SAMPLES / "adk_v1.db")
    api.ingest_postgres(tmp_path / "b.duckdb", pg_db)
    columns = ["call_id", "kind", "turn", "occupancy_measured", "occupancy_estimated",
               "cumulative_input_measured", "cumulative_input_estimated", "by_role"]
    assert api.calls(tmp_path / "b.duckdb").select(columns).equals(
        api.calls(tmp_path / "a.duckdb").select(columns))
    assert api.growth(tmp_path / "b.duckdb").equals(api.growth(tmp_path / "a.duckdb"))
