"""Properties of any reconstruction, on generated sessions (no ADK needed)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.analysis import fit_ratio
from forensics.analysis.facts import session_calls
from forensics.analysis.stored import facts_of
from forensics.families.adk.windows import calls, window
from forensics.model import CompactionRange, Event, Part, Session
from tests.examples import examples

AGENTS = ("root", "helper")


@st.composite
def sessions(draw) -> Session:
    events: list[Event] = []
    clock = 1_000.0
    pending: list[str] = []
    for turn in range(draw(st.integers(1, 4))):
        invocation = f"inv{turn}"
        clock += 10
        events.append(_event(len(events), invocation, "user", clock,
                             [_part("text", draw(st.integers(1, 500)))]))
        for _ in range(draw(st.integers(1, 4))):
            clock += draw(st.floats(0.01, 5))
            agent = draw(st.sampled_from(AGENTS))
            action = draw(st.sampled_from(["text", "call", "answer", "compact"]))
            prompt = draw(st.none() | st.integers(1, 10_000))
            if action == "call":
                call_id = f"c{len(events)}"
                pending.append(call_id)
                events.append(_event(len(events), invocation, agent, clock,
                                     [_part("function_call", 40, call_id)], prompt))
            elif action == "answer" and pending:
                call_id = pending.pop(0)
                events.append(_event(len(events), invocation, agent, clock,
                                     [_part("function_response",
                                            draw(st.integers(1, 100_000)), call_id)]))
            elif action == "compact" and len(events) > 2:
                start = events[draw(st.integers(0, len(events) - 2))].epoch
                compaction = _event(len(events), f"cmp{len(events)}", "user", clock, [],
                                    draw(st.none() | st.integers(1, 500)))
                compaction.is_compaction = True
                compaction.compaction = CompactionRange(start, events[-1].epoch)
                compaction.summary = [_part("text", draw(st.integers(1, 300)))]
                events.append(compaction)
            else:
                events.append(_event(len(events), invocation, agent, clock,
                                     [_part("text", draw(st.integers(1, 500)))], prompt))
    return Session("app", "user", "s", events, "test")


def _part(kind: str, chars: int, call_id: str | None = None) -> Part:
    return Part("content", 0, kind, "tool" if call_id else None, call_id, False, chars,
                chars + 3, None)


def _event(n, invocation, author, epoch, parts, prompt=None) -> Event:
    return Event(f"e{n:03d}", invocation, author, None, None, epoch, False, None, None, False,
                 None, prompt, None, None, frozenset(), "m" if prompt else None, parts)


@settings(max_examples=examples(150), deadline=None)
@given(session=sessions())
def test_windows_hold_only_earlier_events_and_turns_add_up(session):
    position = {e.event_id: i for i, e in enumerate(session.events)}
    found = list(calls(session))
    for call in found:
        if call.kind == "summarizer":
            continue
        parts = window(session, call.index)
        assert all(position[p.event_id] < call.index for p in parts)
        assert sum(p.chars for p in parts) == sum(call.chars_by_role.values())
    found = session_calls(session)  # the same calls, each with the model that read it
    ratios = {m: fit_ratio([]) for m in {"", *(c.model for c in found)}}
    facts = facts_of([session], ratios)
    frame = facts.calls()
    agent_calls = frame.filter(frame["kind"] != "summarizer")
    turns = facts.turns()
    assert turns["cumulative_input_estimated"].sum() == agent_calls["occupancy_estimated"].sum()
    for _, turn in agent_calls.group_by("invocation_id"):
        assert turn["cumulative_input_estimated"].to_list() == \
            turn["occupancy_estimated"].cum_sum().to_list()
        measured = turn["occupancy_measured"].to_list()
        firsts = [i for i, m in enumerate(measured) if m is not None]
        cumulative = turn["cumulative_input_measured"].to_list()
        assert all(c is None for c in cumulative[: firsts[0] if firsts else len(cumulative)])
        assert cumulative[-1] == (sum(m for m in measured if m is not None) if firsts else None)
        # the best figure: measured where there is usage, else the estimate
        assert turn["cumulative_input"].to_list() == turn["occupancy_measured"].fill_null(
            turn["occupancy_estimated"]).cum_sum().to_list()
        assert turn["cumulative_input_source"][-1] == (
            "measured" if len(firsts) == len(measured) else "estimated" if not firsts
            else "mixed")
