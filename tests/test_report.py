"""The incident report: figures from the analyses, autoescaped, self-contained."""

from __future__ import annotations

import json
import re
import time
from dataclasses import fields
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.reports import incident
from forensics.reports.incident import IncidentContext, build_incident, n, usd
from forensics.reports.render import render_incident
from forensics.resources import resource_dir

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PRICES = ROOT / "sample_data" / "prices.toml"
runner = CliRunner()


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("report") / "f.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    return db


def test_every_context_field_is_used_by_the_template():
    template = (resource_dir("reports") / "incident.html.j2").read_text()
    for field in fields(IncidentContext):
        assert f"ctx.{field.name}" in template, field.name


def test_headline_and_tables_carry_the_analyses_figures(sample_db):
    context = build_incident(sample_db, "incident", prices=SAMPLE_PRICES)
    html = render_incident(context)
    page = parse(html)
    text = " ".join(page.text)
    growth = api.growth(sample_db, "incident").row(0, named=True)
    for figure in ("occupancy_before", "occupancy_after", "resent_tokens_in_turn", "rows",
                   "tokens_per_row", "resent_calls_in_turn"):
        assert n(growth[figure]) in context.headline[1], figure
    turns = api.turns(sample_db, "incident")
    failed = turns.filter(turns["error_code"].is_not_null()).row(0, named=True)
    assert context.headline[0].startswith(f"Turn {failed['turn']} failed with "
                                          f"{failed['error_code']}")
    assert failed["error_message"] in text
    for value in turns["cumulative_input_measured"].drop_nulls():
        assert n(value) in text
    assert len(context.turns) == turns.height
    svgs = [t for t, _ in page.tags if t == "svg"]
    assert len(svgs) == len(context.charts) == turns.height
    # measured and estimated figures are told apart in the markup
    classes = {a.get("class") for t, a in page.tags if t == "span"}
    assert {"fig measured", "fig estimated", "fig inferred"} <= classes
    assert set(context.evidence) == {"measured", "priced", "estimated", "inferred", "open"}
    assert all(context.evidence[k] for k in context.evidence)
    # money: each turn's cost as `forensics cost --by turn` computes it, the failed one in
    # the headline; the prices named in the method
    costs = api.cost(sample_db, "incident", by="turn", prices=SAMPLE_PRICES)
    for row, cost in zip(context.turns, costs.iter_rows(named=True), strict=True):
        assert row.cost.text == usd(cost["cost_usd_low"], cost["cost_usd_high"])
        assert row.cost.text in text and row.cost.provenance == "priced"
    failed_cost = costs.filter(costs["turn"] == failed["turn"]).row(0, named=True)
    assert f"The turn cost {usd(failed_cost['cost_usd_low'])}" in context.headline[0]
    assert "$" in context.headline[1] and "$" in context.growth[0].resent_cost.text
    assert context.method is not None and "genai-prices 0.2.3" in context.method.prices


def test_a_report_without_a_price_says_so_and_shows_no_money(sample_db):
    context = build_incident(sample_db, "incident")  # the scripted model: no list price
    assert all(t.cost.text == "—" for t in context.turns)
    assert "$" not in " ".join(context.headline)
    assert any("no price for their model" in claim for claim in context.evidence["open"])


def test_the_page_asks_for_nothing_outside_itself(sample_db):
    html = render_incident(build_incident(sample_db, "incident"))
    page = parse(html)
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "img", "iframe", "object"), tag
        for name in ("src", "href"):
            assert not attrs.get(name), (tag, attrs)
    # no CSS fetch either; namespace names (xmlns="http://www.w3.org/...") are not requests
    assert not re.search(r"url\((?!#)", html) and "@import" not in html  # url(#id): in page
    assert not re.search(r"https?://(?!www\.w3\.org/)", html)


