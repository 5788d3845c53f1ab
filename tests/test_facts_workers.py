"""The facts are the same store whatever the number of processes that build them.

The local engine (forensics/engines/local.py) rebuilds runs of sessions in worker
processes and writes their facts in the order the runs were read. Here the runs are cut
small (a few sessions each) so that many go through the pool, over ADK sessions of two
apps and the Claude Code sample, and every fact table is compared row for row, in the
order it was written, with a build by one process.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.engines import local
from forensics.settings import WORKERS_ENV
from forensics.store import facts as stored

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"


def _load(db: Path) -> None:
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    api.ingest_sqlite(db, SAMPLE / "tasks.db")
    api.ingest_claude_code(db, [SAMPLE / "claude_code"])


def _facts(db: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: con.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()  # noqa: S608
            for t in stored.TABLES
        }
    finally:
        con.close()


def test_two_workers_write_the_store_one_writes(tmp_path, monkeypatch):
    one, two = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    with api.workers_to(1):
        _load(one)
        assert api.analyze(one, every=True).workers == 1
    monkeypatch.setattr(local, "POOL_MIN_EVENTS", 0)
    monkeypatch.setattr(stored, "CHUNK_EVENTS", 40)  # runs of a few sessions
    with api.workers_to(2):
        _load(two)
        done = api.analyze(two, every=True)
    assert done.workers == 2 and done.sessions > 30
    expected, found = _facts(one), _facts(two)
    assert all(expected[t] for t in ("fact_sessions", "fact_calls", "fact_carried"))
    assert found == expected


def test_workers_are_chosen_and_checked(monkeypatch):
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert local.workers() == 3
    with api.workers_to(2):
        assert local.workers() == 2  # --workers over the environment
    monkeypatch.setenv(WORKERS_ENV, "many")
    with pytest.raises(api.ForensicsError, match="FORENSICS_WORKERS='many' is not a number"):
        local.workers()
    monkeypatch.delenv(WORKERS_ENV)
    assert local.workers() >= 1


def test_the_cli_takes_workers(tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    monkeypatch.setattr(local, "POOL_MIN_EVENTS", 0)
    result = CliRunner().invoke(
        app, ["--workers", "2", "analyze", "--rebuild-all", "--db", str(db), "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    assert '"sessions_rebuilt": 3' in result.output
    result = CliRunner().invoke(app, ["--workers", "0", "analyze", "--db", str(db)])
    assert result.exit_code == 2 and "--workers" in result.output
