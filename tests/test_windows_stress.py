"""Reconstructed windows against the generated stress scenario (tests/adk_stress.py).

Token-threshold and sliding compactions (superseded and overlapping ranges),
transfers back and forth (relayed calls and results), parallel calls, an
orphaned call, a pending long-running call, signed and plain thoughts.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("google.adk")

from forensics import api  # noqa: E402
from forensics.families.adk.windows import calls, window  # noqa: E402
from forensics.store import Store  # noqa: E402
from forensics.store.reads import load_sessions  # noqa: E402
from tests.adk_stress import DB_FILE, generate_stress, load_oracle  # noqa: E402


@pytest.fixture(scope="module")
def stress(tmp_path_factory):
    out = tmp_path_factory.mktemp("stress")
    generate_stress(out)
    db = out / "f.duckdb"
    api.ingest_sqlite(db, out / DB_FILE)
    return out, db


def test_every_stress_call_matches_what_adk_sent(stress):
    out, db = stress
    records = {r["event_id"]: r for r in load_oracle(out)}
    marked = {v["function_call_id"]: k for k, v in
              json.loads((out / "result_ids.json").read_text()).items()}
    with Store.open(db, read_only=True) as con:
        (session,) = load_sessions(con)
    counted = {"agent": 0, "summarizer": 0, "relayed": 0, "after_compaction": 0}
    compacted = False
    exact = 0
    for call in calls(session):
        record = records[call.event.event_id]
        counted[call.kind] += 1
        if call.kind == "summarizer":
            compacted = True
            continue
        parts = window(session, call.index)
        # sizes within 0.2% (exact but for relayed payloads over 8 KB, whose str()
        # size is scaled from their first 8 KB); function responses: by marker and name
        chars = sum(call.chars_by_role.values())
        assert abs(chars - record["content_chars"]) <= 0.002 * record["content_chars"]
        exact += chars == record["content_chars"]
        assert sorted(marked[i] for i in call.response_ids if i in marked) == \
            sorted(record["function_response_result_ids"])
        assert len({(p.event_id, p.role == "summary") for p in parts}) == record["contents"]
        names = [p.tool_name for p in parts if p.part_kind == "function_response"
                 and not p.relayed]
        assert sorted(names) == sorted(record["function_response_names"])
        counted["relayed"] += any(p.relayed for p in parts)
        counted["after_compaction"] += compacted
    agent_records = [r for r in records.values() if r["kind"] == "agent"]
    assert counted["agent"] == len(agent_records)
    assert exact >= counted["agent"] - 3  # only the calls that carried the relayed big result
    assert counted["summarizer"] == len(records) - len(agent_records) >= 2
    assert counted["relayed"] >= 4
    assert counted["after_compaction"] >= 6


def test_a_crashed_tool_is_not_a_call(stress):
    _, db = stress
    frame = api.calls(db)
    events = api.events(db, frame["session_id"][0])
    assert events["error_code"].drop_nulls().to_list() == ["ToolCrash"]  # stored, not a call
    assert set(frame["kind"]) == {"agent", "summarizer"}
