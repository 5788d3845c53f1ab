"""The weekly cost review: ISO weeks in a time zone, the page's figures from the same
frames as the commands, and the page in headless Chromium."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.errors import ForensicsError
from forensics.reports import weekly as weekly_module
from forensics.reports.render import render_weekly
from forensics.reports.weekly import Week, build_weekly, week, week_of

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
PRICES = SAMPLE / "prices.toml"


def test_iso_weeks_in_a_time_zone() -> None:
    w47 = week("2026-W47")
    assert (w47.start, w47.end) == (datetime(2026, 11, 16, tzinfo=UTC),
                                    datetime(2026, 11, 23, tzinfo=UTC))  # fmt: skip
    berlin = week("2026-w47", "Europe/Berlin")
    assert berlin.start == datetime(2026, 11, 15, 23, tzinfo=UTC)
    # the week the clocks go back: Monday to Monday is 7 days and one hour
    autumn = week("2026-W43", "Europe/Berlin")
    assert (autumn.end - autumn.start).total_seconds() == 7 * 86400 + 3600
    assert week_of(datetime(2026, 10, 22, 9, tzinfo=UTC)).label == "2026-W43"
    assert w47.previous.label == "2026-W46" and week("2027-W01").previous.label == "2026-W53"
    with pytest.raises(ForensicsError, match="is not an ISO week"):
        week("2026-47")
    with pytest.raises(ForensicsError, match="is not a time zone"):
        week("2026-W47", "Mars/Olympus")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("weekly") / "w.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    api.ingest_opensearch_files(db, sorted((SAMPLE / "opensearch").glob("*.ndjson")))
    return db


def test_the_review_adds_up_to_the_commands(store: Path) -> None:
    context = build_weekly(store, week_label="2026-W43", prices=PRICES)
    bill = api.cost(store, prices=PRICES)
    total = sum(bill["cost_usd_low"].to_list())
    assert context.headline[0] == f"The week cost ${total:,.4f} over 25 model calls in 3 sessions."
    assert [row[1].text for row in context.days.rows] == ["0", "0", "0", "25", "0", "0", "0"]
    assert sum(sum(v) for v in context.by_day.series.values()) == pytest.approx(float(total))
    assert context.sessions.rows[0][0].text == "incident"
    words = context.sessions.rows[0][4].text.split()
    assert words[:6] == ["forensics", "report", "incident", "incident", "--out",
                         "incident-incident.html"]  # fmt: skip
    assert Path(words[7]).resolve() == store.resolve()  # --db: not the default store
    assert Path(words[9]).resolve() == PRICES.resolve()  # --prices: the review's
    assert context.failures.rows[0][:3] and context.failures.rows[0][1].text == "1"
    assert [r[0].text for r in context.budget.rows] == ["get_order_history", "get_return_history"]
    assert context.tasks is None and "forensics outcomes load" in context.tasks_help
    empty = build_weekly(store, week_label="2026-W44", prices=PRICES)
    assert empty.headline[0] == "The week cost $0 over 0 model calls in 0 sessions."
    assert empty.headline[1].startswith(f"The week before cost ${total:,.4f}")


def test_sessions_of_an_unknown_release_are_an_open_question(store: Path, tmp_path: Path) -> None:
    """Issue 30: the sample's keys say "2.0.0 or later", a range with the 2.8.0 relay
    format inside; the review says how many calls of which sessions that leaves open,
    counted as `calls` counts them, and that --adk-version settles it."""
    context = build_weekly(store, week_label="2026-W43", prices=PRICES)
    calls = pl.concat(list(api.calls_in_runs(store)))
    ranged = calls.filter(pl.col("occupancy_estimated_low").is_not_null())
    agent = calls.filter((pl.col("kind") != "summarizer")
                         & pl.col("session_id").is_in(ranged["session_id"].unique().to_list()))
    said = [e for e in context.evidence["open"] if e.startswith("Which ADK release")]
    sessions = ranged["session_id"].n_unique()
    assert said == [
        f"Which ADK release wrote {sessions} sessions: not known, and the releases they may "
        f"be rebuild {ranged.height} calls of {agent.height} differently (relay format "
        "(2.8.0)); growth is shown as low–high where it differs. `--adk-version` at ingest, "
        "or the sessions' traces, settles it."
    ]
    assert sessions >= 2
    known = tmp_path / "known.duckdb"
    api.ingest_sqlite(known, SAMPLE / "adk_v1.db", adk_version="2.13.0")
    again = build_weekly(known, week_label="2026-W43", prices=PRICES)
    assert not [e for e in again.evidence["open"] if e.startswith("Which ADK release")]


@pytest.mark.parametrize(("tz", "seconds"), [("UTC", 60), ("Asia/Kolkata", 60),
                         ("America/St_Johns", 60), ("Pacific/Chatham", 60), ("UTC", 1)])
def test_the_days_of_a_review_are_each_calls_local_day(
    store: Path, tz: str, seconds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review sums calls by the minute they started (queries/cost/minutes.sql), then
    dates each minute in the zone: the same days and counts as dating each call, in
    zones of half and three-quarter hours, and in buckets of a second (what a zone whose
    offset has seconds gets: Monrovia's -0:44:30 until 1972)."""
    monkeypatch.setattr(weekly_module, "_bucket_seconds", lambda period: seconds)
    calls = api.cost(store, by="call", prices=PRICES)
    first = calls["started_at"].min()
    assert isinstance(first, datetime)
    since, until = first - timedelta(days=2), first + timedelta(days=5)
    context = build_weekly(store, since=since, until=until, tz=tz, prices=PRICES)
    days = calls.with_columns(pl.col("started_at").dt.convert_time_zone(tz).dt.date())
    expected = days.group_by("started_at").len().sort("started_at")
    assert [(r[0].text, r[1].text) for r in context.days.rows] == [
        (d.isoformat(), str(k)) for d, k in expected.iter_rows()]


