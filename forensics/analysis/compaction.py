"""Audit of ADK compaction: what each range covers, and what the next request still carried.

Two facts are kept apart, as the founding investigation insists:
- stored: compaction never deletes; the raw events inside a range stay in the
  session table (`raw_events_in_range`, `tool_tokens_in_range`);
- sent: what the next model call's request held, from the window reconstruction
  (`summary_in_next_request`, `raw_in_range_sent_next`, `next_request_tokens_estimated`).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from ..columns import COMPACTION_RANGES, COMPACTION_SESSIONS
from ..families.adk.windows import is_call, turns, window
from ..model import CompactionRange, Event, Session
from .occupancy import occupancy
from .reconstruct import Reconstruction


def _kind(event: Event) -> str:
    kinds = {p.kind for p in event.parts}
    if "function_response" in kinds:
        return "tool_result"
    if event.author == "user":
        return "user"
    if kinds & {"text", "function_call", "thought"} or is_call(event) == "failed":
        return "model"
    return "other"


def _stored(event: Event) -> bool:
    """A raw event the audit counts: it has content, or it is a failed call (a model's
    error response stores no content, but it is an event of the session all the same)."""
    return not event.is_compaction and (bool(event.parts) or is_call(event) == "failed")


def _raw(session: Session, lo: float, hi: float, before: int) -> list[tuple[int, Event]]:
    """Stored raw events (see `_stored`), lo <= epoch <= hi, stored before `before`."""
    return [
        (i, e) for i, e in enumerate(session.events[:before]) if _stored(e) and lo <= e.epoch <= hi
    ]


def audit_ranges(rec: Reconstruction) -> pl.DataFrame:
    """One row per compaction event: its range, what it covers, what the next call sent."""
    rows = []
    for session in rec.sessions:
        ratio = rec.ratio(session)
        turn_of = turns(session)
        agent_calls = [c for c in rec.calls_of(session) if c.kind != "summarizer"]
        previous: CompactionRange | None = None
        for index, event in enumerate(session.events):
            if not event.is_compaction or event.compaction is None:
                continue
            start, end = event.compaction.start, event.compaction.end
            inside = _raw(session, start, end, index)
            by_kind = Counter(_kind(e) for _, e in inside)
            results = [p for _, e in inside for p in e.parts if p.kind == "function_response"]
            earlier = [e for e in session.events[:index] if not e.is_compaction]
            after_turn = turn_of.get(earlier[-1].invocation_id or "") if earlier else None
            overlap_events, overlap_s = 0, 0.0
            if previous is not None:
                lo, hi = max(start, previous.start), min(end, previous.end)
                if lo <= hi:
                    overlap_s = hi - lo
                    overlap_events = len(_raw(session, lo, hi, index))
            retained = [e for _, e in _raw(session, end, float("inf"), index) if e.epoch > end]
            following = next((c for c in agent_calls if c.index > index), None)
            in_next = sent_raw = next_tokens = None
            if following is not None:
                parts = window(session, following.index)
                in_next = any(p.event_id == event.event_id and p.role == "summary" for p in parts)
                inside_ids = {e.event_id for _, e in inside}
                sent_raw = len({p.event_id for p in parts if p.event_id in inside_ids})
                next_tokens = occupancy(following, rec.ratio(session, following))[1]
            raw_tokens = ratio.tokens(sum(p.chars for _, e in inside for p in e.parts))
            summary_tokens = ratio.tokens(sum(p.chars for p in event.summary))
            rows.append(
                {
                    "session_id": session.session_id,
                    "compaction_event_id": event.event_id,
                    "appended_at": event.epoch,
                    "appended_after_turn": after_turn,
                    "start_timestamp": start,
                    "end_timestamp": end,
                    "invocations_in_range": len({e.invocation_id for _, e in inside}),
                    "turns_in_range": sorted(
                        {turn_of[e.invocation_id] for _, e in inside if e.invocation_id in turn_of}
                    ),
                    "raw_events_in_range": len(inside),
                    "raw_events_by_kind": {
                        k: by_kind.get(k, 0) for k in ("user", "model", "tool_result", "other")
                    },
                    "raw_tokens_in_range": raw_tokens,
                    "tool_results_in_range": len(results),
                    "tool_tokens_in_range": ratio.tokens(sum(p.chars for p in results)),
                    "summary_tokens": summary_tokens,
                    "summary_ratio": round(summary_tokens / raw_tokens, 4) if raw_tokens else None,
                    "summarizer_prompt_tokens": event.prompt_tokens,
                    "summarizer_output_tokens": event.candidates_tokens,
                    "overlap_with_previous": overlap_events,
                    "overlap_seconds": round(overlap_s, 3),
                    "retained_events_after": len(retained),
                    "retained_tokens_after": ratio.tokens(
                        sum(p.chars for e in retained for p in e.parts)
                    ),
                    "next_call_id": following.event.event_id if following else None,
                    "summary_in_next_request": in_next,
                    "raw_in_range_sent_next": sent_raw,
                    "next_request_tokens_estimated": next_tokens,
                }
            )
            previous = event.compaction
    return COMPACTION_RANGES.frame(rows)


def audit_sessions(rec: Reconstruction, threshold_tokens: int | None = None) -> pl.DataFrame:
    """Per session: the retained raw window after the last range, calls over the threshold."""
    rows = []
    for session in rec.sessions:
        ratio = rec.ratio(session)
        compactions = [
            (i, e.compaction)
            for i, e in enumerate(session.events)
            if e.is_compaction and e.compaction is not None
        ]
        last_end = max((span.end for _, span in compactions), default=None)
        retained = [
            e for e in session.events if _stored(e) and (last_end is None or e.epoch > last_end)
        ]
        results = [p for e in retained for p in e.parts if p.kind == "function_response"]
        largest = max(results, key=lambda p: p.chars, default=None)
        over = despite = 0
        first_compaction = compactions[0][0] if compactions else None
        for call in rec.calls_of(session):
            if call.kind == "summarizer" or threshold_tokens is None:
                continue
            measured, estimated = occupancy(call, rec.ratio(session, call))
            size = measured if measured is not None else estimated
            if size is not None and size > threshold_tokens:
                over += 1
                despite += first_compaction is not None and call.index > first_compaction
        rows.append(
            {
                "session_id": session.session_id,
                "compactions": len(compactions),
                "last_range_end": last_end,
                "retained_events_after": len(retained),
                "retained_tokens_after": ratio.tokens(
                    sum(p.chars for e in retained for p in e.parts)
                ),
                "largest_retained_tool_result": largest.tool_name if largest else None,
                "largest_retained_result_tokens": ratio.tokens(largest.chars) if largest else None,
                "threshold_tokens": threshold_tokens,
                "calls_over_threshold": over if threshold_tokens is not None else None,
                "over_threshold_despite_compaction": despite
                if threshold_tokens is not None
                else None,
                "compaction_never_fired": (over > 0 and not compactions)
                if threshold_tokens is not None
                else None,
            }
        )
    return COMPACTION_SESSIONS.frame(rows)
