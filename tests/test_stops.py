"""An ingest stopped from outside (issue 32, item 3): SIGTERM as Ctrl-C is, a disk that
fills, a second ingest into the same store. Each is a real `forensics` process.

What must hold: the exit code says how it stopped (130 Ctrl-C, 143 SIGTERM, 1 a named
error), what was committed is kept and the store opens, and the same ingest again loads
the rest without counting anything twice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forensics import api
from tests.test_claude_code import Transcript, usage
from tests.test_hardening import _big_ndjson

COMMAND = [sys.executable, "-c", "from forensics.cli import main; main()"]


def _started(db: Path, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """`forensics ARGS --db DB` in a process of its own, once it has created the store."""
    proc = subprocess.Popen([*COMMAND, *args, "--db", str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 60
    while not db.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc


def test_sigterm_stops_an_adk_ingest_as_ctrl_c_does(tmp_path: Path) -> None:
    data = _big_ndjson(tmp_path / "big.ndjson")
    args = ["ingest", "adk-json", str(data), "--app", "a", "--user", "u"]
    stopped = 0
    for delay in (0.4,):  # while it reads (tests/test_hardening.py stops it at five points)
        db = tmp_path / f"at-{delay}.duckdb"
        proc = _started(db, args)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 0:
            continue  # it finished first
        assert proc.returncode == 143, err
        assert "unexpected" not in err and "Traceback" not in err, err
        if "the ingest was committed" not in err:  # stopped before the facts: undone
            assert err.strip().endswith("Terminated: nothing from this run was committed."), err
            assert api.sessions(db).is_empty()
            assert api.ingests(db)["status"].to_list() in ([], ["interrupted"])
            stopped += 1
        rerun = api.ingest_json(db, [data], app="a", user="u")
        assert api.sessions(db)["events"].to_list() == [24_000], rerun
    assert stopped >= 1


def _transcripts(folder: Path, sessions: int = 80, turns: int = 40) -> None:
    for s in range(sessions):
        t = Transcript(f"s-{s:03d}")
        for i in range(turns):
            t.prompt(f"question {i} " + "x" * 300)
            t.response(f"m{s}-{i}", [{"type": "text", "text": "y" * 300}], usage(3, 0, 100, 5))
        t.write(folder)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_claude_code_ingest_keeps_whole_sessions_and_a_rerun_adds_the_rest(
    tmp_path: Path, how: signal.Signals
) -> None:
    """Claude Code commits session by session: a stop keeps the sessions committed; the
    same ingest again loads the others, and the store equals one loaded in one go."""
    _transcripts(tmp_path / "in")
    fresh = tmp_path / "fresh.duckdb"
    api.ingest_claude_code(fresh, [tmp_path / "in"])
    whole = api.sessions(fresh).select("session_id", "events").sort("session_id")
    db = tmp_path / "stopped.duckdb"
    proc = _started(db, ["ingest", "claude-code", str(tmp_path / "in")])
    time.sleep(0.7)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 128 + how), err
    assert "unexpected" not in err and "Traceback" not in err, err
    kept = api.sessions(db)  # the store opens, with what was committed
    assert kept.height <= whole.height
    api.ingest_claude_code(db, [tmp_path / "in"])
    again = api.sessions(db).select("session_id", "events").sort("session_id")
    assert again.equals(whole)  # nothing twice, nothing missing
    assert api.cost(db, by="day")["cost_usd_low"].sum() == api.cost(fresh, by="day")[
        "cost_usd_low"
    ].sum()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 6 MB tmpfs (root only, as here: skipped elsewhere)."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_disk_that_fills_during_an_ingest_is_a_named_error_and_the_store_opens(
    tmp_path: Path, small_disk: Path
) -> None:
    small = tmp_path / "small.ndjson"
    with small.open("w") as f:  # a first, small ingest that fits
        for i in range(50):
            f.write(json.dumps({"id": f"s{i}", "invocationId": "i", "author": "user",
                                "timestamp": 1.6e9 + i,
                                "content": {"role": "user", "parts": [{"text": "a"}]}}) + "\n")
    db = small_disk / "f.duckdb"
    first = subprocess.run([*COMMAND, "ingest", "adk-json", str(small), "--app", "a",
                            "--user", "small", "--db", str(db)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert first.returncode == 0, first.stderr
    big = _big_ndjson(tmp_path / "big.ndjson", events=24_000)  # about 50 MB of events
    full = subprocess.run([*COMMAND, "ingest", "adk-json", str(big), "--app", "a",
                           "--user", "big", "--db", str(db)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert full.returncode == 1, (full.returncode, full.stderr)
    assert full.stderr.startswith("Error:") and "unexpected" not in full.stderr, full.stderr
    assert "space" in full.stderr.lower(), full.stderr
    # the store still opens with what was committed before: the first ingest whole
    subprocess.run(["rm", "-f", str(big)], check=True)
    sessions = api.sessions(db)
    assert sessions.filter(sessions["user_id"] == "small")["events"].to_list() == [50]


def test_two_ingests_into_one_store_the_second_waits_or_says_so(tmp_path: Path) -> None:
    data = _big_ndjson(tmp_path / "big.ndjson")
    other = _big_ndjson(tmp_path / "other.ndjson", events=2_000)
    db = tmp_path / "f.duckdb"
    env = {**os.environ, "FORENSICS_LOCK_WAIT": "1"}
    first = _started(db, ["ingest", "adk-json", str(data), "--app", "a", "--user", "u"], env)
    time.sleep(0.3)
    second = subprocess.run([*COMMAND, "ingest", "adk-json", str(other), "--app", "b",
                             "--user", "v", "--db", str(db)],
                            capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode in (0, 1), second.stderr
    assert "unexpected" not in second.stderr, second.stderr
    if second.returncode == 1:  # it waited a second, then said who holds the store
        assert "Error:" in second.stderr and "pid" in second.stderr.lower(), second.stderr
    expected = {("a", 24_000)} | ({("b", 2_000)} if second.returncode == 0 else set())
    found = {(r["app_name"], r["events"]) for r in api.sessions(db).iter_rows(named=True)}
    assert found == expected  # whole runs only: nothing half-loaded, nothing corrupt