def test_a_zone_whose_offset_has_seconds_is_bucketed_by_the_second() -> None:
    def seconds(tz: str, start: datetime) -> int:
        return weekly_module._bucket_seconds(Week("custom", tz, start, start + timedelta(7)))

    assert seconds("Africa/Monrovia", datetime(1971, 3, 1, tzinfo=UTC)) == 1
    assert seconds("Africa/Monrovia", datetime(2026, 3, 1, tzinfo=UTC)) == 60
    assert seconds("Asia/Kathmandu", datetime(2026, 3, 1, tzinfo=UTC)) == 60


def test_outcomes_make_the_tasks_section(store: Path, tmp_path: Path) -> None:
    rows = tmp_path / "o.csv"
    rows.write_text("session_id,task_id,arm,success\nincident,orders,a,false\n"
                    "parallel,shipping,a,true\ncompaction,shipping,b,true\n")  # fmt: skip
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(store.read_bytes())
    api.load_outcomes(copy, [rows])
    context = build_weekly(copy, week_label="2026-W43", prices=PRICES)
    assert context.tasks is not None
    assert [(r[0].text, r[3].text) for r in context.tasks.rows] == [("a", "50 %"), ("b", "100 %")]


def test_the_page_in_chromium_and_on_the_command_line(store: Path, tmp_path: Path) -> None:
    from tests.browser import ChromiumNotFound, chromium_required, load_page

    out = CliRunner().invoke(app, ["report", "weekly", "--week", "2026-W43", "--tz",
                                   "Europe/Berlin", "--prices", str(PRICES), "--db", str(store),
                                   "--out", str(tmp_path)])  # fmt: skip
    assert out.exit_code == 0, out.output
    page = tmp_path / "review-2026-W43.html"
    assert out.stdout.strip() == str(page)
    html = page.read_text()
    assert "<script" not in html  # no scripts; the browser below sees no requests
    assert "Weekly cost review: 2026-W43" in html and "Europe/Berlin" in html
    try:
        report = load_page(page)
    except ChromiumNotFound as e:
        if chromium_required():
            raise
        pytest.skip(str(e))
    assert report.console_errors == [] and report.requests == []
    assert report.title == "Weekly cost review: 2026-W43"


def test_hostile_text_from_data_is_escaped(store: Path, tmp_path: Path) -> None:
    events = [{"id": "u1", "invocation_id": "i1", "author": "user", "timestamp": 1_792_659_600.0,
               "content": {"role": "user", "parts": [{"text": "hi"}]}},
              {"id": "m1", "invocation_id": "i1", "author": "<img src=x onerror=alert(1)>",
               "timestamp": 1_792_659_601.0, "model_version": "gemini-2.5-flash",
               "content": {"role": "model", "parts": [{"text": "ok"}]},
               "usage_metadata": {"prompt_token_count": 10, "candidates_token_count": 2}}]
    session = tmp_path / "evil.json"
    session.write_text(json.dumps({"id": "<script>x</script>", "app_name": "a", "user_id": "u",
                                   "events": events}))  # fmt: skip
    db = tmp_path / "e.duckdb"
    api.ingest_json(db, [session])
    html = render_weekly(build_weekly(db, week_label="2026-W43"))
    assert "<script>x" not in html and "<img src=x" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html


