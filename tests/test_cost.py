"""Billed cost: dated prices, tier cliffs, provider routes, a user's overrides, unknown
models, each usage convention on ADK-written events, and exact Decimal amounts.

The oracle for every amount is genai-prices' own `calc_price`, called here with the
usage read straight from the stored events (not through the cost queries): the cost
SQL must bill each call exactly as the price library would.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from genai_prices import Usage, calc_price
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.cost.prices import PriceBook, Unknown, route
from forensics.selection import Selection

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
REAL = ROOT.parent / "shared" / "real_data"
runner = CliRunner()

MAR_12 = 1_773_316_800.0  # 2026-03-12 12:00 UTC
MAR_13 = 1_773_403_200.0  # 2026-03-13 12:00 UTC: claude-sonnet-4-6 lost its long-context tier


def _call(n: int, t: float, model: str, **usage: int) -> dict:
    return {
        "id": f"e{n}", "invocation_id": "inv1", "author": "agent", "timestamp": t + n,
        "content": {"role": "model", "parts": [{"text": f"answer {n}"}]},
        "usage_metadata": usage, "model_version": model,
    }  # fmt: skip


def _store(
    tmp_path: Path,
    sessions: dict[str, tuple[float, str, list[dict[str, int]]]],
    adk_version: str | None = None,
) -> Path:
    """One store of sessions: id -> (start, model, one usage per call)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    files = []
    for sid, (start, model, usages) in sessions.items():
        events: list[dict] = [{"id": "u0", "invocation_id": "inv1", "author": "user",
                               "timestamp": start, "content": {"role": "user",
                               "parts": [{"text": "hello"}]}}]  # fmt: skip
        events += [_call(i + 1, start, model, **u) for i, u in enumerate(usages)]
        path = tmp_path / f"{sid}.json"
        path.write_text(json.dumps({"id": sid, "app_name": "app", "user_id": "u",
                                    "events": events}))  # fmt: skip
        files.append(path)
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, files, adk_version=adk_version)
    return db


def _oracle(model: str, at: float, provider: str | None = None, **usage: int) -> Decimal:
    when = datetime.fromtimestamp(at, UTC)
    return calc_price(Usage(**usage), model, provider_id=provider,
                      genai_request_timestamp=when).total_price  # fmt: skip


# ---------------------------------------------------------------------------
# Prices: dates, tiers, routes
# ---------------------------------------------------------------------------


def test_a_price_that_changed_on_a_date_applies_by_the_calls_day(tmp_path):
    book = PriceBook()
    before, after = book.price("claude-sonnet-4-6", date(2026, 3, 12)), book.price(
        "claude-sonnet-4-6", date(2026, 3, 13)
    )
    assert not isinstance(before, Unknown) and not isinstance(after, Unknown)
    assert [t.above for t in before.tiers] == [0, 200_000]
    assert [t.above for t in after.tiers] == [0] and after.since == date(2026, 3, 13)
    usage = {"prompt_token_count": 250_000, "cached_content_token_count": 50_000,
             "candidates_token_count": 1_000}  # fmt: skip
    db = _store(tmp_path, {"old": (MAR_12, "claude-sonnet-4-6", [usage]),
                           "new": (MAR_13, "claude-sonnet-4-6", [usage])})  # fmt: skip
    calls = api.cost(db, by="call").sort("day")
    assert calls["day"].to_list() == [date(2026, 3, 12), date(2026, 3, 13)]
    assert calls["tier_above"].to_list() == [200_000, 0]
    for row, at in zip(calls.iter_rows(named=True), (MAR_12 + 1, MAR_13 + 1), strict=True):
        # Claude's prompt count holds reads and writes; the writes are not stored: a range
        low = _oracle("claude-sonnet-4-6", at, "anthropic", input_tokens=250_000,
                      cache_read_tokens=50_000, output_tokens=1_000)  # fmt: skip
        high = _oracle("claude-sonnet-4-6", at, "anthropic", input_tokens=250_000,
                       cache_read_tokens=50_000, cache_write_tokens=200_000,
                       output_tokens=1_000)  # fmt: skip
        assert (row["cost_usd_low"], row["cost_usd_high"]) == (low, high)
        assert row["cost_source"] == "range" and row["price_source"] == "genai-prices 0.2.3"
    # the same usage cost more the day before the tier went
    assert calls["cost_usd_low"][0] > calls["cost_usd_low"][1]


def test_a_long_context_tier_is_a_cliff_on_the_whole_request(tmp_path):
    db = _store(tmp_path, {"s": (MAR_12, "gemini-2.5-pro", [
        {"prompt_token_count": 200_000, "candidates_token_count": 100},
        {"prompt_token_count": 200_001, "candidates_token_count": 100}])})  # fmt: skip
    calls = api.cost(db, by="call")
    assert calls["tier_above"].to_list() == [0, 200_000]
    for row in calls.iter_rows(named=True):
        expected = _oracle("gemini-2.5-pro", row["started_at"].timestamp(), "google",
                           input_tokens=row["input_tokens"], output_tokens=100)  # fmt: skip
        assert row["cost_usd_low"] == row["cost_usd_high"] == expected
        assert row["cost_source"] == "priced"  # Gemini bills no cache writes: no range
    # one token more, all of it at the higher rate: 1.25 -> 2.50 $/MTok, 10 -> 15 output
    assert calls["cost_usd_low"].to_list() == [Decimal("0.251"), Decimal("0.5015025")]


@pytest.mark.parametrize(
    ("model", "provider", "looked_up"),
    [
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "aws",
         "us.anthropic.claude-sonnet-4-20250514-v1:0"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "aws",
         "anthropic.claude-3-5-sonnet-20240620-v1:0"),
        ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", "aws",
         "us.anthropic.claude-sonnet-4-20250514-v1:0"),
        ("anthropic/claude-sonnet-4-20250514", "anthropic", "claude-sonnet-4-20250514"),
        ("vertex_ai/claude-sonnet-4@20250514", "anthropic", "claude-sonnet-4@20250514"),
        ("gemini/gemini-2.5-flash", "google", "gemini-2.5-flash"),
        ("projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro",
         "google", "gemini-2.5-pro"),
        ("gemini-2.5-flash", "google", "gemini-2.5-flash"),
        ("claude-opus-4-1", "anthropic", "claude-opus-4-1"),
        ("gpt-4o", None, "gpt-4o"),
    ],
)  # fmt: skip
def test_model_names_route_to_their_provider(model, provider, looked_up):
    assert route(model) == (provider, looked_up)


