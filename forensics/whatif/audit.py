"""`forensics guards`: per tool, where a guard is missing or off. Which results exceed a
budget and by how much, which of them a row guard lets through, the dict payloads a row
guard reads as empty, the rows over budget on their own, tokens per row, and for flat
rows the size of a markdown table against JSON (the founding document measured about
2.5x fewer tokens per row on one tool), and which tools' results carry anchors (strings
later calls reproduced from them, which a cap must not cut): all on the guard's own
estimate, each figure as the replay (replay.py `results`) gives it, from
queries/whatif/guard_sizes.sql: the audit needs no rows kept, so the rows' sizes are
reduced inside DuckDB."""

from __future__ import annotations

import math

import polars as pl

from ..analysis.stored import Facts
from ..columns import GUARDS
from . import kept
from .guard import Guard

ROW_CAP = 200  # the founding row guard


def guards(facts: Facts, budget: int, row_cap: int = ROW_CAP,
           chars_per_token: float = 3.0) -> pl.DataFrame:  # fmt: skip
    """GUARDS: one row per (app, tool) of the selection, the most over-budget first."""
    Guard(row_cap=row_cap, token_cap=budget, chars_per_token=chars_per_token)  # checks them
    found = None
    if chars_per_token == kept.CHARS_PER_TOKEN and kept.current(facts.store):
        found = facts.query("whatif/guard_sizes_kept", budget=budget)
        if found["rows_over_budget"].null_count():  # a row over the budget: count them
            found = None
    if found is None:
        found = facts.query("whatif/guard_sizes", budget=budget,
                            chars_per_token=float(chars_per_token))  # fmt: skip
    anchored = {(r[0], r[1]): (r[2], r[3]) for r in facts.query("whatif/guard_anchors").iter_rows()}
    rows = []
    for (app, tool), group in found.group_by(["app_name", "tool_name"], maintain_order=True):
        sized = group.filter(pl.col("payload") != "unsized")
        tokens = sized["guard_tokens"]
        over = sized.filter(pl.col("guard_tokens") > budget)
        dicts = sized.filter(pl.col("payload") == "dict")
        listed = sized.filter(pl.col("payload") != "dict")
        # (a list without rows has none to write either way: its row sizes are null)
        flat = listed.filter(pl.col("markdown_chars").is_not_null()
                             & pl.col("rows_dumps_chars").is_not_null())  # fmt: skip
        n_rows = int(listed["rows"].sum() or 0)
        flat_rows = int(flat["rows"].sum() or 0)
        json_tokens = sum(math.ceil(c / chars_per_token) for c in flat["rows_dumps_chars"])
        markdown_tokens = sum(math.ceil(c / chars_per_token) for c in flat["markdown_chars"])
        shapes = sized["payload"].value_counts(sort=True, name="n")
        rows.append(
            {
                "app_name": app,
                "tool_name": tool,
                "results": group.height,
                "payloads": "; ".join(f"{p}: {n}" for p, n in shapes.sort(
                    ["n", "payload"], descending=[True, False]).iter_rows()) or None,
                "over_budget": over.height,
                "max_tokens": tokens.max(),
                "p95_tokens": None if tokens.is_empty()
                else int(tokens.quantile(0.95, "nearest")),  # type: ignore[arg-type]
                "row_guard_silent": over.filter(pl.col("rows").fill_null(0) <= row_cap).height,
                "dict_payloads": dicts.height,
                "dict_over_budget": dicts.filter(pl.col("guard_tokens") > budget).height,
                "rows_over_budget": int(listed["rows_over_budget"].sum() or 0),
                "tokens_per_row": round(int(listed["row_guard_tokens"].sum()) / n_rows)
                if n_rows else None,
                "max_row_tokens": listed["largest_row_guard_tokens"].max(),
                "flat_results": flat.height,
                "json_tokens_per_row": round(json_tokens / flat_rows) if flat_rows else None,
                "markdown_tokens_per_row": round(markdown_tokens / flat_rows)
                if flat_rows else None,
                "markdown_ratio": round(json_tokens / markdown_tokens, 2)
                if markdown_tokens else None,
                "unsized": group.height - sized.height,
                "anchored_results": anchored.get((app, tool), (None, None))[0],
                "anchors": anchored.get((app, tool), (None, None))[1],
            }
        )
    frame = GUARDS.frame(rows)
    return frame.sort(["over_budget", "max_tokens", "app_name", "tool_name"],
                      descending=[True, True, False, False], nulls_last=True)  # fmt: skip
