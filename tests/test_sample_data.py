"""The bundled sample data: reproducible, and holding the scenario's facts.

`sample_data/generate.py` drives the real google.adk Runner with a scripted
model. These tests regenerate the data into a temporary directory and compare
it with the committed files, then check the oracle sidecar against the stored
sessions. Expected numbers are computed from the data, not written down.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script

pytest.importorskip("google.adk")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
GENERATOR = SAMPLE / "generate.py"
SESSIONS = ("incident", "parallel", "compaction")
OPENSEARCH_FILES = ("otel-v1-apm-span.ndjson", "logs-otel-v1.ndjson", "litellm.ndjson")
SUPPORT_FILES = ("outcomes.csv", "tasks.evalset_result.json")


def _load_generator() -> Any:
    return load_script(GENERATOR, "sample_data_generate")


gen = _load_generator()


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample_data")
    subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out), "--quiet"],
        check=True,
        timeout=600,
    )
    return out


# -- reading the stores with sqlite3 directly ---------------------------------


def _v1_events(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT session_id, id, event_data FROM events").fetchall()
    finally:
        con.close()
    events = []
    for session_id, event_id, data in rows:
        e = json.loads(data)
        events.append({"session_id": session_id, **e, "id": event_id})
    events.sort(key=lambda e: (e["session_id"], e["timestamp"], e["id"]))
    return events


def _sqlite_service_events(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT session_id, id, timestamp, event_data FROM events").fetchall()
    finally:
        con.close()
    events = []
    for session_id, event_id, ts, data in rows:
        e = json.loads(data)
        events.append({"session_id": session_id, **e, "id": event_id, "timestamp": ts})
    events.sort(key=lambda e: (e["session_id"], e["timestamp"], e["id"]))
    return events


def _v0_events(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT session_id, id, author, timestamp, content, error_code FROM events"
        ).fetchall()
    finally:
        con.close()
    events = []
    for session_id, event_id, author, ts, content, error_code in rows:
        when = datetime.strptime(ts, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
        events.append(
            {
                "session_id": session_id,
                "id": event_id,
                "author": author,
                "timestamp": when.timestamp(),
                "content": json.loads(content) if content else None,
                "error_code": error_code,
            }
        )
    events.sort(key=lambda e: (e["session_id"], e["timestamp"], e["id"]))
    return events


def _sessions(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT app_name, user_id, id, create_time, update_time FROM sessions ORDER BY id"
        ).fetchall()
    finally:
        con.close()
    return rows


def _identity(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            e["session_id"],
            e["id"],
            round(e["timestamp"], 6),
            e["author"],
            json.dumps(e.get("content"), sort_keys=True),
        )
        for e in events
    ]


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return _v1_events(SAMPLE / "adk_v1.db")


@pytest.fixture(scope="module")
def calls() -> list[dict[str, Any]]:
    with (SAMPLE / "oracle" / "calls.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    return (event.get("content") or {}).get("parts") or []


def _function_responses(events: list[dict[str, Any]]) -> Iterator[tuple[dict, dict]]:
    for e in events:
        for p in _parts(e):
            if "function_response" in p:
                yield e, p["function_response"]


# -- reproducibility ----------------------------------------------------------


def test_regeneration_reproduces_the_committed_events(regenerated: Path) -> None:
    committed = _identity(_v1_events(SAMPLE / "adk_v1.db"))
    fresh = _identity(_v1_events(regenerated / "adk_v1.db"))
    assert committed, "the committed adk_v1.db holds no events"
    assert fresh == committed


def test_regeneration_reproduces_the_sidecar_and_exports(regenerated: Path) -> None:
    for rel in (
        "oracle/calls.jsonl",
        "oracle/result_ids.json",
        *(f"exports/{s}.camel.json" for s in SESSIONS),
        *(f"exports/{s}.snake.json" for s in SESSIONS),
        "exports/incident.events.json",
        "exports/incident.ndjson",
        *(f"opensearch/{name}" for name in OPENSEARCH_FILES),
        *SUPPORT_FILES,
    ):
        assert (regenerated / rel).read_bytes() == (SAMPLE / rel).read_bytes(), rel


def test_regeneration_reproduces_the_support_sessions(regenerated: Path) -> None:
    committed = _identity(_v1_events(SAMPLE / "tasks.db"))
    fresh = _identity(_v1_events(regenerated / "tasks.db"))
    assert committed, "the committed tasks.db holds no events"
    assert fresh == committed
    assert _sessions(regenerated / "tasks.db") == _sessions(SAMPLE / "tasks.db")


def test_every_storage_path_holds_the_same_events() -> None:
    v1 = _identity(_v1_events(SAMPLE / "adk_v1.db"))
    assert _identity(_sqlite_service_events(SAMPLE / "adk_sqlite_service.db")) == v1
    assert _identity(_v0_events(SAMPLE / "adk_v0.db")) == v1


def test_v0_actions_are_pickled() -> None:
    con = sqlite3.connect(SAMPLE / "adk_v0.db")
    try:
        blobs = [b for (b,) in con.execute("SELECT actions FROM events")]
        tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()
    assert blobs and all(isinstance(b, bytes) and b.startswith(b"\x80") for b in blobs)
    assert "adk_internal_metadata" not in tables  # a V0 database has no version row


def test_exports_hold_the_stored_sessions(events: list[dict[str, Any]]) -> None:
    for sid in SESSIONS:
        stored = [(e["id"], e["author"]) for e in events if e["session_id"] == sid]
        camel = json.loads((SAMPLE / "exports" / f"{sid}.camel.json").read_text("utf-8"))
        snake = json.loads((SAMPLE / "exports" / f"{sid}.snake.json").read_text("utf-8"))
        assert "appName" in camel and "app_name" in snake
        assert [(e["id"], e["author"]) for e in camel["events"]] == stored
        assert [(e["id"], e["author"]) for e in snake["events"]] == stored
    incident = [e["id"] for e in events if e["session_id"] == "incident"]
    listed = json.loads((SAMPLE / "exports" / "incident.events.json").read_text("utf-8"))
    lines = (SAMPLE / "exports" / "incident.ndjson").read_text("utf-8").splitlines()
    assert [e["id"] for e in listed] == incident
    assert [json.loads(line)["id"] for line in lines] == incident


# -- the character definition ------------------------------------------------


def test_part_chars_definition() -> None:
    from google.genai import types

    assert gen.part_chars(types.Part(text="héllo")) == 5
    assert gen.part_chars(types.Part(text="abc", thought=True)) == 3
    fc = types.Part(function_call=types.FunctionCall(name="f", args={"a": 1, "b": "é"}))
    assert gen.part_chars(fc) == 1 + len('{"a":1,"b":"é"}')
    fr = types.Part(function_response=types.FunctionResponse(name="g", response={"x": [1, 2]}))
    assert gen.part_chars(fr) == 1 + len('{"x":[1,2]}')
    blob = types.Part(inline_data=types.Blob(mime_type="text/plain", data=b"hi"))
    dump = blob.model_dump(mode="json", exclude_none=True)
    assert gen.part_chars(blob) == len(json.dumps(dump, ensure_ascii=False, separators=(",", ":")))


# -- the sidecar against the stored sessions ---------------------------------


def test_sidecar_is_consistent_with_the_store(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    by_id = {e["id"]: e for e in events}
    assert [c["call_index"] for c in calls] == list(range(len(calls)))
    for c in calls:
        event = by_id[c["event_id"]]
        assert event["session_id"] == c["session_id"]
        assert event["invocation_id"] == c["invocation_id"]
        assert c["content_chars"] == sum(c["chars_by_role"].values())
        assert len(c["roles"]) == c["contents"]
        request_chars = c["content_chars"] + c["system_instruction_chars"] + c["tools_chars"]
        assert c["prompt_token_count"] == math.ceil(request_chars / gen.CHARS_PER_TOKEN)
        if c["kind"] == "agent":
            assert event["author"] == c["agent"]
            assert event["custom_metadata"] == {"oracle_call": c["call_index"]}
        if c["usage_reported"]:
            assert event["usage_metadata"]["prompt_token_count"] == c["prompt_token_count"]
    # Cached tokens are reported on some calls, and stored with the event.
    cached = [c for c in calls if c.get("cached_content_token_count")]
    assert cached
    for c in cached:
        usage = by_id[c["event_id"]]["usage_metadata"]
        assert usage["cached_content_token_count"] == c["cached_content_token_count"]
        assert c["cached_content_token_count"] <= c["prompt_token_count"]


def test_result_ids_map_to_stored_function_calls(events: list[dict[str, Any]]) -> None:
    result_ids = json.loads((SAMPLE / "oracle" / "result_ids.json").read_text("utf-8"))
    stored = {
        fr["response"]["result_id"]: (e, fr)
        for e, fr in _function_responses(events)
        if "result_id" in (fr.get("response") or {})
    }
    assert set(result_ids) == set(stored)
    function_calls = {
        p["function_call"]["id"]: p["function_call"]
        for e in events
        for p in _parts(e)
        if "function_call" in p
    }
    for rid, info in result_ids.items():
        event, fr = stored[rid]
        assert fr["id"] == info["function_call_id"] and fr["id"].startswith("adk-")
        assert fr["name"] == info["tool"] == function_calls[fr["id"]]["name"]
        assert event["id"] == info["event_id"] and event["session_id"] == info["session_id"]


def test_incident_fat_result_is_resent(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    incident = [e for e in events if e["session_id"] == "incident"]
    history = [fr for _, fr in _function_responses(incident) if fr["name"] == "get_order_history"]
    assert len(history) == 1
    response = history[0]["response"]
    rows = response["data"]
    assert response["summary"]["total"] == len(rows)
    assert 150 <= len(rows) <= 250  # ~200 rows
    row_chars = [len(gen._dumps(r)) for r in rows]
    mean_tokens = sum(row_chars) / len(rows) / gen.CHARS_PER_TOKEN
    assert 800 <= mean_tokens <= 1000  # about 900 tokens a row
    fat_chars = gen.part_chars({"function_response": history[0]})

    holding = [c for c in calls if response["result_id"] in c["function_response_result_ids"]]
    assert all(c["agent"] == "orders_specialist" for c in holding)
    assert all(c["content_chars"] > fat_chars for c in holding)
    # The result is re-sent on several later calls, across both turns.
    assert len(holding) >= 3
    assert len({c["invocation_id"] for c in holding}) == 2


def test_incident_ends_on_a_stored_context_limit_error(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    incident = [e for e in events if e["session_id"] == "incident"]
    errors = [e for e in incident if e.get("error_code")]
    assert len(errors) == 1
    error = errors[0]
    assert error is incident[-1]
    assert error.get("content") is None
    call = calls[error["custom_metadata"]["oracle_call"]]
    assert call["error_code"] == error["error_code"]
    assert call["event_id"] == error["id"]
    reported = int(re.search(r"([\d,]+) tokens", error["error_message"]).group(1).replace(",", ""))
    assert reported == call["prompt_token_count"] > gen.CONTEXT_LIMIT_TOKENS
    # It failed exactly when the request outgrew the limit.
    others = [c for c in calls if c is not call]
    assert all(c["prompt_token_count"] <= gen.CONTEXT_LIMIT_TOKENS for c in others)
    assert not any(c.get("error_code") for c in others)
    # The failing request carried the rows the second tool added.
    earlier = [c for c in calls if c["session_id"] == "incident" and c is not call]
    assert set(call["function_response_result_ids"]) > set(
        earlier[-1]["function_response_result_ids"]
    )


def test_parallel_session_has_six_function_calls(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    parallel = [e for e in events if e["session_id"] == "parallel"]
    fan_out = [e for e in parallel if sum("function_call" in p for p in _parts(e)) == 6]
    assert len(fan_out) == 1
    call_ids = [p["function_call"]["id"] for p in _parts(fan_out[0])]
    assert len(set(call_ids)) == 6

    def response_ids(e: dict[str, Any]) -> set[str]:
        return {p["function_response"]["id"] for p in _parts(e) if "function_response" in p}

    answered = [e for e in parallel if response_ids(e) == set(call_ids)]
    assert len(answered) == 1
    rids = [p["function_response"]["response"]["result_id"] for p in _parts(answered[0])]
    # The next model request holds all six results, in order.
    assert any(c["function_response_result_ids"][-6:] == rids for c in calls)
    fan_out_call = calls[fan_out[0]["custom_metadata"]["oracle_call"]]
    assert fan_out_call["response_function_calls"] == ["get_shipment_status"] * 6


def test_compaction_session_has_overlapping_summaries(
    events: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    session = [e for e in events if e["session_id"] == "compaction"]
    compactions = [e for e in session if (e.get("actions") or {}).get("compaction")]
    assert len(compactions) >= 2
    ranges = [
        (e["actions"]["compaction"]["start_timestamp"], e["actions"]["compaction"]["end_timestamp"])
        for e in compactions
    ]
    for (s1, e1), (s2, e2) in zip(ranges, ranges[1:], strict=False):
        assert s1 < s2 <= e1 < e2  # overlap_size=1: each summary re-covers one invocation
    summarizer = [c for c in calls if c["kind"] == "summarizer"]
    assert len(summarizer) == len(compactions)
    assert [c["event_id"] for c in summarizer] == [e["id"] for e in compactions]
    for c, e in zip(summarizer, compactions, strict=True):
        assert c["agent"] == "summarizer" and c["session_id"] == "compaction"
        assert c["usage_reported"]
        assert e["usage_metadata"]["prompt_token_count"] == c["prompt_token_count"]
    # After a compaction the agent's request starts with the summary, not the raw turns.
    first_summary_at = compactions[0]["timestamp"]
    later = [
        c
        for c in calls
        if c["session_id"] == "compaction"
        and c["kind"] == "agent"
        and c["started_at"] > first_summary_at
    ]
    assert later and all(c["roles"][0] == "model" for c in later)
    before = [c for c in calls if c["session_id"] == "compaction" and c not in later]
    assert all(c["roles"][0] == "user" for c in before)


# -- the OpenSearch documents -------------------------------------------------


def _ndjson(name: str) -> list[dict[str, Any]]:
    lines = (SAMPLE / "opensearch" / name).read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_opensearch_documents_join_the_stored_sessions(calls: list[dict[str, Any]]) -> None:
    spans = _ndjson("otel-v1-apm-span.ndjson")
    logs = _ndjson("logs-otel-v1.ndjson")
    litellm = _ndjson("litellm.ndjson")
    assert [(s["startTime"], s["spanId"]) for s in spans] == sorted(
        (s["startTime"], s["spanId"]) for s in spans
    )
    by_id = {s["spanId"]: s for s in spans}
    for s in spans:
        assert len(s["traceId"]) == 32 and len(s["spanId"]) == 16
        assert s["startTime"] <= s["endTime"] and s["startTime"].endswith("Z")
        if s["parentSpanId"]:
            parent = by_id[s["parentSpanId"]]
            assert parent["traceId"] == s["traceId"]
            assert parent["startTime"] <= s["startTime"] <= s["endTime"] <= parent["endTime"]
        else:
            assert s["traceGroup"] == s["name"] and s["name"].startswith("invoke_workflow ")
    # One generate_content span per agent model call, carrying its stored event.
    agent_calls = [c for c in calls if c["kind"] == "agent"]
    model_spans = {
        s["span.attributes.gcp@vertex@agent@event_id"]: s
        for s in spans
        if s["span.attributes.gen_ai@operation@name"] == "generate_content"
    }
    assert set(model_spans) == {c["event_id"] for c in agent_calls}
    for c in agent_calls:
        s = model_spans[c["event_id"]]
        assert s["span.attributes.gen_ai@conversation@id"] == c["session_id"]
        assert s["span.attributes.gcp@vertex@agent@invocation_id"] == c["invocation_id"]
        assert s["status.code"] == 0  # ADK sets no error status, not even on the rejected call
        if c["usage_reported"]:
            assert s["span.attributes.gen_ai@usage@input_tokens"] == c["prompt_token_count"]
            assert s["span.attributes.gen_ai@response@finish_reasons"] == '["stop"]'
        else:
            assert "span.attributes.gen_ai@usage@input_tokens" not in s
    # Logs point at spans; the error line at the rejected call's generate_content span.
    failed = next(c for c in calls if c.get("error_code"))
    errors = [d for d in logs if d["severityNumber"] == 17]
    assert len(errors) == 1 and errors[0]["attributes"]["event.id"] == failed["event_id"]
    assert errors[0]["spanId"] == model_spans[failed["event_id"]]["spanId"]
    assert errors[0]["attributes"]["gen_ai.request.context_tokens"] == failed["prompt_token_count"]
    for d in logs:
        assert by_id[d["spanId"]]["traceId"] == d["traceId"]
    # LiteLLM: one payload per agent model call.
    assert sorted(d["metadata"]["requester_metadata"]["event_id"] for d in litellm) == sorted(
        c["event_id"] for c in agent_calls
    )
    failures = [d for d in litellm if d["status"] == "failure"]
    assert [d["metadata"]["requester_metadata"]["event_id"] for d in failures] == [
        failed["event_id"]
    ]
    assert failures[0]["error_information"]["error_class"] == "ContextWindowExceededError"


# -- the support app: paired arms ---------------------------------------------


@pytest.fixture(scope="module")
def support_events() -> list[dict[str, Any]]:
    return _v1_events(SAMPLE / "tasks.db")


@pytest.fixture(scope="module")
def outcomes() -> list[dict[str, str]]:
    with (SAMPLE / "outcomes.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _text(event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in _parts(event))


def _support_sessions(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        sessions.setdefault(e["session_id"], []).append(e)
    return sessions


def test_support_sessions_pair_every_task_under_both_arms(
    support_events: list[dict[str, Any]], outcomes: list[dict[str, str]]
) -> None:
    rows = _sessions(SAMPLE / "tasks.db")
    arms = list(gen.ARMS)
    tasks = [t.task_id for t in gen.SUPPORT_TASKS]
    assert len(tasks) == 12 and set(arms) == {"conservative", "aggressive"}
    expected = sorted(f"{t}-{a}" for t in tasks for a in arms)
    assert sorted(sid for _, _, sid, _, _ in rows) == expected
    assert {app for app, *_ in rows} == {"support"}
    for _, user, sid, _, _ in rows:
        assert user == f"eval-{sid.split('-', 1)[1]}"
    # ISO week 2026-W43, over several days.
    days = {datetime.fromtimestamp(e["timestamp"], UTC).date() for e in support_events}
    assert all(d.isocalendar()[:2] == (2026, 43) for d in days) and len(days) >= 4
    assert [(r["session_id"], r["task_id"], r["arm"]) for r in outcomes] == sorted(
        ((f"{t}-{a}", f"{gen.EVAL_SET_ID}/{t}", a) for t in tasks for a in arms),
        key=lambda k: min(e["timestamp"] for e in support_events if e["session_id"] == k[0]),
    )
    # The scripted model is the one prices.toml prices.
    models = {e.get("model_version") for e in support_events if e.get("usage_metadata")}
    assert models == {gen.MODEL_NAME}
    assert f'model = "{gen.MODEL_NAME}"' in (SAMPLE / "prices.toml").read_text("utf-8")


def test_support_outcomes_follow_the_answers(
    support_events: list[dict[str, Any]], outcomes: list[dict[str, str]]
) -> None:
    """success is true exactly when a search result held the order's ticket and the
    final answer names it; otherwise the agent ran out of results or of calls."""
    sessions = _support_sessions(support_events)
    for row in outcomes:
        events = sessions[row["session_id"]]
        question, answer = events[0], events[-1]
        assert question["author"] == "user" and answer["author"] == gen.SUPPORT_AGENT
        assert answer["content"]["parts"] == [{"text": _text(answer)}]  # a text answer
        order_id = re.search(r"ORD-\d{6}-\d{5}", _text(question)).group(0)
        pages = [fr["response"] for _, fr in _function_responses(events)]
        assert all(fr["name"] == "search_tickets" for _, fr in _function_responses(events))
        rows_per_page = gen.ARMS[row["arm"]]
        assert pages and all(p["rows_per_page"] == rows_per_page for p in pages)
        assert all(len(p["rows"]) <= rows_per_page for p in pages)
        assert [p["page"] for p in pages] == list(range(1, len(pages) + 1))
        hits = [r["ticket_id"] for p in pages for r in p["rows"] if r["order_id"] == order_id]
        calls = sum(1 for e in events if e.get("usage_metadata"))
        assert calls == len(pages) + 1 <= gen.SUPPORT_MAX_MODEL_CALLS
        success = row["success"] == "true"
        assert row["success"] in ("true", "false")
        assert success == bool(hits)
        if success:
            assert hits[0] in _text(answer) and order_id in _text(answer)
        else:  # out of results, or out of calls
            assert not pages[-1]["has_more"] or calls == gen.SUPPORT_MAX_MODEL_CALLS


def test_support_aggressive_arm_takes_more_calls_and_costs_more_per_success(
    support_events: list[dict[str, Any]], outcomes: list[dict[str, str]]
) -> None:
    arm_of = {r["session_id"]: r["arm"] for r in outcomes}
    calls = {arm: 0 for arm in gen.ARMS}
    cost = {arm: 0.0 for arm in gen.ARMS}
    result_chars: dict[str, list[int]] = {arm: [] for arm in gen.ARMS}
    rates = gen.ROUGH_RATES
    for e in support_events:
        arm = arm_of[e["session_id"]]
        for _, fr in _function_responses([e]):
            result_chars[arm].append(gen.part_chars({"function_response": fr}))
        usage = e.get("usage_metadata")
        if not usage:
            continue
        calls[arm] += 1
        cached = usage.get("cached_content_token_count") or 0
        cost[arm] += (
            (usage["prompt_token_count"] - cached) * rates["input"]
            + cached * rates["cached"]
            + usage["candidates_token_count"] * rates["output"]
        )
    successes = {arm: sum(r["success"] == "true" for r in outcomes if r["arm"] == arm)
                 for arm in gen.ARMS}  # fmt: skip
    tasks = len(gen.SUPPORT_TASKS)
    base, aggressive = "conservative", "aggressive"
    # Smaller results, more calls: 30-60% more calls per task.
    assert sum(result_chars[aggressive]) / len(result_chars[aggressive]) < sum(
        result_chars[base]
    ) / len(result_chars[base])
    assert 1.3 <= (calls[aggressive] / tasks) / (calls[base] / tasks) <= 1.6
    # Conservative succeeds most tasks; the aggressive arm fails some.
    assert successes[base] >= tasks - 1 and 0 < successes[aggressive] < successes[base]
    # And it costs more per successful task.
    assert cost[aggressive] / successes[aggressive] > cost[base] / successes[base]


def test_support_eval_result_is_the_conservative_arm(outcomes: list[dict[str, str]]) -> None:
    from google.adk.evaluation.eval_result import EvalSetResult
    from google.adk.evaluation.evaluator import EvalStatus

    raw = (SAMPLE / "tasks.evalset_result.json").read_text("utf-8")
    result = EvalSetResult.model_validate_json(raw)
    assert raw == result.model_dump_json(indent=2)  # as adk eval writes it
    assert result.eval_set_id == gen.EVAL_SET_ID
    assert result.eval_set_result_id == f"support_{gen.EVAL_SET_ID}_{result.creation_timestamp}"
    conservative = {r["session_id"]: r for r in outcomes if r["arm"] == "conservative"}
    assert [c.session_id for c in result.eval_case_results] == sorted(conservative)
    for case in result.eval_case_results:
        row = conservative[case.session_id]
        assert f"{case.eval_set_id}/{case.eval_id}" == row["task_id"]  # as the loader names it
        passed = EvalStatus.PASSED if row["success"] == "true" else EvalStatus.FAILED
        assert case.final_eval_status == passed
        assert case.user_id == "eval-conservative"
