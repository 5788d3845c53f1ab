"""ADK SQLite files (and Session JSON) holding values a writer never should: each bad row a
skip that says why, a time that is no time unknown, a row dated ahead never the watermark;
the good rows beside them loaded."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.cli.common import Format
from forensics.cli.ingest import report_ingest
from forensics.store import IngestResult

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
EVENTS = 47  # in each sample file
runner = CliRunner()


@contextmanager
def _writing(path: Path) -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(path)
    try:
        yield con
        con.commit()
    finally:
        con.close()


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(SAMPLES / name, target)
    return target


def _relax(con: sqlite3.Connection, table: str) -> None:
    """The table without its NOT NULL constraints (a hand-edited file's)."""
    cols = [(r[1], r[2]) for r in con.execute(f"PRAGMA table_info({table})")]
    con.execute(f"CREATE TABLE _t ({', '.join(f'{c} {t}' for c, t in cols)})")
    con.execute(f"INSERT INTO _t SELECT * FROM {table}")  # noqa: S608 (the test's name)
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE _t RENAME TO {table}")


def _nth_row(con: sqlite3.Connection, n: int) -> tuple[int, str]:
    rowid, event_id = con.execute(
        "SELECT rowid, id FROM events ORDER BY timestamp, id LIMIT 1 OFFSET ?", (n,)
    ).fetchone()
    return rowid, event_id


def _rows(db: Path, query: str, *params: object) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(query, list(params)).fetchall()
    finally:
        con.close()


def _reasons(result: IngestResult) -> dict[str, str]:
    return {s.locator: s.reason for s in result.skips}


# -- H3: a session's create/update time that is no time -------------------------------------


@pytest.mark.parametrize("value", [math.inf, -math.inf, 1e300, -1e300, 4e10])
def test_a_sqlite_session_time_that_is_no_time_is_unknown(tmp_path, value):
    source = _copy(tmp_path, "adk_v1.db")
    with _writing(source) as con:
        con.execute("UPDATE sessions SET update_time = ?, create_time = ?", (value, value))
    result = api.ingest_sqlite(tmp_path / "s.duckdb", source)
    assert (result.rows_loaded, result.skips) == (EVENTS, [])
    times = _rows(tmp_path / "s.duckdb", "SELECT DISTINCT create_time, update_time FROM sessions")
    assert times == [(None, None)]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e300", "-1e300"])
def test_a_session_json_update_time_that_is_no_time_is_unknown(tmp_path, value):
    session = json.loads((SAMPLES / "exports/parallel.camel.json").read_text(encoding="utf-8"))
    session["lastUpdateTime"] = "@"
    events = len(session["events"])
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session).replace('"@"', value), encoding="utf-8")
    result = api.ingest_json(tmp_path / "s.duckdb", [path])
    assert (result.rows_loaded, result.skips) == (events, [])
    assert _rows(tmp_path / "s.duckdb", "SELECT update_time FROM sessions") == [(None,)]


# -- H4: rows dated ahead never move the watermark past the ingest's start -------------------


@pytest.mark.parametrize(
    ("name", "stamp"),
    [("adk_v1.db", "9999-12-31T23:59:59-12:00"), ("adk_v1.db", "2100-01-01 00:00:00.000000"),
     ("adk_sqlite_service.db", 1e300), ("adk_sqlite_service.db", 4102444800.0)],
)
def test_a_row_dated_ahead_is_loaded_and_the_watermark_stays_at_the_start(tmp_path, name, stamp):
    source = _copy(tmp_path, name)
    with _writing(source) as con:
        rowid, _ = _nth_row(con, 3)
        con.execute("UPDATE events SET timestamp = ? WHERE rowid = ?", (stamp, rowid))
    db = str(tmp_path / "s.duckdb")
    started = time.time()
    first = runner.invoke(app, ["ingest", "adk-sqlite", str(source), "--db", db])
    assert first.exit_code == 0, first.output
    assert f"read {EVENTS} events: loaded {EVENTS} new" in first.stdout
    assert ("warning: 1 row dated after this ingest began (a writer's clock ahead?): the newest "
            "event is taken as no later than the ingest's start, and the next run reads them "
            "again") in first.stderr
    ((watermark, notes),) = _rows(tmp_path / "s.duckdb", "SELECT watermark, notes FROM ingests")
    assert watermark <= time.time() and json.loads(notes)["rows_ahead"] == 1
    # (the events keep their own times: those of their JSON)
    assert _rows(tmp_path / "s.duckdb", "SELECT max(epoch) FROM events")[0][0] < started
    again = runner.invoke(app, ["ingest", "adk-sqlite", str(source), "--db", db])
    assert again.exit_code == 0, again.output
    assert "all already stored" in again.stdout


