"""A guard replayed on stored history: each tool result cut as the guard would have cut
it, and every call's window rebuilt with those sizes, the trajectory held fixed.

The one big assumption (said in every table's footnote): the same calls run in the
same order, each request smaller by what the guard took out of the tool results it
carried. What the agent would have done with fewer rows (answered from less, or paged
for more) is not replayed; `extra_turns_paid_for` is the other half of the arithmetic:
how many extra turns the saving pays for before it is lost.

The results come from the parts' shape columns of store schema 9: each result's rows'
sizes (queries/whatif/result_rows.sql), what the guard keeps of them (fit.py), the cut
(queries/whatif/results.sql; fits_unnested.sql defines fit.py's figures); the calls from
queries/whatif/calls.sql, priced by the cost engine's views; turns, sessions and the
failures prevented are sums of the calls here.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import polars as pl
import pyarrow as pa

from ..columns import ANCHOR_COLUMNS, WHATIF_CALLS, WHATIF_RESULTS, WHATIF_SESSIONS, WHATIF_TURNS
from ..cost.billed import Costing, known_sum
from .anchors import anchor_figures
from .fit import fit
from .guard import Guard

_KEY = ["app_name", "user_id", "session_id"]
RESULT_RUN_EVENTS = 100_000  # the sessions whose results' rows are fitted at once
_CENT = Decimal("0.000000000001")  # money computed in floating point is kept to 12 places


def results(costing: Costing, guard: Guard, searched: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per tool result of the selection: the guard's cut (queries/whatif/results.sql), with
    every column the audit and the calls need (WHATIF_RESULTS is a subset), and what the
    cap does to its anchors (anchors.py; `searched`: the sessions searched for them)."""
    # a run of sessions at a time: the rows' sizes of every result at once were 274 MB
    # of lists at 1,000,000 events, and DuckDB's join over them more (1.76 GB peak, 1.15
    # GB by runs, 4.2 s against 6.2 s: each run reads the parts again)
    runs: list[pa.Table | None] = list(costing.facts.session_runs(RESULT_RUN_EVENTS))
    fits = [
        fit(costing.query("whatif/result_rows", sessions=run, tool=guard.tool),
            row_cap=guard.row_cap, token_cap=guard.token_cap, page_size=guard.page_size,
            chars_per_token=guard.chars_per_token).to_arrow()
        for run in runs or [None]  # None: the whole selection (none selected)
    ]  # fmt: skip
    frame = costing.query(
        "whatif/results",
        {"result_fits": pa.concat_tables(fits)},
        token_cap=guard.token_cap,
        chars_per_token=float(guard.chars_per_token),
    )
    # placed in the transcript, a result's first send goes out whole
    sends = pl.col("sends") - (0 if guard.placement == "boundary" else 1)
    anchors = anchor_figures(
        frame, costing.query("whatif/anchors", tool=guard.tool),
        costing.query("whatif/anchor_sessions") if searched is None else searched,
        guard.token_cap,
    )  # fmt: skip
    frame = frame.join(anchors, on=[*_KEY, "function_call_id"], how="left", maintain_order="left")
    return frame.with_columns(
        ((pl.col("result_tokens_estimated") - pl.col("counterfactual_tokens"))
         * sends.clip(lower_bound=0)).alias("saved_input_tokens"),
        pl.lit(guard.describe()).alias("guard"),
    )  # fmt: skip


