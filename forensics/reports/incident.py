"""The incident report's content: every figure computed and formatted here, with its provenance.

This module builds a typed context from the api's frames; `reports.render` turns it
into one self-contained HTML file. Nothing here imports jinja2 or matplotlib.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from .. import __version__, api
from ..errors import ForensicsError
from ..provenance import ESTIMATED, INFERRED, LOGGED, MEASURED, PRICED
from ..sanitize import shell_word
from ..words import counted, union_of

WHATIF_CAP = 16_000  # the founding guard's budget


def n(value: int | float | None, unit: str = "") -> str:
    """A number for people: thousands separators, '—' when unknown."""
    if value is None:
        return "—"
    text = (
        f"{value:,.0f}" if isinstance(value, int) or float(value).is_integer() else f"{value:,.2f}"
    )
    return f"{text} {unit}".strip()


TINY = Decimal("0.0001")  # an amount below it is written "< $0.0001"


def usd(low: Decimal | None, high: Decimal | None = None) -> str:
    """Money for people, one rule on both pages: a dollar or more in cents; less, to
    three significant digits ($0.0108, $0.00785); a true zero as $0, an amount below
    $0.0001 as "< $0.0001"; a range as low–high. The JSON and CSV keep every digit."""

    def one(value: Decimal) -> str:
        sign, size = ("-" if value < 0 else ""), abs(Decimal(value))
        if not size:
            return "$0"
        if size < TINY:
            return f"{'> -' if sign else '< '}$0.0001"
        if size >= 1:
            return f"{sign}${size:,.2f}"
        places = 2 - size.adjusted()  # 3 significant digits
        text = f"{size:.{places}f}"
        if Decimal(text) >= 1:  # 0.9996 rounds up to a dollar
            return f"{sign}${Decimal(text):,.2f}"
        return f"{sign}${text}"

    if low is None:
        return "—"
    if high is None or one(high) == one(low):  # a range its rounding cannot show
        return one(low)
    return f"{one(low)}–{one(high)}"


def cost_kind(row: dict[str, Any]) -> str | None:
    """The figure class of a group's cost: its weakest part (a range is priced)."""
    if row.get("estimated_calls") or row.get("unknown_calls"):
        return ESTIMATED
    if row.get("inferred_calls"):
        return INFERRED
    return None if row.get("cost_source") == "unknown" else PRICED


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:,.2f} s"


def utc(value: datetime) -> datetime:
    """A time as UTC: the store's are UTC kept without a zone (never the machine's zone,
    which `astimezone` takes a time without one to be in)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def when(value: datetime | None) -> str:
    return "—" if value is None else utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class Cell:
    """One figure as shown, and the kind of evidence behind it."""

    text: str
    provenance: str | None = None  # measured | estimated | inferred | None (a label)


@dataclass
class TurnRow:
    turn: int
    started: str
    calls: Cell
    tool_calls: Cell
    wall: Cell
    peak_occupancy: Cell
    cumulative_measured: Cell
    cumulative_estimated: Cell
    largest_result: str
    error: str
    cost: Cell = field(default_factory=lambda: Cell("—"))
    cache_breaks: Cell = field(default_factory=lambda: Cell(""))  # forensics cache's breaks


@dataclass
class CallPoint:
    """One call on a chart's axis."""

    label: str
    kind: str
    by_role: dict[str, int]  # estimated tokens per role, inferred_system included
    measured: int | None
    cumulative_measured: int | None
    cumulative_estimated: int
    result_arrived: bool  # a tool result entered the window just before this call
    after_compaction: bool
    cache_break: str | None = None  # the cause, where this call broke its cached prefix


@dataclass
class Chart:
    turn: int  # the turn charted, or the first of `turns`
    title: str
    points: list[CallPoint]
    svg: str = ""  # filled by the renderer
    turns: list[int] = field(default_factory=list)  # turns of one call charted together


@dataclass
class GrowthRow:
    turn: str
    tool: str
    latency: Cell
    rows: Cell
    tokens_per_row: Cell
    result_tokens: Cell
    before: Cell
    after: Cell
    growth: Cell
    resent_calls: Cell
    resent_tokens: Cell
    resent_cost: Cell = field(default_factory=lambda: Cell("—"))
    preview: str | None = None  # the result's first characters, only with --show-content


@dataclass
class CompactionRow:
    after_turn: str
    range: str
    raw_events: Cell
    tool_results: Cell
    tool_tokens: Cell
    summary_tokens: Cell
    overlap: Cell
    in_next_request: str


@dataclass
class FailedCall:
    label: str
    agent: str
    measured: Cell
    estimated: Cell


@dataclass
class Failure:
    turn: int
    error_code: str
    error_message: str
    last_calls: list[FailedCall]
    # the error says the request did not fit: (requested, limit) as its text gives them
    context: tuple[int | None, int | None] | None = None

    def said(self) -> str:
        """What the error says of the window, for a sentence ("" when it says nothing)."""
        if self.context is None:
            return ""
        requested, limit = self.context
        if requested is not None and limit is not None:
            return f"the request did not fit: {n(requested)} tokens > {n(limit)}"
        return "the request did not fit the model's window"


