"""What each Claude Code request held, rebuilt from its transcript's stored events.

Claude Code sends, with every request, its system prompt and tool schemas (which the
transcript does not hold) and the messages of one thread, in order:

- a thread is the main conversation or one subagent's (the event's `branch`); a
  request holds its own thread's events only, never another thread's;
- after a compaction boundary: the summary, then what follows it; nothing before it;
- a prompt, a response's text and tool calls, and every tool result stay in the
  window until a compaction;
- thinking only since the thread's latest prompt (the API drops the thinking of
  earlier turns; newer models keep more of it, which the measured figure shows);
- failed requests leave nothing in the window.

Every request's usage measures it (uncached input + cache reads + cache writes), so a
call's occupancy is measured; what this rebuild adds is what the window held, by role,
and which tool results each request carried (growth, re-send cost, what-if). A call is
a model response (kind `agent`), a failed request (`failed`), or the compaction
summarizer's response (`summarizer`: the `compact` agent's thread).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from ...model import ROLES, Call, Event, Session, WindowPart
from ..adk.windows import turns  # a turn is an invocation, in both families
from .transcript import COMPACT_AGENT

RULES_LABEL = "claude-code rules"
THREADED = True  # a compaction, a window, are one thread's (the event's branch)

__all__ = ["RULES_LABEL", "THREADED", "calls", "is_call", "sent", "turns", "window", "windows"]


def is_call(event: Event) -> str | None:
    """The call kind of a stored event, or None."""
    if event.is_compaction or event.author in (None, "user"):
        return None
    if event.error_code is not None:
        return "failed"
    if any(p.kind == "function_response" for p in event.parts):
        return None
    if event.prompt_tokens is None and not any(
        p.kind in ("text", "thought", "function_call", "other") for p in event.parts
    ):
        return None
    return "summarizer" if event.author == COMPACT_AGENT else "agent"


@dataclass
class _Thread:
    """One thread's window so far: its parts in order, and their sums by role."""

    parts: list[WindowPart] = field(default_factory=list)
    chars: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    thought_chars: int = 0  # thinking since the thread's latest prompt (in `model`)
    results: list[str] = field(default_factory=list)  # call ids of the results carried
    prompted: int = 0  # parts[:prompted] came before the latest prompt: no thinking sent

    def add(self, part: WindowPart, keep: bool) -> None:
        if keep:
            self.parts.append(part)
        if part.part_kind == "thought":
            self.thought_chars += part.chars
            return
        self.chars[part.role] += part.chars
        if part.part_kind == "function_response" and part.function_call_id:
            self.results.append(part.function_call_id)

    def drop_thoughts(self) -> None:
        """A new prompt: the thinking of the turns before it is no longer sent."""
        self.thought_chars = 0
        self.prompted = len(self.parts)

    def window(self) -> list[WindowPart]:
        """The parts kept (`add(keep=True)`) that the next request sends."""
        return [
            p for i, p in enumerate(self.parts) if i >= self.prompted or p.part_kind != "thought"
        ]

    def by_role(self) -> dict[str, int]:
        found = dict(self.chars)
        found["model"] += self.thought_chars
        return found


def _parts(event: Event) -> Iterator[WindowPart]:
    """The parts an event puts into its thread's window, with their roles."""
    if event.is_compaction:
        for p in event.summary:
            yield WindowPart(
                event.event_id, p.index, p.kind, "compaction", event.author, "summary", False,
                None, None, p.chars,
            )  # fmt: skip
        return
    if event.error_code is not None:
        return
    results = any(p.kind == "function_response" for p in event.parts)
    for p in event.parts:
        if p.kind == "function_response":
            role = "tool"
        elif event.author == "user" or results:
            role = "user"
        else:
            role = "model"
        yield WindowPart(
            event.event_id, p.index, p.kind, p.origin, event.author, role, False, p.tool_name,
            p.call_id, p.chars,
        )  # fmt: skip


def _walk(session: Session, until: int | None, keep: bool) -> Iterator[tuple[int, Event, _Thread]]:
    """Each event of the session (up to index `until`), with its thread's window as it
    stood before the event; the event is then added to it."""
    threads: dict[str | None, _Thread] = {}
    for index, event in enumerate(session.events):
        if until is not None and index > until:
            return
        thread = threads.get(event.branch)
        if thread is None:
            thread = threads[event.branch] = _Thread()
        yield index, event, thread
        if event.is_compaction:  # everything before it is replaced by its summary
            thread = threads[event.branch] = _Thread()
        elif event.author == "user":
            thread.drop_thoughts()
        for part in _parts(event):
            thread.add(part, keep)


def calls(session: Session) -> Iterator[Call]:
    """Every call of the session in order, with its window's size by role and the tool
    results it carried."""
    turn_of = turns(session)
    for index, event, thread in _walk(session, None, keep=False):
        kind = is_call(event)
        if kind is None:
            continue
        summarizer = kind == "summarizer"
        yield Call(
            event,
            index,
            kind,
            turn_of.get(event.invocation_id or ""),
            dict.fromkeys(ROLES, 0) if summarizer else thread.by_role(),
            [] if summarizer else list(dict.fromkeys(thread.results)),
        )


def window(session: Session, call_index: int) -> list[WindowPart]:
    """The parts of the request made by the call at `session.events[call_index]`."""
    found = windows(session, [call_index])
    if call_index not in found:
        raise IndexError(f"no event {call_index} in session {session.session_id}")
    return found[call_index]


def windows(session: Session, indices: Collection[int]) -> dict[int, list[WindowPart]]:
    """window() of each event index in `indices`, in one walk of the session."""
    want = set(indices)
    last = max(want, default=-1)
    return {
        index: thread.window()
        for index, _, thread in _walk(session, last, keep=True)
        if index in want
    }


def sent(session: Session, indices: Collection[int]) -> dict[int, tuple[set[str], set[str]]]:
    """For each event index in `indices`, the event ids the window of that index holds a
    part of: (raw events, compaction summaries)."""
    return {
        index: ({p.event_id for p in parts if p.role != "summary"},
                {p.event_id for p in parts if p.role == "summary"})
        for index, parts in windows(session, indices).items()
    }  # fmt: skip