def _hostile_session(path: Path) -> None:
    hostile = '<script>alert("pwned")</script>"><img src=x onerror=alert(1)>'
    events = [
        {"id": "e1", "author": "user", "timestamp": 1.0, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"text": "hi " + hostile}]}},
        {"id": "e2", "author": "agent<b>", "timestamp": 2.0, "invocation_id": "i1",
         "usage_metadata": {"prompt_token_count": 50},
         "content": {"role": "model", "parts": [{"function_call": {
             "id": "c1", "name": "lookup<script>", "args": {"q": hostile}}}]}},
        {"id": "e3", "author": "agent<b>", "timestamp": 3.0, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"function_response": {
             "id": "c1", "name": "lookup<script>",
             "response": {"data": [{"note": hostile}] * 20}}}]}},
        {"id": "e4", "author": "agent<b>", "timestamp": 4.0, "invocation_id": "i1",
         "usage_metadata": {"prompt_token_count": 900},
         "content": {"role": "model", "parts": [{"text": hostile}]}},
        {"id": "e5", "author": "agent<b>", "timestamp": 5.0, "invocation_id": "i2",
         "model_version": "m", "error_code": '"><img src=x onerror=alert(2)>',
         "error_message": hostile},
    ]
    path.write_text(json.dumps({"id": "evil", "app_name": "a<i>", "user_id": "u",
                                "events": events}))


def test_hostile_content_renders_as_text(tmp_path):
    _hostile_session(tmp_path / "evil.json")
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [tmp_path / "evil.json"])
    html = render_incident(build_incident(db, "evil", show_content=True))
    page = parse(html)
    assert not [t for t, _ in page.tags if t in ("script", "img", "b", "i")]
    assert not any(k.startswith("on") for _, a in page.tags for k in a)
    text = " ".join(page.text)
    assert '<script>alert("pwned")</script>' in text  # shown, as text
    assert "&lt;script&gt;" in html
    assert "lookup<script>" in text


def test_cli_writes_the_report_and_prints_its_path(sample_db, tmp_path):
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", "incident", "incident", "--out", str(out),
                                 "--db", str(sample_db)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    assert out.stat().st_size > 20_000  # (demo's paths: the test below)


def test_no_content_unless_asked(sample_db):
    html = render_incident(build_incident(sample_db, "incident"))
    assert "<pre>{" not in html  # tool result payloads are not in the page
    html = render_incident(build_incident(sample_db, "incident", show_content=True))
    assert html.count("<pre>") >= 2


def test_formatting_is_done_in_code():
    assert n(1234567) == "1,234,567"
    assert n(None) == "—"
    assert incident.seconds(2.029) == "2.03 s"


def test_method_names_sources_and_filters_without_passwords(tmp_path):
    from test_store import make_sqlite_service_db

    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, make_sqlite_service_db(tmp_path / "adk.db"),
                      api.Selection(session="s0"))
    context = build_incident(db, "s0")
    (source,) = context.method.sources
    # the file by its name: the page is shared (issue 31); `ingests` keeps the full path
    assert source.startswith("adk-sqlite:adk.db (session=s0; ingest 1, 6 ")
    assert "chars per token" in context.method.ratio


def test_a_session_without_calls_still_reports(tmp_path, sample_db):
    (tmp_path / "quiet.json").write_text(json.dumps({"id": "quiet", "app_name": "a",
                                                      "user_id": "u", "events": [
        {"id": "e1", "author": "user", "timestamp": 1.0, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"text": "hello?"}]}}]}))
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [tmp_path / "quiet.json"])
    context = build_incident(db, "quiet")
    assert context.charts == [] and context.failure is None
    assert "No model calls to chart." in render_incident(context)
    # an empty frame has the same columns as a full one
    assert api.calls(db, "quiet").is_empty()
    assert api.calls(db, "quiet").columns == api.calls(sample_db, "incident").columns