def _append_now(source: Path) -> str:
    """A copy of the source's last event, as a new one dated now; its id."""
    with _writing(source) as con:
        names = [r[1] for r in con.execute("PRAGMA table_info(events)")]
        row = dict(zip(names, con.execute("SELECT * FROM events ORDER BY timestamp DESC LIMIT 1")
                       .fetchone(), strict=True))
        now = time.time()
        data = json.loads(row["event_data"])
        data["id"] = row["id"] = "appended-now"
        data["timestamp"] = now
        row["event_data"] = json.dumps(data)
        row["timestamp"] = now if isinstance(row["timestamp"], float) else \
            time.strftime("%Y-%m-%d %H:%M:%S.000000", time.gmtime(now))
        con.execute(f"INSERT INTO events ({', '.join(row)}) VALUES "  # noqa: S608
                    f"({', '.join('?' * len(row))})", list(row.values()))
    return "appended-now"


def test_a_row_dated_2100_does_not_hide_the_rows_written_after_it(tmp_path):
    source = _copy(tmp_path, "adk_sqlite_service.db")
    with _writing(source) as con:
        rowid, _ = _nth_row(con, 1)
        con.execute("UPDATE events SET timestamp = 4102444800.0 WHERE rowid = ?", (rowid,))
    db = tmp_path / "s.duckdb"
    assert api.ingest_sqlite(db, source).rows_loaded == EVENTS
    appended = _append_now(source)
    result = api.ingest_sqlite(db, source)
    assert result.rows_loaded == 1
    assert _rows(db, "SELECT count(*) FROM events WHERE event_id = ?", appended) == [(1,)]


@pytest.mark.parametrize("poisoned", [1e300, 253402300800.0, 4102444800.0, float("nan"), -1e300])
def test_a_store_holding_a_poisoned_watermark_reads_as_if_it_were_now(tmp_path, poisoned):
    source = _copy(tmp_path, "adk_v1.db")
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, source)
    con = duckdb.connect(str(db))
    con.execute("UPDATE ingests SET watermark = ?", [poisoned])
    con.close()
    appended = _append_now(source)
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(source), "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "loaded 1 new" in out.stdout
    assert _rows(db, "SELECT count(*) FROM events WHERE event_id = ?", appended) == [(1,)]


def test_a_v0_row_dated_ahead_keeps_its_time_but_not_the_watermark(tmp_path):
    source = _copy(tmp_path, "adk_v0.db")
    with _writing(source) as con:
        rowid, event_id = _nth_row(con, 2)
        con.execute("UPDATE events SET timestamp = '2100-01-01 00:00:00.000000' WHERE rowid = ?",
                    (rowid,))
    db = tmp_path / "s.duckdb"
    result = api.ingest_sqlite(db, source, source_tz="UTC")
    assert (result.rows_loaded, result.skips) == (EVENTS, [])
    assert result.notes["rows_ahead"] == 1
    assert result.watermark is not None and result.watermark <= time.time()
    assert _rows(db, "SELECT epoch FROM events WHERE event_id = ?", event_id) == [
        (4102444800.0,)
    ]


def test_a_watermark_no_date_holds_is_shown_as_its_number(capsys):
    result = IngestResult(1, "adk-sqlite", "x.db", {}, rows_read=1, rows_loaded=1,
                          watermark=1e300, incremental=True)
    report_ingest(result, Format.table, Path("x.duckdb"))
    assert "newest event: 1e+300 (epoch seconds, not a date);" in capsys.readouterr().out


# -- H5: a sessions row whose key is not text ------------------------------------------------


def test_a_sessions_row_whose_key_is_null_or_bytes_is_a_skip(tmp_path):
    source = _copy(tmp_path, "adk_v1.db")
    with _writing(source) as con:
        _relax(con, "sessions")
        for key in [(None, "u", "s2"), (b"A", "u", "s3"), ("a", "u", "")]:
            con.execute("INSERT INTO sessions (app_name, user_id, id) VALUES (?, ?, ?)", key)
    result = api.ingest_sqlite(tmp_path / "s.duckdb", source)
    assert result.rows_loaded == EVENTS
    assert result.rows_already_stored == 0
    assert _reasons(result) == {
        f"{source}: sessions row app_name=None user_id='u' id='s2'": "app_name is NULL, not text",
        f"{source}: sessions row app_name=b'A' user_id='u' id='s3'": "app_name is bytes, not text",
        f"{source}: sessions row app_name='a' user_id='u' id=''": "id is empty, not text",
    }
    sessions = _rows(tmp_path / "s.duckdb", "SELECT count(*) FROM sessions")
    assert sessions == [(3,)]  # the file's own


