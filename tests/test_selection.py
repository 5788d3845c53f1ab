"""Selections are pushed into the store's SQL: only the selected sessions are rebuilt."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from forensics import api
from forensics.columns import ALL
from forensics.errors import ForensicsError
from forensics.provenance import Column, Spec
from forensics.selection import Selection
from forensics.store.reads import load_sessions

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("selection") / "f.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    return db


def test_app_and_user_select_in_sql_before_anything_is_rebuilt(sample_db):
    with api.open_store(sample_db) as store:
        everything = api.Scope(store)
        one_user = api.Scope(store, Selection(app="store", user="u-1002"))
        assert [s.session_id for s in everything.reconstruction.sessions] == [
            "incident", "parallel", "compaction"]  # by app, user (u-1001..u-1003), session
        assert [s.session_id for s in one_user.reconstruction.sessions] == ["parallel"]
        assert one_user.turns()["session_id"].unique().to_list() == ["parallel"]
        # the same figures as when everything is rebuilt: the ratio's sample does not move
        whole = everything.calls().filter(pl.col("session_id") == "parallel")
        assert one_user.calls().equals(whole)
        assert load_sessions(store, Selection(app="elsewhere")) == []


def test_a_time_range_selects_whole_sessions_with_an_event_in_it(sample_db):
    with api.open_store(sample_db) as store:
        sessions = api.sessions(store).sort("first_event_at")
        first = sessions.row(0, named=True)
        start = first["first_event_at"].timestamp() + 0.5  # inside the first session only
        end = first["last_event_at"].timestamp()
        chosen = load_sessions(store, Selection(since=start, until=end))
        assert [s.session_id for s in chosen] == [first["session_id"]]
        # the whole session, its events before `since` included: windows need them
        assert len(chosen[0].events) == first["events"]
        later = load_sessions(store, Selection(since=sessions["last_event_at"].max().timestamp()))
        assert [s.session_id for s in later] == [sessions.row(-1, named=True)["session_id"]]


def test_selection_from_the_command_line():
    parsed = Selection.parse("store", None, "s1", "2026-10-01", "2026-10-02T00:00:00Z")
    assert (parsed.app, parsed.session) == ("store", "s1")
    assert parsed.until - parsed.since == 86_400
    assert parsed.as_dict() == {"app": "store", "session": "s1", "since": parsed.since,
                                "until": parsed.until}
    with pytest.raises(ForensicsError, match="--since 2026-10-05 is not before --until 2026-10-01"):
        Selection.parse(since="2026-10-05", until="2026-10-01")
    with pytest.raises(ForensicsError, match="--until 'soon' is not a date or time"):
        Selection.parse(until="soon")


def test_a_session_id_in_two_apps_needs_the_app(tmp_path, sample_db):
    import shutil
    import sqlite3

    copy = tmp_path / "other.db"
    shutil.copy(ROOT / "sample_data" / "adk_v1.db", copy)
    con = sqlite3.connect(copy)
    for table in ("events", "sessions"):
        con.execute(f"UPDATE {table} SET app_name = 'other'")  # noqa: S608 - fixed names
    con.commit()
    con.close()
    db = tmp_path / "two.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    api.ingest_sqlite(db, copy)
    with pytest.raises(ForensicsError, match="session id 'incident' exists in 2 apps/users"):
        api.turns(db, "incident")
    chosen = api.turns(db, Selection(app="other", session="incident"))
    assert chosen.drop("invocation_id").equals(
        api.turns(sample_db, "incident").drop("invocation_id"))


def test_a_row_that_does_not_match_its_spec_is_refused():
    spec = Spec("t", (Column("a", pl.Int64), Column("b", pl.String)))
    assert spec.frame([{"a": 1, "b": "x"}]).schema == pl.Schema({"a": pl.Int64, "b": pl.String})
    assert spec.frame([]).columns == ["a", "b"]
    with pytest.raises(ValueError, match=r"t: .*missing \['b'\], unexpected \['c'\]"):
        spec.frame([{"a": 1, "c": "x"}])
    with pytest.raises(ValueError, match="declared"):
        spec.check(pl.DataFrame({"a": ["1"], "b": ["x"]}))


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_every_spec_shows_only_its_own_columns(spec):
    names = set(spec.names)
    fields = {f.name for c in spec.columns if c.name in spec.unnest for f in c.dtype.fields}
    assert len(names) == len(spec.columns)
    assert set(spec.table or ()) <= names | fields
    assert set(spec.totals) <= names | fields
    assert set(spec.json_columns) <= names
    assert set(spec.provenance) <= names