def test_every_turn_is_charted_and_one_call_turns_together(sample_db):
    """No cap on the charts: each turn of several calls has its own, the turns of one
    call share one (a bar each), and a turn of 121 calls keeps every bar with labels
    that do not run into each other. Drawn twice, a chart is the same bytes."""
    import polars as pl

    from forensics.reports.charts import chart_svg
    from forensics.reports.incident import _charts

    calls = api.calls(sample_db, "incident")  # turn 1: 5 calls, turn 2: 2
    compaction = api.compaction(sample_db, "incident")
    pieces = []
    for t in range(1, 41):
        rows = calls.head(1) if t % 3 == 0 else calls.head(2)
        pieces.append(rows.with_columns(pl.lit(t, calls.schema["turn"]).alias("turn")))
    pieces.append(pl.concat([calls.head(1)] * 121).with_columns(
        pl.lit(41, calls.schema["turn"]).alias("turn")))  # fmt: skip
    long = pl.concat(pieces)
    charts, note = _charts(long, compaction, None, "s1")
    alone = [c.turn for c in charts if not c.turns]
    together = [c for c in charts if c.turns]
    assert alone == [t for t in range(1, 42) if t % 3]  # in order, with the long turn
    assert len(together) == 1 and together[0].turns == list(range(3, 41, 3))
    assert [p.label for p in together[0].points] == [str(t) for t in range(3, 41, 3)]
    assert sorted(alone + together[0].turns) == list(range(1, 42))  # every turn
    assert note is not None and "The 13 turns with one model call are charted together" in note
    assert "--turn N" in note
    one, = _charts(long, compaction, 3, "s1")[0]  # asked for: a one-call turn alone
    assert (one.turn, one.turns, len(one.points)) == (3, [], 1)
    longest = charts[-1]
    assert longest.turn == 41 and len(longest.points) == 121
    svg = chart_svg(longest)
    assert svg == chart_svg(longest)
    assert svg.count("<rect") >= 121  # every call's bar
    tick = r'<text x="([\d.]+)" y="[\d.]+" font-size="10.5" fill="#222" text-anchor="middle">\d+'
    labels = [float(x) for x in re.findall(tick, svg)]
    gaps = [b - a for a, b in zip(labels, labels[1:], strict=False)]
    assert 5 <= len(labels) < 121 and min(gaps) >= 18  # each label about 13 px wide
    grouped = chart_svg(together[0])
    assert "<polyline" not in grouped and "cumulative input" not in grouped  # = its window


def test_chart_axes_tick_round_numbers_that_read_apart():
    from forensics.reports.svg import decimals, ticks

    assert ticks(0) == [0, 1] and ticks(3, integer=True) == [0, 1, 2, 3]
    assert ticks(1_150_000) == [i * 200_000 for i in range(7)]  # at most 6 intervals
    assert ticks(0.034) == [0, 0.01, 0.02, 0.03, 0.04]
    assert ticks(7, 6, integer=True) == [0, 2, 4, 6, 8]  # never two ticks that print alike
    assert [decimals(s) for s in (0.01, 0.025, 2.5, 1000)] == [2, 3, 1, 0]


def test_a_turn_cost_with_unpriced_calls_says_so_and_is_not_marked_priced():
    from decimal import Decimal

    from forensics.reports.incident import _cost_cell

    row = {"cost_usd_low": Decimal("0.00065"), "cost_usd_high": Decimal("0.00065"),
           "cost_source": "mixed", "priced_calls": 2, "unknown_calls": 1,
           "estimated_calls": 0, "inferred_calls": 0}  # fmt: skip
    cell = _cost_cell(row)
    assert cell.text == "$0.000650 + 1 unpriced" and cell.provenance == "estimated"
    assert _cost_cell({**row, "unknown_calls": 0}).provenance == "priced"