def test_unpriced_calls_are_said_never_zero(store: Path) -> None:
    context = build_weekly(store, week_label="2026-W43")  # no prices: the scripted model has none
    assert "unpriced calls not in it" in context.headline[0]
    assert any("their model has no price" in line for line in context.evidence["open"])


def test_agent_names_are_text_in_the_chart() -> None:
    from forensics.reports.charts import daily_cost_svg
    from forensics.reports.weekly import DayChart

    chart = DayChart(["2026-10-19", "2026-10-20"],
                     {"x$\\frac$y": [1.0, 0.0], "_hidden": [2.0, 0.5], "<b>a</b>": [0.0, 0.25]})
    svg = daily_cost_svg(chart)
    assert svg.startswith("<svg") and svg == daily_cost_svg(chart)  # the same bytes
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    assert {"x$\\frac$y", "_hidden", "&lt;b&gt;a&lt;/b&gt;"} <= set(texts)  # as written
    assert "<b>" not in svg and {"2026-10-19", "2026-10-20"} <= set(texts)
    # a bar per agent and day with cost, stacked: 3.0 on the first day is the highest
    assert svg.count('width="268.8"') == 4  # (1000 - 84 - 20) / 2 days * 0.6
    assert [t for t in texts if t.startswith("$")] == ["$0", "$1", "$2", "$3", "$4"]
    small = daily_cost_svg(DayChart(["2026-10-19"], {"a": [0.012]}))
    assert "$0.005" in small and "$0.010" in small  # as many decimals as the step needs


def test_a_review_of_several_apps_names_each_row_s_app(tmp_path: Path) -> None:
    # the bundled Claude Code transcripts: three projects (apps), a `main` agent and a
    # Read tool in each; two failed requests (not billed, and not unpriced either)
    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [SAMPLE / "claude_code"])
    context = build_weekly(db, week_label="2026-W47")
    bill = api.cost(db, by="agent")
    assert bill["unknown_calls"].sum() == 0 and bill["failed_calls"].sum() == 2
    assert "unpriced" not in context.headline[0]
    assert not any("no price" in line for line in context.evidence["open"])
    agents = [row[0].text for row in context.agents.rows]
    assert len(agents) == len(set(agents)) == bill.height
    expected = {f"{r['agent']} ({r['app_name']})" for r in bill.iter_rows(named=True)}
    assert set(agents) == expected and "main (-home-dev-shop)" in context.headline[2]
    tools = [row[0].text for row in context.tools.rows]
    assert len(tools) == len(set(tools)) and "Read (-home-dev-legacy)" in tools
    models = [row[0].text for row in context.models.rows]
    assert "— (failed requests)" in models and all("(-home" not in m for m in models)


