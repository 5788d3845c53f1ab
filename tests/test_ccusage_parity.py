"""Parity with ccusage, what Claude Code's users run today to total their usage.

ccusage (npm `ccusage`, a Rust binary since v20) is installed from npm, pinned with its
native linux-x64 package, into a temporary folder (or taken from FORENSICS_TEST_CCUSAGE,
a folder holding such an install), and run offline on the same transcripts
`forensics ingest claude-code` reads: the committed sample (sample_data/claude_code)
and the real transcripts in shared/real_data when present. Compared, per day and per
session: input, output, cache-creation and cache-read tokens, equal; and under
`--ccusage-compatible`, the cost, within half a cent. Without npm, or when the install
fails, the tests skip with the reason, unless FORENSICS_REQUIRE_CCUSAGE=1 (CI sets it),
where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from forensics import api

VERSION = "20.0.24"  # the newest whose native linux-x64 package the registry serves here
PACKAGES = (f"ccusage@{VERSION}", f"@ccusage/ccusage-linux-x64@{VERSION}")
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "claude_code"
REAL = ROOT.parent / "shared" / "real_data" / "claude_code"
CORPORA = {"sample": SAMPLE, "real": REAL}
CENT = Decimal("0.005")


def _required() -> bool:
    return os.environ.get("FORENSICS_REQUIRE_CCUSAGE") == "1"


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"FORENSICS_REQUIRE_CCUSAGE=1 but ccusage is unusable: {reason}", False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def ccusage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding node_modules with ccusage and its native binary."""
    given = os.environ.get("FORENSICS_TEST_CCUSAGE")
    if given:
        folder = Path(given)
    else:
        npm = shutil.which("npm")
        if npm is None:
            _unavailable("npm is not on PATH: ccusage cannot be installed")
        folder = tmp_path_factory.mktemp("ccusage")
        try:
            done = subprocess.run(
                [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix",
                 str(folder), *PACKAGES],  # fmt: skip
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            _unavailable("npm install ccusage took over 600 s")
        if done.returncode != 0:
            _unavailable(f"npm install {' '.join(PACKAGES)} failed: {done.stderr[-500:]}")
    version = _run(folder, ["--version"], None)
    if version.strip() != f"ccusage {VERSION}":
        _unavailable(f"expected ccusage {VERSION} at {folder}, found {version.strip()!r}")
    return folder


def _run(install: Path, args: list[str], config: Path | None) -> str:
    wrapper = install / "node_modules" / ".bin" / "ccusage"
    if not wrapper.exists():
        _unavailable(f"no ccusage under {install}/node_modules")
    env = {**os.environ, "TZ": "UTC", "NO_COLOR": "1"}
    env.pop("CCUSAGE_MODEL_ALIASES", None)
    if config is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config)
    done = subprocess.run(
        [str(wrapper), *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _theirs(install: Path, config: Path, report: str) -> list[dict[str, Any]]:
    out = _run(install, ["claude", report, "--offline", "--json", "-z", "UTC"], config)
    return json.loads(out)["daily" if report == "daily" else "sessions"]


def rules_corpus(root: Path) -> Path:
    """Transcripts written here for ccusage's rules the other corpora do not reach: each
    field over 200,000 tokens, 1-hour writes over it, a fast request, a line's costUSD, a
    model no table prices, a split that disagrees with its total, a response copied into
    another session, one whose last line is on the next day."""
    from tests.test_claude_code import Transcript, usage

    big = usage(210_000, 250_000, 230_000, 201_000, hour=False)
    hour = usage(5, 1_000, 260_000, 300)
    fast = {**usage(12, 90_000, 4_000, 800), "speed": "fast"}
    split = {**usage(7, 100, 500, 20), "cache_creation": {
        "ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 50}}  # fmt: skip
    one = Transcript("r-1")
    one.prompt("tiers")
    one.response("msg_big", [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], big)
    one.response("msg_hour", [{"type": "text", "text": "c"}], hour,
                 model="claude-sonnet-4-20250514")  # fmt: skip
    one.response("msg_fast", [{"type": "text", "text": "d"}], fast, model="claude-opus-4-6")
    one.response("msg_unknown", [{"type": "text", "text": "e"}], usage(3, 0, 10, 5),
                 model="claude-unknown-9")  # fmt: skip
    one.response("msg_split", [{"type": "text", "text": "f"}], split)
    one.add({**one._line("assistant", requestId="req_old", costUSD=0.1234, message={
        "id": "msg_old", "model": "claude-3-5-sonnet-20241022", "type": "message",
        "role": "assistant", "content": [{"type": "text", "text": "g"}],
        "usage": usage(40, 0, 1_000, 60)})})  # fmt: skip
    one.write(root)
    two = Transcript("r-2", start=14 * 3600 - 30)  # starts before midnight, ends after
    two.prompt("again")
    two.response("msg_split", [{"type": "text", "text": "f"}], split)  # a copy of r-1's
    two.second += 26  # its first line at 23:59:59, its last (the kept usage) at 00:00:00
    two.response("msg_late", [{"type": "text", "text": "h"}, {"type": "text", "text": "i"}],
                 usage(3, 2_000, 300, 90))  # fmt: skip
    two.write(root)
    return root


@pytest.fixture(scope="module", params=[*sorted(CORPORA), "rules"])
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "rules":
        folder = rules_corpus(tmp_path_factory.mktemp("rules"))
    else:
        folder = CORPORA[request.param]
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    db = tmp_path_factory.mktemp(f"parity-{request.param}") / "cc.duckdb"
    result = api.ingest_claude_code(db, [folder])
    assert result.rows_skipped == 0, result.skips[:3]
    return folder, db


TOKENS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_creation_tokens", "cacheCreationTokens"),
    ("cache_read_tokens", "cacheReadTokens"),
)


def test_daily_tokens_equal_and_cost_within_half_a_cent(ccusage: Path, corpus) -> None:
    folder, db = corpus
    theirs = {d["date"]: d for d in _theirs(ccusage, folder, "daily")}
    ours = api.cost_ccusage(db, by="day", ccusage=ccusage)
    assert sorted(theirs) == [d.isoformat() for d in ours["day"]]
    assert "ccusage 20.0.24 price table" in ours["price_source"][0]
    for row in ours.iter_rows(named=True):
        day = theirs[row["day"].isoformat()]
        for mine, their in TOKENS:
            assert row[mine] == day[their], (row["day"], mine)
        assert abs(row["cost_usd"] - Decimal(repr(day["totalCost"]))) < CENT, row["day"]
    if folder.name.startswith("rules"):
        return  # written to differ from the provider's reading (a split that disagrees)
    # the provider's bill counts the same tokens (input there holds reads and writes)
    billed = api.cost(db, by="day")
    for row in billed.iter_rows(named=True):
        day = theirs[row["day"].isoformat()]
        assert row["cache_read_tokens"] == day["cacheReadTokens"]
        assert row["cache_write_tokens"] == day["cacheCreationTokens"]
        assert row["output_tokens"] == day["outputTokens"]
        uncached = row["input_tokens"] - row["cache_read_tokens"] - row["cache_write_tokens"]
        assert uncached == day["inputTokens"]


def test_session_tokens_equal_and_cost_within_half_a_cent(ccusage: Path, corpus) -> None:
    folder, db = corpus
    theirs = {(s["projectPath"], s["sessionId"]): s for s in _theirs(ccusage, folder, "session")}
    ours = api.cost_ccusage(db, by="session", ccusage=ccusage)
    keys = list(zip(ours["project_path"], ours["session_id"], strict=True))
    assert sorted(keys) == sorted(theirs)
    for row in ours.iter_rows(named=True):
        session = theirs[(row["project_path"], row["session_id"])]
        for mine, their in TOKENS:
            assert row[mine] == session[their], (row["session_id"], mine)
        assert abs(row["cost_usd"] - Decimal(repr(session["totalCost"]))) < CENT


def test_the_cli_prints_the_same_totals(ccusage: Path, corpus) -> None:
    from typer.testing import CliRunner

    from forensics.cli import app

    folder, db = corpus
    out = CliRunner().invoke(app, ["cost", "--by", "day", "--source", "claude-code",
                                   "--ccusage-compatible", "--ccusage", str(ccusage),
                                   "--db", str(db), "-f", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    total = sum(Decimal(r["cost_usd"]) for r in rows)
    theirs = sum(Decimal(repr(d["totalCost"])) for d in _theirs(ccusage, folder, "daily"))
    assert abs(total - theirs) < CENT
    assert all(r["provenance"]["cost_usd"] == "priced (ccusage's rules)" for r in rows)


@pytest.mark.parametrize("by", ["day", "session"])
def test_straight_from_the_transcripts_the_totals_are_the_stores(
    ccusage: Path, corpus, by: str
) -> None:
    """`cost --ccusage-compatible --transcripts`: the usage lines alone, no store; the
    stored totals above equal ccusage's."""
    folder, db = corpus
    straight, read = api.cost_ccusage_transcripts([folder], by=by, ccusage=ccusage)
    assert straight.equals(api.cost_ccusage(db, by=by, ccusage=ccusage))
    assert read["skips"] == [] and read["files"] > 0
    if by == "day":
        theirs = {d["date"]: d for d in _theirs(ccusage, folder, "daily")}
        assert sorted(theirs) == [d.isoformat() for d in straight["day"]]
        for row in straight.iter_rows(named=True):
            for mine, their in TOKENS:
                assert row[mine] == theirs[row["day"].isoformat()][their]