def test_the_words_agree_with_their_counts(sample_db):
    """Issue 33, item 10: "1 session", "total (1 row)", no "session session_...", and a
    figure not known is a plain dash, never "≈ —"."""
    from forensics.reports.incident import Cell, _title
    from forensics.reports.render import environment
    from forensics.words import counted

    assert [counted(1, "session"), counted(2, "session"), counted(1_000, "row")] == [
        "1 session", "2 sessions", "1,000 rows"]  # fmt: skip
    assert _title("session_01ab") == "Incident report: session_01ab"
    assert _title("incident") == "Incident report: session incident"
    fig = environment().get_template("figures.j2").module.fig  # both pages' macro
    assert 'class="fig label"' in str(fig(Cell("—", "estimated")))
    assert 'class="fig estimated"' in str(fig(Cell("12", "estimated")))
    result = runner.invoke(app, ["failures", "--by", "agent", "--db", str(sample_db)])
    assert "total (1 row)" in result.stdout, result.output


def test_commands_in_sentences_are_code_and_a_cap_that_cuts_nothing_is_one_line(sample_db):
    """Issue 33, item 7: the tool's sentences name commands in backticks; the page sets
    them as code, never as literal backticks (text from data is escaped first, so a
    backtick there makes code of escaped text only). A what-if cap that leaves the
    top result as it is gets one line, not a box of "N → N"."""
    page = render_incident(build_incident(sample_db, "incident", whatif_cap=10_000_000))
    assert "`" not in page.replace("<code>", "").split("<body", 1)[1]
    assert '<div class="whatif"' not in page
    line = re.search(r'<p class="legend" id="whatif">(.*?)</p>', page, re.S).group(1)
    assert "changes nothing here" in line and "<code>forensics whatif --token-cap N</code>" in line
    boxed = render_incident(build_incident(sample_db, "incident"))  # 16,000: it cuts
    assert '<div class="whatif" id="whatif">' in boxed
    from forensics.reports.render import isolated, prose

    assert str(prose("run `x<y>` now")) == "<bdi>run <code>x&lt;y&gt;</code> now</bdi>"
    assert str(isolated("an id `a`")) == "<bdi>an id `a`</bdi>"  # text from data: as it is


def test_a_claude_code_report_speaks_its_family_s_words_and_reads_its_error(tmp_path):
    """Issue 33, item 4: the bundled Claude Code incident failed with
    invalid_request_error, "prompt is too long: 200289 tokens > 200000 maximum": the
    headline and the evidence say the window caused it (they said "the error does not
    say so"), and no ADK wording (prompt_token_count, `ingest adk-trace`) is left."""
    import html as html_module

    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [ROOT / "sample_data" / "claude_code"])
    failed = api.context_failures(db, api.Selection(family="claude-code"))
    context = build_incident(db, failed["session_id"][0])
    assert context.headline[0].startswith(
        "Turn 2 failed with invalid_request_error (the request did not fit: 200,289 tokens "
        "> 200,000)")  # fmt: skip
    said = " ".join(line for lines in context.evidence.values() for line in lines)
    assert "the error says so (the request did not fit: 200,289 tokens > 200,000)" in said
    assert "does not say so" not in said
    page = html_module.unescape(re.sub(r"<[^>]+>", " ", render_incident(context)))
    for adk_word in ("prompt_token_count", "adk-trace", "ADK", "function response"):
        assert adk_word not in page, adk_word
    assert "the transcript recorded with each response" in page


def test_money_has_one_rule_on_both_pages():
    """Issue 31, item 3: a dollar or more in cents, less to three significant digits,
    a true zero as $0, below $0.0001 said so; never $0.0108 beside $0.007850."""
    from decimal import Decimal

    from forensics.reports.incident import usd

    shown = [usd(Decimal(v)) for v in ("0.0108", "0.007850", "0", "0.00005", "0.5",
                                       "0.99996", "8465.363296", "-0.0123")]  # fmt: skip
    assert shown == ["$0.0108", "$0.00785", "$0", "< $0.0001", "$0.500", "$1.00",
                     "$8,465.36", "-$0.0123"]  # fmt: skip
    assert usd(Decimal("0.0108"), Decimal("0.02")) == "$0.0108–$0.0200" and usd(None) == "—"


