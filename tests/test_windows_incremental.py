"""The incremental window assembly (calls, windows) against the definition (window),
which walks every earlier event per call: on generated sessions built to hit every
rule that makes a window more than the previous one plus what came since (compactions
that remove, supersede or overlap, events stored out of time order, a call id used
twice or answered before it was made, relays, long-running calls, branches, scopes,
framework, partial and empty events), under the rules of each ADK release boundary."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.families.adk.windows import calls, sent, window, windows
from forensics.model import ROLES, CompactionRange, Event, Part, Release, Session

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
def sessions(draw) -> Session:
    events: list[Event] = []
    clock = 1_000.0
    for n in range(draw(st.integers(1, 40))):
        clock += draw(st.sampled_from([0.0, 1.0, 2.5, -3.0]))  # ties and going back in time
        if events and draw(st.integers(0, 7)) == 0:
            epochs = sorted(e.epoch for e in events)
            start = draw(st.sampled_from(epochs)) - draw(st.sampled_from([0.0, 0.5]))
            end = draw(st.sampled_from([e for e in epochs if e >= start] or [start]))
            summary = [Part("compaction", 0, draw(st.sampled_from(["text", "thought"])), None,
                            None, False, draw(st.integers(0, 300)), 0, None)]  # fmt: skip
            events.append(Event(f"e{n}", f"cmp{n}", "user", None, None, clock, False, None,
                                None, True, CompactionRange(start, end),
                                draw(st.none() | st.integers(1, 50)), None, None,
                                frozenset(), None, [],
                                summary if draw(st.integers(0, 5)) else []))  # fmt: skip
            continue
        author = draw(st.sampled_from(AUTHORS))
        error = draw(st.sampled_from([None, None, None, "MAX_TOKENS", "ToolCrash"]))
        events.append(
            Event(
                f"e{n}", f"inv{n // 5}", author,
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


@settings(max_examples=600, deadline=None)
@given(session=sessions())
def test_each_call_is_its_window_as_defined(session):
    for call in calls(session):
        if call.kind == "summarizer":
            assert call.chars_by_role == dict.fromkeys(ROLES, 0)
            continue
        by_role, own, relayed = _sums(window(session, call.index))
        assert (call.chars_by_role, call.response_ids, call.relayed_ids) == (
            by_role, own, relayed), call.index  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(session=sessions())
def test_windows_in_one_pass_are_window_of_each_index(session):
    every = range(len(session.events))
    assert windows(session, every) == {i: window(session, i) for i in every}


@settings(max_examples=300, deadline=None)
@given(session=sessions())
def test_what_a_window_sent_is_what_window_holds(session):
    ids = {e.event_id for e in session.events}
    asked = {i: ids for i in range(len(session.events))}
    found = sent(session, asked)
    for i in asked:
        parts = window(session, i)
        assert found[i] == ({p.event_id for p in parts if p.role != "summary"},
                            {p.event_id for p in parts if p.role == "summary"}), i  # fmt: skip


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