@dataclass
class Replay:
    """One guard replayed on one selection: its results and calls, grouped on demand."""

    guard: Guard
    results: pl.DataFrame  # results(): every column
    calls: pl.DataFrame  # WHATIF_CALLS plus the columns the groupings need
    searched: pl.DataFrame  # the sessions searched for anchors (app, user, session)

    def result_frame(self) -> pl.DataFrame:
        return WHATIF_RESULTS.from_query(self.results)

    def call_frame(self) -> pl.DataFrame:
        return WHATIF_CALLS.from_query(self.calls)

    def turn_frame(self) -> pl.DataFrame:
        return WHATIF_TURNS.from_query(self._grouped([*_KEY, "turn"]))

    def session_frame(self) -> pl.DataFrame:
        frame = self._grouped(_KEY).join(
            self.calls.filter(pl.col("turn").is_not_null()).group_by(_KEY)
            .agg(pl.col("turn").n_unique().alias("turns")),
            on=_KEY, how="left",
        ).with_columns(pl.col("turns").fill_null(0))  # fmt: skip
        return WHATIF_SESSIONS.from_query(frame)

    def _grouped(self, by: list[str]) -> pl.DataFrame:
        cut = (
            self.results.filter(pl.col("fired").fill_null(False))
            .group_by(by).agg(pl.len().alias("results_cut"))
        )  # fmt: skip
        calls = self.calls
        frame = (
            calls.group_by(by, maintain_order=True)
            .agg(
                pl.len().alias("calls"),
                pl.col("occupancy").max().alias("peak_occupancy"),
                pl.col("occupancy_counterfactual").max().alias("peak_occupancy_counterfactual"),
                pl.col("window").sum().alias("cumulative_input"),
                pl.col("invalidated_tokens").sum().alias("invalidated_tokens"),
                pl.col("window_counterfactual").sum().alias("cumulative_input_counterfactual"),
                *(known_sum(c).alias(c) for c in ("cost_usd_low", "cost_usd_high",
                  "counterfactual_usd_low", "counterfactual_usd_high")),  # fmt: skip
                (pl.col("failure").is_not_null() & (pl.col("failure") != "not a context failure"))
                .sum().alias("context_failures"),
                (pl.col("failure") == "prevented").sum().alias("prevented"),
            )
            .join(cut, on=by, how="left", nulls_equal=True)
            .join(self._anchors(by), on=by, how="left", nulls_equal=True)
            .join(_extra_calls(calls), on=_KEY, how="left")
            .with_columns(
                pl.col("results_cut").fill_null(0).cast(pl.Int64),
                (pl.col("cumulative_input") - pl.col("cumulative_input_counterfactual"))
                .alias("saved_input_tokens"),
                (pl.col("cost_usd_low") - pl.col("counterfactual_usd_low")).alias("saving_usd_low"),
                (pl.col("cost_usd_high") - pl.col("counterfactual_usd_high"))
                .alias("saving_usd_high"),
                pl.lit(self.guard.describe()).alias("guard"),
            )
        )
        order = calls.select(_KEY).unique(maintain_order=True).with_row_index("session_order")
        frame = frame.join(order, on=_KEY, how="left").sort(
            ["session_order", *by[3:]], nulls_last=True, maintain_order=True
        )
        return frame.with_columns(
            pl.when(pl.col("extra_call_usd_low") > 0)
            .then(pl.col("saving_usd_low").cast(pl.Float64)
                  / pl.col("extra_call_usd_low").cast(pl.Float64))
            .alias("extra_turns_paid_for")  # fmt: skip
        )


    def _anchors(self, by: list[str]) -> pl.DataFrame:
        """Per group, its results' anchor figures summed (unknown where any is); 0 for a
        group without results of a session searched for them."""
        sums = self.results.group_by(by).agg(
            pl.len().alias("with_results"), *(known_sum(c).alias(c) for c in ANCHOR_COLUMNS)
        )
        searched = self.searched.with_columns(pl.lit(True).alias("searched"))
        groups = self.calls.select(by).unique().join(searched, on=_KEY, how="left")
        capped = self.guard.token_cap is not None
        none = pl.col("with_results").is_null() & pl.col("searched").fill_null(False)
        return groups.join(sums, on=by, how="left", nulls_equal=True).select(
            *by,
            *(pl.when(none & pl.lit(capped or c == "anchors")).then(0)
              .otherwise(pl.col(c)).cast(pl.Int64).alias(c) for c in ANCHOR_COLUMNS),
        )  # fmt: skip


def _extra_calls(calls: pl.DataFrame) -> pl.DataFrame:
    """Per session, one more turn under the guard (a model call: the cost study's turn):
    its last agent call's input less the guard's cut, its request fee, and the session's
    mean output per agent call, low bound; unknown when that call has no price."""
    agents = calls.filter(pl.col("kind") == "agent")
    last = agents.sort("call_index").group_by(_KEY).last()
    mean_output = agents.group_by(_KEY).agg(
        known_sum("output_usd_low").alias("outputs"), pl.len().alias("agent_calls")
    )
    frame = last.join(mean_output, on=_KEY, how="left")
    rows = []
    for r in frame.iter_rows(named=True):
        value = None
        parts = (r["cost_usd_low"], r["output_usd_low"], r["request_usd"], r["saving_usd_low"],
                 r["outputs"], r["invalidation_usd_low"])  # fmt: skip
        if all(p is not None for p in parts):
            cost, output, request, saving, outputs, invalidation = parts
            # the input less the guard's cut: a rewrite's one-off re-send is not a turn's
            value = (cost - output - saving - invalidation
                     + (outputs / r["agent_calls"]).quantize(_CENT))  # fmt: skip
            value = max(value, request)  # never less than the request fee alone
        rows.append({**{k: r[k] for k in _KEY}, "extra_call_usd_low": value})
    schema: dict[str, pl.DataType] = {k: pl.String() for k in _KEY}
    schema["extra_call_usd_low"] = pl.Decimal(38, 18)
    return pl.DataFrame(rows, schema=schema)