def test_a_shared_page_names_no_path_of_the_writer_s_machine(tmp_path, monkeypatch):
    """Issue 31, item 2: the prices file and the sources are named by their names (or
    relative to where the command ran), not by the writer's virtualenv or home folder;
    the full paths stay in `ingests` and the JSON. (The weekly review's printed
    commands keep the paths they need to run.)"""
    from forensics.reports.render import render_weekly
    from forensics.reports.weekly import build_weekly

    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    monkeypatch.chdir(tmp_path)  # the repository is elsewhere: its paths are not shown
    prices = ROOT / "sample_data" / "prices.toml"
    incident = render_incident(build_incident(db, "incident", prices=prices))
    weekly = build_weekly(db, week_label="2026-W43", prices=prices)
    for row in weekly.sessions.rows:
        row[4] = type(row[4])("")  # the commands: as they must be typed
    review = render_weekly(weekly)
    for page in (incident, review):
        assert str(ROOT) not in page
        assert "prices.toml" in page and "adk-sqlite:adk_v1.db" in incident


def test_times_are_utc_whatever_the_machine_s_zone(sample_db, monkeypatch):
    """The store's times are UTC kept without a zone: the page shows them so on a
    machine in New York too (it showed them four hours late, as if local)."""

    def built(zone: str) -> dict:
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        context = vars(build_incident(sample_db, "incident", prices=SAMPLE_PRICES))
        method = {k: v for k, v in vars(context["method"]).items() if k != "generated_at"}
        return {**context, "generated_at": None, "method": method}

    try:
        in_utc, in_new_york = built("UTC"), built("America/New_York")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert in_utc["period"].startswith("2026-10-22 09:00:01 UTC to 2026-10-22 09:01:22 UTC")
    assert in_new_york == in_utc
    assert incident.when(datetime(2026, 10, 22, 9, 0, 1, tzinfo=UTC)) == "2026-10-22 09:00:01 UTC"


