"""Calls, windows, growth and turns as polars DataFrames, from the store.

Occupancy is given twice: `measured` (the call's own usage_metadata.prompt_token_count)
and `estimated` (the window's characters over a chars-per-token ratio fitted on
the calls that have both). What the measured figure holds beyond the visible
window (system instruction, tool schemas) is `inferred`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import duckdb
import polars as pl

from . import queries
from .windows import ROLES, Call, Session, build_sessions, calls, window

DEFAULT_CHARS_PER_TOKEN = 3.0
BLIND_GAUGE = 0.25  # estimate and measurement further apart than this are flagged


@dataclass
class Ratio:
    """chars per token, fitted as prompt_tokens = chars / ratio + per-agent constant."""

    chars_per_token: float
    source: str  # fitted | default
    calls: int  # calls the fit used
    mean_abs_error: float | None  # of the fitted prompt tokens, as a fraction of measured
    constant_tokens: dict[str, float] = field(default_factory=dict)  # per agent: system+tools

    def tokens(self, chars: int) -> int:
        return round(chars / self.chars_per_token)


def fit_ratio(samples: list[tuple[str, int, int]]) -> Ratio:
    """Least squares with one slope and an intercept per agent (fixed effects).

    `samples`: (agent, window chars, measured prompt tokens). The intercept is the
    part of the prompt the stored events do not show: system instruction and tool
    schemas, which stay the same across one agent's calls.
    """
    by_agent: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for agent, chars, tokens in samples:
        by_agent[agent].append((chars, tokens))
    sxy = sxx = 0.0
    means: dict[str, tuple[float, float]] = {}
    for agent, pairs in by_agent.items():
        mx = sum(c for c, _ in pairs) / len(pairs)
        my = sum(t for _, t in pairs) / len(pairs)
        means[agent] = (mx, my)
        sxy += sum((c - mx) * (t - my) for c, t in pairs)
        sxx += sum((c - mx) ** 2 for c, _ in pairs)
    if len(samples) < 3 or sxx <= 0 or sxy <= 0:
        return Ratio(DEFAULT_CHARS_PER_TOKEN, "default", 0, None)
    slope = sxy / sxx
    constant = {agent: my - slope * mx for agent, (mx, my) in means.items()}
    errors = [
        abs(chars * slope + constant[agent] - tokens) / tokens
        for agent, chars, tokens in samples
        if tokens
    ]
    return Ratio(1 / slope, "fitted", len(samples), sum(errors) / len(errors), constant)


def load_sessions(
    con: duckdb.DuckDBPyConnection,
    session: str | None = None,
    *,
    sessions: list[str] | None = None,
    source: str | None = None,
) -> list[Session]:
    params = {"session": session, "sessions": sessions, "source": source}
    events = con.sql(queries.load("session_events").sql, params=params).to_arrow_table()
    parts = con.sql(queries.load("session_parts").sql, params=params).to_arrow_table()
    return build_sessions(events.to_pylist(), parts.to_pylist())


@dataclass
class Reconstruction:
    """Every call of the selected sessions, with the ratio that sizes them."""

    sessions: list[Session]
    calls: list[tuple[Session, Call]]
    ratios: dict[str, Ratio]  # per source: each provider and tokenizer has its own
    _by_session: dict[int, list[Call]] | None = None

    def ratio(self, session: Session) -> Ratio:
        return self.ratios[session.source]

    def calls_of(self, session: Session) -> list[Call]:
        """The session's calls in order (the grouping is built once)."""
        if self._by_session is None:
            self._by_session = defaultdict(list)
            for owner, call in self.calls:
                self._by_session[id(owner)].append(call)
        return self._by_session.get(id(session), [])


FIT_SESSIONS = 50  # per source: hundreds of calls for a steady fit, cheap to rebuild


def reconstruct(con: duckdb.DuckDBPyConnection, session: str | None = None) -> Reconstruction:
    """Every call of the selected sessions, and per source a ratio fitted on the same sample
    whatever is selected: the source's FIT_SESSIONS sessions with the most measured calls
    (so `calls SESSION` and `calls` give a call the same estimate)."""
    sessions = load_sessions(con, session)
    every = [(s, c) for s in sessions for c in calls(s)]
    by_key = {(s.app_name, s.user_id, s.session_id): s for s in sessions}
    calls_by_session: dict[int, list[Call]] = defaultdict(list)
    for owner, call in every:
        calls_by_session[id(owner)].append(call)
    ratios: dict[str, Ratio] = {}
    for source in dict.fromkeys(s.source for s in sessions):
        keys = con.execute(
            queries.load("fit_sessions").sql, {"source": source, "limit": FIT_SESSIONS}
        ).fetchall()
        missing = sorted({k[2] for k in keys if k not in by_key})
        extra = {
            (s.app_name, s.user_id, s.session_id): s
            for s in (load_sessions(con, sessions=missing, source=source) if missing else [])
        }
        samples = []
        for key in keys:
            owner = by_key.get(key) or extra.get(key)
            if owner is None:
                continue
            found = calls_by_session[id(owner)] if key in by_key else list(calls(owner))
            samples += [
                (c.event.author or "", sum(c.chars_by_role.values()), c.event.prompt_tokens)
                for c in found
                if c.kind == "agent" and c.event.prompt_tokens
            ]
        ratios[source] = fit_ratio(samples)
    return Reconstruction(sessions, every, ratios, calls_by_session)


