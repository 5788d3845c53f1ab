"""Billed cost: each model call's measured usage priced at its UTC day's rates.

Per call (queries/cost/calls.sql): usage read by its provider's convention (`gemini`,
`claude`, `other`; docs/cost.md), the tier its input reaches, and two bounds: with no
cache writes, and with every uncached input token written at the write rate (ADK does
not store writes). Groupings, the bill's split and what tool results cost are sums of
those rows, in exact Decimals.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cached_property
from typing import Any

import polars as pl
import pyarrow as pa

from ..analysis.stored import Facts
from ..columns import (
    COST_CALLS,
    COST_SHARE,
    COST_TOOL_CALLS,
    COST_TOOLS,
    PRICES,
    cost_spec,
)
from ..errors import ForensicsError
from .prices import Price, PriceBook, Unknown, route

PER_TOKEN = Decimal(1_000_000)
_SCALE = Decimal(10) ** -18  # USD per token as the queries hold it: DECIMAL(38, 18)
_PER_TOKEN = pa.decimal128(38, 18)
_RATES = pa.schema(
    [
        ("model", pa.string()),
        ("day", pa.date32()),
        ("above", pa.int64()),
        ("next_above", pa.int64()),
        ("input", _PER_TOKEN),
        ("cache_read", _PER_TOKEN),
        ("cache_write", _PER_TOKEN),
        ("output", _PER_TOKEN),
        ("source", pa.string()),
        ("provider", pa.string()),
        ("price_model", pa.string()),
    ]
)
_UNKNOWN = pa.schema([("model", pa.string()), ("day", pa.date32()), ("reason", pa.string())])
_MODELS = pa.schema([("model", pa.string()), ("convention", pa.string())])
_WINDOW = pa.schema([("since", pa.float64()), ("until", pa.float64())])
# the queries the others read, as views, in the order they build on each other
_VIEWS = {
    "cost_calls": "cost/calls",
    "cost_call_prices": "cost/call_prices",
    "cost_first_sends": "cost/first_sends",
}


def convention(name: str) -> str:
    """How a model's usage is read: by the family its (priced) name belongs to."""
    low = route(name)[1].lower()
    if "gemini" in low:
        return "gemini"
    if "claude" in low:
        return "claude"
    return "other"


def per_token(rate: Decimal, where: str) -> Decimal:
    """A USD-per-MTok rate as USD per token, exactly (or an error naming the rate)."""
    value = rate / PER_TOKEN
    exact = value.quantize(_SCALE)
    if exact != value:
        raise ForensicsError(f"{where}: the rate {rate} has more than 12 decimal places")
    return exact


def _joined(values: pl.Expr) -> pl.Expr:
    return values.drop_nulls().unique().sort().str.join("; ")


class Costing:
    """The selection's calls priced by one price book: every query reads the per-call
    view (queries/cost/calls.sql) inside DuckDB; only its answers come out."""

    def __init__(
        self, facts: Facts, book: PriceBook, window: tuple[float | None, float | None]
    ):
        self.facts = facts
        self.book = book
        self.window = window  # [since, until) in epoch seconds: the calls in that time

    @cached_property
    def tables(self) -> dict[str, pa.Table]:
        """The rates of every (model, day) the calls need, and the unknown ones."""
        keys = self.facts.query("cost/keys")
        rates: list[dict[str, object]] = []
        unknown: list[dict[str, object]] = []
        models: dict[str, str] = {}
        for model, day in keys.iter_rows():
            price = self.book.price(model, day)
            if isinstance(price, Unknown):
                unknown.append({"model": model, "day": day, "reason": price.reason})
                models.setdefault(model, convention(model))
                continue
            models[model] = convention(price.price_model)
            following: list[int | None] = [t.above for t in price.tiers[1:]]
            for tier, next_above in zip(price.tiers, [*following, None], strict=True):
                rates.append(
                    {
                        "model": model,
                        "day": day,
                        "above": tier.above,
                        "next_above": next_above,
                        "input": per_token(tier.input, price.source),
                        "cache_read": per_token(tier.cache_read, price.source),
                        "cache_write": per_token(tier.cache_write, price.source),
                        "output": per_token(tier.output, price.source),
                        "source": price.source,
                        "provider": price.provider,
                        "price_model": price.price_model,
                    }
                )
        since, until = self.window
        return {
            "cost_rates": pa.Table.from_pylist(rates, schema=_RATES),
            "cost_unknown": pa.Table.from_pylist(unknown, schema=_UNKNOWN),
            "cost_models": pa.Table.from_pylist(
                [{"model": m, "convention": c} for m, c in models.items()], schema=_MODELS
            ),
            "cost_window": pa.Table.from_pylist(
                [{"since": since, "until": until}], schema=_WINDOW
            ),
        }

    def _query(self, name: str, **params: object) -> pl.DataFrame:
        return self.facts.query(name, self.tables, _VIEWS, **params)

    def calls(self) -> pl.DataFrame:
        """Every model call of the selection, priced (COST_CALLS)."""
        return COST_CALLS.from_query(self._query("cost/calls"))

    def grouped(self, by: str) -> pl.DataFrame:
        """The calls' cost summed by `by` (columns.cost_spec)."""
        return cost_spec(by).from_query(self._query("cost/grouped", by=by))

    def tool_calls(self) -> pl.DataFrame:
        """What each tool call's result cost: its first send and every later call that
        carried it (in all, and in the turn that asked), at the rates those calls paid."""
        return COST_TOOL_CALLS.from_query(self._query("cost/tool_calls"))

    def tools(self) -> pl.DataFrame:
        """Per tool: its calls' results and what sending them cost (COST_TOOLS)."""
        return tool_costs(self.tool_calls())

    def share(self) -> pl.DataFrame:
        """The bill split: cache reads, cache writes, uncached input, output, and the tool
        output slice (result tokens at their first send), under each bound (COST_SHARE)."""
        return share(self._query("cost/share").row(0, named=True))


