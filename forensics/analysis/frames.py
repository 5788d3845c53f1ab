"""Calls, one call's window, tool-call growth and turns: frames of one reconstruction."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import polars as pl

from ..columns import CALLS, GROWTH, TURNS, WINDOW
from ..families.adk.windows import window
from ..model import ROLES, Call
from .occupancy import best_occupancy, occupancy, source_of
from .reconstruct import Reconstruction

BLIND_GAUGE = 0.25  # estimate and measurement further apart than this are flagged


@dataclass
class _Running:
    """One turn's sums so far: measured (None until a call has usage), estimated, best."""

    measured: int | None = None
    estimated: int = 0
    best: int = 0
    kinds: set[str | None] = field(default_factory=set)


def calls_frame(rec: Reconstruction, turn: int | None = None) -> pl.DataFrame:
    """One row per call: occupancy measured/estimated, by role, cumulative input in its turn."""
    rows = []
    running: dict[tuple[str | None, ...], _Running] = defaultdict(_Running)
    for session, call in rec.calls:
        ratio = rec.ratio(session, call)
        measured, estimated = occupancy(call, ratio)
        by_role: dict[str, int | None] = {
            role: ratio.tokens(call.chars_by_role[role]) for role in ROLES
        }
        visible = sum(v or 0 for v in by_role.values())
        residual = (
            measured - visible if measured is not None and call.kind != "summarizer" else None
        )
        # system + tools is a count of tokens: a residual below zero means the estimate
        # is wrong, not that the prompt held negative instructions; it is reported in
        # system_residual, never drawn as a share. A traced call's are known characters.
        if call.system_tools_chars is not None:
            by_role["inferred_system"] = ratio.tokens(call.system_tools_chars)
        else:
            by_role["inferred_system"] = residual if residual is None or residual >= 0 else None
        key = (*session.key, call.event.invocation_id)
        cumulative_measured = cumulative_estimated = cumulative = None
        cumulative_source = None
        best: int | None = measured
        # a summarizer's own call: its usage, when stored
        source: str | None = "measured" if measured is not None else None
        if call.kind != "summarizer":
            totals = running[key]
            if measured is not None:
                totals.measured = (totals.measured or 0) + measured
            totals.estimated += estimated or 0
            best, source = best_occupancy(call, ratio, session.app_name)
            totals.best += best or 0
            totals.kinds.add(source)
            cumulative_measured = totals.measured
            cumulative_estimated, cumulative = totals.estimated, totals.best
            cumulative_source = source_of(totals.kinds)
        error = None
        if measured and estimated is not None and ratio.source in ("fitted", "traced"):
            expected = estimated + (ratio.constant(session.app_name, call.event.author) or 0)
            error = (expected - measured) / measured
        # the visible content alone cannot exceed the whole prompt: when its estimate
        # does by more than BLIND_GAUGE, the ratio does not fit this call's content
        blind = bool(
            measured and estimated is not None and estimated > measured * (1 + BLIND_GAUGE)
        )
        rows.append(
            {
                "call_id": call.event.event_id,
                "session_id": session.session_id,
                "app_name": session.app_name,
                "user_id": session.user_id,
                "invocation_id": call.event.invocation_id,
                "turn": call.turn,
                "agent": "summarizer" if call.kind == "summarizer" else call.event.author,
                "kind": call.kind,
                "timestamp": call.event.epoch,
                "model_version": call.event.model_version,
                "occupancy_measured": measured,
                "occupancy_estimated": estimated,
                "occupancy": best,
                "occupancy_source": source,
                "cumulative_input_measured": cumulative_measured,
                "cumulative_input_estimated": cumulative_estimated,
                "cumulative_input": cumulative,
                "cumulative_input_source": cumulative_source,
                "cached_tokens": call.event.cached_tokens,
                "chars": call.chars if call.kind != "summarizer" else None,
                "window_source": call.window_source if call.kind != "summarizer" else None,
                "system_tools_chars": call.system_tools_chars,
                "by_role": by_role,
                "system_residual": residual,
                "estimate_error": error,
                "gauge_blind": blind,
                "ratio_source": ratio.source,
                "ratio_model": ratio.model,
                "ratio_note": ratio.note or None,
                "chars_per_token": round(ratio.chars_per_token, 3),
                "ratio_mean_abs_error": None
                if ratio.mean_abs_error is None
                else round(ratio.mean_abs_error, 4),
                "source": session.source,
                "error_code": call.event.error_code,
            }
        )
    frame = CALLS.frame(rows)
    return frame if turn is None else frame.filter(pl.col("turn") == turn)


def window_frame(rec: Reconstruction, call_id: str) -> pl.DataFrame:
    """The parts of one call's request, in request order, with their sizes."""
    for session, call in rec.calls:
        if call.event.event_id == call_id:
            if call.kind == "summarizer":
                break
            parts = window(session, call.index)
            ratio = rec.ratio(session, call)
            return WINDOW.frame(
                {
                    "event_id": p.event_id,
                    "part_index": p.part_index,
                    "part_kind": p.part_kind,
                    "author": p.author,
                    "role": p.role,
                    "relayed": p.relayed,
                    "tool_name": p.tool_name,
                    "function_call_id": p.function_call_id,
                    "chars": p.chars,
                    "tokens_estimated": ratio.tokens(p.chars),
                }
                for p in parts
            )
    raise LookupError(call_id)


