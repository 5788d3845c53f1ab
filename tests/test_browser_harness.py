"""The headless-Chromium harness itself (tests/browser.py): it must be able to fail.

Each check loads a small page that either is clean or has exactly one fault and
asserts that the report shows it. No traffic leaves the machine: the pages
point only at 127.0.0.1 and at an `.invalid` host, and the harness resolves
every host (IP literals too) to "not found" before any socket is opened.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import browser
from tests.browser import PageReport, load_page, require_chromium


@pytest.fixture
def chromium() -> str:
    return require_chromium()


def _page(tmp_path: Path, body: str, head: str = "", name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(
        "<!doctype html>\n<html><head><meta charset=utf-8><title>Harness page</title>"
        f"{head}</head>\n<body>\n{body}\n</body></html>\n",
        encoding="utf-8",
    )
    return path


# A clean, self-contained page: inline CSS, inline SVG, a data: image and a
# script that changes the DOM (so `dom` must be the DOM after load, not the file).
CLEAN_HEAD = """<style>
body { font: 16px sans-serif; margin: 2em; background: #fafafa; }
table { border-collapse: collapse; } td, th { border: 1px solid #888; padding: 4px 8px; }
.bar { fill: steelblue; }
</style>"""
CLEAN_BODY = """<h1>Incident report</h1>
<p id=status>not yet</p>
<table><tr><th>step</th><th>tool</th><th>ms</th></tr>
<tr><td>1</td><td>search</td><td>120</td></tr><tr><td>2</td><td>fetch</td><td>340</td></tr></table>
<svg width=400 height=200 viewBox="0 0 400 200">
  <rect class=bar x=10 y=50 width=60 height=150 /><rect class=bar x=90 y=20 width=60 height=180 />
  <circle cx=300 cy=100 r=80 fill=tomato /><text x=240 y=105>legend text</text>
</svg>
<img alt=dot src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7">
<script>document.getElementById("status").textContent = "rendered by script";</script>"""


def test_clean_self_contained_page(chromium, tmp_path):
    shot = tmp_path / "shot.png"
    report = load_page(_page(tmp_path, CLEAN_BODY, CLEAN_HEAD), screenshot=shot)
    assert isinstance(report, PageReport)
    assert report.console_errors == []
    assert report.requests == []  # data: URLs are not requests
    assert report.title == "Harness page"
    assert "rendered by script" in report.dom and "not yet" not in report.dom
    assert report.screenshot_bytes == shot.stat().st_size > 5 * 1024
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_console_error_is_reported(chromium, tmp_path):
    report = load_page(_page(tmp_path, '<p>hi</p><script>console.error("x")</script>'))
    assert report.console_errors == ["x"]
    assert report.requests == []
    assert report.screenshot_bytes == 0


def test_loopback_image_request_is_reported(chromium, tmp_path):
    report = load_page(_page(tmp_path, '<img src="http://127.0.0.1:9/x.png">'))
    assert report.requests == ["http://127.0.0.1:9/x.png"]
    # Chromium also logs the failed load as a console error.
    assert len(report.console_errors) == 1
    assert report.console_errors[0].startswith("Failed to load resource")


def test_external_stylesheet_request_is_reported(chromium, tmp_path):
    href = "https://example.invalid/x.css"
    report = load_page(_page(tmp_path, "<p>styled?</p>", f'<link rel=stylesheet href="{href}">'))
    assert report.requests == [href]


def test_thrown_exception_is_reported(chromium, tmp_path):
    report = load_page(_page(tmp_path, '<script>throw new TypeError("boom")</script>'))
    assert report.console_errors == ["Uncaught TypeError: boom"]


def test_other_faults_are_reported(chromium, tmp_path):
    """Late and async failures, websockets, iframes and sibling files all count."""
    (tmp_path / "sibling.css").write_text("p { color: red }", encoding="utf-8")
    body = """<p>faults</p>
<iframe src="http://127.0.0.1:9/frame"></iframe>
<script>
  console.assert(1 === 2, "maths");
  Promise.reject(new Error("rejected"));
  setTimeout(() => { throw new RangeError("late"); }, 20);
  new WebSocket("ws://127.0.0.1:9/socket");
</script>"""
    report = load_page(_page(tmp_path, body, '<link rel=stylesheet href="sibling.css">'))
    assert sorted(report.requests) == sorted(
        [
            (tmp_path / "sibling.css").resolve().as_uri(),
            "http://127.0.0.1:9/frame",
            "ws://127.0.0.1:9/socket",
        ]
    )
    errors = report.console_errors
    assert "Assertion failed: maths" in errors
    assert "Uncaught Error: rejected" in errors
    assert "Uncaught RangeError: late" in errors


def test_page_that_never_loads_times_out(chromium, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    start = time.monotonic()
    with pytest.raises(PlaywrightTimeout):
        load_page(_page(tmp_path, "<script>for (;;) {}</script>"), timeout_s=3)
    assert time.monotonic() - start < 15


def test_require_chromium_skips_or_fails_without_chromium(monkeypatch):
    monkeypatch.setattr(browser, "find_chromium", lambda: None)
    monkeypatch.delenv(browser.ENV_REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium found"):
        require_chromium()
    monkeypatch.setenv(browser.ENV_REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="FORENSICS_REQUIRE_CHROMIUM=1"):
        require_chromium()