def best_occupancy(call: Call, ratio: Ratio) -> tuple[int | None, str | None]:
    """The call's window as well as it is known: measured, else estimated content plus the
    agent's fitted system+tools constant (inferred), else the estimate alone."""
    measured, estimated = _occupancy(call, ratio)
    if measured is not None:
        return measured, "measured"
    if estimated is None:
        return None, None
    constant = ratio.constant_tokens.get(call.event.author or "")
    if constant is None:
        return estimated, "estimated"
    return estimated + round(constant), "estimated+inferred"


def _occupancy(call: Call, ratio: Ratio) -> tuple[int | None, int | None]:
    if call.kind == "summarizer":
        return call.event.prompt_tokens, None
    return call.event.prompt_tokens, ratio.tokens(sum(call.chars_by_role.values()))


def calls_frame(rec: Reconstruction, turn: int | None = None) -> pl.DataFrame:
    """One row per call: occupancy measured/estimated, by role, cumulative input in its turn."""
    rows = []
    # per turn: measured sum (None until a call has usage), estimated sum, best sum, kinds
    running: dict[tuple, list] = defaultdict(lambda: [None, 0, 0, set()])
    for session, call in rec.calls:
        ratio = rec.ratio(session)
        measured, estimated = _occupancy(call, ratio)
        by_role = {role: ratio.tokens(call.chars_by_role[role]) for role in ROLES}
        visible = sum(by_role.values())
        inferred = (
            measured - visible if measured is not None and call.kind != "summarizer" else None
        )
        by_role["inferred_system"] = inferred
        key = (session.app_name, session.user_id, session.session_id, call.event.invocation_id)
        cumulative_measured = cumulative_estimated = cumulative = cumulative_source = None
        if call.kind != "summarizer":
            totals = running[key]
            if measured is not None:
                totals[0] = (totals[0] or 0) + measured
            totals[1] += estimated or 0
            best, source = best_occupancy(call, ratio)
            totals[2] += best or 0
            totals[3].add(source)
            cumulative_measured, cumulative_estimated, cumulative = totals[:3]
            cumulative_source = (
                "measured"
                if totals[3] == {"measured"}
                else "estimated"
                if "measured" not in totals[3]
                else "mixed"
            )
        error = None
        if measured and estimated is not None and ratio.source == "fitted":
            expected = estimated + ratio.constant_tokens.get(call.event.author or "", 0)
            error = (expected - measured) / measured
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
                "occupancy": best_occupancy(call, ratio)[0]
                if call.kind != "summarizer"
                else measured,
                "occupancy_source": best_occupancy(call, ratio)[1]
                if call.kind != "summarizer"
                else "measured",
                "cumulative_input_measured": cumulative_measured,
                "cumulative_input_estimated": cumulative_estimated,
                "cumulative_input": cumulative,
                "cumulative_input_source": cumulative_source,
                "cached_tokens": call.event.cached_tokens,
                "chars": sum(call.chars_by_role.values()) if call.kind != "summarizer" else None,
                "by_role": by_role,
                "estimate_error": error,
                "gauge_blind": error is not None and abs(error) > BLIND_GAUGE,
                "ratio_source": ratio.source,
                "chars_per_token": round(ratio.chars_per_token, 3),
                "ratio_mean_abs_error": None
                if ratio.mean_abs_error is None
                else round(ratio.mean_abs_error, 4),
                "source": session.source,
                "error_code": call.event.error_code,
            }
        )
    frame = with_time(
        pl.DataFrame(rows, schema=_CALL_SCHEMA) if rows else pl.DataFrame(schema=_CALL_SCHEMA)
    )
    return frame if turn is None else frame.filter(pl.col("turn") == turn)


