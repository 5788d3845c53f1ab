"""Billed cost: each model call's measured usage priced at its UTC day's rates.

Per call (queries/cost/calls.sql, a view the other cost queries read inside DuckDB):
usage read by its provider's convention (`gemini`, `claude`, `other`; docs/cost.md),
the tier its input reaches, and a low and a high bound built part by part (ADK stores
no cache writes, nor which Claude path counted the thinking). Groupings, the bill's
split and what tool results cost are sums of those rows, in exact Decimals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cached_property
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from .. import sql
from ..analysis.stored import Facts
from ..columns import (
    CACHE_CALLS,
    COST_CALLS,
    COST_SHARE,
    COST_TOOL_CALLS,
    COST_TOOLS,
    PRICES,
    cache_spec,
    cost_spec,
)
from ..errors import ForensicsError
from ..selection import Selection
from ..store import Store
from ..store.arrow import rows_table
from . import stored
from .prices import PriceBook, Unknown, route

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
        ("cache_write_1h", _PER_TOKEN),
        ("output", _PER_TOKEN),
        ("request", _PER_TOKEN),  # USD per request: a fee per call
        ("source", pa.string()),
        ("provider", pa.string()),
        ("price_model", pa.string()),
    ]
)
_UNKNOWN = pa.schema([("model", pa.string()), ("day", pa.date32()), ("reason", pa.string())])
_MODELS = pa.schema([("model", pa.string()), ("convention", pa.string())])
_WINDOW = pa.schema([("since", pa.float64()), ("until", pa.float64())])
# the queries the others read, as views, in the order they build on each other: the
# calls priced here, or read from those the store keeps priced (cost/stored.py)
_READERS = {"cost_call_prices": "cost/call_prices", "cost_first_sends": "cost/first_sends"}
_VIEWS = {**stored.VIEWS, **_READERS}
_STORED_VIEWS = {"cost_calls": "cost/stored_calls", **_READERS}
# at all times (no time range), the first sends are kept too
_STORED_ALL_VIEWS = {**_STORED_VIEWS, "cost_first_sends": "cost/stored_first_sends"}
_SCANS = {"cost/stored_calls", "cost/stored_first_sends", "cost/stored_cache_calls"}


def convention(recorded: str, priced: str | None = None) -> str:
    """How a call's usage is read: `claude` for Claude on any path; `gemini` for ADK's
    own Gemini client; `other` for the rest, Gemini through LiteLLM included (a
    `gemini/...`-style name: LiteLLM's completion count already holds the thinking).
    `priced` is the model the price list prices (an alias names another)."""
    low = recorded.strip().lower()
    through_litellm = "/" in low and not ("/models/" in low or low.startswith("models/"))
    name = route(recorded if through_litellm or priced is None else priced)[1].lower()
    if "claude" in name:
        return "claude"
    if "gemini" in name and not through_litellm:
        return "gemini"
    return "other"


def per_token(rate: Decimal, where: str, per: Decimal = PER_TOKEN) -> Decimal:
    """A USD-per-MTok rate as USD per token (per=1000: a fee per 1,000 requests as USD per
    request), exactly, or an error naming the rate."""
    value = rate / per
    try:
        exact = value.quantize(_SCALE)
    except ArithmeticError:
        exact = None
    if exact != value:
        raise ForensicsError(f"{where}: the rate {rate} is not a price to 12 decimal places")
    return exact


@dataclass(frozen=True)
class CacheRules:
    """When a call's cache reads count as a prefix break: at least `min_tokens`, and
    `min_share` of the prefix the thread's previous call left cached, fewer than that
    prefix (1,024 tokens is the shortest prompt Anthropic's models cache)."""

    min_tokens: int = 1024
    min_share: float = 0.1


CACHE_RUN_EVENTS = 50_000  # the sessions whose cache rows are read at once (cache_in_runs)
_CACHE_RULES = pa.schema([("min_tokens", pa.int64()), ("min_share", pa.float64())])


def _cache_rules(rules: CacheRules) -> pa.Table:
    return rows_table([{"min_tokens": rules.min_tokens, "min_share": rules.min_share}],
                      _CACHE_RULES)  # fmt: skip


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
    def stored(self) -> bool:
        """Whether the calls are read from those the store keeps priced by this book
        (cost/stored.py: the same rows), not priced here."""
        return self.facts.ratios_kept and stored.current(self.facts.store, self.book)

    @cached_property
    def views(self) -> dict[str, str]:
        if not self.stored:
            return _VIEWS
        return _STORED_ALL_VIEWS if self.window == (None, None) else _STORED_VIEWS

    @cached_property
    def tables(self) -> dict[str, pa.Table]:
        """The selection's time and, when the calls are priced here, the rates of every
        (model, day) they need, and the unknown ones."""
        since, until = self.window
        window = {"cost_window": rows_table([{"since": since, "until": until}], _WINDOW)}
        return window if self.stored else {**self.rates(), **window}

    def rates(self) -> dict[str, pa.Table]:
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
            models[model] = convention(model, price.price_model)
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
                        "cache_write_1h": per_token(tier.cache_write_1h, price.source),
                        "output": per_token(tier.output, price.source),
                        "request": per_token(tier.requests_k, price.source, Decimal(1000)),
                        "source": price.source,
                        "provider": price.provider,
                        "price_model": price.price_model,
                    }
                )
        return {
            "cost_rates": rows_table(rates, _RATES),
            "cost_unknown": rows_table(unknown, _UNKNOWN),
            "cost_models": rows_table(
                [{"model": m, "convention": c} for m, c in models.items()], _MODELS
            ),
        }

    @property
    def scans(self) -> frozenset[str]:
        """The views that read a stored table (a second read is cheaper than a copy)."""
        return frozenset(v for v, source in self.views.items() if source in _SCANS)

    def _query(self, name: str, **params: object) -> pl.DataFrame:
        return self.facts.query(name, self.tables, self.views, scans=self.scans, **params)

    def query(self, name: str, tables: dict[str, pa.Table] | None = None,
              **params: object) -> pl.DataFrame:  # fmt: skip
        """queries/`name`.sql with the priced calls' views (`cost_calls`,
        `cost_call_prices`, ...) and `tables` beside the facts: for the layers above."""
        return self.facts.query(name, {**self.tables, **(tables or {})}, self.views,
                                scans=self.scans, **params)  # fmt: skip

    def calls(self) -> pl.DataFrame:
        """Every model call of the selection, priced (COST_CALLS)."""
        return COST_CALLS.from_query(self._query(self.views["cost_calls"]))

    def grouped(self, by: str) -> pl.DataFrame:
        """The calls' cost summed by `by` (columns.cost_spec)."""
        return cost_spec(by).from_query(self._query("cost/grouped", by=by))

    def tool_calls(self) -> pl.DataFrame:
        """What each tool call's result cost: its first send and every later call that
        carried it (in all, and in the turn that asked), at the rates those calls paid."""
        kept = self.stored and self.window == (None, None)  # (a time range changes sends)
        return COST_TOOL_CALLS.from_query(
            self._query("cost/stored_tool_calls" if kept else "cost/tool_calls")
        )

    def tools(self) -> pl.DataFrame:
        """Per tool: its calls' results and what sending them cost (COST_TOOLS), summed
        inside DuckDB (tool_costs() of tool_calls() held every tool call: 320 MB more at
        1,000,000 events). With a time range each tool call is priced here over the
        calls in it, a run of sessions at a time (TOOL_RUN_EVENTS), the runs' sums
        summed (all at once that was 207 MB of the weekly review's 505 MB)."""
        kept = self.stored and self.window == (None, None)
        rows = {"cost_tool_call_rows": "cost/stored_tool_calls" if kept else "cost/tool_calls"}
        views = {**self.views, **rows}
        if kept:
            frame = self.facts.query("cost/tool_costs", self.tables, views, scans=self.scans)
            return COST_TOOLS.from_query(frame)
        # DuckDB's buffers capped: the scans of every carried result (5 million rows at
        # 1,000,000 events) leave fewer of their blocks cached (the weekly review's tool
        # costs: 457 MB resident uncapped, 293 MB at 128 MB, 0.1 s slower)
        parts = self.facts.store.capped(TOOL_MEMORY_LIMIT, lambda: [
            self.facts.query("cost/tool_costs", self.tables, views, sessions=run,
                             scans=self.scans)  # fmt: skip
            for run in self.facts.session_runs(TOOL_RUN_EVENTS)
        ])  # fmt: skip
        if len(parts) == 1:
            return COST_TOOLS.from_query(parts[0])
        if not parts:  # nothing selected: the query's empty frame, its columns typed
            parts = [self.facts.query("cost/tool_costs", self.tables, views, scans=self.scans)]
        return COST_TOOLS.from_query(_tool_sums(pl.concat(parts, how="vertical_relaxed")))

    def cache(self, by: str, rules: CacheRules | None = None) -> pl.DataFrame:
        """The prompt cache per call (`by` call) or summed by turn, session, agent or day:
        the prompt split, the hit rate, what the reads saved, the writes never read, and
        the prefix breaks (queries/cost/cache_calls.sql; CACHE_CALLS, columns.cache_spec).
        A thread's calls are all of its session's, whatever the time asked: the call
        before a range is still the previous one of the first call in it. Read from the
        store's kept rows where its calls are kept priced by this book and the rules are
        the default."""
        if by == "call":
            return CACHE_CALLS.from_query(self.cache_query(None, rules))
        return cache_spec(by).from_query(self.cache_query("cost/cache_grouped", rules, by=by))

    def cache_in_runs(self, rules: CacheRules | None = None) -> Iterator[pl.DataFrame]:
        """`cache("call")` a run of sessions at a time (CACHE_RUN_EVENTS events or so):
        the same rows in the same order (a call's row depends on its session alone), never
        all held at once. At least one frame."""
        found = False
        for part in self.facts.session_runs(CACHE_RUN_EVENTS):
            found = True
            yield CACHE_CALLS.from_query(self.cache_query(None, rules, sessions=part))
        if not found:
            yield self.cache("call", rules)

    @cached_property
    def _at_all_times(self) -> Costing:
        """The same calls priced at all times: a thread's previous call may be before the
        time asked (once per costing: its rates and whether its rows are kept)."""
        if self.window == (None, None):
            return self
        return Costing(self.facts, self.book, (None, None))

    def cache_query(self, name: str | None, rules: CacheRules | None = None,
                    sessions: pa.Table | None = None,
                    **params: object) -> pl.DataFrame:  # fmt: skip
        """queries/`name`.sql over the calls' cache rows (`cost_cache_calls`); None: the
        rows themselves."""
        chosen = rules or CacheRules()
        whole = self._at_all_times
        since, until = self.window
        tables = {
            **whole.tables,
            "cache_rules": _cache_rules(chosen),
            "cache_window": rows_table([{"since": since, "until": until}], _WINDOW),
        }
        kept = whole.stored and chosen == CacheRules()
        reader = "cost/stored_cache_calls" if kept else "cost/cache_calls"
        if name is None:
            return whole.facts.query(reader, tables, whole.views, sessions=sessions,
                                     scans=whole.scans)  # fmt: skip
        views = {**whole.views, "cost_cache_calls": reader}
        scans = whole.scans | ({reader} if kept else frozenset())
        return whole.facts.query(name, tables, views, sessions=sessions, scans=scans, **params)

    def share(self) -> pl.DataFrame:
        """The bill split: cache reads, cache writes, uncached input, output, and the tool
        output slice (result tokens at their first send), under each bound (COST_SHARE)."""
        return share(self._query("cost/share").row(0, named=True))


