"""The weekly cost review: what the week cost and why, which agents, models, tools and
sessions drove it, whether context failures happened, and, where outcomes are loaded,
what a successful task cost.

A week is an ISO week (Monday to Monday) in a stated time zone; every figure comes from
the api frames of the calls started in it (`cost` and its groupings, `cost --share`,
`cost --by tool`, `growth`, `failures`, `tasks`), so the page says nothing the
commands would not. The context holds text and cells only; render.py draws the chart
and fills the template.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from .. import __version__, api
from ..errors import ForensicsError
from ..provenance import ESTIMATED, INFERRED, LOGGED, MEASURED, PRICED
from ..sanitize import shell_word
from ..words import counted, union_of
from .incident import Cell, n, portable, ranged, relative, usd, utc

DEFAULT_BUDGET = 16_000  # tokens a single tool result may hold before it is flagged
MEMORY_LIMIT = "128MB"  # DuckDB's buffers while the review is built (doubled when met)
TOP_SESSIONS = 10


@dataclass(frozen=True)
class Week:
    """[start, end) of an ISO week in a time zone, as UTC instants."""

    label: str  # 2026-W47
    tz: str
    start: datetime
    end: datetime

    @property
    def previous(self) -> Week:
        return week_of(self.start - timedelta(days=7), self.tz)

    def days(self) -> list[date]:
        local = self.start.astimezone(ZoneInfo(self.tz)).date()
        return [local + timedelta(days=i) for i in range(7)]


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ForensicsError(
            f"--tz {tz!r} is not a time zone", hint="an IANA name: UTC, Europe/Berlin"
        ) from None


def week(label: str, tz: str = "UTC") -> Week:
    """The ISO week `YYYY-Www` in `tz`."""
    zone = _zone(tz)
    try:
        year, number = label.upper().split("-W")
        monday = date.fromisocalendar(int(year), int(number), 1)
    except ValueError:
        raise ForensicsError(
            f"--week {label!r} is not an ISO week", hint="e.g. 2026-W47 (Monday to Sunday)"
        ) from None
    if not FIRST_YEAR - 1 <= int(year) <= LAST_YEAR:  # (9999-W52 ends in no date; 1969-W52:
        # the week before 1970-W01, which a review compares with)
        raise ForensicsError(
            f"--week {label!r} is outside the years the store holds, {FIRST_YEAR} to {LAST_YEAR}",
            hint="e.g. --week 2026-W47",
        )
    start = datetime(monday.year, monday.month, monday.day, tzinfo=zone)
    end = start + timedelta(days=7)  # a wall-clock week: DST changes keep Monday 00:00
    end = datetime(end.year, end.month, end.day, tzinfo=zone)
    found = Week(f"{year}-W{int(number):02d}", tz, start.astimezone(UTC), end.astimezone(UTC))
    _within_reach(found)
    return found


FIRST_YEAR, LAST_YEAR = 1970, 2999  # the times the store holds (stage_events.sql's)
LONGEST = timedelta(days=3653)  # a review covers at most ten years


def _within_reach(period: Week) -> None:
    """A review's period lies in the years the store holds, ten years at most (the week
    before it and the zone's offsets over it are computed: a year-1 week overflowed)."""
    if not (FIRST_YEAR - 1 <= period.start.year and period.end.year <= LAST_YEAR + 1):
        raise ForensicsError(
            f"the review's period ({period.start:%Y-%m-%d} to {period.end:%Y-%m-%d}) is outside "
            f"the years the store holds, {FIRST_YEAR} to {LAST_YEAR}",
            hint="e.g. --week 2026-W47, or --since and --until within those years",
        )
    if period.end - period.start > LONGEST:
        raise ForensicsError("a review covers at most ten years",
                             hint="give --since and --until closer together")  # fmt: skip


def week_of(moment: datetime, tz: str = "UTC") -> Week:
    year, number, _ = moment.astimezone(_zone(tz)).isocalendar()
    return week(f"{year}-W{number:02d}", tz)


@dataclass
class Table:
    """One table of the page: its column titles (numeric ones right-aligned), rows of
    cells, and a note under it."""

    columns: list[tuple[str, bool]]
    rows: list[list[Cell]]
    note: str | None = None