@dataclass
class LoggedFailure:
    """One context failure of the session as the logs and traces saw it (`failures`)."""

    when: str
    evidence: str
    figure: Cell  # the size figure logged at failure
    responses_before: Cell
    window: Cell  # the failing call's rebuilt window
    cumulative: Cell  # the turn's cumulative input through it
    verdict: str


@dataclass
class WhatIf:
    """A token cap replayed on the top growth call's tool (`forensics whatif`): both
    halves of the arithmetic, the saving and the extra turns it pays for."""

    guard: str
    lines: list[str]
    assumption: str
    changes_nothing: bool = False  # the cap leaves the result as it is: a line, no box


@dataclass
class Method:
    sources: list[str]
    ratio: str
    toolkit: str
    generated_at: str
    reconstruction: str
    prices: str = ""


@dataclass
class IncidentContext:
    """Everything the incident template shows; built by `build_incident`."""

    title: str
    period: str  # first to last event of the session
    session_id: str
    app_name: str
    user_id: str
    headline: list[str]
    turns: list[TurnRow]
    charts: list[Chart]
    growth: list[GrowthRow]
    compaction: list[CompactionRow]
    retained: str
    failure: Failure | None
    logged_failures: list[LoggedFailure] = field(default_factory=list)
    charts_note: str | None = None  # how the turns with one call are charted
    evidence: dict[str, list[str]] = field(default_factory=dict)
    method: Method | None = None
    show_content: bool = False
    whatif: WhatIf | None = None


def _cell(value: int | float | None, kind: str | None, unit: str = "") -> Cell:
    return Cell(n(value, unit), kind if value is not None else None)


def ranged(r: dict[str, Any], figure: str, kind: str | None) -> Cell:
    """A figure, or where the session's ADK release is not known and the releases it may
    be give it different values (`<figure>_low`/`_high`), its range as low–high."""
    low, high = r.get(f"{figure}_low"), r.get(f"{figure}_high")
    if low is None or low == high:
        return _cell(r[figure], kind)
    return Cell(f"{n(low)}–{n(high)}", kind)


def build_incident(
    store: api.StoreLike,
    selection: api.SelectionLike,
    *,
    turn: int | None = None,
    show_content: bool = False,
    prices: api.PricesLike = None,
    whatif_cap: int | None = WHATIF_CAP,
) -> IncidentContext:
    """The incident report for one session (one turn of interest with `turn`), its
    money priced with genai-prices and the overrides of `prices` or the store's kept
    prices file (api.price_book); with `whatif_cap`, a token cap of that many tokens
    replayed on the top growth call's tool."""
    with api.using(store) as opened:
        book = api.price_book(prices, opened)
        return _build(api.Scope(opened, selection), turn, show_content, book, whatif_cap)


def _build(
    scope: api.Scope, turn: int | None, show_content: bool, book: api.PriceBook,
    whatif_cap: int | None = WHATIF_CAP,
) -> IncidentContext:  # fmt: skip
    # one reconstruction, used by every frame; the store opened once
    if scope.selection.session is None:
        raise ForensicsError("an incident report is about one session: give its id")
    calls, turns, growth = scope.calls(), scope.turns(), scope.growth()
    compaction, retained = scope.compaction(), scope.compaction_sessions()
    session = scope.sessions().row(0, named=True)
    key = (session["app_name"], session["user_id"], session["session_id"])
    agent_calls = calls.filter(pl.col("kind") != "summarizer")
    if turn is not None:
        api.check_turn(turns.filter(pl.col("session_id") == key[2]), turn)
    breaks = scope.cache(book, "call").filter(pl.col("is_break"))
    broke = {r["call_id"]: r for r in breaks.iter_rows(named=True)}
    charts, charts_note = _charts(agent_calls, compaction, turn, key[2], broke)

    failure = _failure(turns, agent_calls)
    costs = {r["turn"]: r for r in scope.cost(book, "turn").iter_rows(named=True)}
    resent = {
        r["function_call_id"]: r for r in scope.tool_call_costs(book).iter_rows(named=True)
    }
    context = IncidentContext(
        title=_title(session["session_id"]),
        period=f"{when(session['first_event_at'])} to {when(session['last_event_at'])}",
        session_id=session["session_id"],
        app_name=session["app_name"],
        user_id=session["user_id"],
        headline=_headline(turns, growth, agent_calls, failure, costs, resent),
        turns=[_turn_row(r, costs.get(r["turn"]), _breaks_cell(breaks, r["turn"]))
               for r in turns.iter_rows(named=True)],
        charts=charts,
        growth=[
            _growth_row(
                r,
                scope.result_preview(key, r["function_call_id"]) if show_content else None,
                resent.get(r["function_call_id"]),
            )
            for r in growth.head(5).iter_rows(named=True)
        ],
        compaction=[_compaction_row(r) for r in compaction.iter_rows(named=True)],
        retained=_retained(retained),
        failure=failure,
        logged_failures=[_logged_failure(r) for r in scope.failures().iter_rows(named=True)],
        charts_note=charts_note,
        show_content=show_content,
    )
    rules = scope.window_rules().get(session["session_id"], "no rules: no call")
    priced = scope.call_costs(book)
    family = "claude-code" if str(session["source"] or "").startswith("claude-code") else "adk"
    context.evidence = _evidence(
        context, calls, growth, compaction, scope.fidelity(), rules, family
    )
    _cost_evidence(context.evidence, priced, book, not growth.is_empty())
    if breaks.height:
        context.evidence[INFERRED].append(
            f"{counted(breaks.height, 'cache prefix break')} (✂): a call that read well "
            "below what its thread's previous call left cached; the cause from the stored "
            "records, the cost at the rates the call paid (`forensics cache`, docs/cache.md).")
    context.method = _method(api.session_ingests(scope.store, key), calls, rules)
    context.method.prices = _prices(priced, book)
    if whatif_cap is not None and not growth.is_empty():
        context.whatif = _whatif(scope, book, growth.row(0, named=True), whatif_cap)
    return context


