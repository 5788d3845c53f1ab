"""Tasks and arms: what a successful task cost, how long its trajectories were, and
whether one arm beat another (the founding cost study's method), and the break-even
arithmetic of a tool-output saving against the extra turns it may cost.

Inputs are frames the api already builds: `executions` (one row per outcome with its
cost bounds, calls and turns) and the bill's split. Every figure here is arithmetic
on those, so a test can check it by hand.

- Cost per successful task: an arm's whole cost (failures included: they were billed)
  over its successful executions.
- Paired arms: for each task run under both arms, the relative cost difference
  (arm − baseline) / baseline of the task's mean cost per execution; their mean, with
  a percentile bootstrap interval (RESAMPLES resamples of the pairs, seeded with SEED,
  95%). Tasks run under one arm only are listed, never mixed in. Under MIN_PAIRS pairs
  the interval is said to be too wide to decide.
- Break-even: with s_cache the share of the bill that is cache traffic (reads and
  writes), s_tool the share that is tool output (its first sends: the slice `cost
  --share` shows; its re-sends are inside the cache traffic) and r the reduction of
  that slice, a saving of r·s_tool of the bill pays for one more model call (the
  study's "turn": one more pass over the prefix) costing s_cache/T of it when the
  trajectory has T >= s_cache / (r·s_tool) calls (the study's 80%, 3.3%, 38.4% give
  63.1). From the data: the saving in money over the period, and the calls it pays for
  at the measured cost of one more call. Every money figure is the low bound; an
  unpriced call makes the group's figures unknown, never 0.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from typing import Any

import numpy as np
import polars as pl

from ..columns import BREAKEVEN, TASK_ARMS, TASK_COMPARE, TASKS
from ..errors import ForensicsError

RESAMPLES = 10_000
SEED = 20261201
MIN_PAIRS = 10
CONFIDENCE = 0.95


def histogram(values: list[Any]) -> str:
    counted = Counter(v for v in values if v is not None)
    return json.dumps({str(k): counted[k] for k in sorted(counted)})


def _per_success(cost: Decimal | None, successes: int) -> Decimal | None:
    return cost / successes if cost is not None and successes else None


def _sum(values: pl.Series) -> Decimal | None:
    """A total, or None when any part is unknown (an unpriced call has no cost, not 0)."""
    found = values.to_list()
    if not found or any(v is None for v in found):
        return None
    return sum(found, Decimal(0))


def _row(keys: dict[str, Any], group: pl.DataFrame, tasks: int | None = None) -> dict[str, Any]:
    evaluated = group.filter(pl.col("success").is_not_null())
    successes = int(evaluated["success"].sum()) if evaluated.height else 0
    low, high = _sum(group["cost_usd_low"]), _sum(group["cost_usd_high"])
    row = {
        **keys,
        "executions": group.height,
        "successes": successes,
        "success_rate": round(successes / evaluated.height * 100, 2) if evaluated.height else None,
        "cost_usd_low": low,
        "cost_usd_high": high,
        "cost_per_success_usd_low": _per_success(low, successes),
        "cost_per_success_usd_high": _per_success(high, successes),
        "calls_mean": round(float(group["calls"].mean()), 2) if group.height else None,  # type: ignore[arg-type]
        "calls_histogram": histogram(group["calls"].to_list()),
        "turns_mean": round(float(group["turns"].mean()), 2) if group.height else None,  # type: ignore[arg-type]
        "turns_histogram": histogram(group["turns"].to_list()),
    }
    if tasks is not None:
        row = {**keys, "tasks": tasks, **{k: v for k, v in row.items() if k not in keys}}
    return row


def tasks(executions: pl.DataFrame) -> pl.DataFrame:
    """Per task and arm (TASKS)."""
    rows = [
        _row({"task_id": task, "arm": arm}, group)
        for (task, arm), group in sorted(
            executions.group_by(["task_id", "arm"]), key=lambda g: (g[0][0], g[0][1])
        )
    ]
    return TASKS.frame(rows)


def arms(executions: pl.DataFrame) -> pl.DataFrame:
    """Per arm (TASK_ARMS): its tasks, executions, success rate, cost per success."""
    rows = [
        _row({"arm": arm}, group, tasks=group["task_id"].n_unique())
        for (arm,), group in sorted(executions.group_by(["arm"]), key=lambda g: g[0][0])
    ]
    return TASK_ARMS.frame(rows)


def bootstrap_mean(values: list[float], resamples: int = RESAMPLES,
                   seed: int = SEED) -> tuple[float, float, float]:  # fmt: skip
    """(mean, low, high): the mean and its percentile bootstrap interval."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    chunk = max(1, 5_000_000 // max(1, len(data)))  # resamples at a time: ~40 MB of indices
    sizes = [min(chunk, resamples - done) for done in range(0, resamples, chunk)]
    means = np.concatenate(
        [data[rng.integers(0, len(data), size=(k, len(data)))].mean(axis=1) for k in sizes]
    )
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(data.mean()), float(low), float(high)


