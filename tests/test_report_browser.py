"""The sample incident report in a real headless Chromium: clean, offline, drawn."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from forensics import api
from forensics.reports.incident import build_incident
from forensics.reports.render import write_incident
from tests.browser import load_page, require_chromium

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chromium():
    return require_chromium()


def test_the_sample_report_loads_cleanly(chromium, tmp_path):
    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    context = build_incident(db, "incident")
    page_path = write_incident(context, tmp_path / "incident.html")
    report = load_page(page_path, screenshot=tmp_path / "incident.png")
    assert report.console_errors == []
    assert report.requests == []
    assert report.screenshot_bytes > 50_000
    assert report.title == context.title
    for chart in context.charts:
        assert f'id="chart-turn-{chart.turn}"' in report.dom
    assert report.dom.count("<svg") == len(context.charts) >= 1
    assert html.escape(context.headline[0], quote=False) in report.dom  # its ">" as &gt;


def test_hostile_content_runs_nothing_in_the_browser(chromium, tmp_path):
    from tests.test_report import _hostile_session

    _hostile_session(tmp_path / "evil.json")
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [tmp_path / "evil.json"])
    page_path = write_incident(build_incident(db, "evil", show_content=True),
                               tmp_path / "evil.html")
    report = load_page(page_path)
    assert report.console_errors == []  # alert() never ran, no broken image was fetched
    assert report.requests == []
    assert "<img" not in report.dom and "<script" not in report.dom


# every box of text holds its content: nothing runs under its neighbour, and the page
# needs no sideways scrolling (issue 31, item 1)
_OVERRUNS = """() => {
  const found = [];
  for (const el of document.querySelectorAll(
      'td, th, li, p, h1, h2, h3, figcaption, .headline, .evidence > div')) {
    if (el.scrollWidth > el.clientWidth + 1) {
      found.push(el.tagName + ': ' + el.textContent.trim().slice(0, 80));
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) {
    found.push('page: ' + document.documentElement.scrollWidth + ' px wide');
  }
  return found;
}"""


def _long_session(path: Path) -> str:
    """An ADK export whose session id, app, tool name, model resource name, argument and
    error are long unbroken strings, with a result big enough to lead the growth table."""
    import json

    sid = "s" + "0123456789abcdef" * 12
    tool = "get_" + "very_long_tool_name_" * 8
    long = "/home/someone/" + "deeply/nested/" * 12 + "file.json"
    events = [
        {"id": "e1", "author": "user", "timestamp": 1792700000, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"text": "look up " + long}]}},
        {"id": "e2", "author": "agent", "timestamp": 1792700001, "invocation_id": "i1",
         "usage_metadata": {"prompt_token_count": 900, "candidates_token_count": 5},
         "model_version": "projects/p/locations/europe-west4/publishers/google/models/"
                          + "gemini-long-resource-name-" * 6,
         "content": {"role": "model", "parts": [{"function_call": {
             "id": "c1", "name": tool, "args": {"path": long}}}]}},
        {"id": "e3", "author": "agent", "timestamp": 1792700002, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"function_response": {
             "id": "c1", "name": tool,
             "response": {"rows": [{"path": long, "n": i} for i in range(40)]}}}]}},
        {"id": "e4", "author": "agent", "timestamp": 1792700003, "invocation_id": "i1",
         "error_code": "RESOURCE_" + "EXHAUSTED_" * 9, "error_message": "x" * 400},
    ]  # fmt: skip
    path.write_text(json.dumps({"id": sid, "app_name": "app_" + "n" * 90,
                                "user_id": "u", "events": events}))  # fmt: skip
    return sid


@pytest.mark.parametrize("width", [1000, 1400])
def test_no_text_runs_over_its_box_in_either_page(chromium, tmp_path, width):
    from forensics.reports.render import write_weekly
    from forensics.reports.weekly import build_weekly

    sid = _long_session(tmp_path / "long.json")
    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    api.ingest_json(db, [tmp_path / "long.json"])
    prices = tmp_path / ("prices-" + "p" * 120 + ".toml")
    prices.write_text((ROOT / "sample_data" / "prices.toml").read_text("utf-8"), "utf-8")
    pages = [
        write_incident(build_incident(db, sid, prices=prices), tmp_path / "incident.html"),
        write_incident(build_incident(db, "incident", prices=prices), tmp_path / "sample.html"),
        write_weekly(build_weekly(db, week_label="2026-W43", prices=prices),
                     tmp_path / "weekly.html"),  # the long session is of that week too
    ]  # fmt: skip
    for page in pages:
        report = load_page(page, width=width, height=1200, evaluate=_OVERRUNS)
        assert report.console_errors == []
        assert report.evaluated == [], (page.name, report.evaluated)


REAL_CC = ROOT.parent / "shared" / "real_data" / "claude_code" / "projects"

# per chart: x labels that overlap, y labels printed twice, a legend reaching the plot
_CHART_FAULTS = """() => {
  const faults = [];
  document.querySelectorAll('figure.chart svg').forEach((svg, n) => {
    const box = t => t.getBoundingClientRect();
    const xs = [...svg.querySelectorAll('text[text-anchor="middle"][font-size="10.5"]')];
    for (let i = 1; i < xs.length; i++) {
      if (box(xs[i]).left < box(xs[i - 1]).right) {
        faults.push(`chart ${n}: labels ${xs[i - 1].textContent} and ${xs[i].textContent} overlap`);
      }
    }
    for (const sel of ['text[text-anchor="end"][font-size="10.5"]',
                       'text[fill="#555"][font-size="10.5"]']) {
      const ys = [...svg.querySelectorAll(sel)].map(t => t.textContent);
      if (new Set(ys).size !== ys.length) faults.push(`chart ${n}: ticks ${ys.join(' ')}`);
    }
    const grid = [...svg.querySelectorAll('line[stroke="#e4e4e4"]')].map(l => box(l).top);
    const legend = [...svg.querySelectorAll('text[fill="#222"][font-size="10.5"]')]
      .filter(t => !t.hasAttribute('text-anchor'));
    const top = Math.min(...grid);
    for (const t of legend) {
      if (box(t).bottom > top) faults.push(`chart ${n}: legend "${t.textContent}" over the plot`);
    }
  });
  return faults;
}"""


@pytest.mark.skipif(not REAL_CC.is_dir(), reason="shared/real_data is absent")
def test_real_turns_of_a_hundred_calls_chart_cleanly(chromium, tmp_path):
    """Issue 33, item 5, on real Claude Code transcripts (a turn of 122 calls): x labels
    thinned so none overlap, y ticks that never print alike, the legend above the plot;
    every turn charted."""
    db = tmp_path / "cc.duckdb"
    api.ingest_claude_code(db, [REAL_CC])
    turns = api.turns(db, "258c7280-ae70-4798-800f-63464d01a85d")
    context = build_incident(db, "258c7280-ae70-4798-800f-63464d01a85d")
    assert max(len(c.points) for c in context.charts) >= 120
    charted = {t for c in context.charts for t in (c.turns or [c.turn])}
    assert charted == set(turns.filter(turns["calls"] > 0)["turn"].to_list())
    page = write_incident(context, tmp_path / "real.html")
    for width in (1000, 1400):
        report = load_page(page, width=width, height=1200, evaluate=_CHART_FAULTS)
        assert report.console_errors == [] and report.evaluated == []


_LINES = """() => [...document.querySelectorAll('td.time, td.error')]
  .filter(td => td.textContent.trim())
  .map(td => { const r = document.createRange(); r.selectNodeContents(td);
               const tops = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
               return [td.className, td.textContent.trim(), tops.size]; })"""


def test_times_and_error_codes_are_not_broken_mid_word(chromium, tmp_path):
    """Issue 33, item 7: the Turns table broke "09:00:01" and CONTEXT_LENGTH_EXCEEDED
    mid-word; at 1400 px each is on one line (narrower, a code may wrap after an
    underscore only)."""
    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    page = write_incident(build_incident(db, "incident"), tmp_path / "incident.html")
    report = load_page(page, width=1400, height=1200, evaluate=_LINES)
    cells = report.evaluated
    assert {c[0] for c in cells} == {"time", "error"}
    assert all(lines == 1 for _, _, lines in cells), cells
