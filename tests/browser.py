"""Load a local HTML file in headless Chromium and report what happened.

`load_page(path)` opens the file in a fresh headless Chromium (Playwright's
Python API driving the system's Chromium, never a browser Playwright
downloads) and returns a `PageReport`:

* `console_errors`: console messages of level error (including failed
  `console.assert`s and Chromium's own "Failed to load resource" lines) and
  uncaught exceptions / unhandled promise rejections, in order;
* `requests`: every URL the page asked for other than the file itself (http,
  https, ws, wss, file, ...; `data:`, `blob:` and `about:` are not requests).
  A self-contained report must make none;
* `title`, `dom` (the serialized DOM after load), `screenshot_bytes` (size of
  the PNG written to `screenshot=`, 0 without one).

Nothing leaves the machine: Chromium runs with `--host-resolver-rules=MAP *
~NOTFOUND`, so every host name *and* IP literal fails to resolve before a
socket is opened (also for preconnects and DNS prefetches). The page's
requests are still issued, and so still reported; they fail with
`net::ERR_NAME_NOT_RESOLVED`. `file:` subresources do load.

Each call starts its own browser (about 1 s here) with a new empty profile
and ends it again; nothing is shared between calls. The sync Playwright API
refuses to run inside a running asyncio event loop: call it from plain
(sync) tests.

`require_chromium()` is for tests: it returns the Chromium path, or skips
when there is no Chromium or no Playwright, unless FORENSICS_REQUIRE_CHROMIUM=1
(CI), where it fails instead.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_REQUIRE = "FORENSICS_REQUIRE_CHROMIUM"

# The flags that work as root on this kind of machine, plus a resolver rule
# that keeps every page request on the machine (see the module docstring).
# Playwright adds its own new empty --user-data-dir (and removes it again);
# passing one here is an error.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)

_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
_NOT_REQUESTS = ("data:", "blob:", "about:")


class ChromiumNotFound(RuntimeError):
    """No Chromium, or no Playwright to drive it (the caller may skip)."""


@dataclass
class PageReport:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    title: str = ""
    dom: str = ""
    screenshot_bytes: int = 0
    evaluated: Any = None  # what `evaluate` returned


def find_chromium() -> str | None:
    """/usr/bin/chromium, else `chromium` or `chromium-browser` on PATH."""
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_required() -> bool:
    return os.environ.get(ENV_REQUIRE, "").strip().lower() in ("1", "true", "yes")


def _playwright_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return f"Playwright for Python is not installed ({e}); pip install playwright"
    return None


def require_chromium() -> str:
    """The Chromium to use; skips the calling test without one (fails under CI's
    FORENSICS_REQUIRE_CHROMIUM=1)."""
    import pytest

    problem = _playwright_missing()
    exe = find_chromium()
    if exe is None:
        problem = (
            "no Chromium found (looked for /usr/bin/chromium, chromium, chromium-browser "
            "on PATH); on Debian: apt-get install chromium"
        )
    if problem:
        if chromium_required():
            pytest.fail(f"{ENV_REQUIRE}=1 but {problem}", pytrace=False)
        pytest.skip(problem)
    assert exe is not None
    return exe


def _format_exception(err: object) -> str:
    name = getattr(err, "name", "") or ""
    message = getattr(err, "message", None)
    if message is None:
        message = str(err)
    return f"Uncaught {name}: {message}" if name else f"Uncaught {message}"


def load_page(
    html_path: Path,
    *,
    screenshot: Path | None = None,
    width: int = 1280,
    height: int = 2000,
    timeout_s: float = 30,
    settle_s: float = 0.2,
    evaluate: str | None = None,
) -> PageReport:
    """Open `html_path` in headless Chromium, wait for `load` plus `settle_s`
    (for timers and promise rejections right after load), and report.

    `timeout_s` bounds the whole call (start-up, load, screenshot); running
    out raises Playwright's TimeoutError. `screenshot` gets a PNG of the
    width x height viewport. Raises ChromiumNotFound without Chromium or
    Playwright.
    """
    exe = find_chromium()
    if exe is None:
        raise ChromiumNotFound("no Chromium found")
    if (problem := _playwright_missing()) is not None:
        raise ChromiumNotFound(problem)
    from playwright.sync_api import sync_playwright

    html_path = Path(html_path).resolve()
    if not html_path.is_file():
        raise FileNotFoundError(html_path)
    url = html_path.as_uri()
    deadline = time.monotonic() + timeout_s

    def remaining_ms() -> float:
        return max(1.0, (deadline - time.monotonic()) * 1000)

    report = PageReport()

    def on_console(msg) -> None:
        if msg.type == "error":
            report.console_errors.append(msg.text)
        elif msg.type == "assert":
            report.console_errors.append(f"Assertion failed: {msg.text}")

    def on_request(url_: str) -> None:
        if url_ != url and not url_.startswith(_NOT_REQUESTS):
            report.requests.append(url_)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=exe,
            args=list(CHROMIUM_FLAGS),
            timeout=remaining_ms(),
        )
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            # Context-level, so requests from iframes and workers count too.
            context.on("request", lambda req: on_request(req.url))
            page = context.new_page()
            page.on("console", on_console)
            page.on("pageerror", lambda err: report.console_errors.append(_format_exception(err)))
            # WebSockets are no "request" event in Playwright.
            page.on("websocket", lambda ws: on_request(ws.url))
            page.goto(url, wait_until="load", timeout=remaining_ms())
            if settle_s > 0:
                page.wait_for_timeout(settle_s * 1000)
            report.title = page.title()
            report.dom = page.content()
            if evaluate is not None:  # a script's answer about the laid-out page
                report.evaluated = page.evaluate(evaluate)
            if screenshot is not None:
                screenshot = Path(screenshot)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), animations="disabled", timeout=remaining_ms())
                report.screenshot_bytes = screenshot.stat().st_size
            # Anything logged while taking the DOM and screenshot is in too.
        finally:
            browser.close()
    return report