def _whatif(scope: api.Scope, book: api.PriceBook, top: dict[str, Any], cap: int) -> WhatIf:
    """A token cap of `cap` on the top growth call's tool, replayed on the session."""
    guard = api.Guard(token_cap=cap, tool=top["tool_name"])
    replay = scope.whatif(book, guard)
    lines = []
    result = replay.result_frame().filter(
        pl.col("function_call_id") == top["function_call_id"]
    ).row(0, named=True)
    if result["payload"] == "unsized":
        lines.append(
            f"The {top['tool_name']} result was stored before store schema 9, which sizes "
            "rows; ingest the session again with --full to replay a guard on it."
        )
        return WhatIf(guard.describe(), lines, api.WHATIF_ASSUMPTION)
    kept = (
        f"keeps {n(result['rows_kept'])} of its {counted(result['rows'], 'row')}"
        if result["rows"]
        else "has no rows to cut (sized whole)"
    )
    over = " and still goes out over the cap" if result["over_budget"] else ""
    turn = top["turn"]  # None: a call before the session's first prompt, in no turn
    result_of = (
        f"turn-{turn} {top['tool_name']} result"
        if turn is not None
        else f"{top['tool_name']} result (in no turn: no prompt came before it)"
    )
    if result["counterfactual_tokens"] == result["result_tokens_estimated"]:
        line = (
            f"What if: {guard.describe()}. It leaves the {result_of} "
            f"({n(result['result_tokens_estimated'])} tokens, estimated) as it is, so it "
            f"changes nothing here; `forensics whatif --token-cap N` replays a lower cap."
        )
        return WhatIf(guard.describe(), [line], api.WHATIF_ASSUMPTION, changes_nothing=True)
    lines.append(
        f"The {result_of} {kept}{over}: "
        f"{n(result['result_tokens_estimated'])} → {n(result['counterfactual_tokens'])} "
        "tokens in the window (estimated)."
    )
    turns = replay.turn_frame()
    row = turns.filter(pl.col("turn").eq_missing(turn)).row(0, named=True)
    whose = f"Turn {turn}'s" if turn is not None else "The calls in no turn: their"
    lines.append(
        f"{whose} cumulative input: {n(row['cumulative_input'])} → "
        f"{n(row['cumulative_input_counterfactual'])} tokens; its peak window "
        f"{n(row['peak_occupancy'])} → {n(row['peak_occupancy_counterfactual'])}."
    )
    calls = replay.call_frame().filter(pl.col("failure").is_not_null()
                                       & (pl.col("failure") != "not a context failure"))
    for c in calls.iter_rows(named=True):
        limit = f"the limit of {n(c['context_limit'])}" if c["context_limit"] else "no known limit"
        verdict = {"prevented": "it fits: the failure is prevented",
                   "still over": "still over: not prevented",
                   "limit unknown": "whether it fits is unknown"}[c["failure"]]  # fmt: skip
        lines.append(
            f"The failed call of turn {c['turn']}: window {n(c['occupancy'])} → "
            f"{n(c['occupancy_counterfactual'])} tokens against {limit}; {verdict}."
        )
    session = replay.session_frame().row(0, named=True)
    if session["saving_usd_low"] is None:
        lines.append("The saving is unknown: some calls of the session have no price.")
    else:
        paid = session["extra_turns_paid_for"]
        extra = (
            f"; one more turn under the cap costs about {usd(session['extra_call_usd_low'])}, "
            f"so the saving pays for {paid:,.1f} extra turns before it is lost"
            if paid is not None
            else "; the cost of one more turn is unknown"
        )
        lines.append(
            f"The session's input would have cost "
            f"{usd(session['saving_usd_low'], session['saving_usd_high'])} less (estimated)"
            f"{extra}."
        )
    return WhatIf(guard.describe(), lines, api.WHATIF_ASSUMPTION)