@dataclass
class DayChart:
    """Cost per day of the week, stacked by agent (low bound)."""

    days: list[str]
    series: dict[str, list[float]]  # agent -> USD per day
    svg: str = ""  # drawn by the renderer


@dataclass
class WeeklyContext:
    """Everything weekly.html.j2 shows; built by `build_weekly`."""

    title: str
    period: str
    tz: str
    headline: list[str]
    by_day: DayChart
    days: Table
    agents: Table
    models: Table
    tools: Table
    sessions: Table
    share: Table
    cache_days: Table
    cache_agents: Table
    cache_breaks: Table
    failures: Table
    growth: Table
    budget: Table
    tasks: Table | None
    tasks_help: str
    comparison: Table | None = None  # the paired arms, when --baseline and --arm are given
    evidence: dict[str, list[str]] = field(default_factory=dict)
    method: list[tuple[str, str]] = field(default_factory=list)


def _money(row: dict[str, Any], kind: str | None = PRICED) -> Cell:
    return Cell(usd(row.get("cost_usd_low"), row.get("cost_usd_high")), kind)


def _total(frame: pl.DataFrame, column: str) -> Decimal:
    """The priced part of a sum (the unpriced calls are counted and said beside it):
    polars' exact Decimal sum, Decimal(0) where no value is known."""
    values = frame[column]
    if values.null_count() == len(values):
        return Decimal(0)
    total = values.sum()
    assert isinstance(total, Decimal), f"{column} is a money column (Decimal)"
    return total


def _count(minutes: pl.DataFrame) -> int:
    """The calls of a frame of _minutes."""
    return int(minutes["calls"].sum())


def _unpriced(minutes: pl.DataFrame) -> int:
    """Calls with no price (a failed request has no cost either, but is not billed)."""
    return int(minutes["unpriced"].sum())


def _apps(frame: pl.DataFrame) -> bool:
    """Whether the frame's rows are of several apps: a name (main, Read) is then not enough."""
    return frame["app_name"].n_unique() > 1


def _named(row: dict[str, Any], key: str, apps: bool) -> str:
    name = row[key] or ("— (failed requests)" if row.get("cost_source") == "failed" else "—")
    return f"{name} ({row['app_name']})" if apps else str(name)


def _priced_note(frame: pl.DataFrame) -> str:
    missing = _unpriced(frame)
    if not missing:
        return ""
    return f" ({n(missing)} unpriced call{'s' if missing != 1 else ''} not in it)"


def _grouped(frame: pl.DataFrame, key: str, title: str) -> Table:
    apps = key != "model" and _apps(frame)  # a model is one model whatever the app
    rows = [
        [Cell(_named(r, key, apps)), Cell(n(r["calls"])),
         Cell(n(r["input_tokens"]), ESTIMATED if r["estimated_calls"] else MEASURED),
         Cell(n(r["output_tokens"]), MEASURED),
         _money(r)]
        for r in frame.sort("cost_usd_low", descending=True, nulls_last=True).iter_rows(named=True)
    ]  # fmt: skip
    return Table([(title, False), ("calls", True), ("input tokens", True),
                  ("output tokens", True), ("cost (USD)", True)], rows)  # fmt: skip


def build_weekly(
    store: api.StoreLike,
    *,
    week_label: str | None = None,
    tz: str = "UTC",
    since: datetime | None = None,
    until: datetime | None = None,
    app: str | None = None,
    budget: int = DEFAULT_BUDGET,
    prices: api.PricesLike = None,
    arms: tuple[str, str] | None = None,
) -> WeeklyContext:
    """The review of one ISO week (or of [since, until)), its money priced as `cost`."""
    with api.using(store) as opened:
        book = api.price_book(prices, opened)
        if since is not None or until is not None:
            if since is None or until is None:
                raise ForensicsError("a review needs both --since and --until, or --week")
            period = Week("custom", tz, utc(since), utc(until))
            _within_reach(period)
        elif week_label is not None:
            period = week(week_label, tz)
        else:
            newest = opened.run("SELECT max(epoch) FROM events")[0][0]
            if newest is None:
                raise ForensicsError("the store holds no sessions to review")
            period = week_of(datetime.fromtimestamp(newest, UTC), tz)
        # DuckDB's buffers capped (doubled while the review meets the cap): each section
        # reads the facts again, and uncapped the blocks they read stayed cached (505 MB
        # resident at 1,000,000 events, 332 MB capped at 128 MB)
        api.Scope(opened)  # the facts brought up to date first (a refresh is not capped)
        return opened.capped(MEMORY_LIMIT, lambda: _build(opened, period, app, budget, book,
                                                          arms))  # fmt: skip