def test_a_bedrock_id_is_priced_by_aws(tmp_path):
    model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    found = PriceBook().price(model, date(2026, 9, 21))
    assert not isinstance(found, Unknown) and found.provider == "aws"
    db = _store(tmp_path, {"s": (1_789_992_000.0, model, [
        {"prompt_token_count": 12_000, "candidates_token_count": 300}])})  # fmt: skip
    row = api.cost(db, by="call").row(0, named=True)
    assert row["provider"] == "aws"
    assert row["cost_usd_low"] == _oracle(model, 1_789_992_001.0, "aws", input_tokens=12_000,
                                          output_tokens=300)  # fmt: skip


def test_an_unknown_model_has_no_cost_never_zero(tmp_path):
    db = _store(tmp_path, {"s": (MAR_12, "our-finetune-7", [
        {"prompt_token_count": 1_000, "candidates_token_count": 10}])})  # fmt: skip
    row = api.cost(db, by="call").row(0, named=True)
    assert row["cost_source"] == "unknown" and row["cost_usd_low"] is None
    assert "does not know it" in row["unknown_reason"]
    session = api.cost(db).row(0, named=True)
    assert session["cost_usd_low"] is None and session["unknown_calls"] == 1
    share = api.cost_share(db)
    assert share.filter(pl.col("component") == "total")["usd_low"].to_list() == [None]
    listed = runner.invoke(app, ["prices", "our-finetune-7"])
    assert listed.exit_code == 0 and "unknown" in listed.output and "never 0" in listed.output


# ---------------------------------------------------------------------------
# A user's overrides
# ---------------------------------------------------------------------------

CONTRACT = """
[[price]]
model = "claude-sonnet-4-20250514"
provider = "anthropic"
since = 2026-09-01
input_mtok = 2.7
output_mtok = "13.5"
cache_read_mtok = 0.27
cache_write_mtok = 3.375
note = "committed use, from September"

[[price.tier]]
above = 200000
input_mtok = 5.4
output_mtok = 20.25
cache_read_mtok = 0.54
cache_write_mtok = 6.75

[[alias]]
model = "house-model"
price_as = "gemini-2.5-flash"
provider = "google"
"""


def test_an_override_file_takes_precedence_from_its_date_and_is_named(tmp_path):
    prices = tmp_path / "contract.toml"
    prices.write_text(CONTRACT)
    aug, sep = 1_787_227_200.0, 1_789_992_000.0  # 2026-08-20 and 2026-09-21, noon UTC
    usage = {"prompt_token_count": 10_000, "cached_content_token_count": 8_000,
             "candidates_token_count": 500}  # fmt: skip
    long = {"prompt_token_count": 300_000, "candidates_token_count": 500}
    db = _store(tmp_path, {"aug": (aug, "claude-sonnet-4-20250514", [usage]),
                           "sep": (sep, "claude-sonnet-4-20250514", [usage, long]),
                           "house": (sep, "house-model", [usage])})  # fmt: skip
    calls = api.cost(db, by="call", prices=prices)
    by = {(r["session_id"], r["call_index"]): r for r in calls.iter_rows(named=True)}
    before = by[("aug", 1)]
    assert before["price_source"] == "genai-prices 0.2.3"  # before `since`: the list price
    assert before["cost_usd_low"] == _oracle("claude-sonnet-4-20250514", aug + 1, "anthropic",
                                             input_tokens=10_000, cache_read_tokens=8_000,
                                             output_tokens=500)  # fmt: skip
    contracted = by[("sep", 1)]
    assert contracted["price_source"] == "override contract.toml price[0]"
    # 2,000 uncached at 2.7, 8,000 read at 0.27, 500 out at 13.5; high: 2,000 written at 3.375
    assert contracted["cost_usd_low"] == Decimal("0.0054") + Decimal("0.00216") + Decimal(
        "0.00675"
    )
    assert contracted["cost_usd_high"] == Decimal("0.00675") + Decimal("0.00216") + Decimal(
        "0.00675"
    )
    cliff = by[("sep", 2)]  # 300,000 in: every token at the tier's rates
    assert cliff["tier_above"] == 200_000
    assert cliff["cost_usd_low"] == Decimal("1.62") + Decimal("0.010125")
    aliased = by[("house", 1)]
    assert aliased["price_model"] == "gemini-2.5-flash" and aliased["usage_convention"] == "gemini"
    assert aliased["price_source"] == (
        "genai-prices 0.2.3 as gemini-2.5-flash (contract.toml alias[0])"
    )
    result = runner.invoke(app, ["cost", "--db", str(db), "--prices", str(prices)])
    assert result.exit_code == 0 and f"overrides {prices}" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[price]]\nmodel = 'm'\noutput_mtok = 1\n", "p.toml price[0]: input_mtok is missing"),
        ("[[price]]\nmodel = 'm'\ninput_mtok = 1\noutput_mtok = -2\n",
         "p.toml price[0]: output_mtok -2 is not a price"),
        ("[[price]]\nmodel = 'm'\ninput_mtok = 1\noutput_mtok = 1\nsince = '2026-01-01'\n",
         "p.toml price[0]: since must be a TOML date"),
        ("[[price]]\nmodel = 'm'\ninput_mtok = 1\noutput_mtok = 1\ninput = 3\n",
         "p.toml price[0]: unknown field input"),
        ("[[price]]\nmodel = 'm'\ninput_mtok = 1\noutput_mtok = 1\n[[price.tier]]\nabove = 0\n",
         "p.toml price[0].tier[0]: above must be a whole number"),
        ("[[alias]]\nmodel = 'm'\n", "p.toml alias[0]: price_as is missing"),
        ("[prices]\n", "unknown table prices"),
        ("[[price]\n", "is not valid TOML"),
        ("[[price]]\nmodel = 'm'\ninput_mtok = 0.0000000000001\noutput_mtok = 1\n",
         "has more than 12 decimal places"),
    ],
)  # fmt: skip
def test_a_bad_prices_file_is_an_error_that_names_the_entry(tmp_path, text, message):
    db = _store(tmp_path, {"s": (MAR_12, "m", [{"prompt_token_count": 10}])})
    (tmp_path / "p.toml").write_text(text)
    result = runner.invoke(app, ["cost", "--db", str(db), "--prices", str(tmp_path / "p.toml")])
    assert result.exit_code == 1 and message in result.output, result.output


