"""Reconstructed windows against what the real ADK Runner sent (the sample's oracle sidecar)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.families.adk.windows import calls, window
from forensics.store import Store
from forensics.store.reads import load_sessions

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
runner = CliRunner()


def load_oracle(folder: Path) -> tuple[dict[str, dict], dict[str, str]]:
    records = [json.loads(line) for line in (folder / "calls.jsonl").read_text().splitlines()]
    result_ids = json.loads((folder / "result_ids.json").read_text())
    to_call = {k: v["function_call_id"] for k, v in result_ids.items()}
    return {r["event_id"]: r for r in records}, to_call


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("windows") / "f.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    return db


def check_against_oracle(db: Path, oracle_dir: Path) -> dict[str, int]:
    """Every agent call: same function_response ids, content size within 2%."""
    oracle, to_call = load_oracle(oracle_dir)
    seen = {"agent": 0, "failed": 0, "summarizer": 0, "after_compaction": 0, "relayed": 0}
    with Store.open(db, read_only=True) as con:
        sessions = load_sessions(con)
    for session in sessions:
        compacted = False
        for call in calls(session):
            record = oracle[call.event.event_id]  # every call the store finds was really made
            seen[call.kind] += 1
            if call.kind == "summarizer":
                compacted = True
                assert call.event.prompt_tokens == record["prompt_token_count"]
                continue
            want = sorted(to_call[r] for r in record["function_response_result_ids"])
            assert sorted(call.response_ids) == want, call.event.event_id
            chars = sum(call.chars_by_role.values())
            assert abs(chars - record["content_chars"]) <= 0.02 * record["content_chars"]
            # one content per event, a compaction summary its own: the same events went in
            parts = window(session, call.index)
            assert len({(p.event_id, p.role == "summary") for p in parts}) == record["contents"]
            seen["after_compaction"] += compacted
            seen["relayed"] += bool(call.relayed_ids) or any(
                p.relayed for p in window(session, call.index))
    agent_records = [r for r in oracle.values() if r["kind"] == "agent"]
    assert seen["agent"] + seen["failed"] == len(agent_records)
    return seen


def test_every_sample_call_matches_what_adk_sent(sample_db):
    seen = check_against_oracle(sample_db, SAMPLES / "oracle")
    assert seen["failed"] == 1
    assert seen["summarizer"] >= 2
    assert seen["after_compaction"] >= 3
    assert seen["relayed"] >= 3  # specialists see the orchestrator's transfer as quoted text


def test_windows_never_hold_a_later_event(sample_db):
    with Store.open(sample_db, read_only=True) as con:
        sessions = load_sessions(con)
    for session in sessions:
        position = {e.event_id: i for i, e in enumerate(session.events)}
        for call in calls(session):
            if call.kind != "summarizer":
                assert all(position[p.event_id] < call.index for p in window(session, call.index))


def test_cumulative_input_is_the_running_sum_of_occupancy(sample_db):
    frame = api.calls(sample_db).filter(pl.col("kind") != "summarizer")
    for _, turn in frame.group_by(["session_id", "invocation_id"]):
        assert turn["cumulative_input_estimated"].to_list() == \
            turn["occupancy_estimated"].cum_sum().to_list()
        running, expected = None, []
        for value in turn["occupancy_measured"]:
            running = running if value is None else (running or 0) + value
            expected.append(running)  # stays null until a call of the turn has usage
        assert turn["cumulative_input_measured"].to_list() == expected
    turns = api.turns(sample_db)
    totals = frame.group_by("invocation_id").agg(pl.col("occupancy_estimated").sum())
    joined = turns.join(totals, on="invocation_id")
    assert (joined["cumulative_input_estimated"] == joined["occupancy_estimated"]).all()


def test_the_ratio_is_fitted_from_measured_calls(sample_db):
    (ratio,) = api.ratios(sample_db).values()
    assert ratio.source == "fitted"
    # the scripted model counts one token per 3.6 characters of its real request
    assert ratio.chars_per_token == pytest.approx(3.6, rel=0.01)
    assert ratio.mean_abs_error < 0.01
    frame = api.calls(sample_db)
    assert not frame["gauge_blind"].any()


def test_growth_top_1_is_the_fat_row_call(sample_db):
    result = runner.invoke(app, ["growth", "--top", "1", "--db", str(sample_db), "-f", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    oracle, to_call = load_oracle(SAMPLES / "oracle")
    assert row["tool_name"] == "get_order_history"
    assert row["rows"] == 200
    assert row["tokens_per_row"] == round(row["result_tokens_estimated"] / 200)
    assert 800 <= row["tokens_per_row"] <= 1000
    # growth: from the window of the call that asked, to the next call's, both measured
    assert row["occupancy_source"] == "measured"
    later = sorted((r for r in oracle.values() if r["session_id"] == "incident"
                    and r["kind"] == "agent"), key=lambda r: r["call_index"])
    carried = [r for r in later if any(to_call[x] == row["function_call_id"]
                                       for x in r["function_response_result_ids"])]
    assert row["occupancy_after"] == carried[0]["prompt_token_count"]
    assert row["growth_tokens"] == row["occupancy_after"] - row["occupancy_before"]
    # re-sent on every later call that really carried it, the failed one included
    assert any(r.get("error_code") for r in carried)
    assert row["resent_calls"] == len(carried)
    assert row["resent_tokens"] == row["resent_calls"] * row["result_tokens_estimated"]
    assert row["latency_s"] > 0


def test_window_and_turns_commands(sample_db):
    calls_json = json.loads(runner.invoke(app, ["calls", "incident", "--db", str(sample_db),
                                                "-f", "json"]).stdout)
    assert {"call_id", "session_id", "invocation_id", "turn", "agent", "kind", "timestamp",
            "occupancy_measured", "occupancy_estimated", "cumulative_input_measured",
            "cumulative_input_estimated", "by_role", "ratio_source"} <= calls_json[0].keys()
    assert set(calls_json[0]["by_role"]) == {"user", "model", "tool", "summary",
                                             "inferred_system"}
    failed = [c for c in calls_json if c["kind"] == "failed"]
    assert len(failed) == 1 and failed[0]["occupancy_measured"] is None
    result = runner.invoke(app, ["window", "incident", failed[0]["call_id"],
                                 "--db", str(sample_db), "-f", "json"])
    parts = json.loads(result.stdout)
    assert {"event_id", "part_index", "part_kind", "author", "tool_name", "function_call_id",
            "chars", "tokens_estimated"} <= parts[0].keys()
    assert sum(p["chars"] for p in parts) == failed[0]["chars"]
    turns = json.loads(runner.invoke(app, ["turns", "incident", "--db", str(sample_db),
                                           "-f", "json"]).stdout)
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[1]["error_code"] == "CONTEXT_LENGTH_EXCEEDED"
    assert {"session_id", "invocation_id", "turn", "calls", "tool_calls", "wall_s",
            "peak_occupancy", "cumulative_input_measured", "cumulative_input_estimated",
            "error_code"} <= turns[0].keys()
    bad = runner.invoke(app, ["window", "incident", "nope", "--db", str(sample_db)])
    assert bad.exit_code == 1
    assert bad.stderr.startswith("Error: no agent call 'nope' in session 'incident'")


REAL = ROOT.parent / "shared" / "real_data" / "adk"


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_real_sessions_reconstruct(tmp_path):
    db = tmp_path / "r.duckdb"
    for path in sorted(REAL.glob("*.db")):
        api.ingest_sqlite(db, path)
    api.ingest_json(db, sorted(REAL.glob("*.json")))
    frame = api.calls(db)
    sessions = api.sessions(db)
    # every session with a model reply has calls; usage where the files carry it
    assert set(frame["session_id"]) <= set(sessions["session_id"])
    assert frame.height >= sessions.height
    measured = frame.filter(pl.col("occupancy_measured").is_not_null())
    assert measured.height > 0
    assert (frame["occupancy_estimated"] >= 0).all()
    turns = api.turns(db)
    assert turns["calls"].sum() == frame.filter(pl.col("kind") != "summarizer").height
    assert api.growth(db).height > 0


def test_one_session_gets_the_ratio_of_its_source(sample_db):
    """The fit does not depend on what is queried: a call's estimate is the same."""
    whole = api.calls(sample_db)
    alone = api.calls(sample_db, "parallel")
    assert alone["chars_per_token"].unique().to_list() == \
        whole["chars_per_token"].unique().to_list()
    joined = alone.join(whole, on="call_id", suffix="_all")
    assert (joined["occupancy_estimated"] == joined["occupancy_estimated_all"]).all()
