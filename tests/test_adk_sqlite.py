"""ADK SQLite files and JSON exports of the same sessions give the same store contents."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from forensics import api
from forensics.store import Store

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
REAL = ROOT.parent / "shared" / "real_data" / "adk"

FACTS = ("SELECT app_name, user_id, session_id, event_id, invocation_id, author, epoch, chars, "
         "part_count, kinds, prompt_tokens, candidates_tokens, cached_tokens, error_code, "
         "error_message, is_compaction, compaction_start, compaction_end, transfer_to_agent "
         "FROM events ORDER BY ALL")
PARTS = "SELECT * FROM parts ORDER BY ALL"


def _facts(db: Path) -> tuple[list, list]:
    with Store.open(db, read_only=True) as con:
        return con.run(FACTS), con.run(PARTS)


def _source_count(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()


def test_every_sample_storage_path_gives_identical_events_and_parts(tmp_path):
    reference = api.ingest_sqlite(tmp_path / "v1.duckdb", SAMPLES / "adk_v1.db")
    assert reference.rows_loaded == _source_count(SAMPLES / "adk_v1.db") > 40
    expected = _facts(tmp_path / "v1.duckdb")
    for name in ("adk_v0.db", "adk_sqlite_service.db"):
        result = api.ingest_sqlite(tmp_path / f"{name}.duckdb", SAMPLES / name)
        assert (result.rows_loaded, result.rows_skipped) == (reference.rows_loaded, 0), name
        assert _facts(tmp_path / f"{name}.duckdb") == expected, name
    for style in ("camel", "snake"):
        files = sorted((SAMPLES / "exports").glob(f"*.{style}.json"))
        result = api.ingest_json(tmp_path / f"{style}.duckdb", files)
        assert (result.rows_loaded, result.rows_skipped) == (reference.rows_loaded, 0), style
        assert _facts(tmp_path / f"{style}.duckdb") == expected, style


def test_event_lists_and_ndjson_match_the_session_export(tmp_path):
    session = api.ingest_json(tmp_path / "s.duckdb", [SAMPLES / "exports/incident.snake.json"])
    for name in ("incident.events.json", "incident.ndjson"):
        result = api.ingest_json(tmp_path / f"{name}.duckdb", [SAMPLES / "exports" / name],
                                 app="store", user="u-1001")
        assert result.rows_loaded == session.rows_loaded
        assert _facts(tmp_path / f"{name}.duckdb")[0] == _facts(tmp_path / "s.duckdb")[0]


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
@pytest.mark.parametrize("name", ["adk-web_tools_agent_session.db",
                                  "v0_crash-course_my_agent_data.db",
                                  "v0_with_usage_column_my_agent_data.db"])
def test_real_sqlite_files_load_every_event(tmp_path, name):
    result = api.ingest_sqlite(tmp_path / "f.duckdb", REAL / name)
    assert (result.rows_loaded, result.rows_skipped) == (_source_count(REAL / name), 0)
    sessions = api.sessions(tmp_path / "f.duckdb")
    assert sessions["events"].sum() == result.rows_loaded


def test_text_that_is_not_utf8_loses_its_row_alone(tmp_path):
    """sqlite3 stopped the whole read at the first TEXT value that is not UTF-8. Now an id
    that is not UTF-8 is a skip naming the field and the byte; any other text of the
    row is read with U+FFFD, as event_data always was; every other row loads."""
    import json
    import shutil

    v1 = tmp_path / "v1.db"
    con = sqlite3.connect(v1)
    con.executescript(
        "CREATE TABLE sessions (app_name TEXT, user_id TEXT, id TEXT, state TEXT,"
        " create_time TIMESTAMP, update_time TIMESTAMP, PRIMARY KEY (app_name, user_id, id));"
        "CREATE TABLE events (id TEXT, app_name TEXT, user_id TEXT, session_id TEXT,"
        " invocation_id TEXT, timestamp TIMESTAMP, event_data TEXT,"
        " PRIMARY KEY (id, app_name, user_id, session_id));"
        "INSERT INTO sessions VALUES ('a', 'u', 's1', '{}', NULL, NULL);"
        "INSERT INTO sessions VALUES ('a', CAST(X'75ff' AS TEXT), 's2', '{}', NULL, NULL);"
    )

    def event(i: int) -> str:
        return json.dumps({"id": f"e{i}", "author": "user", "timestamp": 1_761_127_200 + i,
                           "content": {"parts": [{"text": "hi"}]}})  # fmt: skip

    con.execute("INSERT INTO events VALUES ('e1', 'a', 'u', 's1', 'i1', '2025-10-22 10:00:01', ?)",
                (event(1),))  # fmt: skip
    con.execute("INSERT INTO events VALUES (CAST(X'65ff32' AS TEXT), 'a', 'u', 's1', 'i1',"
                " '2025-10-22 10:00:02', ?)", (event(2),))  # fmt: skip
    con.execute("INSERT INTO events VALUES ('e3', 'a', CAST(X'75ff' AS TEXT), 's2', 'i1',"
                " '2025-10-22 10:00:03', ?)", (event(3),))  # fmt: skip
    con.commit()
    con.close()
    result = api.ingest_sqlite(tmp_path / "v1.duckdb", v1)
    assert (result.rows_read, result.rows_loaded) == (3, 1)
    assert sorted(s.reason for s in result.skips) == [
        "id is not UTF-8 text: byte 1 is 0xff", "user_id is not UTF-8 text: byte 1 is 0xff"]
    assert api.sessions(tmp_path / "v1.duckdb")["session_id"].to_list() == ["s1"]

    v0 = tmp_path / "v0.db"
    shutil.copy(SAMPLES / "adk_v0.db", v0)
    con = sqlite3.connect(v0)
    first, second = [r[0] for r in con.execute("SELECT id FROM events ORDER BY rowid LIMIT 2")]
    rows = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.execute("UPDATE events SET author = CAST(X'61ff62' AS TEXT) WHERE id = ?", (first,))
    con.execute("UPDATE events SET session_id = CAST(X'73ff' AS TEXT) WHERE id = ?", (second,))
    con.commit()
    con.close()
    result = api.ingest_sqlite(tmp_path / "v0.duckdb", v0)
    assert (result.rows_read, result.rows_loaded) == (rows, rows - 1)
    assert [s.reason for s in result.skips] == ["session_id is not UTF-8 text: byte 1 is 0xff"]
    with Store.open(tmp_path / "v0.duckdb", read_only=True) as store:
        assert store.run("SELECT author FROM events WHERE event_id = ?", [first]) == [("a\ufffdb",)]


def test_a_file_is_one_source_however_it_is_named(tmp_path, monkeypatch):
    """`.adk/session.db` from two projects' folders is two files: the second is read
    whole, not from the first one's watermark (it lost its older 86 of 134 events, in
    silence); one file named by two relative paths is one source."""
    for folder, sample in (("a", "adk_v1.db"), ("b", "tasks.db")):
        (tmp_path / folder / ".adk").mkdir(parents=True)
        shutil.copy(SAMPLES / sample, tmp_path / folder / ".adk" / "session.db")
    db = tmp_path / "all.duckdb"
    whole = api.ingest_sqlite(tmp_path / "whole.duckdb", tmp_path / "b" / ".adk" / "session.db")
    monkeypatch.chdir(tmp_path / "a")
    api.ingest_sqlite(db, Path(".adk/session.db"))
    monkeypatch.chdir(tmp_path / "b")
    second = api.ingest_sqlite(db, Path(".adk/session.db"))
    assert second.watermark_before is None and second.rows_loaded == whole.rows_loaded == 134
    monkeypatch.chdir(tmp_path)
    again = api.ingest_sqlite(db, Path("b/.adk/session.db"))
    assert again.watermark_before is not None and again.rows_loaded == 0
    assert again.location == "b/.adk/session.db"  # outputs name it as it was given


def test_a_store_from_before_source_keys_resumes_each_source_it_can_key(tmp_path, monkeypatch):
    """Schema 15 keys each ingest's watermark by its source: an earlier run's location
    is its key, but for an SQLite file given by a relative path (whose folder the store
    never knew), which is read whole once more."""
    db = tmp_path / "old.duckdb"
    (tmp_path / "rel").mkdir()
    shutil.copy(SAMPLES / "adk_v1.db", tmp_path / "rel" / "s.db")
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")  # given whole: its own key
    monkeypatch.chdir(tmp_path / "rel")
    api.ingest_sqlite(db, Path("s.db"))
    with Store.open(db) as store:  # as schema 14 left it
        store.run("ALTER TABLE ingests DROP COLUMN source_key")
        store.run("UPDATE store_meta SET value = '14' WHERE key = 'schema_version'")
    resumed = api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    assert resumed.watermark_before is not None
    whole = api.ingest_sqlite(db, Path("s.db"))
    assert whole.watermark_before is None and whole.rows_read == 47