# ---------------------------------------------------------------------------
# Usage conventions, on events ADK wrote
# ---------------------------------------------------------------------------


def _raw_usage(db: Path) -> dict[str, tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT event_id, model_version, epoch, prompt_tokens, cached_tokens,"
            " candidates_tokens, thoughts_tokens, tool_use_prompt_tokens FROM events"
        ).fetchall()
    finally:
        con.close()
    return {r[0]: r[1:] for r in rows}


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_gemini_usage_through_adk_is_billed_as_google_bills_it(tmp_path):
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [REAL / "adk" / "workshop_customer_service_session.camel.json"])
    calls = api.cost(db, by="call").filter(pl.col("cost_source") != "failed")
    raw = _raw_usage(db)
    thinking = cached = 0
    for row in calls.iter_rows(named=True):
        model, at, prompt, cache, candidates, thoughts, tool_use = raw[row["call_id"]]
        # the prompt count includes the cached tokens; output is candidates + thoughts
        expected = _oracle(model, at, "google", input_tokens=prompt + (tool_use or 0),
                           cache_read_tokens=cache or 0,
                           output_tokens=(candidates or 0) + (thoughts or 0))  # fmt: skip
        assert row["cost_usd_low"] == row["cost_usd_high"] == expected, row["call_id"]
        assert row["cost_source"] == "priced" and row["usage_convention"] == "gemini"
        thinking += bool(thoughts)
        cached += bool(cache)
    assert calls.height >= 10 and thinking >= 5 and cached >= 5


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_real_sessions_and_their_traces_are_priced(tmp_path):
    db = tmp_path / "f.duckdb"
    traces = sorted((REAL / "adk_traces").glob("*__session_*.json"))
    api.ingest_json(db, traces)
    by_model = api.cost(db, by="model")
    assert by_model["unknown_calls"].sum() == 0
    assert set(by_model["price_model"].to_list()) <= {"gemini-2.5-flash", "gemini-2.5-pro"}
    sessions = api.cost(db)
    assert sessions.height == len(traces) and sessions["cost_usd_low"].null_count() == 0
    # the groupings add up to one bill, exactly
    total = sessions["cost_usd_low"].sum()
    for by in ("day", "agent", "model", "app", "turn"):
        assert api.cost(db, by=by)["cost_usd_low"].sum() == total, by
    assert api.cost(db, by="call")["cost_usd_low"].sum() == total


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_calls_without_usage_are_estimated_or_unknown(tmp_path):
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [REAL / "adk" / "adk-samples_customer-service_123.session.json"])
    # a real session with no usage and no model: nothing to price it with, and it says so
    assert set(api.cost(db, by="call")["cost_source"].to_list()) == {"unknown"}
    assert api.cost(db)["cost_usd_high"].to_list() == [None]
    # a model but no usage: the input estimated from the window, priced; output not counted
    db = _store(tmp_path / "synthetic", {"s": (MAR_12, "gemini-2.5-flash", [{}, {}])})
    calls = api.cost(db, by="call")
    assert calls["cost_source"].to_list() == ["estimated", "estimated"]
    for row in calls.iter_rows(named=True):
        assert row["input_tokens"] > 0 and row["output_tokens"] == 0
        assert row["cost_usd_low"] == Decimal(row["input_tokens"]) * Decimal("0.3") / 1_000_000
    aliases = tmp_path / "p.toml"
    aliases.write_text('[[alias]]\nmodel = ""\nprice_as = "gemini-2.5-flash"\n')
    result = runner.invoke(app, ["cost", "--db", str(db), "--prices", str(aliases)])
    assert result.exit_code == 1 and "model must be a non-empty string" in result.output


def test_claude_usage_leaves_writes_and_thinking_as_a_range(tmp_path):
    model = "claude-sonnet-4-20250514"
    db = _store(tmp_path, {"s": (1_789_992_000.0, model, [
        {"prompt_token_count": 10_000, "cached_content_token_count": 8_000,
         "candidates_token_count": 500, "thoughts_token_count": 200}])})  # fmt: skip
    row = api.cost(db, by="call").row(0, named=True)
    at = 1_789_992_001.0
    # low: no writes, thinking inside candidates (LiteLLM); high: the 2,000 uncached
    # tokens written, thinking outside candidates (ADK's native Claude path)
    assert row["cost_usd_low"] == _oracle(model, at, "anthropic", input_tokens=10_000,
                                          cache_read_tokens=8_000, output_tokens=500)
    assert row["cost_usd_high"] == _oracle(model, at, "anthropic", input_tokens=10_000,
                                           cache_read_tokens=8_000, cache_write_tokens=2_000,
                                           output_tokens=700)  # fmt: skip
    assert row["cost_source"] == "range" and row["output_tokens_unsure"] == 200


# ---------------------------------------------------------------------------
# The sample: totals, the split, tools, exact output
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cost") / "f.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    return db


PRICES = SAMPLES / "prices.toml"