def tool_costs(tool_calls: pl.DataFrame) -> pl.DataFrame:
    """Per tool: its calls' results and what sending them cost (COST_TOOLS)."""
    frame = (
        tool_calls.group_by("app_name", "tool_name")
        .agg(
            pl.len().alias("results"),
            pl.col("result_tokens_estimated").sum(),
            pl.col("sends").sum(),
            pl.col("first_send_usd_low").sum(),
            pl.col("first_send_usd_high").sum(),
            pl.col("resend_usd_low").sum(),
            pl.col("resend_usd_high").sum(),
            (pl.col("first_send_usd_low") + pl.col("resend_usd_low")).sum().alias("cost_usd_low"),
            (pl.col("first_send_usd_high") + pl.col("resend_usd_high"))
            .sum()
            .alias("cost_usd_high"),
            pl.col("unpriced_sends").sum(),
            _joined(pl.col("price_source").str.split("; ").explode()).alias("price_source"),
        )
        .sort(
            ["cost_usd_high", "app_name", "tool_name"],
            descending=[True, False, False],
            nulls_last=True,
        )
    )
    return COST_TOOLS.from_query(frame)


def _percent(part: Decimal | None, total: Decimal | None) -> float | None:
    if part is None or not total:
        return None
    return float(round(part * 100 / total, 2))


def share(sums: dict[str, Any]) -> pl.DataFrame:
    """The rows of `cost --share` from queries/cost/share.sql's one row of sums."""
    unknown = sums["unknown_calls"]
    amounts: dict[str, Any] = dict(sums)
    if not sums["billed_calls"] and unknown:  # nothing priced: no amounts (never 0)
        amounts = dict.fromkeys(sums)
    whole, sources = sums["cost_source"], sums["price_source"]
    rows = []
    for component, low, high, source in (
        ("cache reads", "reads", "reads", whole),
        ("cache writes", "writes_low", "writes_high", whole),
        ("uncached input", "uncached_low", "uncached_high", whole),
        ("output", "output_low", "output_high", whole),
        ("total", "total_low", "total_high", whole),
        ("tool output, first sends (part of input)", "tool_low", "tool_high", "estimated"),
    ):
        rows.append(
            {
                "component": component,
                "usd_low": amounts[low],
                "share_low": _percent(amounts[low], amounts["total_low"]),
                "usd_high": amounts[high],
                "share_high": _percent(amounts[high], amounts["total_high"]),
                "cost_source": source,
                "price_source": sources,
            }
        )
    if unknown:
        rows.append(
            {
                "component": f"calls of unknown price, not in the total: {unknown}",
                "usd_low": None,
                "share_low": None,
                "usd_high": None,
                "share_high": None,
                "cost_source": "unknown",
                "price_source": None,
            }
        )
    return COST_SHARE.frame(rows)


def price_list(book: PriceBook, models: list[str], day: object) -> pl.DataFrame:
    """Which price applies to each model on `day`, tier by tier (PRICES)."""
    rows = []
    for model in models:
        found: Price | Unknown = book.price(model, day)  # type: ignore[arg-type]
        if isinstance(found, Unknown):
            rows.append(
                {
                    "model": model,
                    "day": day,
                    "provider": None,
                    "price_model": None,
                    "tier_above": None,
                    "input_usd_per_mtok": None,
                    "cache_read_usd_per_mtok": None,
                    "cache_write_usd_per_mtok": None,
                    "cache_write_1h_usd_per_mtok": None,
                    "output_usd_per_mtok": None,
                    "since": None,
                    "price_source": None,
                    "note": f"unknown: {found.reason}",
                }
            )
            continue
        for tier in found.tiers:
            rows.append(
                {
                    "model": model,
                    "day": day,
                    "provider": found.provider,
                    "price_model": found.price_model,
                    "tier_above": tier.above,
                    "input_usd_per_mtok": tier.input,
                    "cache_read_usd_per_mtok": tier.cache_read,
                    "cache_write_usd_per_mtok": tier.cache_write,
                    "cache_write_1h_usd_per_mtok": tier.cache_write_1h,
                    "output_usd_per_mtok": tier.output,
                    "since": found.since,
                    "price_source": found.source,
                    "note": found.note or None,
                }
            )
    return PRICES.frame(rows)