_CALL_SCHEMA = {
    "call_id": pl.String,
    "session_id": pl.String,
    "app_name": pl.String,
    "user_id": pl.String,
    "invocation_id": pl.String,
    "turn": pl.Int64,
    "agent": pl.String,
    "kind": pl.String,
    "timestamp": pl.Float64,
    "model_version": pl.String,
    "occupancy_measured": pl.Int64,
    "occupancy_estimated": pl.Int64,
    "occupancy": pl.Int64,
    "occupancy_source": pl.String,
    "cumulative_input_measured": pl.Int64,
    "cumulative_input_estimated": pl.Int64,
    "cumulative_input": pl.Int64,
    "cumulative_input_source": pl.String,
    "cached_tokens": pl.Int64,
    "chars": pl.Int64,
    "by_role": pl.Struct({r: pl.Int64 for r in (*ROLES, "inferred_system")}),
    "estimate_error": pl.Float64,
    "gauge_blind": pl.Boolean,
    "ratio_source": pl.String,
    "chars_per_token": pl.Float64,
    "ratio_mean_abs_error": pl.Float64,
    "source": pl.String,
    "error_code": pl.String,
}


def with_time(frame: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Epoch-second columns as UTC datetimes."""
    return frame.with_columns(
        (pl.col(c) * 1_000_000).cast(pl.Int64).cast(pl.Datetime("us", "UTC")).alias(c)
        for c in columns or ("timestamp",)
    )


def window_frame(rec: Reconstruction, call_id: str) -> pl.DataFrame:
    """The parts of one call's request, in request order, with their sizes."""
    for session, call in rec.calls:
        if call.event.event_id == call_id:
            if call.kind == "summarizer":
                break
            parts = window(session, call.index)
            return pl.DataFrame(
                [
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
                        "tokens_estimated": rec.ratio(session).tokens(p.chars),
                    }
                    for p in parts
                ],
                schema={
                    "event_id": pl.String,
                    "part_index": pl.Int64,
                    "part_kind": pl.String,
                    "author": pl.String,
                    "role": pl.String,
                    "relayed": pl.Boolean,
                    "tool_name": pl.String,
                    "function_call_id": pl.String,
                    "chars": pl.Int64,
                    "tokens_estimated": pl.Int64,
                },
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
                before_m, before_e = _occupancy(source_call, ratio)
                after_m, after_e = _occupancy(after_call, ratio) if after_call else (None, None)
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
    schema = {
        "session_id": pl.String,
        "invocation_id": pl.String,
        "turn": pl.Int64,
        "agent": pl.String,
        "tool_name": pl.String,
        "function_call_id": pl.String,
        "latency_s": pl.Float64,
        "result_chars": pl.Int64,
        "result_tokens_estimated": pl.Int64,
        "rows": pl.Int64,
        "tokens_per_row": pl.Int64,
        "occupancy_before": pl.Int64,
        "occupancy_after": pl.Int64,
        "occupancy_source": pl.String,
        "growth_tokens": pl.Int64,
        "growth_tokens_per_s": pl.Int64,
        "parallel_results": pl.Int64,
        "resent_calls": pl.Int64,
        "resent_tokens": pl.Int64,
        "resent_calls_in_turn": pl.Int64,
        "resent_tokens_in_turn": pl.Int64,
    }
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
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
            occupancies = [_occupancy(c, ratio) for c in turn_calls]
            measured = [m for m, _ in occupancies if m is not None]
            estimated = [e for _, e in occupancies if e is not None]
            best = [b for b in (best_occupancy(c, ratio) for c in turn_calls) if b[0] is not None]
            peak = max(best, default=(None, None), key=lambda b: b[0])
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
                    "cumulative_input_source": None
                    if not kinds
                    else "measured"
                    if kinds == {"measured"}
                    else "estimated"
                    if "measured" not in kinds
                    else "mixed",
                    "largest_tool_result": largest.tool_name if largest else None,
                    "largest_result_tokens_estimated": ratio.tokens(largest.chars)
                    if largest
                    else None,
                    "error_code": errors[-1].error_code if errors else None,
                    "error_message": errors[-1].error_message if errors else None,
                    "started_at": events[0].epoch,
                }
            )
    schema = {
        "session_id": pl.String,
        "invocation_id": pl.String,
        "turn": pl.Int64,
        "calls": pl.Int64,
        "tool_calls": pl.Int64,
        "wall_s": pl.Float64,
        "peak_occupancy_measured": pl.Int64,
        "peak_occupancy_estimated": pl.Int64,
        "peak_occupancy": pl.Int64,
        "peak_occupancy_source": pl.String,
        "cumulative_input_measured": pl.Int64,
        "cumulative_input_estimated": pl.Int64,
        "cumulative_input": pl.Int64,
        "cumulative_input_source": pl.String,
        "largest_tool_result": pl.String,
        "largest_result_tokens_estimated": pl.Int64,
        "error_code": pl.String,
        "error_message": pl.String,
        "started_at": pl.Float64,
    }
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return with_time(frame, "started_at")