# -- H6: a V0 JSON column that cannot be read ------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("content", b'\xff{"parts":[]}', "column content is not UTF-8 text: byte 0 is 0xff"),
        ("content", '{"parts":' + "[" * 5000 + "]" * 5000 + "}",
         "column content is nested too deeply to read (over about 1,000 levels of objects and "
         "lists)"),
        ("usage_metadata", '{"prompt_token_count":' + "9" * 5000 + "}",
         "column usage_metadata holds a number of over 4,300 digits, more than Python's json "
         "reads"),
    ],
)
def test_a_v0_json_column_that_cannot_be_read_is_a_skip(tmp_path, column, value, reason):
    source = _copy(tmp_path, "adk_v0.db")
    with _writing(source) as con:
        rowid, event_id = _nth_row(con, 1)
        session = con.execute("SELECT session_id FROM events WHERE rowid = ?", (rowid,)).fetchone()
        con.execute(f"UPDATE events SET {column} = ? WHERE rowid = ?",  # noqa: S608 (the
                    (value, rowid))  # test's column names)
    result = api.ingest_sqlite(tmp_path / "s.duckdb", source)
    assert result.rows_loaded == EVENTS - 1
    assert _reasons(result) == {
        f"{source}: events row id={event_id!r} session={session[0]!r}": reason
    }


# -- L2: a source a writer holds locked -----------------------------------------------------


def test_a_source_locked_by_a_writer_says_so(tmp_path):
    source = _copy(tmp_path, "adk_v1.db")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.read()",
         str(source)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        out = runner.invoke(app, ["ingest", "adk-sqlite", str(source), "--db",
                                  str(tmp_path / "s.duckdb")])
    finally:
        holder.communicate("")
    assert out.exit_code == 1
    assert out.stderr == (
        f"Error: {source}: locked by a process writing to it (database is locked)\n"
        "Hint: retry when the writer is done (an ADK server holds the lock while it writes)\n"
    )


# -- an event that escapes a lone surrogate -------------------------------------------------


def test_an_event_holding_a_lone_surrogate_is_one_skip(tmp_path):
    """The event is skipped (the normaliser cannot read it as JSON text DuckDB holds),
    the others, a surrogate pair's escape among them, are kept. Its reason says "not
    valid JSON"; naming the surrogate would cost a scan of every event's text."""
    source = _copy(tmp_path, "adk_v1.db")
    with _writing(source) as con:
        rowid, event_id = _nth_row(con, 1)
        session = con.execute("SELECT session_id FROM events WHERE rowid = ?", (rowid,)).fetchone()
        con.execute("UPDATE events SET event_data = ? WHERE rowid = ?",
                    ('{"author": "\\ud800", "content": {"parts": [{"text": "\\ud83d\\ude00"}]}}',
                     rowid))
        rowid, _ = _nth_row(con, 2)  # a pair's escape is text: kept
        data = json.loads(con.execute("SELECT event_data FROM events WHERE rowid = ?",
                                      (rowid,)).fetchone()[0])
        data["author"] = "\U0001f600"
        con.execute("UPDATE events SET event_data = ? WHERE rowid = ?", (json.dumps(data), rowid))
    result = api.ingest_sqlite(tmp_path / "s.duckdb", source)
    assert result.rows_loaded == EVENTS - 1
    where = f"{source}: events row id={event_id!r} session={session[0]!r}"
    assert list(_reasons(result)) == [where]


def test_a_damaged_source_says_how_to_salvage_it(tmp_path):
    source = _copy(tmp_path, "adk_v1.db")
    data = bytearray(source.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = bytes((i * 37) & 0xFF for i in range(8192))
    source.write_bytes(bytes(data))
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(source), "--db",
                              str(tmp_path / "s.duckdb")])  # fmt: skip
    assert out.exit_code == 1, out.output
    assert "database disk image is malformed" in out.output
    assert f"Hint: the file is damaged: `sqlite3 {source} .recover | sqlite3 recovered.db`" \
        in out.output
