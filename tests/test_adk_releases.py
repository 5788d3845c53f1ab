"""Windows rebuilt with each release's rules against what that release's real Runner sent.

tests/adk_releases/<release>/ holds what tests/adk_releases/scenario.py wrote under the
real google-adk 1.18.0 (schema V0), 2.0.0 and 2.13.0 (schema V1), each in a throwaway
venv (build.py): the session store, the oracle of every model request, and ADK's own
OTLP trace. With FORENSICS_ADK_RELEASES=1 the folders are rebuilt first from the
package index into a temporary folder, and the same checks run on the fresh output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.families.adk.releases import (
    from_event_keys,
    from_pickled_actions,
    uncertain_rules,
)
from forensics.families.adk.windows import calls, rules_for, window
from forensics.families.adk.windows import readings as window_readings
from forensics.model import Event, Part, Release, Session
from forensics.store import Store
from forensics.store.reads import load_sessions

HERE = Path(__file__).resolve().parent / "adk_releases"
RELEASES = ("1.18.0", "2.0.0", "2.13.0")


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("FORENSICS_ADK_RELEASES") != "1":
        return HERE
    out = tmp_path_factory.mktemp("adk_releases")
    subprocess.run([sys.executable, str(HERE / "build.py"), "--out", str(out)], check=True)
    return out


def _oracle(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    records = [json.loads(x) for x in (folder / "calls.jsonl").read_text().splitlines()]
    result_ids = json.loads((folder / "result_ids.json").read_text())
    return {r["event_id"]: r for r in records if r["event_id"]}, {
        marker: v["function_call_id"] for marker, v in result_ids.items()
    }


def _ingest(folder: Path, db: Path, *, traces: bool = True, version: str | None = None) -> None:
    api.ingest_sqlite(db, folder / "sessions.db", adk_version=version)
    saved = sorted(folder.glob("*.session.json"))
    if saved:
        api.ingest_json(db, saved, app="shop", user="u-3", adk_version=version)
    if traces:
        api.ingest_traces(db, [folder / "trace.otlp.json"])


def _compare(db: Path, folder: Path) -> dict[str, int]:
    """Every call the store finds against the request the release really sent."""
    oracle, to_call = _oracle(folder)
    marked = set(to_call.values())
    seen = {"calls": 0, "failed": 0, "summarizer": 0, "responses": 0, "within_2pct": 0}
    seen |= {"exact": 0, "contents": 0}
    with Store.open(db, read_only=True) as con:
        sessions = load_sessions(con)
    for session in sessions:
        for call in calls(session):
            record = oracle[call.event.event_id]  # every call the store finds was really made
            if call.kind == "summarizer":
                seen["summarizer"] += 1
                continue
            seen["calls"] += 1
            seen["failed"] += call.kind == "failed"
            want = sorted(to_call[m] for m in record["function_response_result_ids"])
            got = sorted(i for i in call.response_ids if i in marked)
            responses = len(call.response_ids) == len(record["function_response_names"])
            seen["responses"] += got == want and responses
            chars, real = sum(call.chars_by_role.values()), record["content_chars"]
            seen["within_2pct"] += abs(chars - real) <= 0.02 * real
            seen["exact"] += chars == real
            parts = window(session, call.index)
            seen["contents"] += len({p.event_id for p in parts}) == len(record["roles"])
    agent_records = [r for r in oracle.values() if r["kind"] == "agent"]
    assert seen["calls"] == len(agent_records), "a call the release made is missing"
    return seen


@pytest.mark.parametrize("release", RELEASES)
def test_every_call_of_each_release_matches_what_it_sent(releases, release, tmp_path):
    folder = releases / release
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["adk_version"] == release
    assert meta["schema"] == ("V0" if release.startswith("1.") else "V1")
    db = tmp_path / "f.duckdb"
    _ingest(folder, db)
    seen = _compare(db, folder)
    assert seen["failed"] == meta["failed_calls"] == 1  # the refused request is a call
    assert seen["responses"] == seen["calls"]
    assert seen["within_2pct"] == seen["calls"]
    assert seen["exact"] == seen["calls"]
    assert seen["contents"] == seen["calls"]  # one content per event, as ADK sends it
    assert seen["summarizer"] == meta["summarizer_calls"]
    rules = {r for r in api.fidelity(db)["rules"]}
    assert rules == {f"google-adk {release} rules (traced)"}


def test_fidelity_on_each_release_is_exact(releases, tmp_path):
    for release in RELEASES:
        db = tmp_path / f"{release}.duckdb"
        _ingest(releases / release, db)
        frame = api.fidelity(db)
        meta = json.loads((releases / release / "meta.json").read_text())
        assert frame.height == meta["call_llm_spans"] == 20
        assert frame["responses_exact"].all() and (frame["chars_diff"] == 0).all(), release


def test_v0_pickles_bound_the_release_without_a_trace(releases, tmp_path):
    """1.18.0's pickled EventActions have rewind_before_invocation_id (1.17) and lack
    render_ui_widgets (1.27): the relay format of that range is certain."""
    folder = releases / "1.18.0"
    db = tmp_path / "f.duckdb"
    result = api.ingest_sqlite(db, folder / "sessions.db")
    assert result.notes["adk_release"] == (
        "2 sessions inferred: 1.17.0 to before 1.27.0, from the EventActions fields of its "
        "schema V0 pickles"
    )
    oracle, _ = _oracle(folder)
    with Store.open(db, read_only=True) as con:
        sessions = load_sessions(con)
    assert {s.release.since for s in sessions if s.release} == {"1.17.0"}
    for session in sessions:
        for call in calls(session):
            if call.kind != "summarizer":
                assert sum(call.chars_by_role.values()) == oracle[call.event.event_id][
                    "content_chars"
                ]
    label = rules_for(sessions[0].release).label
    assert label == (
        "google-adk 1.17.0 to before 1.27.0 rules (inferred; assumed the newer empty-event "
        "test, compaction superseding)"
    )


def test_a_release_given_at_ingest_rules_and_an_unknown_one_is_assumed(releases, tmp_path):
    folder = releases / "2.0.0"
    given, assumed = tmp_path / "given.duckdb", tmp_path / "assumed.duckdb"
    out = CliRunner().invoke(
        app,
        ["ingest", "adk-sqlite", str(folder / "sessions.db"), "--adk-version", "2.0.0",
         "--db", str(given)],
    )
    assert out.exit_code == 0, out.output
    assert "google-adk release: 3 sessions given: 2.0.0" in out.stdout
    assert _compare(given, folder)["exact"] == 20
    _ingest(folder, assumed, traces=False)
    seen = _compare(assumed, folder)
    # 2.13's quoted relay on a 2.0 session: every call after a hand-over is too big
    assert seen["exact"] < 10 and seen["responses"] == 20
    # V1 rows say 2.0.0 or later (node_info in every event), not which side of 2.7/2.8
    with Store.open(assumed, read_only=True) as con:
        assert {rules_for(s.release).label for s in load_sessions(con)} == {
            "google-adk 2.0.0 or later rules (inferred; assumed the newer summary voice, "
            "relay format)"
        }
        stored = dict(con.run("SELECT session_id, rules FROM fact_sessions"))
    # each session's own label names as assumed only the rules that can change its windows:
    # none of them compacts (the summary voice cannot matter); the prompts settle `relay`
    assert {k: v.split(" ", 1)[1] for k, v in stored.items()} == {
        "relay": "google-adk 2.0.0 to before 2.8.0 rules (inferred from usage)",
        "parallel": "google-adk 2.0.0 or later rules (inferred; assumed the newer relay format)",
        "compaction": "google-adk 2.0.0 or later rules (inferred; assumed the newer relay format)",
    }


def test_a_bad_adk_version_is_refused_before_reading(tmp_path):
    out = CliRunner().invoke(
        app,
        ["ingest", "adk-sqlite", str(HERE / "2.0.0" / "sessions.db"), "--adk-version", "2.x",
         "--db", str(tmp_path / "f.duckdb")],
    )
    assert out.exit_code != 0
    assert "--adk-version: not a release number (X.Y.Z): '2.x'" in out.output
    assert not (tmp_path / "f.duckdb").exists()


def test_the_otlp_trace_names_its_release_in_the_scope(releases, tmp_path):
    db = tmp_path / "f.duckdb"
    result = api.ingest_traces(db, [releases / "2.0.0" / "trace.otlp.json"])
    assert result.rows_loaded == 20 and not result.skips
    assert result.notes["adk_versions"] == ["2.0.0"]


def test_otlp_json_lines_and_bad_spans(tmp_path):
    """A collector's file exporter writes one request per line; a bad span is skipped
    by its position and the good ones are kept."""
    document = json.loads((HERE / "1.18.0" / "trace.otlp.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    calls_only = [s for s in spans if s["name"] == "call_llm"]
    first, second = dict(document), json.loads(json.dumps(document))
    first["resourceSpans"] = [{**document["resourceSpans"][0], "scopeSpans": [
        {"scope": {"name": "gcp.vertex.agent", "version": "1.18.0"}, "spans": calls_only[:3]}]}]
    broken = json.loads(json.dumps(calls_only[3]))
    broken["spanId"] = "not-hex"
    second["resourceSpans"] = [{"scopeSpans": [{"spans": [broken, calls_only[4], 7]}]}]
    path = tmp_path / "collector.json"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    db = tmp_path / "f.duckdb"
    result = api.ingest_traces(db, [path])
    assert result.rows_loaded == 4
    reasons = {s.locator: s.reason for s in result.skips}
    assert reasons == {
        f"{path}:2: resourceSpans[0].scopeSpans[0].spans[0]": "spanId is not hex: 'not-hex'",
        f"{path}:2: resourceSpans[0].scopeSpans[0].spans[2]": "span is not a JSON object",
    }
    with api.open_store(db) as store:
        versions = store.run("SELECT count(*), count(adk_version) FROM traced_calls")
    assert versions == [(4, 3)]  # the second request has no scope: its release is unknown


# -- the release evidence itself ------------------------------------------------


def _fields(*extra: str, drop: tuple[str, ...] = ()) -> frozenset[str]:
    base = {"skip_summarization", "state_delta", "artifact_delta", "transfer_to_agent",
            "escalate", "requested_auth_configs"}
    return frozenset((base | set(extra)) - set(drop))


def test_pickled_fields_bound_the_release():
    r = from_pickled_actions([_fields(
        "requested_tool_confirmations", "compaction", "end_of_agent", "agent_state",
        "rewind_before_invocation_id")])
    assert r is not None and (r.since, r.until) == ("1.17.0", "1.27.0")
    assert uncertain_rules(r) == ["empty-event test", "compaction superseding"]
    old = from_pickled_actions([_fields()])
    assert old is not None and (old.since, old.until) == ("1.5.0", "1.14.0")
    assert rules_for(old).compaction_applied is False
    assert uncertain_rules(old) == ["relayed thoughts"]
    newest = from_pickled_actions([_fields(
        "requested_tool_confirmations", "compaction", "end_of_agent", "agent_state",
        "rewind_before_invocation_id", "render_ui_widgets", "route", "set_model_response",
        "transfer_reason", "something_from_3_0")])
    assert newest is not None and (newest.since, newest.until) == ("2.9.0", None)
    assert rules_for(newest).fenced_relay and uncertain_rules(newest) == []
    two = from_pickled_actions([_fields(
        "requested_tool_confirmations", "compaction", "end_of_agent", "agent_state",
        "rewind_before_invocation_id", "render_ui_widgets", "route", "set_model_response")])
    assert two is not None and (two.since, two.until) == ("2.0.0", "2.9.0")
    assert uncertain_rules(two) == ["summary voice", "relay format"]


def test_pickles_that_do_not_bound_the_release():
    assert from_pickled_actions([]) is None
    assert from_pickled_actions([frozenset({"state_delta"})]) is None  # not a whole EventActions
    # one event of 1.14 and one with a 2.0-only field cannot be one release's
    assert from_pickled_actions([_fields(), _fields("route")]) is None


def test_rules_by_release():
    def at(v: str):
        return rules_for(Release(v, "given", ""))

    assert not at("1.15.1").compaction_applied and at("1.16.0").compaction_applied
    assert not at("1.24.1").compaction_superseded and at("1.25.0").compaction_superseded
    assert not at("2.6.3").agent_voiced_summary and at("2.7.0").agent_voiced_summary
    assert not at("2.7.1").fenced_relay and at("2.8.0").fenced_relay
    assert rules_for(None).fenced_relay and rules_for(None).basis == "assumed"
    assert not at("1.9.0").relay_thought_raw and at("1.10.0").relay_thought_raw
    assert not at("1.13.0").relay_skips_thoughts and at("1.14.0").relay_skips_thoughts
    assert not at("1.21.0").all_parts_visibility and at("1.22.0").all_parts_visibility


def _thinking_session() -> Session:
    """A helper agent's turn of a thought and a text, then the root agent's call."""
    def part(kind: str, chars: int, index: int = 0) -> Part:
        return Part("content", index, kind, None, None, False, chars, chars, None)

    def event(n: int, author: str, parts: list[Part], prompt: int | None = None) -> Event:
        return Event(f"e{n}", "inv", author, None, None, float(n), False, None, None, False,
                     None, prompt, None, None, frozenset(), "m" if prompt else None, parts)

    return Session("app", "user", "s", [
        event(0, "user", [part("text", 10)]),
        event(1, "helper", [part("thought", 40), part("text", 20, 1)], 100),
        event(2, "helper", [part("thought", 30)], 100),  # an event of thoughts only
        event(3, "root", [part("text", 5)], 100),
    ])


@pytest.mark.parametrize("version,relayed", [
    # 1.5-1.9: each thought "said"; the thought-only event is sent (first part not empty)
    ("1.9.0", [12, len("[helper] said: ") + 40, len("[helper] said: ") + 20,
               12, len("[helper] said: ") + 30]),
    # 1.10-1.13: thoughts copied as they are
    ("1.13.0", [12, 40, len("[helper] said: ") + 20, 12, 30]),
    # 1.14-1.21: thoughts skipped; an event left with nothing is not relayed at all
    ("1.21.0", [12, len("[helper] said: ") + 20]),
    # 1.22+: the thought-only event is not even a candidate
    ("2.7.0", [12, len("[helper] said: ") + 20]),
])
def test_another_agents_thoughts_by_release(version, relayed):
    session = _thinking_session()
    session.release = Release(version, "given", "")
    parts = window(session, 3)
    assert [p.chars for p in parts if p.relayed] == relayed


def test_traced_calls_use_the_traced_window(releases, tmp_path):
    """A traced call's figures are the request's own: its characters, and the system
    instruction plus tools as known characters rather than a residual."""
    import polars as pl

    folder = releases / "1.18.0"
    db = tmp_path / "f.duckdb"
    _ingest(folder, db)
    oracle, _ = _oracle(folder)
    frame = api.calls(db).filter(pl.col("kind") != "summarizer")
    assert set(frame["window_source"]) == {"traced"} and frame.height == 20
    for row in frame.iter_rows(named=True):
        record = oracle[row["call_id"]]
        assert row["chars"] == record["content_chars"]
        assert row["system_tools_chars"] == (
            record["system_instruction_chars"] + record["tools_chars"]
        )
        if row["occupancy_measured"] is None:  # the refused request: estimated whole
            assert row["kind"] == "failed" and row["occupancy_source"] == "estimated"
            continue
        # the scripted model counts ceil(all characters / 3.6): the parts add up
        parts = sum(v for v in row["by_role"].values() if v is not None)
        assert abs(parts - row["occupancy_measured"]) <= 2, row["call_id"]
    untraced = tmp_path / "untraced.duckdb"
    _ingest(folder, untraced, traces=False)
    assert set(api.calls(untraced)["window_source"].drop_nulls()) == {"rebuilt"}


def test_json_events_bound_the_release_by_their_keys(releases, tmp_path):
    """Events stored as JSON (schema V1, a saved session) carry the keys their release
    writes in every event: 2.0.0 and 2.13.0's V1 rows say 2.0.0 or later, 1.18.0's saved
    session (snake_case, as `adk run --save_session` wrote it then) 1.18.0 to before
    2.0.0; every range holds the release that wrote it."""
    for release, files in (("2.0.0", "sessions.db"), ("2.13.0", "sessions.db"),
                           ("1.18.0", "compaction.session.json")):  # fmt: skip
        db = tmp_path / f"{release}.duckdb"
        if files.endswith(".db"):
            api.ingest_sqlite(db, releases / release / files)
        else:
            api.ingest_json(db, [releases / release / files], app="shop", user="u-3")
        with Store.open(db, read_only=True) as con:
            found = {s.release for s in load_sessions(con)}
        assert found and all(r is not None and r.basis == "inferred" for r in found)
        for r in found:
            assert r.since is not None
            assert _v(r.since) <= _v(release) and (r.until is None or _v(release) < _v(r.until))
        expected = ("2.0.0", None) if release != "1.18.0" else ("1.18.0", "2.0.0")
        assert {(r.since, r.until) for r in found} == {expected}


def _v(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


REAL = Path(__file__).resolve().parents[2] / "shared" / "real_data" / "adk_traces"


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_real_sessions_without_their_traces_are_placed_by_their_keys(tmp_path):
    """The public session+trace pairs (google-adk 1.18.0, the web API's camelCase): read
    without their traces, each session's keys say 1.18.0 to before 2.0.0, and the rules of
    that range's newest release put every traced request within 2% (the 2.13 rules
    assumed before put 18 of 54 off by more)."""
    import polars as pl

    sessions = sorted(REAL.glob("*__session_*.json"))
    traces = sorted(REAL.glob("*__trace_*.json"))
    db = tmp_path / "keys.duckdb"
    result = api.ingest_json(db, sessions, app="w", user="u")
    assert result.notes["adk_release"] == (
        f"{len(sessions)} sessions inferred: 1.18.0 to before 2.0.0, from the keys of its "
        "stored events"
    )
    with Store.open(db, read_only=True) as con:
        (found,) = {s.release for s in load_sessions(con)}
    assert found is not None and found.version == "1.39.99"
    for version, within in ((found.version, 54), ("2.13.0", 36)):
        given = tmp_path / f"{version}.duckdb"
        api.ingest_json(given, sessions, app="w", user="u", adk_version=version)
        api.ingest_traces(given, traces)
        fidelity = api.fidelity(given)
        assert fidelity.height == 54
        assert fidelity.filter(pl.col("chars_diff_pct").abs() <= 2).height == within
        # the same windows as the ingest that inferred the release builds
        if version == found.version:
            ours = api.calls(db).select("call_id", "occupancy")
            theirs = api.calls(given).select("call_id", "occupancy")
            assert ours.sort("call_id").equals(theirs.sort("call_id"))


def _keys(**found: object) -> dict[str, object]:
    return {"whole_events": 3, "without_confirmations": 0, "without_node_info": 3, **found}


def test_event_keys_bound_the_release():
    r = from_event_keys(_keys(model_version=True))
    assert r is not None and (r.since, r.until, r.version) == ("1.18.0", "2.0.0", "1.39.99")
    assert uncertain_rules(r) == ["empty-event test", "compaction superseding"]
    old = from_event_keys(_keys(without_confirmations=3))
    assert old is not None and (old.since, old.until) == ("1.5.0", "1.14.0")
    two = from_event_keys(_keys(without_node_info=0, node_info=True))
    assert two is not None and (two.since, two.until, two.version) == ("2.0.0", None, "2.13.0")
    assert uncertain_rules(two) == ["summary voice", "relay format"]
    # turn_complete_reason: 1.34.2 to 1.39.x, then again from 2.2.0
    late = from_event_keys(_keys(turn_complete_reason=True))
    assert late is not None and (late.since, late.until) == ("1.34.2", "2.0.0")
    again = from_event_keys(_keys(without_node_info=0, node_info=True, turn_complete_reason=True))
    assert again is not None and again.since == "2.2.0"
    fenced = from_event_keys(_keys(without_node_info=0, node_info=True, transfer_reason=True))
    assert fenced is not None and fenced.since == "2.9.0" and uncertain_rules(fenced) == []


def test_event_keys_that_do_not_bound_the_release():
    assert from_event_keys({}) is None
    assert from_event_keys(_keys(whole_events=0)) is None  # no whole event
    # events with node_info and events without: two releases wrote the session
    assert from_event_keys(_keys(without_node_info=1, node_info=True)) is None
    # one event without the 1.14 key, one with a key of 1.18: not one release
    assert from_event_keys(_keys(without_confirmations=1, model_version=True)) is None


def _export(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"id": "s-keys", "app_name": "a", "user_id": "u", "state": {},
                                "last_update_time": 1.0, "events": events}))  # fmt: skip


def _event(n: int, **extra: Any) -> dict[str, Any]:
    actions = {"state_delta": {}, "artifact_delta": {}, "requested_auth_configs": {},
               "requested_tool_confirmations": {}}  # fmt: skip
    return {"id": f"e{n}", "invocation_id": "i1", "author": "user" if n % 2 else "agent",
            "timestamp": 1_760_000_000.0 + n, "actions": actions,
            "content": {"role": "user", "parts": [{"text": f"message {n}"}]}, **extra}  # fmt: skip


def _inferred(db: Path) -> list[tuple[Any, ...]]:
    with Store.open(db, read_only=True) as con:
        return con.run("SELECT session_id, since_version, until_version, ingest_id"
                       " FROM session_releases WHERE basis = 'inferred'")  # fmt: skip


def test_an_inferred_range_is_narrowed_across_ingests_and_forgotten_when_they_disagree(tmp_path):
    """Each ingest infers from the events it reads; what an earlier one stored narrows it
    (never widened by fewer keys), a range that stays as stored is not written again (its
    ingest is in the facts' stamp), and a session two releases wrote is not placed."""
    db, export = tmp_path / "k.duckdb", tmp_path / "s.json"
    _export(export, [_event(1), _event(2, model_version="gemini-2.5-flash")])
    api.ingest_json(db, [export])
    assert _inferred(db) == [("s-keys", "1.18.0", "2.0.0", 1)]
    api.ingest_json(db, [export])  # the same events read again: nothing written
    assert _inferred(db) == [("s-keys", "1.18.0", "2.0.0", 1)]
    # later events of the same writer without model_version: not widened back to 1.14
    _export(export, [_event(1), _event(2, model_version="gemini-2.5-flash"), _event(3)])
    api.ingest_json(db, [export])
    assert _inferred(db) == [("s-keys", "1.18.0", "2.0.0", 1)]
    # then events with node_info: a 2.x release wrote them too, so no range holds
    _export(export, [_event(1), _event(2, model_version="gemini-2.5-flash"), _event(3),
                     _event(4, node_info={"path": ""})])  # fmt: skip
    result = api.ingest_json(db, [export])
    assert _inferred(db) == [] and "adk_release" not in result.notes
    with Store.open(db, read_only=True) as con:
        assert {rules_for(s.release).basis for s in load_sessions(con)} == {"assumed"}


def test_pickles_then_json_rows_of_the_same_sessions_keep_the_narrower_range(tmp_path):
    """The sample's V0 store (pickles: 2.9.0 or later) then its V1 store of the same
    sessions (keys: 2.0.0 or later): what both allow, 2.9.0 or later."""
    samples = Path(__file__).resolve().parents[1] / "sample_data"
    db = tmp_path / "v.duckdb"
    api.ingest_sqlite(db, samples / "adk_v0.db")
    first = {r[0]: r[1:3] for r in _inferred(db)}
    api.ingest_sqlite(db, samples / "adk_v1.db")
    after = {r[0]: r[1:3] for r in _inferred(db)}
    assert first and all(after[s] == first[s] for s in first), (first, after)


def test_the_tables_that_hold_the_events_narrow_the_range_where_they_agree():
    """DatabaseSessionService writes schema V1 from 1.22.0, ADK's SqliteSessionService
    exists from 1.19.0: a session read from them is of that release or later, unless its
    keys are older (a history migrated into them keeps the keys' range)."""
    r = from_event_keys(_keys(model_version=True), "v1")
    assert r is not None and (r.since, r.until) == ("1.22.0", "2.0.0")
    assert r.detail.endswith("from the keys of its stored events and a schema V1 database")
    assert uncertain_rules(r) == ["compaction superseding"]
    svc = from_event_keys(_keys(), "sqlite-service")
    assert svc is not None and (svc.since, svc.until) == ("1.19.0", "2.0.0")
    migrated = from_event_keys(_keys(without_confirmations=3), "v1")  # 1.13 keys in V1
    assert migrated is not None and (migrated.since, migrated.until) == ("1.5.0", "1.14.0")
    newer = from_event_keys(_keys(without_node_info=0, node_info=True), "v1")
    assert newer is not None and (newer.since, newer.detail) == (
        "2.0.0", "2.0.0 or later, from the keys of its stored events")


REAL_ADK = Path(__file__).resolve().parents[2] / "shared" / "real_data" / "adk"


@pytest.mark.skipif(not REAL_ADK.is_dir(), reason="shared/real_data is absent")
def test_a_real_sqlite_service_file_is_placed_by_its_keys_and_its_tables(tmp_path):
    result = api.ingest_sqlite(tmp_path / "w.duckdb", REAL_ADK / "adk-web_tools_agent_session.db")
    assert result.notes["adk_release"] == (
        "5 sessions inferred: 1.19.0 to before 2.0.0, from the keys of its stored events and "
        "a SqliteSessionService file"
    )


def _within_or_ranged(db: Path, folder: Path) -> tuple[int, int]:
    """(calls within 2% of what the release sent, calls whose stated range holds it);
    fails on a call that is neither."""
    oracle, _ = _oracle(folder)
    within = ranged = 0
    with Store.open(db, read_only=True) as store:
        rows = store.run(
            "SELECT call_id, chars_user + chars_model + chars_tool + chars_summary,"
            " chars_low, chars_high FROM fact_calls WHERE kind <> 'summarizer'"
        )
    for call_id, chars, low, high in rows:
        real = oracle[call_id]["content_chars"]
        if abs(chars - real) <= 0.02 * real:
            within += 1
        else:
            assert low is not None and low <= real <= high, (folder.name, call_id, chars, real)
            ranged += 1
    return within, ranged


@pytest.mark.parametrize("release", RELEASES)
def test_without_a_release_or_trace_each_call_is_within_2pct_or_in_its_range(
    releases, release, tmp_path
):
    """Issue 30: each release scenario read with no --adk-version and no trace. 2.0.0's
    rows say "2.0.0 or later", a span with the 2.8.0 relay format inside: the measured
    prompts settle it for one session (they fit the older format's windows and not the
    newer's), and the other two sessions' relayed calls get a range holding the truth."""
    db = tmp_path / "f.duckdb"
    _ingest(releases / release, db, traces=False)
    within, ranged = _within_or_ranged(db, releases / release)
    assert within + ranged == 20
    calls = api.calls(db)
    shown = calls.filter(calls["occupancy_estimated_low"].is_not_null())
    assert shown.height >= ranged  # (a call within 2% on the newest rules may have one too)
    assert set(shown["rules_range"]) <= {"relay format (2.8.0)"}
    with Store.open(db, read_only=True) as store:
        rules = {r for (r,) in store.run("SELECT rules FROM fact_sessions")}
    if release == "2.0.0":
        assert (within, ranged) == (10, 10)
        assert any("2.0.0 to before 2.8.0 rules (inferred from usage" in r for r in rules)
        # `window` and `fidelity` rebuild each call as the facts hold it: the `relay`
        # session under the rules its prompts chose, not its stored range's newest
        agent = calls.filter(calls["kind"] != "summarizer")
        for call_id, session_id, chars in agent.select("call_id", "session_id", "chars").rows():
            assert api.window(db, session_id, call_id)["chars"].sum() == chars, call_id
    else:
        assert ranged == 0


def test_without_usage_turns_and_growth_show_ranges_that_hold_the_true_releases(
    releases, tmp_path
):
    """Issue 30 item 2 beyond `calls`: the 2.0.0 scenario with its usage removed (nothing
    measured: both stores size with the default ratio, and no prompt settles a range), read
    once with no release and once as 2.0.0. Every turn's peak and cumulative input and
    every tool call's windows and growth read as 2.0.0 lie inside the ranges the first
    store gives; the ranges are there (relayed calls), and so are growth ranges where the
    two rule sets grow a window by different amounts (a transfer another agent carries)."""
    import shutil
    import sqlite3

    import duckdb
    import polars as pl

    from forensics import sql

    stripped = tmp_path / "sessions.db"
    shutil.copy(releases / "2.0.0" / "sessions.db", stripped)
    with sqlite3.connect(stripped) as con:
        con.execute("UPDATE events SET event_data = json_remove(event_data, '$.usage_metadata')")
    unknown, known = tmp_path / "unknown.duckdb", tmp_path / "known.duckdb"
    api.ingest_sqlite(unknown, stripped)
    api.ingest_sqlite(known, stripped, adk_version="2.0.0")
    assert api.ratios(unknown) == api.ratios(known)

    def inside(row: dict[str, Any], figure: str, truth: int, slack: int = 0) -> bool:
        low, high = row[f"{figure}_low"], row[f"{figure}_high"]
        if low is None:
            low = high = row[figure]
        return bool(low - slack <= truth <= high + slack)

    key = ["session_id", "turn"]
    turns = api.turns(unknown).join(api.turns(known), on=key, suffix="_true")
    assert turns.height == api.turns(known).height > 0
    for row in turns.iter_rows(named=True):
        assert inside(row, "peak_occupancy_estimated", row["peak_occupancy_estimated_true"]), row
        assert inside(row, "cumulative_input_estimated",
                      row["cumulative_input_estimated_true"]), row  # fmt: skip
        # nothing measured: the best figures are the estimates, with the same ranges
        assert inside(row, "peak_occupancy", row["peak_occupancy_true"]), row
        assert inside(row, "cumulative_input", row["cumulative_input_true"]), row
        assert row["cumulative_input_low"] == row["cumulative_input_estimated_low"]
    ranged_calls = api.calls(unknown).filter(
        pl.col("occupancy_estimated_low").is_not_null() & (pl.col("kind") == "agent")).height
    ranged_turns = turns.filter(turns["cumulative_input_estimated_low"].is_not_null())
    assert ranged_turns.height and set(ranged_turns["rules_range"]) == {"relay format (2.8.0)"}
    assert (ranged_turns["cumulative_input_estimated_low"]
            < ranged_turns["cumulative_input_estimated_high"]).all()  # fmt: skip

    growth = api.growth(unknown).join(api.growth(known), on="function_call_id", suffix="_true")
    assert growth.height == api.growth(known).height > 0
    for row in growth.iter_rows(named=True):
        for figure in ("occupancy_before", "occupancy_after"):
            assert inside(row, figure, row[f"{figure}_true"]), (figure, row)
        # the growth range is of the characters grown, over the ratio: the two windows'
        # rounding to whole tokens, under each rule set, can move its growth by two
        assert inside(row, "growth_tokens", row["growth_tokens_true"], slack=2), row
    grew = growth.filter(growth["growth_tokens_low"].is_not_null())
    assert grew.height and (grew["growth_tokens_low"] < grew["growth_tokens_high"]).all()
    assert set(grew["rules_range"]) == {"relay format (2.8.0)"}
    # where both rule sets grow the window alike, no growth range even if the windows differ
    alike = growth.filter(growth["occupancy_before_low"].is_not_null()
                          & growth["growth_tokens_low"].is_null())  # fmt: skip
    assert ((alike["growth_tokens"] - alike["growth_tokens_true"]).abs() <= 2).all()
    assert alike.height

    # no usage: each call is priced on its estimate, over the rule sets a range of cost
    prices = tmp_path / "prices.toml"
    prices.write_text('[[alias]]\nmodel = "scripted-shop-model"\nprice_as = '
                      '"gemini-2.5-flash"\nprovider = "google"\nnote = "a test"\n')
    cost = api.cost(unknown, by="call", prices=prices).join(
        api.cost(known, by="call", prices=prices), on="call_id", suffix="_true")
    assert cost.height == 20 and set(cost["cost_source"]) <= {"estimated", "failed"}
    assert (cost["cost_usd_low"] <= cost["cost_usd_low_true"]).all()
    assert (cost["cost_usd_high_true"] <= cost["cost_usd_high"]).all()
    assert cost.filter(cost["cost_usd_low"] < cost["cost_usd_high"]).height >= ranged_calls
    # a highest estimate past a price tier is priced at that tier, the lowest at its own
    # (one call's stored range widened by a million characters: no window of the
    # scenario comes near 200,000 tokens)
    from genai_prices import Usage, calc_price

    widened = tmp_path / "widened.duckdb"
    shutil.copy(unknown, widened)
    with duckdb.connect(str(widened)) as con:
        (call_id,) = con.execute(
            "SELECT call_id FROM fact_calls WHERE chars_low IS NOT NULL AND kind = 'agent'"
            " ORDER BY call_id LIMIT 1").fetchone()  # fmt: skip
        con.execute("UPDATE fact_calls SET chars_high = chars_low + 1000000 WHERE call_id = ?",
                    [call_id])  # fmt: skip
    prices.write_text(prices.read_text().replace("gemini-2.5-flash", "gemini-2.5-pro"))
    row = api.cost(widened, by="call", prices=prices).filter(
        pl.col("call_id") == call_id).row(0, named=True)  # fmt: skip
    assert row["input_tokens"] < 200_000 < row["input_tokens"] + row["input_tokens_unsure"]

    def list_price(tokens: int) -> Any:
        return calc_price(Usage(input_tokens=tokens), "gemini-2.5-pro", provider_id="google",
                          genai_request_timestamp=row["started_at"]).total_price  # fmt: skip

    assert row["cost_usd_low"] == list_price(row["input_tokens"])
    assert row["cost_usd_high"] == list_price(row["input_tokens"] + row["input_tokens_unsure"])

    # two models read at two ratios: the same characters grown are different tokens, so
    # a growth between windows that have a range has one even where the rule sets grow
    # them alike (the call after `get_orders` given a second model, in both stores)
    def figures(db: Path) -> dict[str, Any]:
        with duckdb.connect(str(db)) as con:
            (fcid, after, main), = con.execute(
                "SELECT g.function_call_id, g.after_call_id, s.main_model FROM fact_tool_calls"
                " AS g JOIN fact_sessions AS s USING (app_name, user_id, session_id)"
                " WHERE g.session_id = 'relay' AND g.tool_name = 'get_orders'").fetchall()
            con.execute("UPDATE fact_calls SET model = 'second' WHERE call_id = ?", [after])
            con.execute("CREATE TEMP TABLE scope_sessions AS SELECT app_name, user_id,"
                        " session_id, row_number() OVER () AS ordinal FROM fact_sessions")
            con.execute("CREATE TEMP TABLE scope_ratios AS SELECT * FROM (VALUES (?, 4.0),"
                        " ('second', 2.5)) AS t(model, chars_per_token)", [main])
            query = sql.load("facts/growth_figures").sql.strip().rstrip(";")
            chosen = (f"SELECT g.* FROM ({query}) AS g JOIN fact_tool_calls AS f"  # noqa: S608
                      " USING (app_name, user_id, session_id, ordinal)"
                      " WHERE f.function_call_id = ?")
            rows = con.execute(chosen, [fcid])
            names = [d[0] for d in rows.description]
            return dict(zip(names, rows.fetchone(), strict=True))

    for db in (unknown, known):
        shutil.copy(db, tmp_path / f"two-{db.name}")
    two, truth = figures(tmp_path / f"two-{unknown.name}"), figures(tmp_path / f"two-{known.name}")
    assert two["growth_low"] < two["growth_high"]
    assert two["growth_low"] <= truth["growth"] <= two["growth_high"], (two, truth)


def test_a_rule_set_too_large_to_rebuild_is_named_not_silently_left_out(
    releases, tmp_path, monkeypatch
):
    """A rule set whose windows are too large to rebuild (SessionTooLarge: before 1.16.0
    a long session's compactions are ignored) is left out of the session's range, and
    its rules say so. The fault is injected (a real one carries 10 million tool results):
    the 2.13.0 scenario's `compaction` session, whose keys say "2.0.0 or later", made too
    large under the rules of 2.0.0 to before 2.7.0."""
    from forensics.analysis import facts

    real = facts.session_calls

    def too_large_until(until: str):  # type: ignore[no-untyped-def]
        def calls_of(session):  # type: ignore[no-untyped-def]
            r = session.release
            if session.session_id == "compaction" and r is not None and r.until == until:
                raise facts.SessionTooLarge("injected")
            return real(session)

        return calls_of

    monkeypatch.setattr(facts, "session_calls", too_large_until("2.7.0"))
    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, releases / "2.13.0" / "sessions.db")
    with Store.open(db, read_only=True) as store:
        rules = dict(store.run("SELECT session_id, rules FROM fact_sessions"))
    assert rules["compaction"].endswith(
        "(not rebuilt under the rules of 2.0.0 to before 2.7.0: too large; no range holds "
        "them)")  # fmt: skip
    assert "not rebuilt" not in rules["relay"]
    # without usage nothing settles the range: the rule sets on either side of the one
    # left out rebuild calls apart, and both boundaries they span are named (2.7.0's
    # summary voice, whose rule set was the one left out, and 2.8.0's relay format)
    import shutil
    import sqlite3

    stripped = tmp_path / "sessions.db"
    shutil.copy(releases / "2.13.0" / "sessions.db", stripped)
    with sqlite3.connect(stripped) as con:
        con.execute("UPDATE events SET event_data = json_remove(event_data, '$.usage_metadata')")
    monkeypatch.setattr(facts, "session_calls", too_large_until("2.8.0"))
    bare = tmp_path / "bare.duckdb"
    api.ingest_sqlite(bare, stripped)
    with Store.open(bare, read_only=True) as store:
        (found,) = store.run(
            "SELECT rules, rules_range FROM fact_sessions WHERE session_id = 'compaction'")
    assert found[0].endswith("(not rebuilt under the rules of 2.7.0 to before 2.8.0: too "
                             "large; no range holds them)")  # fmt: skip
    assert found[1] == "summary voice (2.7.0), relay format (2.8.0)"