def _cost_cell(row: dict[str, Any] | None, low: str = "cost_usd_low",
               high: str = "cost_usd_high", kind: str | None = None) -> Cell:  # fmt: skip
    if row is None or row[low] is None:
        return Cell("—")
    missing = row.get("unknown_calls") or 0
    text = usd(row[low], row[high]) + (f" + {missing} unpriced" if missing else "")
    return Cell(text, kind or cost_kind(row))


def _breaks_cell(breaks: pl.DataFrame, turn: int) -> Cell:
    """A turn's cache prefix breaks: how many, their causes and what they cost."""
    mine = breaks.filter(pl.col("turn") == turn)
    if mine.is_empty():
        return Cell("")
    causes = ", ".join(sorted(set(mine["cause"].to_list())))
    money = "unpriced"
    if mine["break_cost_usd_low"].null_count() == 0:  # exact Decimal sums
        low = sum(mine["break_cost_usd_low"].to_list(), Decimal(0))
        money = usd(low, sum(mine["break_cost_usd_high"].to_list(), Decimal(0)))
    return Cell(f"{mine.height} ({causes}): {money}", INFERRED)


def _turn_row(r: dict[str, Any], cost: dict[str, Any] | None = None,
              cache_breaks: Cell | None = None) -> TurnRow:  # fmt: skip
    peak_kind = {"measured": MEASURED, "estimated": ESTIMATED}.get(
        r["peak_occupancy_source"] or "", INFERRED
    )
    if r.get("peak_occupancy_low") is not None and peak_kind == MEASURED:
        peak_kind = ESTIMATED  # a range one of whose ends is a call's estimate
    return TurnRow(
        turn=r["turn"],
        started=utc(r["started_at"]).strftime("%H:%M:%S"),
        calls=Cell(n(r["calls"])),
        tool_calls=Cell(n(r["tool_calls"])),
        wall=Cell(seconds(r["wall_s"])),
        peak_occupancy=ranged(r, "peak_occupancy", peak_kind),
        cumulative_measured=_cell(r["cumulative_input_measured"], MEASURED),
        cumulative_estimated=ranged(r, "cumulative_input_estimated", ESTIMATED),
        cost=_cost_cell(cost),
        cache_breaks=cache_breaks or Cell(""),
        largest_result=(
            f"{r['largest_tool_result']} (~{n(r['largest_result_tokens_estimated'])} tokens)"
            if r["largest_tool_result"]
            else "—"
        ),
        error=r["error_code"] or "",
    )


def _failure(turns: pl.DataFrame, calls: pl.DataFrame) -> Failure | None:
    failed = turns.filter(pl.col("error_code").is_not_null())
    if failed.is_empty():
        return None
    row = failed.row(-1, named=True)
    in_turn = calls.filter(pl.col("turn") == row["turn"])
    last = in_turn.tail(4)
    return Failure(
        turn=row["turn"],
        error_code=row["error_code"],
        error_message=row["error_message"] or "",
        context=api.context_error(row["error_code"], row["error_message"]),
        last_calls=[
            FailedCall(
                label=utc(c["timestamp"]).strftime("%H:%M:%S"),
                agent=c["agent"] or "",
                measured=_cell(c["occupancy_measured"], MEASURED),
                estimated=ranged(c, "occupancy_estimated", ESTIMATED),
            )
            for c in last.iter_rows(named=True)
        ],
    )


def _source_kind(source: str | None) -> str | None:
    if source is None:
        return None
    # `mixed`: measured calls and estimated ones summed, so the figure is an estimate
    return MEASURED if source == "measured" else ESTIMATED


def _logged_failure(row: dict[str, Any]) -> LoggedFailure:
    figure_kind = LOGGED if row["logged_tokens_source"] == "logged" else MEASURED
    verdict = row["verdict"]
    gaps = [
        f"{name} {gap:+.1f}%"
        for name, gap in (
            ("window", row["gap_window_pct"]),
            ("cumulative", row["gap_cumulative_pct"]),
        )
        if gap is not None
    ]
    return LoggedFailure(
        when=when(row["failed_at"]),
        evidence=row["evidence"],
        figure=_cell(row["logged_tokens"], figure_kind),
        responses_before=_cell(row["responses_before"], LOGGED),
        window=_cell(row["window_tokens"], _source_kind(row["window_tokens_source"])),
        cumulative=_cell(row["cumulative_input"], _source_kind(row["cumulative_input_source"])),
        verdict=verdict + (f" ({', '.join(gaps)})" if gaps else ""),
    )


