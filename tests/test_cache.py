"""`forensics cache`: the prompt split, what the reads saved, and the prefix breaks with
their causes, on transcripts written here with each cause planted, on ADK sessions
(whose writes are unknown: a range), on the bundled sample and on shared/real_data.

Every amount's oracle is genai-prices' own `calc_price` on the tokens in question (a
break: those tokens written, or sent uncached, against the same tokens read), never the
toolkit's rates.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from genai_prices import Usage, calc_price
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.errors import ForensicsError
from tests.test_claude_code import Transcript, tool_result, tool_use, usage

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real_data" / "claude_code"
runner = CliRunner()
SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "claude-haiku-4-5-20251001"
DAY = datetime(2026, 11, 16, 10, tzinfo=UTC)


def _price(model: str, **tokens: int) -> Decimal:
    return calc_price(Usage(**tokens), model, provider_id="anthropic",
                      genai_request_timestamp=DAY).total_price  # fmt: skip


def _step(t: Transcript, n: int, used: dict, model: str = SONNET) -> None:
    """One response that reads a file, and the file's text back."""
    t.response(f"m{n}", [tool_use(f"t{n}", "Read", file_path=f"{n}.py")], used, model=model)
    t.results([tool_result(f"t{n}", "x" * 100)])


def _planted(tmp_path: Path) -> Path:
    """One session whose main thread breaks its prefix once for each cause the records
    can show, and keeps it across a pause an hour-long write outlives."""
    t = Transcript("s-cache")
    t.prompt("start")
    _step(t, 1, usage(3, 0, 10_000, 5, hour=False))
    _step(t, 2, usage(3, 10_000, 200, 5, hour=False))
    t.second += 600  # ten minutes: the 5-minute cache is gone
    _step(t, 3, usage(3, 0, 10_300, 5, hour=False))
    _step(t, 4, usage(3, 0, 10_400, 5, hour=False), model=HAIKU)  # another model's cache
    # the same model, soon after, yet most of the prefix not read
    _step(t, 5, usage(3, 2_000, 8_500, 5, hour=False), model=HAIKU)
    t.add(t._line("system", subtype="compact_boundary", content="Conversation compacted",
                  compactMetadata={"trigger": "manual", "preTokens": 10_500}))  # fmt: skip
    t.add(t._line("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                  message={"role": "user", "content": "This session is continued: s"}))  # fmt: skip
    t.prompt("next")
    _step(t, 6, usage(3, 0, 12_000, 5), model=HAIKU)  # written for an hour
    t.second += 1_200  # twenty minutes: an hour-long write outlives it
    t.response("m7", [{"type": "text", "text": "done"}], usage(3, 12_000, 100, 5), model=HAIKU)
    t.write(tmp_path)
    db = tmp_path / "c.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    return db


def test_each_planted_cause_is_found_and_priced_as_genai_prices_prices_it(tmp_path):
    db = _planted(tmp_path)
    calls = api.cache(db, by="call")
    rows = calls.sort("call_index").rows(named=True)
    assert len(rows) == 7
    assert [r["cause"] for r in rows] == [None, None, "ttl", "model", "unexplained",
                                         "compaction", None]  # fmt: skip
    assert [r["cause_source"] for r in rows] == [None, None, "inferred", "measured", None,
                                                "measured", None]  # fmt: skip
    # the prefix each call could read: what its previous call read and wrote (never more
    # than its own prompt), the first call none
    assert [r["prefix_tokens"] for r in rows] == [None, 10_003 - 3, 10_200, 10_300, 10_400,
                                                 10_500, 12_000]  # fmt: skip
    assert [r["break_tokens"] for r in rows] == [None, None, 10_200, 10_300, 8_400, 10_500,
                                                None]  # fmt: skip
    # the split adds up to the prompt, and the hit rate is reads over it
    for r in rows:
        assert r["cache_read_tokens"] + r["cache_write_tokens"] + r["uncached_tokens"] == (
            r["prompt_tokens"])
        assert r["hit_rate"] == pytest.approx(r["cache_read_tokens"] / r["prompt_tokens"])
    # a break's tokens were written instead of read: the oracle prices both (a 1-hour
    # write, which genai-prices does not price, at twice the input price: Anthropic's)
    for r in rows:
        if r["break_tokens"] is None:
            assert r["break_cost_usd_low"] is None
            continue
        n, model = r["break_tokens"], r["model"]
        written = (2 * _price(model, input_tokens=n) if r["cache_write_1h_tokens"]
                   else _price(model, input_tokens=n, cache_write_tokens=n))  # fmt: skip
        expected = written - _price(model, input_tokens=n, cache_read_tokens=n)
        assert r["break_cost_usd_low"] == r["break_cost_usd_high"] == expected
    # the reads saved their tokens at the input price less the read price
    for r in rows:
        n, model = r["cache_read_tokens"], r["model"]
        expected = _price(model, input_tokens=n) - _price(model, input_tokens=n,
                                                          cache_read_tokens=n)  # fmt: skip
        assert r["saved_usd"] == expected


def test_the_groups_sum_their_calls(tmp_path):
    db = _planted(tmp_path)
    calls = api.cache(db, by="call")
    session = api.cache(db, by="session").row(0, named=True)
    assert session["calls"] == calls.height == 7
    for column in ("prompt_tokens", "cache_read_tokens", "cache_write_tokens",
                   "uncached_tokens", "saved_usd", "break_tokens", "break_cost_usd_low"):
        assert session[column] == calls[column].sum(), column
    assert session["breaks"] == 4
    assert session["break_causes"] == "compaction 1, model 1, ttl 1, unexplained 1"
    premium = sum(calls["write_premium_usd_low"].to_list(), Decimal(0))
    assert session["net_saved_usd_low"] == session["net_saved_usd_high"] == (
        session["saved_usd"] - premium)
    days = api.cache(db, by="day")
    assert days["day"].to_list() == [DAY.date()] and days["breaks"].item() == 4
    agents = api.cache(db, by="agent")
    assert agents["agent"].to_list() == ["main"]


def test_stricter_rules_find_fewer_breaks_and_bad_rules_are_named(tmp_path):
    db = _planted(tmp_path)
    assert api.cache(db, by="session", min_break_tokens=9_000)["breaks"].item() == 3
    assert api.cache(db, by="session", min_break_share=0.9)["breaks"].item() == 3
    with pytest.raises(ForensicsError, match="share from 0 to 1"):
        api.cache(db, min_break_share=2)
    with pytest.raises(ForensicsError, match="cannot group the cache by 'model'"):
        api.cache(db, by="model")


def _adk_claude(tmp_path: Path) -> Path:
    """An ADK session of a Claude model (its writes unknown: ADK stores none) whose
    third call comes after a pause and reads nothing."""
    start = 1_794_823_200.0  # 2026-11-16 10:00 UTC
    events = [{"id": "u0", "invocation_id": "inv1", "author": "user", "timestamp": start,
               "content": {"role": "user", "parts": [{"text": "hello"}]}}]  # fmt: skip
    usages = [(20_000, 0, 1), (20_100, 20_000, 2), (20_200, 0, 900)]
    for i, (prompt, cached, offset) in enumerate(usages, 1):
        events.append({
            "id": f"e{i}", "invocation_id": "inv1", "author": "agent",
            "timestamp": start + offset,
            "content": {"role": "model", "parts": [{"text": f"answer {i}"}]},
            "usage_metadata": {"prompt_token_count": prompt, "cached_content_token_count": cached,
                               "candidates_token_count": 5},
            "model_version": SONNET,
        })  # fmt: skip
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"id": "adk-1", "app_name": "app", "user_id": "u",
                                "events": events}))  # fmt: skip
    db = tmp_path / "a.duckdb"
    api.ingest_json(db, [path], adk_version="2.13.0")
    return db