def test_a_range_names_only_the_boundaries_that_change_a_call(releases, tmp_path):
    """A release never known spans every modelled one: the 2.13.0 scenario's `parallel`
    session (two agents, no thoughts, too few measured calls to fit) is rebuilt under the
    rules before 1.10, 1.10 to 1.14, 1.14 to 2.8 and from 2.8; only the 2.8.0 relay
    format changes a call, so only it is named (the relayed-thought rules cannot: no
    agent thought); the prompts place the other two sessions at 2.8.0 or later."""
    from dataclasses import replace

    from forensics.analysis.facts import session_facts
    from forensics.families.adk.releases import sub_range

    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, releases / "2.13.0" / "sessions.db", adk_version="2.13.0")
    with Store.open(db, read_only=True) as con:
        sessions = {s.session_id: replace(s, release=None) for s in load_sessions(con)}
    assert [(r.since, r.until) for r in window_readings(sessions["parallel"])] == [
        ("1.5.0", "1.10.0"), ("1.10.0", "1.14.0"), ("1.14.0", "2.8.0"), ("2.8.0", None)]
    found = {k: session_facts(s).rows["fact_sessions"][0] for k, s in sessions.items()}
    assert found["parallel"]["rules_range"] == "relay format (2.8.0)"
    for name in ("relay", "compaction"):
        assert found[name]["rules_range"] is None
        assert found[name]["rules"].endswith(
            "google-adk 2.8.0 or later rules (inferred from usage)")
    # placed at 1.5.0 to before 1.16.0, the relayed-thought rules inside can apply (two
    # agents) but change no call: nothing is a range, and the rules name none as assumed
    # (the label said "assumed the newer relayed thoughts")
    older = replace(sessions["parallel"], release=sub_range(None, (1, 5, 0), (1, 16, 0)))
    assert [(r.since, r.until) for r in window_readings(older)] == [
        ("1.5.0", "1.10.0"), ("1.10.0", "1.14.0"), ("1.14.0", "1.16.0")]
    row = session_facts(older).rows["fact_sessions"][0]
    assert row["rules_range"] is None
    assert row["rules"].endswith("google-adk 1.5.0 to before 1.16.0 rules (inferred)"), row


