"""A model request the provider refused is a call of kind `failed`, whatever it stored.

ADK stores the refusal as an agent's event with `error_code` (the provider's status or
finish reason) and often no usage and no model_version; a crashed tool's event is named
after the exception's class, and the events ADK writes itself to seal an aborted
invocation (`INVOCATION_ABORTED`, answering dangling calls): neither is a model call.
(The stress scenario's test checks a real ADK tool crash stays out of `calls`.)
"""

from __future__ import annotations

import json

import polars as pl

from forensics import api

T0 = 1_790_000_000.0


def _event(n: int, author: str, **fields: object) -> dict:
    return {"id": f"e{n}", "invocation_id": "inv1", "author": author,
            "timestamp": T0 + n, **fields}


def _session() -> dict:
    rows = [{"order": i, "item": "x" * 40} for i in range(50)]
    events = [
        _event(0, "user", content={"role": "user", "parts": [{"text": "my orders?"}]}),
        _event(1, "agent", content={"role": "model", "parts": [
            {"function_call": {"id": "c1", "name": "get_orders", "args": {}}}]},
            usage_metadata={"prompt_token_count": 300, "candidates_token_count": 5},
            model_version="m"),
        _event(2, "agent", content={"role": "user", "parts": [
            {"function_response": {"id": "c1", "name": "get_orders",
                                   "response": {"rows": rows}}}]}),
        # the provider refused the next request: no content, no usage, no model_version
        _event(3, "agent", error_code="RESOURCE_EXHAUSTED", error_message="quota"),
        _event(4, "agent", content={"role": "model", "parts": [
            {"function_call": {"id": "c2", "name": "get_orders", "args": {}}}]},
            usage_metadata={"prompt_token_count": 1200}, model_version="m"),
        # ADK seals the dangling call when the client aborts: not a model call
        _event(5, "agent", content={"role": "user", "parts": [
            {"function_response": {"id": "c2", "name": "get_orders",
                                   "response": {"error": "aborted"}}}]},
            error_code="INVOCATION_ABORTED", error_message="Invocation was aborted by client."),
        # a tool that raised: the node's error event is named after the exception
        _event(6, "agent", error_code="TimeoutError", error_message="scanner down"),
    ]
    return {"id": "refused", "app_name": "app", "user_id": "u", "events": events}


def test_a_refused_request_is_a_failed_call_with_its_rebuilt_window(tmp_path):
    (tmp_path / "refused.json").write_text(json.dumps(_session()))
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [tmp_path / "refused.json"])
    calls = api.calls(db, "refused")
    assert calls["kind"].to_list() == ["agent", "failed", "agent"]
    failed = calls.row(1, named=True)
    assert (failed["call_id"], failed["error_code"]) == ("e3", "RESOURCE_EXHAUSTED")
    assert failed["occupancy_measured"] is None and failed["occupancy_estimated"] > 0
    # the request that was refused carried the tool result
    window = api.window(db, "refused", "e3")
    assert window.filter(pl.col("part_kind") == "function_response")["function_call_id"]\
        .to_list() == ["c1"]
    growth = api.growth(db, "refused").row(0, named=True)
    assert growth["function_call_id"] == "c1" and growth["resent_calls"] == 2
    turn = api.turns(db, "refused").row(0, named=True)
    assert turn["calls"] == 3
    # the error the turn reports is the last one stored
    assert turn["error_code"] == "TimeoutError"
    # the compaction audit counts the failed call's event as a stored raw event
    retained = api.compaction_sessions(db, "refused").row(0, named=True)
    assert retained["retained_events_after"] == 6  # the tool crash stored no content