def _default_store() -> Path | None:
    """The store a command reads with no --db here, resolved; None when FORENSICS_DB
    names none (the review's store was given: its commands name it)."""
    try:
        return api.default_db_path().resolve()
    except ForensicsError:
        return None


def _incident_command(store: api.Store, row: dict[str, Any], book: api.PriceBook) -> str:
    """The command that writes a session's incident report, as it must be typed to run
    where the review was written: the file to write, the store unless it is the
    default one, the prices file the review used, the app and user when the session id
    names more than one session; paths relative to the working folder when inside it."""
    session = row["session_id"]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", session)[:60].strip("._") or "session"
    words = ["--out", f"incident-{name}.html"]
    holders = store.run(
        "SELECT count(*) FROM sessions WHERE session_id = ?", [session]
    )[0][0]
    if holders > 1:
        words += ["--app", row["app_name"], "--user", row["user_id"]]
    if store.path.resolve() != _default_store():
        words += ["--db", _typed(store.path)]
    overrides = book.overrides
    if overrides is not None and overrides.label == str(overrides.path):  # a file, not kept
        words += ["--prices", _typed(overrides.path)]
    # an id that starts with '-' would read as an option: after '--', at the end
    named = [session, *words] if not session.startswith("-") else [*words, "--", session]
    return " ".join(map(shell_word, ["forensics", "report", "incident", *named]))


def _typed(path: Path) -> str:
    """A path as a command names it: relative to the working folder when inside it."""
    return relative(path) or str(path.resolve())


def _scope(store: api.Store, period: Week, app: str | None) -> api.Scope:
    return api.Scope(
        store, api.Selection(app=app, since=period.start.timestamp(), until=period.end.timestamp())
    )


def _bucket_seconds(period: Week) -> int:
    """60, unless the zone's offset over the period (and a day either side) is not whole
    minutes (local mean times before 1900): then a second, so no bucket of calls
    straddles a local midnight."""
    zone, moment = ZoneInfo(period.tz), period.start - timedelta(days=1)
    while moment <= period.end + timedelta(days=1):
        offset = moment.astimezone(zone).utcoffset()
        if offset is not None and offset.total_seconds() % 60:
            return 1
        moment += timedelta(hours=1)
    return 60


def _minutes(scope: api.Scope, book: api.PriceBook, period: Week) -> pl.DataFrame:
    """The period's calls summed by minute and agent, each minute's local day beside it
    (`local_day`: null for a call with no start time)."""
    return _local(scope.call_minutes(book, _bucket_seconds(period)), period)


def _local(buckets: pl.DataFrame, period: Week) -> pl.DataFrame:
    """Buckets of epoch seconds (`bucket`) with their local day in the period's zone."""
    return buckets.with_columns(
        pl.from_epoch(pl.col("bucket"), time_unit="s").dt.replace_time_zone("UTC")
        .dt.convert_time_zone(period.tz).dt.date().alias("local_day")
    )  # fmt: skip


def _releases_unknown(unsure: pl.DataFrame) -> str:
    """The open question of sessions whose ADK release is not known and whose possible
    releases rebuild some calls differently (Scope.ranged_sessions), in one sentence."""
    calls, unmeasured = int(unsure["ranged_calls"].sum()), int(unsure["ranged_unmeasured"].sum())
    priced = (
        f"; {counted(unmeasured, 'of them has', 'of them have')} no usage: its cost is a "
        "range over them too" if unmeasured else ""
    )
    return (
        f"Which ADK release wrote {counted(unsure.height, 'session')}: not known, and the "
        f"releases they may be rebuild {counted(calls, 'call')} of "
        f"{n(int(unsure['calls'].sum()))} differently ({union_of(unsure['rules_range'])}); "
        f"growth is shown as low–high where it differs{priced}. `--adk-version` at "
        "ingest, or the sessions' traces, settles it."
    )  # fmt: skip