def test_usage_picks_the_reading_it_fits_and_not_one_it_cannot_tell():
    """_fits: prompts that are a ratio of the characters plus a constant per agent fit;
    prompts off the line by 60 tokens of about 500 do not; too few measured calls cannot
    tell."""
    from forensics.analysis.facts import _fits, _kept
    from forensics.model import Call

    def call(chars: int, tokens: int | None, author: str = "a") -> Call:
        event = Event(f"e{chars}", "inv", author, None, None, float(chars), False, None,
                      None, False, None, tokens, None, None, frozenset(), "m")  # fmt: skip
        found = Call(event, 0, "agent", 1, {"user": chars}, [], [])
        found.model = "m"
        return found

    exact = [call(c, 250 + c // 4) for c in (400, 800, 1600, 3200)]
    assert _fits(exact) is True
    # the readings kept: those that fit, where every other is clearly out (past 4%) and
    # they are one run of releases; a reading between 2% and 4%, or one that cannot tell,
    # keeps them all
    assert _kept([0.001, 0.3]) == [0] and _kept([0.3, 0.01, 0.001]) == [1, 2]
    assert _kept([0.001, 0.03]) == [0, 1] and _kept([0.001, None]) == [0, 1]
    assert _kept([0.001, 0.3, 0.001]) == [0, 1, 2] and _kept([0.3, 0.5]) == [0, 1]
    # every other call 60 tokens off (windows that hold what the prompts did not)
    drift = [call(c, 250 + c // 4 + 60 * (i % 2)) for i, c in enumerate((400, 800, 1600, 3200))]
    assert _fits(drift) is False
    assert _fits(exact[:2]) is None