def _headline(
    turns: pl.DataFrame,
    growth: pl.DataFrame,
    calls: pl.DataFrame,
    failure: Failure | None,
    costs: dict[int, dict[str, Any]],
    resent: dict[str, dict[str, Any]],
) -> list[str]:
    lines = []
    if failure is not None:
        failed_turn = turns.filter(pl.col("turn") == failure.turn).row(0, named=True)
        failed_call = calls.filter(
            (pl.col("turn") == failure.turn) & pl.col("error_code").is_not_null()
        )
        size = ""
        if not failed_call.is_empty():
            last = failed_call.row(-1, named=True)
            best, source = last["occupancy"], last["occupancy_source"]
            size = (f"; the request it tried to send held an estimated "
                    f"{ranged(last, 'occupancy_estimated', None).text} tokens")  # fmt: skip
            if source == "estimated+inferred":
                # the agent's constant on either bound of the conversation's range
                shifted = {f"occupancy_{end}": None if last[f"occupancy_estimated_{end}"] is None
                           else best + last[f"occupancy_estimated_{end}"]
                           - last["occupancy_estimated"] for end in ("low", "high")}  # fmt: skip
                about = ranged({"occupancy": best, **shifted}, "occupancy", None).text
                size += (
                    f" of conversation, about {about} with the system instruction and "
                    "tools (inferred)"
                )
        cost = costs.get(failure.turn)
        spent = ""
        if cost is not None and cost["cost_usd_low"] is not None:
            spent = (
                f" The turn cost {usd(cost['cost_usd_low'], cost['cost_usd_high'])} "
                f"({_how(cost)})."
            )
        said = f" ({failure.said()})" if failure.context is not None else ""
        lines.append(
            f"Turn {failure.turn} failed with {failure.error_code}{said} "
            f"{seconds(failed_turn['wall_s'])} after it started{size}.{spent}"
        )
    if not growth.is_empty() and growth["growth_tokens"][0] is not None:
        g = growth.row(0, named=True)
        rows = (
            f" returned {counted(g['rows'], 'row')} (about {n(g['tokens_per_row'])} tokens each)"
            if g["rows"]
            else f" returned about {n(g['result_tokens_estimated'])} tokens"
        )
        lines.append(
            f"In turn {g['turn']}, {g['tool_name']}{rows} within {seconds(g['latency_s'])} and "
            f"took the next request from {n(g['occupancy_before'])} to "
            f"{n(g['occupancy_after'])} tokens ({g['occupancy_source']}); the rest of the turn "
            f"carried it in {_calls(g['resent_calls_in_turn'])}, about "
            f"{n(g['resent_tokens_in_turn'])} tokens of input (estimated)"
            + _resent_money(resent.get(g["function_call_id"]))
            + "."
        )
    if not lines:
        top = calls["cumulative_input_estimated"].max() if not calls.is_empty() else None
        total = top if isinstance(top, int) else None
        lines.append(
            f"No failure and no tool result stand out; the largest cumulative input "
            f"of a turn was an estimated {n(total)} tokens."
        )
    return lines


_HOW = (
    ("priced_calls", "priced"),
    ("range_calls", "a range: cache writes not stored"),
    ("inferred_calls", "the model inferred"),
    ("estimated_calls", "estimated: no usage"),
    ("failed_calls", "failed, not billed"),
    ("unknown_calls", "no price, not counted"),
)


def _how(cost: dict[str, Any]) -> str:
    """How a group's cost is known, in words: its calls by cost_source."""
    parts = [(cost[column], words) for column, words in _HOW if cost[column]]
    if len(parts) == 1:
        return parts[0][1]
    return "; ".join(f"{count:,} call{'s' if count != 1 else ''} {words}" for count, words in parts)


def _resent_money(row: dict[str, Any] | None) -> str:
    """The money of a result's sends in its turn; none when a send there had no price
    (queries/cost/tool_calls.sql leaves the figure null then)."""
    if row is None or row["sent_in_turn_usd_low"] is None:
        return ""
    low, high = row["sent_in_turn_usd_low"], row["sent_in_turn_usd_high"]
    return f", about {usd(low, high)} (estimated, at the rates those calls paid)"


def _charts(
    calls: pl.DataFrame, compaction: pl.DataFrame, turn: int | None, session_id: str,
    broke: dict[str, dict[str, Any]] | None = None,
) -> tuple[list[Chart], str | None]:
    """Every turn with model calls charted: each turn of several calls on its own, the
    turns of one call together (a bar each: a chart per one-call turn made a page of
    thousands of pixels of single bars), or `turn` alone."""
    sizes = dict(calls.group_by("turn").len().drop_nulls("turn").iter_rows())
    if turn is not None:
        return ([_chart(calls, compaction, turn, broke)] if sizes.get(turn) else []), None
    single = sorted(t for t, n in sizes.items() if n == 1)
    alone = sorted(t for t, n in sizes.items() if n > 1 or len(single) == 1)
    charts = [_chart(calls, compaction, t, broke) for t in alone]
    if len(single) < 2:
        return charts, None
    charts.append(_one_call_turns(calls, compaction, single, broke))
    charts.sort(key=lambda c: c.turn)
    # (an id that starts with '-' would read as an option: after '--', at the end)
    word = shell_word(session_id)
    command = (f"forensics report incident {word} --turn N --out FILE"
               if not session_id.startswith("-")
               else f"forensics report incident --turn N --out FILE -- {word}")  # fmt: skip
    note = (
        f"The {len(single):,} turns with one model call are charted together, a bar each; "
        f"`{command}` charts any turn alone."
    )
    return charts, note