def test_the_sample_is_priced_through_its_alias_and_adds_up(sample):
    calls = api.cost(sample, by="call", prices=PRICES)
    kinds = calls.group_by("cost_source").len().sort("cost_source")
    # agent calls priced; the summarizer (its event names no model) as the session's model;
    # the refused request is not billed
    assert dict(kinds.iter_rows()) == {"failed": 1, "inferred": 3, "priced": 21}
    assert calls.filter(pl.col("cost_source") == "failed")["cost_usd_high"].to_list() == [0]
    total = calls["cost_usd_low"].sum()
    assert isinstance(total, Decimal) and total == calls["cost_usd_high"].sum()
    assert api.cost(sample, prices=PRICES)["cost_usd_low"].sum() == total
    share = {r["component"]: r for r in api.cost_share(sample, prices=PRICES).iter_rows(named=True)}
    parts = ("cache reads", "cache writes", "uncached input", "output")
    assert sum(share[p]["usd_low"] for p in parts) == share["total"]["usd_low"] == total
    assert share["cache writes"]["usd_high"] == 0  # Gemini's list has no write surcharge
    assert abs(sum(share[p]["share_low"] for p in parts) - 100) < 0.05
    # the incident's tool result, first sent: its estimated tokens at the input rate
    tools = api.cost(sample, by="tool", prices=PRICES)
    top = tools.row(0, named=True)
    assert top["tool_name"] == "get_order_history"
    assert top["first_send_usd_low"] == Decimal(top["result_tokens_estimated"]) * Decimal(
        "0.3"
    ) / 1_000_000
    assert top["resend_usd_low"] > 0 and top["sends"] == 5
    # per tool call, the same money, beside growth's tokens
    per_call = api.cost(sample, by="tool-call", prices=PRICES)
    growth = api.growth(sample).select("function_call_id", "result_tokens_estimated")
    joined = per_call.join(growth, on="function_call_id", suffix="_growth")
    assert joined.height == growth.height == per_call.height
    assert (joined["result_tokens_estimated"] == joined["result_tokens_estimated_growth"]).all()
    for column in ("first_send_usd_low", "resend_usd_low", "resend_usd_high"):
        assert per_call[column].sum() == tools[column].sum(), column
    # the README quotes these figures: they must be the ones computed here
    readme = (ROOT / "README.md").read_text()
    uncached = round(share["uncached input"]["share_low"])
    tool = round(share["tool output, first sends (part of input)"]["share_low"])
    assert f"${total:.6f}, {uncached}% of it uncached input and {tool}% the tool" in readme


def test_cost_on_the_command_line(sample):
    env = {"FORENSICS_PRICES": str(PRICES)}
    table = runner.invoke(app, ["cost", "--db", str(sample)], env=env)
    assert table.exit_code == 0, table.output
    assert "total (3 rows)" in table.output and "genai-prices 0.2.3" in table.output
    rows = json.loads(runner.invoke(app, ["cost", "--db", str(sample), "--by", "day", "-f",
                                          "json"], env=env).output)  # fmt: skip
    (day,) = rows
    assert day["day"] == "2026-10-22" and day["provenance"]["cost_usd_low"] == "see cost_source"
    exact = api.cost(sample, by="day", prices=PRICES)["cost_usd_low"][0]
    assert Decimal(day["cost_usd_low"]) == exact  # JSON keeps every digit, as text
    csv = runner.invoke(app, ["cost", "--db", str(sample), "--by", "agent", "-f", "csv"], env=env)
    assert csv.exit_code == 0 and csv.output.splitlines()[0].startswith("app_name,agent,calls")
    for args in (["--share"], ["--by", "tool"], ["incident"], ["--by", "turn"],
                 ["--by", "tool-call"]):  # fmt: skip
        result = runner.invoke(app, ["cost", "--db", str(sample), *args], env=env)
        assert result.exit_code == 0, (args, result.output)
    refused = runner.invoke(app, ["cost", "--db", str(sample), "--share", "--by", "day"])
    assert refused.exit_code == 1 and "--share splits the whole bill" in refused.output
    prices = runner.invoke(app, ["prices", "--db", str(sample), "--on", "2026-10-22"], env=env)
    assert prices.exit_code == 0 and "gemini-2.5-flash" in prices.output
    # the store's models, each at the day of its newest call
    stored = json.loads(runner.invoke(app, ["prices", "--db", str(sample), "-f", "json"],
                                      env=env).output)  # fmt: skip
    assert [(r["model"], r["day"]) for r in stored] == [("scripted-store-model", "2026-10-22")]
    bad_day = runner.invoke(app, ["prices", "gemini-2.5-pro", "--on", "22/10/2026"])
    assert bad_day.exit_code == 1 and "is not a day" in bad_day.output


