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