def growth_frame(rec: Reconstruction) -> pl.DataFrame:
    """Tool calls ranked by how much their result grew the next request's window."""
    rows = []
    for session in rec.sessions:
        ratio = rec.ratio(session)
        session_calls = rec.calls_of(session)
        issued: dict[str, tuple[Call, str]] = {}  # call id -> (the model call, tool name)
        for call in session_calls:
            for part in call.event.parts:
                if part.kind == "function_call" and part.call_id:
                    issued[part.call_id] = (call, part.tool_name or "")
        # the calls that carried each result, in order: one pass over the windows
        carried_by: dict[str, list[Call]] = defaultdict(list)
        for call in session_calls:
            if call.kind != "summarizer":
                for call_id in {*call.response_ids, *call.relayed_ids}:
                    carried_by[call_id].append(call)
        # results grouped by the event that carried them (parallel calls share one)
        results: dict[int, list] = defaultdict(list)
        for index, event in enumerate(session.events):
            for part in event.parts:
                if part.kind == "function_response" and part.call_id in issued:
                    results[index].append(part)
        for index, items in results.items():
            event = session.events[index]
            firsts = [carried_by[p.call_id][0] for p in items if carried_by[p.call_id]]
            after_call = min(firsts, key=lambda c: c.index, default=None)
            total_tokens = sum(ratio.tokens(p.chars) for p in items) or 1
            for part in items:
                source_call, tool = issued[part.call_id]
                before_m, before_e = occupancy(source_call, rec.ratio(session, source_call))
                after_m, after_e = (
                    occupancy(after_call, rec.ratio(session, after_call))
                    if after_call
                    else (None, None)
                )
                measured = before_m is not None and after_m is not None
                before, after = (before_m, after_m) if measured else (before_e, after_e)
                tokens = ratio.tokens(part.chars)
                jump = after - before if after is not None and before is not None else None
                growth = round(jump * tokens / total_tokens) if jump is not None else None
                resent = carried_by[part.call_id]
                same_turn = [
                    c for c in resent if c.event.invocation_id == source_call.event.invocation_id
                ]
                latency = event.epoch - source_call.event.epoch
                rows.append(
                    {
                        "session_id": session.session_id,
                        "invocation_id": source_call.event.invocation_id,
                        "turn": source_call.turn,
                        "agent": source_call.event.author,
                        "tool_name": tool,
                        "function_call_id": part.call_id,
                        "latency_s": round(latency, 3),
                        "result_chars": part.chars,
                        "result_tokens_estimated": tokens,
                        "rows": part.row_count,
                        "tokens_per_row": round(tokens / part.row_count)
                        if part.row_count
                        else None,
                        "occupancy_before": before,
                        "occupancy_after": after,
                        "occupancy_source": "measured" if measured else "estimated",
                        "growth_tokens": growth,
                        "growth_tokens_per_s": round(growth / latency)
                        if growth is not None and latency > 0
                        else None,
                        "parallel_results": len(items),
                        "resent_calls": len(resent),
                        "resent_tokens": tokens * len(resent),
                        "resent_calls_in_turn": len(same_turn),
                        "resent_tokens_in_turn": tokens * len(same_turn),
                    }
                )
    frame = GROWTH.frame(rows)
    return frame.sort(["growth_tokens", "result_chars"], descending=True, nulls_last=True)


def turns_frame(rec: Reconstruction) -> pl.DataFrame:
    """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, largest result."""
    rows = []
    for session in rec.sessions:
        ratio = rec.ratio(session)
        events_by_turn: dict[str, list] = defaultdict(list)
        for event in session.events:
            if event.invocation_id and not event.is_compaction:
                events_by_turn[event.invocation_id].append(event)
        calls_by_turn: dict[str, list[Call]] = defaultdict(list)
        for call in rec.calls_of(session):
            if call.kind != "summarizer":
                calls_by_turn[call.event.invocation_id or ""].append(call)
        for number, (invocation, events) in enumerate(events_by_turn.items(), start=1):
            turn_calls = calls_by_turn.get(invocation, [])
            occupancies = [occupancy(c, rec.ratio(session, c)) for c in turn_calls]
            measured = [m for m, _ in occupancies if m is not None]
            estimated = [e for _, e in occupancies if e is not None]
            best = [
                (size, how)
                for size, how in (
                    best_occupancy(c, rec.ratio(session, c), session.app_name) for c in turn_calls
                )
                if size is not None
            ]
            peak: tuple[int | None, str | None] = max(
                best, default=(None, None), key=lambda b: b[0]
            )
            kinds = {k for _, k in best}
            results = [p for e in events for p in e.parts if p.kind == "function_response"]
            largest = max(results, key=lambda p: p.chars, default=None)
            errors = [e for e in events if e.error_code]
            rows.append(
                {
                    "session_id": session.session_id,
                    "invocation_id": invocation,
                    "turn": number,
                    "calls": len(turn_calls),
                    "tool_calls": sum(
                        1 for e in events for p in e.parts if p.kind == "function_call"
                    ),
                    "wall_s": round(events[-1].epoch - events[0].epoch, 3),
                    "peak_occupancy_measured": max(measured, default=None),
                    "peak_occupancy_estimated": max(estimated, default=None),
                    # the largest window of the turn, a failed call's included (its
                    # estimate plus the agent's inferred constant when unmeasured)
                    "peak_occupancy": peak[0],
                    "peak_occupancy_source": peak[1],
                    "cumulative_input_measured": sum(measured) if measured else None,
                    "cumulative_input_estimated": sum(estimated),
                    "cumulative_input": sum(b for b, _ in best) if best else None,
                    "cumulative_input_source": source_of(kinds),
                    "largest_tool_result": largest.tool_name if largest else None,
                    "largest_result_tokens_estimated": ratio.tokens(largest.chars)
                    if largest
                    else None,
                    "error_code": errors[-1].error_code if errors else None,
                    "error_message": errors[-1].error_message if errors else None,
                    "started_at": events[0].epoch,
                }
            )
    return TURNS.frame(rows)