def _build(store: api.Store, period: Week, app: str | None, budget: int,
           book: api.PriceBook, arms: tuple[str, str] | None) -> WeeklyContext:  # fmt: skip
    scope = _scope(store, period, app)
    calls = _minutes(scope, book, period)  # the calls, summed by minute and agent
    zone = ZoneInfo(period.tz)
    total_low, total_high = _total(calls, "cost_usd_low"), _total(calls, "cost_usd_high")
    before = None
    if period.label != "custom":
        before = _minutes(_scope(store, period.previous, app), book, period.previous)
    by_session = scope.cost(book, "session")
    agents, models = scope.cost(book, "agent"), scope.cost(book, "model")
    tools = scope.tool_costs(book)
    share = scope.cost_share(book)
    failures = scope.failures()
    growth = scope.growth()
    cache = _local(scope.cache_minutes(book, _bucket_seconds(period)), period)
    cache_breaks = scope.cache_breaks(book, TOP_BREAKS)

    local_day = calls
    days = (
        sorted(set(local_day["local_day"].drop_nulls().to_list())) if period.label == "custom"
        else period.days()
    )
    agents_seen = sorted({a for a in local_day["agent"].to_list() if a})
    series = {a: [0.0] * len(days) for a in agents_seen}
    per_day = local_day.group_by(["local_day", "agent"]).agg(pl.col("cost_usd_low").sum())
    for day, agent, cost in per_day.iter_rows():
        if agent in series and day in days and cost is not None:
            series[agent][days.index(day)] += float(cost)
    day_rows = []
    for day in days:
        mine = local_day.filter(pl.col("local_day") == day)
        day_rows.append([
            Cell(day.isoformat()), Cell(n(_count(mine))),
            Cell(usd(_total(mine, "cost_usd_low"), _total(mine, "cost_usd_high")), PRICED),
        ])  # fmt: skip

    headline = [
        f"The week cost {usd(total_low, total_high)}{_priced_note(calls)} over "
        f"{counted(_count(calls), 'model call')} in {counted(by_session.height, 'session')}."
    ]
    if before is not None:
        previous = _total(before, "cost_usd_low")
        if not _count(before):
            change = "no calls in the week before"
        elif previous:
            change = f"{(total_low - previous) / previous * 100:+.1f}%, low bounds"
        else:
            change = "nothing priced the week before"
        headline.append(f"The week before cost {usd(previous, _total(before, 'cost_usd_high'))}"
                        f"{_priced_note(before)} ({change}).")  # fmt: skip
    priced_agents = agents.filter(pl.col("cost_usd_low").is_not_null())
    if priced_agents.height and total_low:
        top = priced_agents.sort("cost_usd_low", descending=True).row(0, named=True)
        part = top["cost_usd_low"] / total_low * 100
        headline.append(
            f"The agent that cost most: {_named(top, 'agent', _apps(agents))}, "
            f"{usd(top['cost_usd_low'], top['cost_usd_high'])} ({part:.0f}% of the low bound)."
        )
    if not tools.is_empty():
        tool = tools.sort("cost_usd_low", descending=True, nulls_last=True).row(0, named=True)
        headline.append(
            f"Tool results cost {usd(_total(tools, 'cost_usd_low'))} sent and re-sent; "
            f"{_named(tool, 'tool_name', _apps(tools))}'s {usd(tool['cost_usd_low'])} the most."
        )
    if failures.height:
        headline.append(
            f"{counted(failures.height, 'context failure')} in "
            f"{counted(failures['session_id'].n_unique(), 'session')}."
        )

    headline += _cache_headline(cache)

    session_rows = [
        [Cell(r["session_id"]), Cell(r["app_name"] or "—"), Cell(n(r["calls"])), _money(r),
         Cell(_incident_command(store, r, book))]
        for r in by_session.sort("cost_usd_low", descending=True, nulls_last=True)
        .head(TOP_SESSIONS).iter_rows(named=True)
    ]  # fmt: skip
    share_rows = [
        [Cell(r["component"]), Cell(usd(r["usd_low"], r["usd_high"]), PRICED),
         Cell(n(r["share_low"], "%"), PRICED)]
        for r in share.iter_rows(named=True)
    ]  # fmt: skip
    tool_rows = [
        [Cell(_named(r, "tool_name", _apps(tools))), Cell(n(r["results"])), Cell(n(r["sends"])),
         Cell(n(r["result_tokens_estimated"]), ESTIMATED), _money(r, ESTIMATED)]
        for r in tools.sort("cost_usd_low", descending=True, nulls_last=True).iter_rows(named=True)
    ]  # fmt: skip
    failure_rows = [
        [Cell(r["agent"] or "—"), Cell(n(r["failures"])), Cell(n(r["sessions"])),
         Cell(_hist(r["first_failure_turn"])), Cell(_hist(r["first_failure_responses_before"]),
                                                    LOGGED)]
        for r in api.failures_by(failures, "agent").iter_rows(named=True)
    ]  # fmt: skip
    growth_rows = [
        [Cell(r["session_id"]), Cell(n(r["turn"])), Cell(r["tool_name"] or "—"),
         Cell(n(r["result_tokens_estimated"]), ESTIMATED), ranged(r, "growth_tokens", ESTIMATED)]
        for r in growth.head(5).iter_rows(named=True)
    ]  # fmt: skip
    over = growth.filter(pl.col("result_tokens_estimated") > budget)
    budget_rows = [
        [Cell(tool), Cell(n(group.height)),
         Cell(n(int(group["result_tokens_estimated"].max())), ESTIMATED)]  # type: ignore[arg-type]
        for (tool,), group in sorted(over.group_by(["tool_name"]), key=lambda g: str(g[0][0]))
    ]  # fmt: skip

    executions = api.executions(scope, book)
    tasks_table = None
    if executions.height:
        tasks_table = Table(
            [("arm", False), ("tasks", True), ("executions", True), ("success rate", True),
             ("cost per successful task (USD)", True), ("model calls per execution", True),
             ("executions by model calls", False)],
            [[Cell(r["arm"] or "—"), Cell(n(r["tasks"])), Cell(n(r["executions"])),
              Cell(n(r["success_rate"], "%")),
              Cell(usd(r["cost_per_success_usd_low"], r["cost_per_success_usd_high"]), PRICED),
              Cell(n(r["calls_mean"])), Cell(_hist(r["calls_histogram"]))]
             for r in api.arms_of(executions).iter_rows(named=True)],
        )  # fmt: skip

    comparison = None
    if arms is not None and executions.height:
        compared = api.compare_executions(executions, *arms)
        comparison = Table(
            [("bound", False), ("pairs", True), ("mean cost difference", True),
             ("95% interval", True), ("cost per success, arm / baseline", True),
             ("success rate, baseline → arm", True), ("note", False)],
            [[Cell(r["bound"]), Cell(n(r["pairs"])),
              Cell(n(r["mean_cost_diff_pct"], "%"), PRICED),
              Cell(f"{n(r['ci_low_pct'])} to {n(r['ci_high_pct'])} %", PRICED),
              Cell(n(r["cost_per_success_ratio"]), PRICED),
              Cell(f"{n(r['success_rate_baseline'])} % → {n(r['success_rate_arm'])} %"),
              Cell(r["note"] or "")]
             for r in compared.iter_rows(named=True)],
            f"{arms[1]} against {arms[0]}, tasks run under both; "
            + compared["method"][0],
        )  # fmt: skip
    evidence = {
        MEASURED: ["Token counts: the provider's usage stored with each response."],
        PRICED: [
            "Money: measured usage times the price of each call's UTC day "
            f"({portable(book.sources)})."
        ],
        ESTIMATED: ["Tool-result tokens and what their sends cost: characters over the "
                    "chars-per-token ratio."],  # fmt: skip
        INFERRED: ["Prefix breaks and cache writes never read: each call's cache reads "
                   "against its thread's previous and next call (docs/cache.md)."]
        if cache["calls"].sum() else [],  # fmt: skip
        LOGGED: ["Context failures' size figures and responses before them: the application's "
                 "logs and traces, where loaded."] if failures.height else [],  # fmt: skip
        "open": [
            "Failures, growth and the budget table are of the sessions active in the week, "
            "whole: a session that began before it counts all its turns."
        ],
    }
    if _unpriced(calls):
        evidence["open"].append(
            f"The cost of {n(_unpriced(calls))} calls: their model has no price (give one "
            "with --prices); the totals are of the priced calls."
        )
    if total_low != total_high:
        evidence["open"].append("Cache writes (and a Claude call's thinking): ADK stores none, "
                                "so the cost is a range.")  # fmt: skip
    unsure = scope.ranged_sessions()
    if unsure.height:
        evidence["open"].append(_releases_unknown(unsure))
    if tasks_table is None:
        evidence["open"].append("Whether the week's tasks succeeded: no outcomes loaded.")
    if cache["calls"].sum() and cache["writes_unknown"].sum():
        evidence["open"].append(
            "Cache writes never read: only where the writes are recorded (Claude Code "
            "transcripts, LiteLLM payloads, spans); ADK stores none.")  # fmt: skip
    if cache["unexplained_breaks"].sum():
        evidence["open"].append(
            "Why an `unexplained` prefix break broke: the system instruction, the tool "
            "declarations and the history are compared only where ADK's traces of both "
            "requests are loaded (docs/cache.md).")  # fmt: skip
    start_local = period.start.astimezone(zone)
    end_local = period.end.astimezone(zone)
    return WeeklyContext(
        title=f"Weekly cost review: {period.label}" if period.label != "custom"
        else "Cost review",
        period=f"{start_local:%Y-%m-%d %H:%M} to {end_local:%Y-%m-%d %H:%M} {period.tz}"
        + (f" · app {app}" if app else ""),
        tz=period.tz,
        headline=headline,
        by_day=DayChart([d.isoformat() for d in days], series),
        days=Table([("day", False), ("calls", True), ("cost (USD)", True)], day_rows),
        agents=_grouped(agents, "agent", "agent"),
        models=_grouped(models, "model", "model"),
        tools=Table([("tool", False), ("results", True), ("sends", True),
                     ("result tokens", True), ("cost sent and re-sent (USD)", True)],
                    tool_rows),  # fmt: skip
        sessions=Table([("session", False), ("app", False), ("calls", True),
                        ("cost (USD)", True), ("open its incident report", False)],
                       session_rows),  # fmt: skip
        share=Table([("component", False), ("USD", True), ("share (low)", True)], share_rows),
        cache_days=_cache_table(cache, "local_day", "day", days),
        cache_agents=_cache_table(cache, "agent", "agent", None),
        cache_breaks=Table(
            [("session", False), ("turn", True), ("agent", False), ("tokens re-sent", True),
             ("cost (USD)", True), ("cause", False)],
            [[Cell(r["session_id"]), Cell(n(r["turn"])), Cell(r["agent"] or "—"),
              Cell(n(r["break_tokens"]), INFERRED),
              Cell(usd(r["break_cost_usd_low"], r["break_cost_usd_high"]), PRICED),
              Cell(f"{r['cause']} ({r['cause_source']})" if r["cause_source"] else r["cause"])]
             for r in cache_breaks.iter_rows(named=True)],
            None if cache_breaks.height else "No prefix break this week.",
        ),  # fmt: skip
        failures=Table([("agent", False), ("failures", True), ("sessions", True),
                        ("first-failure ADK turn (turn: sessions)", False),
                        ("responses logged before (count: sessions)", False)], failure_rows,
                       None if failures.height else "No context failure this week."),  # fmt: skip
        growth=Table([("session", False), ("turn", True), ("tool", False),
                      ("result tokens", True), ("growth (tokens)", True)], growth_rows),
        budget=Table([("tool", False), ("results over the budget", True),
                      ("largest (tokens)", True)], budget_rows,
                     f"budget: {budget:,} tokens per result" if budget_rows
                     else f"No tool result over {budget:,} tokens."),  # fmt: skip
        tasks=tasks_table,
        comparison=comparison,
        tasks_help="Load outcomes to see what a successful task cost: "
        "`forensics outcomes load outcomes.csv` (session_id, task_id, arm, success) or "
        "`forensics outcomes load --adk-eval runs/*.evalset_result.json`.",
        evidence=evidence,
        method=[
            ("week", f"ISO week {period.label}, Monday 00:00 to Monday 00:00 in {period.tz}"
             if period.label != "custom" else f"[since, until) in {period.tz}"),
            ("calls", "the model calls that started in it (`forensics cost --since --until`)"),
            ("prices", portable(book.sources)),
            ("toolkit", f"agent-forensics {__version__}"),
            ("generated", datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ],
    )


TOP_BREAKS = 5


def _cache_headline(cache: pl.DataFrame) -> list[str]:
    """What the cache read and saved, and what its breaks cost, in one line."""
    total = _cache_sums(cache)
    if not total["prompt_tokens"]:
        return []
    share = total["cache_read_tokens"] / total["prompt_tokens"] * 100
    saved = _saved(total, "saved_usd", "unpriced", "calls")
    line = f"The prompt cache read {share:.0f}% of the prompt tokens and saved {saved}"
    if total["breaks"]:
        line += (f"; {counted(total['breaks'], 'prefix break')} re-sent "
                 f"{n(total['break_tokens'])} tokens for "
                 f"{_saved(total, 'break_cost_usd', 'unpriced_breaks', 'breaks')}")  # fmt: skip
    return [line + "."]


_CACHE_COUNTS = ("calls", "unpriced", "prompt_tokens", "cache_read_tokens", "writes_unknown",
                 "unread_write_tokens", "breaks", "unpriced_breaks", "break_tokens")  # fmt: skip
_CACHE_MONEY = ("saved_usd", "break_cost_usd_low", "break_cost_usd_high")


def _cache_sums(frame: pl.DataFrame) -> dict[str, Any]:
    """The cache buckets of `frame` summed: counts as ints, money as exact Decimals over
    the priced buckets (Decimal(0) where none is: `_saved` says unpriced then)."""
    return {**{c: int(frame[c].sum() or 0) for c in _CACHE_COUNTS},
            **{c: _total(frame, c) for c in _CACHE_MONEY}}  # fmt: skip


def _saved(sums: dict[str, Any], money: str, unpriced: str, of: str) -> str:
    """Money (`money`, or its `_low`/`_high` bounds) summed over the priced part of `of`
    (calls or breaks): '—' where none is priced, never $0; the unpriced ones said beside
    a partial sum."""
    missing, count = sums[unpriced], sums[of]
    if count and missing == count:
        return "— (unpriced)"
    bounds = (sums[money],) if money in sums else (sums[f"{money}_low"], sums[f"{money}_high"])
    text = usd(*bounds)
    return f"{text} (+ {n(missing)} unpriced)" if missing else text


def _cache_table(cache: pl.DataFrame, key: str, title: str, keys: list[date] | None) -> Table:
    """The cache's figures summed by `key` (a local day, in `keys`' order, or an agent)."""
    groups = {value: _cache_sums(group) for (value,), group in cache.group_by(key)}
    order = keys if keys is not None else sorted(k for k in groups if k is not None)
    rows = []
    for value in order:
        r = groups.get(value)
        if r is None or not r["calls"]:
            continue
        rate = r["cache_read_tokens"] / r["prompt_tokens"] * 100 if r["prompt_tokens"] else None
        unread = ("—" if r["writes_unknown"] == r["calls"] else n(r["unread_write_tokens"]))
        rows.append([
            Cell(value.isoformat() if isinstance(value, date) else str(value)),
            Cell(n(r["calls"])), Cell(n(r["prompt_tokens"]), MEASURED),
            Cell(n(rate, "%"), MEASURED),
            Cell(_saved(r, "saved_usd", "unpriced", "calls"), PRICED),
            Cell(unread, INFERRED), Cell(n(r["breaks"]), INFERRED),
            Cell(_saved(r, "break_cost_usd", "unpriced_breaks", "breaks"), PRICED),
        ])  # fmt: skip
    return Table([(title, False), ("calls", True), ("prompt tokens", True),
                  ("hit rate", True), ("saved (USD)", True), ("writes never read", True),
                  ("prefix breaks", True), ("break cost (USD)", True)], rows,
                 None if rows else "No call with usage this week.")  # fmt: skip


def _hist(text: str | None) -> str:
    if not text:
        return "—"
    counted = json.loads(text)
    return ", ".join(f"{k}: {v}" for k, v in counted.items()) or "—"
