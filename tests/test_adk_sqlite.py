"""ADK SQLite files and JSON exports of the same sessions give the same store contents."""

from __future__ import annotations

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
