"""ADK's own traces as ground truth: loaded as sizes, compared call by call with the rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "real_data" / "adk_traces"


@pytest.fixture(scope="module")
def traced_db(tmp_path_factory):
    if not TRACES.is_dir():
        pytest.skip("shared/real_data is absent")
    db = tmp_path_factory.mktemp("traces") / "f.duckdb"
    api.ingest_json(db, sorted(TRACES.glob("*__session_*.json")))
    result = api.ingest_traces(db, sorted(TRACES.glob("*__trace_*.json")))
    assert result.rows_skipped == 0
    return db, result


def test_every_traced_call_is_rebuilt_with_its_releases_rules(traced_db):
    db, result = traced_db
    assert result.notes["adk_versions"] == ["1.18.0", "1.20.0"]
    frame = api.fidelity(db)
    assert frame.height == 54  # the 58 traced requests less those of sessions not stored
    assert frame["responses_exact"].all()
    assert frame["within_2pct"].all()
    assert (frame["chars_diff"] == 0).sum() >= 49
    assert frame["chars_diff_pct"].abs().max() < 0.05
    assert set(frame["rules"]) <= {
        "google-adk 1.18.0 rules (traced)",
        "google-adk 1.20.0 rules (traced)",
    }
    # the multi-agent sessions relay other agents' work: that is what the release changes
    relayed = frame.filter(pl.col("rebuilt_user") > 10_000)
    assert relayed.height >= 10


def test_without_the_trace_the_keys_place_the_release_and_2_13_would_miss(traced_db, tmp_path):
    db, _ = traced_db
    untraced, assumed = tmp_path / "untraced.duckdb", tmp_path / "assumed.duckdb"
    api.ingest_json(untraced, sorted(TRACES.glob("*__session_*.json")))
    api.ingest_json(assumed, sorted(TRACES.glob("*__session_*.json")), adk_version="2.13.0")
    session = "session_8f8025ca-605b-4747-ba19-b61643f65164"
    calls, traced = api.calls(untraced, session), api.calls(db, session)
    # the events' keys say 1.18.0 to before 2.0.0: the 1.x relay, as the trace's 1.18.0
    with duckdb.connect(str(untraced), read_only=True) as con:
        assert con.execute(
            "SELECT basis, since_version, until_version FROM session_releases"
            " WHERE session_id = ?", [session]).fetchall() == [("inferred", "1.18.0", "2.0.0")]
    assert ((calls["chars"] - traced["chars"]).abs() <= traced["chars"] * 0.02).all()
    # 2.13's quoted relay adds ~2,000 characters per relaying call of this 1.18 session
    wrong = api.calls(assumed, session)
    assert (wrong["chars"] - traced["chars"]).max() > 1_500
    assert api.fidelity(untraced).is_empty()


def test_a_second_load_of_the_same_traces_stores_nothing_new(traced_db):
    db, _ = traced_db
    again = api.ingest_traces(db, sorted(TRACES.glob("*__trace_*.json")))
    assert (again.rows_loaded, again.rows_already_stored) == (0, again.rows_read)


def test_unreadable_traces_are_skipped_by_name_and_good_spans_kept(tmp_path):
    good_request = {"model": "m", "config": {"system_instruction": "be brief",
                                             "http_options": {"headers": {
                                                 "x-goog-api-client": "google-adk/1.18.0"}}},
                    "contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    spans = [
        {"name": "invocation", "attributes": {}},
        {"name": "call_llm", "span_id": 1, "attributes": {
            "gcp.vertex.agent.event_id": "e1", "gcp.vertex.agent.session_id": "s",
            "gcp.vertex.agent.llm_request": json.dumps(good_request),
            "gen_ai.usage.input_tokens": 12}},
        {"name": "call_llm", "span_id": 2, "attributes": {
            "gcp.vertex.agent.event_id": "e2", "gcp.vertex.agent.session_id": "s",
            "gcp.vertex.agent.llm_request": '{"model": "m", "contents": [{"ro'}},
        "not a span",
    ]
    (tmp_path / "t.json").write_text(json.dumps(spans))
    (tmp_path / "cut.json").write_text('[{"name": "call_llm", "attrib')
    (tmp_path / "obj.json").write_text('{"spans": []}')
    db = tmp_path / "f.duckdb"
    result = api.ingest_traces(db, [tmp_path / "t.json", tmp_path / "cut.json",
                                    tmp_path / "obj.json"])
    assert result.rows_loaded == 1
    reasons = {s.locator: s.reason for s in result.skips}
    assert reasons[f"{tmp_path / 't.json'}: span 2"].startswith(
        "llm_request is not valid JSON: ")
    assert reasons[f"{tmp_path / 't.json'}: span 3"] == "span is not a JSON object"
    assert reasons[f"{tmp_path / 'cut.json'}:1:23"] == (
        "not valid JSON: Unterminated string starting at")
    assert reasons[str(tmp_path / "obj.json")] == (
        "wrong shape: expected the dev UI's JSON list of spans or OTLP JSON (an object "
        "with resourceSpans), found dict")
    with api.open_store(db) as store:
        (row,) = store.run("SELECT system_chars, input_tokens, adk_version FROM traced_calls")
        parts = store.run("SELECT role, kind, chars FROM traced_parts")
    assert row == (8, 12, "1.18.0") and parts == [("user", "text", 5)]


def test_the_fidelity_command_says_what_it_compared(traced_db):
    db, _ = traced_db
    out = CliRunner().invoke(app, ["fidelity", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "54 traced calls compared: 54 with exactly the traced function responses, " \
        "54 within 2% of the traced size" in out.stdout
    rows = json.loads(CliRunner().invoke(app, ["fidelity", "--db", str(db), "-f", "json"]).stdout)
    assert rows[0]["provenance"]["traced_chars"] == "traced"


def test_the_incident_report_says_what_was_traced(traced_db):
    from forensics.reports.incident import build_incident

    db, _ = traced_db
    context = build_incident(db, "session_8f8025ca-605b-4747-ba19-b61643f65164")
    traced = [c for c in context.evidence["measured"] if c.startswith("Traced: ")]
    assert len(traced) == 1 and "within 2% of the traced size" in traced[0]
    assert context.method is not None
    assert context.method.reconstruction.startswith("google-adk 1.20.0 rules (traced):")
    session = "session_8f8025ca-605b-4747-ba19-b61643f65164"
    calls = api.calls(db, session).filter(pl.col("kind") != "summarizer").height
    untraced = calls - api.fidelity(db, session).height
    opened = [c for c in context.evidence["open"] if "untraced" in c]
    assert opened == ([f"Whether the {untraced} untraced requests were exactly as rebuilt: the "
                       "store has no trace of them (`forensics ingest adk-trace`)."]
                      if untraced else [])


def test_calls_of_traced_sessions_carry_the_traced_sizes(traced_db):
    db, _ = traced_db
    traced = api.fidelity(db).select("call_id", "traced_chars", "system_chars", "tools_chars")
    calls = api.calls(db).join(traced, on="call_id")
    assert calls.height == 54
    assert (calls["window_source"] == "traced").all()
    assert (calls["chars"] == calls["traced_chars"]).all()
    assert (calls["system_tools_chars"] == calls["system_chars"] + calls["tools_chars"]).all()
    others = api.calls(db).join(traced, on="call_id", how="anti").filter(
        pl.col("kind") != "summarizer")
    assert set(others["window_source"]) <= {"rebuilt"}
