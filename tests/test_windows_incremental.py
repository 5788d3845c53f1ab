"""The incremental window assembly (calls, windows) against the definition (window),
which walks every earlier event per call: on generated sessions built to hit every
rule that makes a window more than the previous one plus what came since (compactions
that remove, supersede or overlap, events stored out of time order, a call id used
twice or answered before it was made, relays, long-running calls, branches, scopes,
framework, partial and empty events), under the rules of each ADK release boundary."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.analysis.facts import _compactions, _kind, _stored, session_calls
from forensics.families.adk.windows import calls, sent, window, windows
from forensics.families.windows import rules_of
from forensics.model import ROLES, CompactionRange, Event, Part, Release, Session
from tests.examples import examples

RELEASES = (None, "1.5.0", "1.10.0", "1.14.0", "1.16.0", "1.22.0", "1.25.0", "2.7.0",
            "2.8.0", "2.13.0")  # fmt: skip
AUTHORS = ("root", "root", "helper", "other", "user", None)
SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code"
CALL_IDS = ("c1", "c2", "c3", "c4", "c5", "c6")


@st.composite
def parts(draw, author: str | None) -> list[Part]:
    found = []
    for index in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "text", "thought", "function_call",
                                     "function_response", "other"]))  # fmt: skip
        call_id = draw(st.sampled_from(CALL_IDS)) if kind.startswith("function") else None
        tool = draw(st.sampled_from(["lookup", "adk_request_confirmation"])) if call_id else None
        chars = draw(st.integers(0, 3)) if kind in ("text", "thought") else draw(
            st.integers(1, 5_000))
        found.append(Part("content", index, kind, tool, call_id, draw(st.booleans()), chars,
                          chars + 7, None))  # fmt: skip
    return found


@st.composite
def sessions(draw, repeat_ids: bool = False) -> Session:
    """A session of up to 40 events; with `repeat_ids`, some events share an id."""
    events: list[Event] = []
    clock = 1_000.0
    for n in range(draw(st.integers(1, 40))):
        name = f"e{n}"
        if repeat_ids and n and draw(st.integers(0, 4)) == 0:
            name = f"e{draw(st.integers(0, n - 1))}"
        clock += draw(st.sampled_from([0.0, 1.0, 2.5, -3.0]))  # ties and going back in time
        if events and draw(st.integers(0, 7)) == 0:
            epochs = sorted(e.epoch for e in events)
            start = draw(st.sampled_from(epochs)) - draw(st.sampled_from([0.0, 0.5]))
            end = draw(st.sampled_from([e for e in epochs if e >= start] or [start]))
            summary = [Part("compaction", 0, draw(st.sampled_from(["text", "thought"])), None,
                            None, False, draw(st.integers(0, 300)), 0, None)]  # fmt: skip
            events.append(Event(name, f"cmp{n}", "user", None, None, clock, False, None,
                                None, True, CompactionRange(start, end),
                                draw(st.none() | st.integers(1, 50)), None, None,
                                frozenset(), None, [],
                                summary if draw(st.integers(0, 5)) else []))  # fmt: skip
            continue
        author = draw(st.sampled_from(AUTHORS))
        error = draw(st.sampled_from([None, None, None, "MAX_TOKENS", "ToolCrash"]))
        events.append(
            Event(
                name, f"inv{n // 5}", author,
                draw(st.sampled_from([None, None, "a", "a.b", "c"])),
                draw(st.sampled_from([None, None, "s1"])),
                clock, draw(st.integers(0, 15)) == 0, error, None, False, None,
                draw(st.none() | st.integers(1, 10_000)), None, None,
                frozenset(draw(st.lists(st.sampled_from(CALL_IDS), max_size=1))),
                draw(st.none() | st.just("m")), draw(parts(author)),
            )  # fmt: skip
        )
    version = draw(st.sampled_from(RELEASES))
    release = Release(version, "given", "test") if version else None
    return Session("app", "user", "s", events, "test", release)


def _sums(found) -> tuple[dict[str, int], list[str], list[str]]:
    by_role = dict.fromkeys(ROLES, 0)
    own, relayed = [], []
    for p in found:
        by_role[p.role] += p.chars
        if p.part_kind == "function_response" and p.function_call_id:
            (relayed if p.relayed else own).append(p.function_call_id)
    return by_role, own, relayed


@settings(max_examples=examples(600), deadline=None)
@given(session=sessions())
def test_each_call_is_its_window_as_defined(session):
    for call in calls(session):
        if call.kind == "summarizer":
            assert call.chars_by_role == dict.fromkeys(ROLES, 0)
            continue
        by_role, own, relayed = _sums(window(session, call.index))
        assert (call.chars_by_role, call.response_ids, call.relayed_ids) == (
            by_role, own, relayed), call.index  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(session=sessions())
def test_windows_in_one_pass_are_window_of_each_index(session):
    every = range(len(session.events))
    assert windows(session, every) == {i: window(session, i) for i in every}


@settings(max_examples=examples(300), deadline=None)
@given(session=sessions())
def test_what_a_window_sent_is_what_window_holds(session):
    found = sent(session, range(len(session.events)))
    for i in range(len(session.events)):
        parts = window(session, i)
        assert found[i] == ({p.event_id for p in parts if p.role != "summary"},
                            {p.event_id for p in parts if p.role == "summary"}), i  # fmt: skip


def _compaction_rows_by_definition(session: Session) -> list[dict]:
    """Each compaction's figures as their definition reads: a walk over every event
    stored before it (what facts._compactions computes from sorted arrays)."""
    rules = rules_of(session)
    turn_of = rules.turns(session)
    found = session_calls(session)

    def covered(index: int, lo: float, hi: float) -> list[Event]:
        return [e for e in session.events[:index]
                if _stored(e, rules) and not math.isnan(e.epoch) and lo <= e.epoch <= hi]

    rows, previous = [], None
    for index, event in enumerate(session.events):
        if not event.is_compaction or event.compaction is None:
            continue
        start, end = event.compaction.start, event.compaction.end
        inside = covered(index, start, end)
        kinds = [_kind(e, rules) for e in inside]
        results = [p.chars for e in inside for p in e.parts if p.kind == "function_response"]
        overlap = 0
        if previous is not None and max(start, previous.start) <= min(end, previous.end):
            overlap = len(covered(index, max(start, previous.start), min(end, previous.end)))
        retained = [e for e in covered(index, end, math.inf) if e.epoch > end]
        following = next((c for c in found if c.kind != "summarizer" and c.index > index), None)
        in_next = sent_raw = None
        if following is not None:
            parts = window(session, following.index)
            in_next = any(p.role == "summary" and p.event_id == event.event_id for p in parts)
            sent_raw = len({p.event_id for p in parts if p.role != "summary"}
                           & {e.event_id for e in inside})  # fmt: skip
        rows.append({
            "invocations_in_range": len({e.invocation_id for e in inside}),
            "turns_in_range": sorted({turn_of[e.invocation_id] for e in inside
                                      if e.invocation_id in turn_of}),
            "raw_events_in_range": len(inside),
            **{f"raw_{k}_events": kinds.count(k) for k in ("user", "model", "tool_result",
                                                            "other")},
            "raw_chars_in_range": sum(p.chars for e in inside for p in e.parts),
            "tool_results_in_range": len(results),
            "tool_chars_in_range": sum(results),
            "overlap_with_previous": overlap,
            "retained_events_after": len(retained),
            "retained_chars_after": sum(p.chars for e in retained for p in e.parts),
            "summary_in_next_request": in_next,
            "raw_in_range_sent_next": sent_raw,
        })  # fmt: skip
        previous = event.compaction
    return rows


@settings(max_examples=examples(400), deadline=None)
@given(session=sessions(repeat_ids=True))
def test_each_compactions_row_is_its_definition(session):
    """The compaction facts (ranges of sorted arrays, windows asked once per next call)
    against a walk over every earlier event, on sessions whose events go back in time,
    tie, repeat an id, and whose ranges overlap, supersede and cover nothing."""
    found = _compactions({}, session, session_calls(session))
    expected = _compaction_rows_by_definition(session)
    assert [{k: list(v) if k == "turns_in_range" else v for k, v in row.items()
             if k in (expected or [{}])[0]} for row in found] == expected  # fmt: skip


def test_claude_code_calls_are_their_windows(tmp_path):
    """Claude Code's calls (one walk, sums kept) against window() of each call (parts
    kept, thinking before the latest prompt left out), on the bundled sample."""
    from forensics import api
    from forensics.families.claude_code import windows as claude_code
    from forensics.store import Store
    from forensics.store.reads import load_sessions

    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [SAMPLE])
    with Store.open(db, read_only=True) as store:
        found = load_sessions(store)
    assert found
    checked = 0
    for session in found:
        for call in claude_code.calls(session):
            if call.kind == "summarizer":
                continue
            by_role, own, _ = _sums(window_parts := claude_code.window(session, call.index))
            assert call.chars_by_role == by_role
            assert call.response_ids == list(dict.fromkeys(own))
            assert claude_code.windows(session, [call.index]) == {call.index: window_parts}
            checked += 1
    assert checked > 40