def test_a_report_replaces_a_page_and_nothing_else(sample_db, tmp_path):
    """--out pointed at the store, a price file or any file that is not an HTML page is
    refused before the report is built, the file untouched (it replaced a store and
    exited 0); an earlier report is replaced."""
    store = tmp_path / "s.duckdb"
    store.write_bytes(sample_db.read_bytes())
    prices = tmp_path / "prices.toml"
    prices.write_bytes(SAMPLE_PRICES.read_bytes())
    for target, args in ((store, []), (prices, ["--prices", str(prices)])):
        before = target.read_bytes()
        for command in (["report", "incident", "incident"], ["report", "weekly"]):
            result = runner.invoke(app, [*command, "--db", str(store), "--out", str(target),
                                         *args])  # fmt: skip
            assert result.exit_code == 1, result.output
            assert f"{target} exists and is not an HTML page" in result.output
            assert target.read_bytes() == before
    page = tmp_path / "old.html"
    page.write_text("\ufeff\n<!DOCTYPE html><p>last week</p>")
    result = runner.invoke(app, ["report", "incident", "incident", "--db", str(store), "--out",
                                 str(page)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "last week" not in page.read_text() and page.stat().st_size > 20_000


def test_an_out_ending_in_a_slash_is_a_folder(sample_db, tmp_path, monkeypatch):
    """`--out reports/` is a folder (made when missing, its parent there) for the report's
    own name, never a file named `reports`; a session id is no path in that name; a
    store named with a slash is refused as a usage error, not made a file."""
    monkeypatch.chdir(tmp_path)
    db = str(sample_db)
    result = runner.invoke(app, ["report", "incident", "incident", "--db", db, "--out", "new/"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "new" / "incident-incident.html").stat().st_size > 20_000
    result = runner.invoke(app, ["report", "weekly", "--db", db, "--out", "weeks/"])
    assert result.exit_code == 0, result.output
    assert [p.name for p in (tmp_path / "weeks").iterdir()] == ["review-week.html"]
    for out, said in (("a/b/", "the folder a does not exist"),
                      ("new/incident-incident.html/", "it is a file, not a folder"),
                      ("", "--out '' names no file")):  # fmt: skip
        result = runner.invoke(app, ["report", "incident", "incident", "--db", db, "--out", out])
        assert result.exit_code == 1 and said in result.output, (out, result.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "weeks"]
    for args in (["sessions", "--db", "store/"], ["ingest", "adk-sqlite", db, "--db", "store/"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "'store/' ends in '/'" in result.output, result.output
    result = runner.invoke(app, ["sessions"], env={"FORENSICS_DB": "store/"})
    assert result.exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "weeks"]
    from forensics.reports.destination import file_name_part

    assert file_name_part("team/a") == "team_a" and file_name_part("../../x") == ".._.._x"
    assert file_name_part("\x1b[31m") == "_31m" and file_name_part("") == "_"


def test_a_report_that_cannot_be_written_leaves_the_last_one_whole(sample_db, tmp_path):
    """A write that fails part way (here the system's file-size limit, as a full disk
    does) leaves the earlier report as it was and no part of the new one beside it."""
    import resource
    import subprocess
    import sys

    page = tmp_path / "r.html"
    page.write_text("<!DOCTYPE html><p>the report before</p>")
    code = "from forensics.cli import main; main()"
    out = subprocess.run(
        [sys.executable, "-c", code, "report", "incident", "incident", "--db", str(sample_db),
         "--out", str(page)],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert f"cannot write {page}: File too large (it was left as it was)" in out.stderr
    assert page.read_text() == "<!DOCTYPE html><p>the report before</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_demo_checks_where_its_reports_go_before_it_loads(tmp_path, monkeypatch):
    """demo's three reports go where --out says (a folder: all three in it), each checked
    before the sample is loaded: a missing folder or a file that is not a page leaves no
    store behind."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "review.html").write_text("my notes")
    for out, said in (
        ("nope/x.html", "the folder nope does not exist"),
        ("mine/i.html", "mine/review.html exists and is not an HTML page"),
    ):
        result = runner.invoke(app, ["demo", "--db", "d.duckdb", "--out", out])
        assert result.exit_code == 1 and said in result.output, result.output
        assert not (tmp_path / "d.duckdb").exists()
    assert (tmp_path / "mine" / "review.html").read_text() == "my notes"
    (tmp_path / "all").mkdir()
    result = runner.invoke(app, ["demo", "--db", "d.duckdb", "--out", "all"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == [
        "claude-code-incident.html", "incident.html", "review.html"]
    report = re.search(r"Incident report: (\S+)", result.stdout).group(1)  # the path printed
    assert Path(report).resolve() == tmp_path / "all" / "incident.html"
    assert Path(report).read_text().count("<svg") == 2
    result = runner.invoke(app, ["demo", "--db", "e.duckdb", "--out", "new/"])  # made
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "new").iterdir())) == 3


def test_a_report_to_standard_output_and_a_path_said_as_text(sample_db, tmp_path, monkeypatch):
    """`--out -` writes the page to standard output (it made a file named `-`); a path
    with a newline in it is said with the newline escaped, on one line."""
    monkeypatch.chdir(tmp_path)
    for command in (["report", "incident", "incident"], ["report", "weekly"]):
        result = runner.invoke(app, [*command, "--db", str(sample_db), "--out", "-"])
        assert result.exit_code == 0, result.output
        page = result.stdout
        assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    result = runner.invoke(app, ["sessions", "--db", "-"])
    assert result.exit_code == 2 and "'-' is no store" in result.output
    assert list(tmp_path.iterdir()) == []
    result = runner.invoke(app, ["report", "incident", "incident", "--db", str(sample_db),
                                 "--out", "two\nlines.html"])  # fmt: skip
    assert result.exit_code == 0 and result.stdout == "two\\x0alines.html\n", result.stdout
    assert (tmp_path / "two\nlines.html").stat().st_size > 20_000


def test_a_report_goes_to_a_pipe_an_empty_file_and_not_through_a_link_to_nowhere(
    sample_db, tmp_path, monkeypatch
):
    """What is no regular file (a FIFO, /dev/stdout) is written to as it is (the check
    opened the FIFO to read it, and hung); an empty file is replaced (mktemp's); a link
    to nowhere is said, and no folder made at its end; `--out -` is UTF-8 whatever
    standard output's encoding (the page says it is)."""
    import os
    import subprocess
    import sys
    import threading

    monkeypatch.chdir(tmp_path)
    db = str(sample_db)
    os.mkfifo("pipe")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open("pipe", "rb").read()),  # noqa: SIM115
                              daemon=True)  # fmt: skip
    reader.start()
    result = runner.invoke(app, ["report", "incident", "incident", "--db", db, "--out", "pipe"])
    reader.join(timeout=60)
    if reader.is_alive():  # (the report never opened the pipe: let the reader go)
        os.close(os.open("pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert result.exit_code == 0 and got and got[0].startswith(b"<!DOCTYPE html>")
    assert result.stdout.strip() == "pipe"
    (tmp_path / "empty.html").write_text("")
    result = runner.invoke(app, ["report", "weekly", "--db", db, "--out", "empty.html"])
    assert result.exit_code == 0 and (tmp_path / "empty.html").stat().st_size > 20_000
    (tmp_path / "dangling.html").symlink_to(tmp_path / "nowhere" / "x.html")
    result = runner.invoke(app, ["report", "weekly", "--db", db, "--out", "dangling.html"])
    assert result.exit_code == 1 and "(a link to " in result.output
    assert not (tmp_path / "nowhere").exists()
    code = "from forensics.cli import main; main()"
    pages = [subprocess.run([sys.executable, "-c", code, "report", "incident", "incident",
                             "--db", db, "--out", "-"], capture_output=True, timeout=120,
                            env={**os.environ, "PYTHONIOENCODING": encoding}).stdout
             for encoding in ("latin-1", "utf-8")]  # fmt: skip
    assert pages[0].decode("utf-8").count("·") == pages[1].decode("utf-8").count("·") > 0


def test_what_is_no_regular_file_is_a_stream_or_refused(sample_db, tmp_path, monkeypatch):
    """/dev/stdout is written to as it is and appended (the shell's `>` or `>>` decides,
    a page's path is not printed into it); a file under /dev or /proc is still a file
    (it was written over, being 'the system's'); a link that leads to itself is said."""
    import os
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    log = tmp_path / "app.log"
    log.write_text("kept\n")
    code = "from forensics.cli import main; main()"
    with log.open("a") as out:
        args = ["report", "incident", "incident", "--db", str(sample_db), "--out", "/dev/stdout"]
        done = subprocess.run([sys.executable, "-c", code, *args], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert text.startswith("kept\n<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        other = Path("/dev/shm") / f"forensics-test-{os.getpid()}.parquet"
        other.write_bytes(b"PAR1 not a page")
        try:
            result = runner.invoke(app, ["report", "weekly", "--db", str(sample_db), "--out",
                                         str(other)])  # fmt: skip
            assert result.exit_code == 1 and "is not an HTML page" in result.output
            assert other.read_bytes() == b"PAR1 not a page"
        finally:
            other.unlink()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    result = runner.invoke(app, ["report", "weekly", "--db", str(sample_db), "--out", "loop"])
    assert result.exit_code == 1 and "unexpected" not in result.output, result.output


def test_a_weekly_review_of_a_store_given_whatever_forensics_db_says(sample_db, tmp_path):
    """FORENSICS_DB naming a folder (refused as a store) failed `report weekly --db STORE`,
    which asked it only to compare the store with the default one."""
    out = tmp_path / "w.html"
    result = runner.invoke(app, ["report", "weekly", "--db", str(sample_db), "--out", str(out)],
                           env={"FORENSICS_DB": str(tmp_path) + "/"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"--db {sample_db}" in out.read_text()