# What DuckDB may hold while every call is priced (it spills the rest to disk). Uncapped,
# pricing 493,692 calls peaked at 1.46-1.51 GB in 4.3-4.7 s; at 768 MB, 0.99 GB in
# 5.3-5.5 s; at 512 MB, 0.73 GB but in 9.3-9.9 s. At 640 MB (2026-12-06, another host):
# a refresh of all 1,000,000 events peaked at 896 MB against 1,017-1,019 MB at 768 MB,
# its pricing 6.0 s against 4.5-4.6 s, and the ingest of them at 1,102 MB against
# 1,198-1,216 MB in the same time (152-156 s).
PRICING_MEMORY_LIMIT = "640MB"


def price_store(store: Store, book: PriceBook) -> bool:
    """Price every call of the store with `book` and keep them (cost/stored.py), where
    the facts are brought up to date; False when the store keeps no current ratio fit
    to size the calls without usage with (the calls are then priced per query)."""
    facts = Facts(store, Selection())
    if not facts.ratios_kept:
        return False
    costing = Costing(facts, book, (None, None))
    tables = {**costing.rates(), "cost_window": costing.tables["cost_window"]}
    tool_calls = sql.load("cost/tool_calls").sql.strip().rstrip(";")
    cache_calls = sql.load("cost/cache_calls").sql.strip().rstrip(";")
    stored.unmark(store)  # until both are written: a stop between leaves them unused

    def write() -> None:
        facts.execute(f"CREATE OR REPLACE TABLE {stored.TABLE} AS FROM cost_calls",  # noqa: S608
                      tables, stored.VIEWS)  # fmt: skip
        # each tool result's first send, and what it cost in all, from the calls just kept
        facts.execute(f"CREATE OR REPLACE TABLE {stored.FIRST_SENDS} AS FROM cost_first_sends",  # noqa: S608
                      tables, _STORED_VIEWS)  # fmt: skip
        facts.execute(f"CREATE OR REPLACE TABLE {stored.TOOL_TABLE} AS {tool_calls}",
                      tables, _STORED_ALL_VIEWS)  # fmt: skip
        # and each call's prompt cache, with the default break rules, at all times
        facts.execute(
            f"CREATE OR REPLACE TABLE {stored.CACHE_TABLE} AS {cache_calls}",
            {**tables, "cache_rules": _cache_rules(CacheRules()),
             "cache_window": costing.tables["cost_window"]},
            _STORED_ALL_VIEWS,
        )  # fmt: skip

    try:
        with store.memory_limit(PRICING_MEMORY_LIMIT):
            write()
    except duckdb.OutOfMemoryException:
        write()  # what DuckDB cannot spill gets the memory it needs, as before the cap
    stored.mark(store, book)
    return True


