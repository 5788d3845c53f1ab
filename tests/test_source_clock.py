"""ADK schema V0 on SQLite: event times in the writer's local time, found and corrected."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.selection import Selection
from forensics.store.migrations import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real_data" / "adk"
SAMPLE_V0 = ROOT / "sample_data" / "adk_v0.db"


def _written_in(tmp_path: Path, hours: float, minutes: float = 0) -> Path:
    """The sample V0 file as a machine at UTC+hours:minutes would have written it."""
    path = tmp_path / f"v0_{hours:+g}.db"
    shutil.copy(SAMPLE_V0, path)
    con = sqlite3.connect(path)
    shift = timedelta(hours=hours, minutes=minutes)
    rows = con.execute("SELECT id, timestamp FROM events").fetchall()
    for event_id, stamp in rows:
        local = datetime.fromisoformat(stamp) + shift
        con.execute("UPDATE events SET timestamp = ? WHERE id = ?",
                    (local.strftime("%Y-%m-%d %H:%M:%S.%f"), event_id))
    con.commit()
    con.close()
    return path


def _times(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT event_id, epoch FROM events ORDER BY event_id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("hours,minutes,shown", [(5, 30, "+05:30"), (-5, 0, "-05:00")])
def test_the_writers_offset_is_detected_and_undone(tmp_path, hours, minutes, shown):
    reference = tmp_path / "ref.duckdb"
    api.ingest_sqlite(reference, SAMPLE_V0)
    shifted = _written_in(tmp_path, hours, minutes)
    db = tmp_path / "f.duckdb"
    result = api.ingest_sqlite(db, shifted)
    assert result.notes["event_times"] == f"{shown} (detected from 3 sessions)"
    assert _times(db) == _times(reference)
    # the figures built on them too: the incident's turn still lasted 2.15 s, from 09:01:20
    assert api.turns(db, "incident").equals(api.turns(reference, "incident"))
    ledger = api.ingests(db).row(0, named=True)
    assert '"event_times"' in ledger["notes"]


def test_a_stated_clock_wins_and_filters_are_read_in_it(tmp_path):
    shifted = _written_in(tmp_path, 5, 30)
    db = tmp_path / "f.duckdb"
    runner = CliRunner()
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(shifted), "--db", str(db),
                              "--source-tz", "+05:30", "--since", "2026-10-22T09:30:00Z"])
    assert out.exit_code == 0, out.output
    assert "event times: +05:30 (--source-tz)" in out.stdout
    # the time filter selects by true UTC instants: the incident (09:00-09:01Z) is out
    loaded = api.sessions(db).filter(pl.col("events") > 0)
    assert sorted(loaded["session_id"]) == ["compaction", "parallel"]
    wrong = runner.invoke(app, ["ingest", "adk-sqlite", str(shifted), "--db", str(db),
                                "--source-tz", "Mars/Olympus"])
    assert wrong.exit_code == 1
    assert wrong.stderr.startswith(
        "Error: --source-tz 'Mars/Olympus' is neither a UTC offset nor a time zone name")


def test_a_named_zone_follows_daylight_saving(tmp_path):
    from forensics.sources.sqlite.clock import parse

    berlin = parse("Europe/Berlin")
    summer = datetime(2026, 7, 1, 12, 0).timestamp() - datetime(1970, 1, 1).timestamp()
    winter = datetime(2026, 1, 1, 12, 0).timestamp() - datetime(1970, 1, 1).timestamp()
    assert summer - berlin.to_utc(summer) == 7200
    assert winter - berlin.to_utc(winter) == 3600
    assert berlin.from_utc(berlin.to_utc(summer)) == summer


def test_v1_files_keep_their_epoch_seconds(tmp_path):
    db = tmp_path / "f.duckdb"
    result = api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db", source_tz="+05:30")
    assert result.notes["event_times"].startswith("UTC: --source-tz +05:30 not applied")
    reference = tmp_path / "ref.duckdb"
    api.ingest_sqlite(reference, ROOT / "sample_data" / "adk_v1.db")
    assert _times(db) == _times(reference)


@pytest.mark.parametrize("name,shown", [
    ("v0_crash-course_my_agent_data.db", "+05:30"),
    ("v0_with_usage_column_my_agent_data.db", "+01:00"),
])
def test_public_v0_files(tmp_path, name, shown):
    if not (REAL / name).is_file():
        pytest.skip("shared/real_data is absent")
    db = tmp_path / "f.duckdb"
    result = api.ingest_sqlite(db, REAL / name)
    assert result.notes["event_times"] == f"{shown} (detected from 1 sessions)"
    session = api.sessions(db).row(0, named=True)
    con = sqlite3.connect(f"file:{REAL / name}?mode=ro", uri=True)
    (created,) = con.execute("SELECT create_time FROM sessions").fetchone()
    con.close()
    # corrected, the first event follows the session's creation (UTC) by seconds, not hours
    gap = session["first_event_at"] - datetime.fromisoformat(created)
    assert timedelta(0) <= gap < timedelta(minutes=5)


def test_an_older_store_is_upgraded_when_read(tmp_path):
    db = tmp_path / "old.duckdb"
    api.ingest_sqlite(db, SAMPLE_V0, Selection(session="parallel"))
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE ingests DROP COLUMN notes")
    con.execute("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    ledger = api.ingests(db)  # read-only: upgraded first, then read
    assert ledger["notes"].to_list() == [None]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute(
        "SELECT value FROM store_meta WHERE key = 'schema_version'"
    ).fetchall() == [(str(SCHEMA_VERSION),)]
    con.close()