def compare(executions: pl.DataFrame, baseline: str, arm: str) -> pl.DataFrame:
    """The paired comparison of `arm` against `baseline` (TASK_COMPARE), one row per
    cost bound."""
    both = executions.filter(pl.col("arm").is_in([baseline, arm]))
    # a task's mean cost per execution; unknown when any of its executions is unpriced
    per_task = both.group_by(["task_id", "arm"]).agg(
        pl.when(pl.col("cost_usd_low").null_count() == 0)
        .then(pl.col("cost_usd_low").cast(pl.Float64).mean()).alias("low"),
        pl.when(pl.col("cost_usd_high").null_count() == 0)
        .then(pl.col("cost_usd_high").cast(pl.Float64).mean()).alias("high"),
    )
    by_arm = {a: per_task.filter(pl.col("arm") == a) for a in (baseline, arm)}
    tasks_of = {a: set(f["task_id"].to_list()) for a, f in by_arm.items()}
    paired = sorted(tasks_of[baseline] & tasks_of[arm])
    unpaired = sorted(tasks_of[baseline] ^ tasks_of[arm])
    # the arms' summaries are of the paired tasks only: the unpaired are not mixed in
    on_pairs = both.filter(pl.col("task_id").is_in(paired))
    summary = {a: _row({"arm": a}, on_pairs.filter(pl.col("arm") == a)) for a in (baseline, arm)}
    rows = []
    for bound in ("low", "high"):
        costs = {a: dict(by_arm[a].select("task_id", bound).iter_rows()) for a in by_arm}
        dropped = [
            t for t in paired
            if costs[baseline][t] is None or costs[arm][t] is None or not costs[baseline][t]
        ]  # fmt: skip
        diffs = [
            (costs[arm][t] - costs[baseline][t]) / costs[baseline][t] * 100
            for t in paired
            if t not in dropped
        ]
        mean = low = high = None
        if diffs:
            mean, low, high = bootstrap_mean(diffs)
        base_per, arm_per = (summary[a][f"cost_per_success_usd_{bound}"] for a in (baseline, arm))
        note = None
        if dropped:
            note = (
                f"{len(dropped)} paired task(s) not compared, their cost unknown or 0 under "
                f"the baseline: {', '.join(dropped[:5])}{' ...' if len(dropped) > 5 else ''}; "
            )
        if len(diffs) < MIN_PAIRS:
            note = (note or "") + (
                f"{len(diffs)} pair{'s' if len(diffs) != 1 else ''}, fewer than {MIN_PAIRS}: "
                "the interval is too wide to decide"
            )
        elif low is not None and high is not None and low <= 0 <= high:
            note = (note or "") + "the interval includes 0: no difference shown"
        rows.append(
            {
                "bound": bound,
                "baseline": baseline,
                "arm": arm,
                "pairs": len(diffs),
                "mean_cost_diff_pct": None if mean is None else round(mean, 2),
                "ci_low_pct": None if low is None else round(low, 2),
                "ci_high_pct": None if high is None else round(high, 2),
                "cost_per_success_ratio": float(arm_per / base_per)
                if arm_per is not None and base_per
                else None,
                "success_rate_baseline": summary[baseline]["success_rate"],
                "success_rate_arm": summary[arm]["success_rate"],
                "calls_baseline": summary[baseline]["calls_histogram"],
                "calls_arm": summary[arm]["calls_histogram"],
                "unpaired_tasks": json.dumps(unpaired),
                "method": f"percentile bootstrap, {RESAMPLES:,} resamples, seed {SEED}, "
                f"{CONFIDENCE:.0%}",
                "note": note,
            }
        )
    return TASK_COMPARE.frame(rows)


def breakeven_turns(cache_share: float, tool_share: float, reduction: float) -> float | None:
    """The trajectory length (in model calls: the study's turns) from which cutting the
    tool-output slice by `reduction` (a fraction) pays for one more call:
    s_cache / (r · s_tool), the shares in the same unit."""
    if not 0 < reduction <= 1:
        raise ValueError(f"the reduction is a fraction in (0, 1], not {reduction}")
    if tool_share <= 0:
        return None
    return cache_share / (reduction * tool_share)


MIN_REDUCTION = 1e-6


def breakeven(groups: list[dict[str, Any]], reduction: float) -> pl.DataFrame:
    """BREAKEVEN rows from each group's money: total, cache traffic, tool output, the
    mean cost of one more turn, and its sessions."""
    if not MIN_REDUCTION <= reduction <= 1:  # (a smaller one's saving has more decimal
        # places than a DECIMAL(38) holds: polars panicked building the frame)
        raise ForensicsError(
            f"--reduction {reduction:g} is not a cut between {MIN_REDUCTION:g} (a millionth) "
            "and 1 (all of it)",
            hint="e.g. --reduction 0.384",
        )
    rows = []
    for g in groups:
        total, cache_usd, tool_usd = g["total_usd"], g["cache_usd"], g["tool_usd"]
        known = None not in (total, cache_usd, tool_usd) and total
        cache = cache_usd / total * 100 if known else None
        tool = tool_usd / total * 100 if known else None
        calls = (
            breakeven_turns(float(cache), float(tool), reduction)
            if cache is not None and tool is not None
            else None
        )
        saving = tool_usd * Decimal(str(reduction)) if tool_usd is not None else None
        per_call = g["call_usd"]
        rows.append(
            {
                "agent": g["agent"],
                "sessions": g["sessions"],
                "unpriced_calls": g["unpriced_calls"],
                "cost_usd_low": total,
                "cache_share_pct": None if cache is None else round(float(cache), 2),
                "tool_output_share_pct": None if tool is None else round(float(tool), 2),
                "reduction_pct": round(reduction * 100, 2),
                "breakeven_calls": None if calls is None else round(calls, 1),
                "saving_usd_low": saving,
                "one_more_call_usd_low": per_call,
                "calls_paid_for": float(saving / per_call) if saving and per_call else None,
            }
        )
    return BREAKEVEN.frame(rows)
