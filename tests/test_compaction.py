"""The compaction audit, against what ADK itself would send next.

What was sent is checked with ADK's own request assembler (`_get_contents`, run on
the stored events before each next call; tests/test_adk_stress.py shows it agrees
with the real requests' sidecar), on the sample's compaction session and on the
generated stress scenario (superseded and overlapping ranges).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("google.adk")

from google.adk.events.event import Event  # noqa: E402
from google.adk.flows.llm_flows.context._contents import _get_contents  # noqa: E402

from forensics import api  # noqa: E402
from forensics.cli import app  # noqa: E402
from tests.adk_stress import DB_FILE, generate_stress, load_oracle  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _adk_events(db: Path) -> list[Event]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT event_data FROM events").fetchall()
    finally:
        con.close()
    return sorted((Event.model_validate(json.loads(d)) for (d,) in rows),
                  key=lambda e: e.timestamp)


@pytest.fixture(scope="module", params=["sample", "stress"])
def case(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    if request.param == "sample":
        source = ROOT / "sample_data" / "adk_v1.db"
        oracle = [json.loads(line) for line in
                  (ROOT / "sample_data" / "oracle" / "calls.jsonl").read_text().splitlines()]
    else:
        generate_stress(out)
        source, oracle = out / DB_FILE, load_oracle(out)
    db = out / "f.duckdb"
    api.ingest_sqlite(db, source)
    return db, _adk_events(source), {r["event_id"]: r for r in oracle}


def test_next_request_agrees_with_adk(case):
    db, events, oracle = case
    frame = api.compaction(db).filter(pl.col("next_call_id").is_not_null())
    assert frame.height >= 2
    by_id = {e.id: e for e in events}
    for row in frame.iter_rows(named=True):
        call = oracle[row["next_call_id"]]
        before = [e for e in events
                  if e.timestamp < call["started_at"] and e.id != call["event_id"]]
        contents = _get_contents(None, before, call["agent"])
        summary = by_id[row["compaction_event_id"]].actions.compaction.compacted_content
        summary_text = "".join(p.text or "" for p in summary.parts)
        sent = any("".join(p.text or "" for p in c.parts or []) == summary_text
                   for c in contents)
        assert row["summary_in_next_request"] == sent, row["compaction_event_id"]
        # the raw events of a range the next request carried a summary for are not sent
        if sent:
            assert row["raw_in_range_sent_next"] == 0
        # the next request's size, reconstructed, is what the model received
        window = api.window(db, row["session_id"], row["next_call_id"])
        assert window["chars"].sum() == pytest.approx(call["content_chars"], rel=0.002)


def test_stored_counts_and_overlap(case):
    db, events, _ = case
    frame = api.compaction(db)
    for row in frame.iter_rows(named=True):
        start, end = row["start_timestamp"].timestamp(), row["end_timestamp"].timestamp()
        appended = row["appended_at"].timestamp()
        raw = [e for e in events if not (e.actions and e.actions.compaction) and e.content
               and e.content.parts and start <= e.timestamp <= end and e.timestamp < appended]
        assert row["raw_events_in_range"] == len(raw)
        assert sum(row["raw_events_by_kind"].values()) == len(raw)
        results = sum(1 for e in raw for p in e.content.parts if p.function_response)
        assert row["tool_results_in_range"] == results
    overlapping = frame.filter(pl.col("overlap_with_previous") > 0)
    assert overlapping.height >= 1
    assert set(frame.columns) >= {
        "session_id", "compaction_event_id", "start_timestamp", "end_timestamp",
        "raw_events_in_range", "tool_results_in_range", "tool_tokens_in_range",
        "summary_tokens", "overlap_with_previous", "retained_events_after",
        "retained_tokens_after"}


def test_threshold_audit_by_session(case):
    db, _, _ = case
    calls = api.calls(db).filter(pl.col("kind") != "summarizer")
    size = calls["occupancy_measured"].fill_null(calls["occupancy_estimated"])
    threshold = int(size.median())
    sessions = api.compaction_sessions(db, threshold_tokens=threshold)
    assert sessions["calls_over_threshold"].sum() == int((size > threshold).sum())
    never = sessions.filter(pl.col("compaction_never_fired"))
    assert (never["compactions"] == 0).all() and (never["calls_over_threshold"] > 0).all()
    result = runner.invoke(app, ["compaction", "--by-session", "--threshold-tokens",
                                 str(threshold), "--db", str(db), "-f", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {"retained_events_after", "retained_tokens_after", "compaction_never_fired"} <= \
        rows[0].keys()
