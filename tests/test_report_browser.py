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
    """An ADK export whose session id, tool name, argument and error are long unbroken
    strings, with a result big enough to lead the growth table."""
    import json

    sid = "s" + "0123456789abcdef" * 12
    tool = "get_" + "very_long_tool_name_" * 8
    long = "/home/someone/" + "deeply/nested/" * 12 + "file.json"
    events = [
        {"id": "e1", "author": "user", "timestamp": 1792700000, "invocation_id": "i1",
         "content": {"role": "user", "parts": [{"text": "look up " + long}]}},
        {"id": "e2", "author": "agent", "timestamp": 1792700001, "invocation_id": "i1",
         "usage_metadata": {"prompt_token_count": 900, "candidates_token_count": 5},
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
                     tmp_path / "weekly.html"),
    ]  # fmt: skip
    for page in pages:
        report = load_page(page, width=width, height=1200, evaluate=_OVERRUNS)
        assert report.console_errors == []
        assert report.evaluated == [], (page.name, report.evaluated)
