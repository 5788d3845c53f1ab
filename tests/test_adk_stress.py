"""The generated stress scenario (tests/adk_stress.py) happened as designed.

The scenario is generated once per module into a temporary directory. Every
figure checked here is computed from the stored session (stress.db, read with
sqlite3 and validated into ADK events) and from the sidecar (calls.jsonl,
result_ids.json), not written down. To look inside a request, the tests rebuild
it with ADK's own assembler (``_get_contents``) from the events stored before
the call started, after checking that this rebuild matches the sidecar for
every agent call.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.events.event import Event  # noqa: E402
from google.adk.flows.llm_flows.context._contents import _get_contents  # noqa: E402
from google.genai import types  # noqa: E402

from tests.adk_stress import (  # noqa: E402
    COMPACTION_INTERVAL,
    DB_FILE,
    EVENT_RETENTION_SIZE,
    INBOUND_RECORDS,
    TOKEN_THRESHOLD,
    gen,
    generate_stress,
    load_oracle,
)

RELAY_PREFIX = "For context:"


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("adk_stress")
    generate_stress(out)
    return out


@pytest.fixture(scope="module")
def events(out_dir: Path) -> list[Event]:
    con = sqlite3.connect(out_dir / DB_FILE)
    try:
        rows = con.execute("SELECT event_data FROM events").fetchall()
    finally:
        con.close()
    stored = [Event.model_validate(json.loads(data)) for (data,) in rows]
    stored.sort(key=lambda e: e.timestamp)
    return stored


@pytest.fixture(scope="module")
def calls(out_dir: Path) -> list[dict[str, Any]]:
    return load_oracle(out_dir)


@pytest.fixture(scope="module")
def requests(events: list[Event], calls: list[dict[str, Any]]) -> dict[int, list[types.Content]]:
    """Each agent call's contents, rebuilt by ADK from the events stored before it."""
    return {c["call_index"]: _rebuild(events, c) for c in calls if c["kind"] == "agent"}


# -- helpers ------------------------------------------------------------------


def _rebuild(events: list[Event], call: dict[str, Any]) -> list[types.Content]:
    before = [e for e in events if e.timestamp < call["started_at"] and e.id != call["event_id"]]
    return _get_contents(None, before, call["agent"])


def _texts(content: types.Content) -> list[str]:
    return [p.text for p in content.parts or [] if p.text is not None]


def _call_names(contents: list[types.Content]) -> list[str]:
    return [p.function_call.name or "" for c in contents for p in c.parts or [] if p.function_call]


def _compactions(events: list[Event]) -> list[Event]:
    return [e for e in events if e.actions and e.actions.compaction]


def _range(e: Event) -> tuple[float, float]:
    c = e.actions.compaction
    return (c.start_timestamp, c.end_timestamp)


def _summary(e: Event) -> str:
    return "".join(_texts(e.actions.compaction.compacted_content))


def _surviving(ranges: list[tuple[float, float]]) -> set[int]:
    """Indexes of ranges no other range contains (of identical ones, the last)."""
    keep = set()
    for i, (s, t) in enumerate(ranges):
        if not any(
            j != i and s2 <= s and t <= t2 and ((s2, t2) != (s, t) or j > i)
            for j, (s2, t2) in enumerate(ranges)
        ):
            keep.add(i)
    return keep


def _agent_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c["kind"] == "agent"]


def _later_calls(
    calls: list[dict[str, Any]], event: Event, agent: str | None = None
) -> list[dict[str, Any]]:
    """Agent calls made after `event` was stored.

    A model's response event is created before the model is called, so it is
    older than its own call's start: that call is not "later".
    """
    return [
        c
        for c in _agent_calls(calls)
        if c["started_at"] > event.timestamp
        and c["event_id"] != event.id
        and (agent is None or c["agent"] == agent)
    ]


# -- the files ----------------------------------------------------------------


def test_the_database_is_a_v1_adk_store(out_dir: Path, events: list[Event]) -> None:
    con = sqlite3.connect(out_dir / DB_FILE)
    try:
        (version,) = con.execute(
            "SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'"
        ).fetchone()
        (sessions,) = con.execute("SELECT count(*) FROM sessions").fetchone()
    finally:
        con.close()
    assert str(version) == "1"
    assert sessions == 1
    assert len(events) > 30