def test_since_and_until_take_the_calls_in_that_time(sample):
    calls = api.cost(sample, by="call", prices=PRICES).sort("started_at")
    middle = calls["started_at"][calls.height // 2]
    since = middle.strftime("%Y-%m-%dT%H:%M:%S")
    picked = runner.invoke(app, ["cost", "--db", str(sample), "--since", since, "--by", "call",
                                 "-f", "json"], env={"FORENSICS_PRICES": str(PRICES)})  # fmt: skip
    rows = json.loads(picked.output)
    assert 0 < len(rows) < calls.height
    assert all(r["started_at"] >= since for r in rows)


def test_a_prices_file_kept_in_the_store_prices_its_costs(sample, tmp_path):
    db = tmp_path / "kept.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    assert api.cost(db)["cost_usd_low"].to_list() == [None, None, None]  # no price yet
    table = runner.invoke(app, ["cost", "--db", str(db)])
    total = [line for line in table.output.splitlines() if line.startswith("total")]
    assert "0.000000" not in total[0]  # an unknown total is empty, never 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[[price]]\nmodel = 'm'\n")
    refused = runner.invoke(app, ["prices", "--keep", str(bad), "--db", str(db)])
    assert refused.exit_code == 1 and "bad.toml price[0]: input_mtok is missing" in refused.output
    kept = runner.invoke(app, ["prices", "--keep", str(PRICES), "--db", str(db)])
    assert kept.exit_code == 0 and "kept prices.toml" in kept.output
    assert api.cost(db)["cost_usd_low"].sum() == api.cost(sample, prices=PRICES)[
        "cost_usd_low"
    ].sum()
    shown = runner.invoke(app, ["cost", "--db", str(db)])
    assert f"overrides prices.toml (kept in {db}" in shown.output
    # a file given on the command line comes first
    other = tmp_path / "other.toml"
    other.write_text('[[alias]]\nmodel = "scripted-store-model"\nprice_as = "gemini-2.5-pro"\n')
    pro = api.cost(db, prices=other)["cost_usd_low"].sum()
    assert pro > api.cost(db)["cost_usd_low"].sum()
    forgot = runner.invoke(app, ["prices", "--forget", "--db", str(db)])
    assert forgot.exit_code == 0 and "dropped" in forgot.output
    assert api.cost(db)["cost_usd_low"].to_list() == [None, None, None]
    # a program asking for JSON or CSV gets a record, not a sentence
    kept = runner.invoke(app, ["prices", "--keep", str(PRICES), "--db", str(db), "-f", "json"])
    (record,) = json.loads(kept.stdout)
    assert record["prices_file"] == "prices.toml" and record["kept"] is True
    forgot = runner.invoke(app, ["prices", "--forget", "--db", str(db), "-f", "csv"])
    assert forgot.stdout.splitlines() == ["store,prices_file,kept,dropped",
                                          f"{db},,false,true"]  # fmt: skip


# ---------------------------------------------------------------------------
# What a review found: each case priced as genai-prices (or the file) bills it
# ---------------------------------------------------------------------------


def test_a_claude_call_of_adk_before_2_7_may_have_its_reads_beside_the_prompt(tmp_path):
    model, at = "claude-sonnet-4-5", 1_789_992_001.0
    usage = {"prompt_token_count": 500, "cached_content_token_count": 8_000,
             "candidates_token_count": 100}  # fmt: skip
    old = api.cost(_store(tmp_path / "old", {"s": (at - 1, model, [usage])}, "2.6.0"),
                   by="call").row(0, named=True)  # fmt: skip
    # LiteLLM's reading (reads inside the prompt) against 2.6's native one (the prompt
    # is the uncached input, the reads beside it, every uncached token written at most)
    assert old["cost_source"] == "range" and old["input_tokens_unsure"] == 8_000
    assert old["cost_usd_low"] == _oracle(model, at, "anthropic", input_tokens=500,
                                          cache_read_tokens=500, output_tokens=100)
    assert old["cost_usd_high"] == _oracle(model, at, "anthropic", input_tokens=8_500,
                                           cache_read_tokens=8_000, cache_write_tokens=500,
                                           output_tokens=100)  # fmt: skip
    new = api.cost(_store(tmp_path / "new", {"s": (at - 1, model, [usage])}, "2.13.0"),
                   by="call").row(0, named=True)  # fmt: skip
    assert new["input_tokens_unsure"] == 0 and new["cost_usd_high"] < old["cost_usd_high"]


def test_gemini_through_litellm_counts_its_thinking_once(tmp_path):
    usage = {"prompt_token_count": 4_000, "cached_content_token_count": 3_000,
             "candidates_token_count": 300, "thoughts_token_count": 200}  # fmt: skip
    db = _store(tmp_path, {"s": (MAR_12, "gemini/gemini-2.5-flash", [usage])})
    row = api.cost(db, by="call").row(0, named=True)
    assert row["usage_convention"] == "other" and row["output_tokens"] == 300
    assert row["cost_usd_low"] == row["cost_usd_high"] == _oracle(
        "gemini-2.5-flash", MAR_12 + 1, "google", input_tokens=4_000,
        cache_read_tokens=3_000, output_tokens=300)  # fmt: skip


def test_a_request_fee_is_billed_once_per_call(tmp_path):
    db = _store(tmp_path, {"s": (MAR_12, "perplexity/sonar", [
        {"prompt_token_count": 1_000, "candidates_token_count": 10}])})  # fmt: skip
    row = api.cost(db, by="call").row(0, named=True)
    assert row["request_usd"] > 0
    listed = api.prices(["perplexity/sonar"], date(2026, 3, 12)).row(0, named=True)
    assert listed["requests_usd_per_k"] == row["request_usd"] * 1000  # the fee `prices` shows
    assert row["cost_usd_low"] == _oracle("sonar", MAR_12 + 1, "perplexity", input_tokens=1_000,
                                          output_tokens=10)  # fmt: skip


def test_a_tier_derives_the_cache_rates_its_base_derived(tmp_path):
    prices = tmp_path / "p.toml"
    prices.write_text("[[price]]\nmodel = 'house'\ninput_mtok = 2\noutput_mtok = 8\n"
                      "[[price.tier]]\nabove = 200000\ninput_mtok = 4\noutput_mtok = 12\n")
    db = _store(tmp_path, {"s": (MAR_12, "house", [
        {"prompt_token_count": 300_000, "cached_content_token_count": 100_000,
         "candidates_token_count": 10}])})  # fmt: skip
    row = api.cost(db, by="call", prices=prices).row(0, named=True)
    # no cache rates given: reads and writes at the tier's own input rate, one figure
    assert row["cost_usd_low"] == row["cost_usd_high"] == Decimal("1.20012")
    assert row["cost_source"] == "priced"


def test_the_share_adds_up_under_each_bound_when_writes_are_cheaper(tmp_path):
    prices = tmp_path / "p.toml"
    prices.write_text("[[price]]\nmodel = 'claude-house'\ninput_mtok = 4\n"
                      "cache_write_mtok = 1\noutput_mtok = 10\n")
    db = _store(tmp_path, {"s": (MAR_12, "claude-house", [
        {"prompt_token_count": 1_000, "candidates_token_count": 10,
         "thoughts_token_count": 1_000}])})  # fmt: skip
    row = api.cost(db, by="call", prices=prices).row(0, named=True)
    # low: everything written at 1 and the thinking inside candidates; high: nothing
    # written (4) and the thinking added: the true bounds, not two whole scenarios
    assert row["cost_usd_low"] == Decimal("0.001") + Decimal("0.0001")
    assert row["cost_usd_high"] == Decimal("0.004") + Decimal("0.0101")
    share = {r["component"]: r for r in api.cost_share(db, prices=prices).iter_rows(named=True)}
    parts = ("cache reads", "cache writes", "uncached input", "output", "request fees")
    for bound in ("usd_low", "usd_high"):
        assert sum(share[p][bound] for p in parts) == share["total"][bound], bound


@pytest.mark.parametrize(
    ("rate", "message"),
    [("1e22", "is above 1,000,000,000 USD"), ("0.0000000000001", "more than 12 decimal")],
)
def test_a_rate_that_is_no_price_is_refused_before_it_is_kept(tmp_path, rate, message):
    db = _store(tmp_path, {"s": (MAR_12, "m", [{"prompt_token_count": 10}])})
    prices = tmp_path / "p.toml"
    prices.write_text(f"[[price]]\nmodel = 'm'\ninput_mtok = '{rate}'\noutput_mtok = 1\n")
    for args in (["cost", "--prices", str(prices)], ["prices", "--keep", str(prices)]):
        result = runner.invoke(app, [*args, "--db", str(db)])
        assert result.exit_code == 1 and "p.toml price[0]: input_mtok" in result.output
        assert message in result.output, result.output


def test_tool_money_without_a_price_is_unknown_not_zero(sample):
    tools = api.cost(sample, by="tool")  # the scripted model has no list price
    # the one result sent only in the refused request: not billed, 0; every other tool
    # had a send of no price: unknown, never a part shown as the whole
    billed = tools.filter(pl.col("cost_usd_high").is_not_null())
    assert billed["tool_name"].to_list() == ["get_return_history"]
    assert billed["cost_usd_high"].to_list() == [0] and billed["unpriced_sends"][0] == 0
    assert (tools.filter(pl.col("cost_usd_high").is_null())["unpriced_sends"] > 0).all()
    per_call = api.cost(sample, by="tool-call")
    known = per_call.filter(pl.col("sent_in_turn_usd_low").is_not_null())
    assert known["tool_name"].to_list() == ["get_return_history"]


def test_a_litellm_payload_of_the_call_makes_its_writes_known(tmp_path):
    """ADK stores no cache writes; the LiteLLM payload of the same request counts them:
    matched by the ids the app put in its metadata, else by model, time and tokens."""
    model = "claude-sonnet-4-20250514"
    start = 1_789_992_000.0
    usage = {"prompt_token_count": 10_000, "cached_content_token_count": 8_000,
             "candidates_token_count": 500, "thoughts_token_count": 200}
    db = _store(tmp_path, {"s": (start, model, [usage]), "t": (start + 600, model, [usage]),
                           "u": (start + 1200, model, [usage]),
                           "v": (start + 1800, model, [usage])})  # fmt: skip
    when = datetime.fromtimestamp(start + 1, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    later = datetime.fromtimestamp(start + 601.5, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    def payload(pid: str, at: str, meta: dict) -> dict:
        return {"id": pid, "call_type": "acompletion", "status": "success",
                "model": f"anthropic/{model}", "startTime": at, "endTime": at,
                "prompt_tokens": 10_000, "completion_tokens": 700, "response_cost": 0.01,
                "metadata": {"requester_metadata": meta,
                             "usage_object": {"cache_read_input_tokens": 8_000,
                                              "cache_creation_input_tokens": 1_500}}}  # fmt: skip

    logged = tmp_path / "litellm.ndjson"
    logged.write_text(json.dumps(payload("p1", when, {"session_id": "s", "event_id": "e1"}))
                      + "\n" + json.dumps(payload("p2", later, {})) + "\n")  # fmt: skip
    # ADK 2.13's own span of session u's call, as Data Prepper stores it
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": f"generate_content {model}",
            "startTime": "2026-09-21T12:20:01Z", "endTime": "2026-09-21T12:20:02Z",
            "span.attributes.gen_ai@conversation@id": "u",
            "span.attributes.gcp@vertex@agent@event_id": "e1",
            "span.attributes.gen_ai@usage@input_tokens": 10_000,
            "span.attributes.gen_ai@usage@output_tokens": 700,
            "span.attributes.gen_ai@usage@cache_creation@input_tokens": 1_500}  # fmt: skip
    spans = tmp_path / "spans.ndjson"
    spans.write_text(json.dumps(span) + "\n")
    api.ingest_opensearch_files(db, [logged, spans])
    rows = {r["session_id"]: r for r in api.cost(db, by="call").iter_rows(named=True)}
    assert rows["v"]["cache_write_tokens"] is None and rows["v"]["cost_source"] == "range"
    for sid, at, match in (("s", start + 1, "litellm (id)"), ("t", start + 601, "litellm (near)"),
                           ("u", start + 1201, "otel-span (id)")):  # fmt: skip
        row = rows[sid]
        assert row["cache_write_tokens"] == 1500
        assert row["cache_write_source"] == match
        # the writes are known: the bounds differ only by where the thinking was counted
        assert row["cost_usd_low"] == _oracle(model, at, "anthropic", input_tokens=10_000,
                                              cache_read_tokens=8_000, cache_write_tokens=1_500,
                                              output_tokens=500)  # fmt: skip
        assert row["cost_usd_high"] == _oracle(model, at, "anthropic", input_tokens=10_000,
                                               cache_read_tokens=8_000, cache_write_tokens=1_500,
                                               output_tokens=700)  # fmt: skip
        assert row["cache_write_usd_low"] == row["cache_write_usd_high"] > 0


def test_a_view_named_more_than_once_is_computed_once():
    """DuckDB expands a view wherever it is named (through the views that name it): the
    cost views a query would compute twice or more are made temp tables, the others stay
    views (analysis/stored.py shared_views); the rows are the same either way, which the
    goldens and every cost test hold."""
    from forensics import sql
    from forensics.analysis.stored import _code, shared_views
    from forensics.cost.billed import _VIEWS

    names = list(_VIEWS)
    for i, (view, source) in enumerate(_VIEWS.items()):  # each names only views before it
        text = _code(sql.load(source).sql)
        assert not [later for later in names[i:] if later in text], view
    assert shared_views(sql.load("cost/share").sql, _VIEWS) == {"cost_calls", "cost_first_sends"}
    assert shared_views(sql.load("cost/tool_calls").sql, _VIEWS) == {
        "cost_calls", "cost_call_prices", "cost_first_sends"}
    assert shared_views(sql.load("cost/grouped").sql, _VIEWS) == set()
    assert shared_views(sql.load("cost/calls").sql, _VIEWS) == set()


def test_views_as_tables_give_the_same_rows_and_leave_nothing(tmp_path, monkeypatch):
    """The same frames with every cost view a view, and none left after a query; a view
    left by an interrupted clean-up does not stop the next query making a table."""
    from forensics.analysis import stored
    from forensics.api import Scope, price_book, using

    db = tmp_path / "c.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    api.ingest_claude_code(db, [SAMPLES / "claude_code"])
    frames = (lambda: api.cost_share(db), lambda: api.cost(db, by="tool"),
              lambda: api.cost(db, by="tool-call"), lambda: api.cost(db, by="day"))  # fmt: skip
    tabled = [f() for f in frames]
    with monkeypatch.context() as m:
        m.setattr(stored, "shared_views", lambda query, views: set())
        viewed = [f() for f in frames]
    assert all(a.height for a in tabled)
    assert all(a.equals(b) for a, b in zip(tabled, viewed, strict=True))
    with using(db) as store:
        store.run("CREATE TEMP VIEW cost_calls AS SELECT 1 AS x")  # left behind
        costing = Scope(store, None).costing(price_book(None, store))
        assert costing.share().height == tabled[0].height
        left = store.run("SELECT count(*) FROM duckdb_tables() WHERE temporary")[0][0]
        views = store.run("SELECT count(*) FROM duckdb_views() WHERE temporary"
                          " AND view_name LIKE 'cost_%'")[0][0]  # fmt: skip
        assert (left, views) == (0, 0)


def test_cost_lists_the_costliest_first_and_says_how_to_price_the_unpriced(tmp_path):
    """Issue 33, item 9: after the README's sample ingest every call is unpriced (the
    scripted model): the table says which model and how to price it; with prices, the
    sessions come costliest first."""
    db = str(tmp_path / "s.duckdb")
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    bare = runner.invoke(app, ["cost", "--db", db])
    assert bare.exit_code == 0, bare.output
    assert bare.stderr.splitlines()[-1] == (
        "Hint: 24 calls unpriced: no price for scripted-store-model; give their rates with "
        "--prices FILE (the bundled sample's scripted models: sample_data/prices.toml), or "
        "keep a file for this store with `forensics prices --keep FILE`")  # fmt: skip
    priced = runner.invoke(app, ["cost", "--db", db, "--prices", str(SAMPLES / "prices.toml"),
                                 "-f", "json"])  # fmt: skip
    rows = json.loads(priced.stdout)
    costs = [r["cost_usd_low"] for r in rows]
    assert costs == sorted(costs, reverse=True) and len(costs) == 3
    assert "Hint" not in priced.stderr
    # a file given that prices them not (an alias to a model genai-prices does not know):
    # the hint says the file does not, not to give one
    alias = tmp_path / "alias.toml"
    alias.write_text('[[alias]]\nmodel = "scripted-store-model"\nprice_as = "no-such-model"\n')
    aliased = runner.invoke(app, ["cost", "--db", db, "--prices", str(alias)])
    assert aliased.stderr.splitlines()[-1] == (
        f"Hint: 24 calls unpriced: no price for scripted-store-model; the prices file {alias} "
        "does not price them: add a [[price]] for each (an [[alias]] prices one as a model "
        "genai-prices knows: `forensics prices MODEL` shows whether it does)")  # fmt: skip


def test_a_compaction_s_summarizer_is_not_billed_to_the_user():
    """Issue 31, item 4: ADK writes a compaction event as the user's; its summarizer
    call was billed to an agent named "user" (3 calls in the sample week). A person
    makes no model calls: the calls are the summarizer's, as `calls` names them."""
    db = SAMPLES / "adk_v1.db"
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        store = f"{work}/s.duckdb"
        api.ingest_sqlite(store, db)
        agents = api.cost(store, by="agent", prices=SAMPLES / "prices.toml")
        assert "user" not in agents["agent"].to_list()
        calls = api.calls(store, api.Selection())
        summarized = agents.filter(agents["agent"] == "summarizer")["calls"].to_list()
        assert summarized == [calls.filter(calls["kind"] == "summarizer").height] == [3]


def test_the_store_keeps_its_calls_priced_and_a_query_reads_them_alike(tmp_path, monkeypatch):
    """Where the facts are brought up to date every call is priced once and kept
    (cost/stored.py); a cost read from there equals the same cost priced by the query,
    for the whole store and for a selection; keeping or forgetting a prices file prices
    them again; another genai-prices release, or a prices file given to the command, is
    priced by the query."""
    from forensics.api import Scope, price_book, using
    from forensics.cost import prices as prices_module
    from forensics.cost import stored

    db = tmp_path / "c.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    api.ingest_claude_code(db, [SAMPLES / "claude_code"])
    sessions = api.sessions(db)["session_id"].to_list()
    picks = [None, sessions[0], sessions[-1], Selection.parse(since="2020-01-01",
                                                              until="2100-01-01")]

    def frames() -> list[pl.DataFrame]:
        found = [api.cost_share(db, selection) for selection in picks]
        for by in ("call", "day", "session", "agent", "tool", "tool-call"):
            found += [api.cost(db, selection, by=by) for selection in picks]
        return found

    def reads_stored(selection: object = None) -> bool:
        with using(db) as store:
            return Scope(store, selection).costing(price_book(None, store)).stored

    assert reads_stored() and reads_stored(sessions[0])
    kept = frames()
    with monkeypatch.context() as m:
        m.setattr(stored, "current", lambda store, book: False)
        assert not reads_stored()
        priced = frames()
    assert sum(f.height for f in kept) > 50
    assert all(a.equals(b) for a, b in zip(kept, priced, strict=True))
    with using(db) as store:
        rows = store.run("SELECT count(*) FROM priced_calls")[0][0]
        calls = store.run("SELECT count(*) FROM fact_calls")[0][0]
    assert rows == calls > 0

    # a prices file kept in the store: the calls priced again by it
    runner.invoke(app, ["prices", "--keep", str(PRICES), "--db", str(db)])
    assert reads_stored()
    with_file = api.cost(db, by="call")
    assert with_file.equals(api.cost(db, by="call", prices=PRICES).with_columns(
        with_file["price_source"]))  # fmt: skip  (the file is named as kept)
    runner.invoke(app, ["prices", "--forget", "--db", str(db)])
    assert reads_stored() and api.cost(db, by="call").equals(kept[4])

    # another release of genai-prices: priced by the query until the facts are refreshed
    monkeypatch.setattr(prices_module, "genai_prices_version", lambda: "0.0.0-other")
    assert not reads_stored()
    again = api.cost(db, by="call")
    differ = [c for c in again.columns if not again[c].equals(kept[4][c])]
    assert differ == ["price_source", "unknown_reason"]  # each names the release
    api.analyze(db)
    assert reads_stored()


def test_a_logged_record_goes_to_its_nearest_call_whatever_the_selection(tmp_path, monkeypatch):
    """A LiteLLM payload that names no session is matched to the call nearest in time
    among all of the store's calls: selecting one session does not hand it another's
    record (a call's cost never depends on which other sessions are selected)."""
    model = "claude-sonnet-4-20250514"
    start = 1_789_992_000.0
    usage = {"prompt_token_count": 10_000, "cached_content_token_count": 8_000,
             "candidates_token_count": 500}  # fmt: skip
    # session s calls at start + 1, session t at start + 3; the payload started at + 2.5
    db = _store(tmp_path, {"s": (start, model, [usage]), "t": (start + 2, model, [usage])})
    at = datetime.fromtimestamp(start + 2.5, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    payload = {"id": "p1", "call_type": "acompletion", "status": "success",
               "model": f"anthropic/{model}", "startTime": at, "endTime": at,
               "prompt_tokens": 10_000, "completion_tokens": 500, "response_cost": 0.01,
               "metadata": {"usage_object": {"cache_read_input_tokens": 8_000,
                                             "cache_creation_input_tokens": 1_500}}}  # fmt: skip
    logged = tmp_path / "litellm.ndjson"
    logged.write_text(json.dumps(payload) + "\n")
    api.ingest_opensearch_files(db, [logged])
    whole = {r["session_id"]: r for r in api.cost(db, by="call").iter_rows(named=True)}
    assert whole["t"]["cache_write_tokens"] == 1500
    assert whole["t"]["cache_write_source"] == "litellm (near)"
    assert whole["s"]["cache_write_tokens"] is None
    for sid in ("s", "t"):
        assert api.cost(db, sid, by="call").row(0, named=True) == whole[sid]
    from forensics.cost import stored

    monkeypatch.setattr(stored, "current", lambda store, book: False)  # priced by the query
    for sid in ("s", "t"):
        assert api.cost(db, sid, by="call").row(0, named=True) == whole[sid]


def test_the_tools_sums_are_their_calls_sums(sample, tmp_path):
    """`cost --by tool` is summed in DuckDB (queries/cost/tool_costs.sql): per tool, its
    tool calls' figures summed as polars sums them, a money sum unknown when one of its
    parts is, each price source named once; with and without the kept prices, the
    scripted model unpriced (unknown sums) and priced by a file (known ones)."""
    import polars as pl

    def oracle(calls: pl.DataFrame) -> pl.DataFrame:
        def known(column: str) -> pl.Expr:
            return pl.when(pl.col(column).is_not_null().all()).then(pl.col(column).sum())

        return (
            calls.with_columns(
                pl.when(pl.col(f"first_send_usd_{b}").is_not_null()
                        & pl.col(f"resend_usd_{b}").is_not_null())
                .then(pl.col(f"first_send_usd_{b}") + pl.col(f"resend_usd_{b}"))
                .alias(f"cost_usd_{b}") for b in ("low", "high"))  # fmt: skip
            .group_by("app_name", "tool_name")
            .agg(
                pl.len().cast(pl.Int64).alias("results"),
                pl.col("result_tokens_estimated").sum(),
                pl.col("sends").sum(),
                *(known(c).alias(c) for c in (
                    "first_send_usd_low", "first_send_usd_high", "resend_usd_low",
                    "resend_usd_high", "cost_usd_low", "cost_usd_high")),  # fmt: skip
                pl.col("unpriced_sends").sum(),
                pl.col("price_source").str.split("; ").explode().drop_nulls().unique().sort()
                .str.join("; "),
            )
            .sort(["cost_usd_high", "app_name", "tool_name"], descending=[True, False, False],
                  nulls_last=True)  # fmt: skip
        )

    for prices in (None, PRICES):
        tools = api.cost(sample, by="tool", prices=prices)
        calls = api.cost(sample, by="tool-call", prices=prices)
        assert tools.height >= 2
        expected = oracle(calls).select(tools.columns).cast(dict(tools.schema))
        assert tools.equals(expected), (tools, expected)


def test_pricing_that_needs_more_than_its_cap_still_prices(sample, tmp_path, monkeypatch):
    """Every call is priced under a DuckDB memory cap (PRICING_MEMORY_LIMIT); what DuckDB
    cannot spill under it is priced without it, not left unpriced."""
    import duckdb

    from forensics.cost import billed, stored

    monkeypatch.setattr(billed, "PRICING_MEMORY_LIMIT", "1MB")
    db = tmp_path / "capped.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(f"SELECT count(*) FROM {stored.TABLE}").fetchall()[0][0] > 0  # noqa: S608
    for by in ("day", "tool"):
        assert api.cost(db, by=by).equals(api.cost(sample, by=by))


@pytest.mark.parametrize("projects", ["adk", "claude-code"])
def test_tools_in_a_time_range_sum_their_runs_of_sessions(projects, sample, tmp_path,
                                                           monkeypatch):  # fmt: skip
    """With a time range each tool call is priced over the calls in it, a run of sessions
    at a time (billed.TOOL_RUN_EVENTS): the runs' sums summed are the one query's rows,
    whatever the runs, priced or not (unknown sums stay unknown)."""
    from forensics.cost import billed

    db = sample
    if projects == "claude-code":
        db = tmp_path / "cc.duckdb"
        api.ingest_claude_code(db, [SAMPLES / "claude_code"])
    times = api.cost(db, by="call")["started_at"].drop_nulls().sort()
    middle = times[len(times) // 3].timestamp()
    for window in (api.Selection(since=0.0), api.Selection(since=middle)):
        for prices in (None, PRICES):
            monkeypatch.setattr(billed, "TOOL_RUN_EVENTS", 10**9)  # one run
            whole = api.cost(db, window, by="tool", prices=prices)
            monkeypatch.setattr(billed, "TOOL_RUN_EVENTS", 1)  # a session a run
            runs = api.cost(db, window, by="tool", prices=prices)
            assert whole.height >= 2 and runs.equals(whole), (runs, whole)