def test_unknown_writes_give_a_range_with_genai_prices_bounds(tmp_path):
    db = _adk_claude(tmp_path)
    rows = api.cache(db, by="call").sort("call_index").rows(named=True)
    assert [r["cache_write_tokens"] for r in rows] == [None, None, None]
    assert [r["uncached_tokens"] for r in rows] == [None, None, None]
    broke = rows[2]
    assert (broke["cause"], broke["break_tokens"]) == ("ttl", 20_100)
    n = 20_100
    read = _price(SONNET, input_tokens=n, cache_read_tokens=n)
    assert broke["break_cost_usd_low"] == _price(SONNET, input_tokens=n) - read
    assert broke["break_cost_usd_high"] == (
        _price(SONNET, input_tokens=n, cache_write_tokens=n) - read)
    session = api.cache(db).row(0, named=True)
    assert session["cache_write_tokens"] is None
    assert session["net_saved_usd_low"] < session["net_saved_usd_high"] == session["saved_usd"]


def test_the_command_shows_the_breaks_of_a_session_and_totals_them(tmp_path):
    db = _planted(tmp_path)
    out = runner.invoke(app, ["cache", "s-cache", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "ttl" in out.output and "unexplained" in out.output and "total (7 rows)" in out.output
    data = json.loads(runner.invoke(app, ["cache", "--by", "day", "--db", str(db), "-f",
                                          "json"]).stdout)  # fmt: skip
    assert data[0]["breaks"] == 4 and data[0]["provenance"]["breaks"] == "inferred"
    csv = runner.invoke(app, ["cache", "--by", "call", "--db", str(db), "-f", "csv"]).stdout
    assert csv.splitlines()[0].startswith("app_name,user_id,session_id,call_id")
    bad = runner.invoke(app, ["cache", "--min-break-share", "1.5", "--db", str(db)])
    assert bad.exit_code != 0 and "share from 0 to 1" in bad.output


def test_the_bundled_sample_splits_every_prompt_as_its_usage_does(tmp_path):
    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [ROOT / "sample_data" / "claude_code"])
    calls = api.cache(db, by="call")
    con = duckdb.connect(str(db), read_only=True)
    try:
        usage_rows = con.execute(
            "SELECT event_id, input_tokens + cache_read_tokens + cache_creation_tokens, "
            "cache_read_tokens, cache_creation_tokens, cache_write_1h_tokens "
            "FROM transcript_events WHERE kind = 'call' AND model <> '<synthetic>'"
        ).fetchall()
    finally:
        con.close()
    expected = {r[0]: r[1:] for r in usage_rows}
    got = {r[0]: r[1:] for r in calls.select("call_id", "prompt_tokens", "cache_read_tokens",
                                             "cache_write_tokens", "cache_write_1h_tokens").rows()}
    assert got == expected
    # the sample's one pause past the cache's life is its one break
    broke = calls.filter(pl.col("is_break"))
    assert broke.select("cause", "cause_source").rows() == [("ttl", "inferred")]
    row = broke.row(0, named=True)
    n, model = row["break_tokens"], row["model"]
    assert row["break_cost_usd_low"] == (_price(model, input_tokens=n, cache_write_tokens=n)
                                         - _price(model, input_tokens=n, cache_read_tokens=n))
    assert (n, row["gap_s"] > 300) == (18_748, True)  # docs/cache.md and the README say so


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_real_transcripts_every_break_has_a_cause_and_the_split_adds_up(tmp_path):
    db = tmp_path / "real.duckdb"
    api.ingest_claude_code(db, [REAL])
    calls = api.cache(db, by="call")
    assert calls.height > 0
    split = calls["cache_read_tokens"] + calls["cache_write_tokens"] + calls["uncached_tokens"]
    assert (split == calls["prompt_tokens"]).all()
    broke = calls.filter(pl.col("is_break"))
    assert broke["cause"].null_count() == 0
    assert set(broke["cause"]) <= {"compaction", "model", "ttl", "unexplained"}
    sessions = api.cache(db, by="session")
    assert sessions["breaks"].sum() == broke.height


def test_the_kept_rows_are_those_a_query_computes(tmp_path, monkeypatch):
    """Where the facts are brought up to date, each call's cache row is kept with the
    priced calls (default rules); a command reads them. They equal the rows computed
    per query (forced here: as if the kept prices were stale)."""
    from forensics.cost import billed

    db = _planted(tmp_path)
    kept = {by: api.cache(db, by=by) for by in ("call", "session", "turn", "day", "agent")}
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM cached_calls").fetchone() == (7,)
    finally:
        con.close()
    monkeypatch.setattr(billed.Costing, "stored", property(lambda self: False))
    for by, frame in kept.items():
        assert api.cache(db, by=by).equals(frame), by


def test_a_time_range_keeps_each_threads_previous_call_before_it(tmp_path):
    db = _planted(tmp_path)
    whole = api.cache(db, by="call").sort("call_index")
    ttl = whole.filter(pl.col("cause") == "ttl").row(0, named=True)
    since = ttl["started_at"].strftime("%Y-%m-%dT%H:%M:%S")
    ranged = api.cache(db, api.Selection(since=ttl["started_at"].timestamp()), by="call")
    assert ranged["call_id"].to_list() == whole.filter(
        pl.col("started_at") >= ttl["started_at"])["call_id"].to_list()
    first = ranged.sort("call_index").row(0, named=True)
    assert first == ttl  # its previous call, before the range, still judged it
    out = runner.invoke(app, ["cache", "--by", "day", "--since", since, "--db", str(db),
                              "-f", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)[0]["breaks"] == 4


def test_writes_no_later_call_read_are_counted_and_priced(tmp_path):
    """m2's writes outlived by a 10-minute pause, m3's by another model, m4's and m5's
    read in part or not at all by the next call, m7's by no call; m1's and m6's (an
    hour's, 20 minutes before the next call) read whole."""
    db = _planted(tmp_path)
    rows = api.cache(db, by="call").sort("call_index").rows(named=True)
    assert [r["unread_write_tokens"] for r in rows] == [0, 200, 10_300, 8_400, 8_500, 0, 100]
    for r in rows:
        n, model = r["unread_write_tokens"], r["model"]
        if r["cache_write_1h_tokens"]:  # an hour's write: twice the input price (Anthropic)
            expected = _price(model, input_tokens=n)
        else:
            expected = _price(model, input_tokens=n, cache_write_tokens=n) - _price(
                model, input_tokens=n)
        assert r["unread_write_usd_low"] == r["unread_write_usd_high"] == expected
    session = api.cache(db, by="session").row(0, named=True)
    assert session["unread_write_tokens"] == 27_500
    assert session["unread_write_usd_low"] == sum(
        (r["unread_write_usd_low"] for r in rows), Decimal(0))
    # ADK stores no writes: none to count
    (tmp_path / "adk").mkdir()
    adk = api.cache(_adk_claude(tmp_path / "adk"), by="session").row(0, named=True)
    assert adk["unread_write_tokens"] is None and adk["unread_write_usd_low"] is None


def test_a_claude_code_compaction_summarizer_reads_the_main_threads_prefix(tmp_path):
    """The summarizer (agent-acompact-*) is sent the main conversation: it continues the
    main thread, reading what its last call wrote; the main thread's next call follows it."""
    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [ROOT / "sample_data" / "claude_code"])
    calls = api.cache(db, api.Selection(session="bc8960a9-23b8-41e9-b924-56de3eb13b90"),
                      by="call").sort("call_index")  # fmt: skip
    ids = calls["call_id"].to_list()
    summarizer = calls.filter(pl.col("agent") == "summarizer").row(0, named=True)
    before = calls.row(ids.index(summarizer["call_id"]) - 1, named=True)
    after = calls.row(ids.index(summarizer["call_id"]) + 1, named=True)
    assert summarizer["branch"].startswith("agent-acompact")
    assert (summarizer["previous_call_id"], after["previous_call_id"]) == (
        before["call_id"], summarizer["call_id"])
    assert before["unread_write_tokens"] == 0  # the summarizer read them
    assert not summarizer["is_break"] and not after["is_break"]


def test_the_incident_report_marks_each_break_on_its_chart_and_turn(tmp_path):
    from forensics.reports.incident import build_incident
    from forensics.reports.incident import usd as shown_usd
    from forensics.reports.render import render_incident

    db = _planted(tmp_path)
    context = build_incident(db, "s-cache")
    breaks = api.cache(db, by="call").filter(pl.col("is_break"))
    shown = {t.turn: t.cache_breaks for t in context.turns if t.cache_breaks.text}
    for turn, group in breaks.group_by("turn"):
        money = shown_usd(sum(group["break_cost_usd_low"].to_list(), Decimal(0)))
        causes = ", ".join(sorted(group["cause"].to_list()))
        assert shown[turn[0]].text == f"{group.height} ({causes}): {money}"
        assert shown[turn[0]].provenance == "inferred"
    assert sorted(shown) == sorted(set(breaks["turn"].to_list()))
    low = sum(breaks["break_cost_usd_low"].to_list(), Decimal(0))
    marked = [p.cache_break for chart in context.charts for p in chart.points if p.cache_break]
    assert sorted(marked) == sorted(breaks["cause"].to_list())
    html = render_incident(context)
    assert "✂ cache prefix broke" in html and html.count("✂ ttl") == 1
    assert any("4 cache prefix breaks" in claim for claim in context.evidence["inferred"])
    assert low > 0


@pytest.fixture(scope="module")
def runner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/adk_cache_scenario.py's output: the real Runner's sessions and traces."""
    import os
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("adk") / "run"
    env = {**os.environ, "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN": "1"}
    script = ROOT / "tests" / "adk_cache_scenario.py"
    done = subprocess.run([sys.executable, str(script), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_the_real_adk_runner_s_planted_breaks_are_each_found_with_its_cause(runner_run,
                                                                           tmp_path):
    """tests/adk_cache_scenario.py drives the installed google.adk Runner: a system
    instruction holding the time (moved on), a tool added mid-session, a pause past the
    cache's life, a callback that rewrites the first message; its traces and sessions
    loaded, each break has the cause planted."""
    out = runner_run
    db = tmp_path / "r.duckdb"
    api.ingest_sqlite(db, out / "sessions.db")
    assert api.ingest_traces(db, [out / "trace.otlp.json"]).rows_loaded == 7
    rows = api.cache(db, by="call").sort("call_index").rows(named=True)
    assert [(r["cause"], r["cause_source"]) for r in rows] == [
        (None, None), (None, None), ("system", "traced"), ("tools", "traced"),
        ("ttl", "inferred"), (None, None), ("history", "traced")]  # fmt: skip
    assert rows[2]["cause_detail"].startswith("system instruction differs from character ")
    assert "10:00 UTC" in rows[2]["cause_detail"] and "10:07 UTC" in rows[2]["cause_detail"]
    assert rows[3]["cause_detail"].startswith("tool declarations differ from character ")
    assert "Orders an ite" in rows[3]["cause_detail"]  # the added tool's description
    assert "\n" not in rows[2]["cause_detail"]  # a line break of the instruction: \n
    # the callback's edit of the first message: the request's contents no longer begin
    # with what the previous request sent
    assert rows[6]["cause_detail"] == ("contents rewritten from content 0 part 0: user text "
                                       "of 2 characters before, user text of 13 characters now")
    assert [r["break_tokens"] for r in rows] == [None, None, 20_100, 20_200, 20_400, None,
                                                19_600]  # fmt: skip
    # Gemini: no write rate, writes unknown: the tokens re-sent at the input price
    for r in [*rows[2:5], rows[6]]:
        n = r["break_tokens"]
        when = r["started_at"]
        price = calc_price(Usage(input_tokens=n), r["model"], provider_id="google",
                           genai_request_timestamp=when).total_price  # fmt: skip
        read = calc_price(Usage(input_tokens=n, cache_read_tokens=n), r["model"],
                          provider_id="google", genai_request_timestamp=when).total_price
        assert r["break_cost_usd_low"] == r["break_cost_usd_high"] == price - read


REAL_TRACED = ROOT.parent / "shared" / "real_data" / "adk_traces"


@pytest.mark.skipif(not REAL_TRACED.is_dir(), reason="shared/real_data is absent")
def test_real_adk_sessions_and_their_traces_split_as_their_usage_says(tmp_path):
    """The public ADK session+trace pairs: each call's prompt and cache reads are its
    event's usage (Gemini: the prompt count plus the tool-use prompt), and every break
    has a cause."""
    db = tmp_path / "t.duckdb"
    api.ingest_json(db, sorted(REAL_TRACED.glob("*__session_*.json")))
    api.ingest_traces(db, sorted(REAL_TRACED.glob("*__trace_*.json")))
    calls = api.cache(db, by="call")
    assert calls.height > 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        usage = dict(con.execute(
            "SELECT event_id, [prompt_tokens + coalesce(tool_use_prompt_tokens, 0),"
            " coalesce(cached_tokens, 0)] FROM events WHERE prompt_tokens IS NOT NULL"
        ).fetchall())  # fmt: skip
    finally:
        con.close()
    for r in calls.iter_rows(named=True):
        assert [r["prompt_tokens"], r["cache_read_tokens"]] == usage[r["call_id"]]
    broke = calls.filter(pl.col("is_break"))
    assert broke["cause"].null_count() == 0
    assert set(broke["cause"]) <= {"compaction", "model", "system", "tools", "history", "ttl",
                                   "unexplained"}  # fmt: skip


def test_traces_loaded_before_their_texts_were_kept_gain_them_when_loaded_again(runner_run,
                                                                                tmp_path):
    """A store whose traced requests predate schema 11 (no digests: as if an older
    release loaded them) compares nothing; the same traces loaded again complete them,
    and the causes follow."""
    db = tmp_path / "r.duckdb"
    api.ingest_sqlite(db, runner_run / "sessions.db")
    api.ingest_traces(db, [runner_run / "trace.otlp.json"])
    con = duckdb.connect(str(db))
    try:
        con.execute("UPDATE traced_calls SET system_sha256 = NULL, system_head = NULL,"
                    " tools_sha256 = NULL, tools_head = NULL")  # fmt: skip
    finally:
        con.close()
    api.analyze(db, every=True)
    causes = api.cache(db, by="call").sort("call_index")["cause"].to_list()
    assert "system" not in causes and "tools" not in causes
    again = api.ingest_traces(db, [runner_run / "trace.otlp.json"])
    assert (again.rows_loaded, again.notes["traced_requests_completed"]) == (0, 7)
    con = duckdb.connect(str(db), read_only=True)
    try:  # the requests stay the first ingest's
        assert con.execute("SELECT DISTINCT ingest_id FROM traced_calls").fetchall() == [
            (2,)]
    finally:
        con.close()
    causes = api.cache(db, by="call").sort("call_index")["cause"].to_list()
    assert causes == [None, None, "system", "tools", "ttl", None, "history"]


def test_a_read_keeps_an_hour_long_write_alive_and_no_shortfall_is_no_break(tmp_path):
    """The prefix a call reads lives as long as the thread's last write: written for an
    hour, read whole, then ten minutes idle is within its life (not ttl). And with no
    thresholds at all, a call that read its whole prefix is still no break."""
    t = Transcript("s-hour")
    t.prompt("start")
    _step(t, 1, usage(3, 0, 10_000, 5))  # written for an hour
    _step(t, 2, usage(3, 10_000, 0, 5))  # read whole, nothing written
    t.second += 600
    _step(t, 3, usage(3, 0, 10_100, 5))  # read nothing
    t.write(tmp_path)
    db = tmp_path / "h.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    rows = api.cache(db, by="call").sort("call_index").rows(named=True)
    assert [r["cause"] for r in rows] == [None, None, "unexplained"]
    planted = _planted(tmp_path / "p")
    loose = api.cache(planted, by="session", min_break_tokens=0, min_break_share=0)
    assert loose["breaks"].item() == 4


def test_a_guard_placed_in_the_transcript_pays_for_the_prefix_it_rewrites(tmp_path):
    """whatif --placement transcript: the result goes out whole at its first send and cut
    from its second; that request re-sends, at its writes' rate instead of the read rate,
    what it read beyond where the result begins (the window of the call that asked for
    it). At the tool boundary none of that: the cut from the first send on."""
    big = json.dumps({"orders": [{"id": i, "notes": "x" * 900} for i in range(40)]})
    t = Transcript("s-place")
    t.prompt("look at the orders")
    t.response("m1", [tool_use("t1", "Read", file_path="orders.json")], usage(3, 0, 10_000, 5))
    t.results([tool_result("t1", big)])
    _step(t, 2, usage(3, 10_000, 12_000, 5))
    _step(t, 3, usage(3, 22_000, 300, 5))
    _step(t, 4, usage(3, 22_300, 200, 5))
    t.write(tmp_path)
    db = tmp_path / "p.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    rows = {}
    for placement in ("boundary", "transcript"):
        frame = api.whatif(db, by="call", token_cap=2_000, placement=placement)
        rows[placement] = frame.sort("call_id").rows(named=True)
    boundary, transcript = rows["boundary"], rows["transcript"]
    assert [r["call_id"] for r in boundary] == ["m1", "m2", "m3", "m4"]
    assert [r["results_cut"] for r in boundary] == [0, 1, 1, 1]
    assert [r["results_cut"] for r in transcript] == [0, 0, 1, 1]
    assert [r["invalidated_tokens"] for r in boundary] == [0, 0, 0, 0]
    # m3 read 22,000 tokens; the result begins after m1's window of 10,003; of what follows
    # it, the cut took out what the boundary's m3 sends no more
    cut = boundary[2]["occupancy"] - boundary[2]["occupancy_counterfactual"]
    n = 22_000 - 10_003 - cut
    assert cut > 0 and n > 0
    assert [r["invalidated_tokens"] for r in transcript] == [0, 0, n, 0]
    # the first send is whole: nothing saved there
    assert transcript[1]["counterfactual_usd_low"] == transcript[1]["cost_usd_low"]
    assert boundary[1]["counterfactual_usd_low"] < boundary[1]["cost_usd_low"]
    # the rewrite: the same cut as at the boundary, plus the re-sent prefix at the
    # one-hour write rate (twice the input price: Anthropic's) instead of the read rate
    model = SONNET
    resent = 2 * _price(model, input_tokens=n) - _price(model, input_tokens=n,
                                                       cache_read_tokens=n)  # fmt: skip
    for bound in ("low", "high"):
        key = f"counterfactual_usd_{bound}"
        assert transcript[2][key] - boundary[2][key] == resent
        assert transcript[3][key] == boundary[3][key]
    assert "in the transcript after the first send" in transcript[0]["guard"]
    with pytest.raises(ForensicsError, match="is not a placement"):
        api.whatif(db, token_cap=2_000, placement="later")
    out = runner.invoke(app, ["whatif", "--token-cap", "2000", "--placement", "transcript",
                              "--by", "session", "--db", str(db), "-f", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)[0]["invalidated_tokens"] == n
    # docs/whatif.md's figures: the bundled sample's session whose results the cap cuts
    sample = tmp_path / "cc.duckdb"
    api.ingest_claude_code(sample, [ROOT / "sample_data" / "claude_code"])
    picked = api.Selection(session="e44e7cd1-38ef-43bc-9457-f3886f2aec8a")
    at = {p: api.whatif(sample, picked, by="session", token_cap=2_000, placement=p).row(
        0, named=True) for p in ("boundary", "transcript")}  # fmt: skip
    assert at["transcript"]["invalidated_tokens"] == 3_791 + 1_394
    assert round(at["boundary"]["saving_usd_low"], 2) == Decimal("0.95")
    assert round(at["transcript"]["saving_usd_low"], 2) == Decimal("0.29")


def test_every_call_is_read_a_run_of_sessions_at_a_time_the_same_rows(tmp_path, monkeypatch):
    """cache --by call of many sessions reads them in runs (never all at once): the runs
    one after the other are the frame read whole, kept rows or computed per query."""
    from forensics.cost import billed

    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [ROOT / "sample_data" / "claude_code"])
    whole = api.cache(db, by="call")
    monkeypatch.setattr(billed, "CACHE_RUN_EVENTS", 20)  # a run of a session or two
    runs = list(api.cache_in_runs(db))
    assert len(runs) > 2 and pl.concat(runs).equals(whole)
    monkeypatch.setattr(billed.Costing, "stored", property(lambda self: False))
    assert pl.concat(list(api.cache_in_runs(db))).equals(whole)
    out = runner.invoke(app, ["cache", "--by", "call", "--db", str(db), "-f", "csv"])
    assert out.exit_code == 0 and len(out.stdout.splitlines()) == whole.height + 1


def test_a_slow_command_on_stale_kept_prices_says_so(tmp_path, monkeypatch):
    """Kept prices out of date (another release priced them: the stamp differs) make every
    cost and cache command price all the calls again; a command that was slow says why
    and what keeps them again. Given its own prices file, or on current ones, it does
    not."""
    from forensics.cli import cost as cost_cli

    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [ROOT / "sample_data" / "claude_code"])
    monkeypatch.setattr(cost_cli, "SLOW_S", 0.0)  # every command counts as slow here
    assert api.priced_calls_current(db)
    quiet = runner.invoke(app, ["cost", "--db", str(db)])
    assert quiet.exit_code == 0 and "out of date" not in quiet.stderr
    con = duckdb.connect(str(db))
    try:
        con.execute("UPDATE store_meta SET value = 'another release' WHERE key = 'priced_calls'")
    finally:
        con.close()
    assert not api.priced_calls_current(db)
    for args in (["cost"], ["cost", "--share"], ["cache"], ["cache", "--by", "call", "-f", "csv"]):
        out = runner.invoke(app, [*args, "--db", str(db)])
        assert out.exit_code == 0, out.output
        assert "keeps priced are out of date" in out.stderr, args
        assert "forensics analyze" in out.stderr
    own = runner.invoke(app, ["cost", "--db", str(db), "--prices",
                              str(ROOT / "sample_data" / "prices.toml")])  # fmt: skip
    assert "out of date" not in own.stderr
    api.analyze(db)
    assert api.priced_calls_current(db)
    assert "out of date" not in runner.invoke(app, ["cache", "--db", str(db)]).stderr