def test_the_printed_incident_command_runs_as_printed(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: the review's command for a session carries what it needs (the file to
    write, the store, the prices file), relative to the working folder where it can."""
    import shlex

    work = tmp_path / "work"
    (work / "stores").mkdir(parents=True)
    db = work / "stores" / "w.duckdb"
    db.write_bytes(store.read_bytes())
    prices = work / "prices.toml"
    prices.write_text(PRICES.read_text("utf-8"), "utf-8")
    monkeypatch.chdir(work)
    context = build_weekly(db, week_label="2026-W43", prices=prices)
    printed = context.sessions.rows[0][4].text
    assert printed == ("forensics report incident incident --out incident-incident.html "
                       "--db stores/w.duckdb --prices prices.toml")  # fmt: skip
    words = shlex.split(printed)
    assert words[0] == "forensics"
    result = CliRunner().invoke(app, words[1:])
    assert result.exit_code == 0, result.output
    assert (work / "incident-incident.html").stat().st_size > 20_000


def test_a_session_id_that_reads_as_an_option_is_printed_after_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    events = [{"id": f"e{i}", "author": a, "timestamp": 1792700000 + i, "invocation_id": "i1",
               "content": {"parts": [{"text": t}]}}
              for i, (a, t) in enumerate([("user", "hi"), ("agent", "yo")])]  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(
        {"id": "-abc", "app_name": "a", "user_id": "u", "events": events}))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    api.ingest_json(tmp_path / "d.duckdb", [tmp_path / "s.json"])
    printed = build_weekly(tmp_path / "d.duckdb").sessions.rows[0][4].text
    assert printed == "forensics report incident --out incident--abc.html --db d.duckdb -- -abc"
    result = CliRunner().invoke(app, shlex.split(printed)[1:])
    assert result.exit_code == 0, result.output


def test_the_cache_section_adds_up_to_forensics_cache(store: Path, tmp_path: Path) -> None:
    """Issue 29: the review's prompt cache by day and agent, its costliest prefix breaks,
    and a headline line, each the figure `forensics cache` gives for the week."""
    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [SAMPLE / "claude_code"])
    context = build_weekly(db, week_label="2026-W47")
    start, end = week("2026-W47").start.timestamp(), week("2026-W47").end.timestamp()
    picked = api.Selection(since=start, until=end)
    days = api.cache(db, picked, by="day")
    shown = {row[0].text: row for row in context.cache_days.rows}
    assert sorted(shown) == [d.isoformat() for d in days["day"].to_list()]
    for r in days.iter_rows(named=True):
        row = shown[r["day"].isoformat()]
        assert row[1].text == f"{r['calls']:,}" and row[2].text == f"{r['prompt_tokens']:,}"
        assert row[5].text == f"{r['unread_write_tokens']:,}" and row[6].text == str(r["breaks"])
    agents = api.cache(db, picked, by="agent")
    assert sorted(row[0].text for row in context.cache_agents.rows) == sorted(
        set(agents["agent"].to_list()))
    breaks = api.cache(db, picked, by="call").filter(pl.col("is_break"))
    assert [row[0].text for row in context.cache_breaks.rows] == breaks["session_id"].to_list()
    assert context.cache_breaks.rows[0][5].text == "ttl (inferred)"
    total = api.cache(db, picked, by="session")
    reads, prompt = total["cache_read_tokens"].sum(), total["prompt_tokens"].sum()
    line = next(h for h in context.headline if h.startswith("The prompt cache"))
    saved = weekly_module.usd(sum(total["saved_usd"].to_list()))
    assert line.startswith(f"The prompt cache read {reads / prompt * 100:.0f}% of the prompt "
                           f"tokens and saved {saved}; 1 prefix break re-sent 18,748 tokens")
    # ADK stores no writes: none can be said never read
    adk = build_weekly(store, week_label="2026-W43", prices=PRICES)
    assert {row[5].text for row in adk.cache_days.rows} <= {"—", "0"}
    assert any("Cache writes never read" in claim for claim in adk.evidence["open"])


def test_the_cache_section_never_says_zero_for_what_has_no_price(store: Path) -> None:
    """The sample's scripted model has no price without --prices: what its cache saved and
    what its one break cost are unpriced, never $0; the note on unexplained breaks is
    there only where a break is unexplained (the sample's is a compaction)."""
    context = build_weekly(store, week_label="2026-W43")
    line = next(h for h in context.headline if h.startswith("The prompt cache"))
    assert "saved — (unpriced)" in line and "for — (unpriced)" in line
    assert all(row[4].text == "— (unpriced)" for row in context.cache_days.rows)
    assert not any("unexplained" in claim for claim in context.evidence["open"])


def test_a_review_that_meets_its_memory_cap_is_built_again_above_it(
    store: Path, monkeypatch: pytest.MonkeyPatch, caps_met: list[int]
) -> None:
    """DuckDB's buffers are capped while the review is built (weekly.MEMORY_LIMIT) and
    while the week's tool costs are priced (billed.TOOL_MEMORY_LIMIT); a build that meets
    either cap is done again with it doubled: the same review as one never capped."""
    from forensics.cost import billed
    from forensics.reports import weekly

    uncapped = build_weekly(store, week_label="2026-W43", prices=PRICES)
    monkeypatch.setattr(weekly, "MEMORY_LIMIT", "1MB")
    monkeypatch.setattr(billed, "TOOL_MEMORY_LIMIT", "1MB")
    capped = build_weekly(store, week_label="2026-W43", prices=PRICES)
    assert caps_met  # the caps were met, and raised
    import dataclasses

    def timeless(context: object) -> object:  # (when it was generated differs)
        method = [m for m in context.method if m[0] != "generated"]  # type: ignore[attr-defined]
        return dataclasses.replace(context, method=method)  # type: ignore[type-var]

    assert timeless(capped) == timeless(uncapped)