def _point(c: dict[str, Any], label: str, grew: bool, compacted_at: list[float],
           broke: dict[str, dict[str, Any]] | None = None) -> CallPoint:  # fmt: skip
    by_role = {k: v or 0 for k, v in c["by_role"].items()}
    found = (broke or {}).get(c["call_id"])
    return CallPoint(
        label=label,
        kind=c["kind"],
        by_role=by_role,
        measured=c["occupancy_measured"],
        cumulative_measured=c["cumulative_input_measured"],
        cumulative_estimated=c["cumulative_input_estimated"] or 0,
        result_arrived=grew,
        after_compaction=any(t < c["timestamp"].timestamp() for t in compacted_at)
        and bool(by_role.get("summary")),
        cache_break=found["cause"] if found else None,
    )


def _chart(calls: pl.DataFrame, compaction: pl.DataFrame, turn: int,
           broke: dict[str, dict[str, Any]] | None = None) -> Chart:  # fmt: skip
    in_turn = calls.filter(pl.col("turn") == turn)
    compacted_at = [c.timestamp() for c in compaction["appended_at"].to_list()]
    points = []
    previous_estimate = None
    for i, c in enumerate(in_turn.iter_rows(named=True), start=1):
        grew = previous_estimate is not None and c["by_role"]["tool"] > (previous_estimate or 0)
        points.append(_point(c, f"{i}", grew, compacted_at, broke))
        previous_estimate = c["by_role"]["tool"]
    return Chart(
        turn=turn, title=f"Turn {turn}: window per call against cumulative input", points=points
    )


def _one_call_turns(calls: pl.DataFrame, compaction: pl.DataFrame, turns: list[int],
                    broke: dict[str, dict[str, Any]] | None = None) -> Chart:  # fmt: skip
    compacted_at = [c.timestamp() for c in compaction["appended_at"].to_list()]
    rows = calls.filter(pl.col("turn").is_in(turns)).sort("turn")
    points = [_point(c, f"{c['turn']}", False, compacted_at, broke)
              for c in rows.iter_rows(named=True)]
    return Chart(
        turn=turns[0],
        title=f"The {len(turns):,} turns with one model call: the window of each",
        points=points,
        turns=turns,
    )


def _growth_row(
    r: dict[str, Any], preview: str | None, cost: dict[str, Any] | None = None
) -> GrowthRow:
    return GrowthRow(
        turn=n(r["turn"]),
        tool=r["tool_name"],
        latency=Cell(f"≤ {seconds(r['latency_s'])}", INFERRED),
        rows=Cell(n(r["rows"])),
        tokens_per_row=_cell(r["tokens_per_row"], ESTIMATED),
        result_tokens=_cell(r["result_tokens_estimated"], ESTIMATED),
        before=ranged(r, "occupancy_before", r["occupancy_source"]),
        after=ranged(r, "occupancy_after", r["occupancy_source"]),
        growth=ranged(r, "growth_tokens", r["occupancy_source"]),
        resent_calls=_cell(r["resent_calls_in_turn"], INFERRED),
        resent_tokens=_cell(r["resent_tokens_in_turn"], ESTIMATED),
        resent_cost=_cost_cell(cost, "sent_in_turn_usd_low", "sent_in_turn_usd_high", ESTIMATED),
        preview=preview,
    )


def _compaction_row(r: dict[str, Any]) -> CompactionRow:
    return CompactionRow(
        after_turn=n(r["appended_after_turn"]),
        range=f"{when(r['start_timestamp'])} – {when(r['end_timestamp'])}",
        raw_events=Cell(n(r["raw_events_in_range"])),
        tool_results=Cell(n(r["tool_results_in_range"])),
        tool_tokens=_cell(r["tool_tokens_in_range"], ESTIMATED),
        summary_tokens=_cell(r["summary_tokens"], ESTIMATED),
        overlap=Cell(n(r["overlap_with_previous"])),
        in_next_request=(
            "no next call"
            if r["summary_in_next_request"] is None
            else "summary sent"
            if r["summary_in_next_request"]
            else "summary not sent (superseded)"
        ),
    )


def _retained(frame: pl.DataFrame) -> str:
    if frame.is_empty():
        return ""
    r = frame.row(0, named=True)
    if not r["compactions"]:
        return "No compaction in this session: every stored event stays in the window."
    largest = (
        f"; the largest raw tool result in it is {r['largest_retained_tool_result']} "
        f"(~{n(r['largest_retained_result_tokens'])} tokens, estimated)"
        if r["largest_retained_tool_result"]
        else ""
    )
    return (
        f"After the last range, {n(r['retained_events_after'])} raw events "
        f"(~{n(r['retained_tokens_after'])} tokens, estimated) stay in the window "
        f"verbatim{largest}."
    )