def _event_rows(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, timestamp, event_data FROM events ORDER BY id").fetchall()
    finally:
        con.close()


def test_a_rerun_writes_the_same_data(out_dir: Path, tmp_path: Path) -> None:
    generate_stress(tmp_path)
    for name in ("calls.jsonl", "result_ids.json"):
        assert (tmp_path / name).read_bytes() == (out_dir / name).read_bytes(), name
    assert _event_rows(tmp_path / DB_FILE) == _event_rows(out_dir / DB_FILE)


def test_every_model_call_is_recorded_with_its_event(
    events: list[Event], calls: list[dict[str, Any]]
) -> None:
    assert [c["call_index"] for c in calls] == list(range(len(calls)))
    by_id = {e.id: e for e in events}
    agent_events = [e for e in events if "oracle_call" in (e.custom_metadata or {})]
    assert len(_agent_calls(calls)) == len(agent_events)
    summarizer_calls = [c for c in calls if c["kind"] == "summarizer"]
    assert len(summarizer_calls) == len(_compactions(events))
    for c in calls:
        event = by_id[c["event_id"]]
        assert event.invocation_id == c["invocation_id"]
        assert event.usage_metadata.prompt_token_count == c["prompt_token_count"]
        if c["kind"] == "agent":
            assert event.custom_metadata["oracle_call"] == c["call_index"]
            assert event.author == c["agent"]
        else:
            assert event.actions.compaction is not None
            start, end = _range(event)
            assert c["compacted_range"] == {"start_timestamp": start, "end_timestamp": end}
            assert len(_summary(event)) == c["response_text_chars"]


def test_result_ids_point_at_stored_function_responses(out_dir: Path, events: list[Event]) -> None:
    result_ids = json.loads((out_dir / "result_ids.json").read_text("utf-8"))
    stored = {
        (fr.response or {}).get("result_id"): (fr.id, fr.name, e.id)
        for e in events
        for fr in e.get_function_responses()
        if (fr.response or {}).get("result_id")
    }
    assert set(result_ids) == set(stored)
    for rid, info in result_ids.items():
        assert (info["function_call_id"], info["tool"], info["event_id"]) == stored[rid]


def test_adk_rebuilds_every_agent_request_from_the_store(
    calls: list[dict[str, Any]], requests: dict[int, list[types.Content]]
) -> None:
    """The window "stored before the call started" is the one ADK assembled from."""
    for c in _agent_calls(calls):
        contents = requests[c["call_index"]]
        chars_by_role: dict[str, int] = {}
        for content in contents:
            chars_by_role[content.role] = chars_by_role.get(content.role, 0) + gen.content_chars(
                content
            )
        responses = [
            p.function_response
            for content in contents
            for p in content.parts or []
            if p.function_response
        ]
        assert [content.role for content in contents] == c["roles"], c["call_index"]
        assert chars_by_role == c["chars_by_role"], c["call_index"]
        assert [r.name for r in responses] == c["function_response_names"]
        assert [
            r.response["result_id"] for r in responses if "result_id" in (r.response or {})
        ] == c["function_response_result_ids"]


# -- 1. token-threshold compaction, overlapping and superseded ranges ---------


def test_compaction_ranges_overlap_and_one_is_superseded(events: list[Event]) -> None:
    ranges = [_range(e) for e in _compactions(events)]
    assert len(ranges) >= 2
    pairs = [(i, j) for i in range(len(ranges)) for j in range(i + 1, len(ranges))]
    overlapping = [
        (i, j)
        for i, j in pairs
        if max(ranges[i][0], ranges[j][0]) <= min(ranges[i][1], ranges[j][1])
    ]
    contained = [
        (i, j)
        for i, j in overlapping
        if ranges[j][0] <= ranges[i][0] and ranges[i][1] <= ranges[j][1]
    ]
    partial = [(i, j) for i, j in overlapping if (i, j) not in contained]
    assert contained, "no later range contains an earlier one"
    assert partial, "no two ranges overlap partially"
    assert len(_surviving(ranges)) < len(ranges)


def test_the_token_threshold_fired_mid_turn_and_before_the_interval(
    events: list[Event], calls: list[dict[str, Any]]
) -> None:
    """Only the token-threshold trigger runs before a model call, inside a turn,
    and only it can fire before COMPACTION_INTERVAL invocations have completed."""
    compactions = _compactions(events)
    raw = [e for e in events if not (e.actions and e.actions.compaction)]
    first = compactions[0]
    assert len({e.invocation_id for e in raw if e.timestamp < first.timestamp}) < (
        COMPACTION_INTERVAL
    )
    triggered = []
    for compaction in compactions:
        before = [e for e in raw if e.timestamp < compaction.timestamp]
        after = [e for e in raw if e.timestamp > compaction.timestamp]
        if not (before and after and before[-1].invocation_id == after[0].invocation_id):
            continue  # ran after an invocation
        _, end = _range(compaction)
        kept_raw = [e for e in before if e.timestamp > end]
        assert len(kept_raw) >= EVENT_RETENTION_SIZE
        previous = max(
            (c.timestamp for c in compactions if c.timestamp < compaction.timestamp), default=0.0
        )
        own = [
            c
            for c in _agent_calls(calls)
            if c["agent"] == after[0].author
            and previous < c["started_at"]
            and c["finished_at"] <= compaction.timestamp
        ]
        if own and own[-1]["prompt_token_count"] >= TOKEN_THRESHOLD:
            triggered.append(compaction)
    assert triggered, "no mid-turn compaction followed a call at the token threshold"


# -- 2. calls right after each compaction --------------------------------------


def test_every_compaction_is_followed_by_an_agent_call_holding_its_summary(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    agent_calls = _agent_calls(calls)
    for compaction in _compactions(events):
        nxt = next(c for c in agent_calls if c["started_at"] > compaction.timestamp)
        contents = requests[nxt["call_index"]]
        summary = _summary(compaction)
        holders = [c for c in contents if summary in _texts(c)]
        assert len(holders) == 1 and holders[0].role == "model", nxt["call_index"]
        assert nxt["chars_by_role"]["model"] >= len(summary)


def test_requests_hold_exactly_the_surviving_summaries(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    compactions = _compactions(events)
    superseded_seen = 0
    for c in _agent_calls(calls):
        before = [e for e in compactions if e.timestamp < c["started_at"]]
        keep = _surviving([_range(e) for e in before])
        texts = [t for content in requests[c["call_index"]] for t in _texts(content)]
        present = {i for i, e in enumerate(before) if _summary(e) in texts}
        assert present == keep, c["call_index"]
        superseded_seen += len(before) - len(keep)
    assert superseded_seen


# -- 3. transfers both ways: the other agent's turns relayed as user text -----


def test_both_agents_see_the_other_relayed_as_for_context_text(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    transfers = {
        (e.author, fc.args["agent_name"])
        for e in events
        for fc in e.get_function_calls()
        if fc.name == "transfer_to_agent"
    }
    agents = {a for pair in transfers for a in pair}
    assert len(agents) == 2 and all((b, a) in transfers for a, b in transfers)
    relayed_results = 0
    for agent in agents:
        other = next(a for a in agents if a != agent)
        relayed_calls = []
        for c in _agent_calls(calls):
            if c["agent"] != agent:
                continue
            relays = [
                content
                for content in requests[c["call_index"]]
                if content.role == "user"
                and _texts(content)[:1]
                and _texts(content)[0].startswith(RELAY_PREFIX)
            ]
            if any(f"[{other}]" in t for r in relays for t in _texts(r)):
                relayed_calls.append(c)
            for r in relays:
                for t in _texts(r):
                    if "tool returned result" in t and "'result_id': 'res-" in t:
                        # a relayed tool result is str() of the response dict,
                        # text to the model, not a function response
                        rid = t.split("'result_id': '", 1)[1].split("'", 1)[0]
                        assert rid not in c["function_response_result_ids"]
                        relayed_results += 1
        assert relayed_calls, f"{agent} never received {other}'s turns"
    assert relayed_results


# -- 4. parallel calls, one result with ~50 records ----------------------------


def test_parallel_calls_and_a_fifty_record_result(
    events: list[Event], calls: list[dict[str, Any]]
) -> None:
    by_call_id = {fr.id: (e, fr) for e in events for fr in e.get_function_responses()}
    parallel = [e for e in events if len(e.get_function_calls()) >= 3]
    assert parallel
    biggest = 0
    for e in parallel:
        ids = [fc.id for fc in e.get_function_calls()]
        response_events = {by_call_id[i][0].id for i in ids}
        assert len(response_events) == 1  # ADK merges a batch's responses
        for i in ids:
            fr = by_call_id[i][1]
            lists = [v for v in (fr.response or {}).values() if isinstance(v, list)]
            biggest = max([biggest, *(len(v) for v in lists)])
        rids = [by_call_id[i][1].response["result_id"] for i in ids]
        nxt = _later_calls(calls, e, e.author)[0]
        assert rids == [r for r in nxt["function_response_result_ids"] if r in rids]
    assert biggest >= INBOUND_RECORDS


# -- 5. an orphaned call is dropped, a pending long-running call is kept -------


def test_a_call_without_response_is_dropped_from_later_requests(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    answered = {fr.id for e in events for fr in e.get_function_responses()}
    long_running = {i for e in events for i in e.long_running_tool_ids or ()}
    orphans = [
        (e, fc)
        for e in events
        for fc in e.get_function_calls()
        if fc.id not in answered and fc.id not in long_running
    ]
    assert orphans
    for e, fc in orphans:
        siblings = [s for s in e.get_function_calls() if s.id != fc.id]
        assert siblings and all(s.id in answered for s in siblings)
        assert any(x.error_code and x.invocation_id == e.invocation_id for x in events)
        later = [
            c
            for c in _later_calls(calls, e, e.author)
            if all(s.name in _call_names(requests[c["call_index"]]) for s in siblings)
        ]
        assert later, "no later request of the agent holds the call's siblings"
        for c in later:
            assert fc.name not in _call_names(requests[c["call_index"]])


def test_a_pending_long_running_call_stays_in_later_requests(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    answered = {fr.id for e in events for fr in e.get_function_responses()}
    pending = [
        (e, fc)
        for e in events
        for fc in e.get_function_calls()
        if fc.id in (e.long_running_tool_ids or ()) and fc.id not in answered
    ]
    assert pending
    for e, fc in pending:
        later = _later_calls(calls, e, e.author)
        assert later
        assert fc.name in _call_names(requests[later[0]["call_index"]])


# -- 6. thoughts ---------------------------------------------------------------


def test_thoughts_travel_with_their_event_and_never_to_the_other_agent(
    events: list[Event],
    calls: list[dict[str, Any]],
    requests: dict[int, list[types.Content]],
) -> None:
    """ADK filters thoughts per event, not per part.

    An event whose only parts are plain thoughts is left out of later requests.
    Any other event keeps its thought parts, signed or not. Relayed to the
    other agent, thoughts are always left out.
    """
    compactions = _compactions(events)
    seen = {"signed": 0, "plain beside other parts": 0, "thought-only event": 0}
    for e in events:
        parts = (e.content.parts if e.content else None) or []
        thought_only = bool(parts) and all(p.thought and not p.thought_signature for p in parts)
        for part in (p for p in parts if p.thought):
            kind = (
                "signed"
                if part.thought_signature
                else "thought-only event"
                if thought_only
                else "plain beside other parts"
            )
            for c in _later_calls(calls, e):
                in_request = any(
                    p.thought and p.text == part.text
                    for x in requests[c["call_index"]]
                    for p in x.parts or []
                )
                compacted = any(
                    s <= e.timestamp <= t
                    for s, t in (_range(x) for x in compactions if x.timestamp < c["started_at"])
                )
                if c["agent"] != e.author or kind == "thought-only event":
                    assert not in_request, c["call_index"]
                else:
                    assert in_request == (not compacted), c["call_index"]
                if c["agent"] == e.author and not compacted:
                    seen[kind] += 1
    assert all(seen.values()), seen