TOOL_RUN_EVENTS = 100_000  # sessions whose tool calls are priced at once, in a time range
TOOL_MEMORY_LIMIT = "128MB"  # DuckDB's buffers while it does (doubled when met)
_TOOL_MONEY = ("first_send_usd_low", "first_send_usd_high", "resend_usd_low", "resend_usd_high",
               "cost_usd_low", "cost_usd_high")  # fmt: skip


def _sql_sum(column: str) -> pl.Expr:
    """SQL's sum: of the values known, null when none is (polars' is 0)."""
    expr = pl.col(column)
    return pl.when(expr.is_not_null().any()).then(expr.sum())


def _tool_sums(parts: pl.DataFrame) -> pl.DataFrame:
    """queries/cost/tool_costs.sql's rows of several runs of sessions as the one query over
    them all gives them: counts summed, a money sum unknown when one run's is, each price
    source named once, the costliest (high bound) first."""
    sources = (
        pl.col("price_source").filter(pl.col("price_source") != "").str.split("; ")
        .explode().unique().sort().str.join("; ")
    )  # fmt: skip
    return (
        parts.group_by("app_name", "tool_name")
        .agg(
            *(_sql_sum(c).alias(c) for c in ("results", "result_tokens_estimated", "sends",
                                              "unpriced_sends")),  # fmt: skip
            *(known_sum(c).alias(c) for c in _TOOL_MONEY),
            sources.alias("price_source"),
        )
        .with_columns(pl.col("price_source").fill_null(""))
        .sort(["cost_usd_high", "app_name", "tool_name"], descending=[True, False, False],
              nulls_last=True)  # fmt: skip
    )