def _evidence(
    ctx: IncidentContext,
    calls: pl.DataFrame,
    growth: pl.DataFrame,
    compaction: pl.DataFrame,
    fidelity: pl.DataFrame,
    rules: str,
    family: str = "adk",
) -> dict[str, list[str]]:
    words = _WORDS.get(family, _WORDS["adk"])
    agent = calls.filter(pl.col("kind") != "summarizer")
    measured_calls = agent.filter(pl.col("occupancy_measured").is_not_null()).height
    unmeasured = agent.height - measured_calls
    evidence: dict[str, list[str]] = {MEASURED: [], ESTIMATED: [], INFERRED: [], "open": []}
    evidence[MEASURED].append(
        f"Window size of {n(measured_calls)} of {_calls(agent.height)}: {words['usage']}."
    )
    evidence[MEASURED].append("Turn wall times, call counts and tool calls: stored events.")
    if ctx.failure:
        evidence[MEASURED].append(
            f"The failure's error code ({ctx.failure.error_code}) and text: stored event."
        )
    if not growth.is_empty():
        evidence[MEASURED].append(
            f"Tool result sizes in characters and their row counts: {words['results']}."
        )
        evidence[ESTIMATED].append(
            "Tool result tokens, tokens per row and re-sent tokens: "
            "characters over the chars-per-token ratio."
        )
    evidence[ESTIMATED].append(
        "Window tokens by role, and cumulative input where a call "
        "has no usage: characters over the chars-per-token ratio."
    )
    if not compaction.is_empty():
        evidence[ESTIMATED].append("Tokens inside compaction ranges and of their summaries.")
    traced = fidelity.height
    if traced:
        exact = int(fidelity["responses_exact"].sum())
        close = int(fidelity["within_2pct"].sum())
        evidence[MEASURED].append(
            f"Traced: {n(traced)} of {n(agent.height)} requests, from ADK's own trace; the "
            f"rebuilt window holds exactly the traced function responses in {n(exact)} and "
            f"is within 2% of the traced size in {n(close)} (`forensics fidelity`)."
        )
    evidence[INFERRED].append(
        f"What each request contained: rebuilt from the stored events with {rules}"
        + (", checked against the traces above." if traced else ", not traced.")
    )
    evidence[INFERRED].append(
        "System instruction and tool schemas: measured prompt tokens "
        "minus the estimated visible window."
    )
    if not growth.is_empty():
        evidence[INFERRED].append(
            "Tool latency: an upper bound, from the model request that "
            f"asked to the stored result ({words['no_tool_start']})."
        )
    ranged = agent.filter(pl.col("occupancy_estimated_low").is_not_null())
    if ranged.height:
        estimated_cost = ranged.filter(
            pl.col("occupancy_measured").is_null() & (pl.col("kind") != "failed")).height
        priced = (
            f"; {counted(estimated_cost, 'of them has', 'of them have')} no usage: its "
            "cost is a range over them too" if estimated_cost else ""
        )
        evidence["open"].append(
            f"Which ADK release wrote the session: {rules} leaves it open, and the "
            f"releases it may be rebuild {n(ranged.height)} of {_calls(agent.height)} "
            f"differently ({union_of(ranged['rules_range'])}); their estimates, and the "
            "turns' and growths' that hold them, are shown as low–high (the charts draw "
            f"the newest kept rules'){priced}. `--adk-version` at ingest, or the session's "
            "trace, settles it."
        )  # fmt: skip
    if traced < agent.height:
        evidence["open"].append(
            f"Whether the {n(agent.height - traced)} untraced requests were exactly as "
            f"rebuilt: {words['no_trace']}."
        )
    if unmeasured:
        failed = agent.filter(
            pl.col("occupancy_measured").is_null() & (pl.col("kind") == "failed")
        ).height
        why = f" ({n(failed)} of them failed; a failed request reports none)" if failed else ""
        evidence["open"].append(
            f"{n(unmeasured)} of {_calls(agent.height)} carry no "
            f"usage{why}: their size is only estimated."
        )
    logged = [f for f in ctx.logged_failures if "adk" != f.evidence]
    if logged:
        evidence.setdefault(LOGGED, []).append(
            f"{n(len(logged))} context failure{'s' if len(logged) != 1 else ''} of this session "
            "in the application's logs or traces, with the size figure logged at failure "
            "(`forensics failures`)."
        )
    if ctx.failure and ctx.failure.context is not None:
        evidence[MEASURED].append(
            f"That the window's size caused the failure: the error says so "
            f"({ctx.failure.said()})."
        )
    elif ctx.failure:
        evidence["open"].append(
            "Whether the window's size caused the failure: the error does not say so."
        )
    evidence["open"].append(f"How long each tool itself ran: {words['tool_ran']}.")
    return evidence


# the evidence in each family's own words (what its records are called, what they lack)
_WORDS = {
    "adk": {
        "usage": "the provider's prompt_token_count stored with each response",
        "no_tool_start": "ADK stores no tool start",
        "no_trace": "the store has no trace of them (`forensics ingest adk-trace`)",
        "tool_ran": "not stored by ADK",
        "results": "stored function responses",
    },
    "claude-code": {
        "usage": "the input, cache read and cache write tokens the transcript recorded "
        "with each response",
        "no_tool_start": "the transcript stores no tool start",
        "no_trace": "Claude Code keeps no copy of the requests it sent",
        "tool_ran": "not stored in the transcript",
        "results": "the tool results the transcript stored",
    },
}