def replay(
    costing: Costing,
    calls: pl.DataFrame,
    failures: pl.DataFrame,
    guard: Guard,
    context_limit: int | None = None,
) -> Replay:
    """Replay `guard` on the selection `costing` prices. `calls` is the CALLS frame of the
    same selection (each call's occupancy as it ran), `failures` its context failures
    (the limit each named)."""
    searched = costing.query("whatif/anchor_sessions")
    found = results(costing, guard, searched)
    saved = costing.query(
        "whatif/calls",
        {"whatif_results": found.select(*_KEY, "function_call_id", "saved_chars").to_arrow()},
        placement=guard.placement,
    )
    limits = (
        failures.filter(pl.col("call_id").is_not_null())
        .group_by(*_KEY, "call_id").agg(pl.col("context_limit").max().alias("named_limit"))
    )  # fmt: skip
    frame = (
        saved.join(
            calls.select(*_KEY, "call_id", "occupancy", "occupancy_source", "invocation_id"),
            on=[*_KEY, "call_id"],
            how="left",
        )
        .join(limits.with_columns(pl.lit(True).alias("context_failure")),
              on=[*_KEY, "call_id"], how="left")  # fmt: skip
        .with_columns(
            (pl.col("occupancy") - pl.col("saved_tokens")).clip(lower_bound=0)
            .alias("occupancy_counterfactual"),
            pl.lit(context_limit, pl.Int64).fill_null(pl.col("named_limit"))
            .alias("context_limit"),
        )  # fmt: skip
    )
    failed = pl.col("kind") == "failed"
    frame = frame.with_columns(
        pl.when(~failed).then(None)
        .when(pl.col("context_failure").is_null()).then(pl.lit("not a context failure"))
        .when(pl.col("context_limit").is_null()).then(pl.lit("limit unknown"))
        .when(pl.col("occupancy_counterfactual") <= pl.col("context_limit"))
        .then(pl.lit("prevented"))
        .otherwise(pl.lit("still over")).alias("failure"),
        pl.when(pl.col("kind") == "summarizer").then(0).otherwise(pl.col("occupancy"))
        .alias("window"),
    )  # fmt: skip
    frame = frame.with_columns(
        (pl.col("window") - pl.when(pl.col("kind") == "summarizer").then(0)
         .otherwise(pl.col("saved_tokens"))).clip(lower_bound=0).alias("window_counterfactual"),
    )  # fmt: skip
    frame = _priced(frame).sort([*_KEY, "call_index"])
    turn = [*_KEY, "invocation_id"]
    frame = frame.with_columns(
        pl.when(pl.col("kind") != "summarizer")
        .then(pl.col("window").cum_sum().over(turn, order_by="call_index"))
        .alias("cumulative_input"),
        pl.when(pl.col("kind") != "summarizer")
        .then(pl.col("window_counterfactual").cum_sum().over(turn, order_by="call_index"))
        .alias("cumulative_input_counterfactual"),
        pl.lit(guard.describe()).alias("guard"),
    )  # fmt: skip
    return Replay(guard, found, frame, searched)


def _priced(frame: pl.DataFrame) -> pl.DataFrame:
    """Each call's cost under the guard: its cost less the saving; a prevented failure's
    request billed its counterfactual input at the session's previous priced call's
    blended price (its output is unknown, so not counted)."""
    frame = frame.sort([*_KEY, "call_index"]).with_columns(
        pl.col("avg_low").forward_fill().shift(1).over(_KEY).alias("previous_low"),
        pl.col("avg_high").forward_fill().shift(1).over(_KEY).alias("previous_high"),
    )
    prevented = pl.col("failure") == "prevented"
    out = []
    for bound in ("low", "high"):
        billed = (
            pl.when(prevented & pl.col(f"previous_{bound}").is_not_null())
            .then((pl.col("occupancy_counterfactual") * pl.col(f"previous_{bound}")).round(12))
            .when(prevented).then(None)
            .otherwise(0.0)
        )  # fmt: skip
        out.append(  # (and a rewrite in the transcript re-sends what was read)
            (pl.col(f"cost_usd_{bound}") - pl.col(f"saving_usd_{bound}")
             + billed.cast(pl.Decimal(38, 18)) + pl.col(f"invalidation_usd_{bound}"))
            .alias(f"counterfactual_usd_{bound}")
        )  # fmt: skip
    frame = frame.with_columns(out)
    return frame.with_columns(  # what the guard's world saves on each call, that call billed
        (pl.col(f"cost_usd_{b}") - pl.col(f"counterfactual_usd_{b}")).alias(f"saving_usd_{b}")
        for b in ("low", "high")
    )