def known_sum(column: str) -> pl.Expr:
    """A sum that is unknown (null) when any of its values is: never a part as the whole."""
    expr = pl.col(column)
    return pl.when(expr.is_not_null().all()).then(expr.sum())


def _percent(part: Decimal | None, total: Decimal | None) -> float | None:
    if part is None or not total:
        return None
    return float(round(part * 100 / total, 2))


def share(sums: dict[str, Any]) -> pl.DataFrame:
    """The rows of `cost --share` from queries/cost/share.sql's one row of sums: each
    bound's components add up to its total."""
    unknown = sums["unknown_calls"]
    amounts: dict[str, Any] = dict(sums)
    whole, sources = sums["cost_source"], sums["price_source"]
    if not sums["billed_calls"] and unknown:  # nothing priced: no amounts (never 0)
        amounts = dict.fromkeys(sums)
        whole = "unknown"
    rows = []
    for component, key, source in (
        ("cache reads", "reads", whole),
        ("cache writes", "writes", whole),
        ("uncached input", "uncached", whole),
        ("output", "output", whole),
        ("request fees", "requests", whole),
        ("total", "total", whole),
        ("tool output, first sends (part of input)", "tool", "estimated"),
    ):
        low, high = amounts[f"{key}_low"], amounts[f"{key}_high"]
        rows.append(
            {
                "component": component,
                "usd_low": low,
                "share_low": _percent(low, amounts["total_low"]),
                "usd_high": high,
                "share_high": _percent(high, amounts["total_high"]),
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


def price_list(book: PriceBook, days: dict[str, date]) -> pl.DataFrame:
    """Which price applies to each model on its day, tier by tier (PRICES)."""
    rows: list[dict[str, object]] = []
    for model, day in days.items():
        found = book.price(model, day)
        if isinstance(found, Unknown):
            rows.append({c: None for c in PRICES.names} | {
                "model": model, "day": day, "note": f"unknown: {found.reason}"})  # fmt: skip
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
                    "requests_usd_per_k": tier.requests_k,
                    "since": found.since,
                    "price_source": found.source,
                    "note": found.note or None,
                }
            )
    return PRICES.frame(rows)