def _cost_evidence(
    evidence: dict[str, list[str]], priced: pl.DataFrame, book: api.PriceBook, tools: bool
) -> None:
    """What the money figures rest on, by kind."""
    counts = dict(priced.group_by("cost_source").len().iter_rows())
    evidence.setdefault(PRICED, [])
    known = sum(counts.get(k, 0) for k in ("priced", "range", "inferred", "estimated"))
    if known:
        evidence[PRICED].append(
            f"Cost of {n(known)} of {_calls(priced.height)}: the provider's usage times "
            f"the price of the call's UTC day ({_prices(priced, book)})."
        )
    if counts.get("failed"):
        failed = counts["failed"]
        evidence[PRICED].append(
            f"{n(failed)} failed request{'s' if failed != 1 else ''} with no usage: not billed."
        )
    if counts.get("range"):
        evidence["open"].append(
            f"Cache writes of {_calls(counts['range'])}: ADK does not store them, so "
            "their cost is a range, from none written to every uncached input token written."
        )
    if counts.get("inferred"):
        evidence[INFERRED].append(
            f"The model of {n(counts['inferred'])} compaction summarizer calls (their events "
            "name none): the session's main model."
        )
    if counts.get("estimated"):
        evidence[ESTIMATED].append(
            f"Cost of {_calls(counts['estimated'])} without usage: their input from the "
            "window's characters; their output not counted."
        )
    if counts.get("unknown"):
        evidence["open"].append(
            f"Cost of {_calls(counts['unknown'])}: no price for their model (never 0); "
            "`forensics prices` names it, a --prices file can price it."
        )
    if known and tools:
        evidence[ESTIMATED].append(
            "Re-sending a tool result, in money: its estimated tokens at each carrying "
            "call's own input price per token (cache reads and uncached input blended)."
        )


def _prices(priced: pl.DataFrame, book: api.PriceBook) -> str:
    used = sorted(set(priced["price_source"].drop_nulls().to_list()))
    return portable("; ".join(used) if used else f"no call priced (from {book.sources})")


# an absolute path in a text (not the path of a URL: postgresql://host/db)
_ABSOLUTE = re.compile(r"(?<![\w/.~-])/(?!/)[^\s,;()]+")


def relative(path: Path) -> str | None:
    """`path` relative to the working folder, when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return None


def portable(text: str) -> str:
    """`text` for a page sent to people on other machines: an absolute path in it
    (a prices file, a source) relative to the working folder when inside it, else
    its file name; the full paths stay in `forensics ingests` and the JSON."""

    def shown(found: re.Match[str]) -> str:
        path = Path(found.group(0))
        return relative(path) or path.name or str(path)

    return _ABSOLUTE.sub(shown, text)


def _method(ingests: pl.DataFrame, calls: pl.DataFrame, rules: str) -> Method:
    """How the report was made; its sources are the ingests this session's own rows
    came from (no other file in the store is named in a report meant for sharing)."""
    sources = []
    for row in ingests.iter_rows(named=True):
        filters = json.loads(row["filters"] or "{}")
        shown = ", ".join(f"{k}={v}" for k, v in filters.items()) or "no filters"
        what = "traced requests" if row["kind"] == "adk-trace" else "events"
        sources.append(
            f"{portable(row['source'])} ({shown}; ingest {row['ingest_id']}, "
            f"{n(row['rows'])} {what} of this session)"
        )
    ratios = calls.filter(pl.col("kind") != "summarizer").unique("ratio_model", maintain_order=True)
    ratio = "; ".join(
        f"{r['chars_per_token']:.2f} chars per token for {r['ratio_model'] or 'unnamed models'}, "
        + (
            f"fitted on that model's measured calls in the store (mean error "
            f"{r['ratio_mean_abs_error']:.1%})"
            if r["ratio_source"] == "fitted"
            else f"fitted on that model's traced, measured calls, whose system instruction "
            f"and tools are known (mean error {r['ratio_mean_abs_error']:.1%})"
            if r["ratio_source"] == "traced"
            else f"default ({r['ratio_note'] or 'nothing measured to fit'})"
        )
        for r in ratios.iter_rows(named=True)
    )
    return Method(
        sources=sources,
        ratio=ratio or "no calls",
        toolkit=f"agent-forensics {__version__}",
        generated_at=when(datetime.now(UTC)),
        reconstruction=f"{rules}: the request assembly of forensics/families/"
        + ("claude_code" if "claude-code" in rules else "adk")
        + "/windows.py",
    )


def _calls(count: int | None) -> str:
    """'1 call', '3 calls', '— calls' (not known)."""
    return counted(count, "call") if count is not None else "— calls"


def _title(session_id: str) -> str:
    """The page's title: "session X", unless the id says so itself ("session_..."). """
    said = session_id[:7].lower() == "session"
    return f"Incident report: {'' if said else 'session '}{session_id}"
