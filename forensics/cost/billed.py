"""Billed cost: each model call's measured usage priced at its UTC day's rates.

Per call (queries/cost/calls.sql): usage read by its provider's convention (`gemini`,
`claude`, `other`; docs/cost.md), the tier its input reaches, and two bounds: with no
cache writes, and with every uncached input token written at the write rate (ADK does
not store writes). Groupings, the bill's split and what tool results cost are sums of
those rows, in exact Decimals.
"""

from __future__ import annotations

from decimal import Decimal

import polars as pl
import pyarrow as pa

from ..analysis.stored import Facts
from ..columns import (
    COST_CALLS,
    COST_KEYS,
    COST_SHARE,
    COST_TOOL_CALLS,
    COST_TOOLS,
    PRICES,
    USD,
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


def _rate_tables(facts: Facts, book: PriceBook) -> dict[str, pa.Table]:
    keys = facts.query("cost/keys")
    rates: list[dict[str, object]] = []
    unknown: list[dict[str, object]] = []
    models: dict[str, str] = {}
    for model, day in keys.iter_rows():
        price = book.price(model, day)
        if isinstance(price, Unknown):
            unknown.append({"model": model, "day": day, "reason": price.reason})
            models.setdefault(model, convention(model))
            continue
        models[model] = convention(price.price_model)
        for tier in price.tiers:
            rates.append(
                {
                    "model": model,
                    "day": day,
                    "above": tier.above,
                    "input": per_token(tier.input, price.source),
                    "cache_read": per_token(tier.cache_read, price.source),
                    "cache_write": per_token(tier.cache_write, price.source),
                    "output": per_token(tier.output, price.source),
                    "source": price.source,
                    "provider": price.provider,
                    "price_model": price.price_model,
                }
            )
    return {
        "cost_rates": pa.Table.from_pylist(rates, schema=_RATES),
        "cost_unknown": pa.Table.from_pylist(unknown, schema=_UNKNOWN),
        "cost_models": pa.Table.from_pylist(
            [{"model": m, "convention": c} for m, c in models.items()], schema=_MODELS
        ),
    }


def call_costs(facts: Facts, book: PriceBook) -> pl.DataFrame:
    """Every model call of the selection, priced (COST_CALLS)."""
    return COST_CALLS.from_query(facts.query("cost/calls", _rate_tables(facts, book)))


def _zero() -> pl.Expr:
    return pl.lit(Decimal(0)).cast(USD)


def _joined(values: pl.Expr) -> pl.Expr:
    return values.drop_nulls().unique().sort().str.join("; ")


def grouped(calls: pl.DataFrame, by: str) -> pl.DataFrame:
    """The calls' cost summed by `by` (columns.cost_spec)."""
    spec = cost_spec(by)
    keys = [c.name for c in COST_KEYS[by]]
    source = pl.col("cost_source")
    known = source.is_in(["priced", "range", "inferred", "estimated"]).any() | ~(
        source == "unknown"
    ).any()
    frame = (
        calls.group_by(keys, maintain_order=True)
        .agg(
            pl.len().alias("calls"),
            pl.col("input_tokens").sum(),
            pl.col("cache_read_tokens").sum(),
            pl.col("output_tokens").sum(),
            # calls of unknown price and none priced: no amount (never 0)
            pl.when(known).then(pl.col("cost_usd_low").sum()),
            pl.when(known).then(pl.col("cost_usd_high").sum()),
            pl.when(source.n_unique() == 1).then(source.first()).otherwise(pl.lit("mixed"))
            .alias("cost_source"),
            (source == "priced").sum().alias("priced_calls"),
            (source == "range").sum().alias("range_calls"),
            (source == "inferred").sum().alias("inferred_calls"),
            (source == "estimated").sum().alias("estimated_calls"),
            (source == "failed").sum().alias("failed_calls"),
            (source == "unknown").sum().alias("unknown_calls"),
            _joined(pl.col("price_source")).alias("price_source"),
        )
        .sort(keys, nulls_last=True)
    )
    return spec.from_query(frame)


def _money(value: object) -> Decimal | None:
    """A polars Decimal sum (None for no rows) as a Decimal."""
    if value is None:
        return None
    assert isinstance(value, Decimal)
    return value


def _percent(part: Decimal | None, total: Decimal | None) -> float | None:
    if part is None or not total:
        return None
    return float(round(part * 100 / total, 2))


def share(calls: pl.DataFrame, tools: pl.DataFrame) -> pl.DataFrame:
    """The bill split: cache reads, cache writes, uncached input, output, and the tool
    output slice (result tokens at their first send), under each bound (COST_SHARE)."""
    priced = calls.filter(pl.col("cost_source") != "unknown")
    # which bound assumes every uncached input token was written: the high one, unless the
    # write rate is below the input rate; where the two rates are equal (a list without a
    # write surcharge, such as Gemini's) writes are no component of their own
    surcharge = pl.col("cache_write_usd_per_mtok") != pl.col("input_usd_per_mtok")
    low_writes = surcharge & (pl.col("written_input_usd") < pl.col("uncached_input_usd"))
    high_writes = surcharge & ~low_writes
    written, uncached = pl.col("written_input_usd"), pl.col("uncached_input_usd")
    amounts = priced.select(
        pl.col("cache_read_usd").sum().alias("reads"),
        pl.when(low_writes).then(written).otherwise(_zero()).sum().alias("writes_low"),
        pl.when(high_writes).then(written).otherwise(_zero()).sum().alias("writes_high"),
        pl.when(low_writes).then(_zero()).otherwise(uncached).sum().alias("uncached_low"),
        pl.when(high_writes).then(_zero()).otherwise(uncached).sum().alias("uncached_high"),
        pl.col("output_usd").sum().alias("output_low"),
        (pl.col("output_usd") + pl.col("output_unsure_usd")).sum().alias("output_high"),
        pl.col("cost_usd_low").sum().alias("total_low"),
        pl.col("cost_usd_high").sum().alias("total_high"),
    ).row(0, named=True)
    sums: dict[str, Decimal | None] = dict(amounts)
    tool_low = _money(tools["first_send_usd_low"].sum()) if tools.height else Decimal(0)
    tool_high = _money(tools["first_send_usd_high"].sum()) if tools.height else Decimal(0)
    kinds = set(priced["cost_source"].unique().to_list())
    unknown = calls.height - priced.height
    if not kinds - {"failed"} and unknown:  # nothing priced: no amounts (never 0)
        sums = dict.fromkeys(sums)
        tool_low = tool_high = None
    whole = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else None)
    sources = "; ".join(sorted(set(priced["price_source"].drop_nulls().to_list()))) or None
    rows = []
    for component, low, high, source in (
        ("cache reads", sums["reads"], sums["reads"], whole),
        ("cache writes", sums["writes_low"], sums["writes_high"], whole),
        ("uncached input", sums["uncached_low"], sums["uncached_high"], whole),
        ("output", sums["output_low"], sums["output_high"], whole),
        ("total", sums["total_low"], sums["total_high"], whole),
        ("tool output, first sends (part of input)", tool_low, tool_high, "estimated"),
        *([(f"calls of unknown price, not in the total: {unknown}", None, None, "unknown")]
          if unknown else []),  # fmt: skip
    ):
        rows.append(
            {
                "component": component,
                "usd_low": low,
                "share_low": _percent(low, sums["total_low"]),
                "usd_high": high,
                "share_high": _percent(high, sums["total_high"]),
                "cost_source": source,
                "price_source": sources if source != "unknown" else None,
            }
        )
    return COST_SHARE.frame(rows)


def tool_call_costs(facts: Facts, calls: pl.DataFrame) -> pl.DataFrame:
    """What each tool call's result cost: its first send and every later call that
    carried it (in all, and in the turn that asked), at the rates those calls paid."""
    priced = calls.select(
        "app_name",
        "user_id",
        "session_id",
        "call_id",
        "call_index",
        "invocation_id",
        "cost_source",
        "price_source",
        "input_tokens",
        "input_usd_per_mtok",
        "cache_write_usd_per_mtok",
        "cache_read_usd",
        "uncached_input_usd",
        "written_input_usd",
    ).to_arrow()
    return COST_TOOL_CALLS.from_query(facts.query("cost/tool_calls", {"cost_calls": priced}))


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
