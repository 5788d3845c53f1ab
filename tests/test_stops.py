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
from collections.abc import Callable
from pathlib import Path

import pytest

from forensics import api
from tests.test_claude_code import Transcript, usage
from tests.test_hardening import _big_ndjson

COMMAND = [sys.executable, "-c", "from forensics.cli import main; main()"]


def _started(db: Path, args: list[str], env: dict[str, str] | None = None,
             ready: Path | None = None) -> subprocess.Popen:
    """`forensics ARGS --db DB` in a process of its own, once it has created the store
    (or, given `ready`, once that file exists: a stored store's write-ahead log)."""
    proc = subprocess.Popen([*COMMAND, *args, "--db", str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (ready or db).exists() and proc.poll() is None and time.monotonic() < deadline:
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


def _patched_ingest(patch: str, folder: Path, db: Path) -> list[str]:
    """`forensics ingest claude-code FOLDER --db DB` in a process of its own, run after
    the lines of `patch` (what they replace in the package, to stop it at a chosen
    point)."""
    code = patch + "from forensics.cli import main\nmain()"
    return [sys.executable, "-c", code, "ingest", "claude-code", str(folder), "--db", str(db)]


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
    with api.open_store(db) as store:
        assert not _orphans(store)
    api.ingest_claude_code(db, [tmp_path / "in"])
    again = api.sessions(db).select("session_id", "events").sort("session_id")
    assert again.equals(whole)  # nothing twice, nothing missing
    assert api.cost(db, by="day")["cost_usd_low"].sum() == api.cost(fresh, by="day")[
        "cost_usd_low"
    ].sum()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_claude_code_ingest_stopped_while_a_session_streams_ends_its_reader(
    tmp_path: Path, how: signal.Signals
) -> None:
    """Sessions too large for a worker are each read by a process of their own that
    sends what it reads as it reads it (here every session is: the limit is set to 0,
    and the reader waits two minutes before it reads, so that the stop lands while the
    ingest waits for it): a stop ends the command as it says, soon, with no traceback,
    leaves no reader behind (one that ignored the SIGTERM it gets at the command's
    exit held the command for its two minutes), and what was committed is whole (a
    rerun completes it to the store loaded in one go). (A Ctrl-C that the system gave
    another thread went unseen while the command's own thread waited on a batch.)"""
    _transcripts(tmp_path / "in", sessions=30, turns=20)
    fresh = tmp_path / "fresh.duckdb"
    api.ingest_claude_code(fresh, [tmp_path / "in"])
    pids = tmp_path / "pids"
    db = tmp_path / "stopped.duckdb"
    patch = (
        "import os, time\n"
        "from forensics.sources.files import claude_code as c\n"
        "c.SESSION_WORKER_BYTES = 0\n"
        "stream = c._stream_session\n"
        "def slow(task, conn):\n"
        f"    with open({str(pids)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(120)\n"
        "    stream(task, conn)\n"
        "c._stream_session = slow\n"
    )
    proc = subprocess.Popen(_patched_ingest(patch, tmp_path / "in", db),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FORENSICS_WORKERS": "2"})  # fmt: skip
    deadline = time.monotonic() + 60
    while not pids.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + how, err
    assert "unexpected" not in err and "Traceback" not in err, err
    readers = {int(p) for p in pids.read_text().split()}
    assert readers and proc.pid not in readers
    gone = time.monotonic() + 10
    while time.monotonic() < gone and any(_alive(p) for p in readers):
        time.sleep(0.05)
    assert not any(_alive(p) for p in readers)
    api.ingest_claude_code(db, [tmp_path / "in"])
    assert api.sessions(db).select("session_id", "events").sort("session_id").equals(
        api.sessions(fresh).select("session_id", "events").sort("session_id"))


@pytest.mark.parametrize("command_line", [False, True])
def test_a_wait_on_a_future_sees_a_ctrl_c_with_polars_imported(command_line: bool) -> None:
    """polars, once imported, handles SIGINT with SA_RESTART: a wait on a future with no
    timeout then sleeps through a Ctrl-C until the work ends (here two minutes).
    errors.waited wakes to see it; a TimeoutError the work itself raised is raised. The
    command line wraps Python's stop handlers before polars is imported, so a wait then
    swaps none, and polars' own handler stays (elsewhere a wait puts Python's back)."""
    from concurrent.futures import ThreadPoolExecutor

    from forensics.errors import waited

    script = (
        "import ctypes, os, signal, sys, threading, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from forensics.errors import hold_stops, waited\n"
        "def handler():  # the system's SIGINT action (where there is glibc's sigaction)\n"
        "    if not sys.platform.startswith('linux'):\n"
        "        return b''\n"
        "    action = ctypes.create_string_buffer(256)  # a struct sigaction, and room\n"
        "    ctypes.CDLL(None).sigaction(signal.SIGINT, None, action)\n"
        "    return action.raw[:8]\n"
        f"{'hold_stops()' if command_line else 'pass'}\n"
        "import polars\n"
        "theirs = handler()\n"
        "pool = ThreadPoolExecutor(1)\n"
        "waited(pool.submit(int))\n"
        "print('kept' if handler() == theirs else 'swapped', flush=True)\n"
        "work = pool.submit(time.sleep, 120)\n"
        "threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    waited(work)\n"
        "except KeyboardInterrupt:\n"
        "    print('stopped', flush=True)\n"
        "    os._exit(0)\n"
    )
    done = _python(script)
    kept = "kept" if command_line or not sys.platform.startswith("linux") else "swapped"
    assert done.stdout.split() == [kept, "stopped"], done
    with ThreadPoolExecutor(1) as pool:
        def late() -> None:
            raise TimeoutError("the server took too long")

        with pytest.raises(TimeoutError, match="took too long"):
            waited(pool.submit(late))


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


# --- every other ingest kind, stopped by SIGINT and by SIGTERM ------------------------

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
RELEASE_TRACE = Path(__file__).resolve().parent / "adk_releases" / "2.13.0" / "trace.otlp.json"
CONTENTS = ("sessions", "events", "parts", "traced_calls", "traced_parts", "logged",
            "outcomes", "fact_calls", "transcript_events")  # fmt: skip


def _contents(db: Path) -> dict[str, int]:
    """Rows per stored table: what a stopped-then-rerun ingest must equal. Every stored
    event's session has its `sessions` row (a stopped run undoes both; an ingest that
    reads a session whole again skips the deletes for a session without one)."""
    with api.open_store(db) as store:
        assert not _orphans(store), db
        return {t: store.run(f"SELECT count(*) FROM {t}")[0][0]  # noqa: S608 - our names
                for t in CONTENTS}


def _orphans(store: api.Store) -> int:
    """Stored events, parts and transcript details of a session with no `sessions` row."""
    return sum(store.run(f"SELECT count(*) FROM {t} ANTI JOIN sessions"  # noqa: S608
                         " USING (app_name, user_id, session_id)")[0][0]
               for t in ("events", "parts", "transcript_events"))  # fmt: skip


def _payloads(path: Path, n: int) -> Path:
    """`n` LiteLLM payloads (the sample's first, with new ids), one per line."""
    first = json.loads((SAMPLE / "opensearch" / "litellm.ndjson").read_text().splitlines()[0])
    with path.open("w") as f:
        for i in range(n):
            first["id"] = f"chatcmpl-{i}"
            minute, second = i // 6000 % 60, i // 100 % 60
            first["startTime"] = f"2026-10-22 09:{minute:02d}:{second:02d}.{i % 100:06d}"
            f.write(json.dumps(first) + "\n")
    return path


def _sqlite_store(path: Path, copies: int = 150) -> Path:
    """The sample V1 SQLite database with its sessions copied `copies` times."""
    import sqlite3

    shutil.copy(SAMPLE / "adk_v1.db", path)
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
        listed = ", ".join(columns)
        renamed = ", ".join("id || :k" if c == "id" else c for c in columns)
        for k in range(copies):
            suffix = {"k": f"-copy{k}"}
            conn.execute(f"INSERT INTO sessions ({listed}) SELECT {renamed} FROM sessions "  # noqa: S608
                         "WHERE id NOT LIKE '%-copy%'", suffix)  # fmt: skip
            conn.execute("INSERT INTO events SELECT id, app_name, user_id, session_id || :k, "
                         "invocation_id, timestamp, event_data FROM events "
                         "WHERE session_id NOT LIKE '%-copy%'", suffix)  # fmt: skip
    return path


def _traces(folder: Path, copies: int = 100) -> list[Path]:
    """The 2.13.0 release trace, its trace and span ids changed in each of `copies` files."""
    import re

    folder.mkdir()
    text = RELEASE_TRACE.read_text()
    ids = sorted(set(re.findall(r'"(?:traceId|spanId|parentSpanId)":\s*"([0-9a-f]+)"', text)))
    for k in range(copies):
        copy = text
        for old in ids:
            copy = copy.replace(f'"{old}"', f'"{old[:-4]}{k:04x}"')
        (folder / f"trace-{k:03d}.json").write_text(copy)
    return sorted(folder.glob("*.json"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stop-inputs")
    sqlite_db = _sqlite_store(root / "adk.db")
    exported = root / "exported.duckdb"
    api.ingest_sqlite(exported, sqlite_db)
    api.export_parquet(exported, root / "parquet")
    _traces(root / "traces")
    stored = api.sessions(exported)["session_id"].to_list()
    with (root / "outcomes.csv").open("w") as f:  # each session's first row, then repeats
        f.write("session_id,task_id,arm,success\n")
        f.writelines(f"{stored[i % len(stored)]},task-{i % 97},arm-{i % 2},{i % 3 > 0}\n"
                     for i in range(200_000))  # fmt: skip
    return {"sqlite": sqlite_db, "parquet": root / "parquet", "outcomes": root / "outcomes.csv",
            "exported": exported,
            "payloads": _payloads(root / "payloads.ndjson", 40_000),
            "traces": root / "traces"}  # fmt: skip


_WHOLE: dict[str, dict[str, int]] = {}  # per kind: the contents of one uninterrupted run


def _stop_and_rerun(tmp_path: Path, how: signal.Signals, args: list[str],
                    rerun: Callable[[Path], object],
                    prepare: Callable[[Path], object] = lambda db: None) -> None:
    """Run `forensics ARGS`, stop it with `how` at ever earlier points until one stop
    lands mid-run; then: the exit code says so, the store opens, and the same ingest
    again gives what one uninterrupted ingest gives."""
    if args[1] not in _WHOLE:  # once per kind: SIGINT's and SIGTERM's runs share it
        fresh = tmp_path / "fresh.duckdb"
        prepare(fresh)
        rerun(fresh)
        _WHOLE[args[1]] = _contents(fresh)
    whole = _WHOLE[args[1]]
    for attempt, delay in enumerate((0.5, 0.2, 0.05, 0.0)):
        db = tmp_path / f"stopped-{attempt}.duckdb"
        prepare(db)
        wal = db.with_name(db.name + ".wal")
        proc = _started(db, args, ready=wal if db.exists() else None)
        time.sleep(delay)
        proc.send_signal(how)
        _, err = proc.communicate(timeout=300)
        assert "unexpected" not in err and "Traceback" not in err, err
        if proc.returncode == 0:
            continue  # it finished first: stop earlier
        assert proc.returncode == 128 + how, (proc.returncode, err)
        assert ("Interrupted" if how == signal.SIGINT else "Terminated") in err, err
        if db.exists():
            _contents(db)  # the store opens with what was committed
            said = "terminated (SIGTERM)" if how == signal.SIGTERM else "interrupted (Ctrl-C)"
            ledger = api.ingests(db).filter(api.ingests(db)["status"] == "interrupted")
            assert all(e.startswith(said) for e in ledger["error"].to_list()), ledger
        rerun(db)
        assert _contents(db) == whole
        return
    pytest.fail(f"{args[:2]} finished before every stop")


def _ingest(
    kind: str, given: dict[str, Path], pg: str
) -> tuple[list[str], Callable[[Path], object]]:
    """(the command's arguments, the same ingest through the library) of one kind."""
    traces = sorted(given["traces"].iterdir())
    return {
        "adk-sqlite": (["ingest", "adk-sqlite", str(given["sqlite"])],
                       lambda db: api.ingest_sqlite(db, given["sqlite"])),
        "adk-postgres": (["ingest", "adk-postgres", pg], lambda db: api.ingest_postgres(db, pg)),
        "adk-trace": (["ingest", "adk-trace", *map(str, traces)],
                      lambda db: api.ingest_traces(db, traces)),
        "parquet": (["ingest", "parquet", str(given["parquet"])],
                    lambda db: api.ingest_parquet(db, given["parquet"])),
        "opensearch-file": (["ingest", "opensearch-file", str(given["payloads"])],
                            lambda db: api.ingest_opensearch_files(db, [given["payloads"]])),
        "outcomes": (["outcomes", "load", str(given["outcomes"])],
                     lambda db: api.load_outcomes(db, [given["outcomes"]])),
    }[kind]


def _traced_sessions(db: Path) -> None:
    api.ingest_sqlite(db, RELEASE_TRACE.with_name("sessions.db"))


# SIGTERM takes the path Ctrl-C takes once its handler ran (test_sigterm_stops_an_adk_ingest_
# as_ctrl_c_does): sent to two kinds, a server's cursor and a file's, not to all six (25 s)
@pytest.mark.parametrize("kind, how", [
    *((kind, signal.SIGINT) for kind in ("adk-sqlite", "adk-postgres", "adk-trace", "parquet",
                                         "opensearch-file", "outcomes")),
    ("adk-postgres", signal.SIGTERM), ("opensearch-file", signal.SIGTERM),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else v)  # fmt: skip
def test_each_ingest_kind_stopped_keeps_what_it_committed_and_a_rerun_completes_it(
    tmp_path: Path, inputs: dict[str, Path], kind: str, how: signal.Signals,
    request: pytest.FixtureRequest,
) -> None:
    pg = ""
    if kind == "adk-postgres":
        from tests.benchmarks.generate_pg_events import generate

        pg = request.getfixturevalue("pg_db")
        generate(pg, events=12_000, sessions=120, big_fraction=0.0, verbose=False, seed=7)
    args, rerun = _ingest(kind, inputs, pg)
    prepare = {"adk-trace": _traced_sessions,  # beside the sessions they trace
               "outcomes": lambda db: shutil.copy(inputs["exported"], db)}.get(
        kind, lambda db: None)
    _stop_and_rerun(tmp_path, how, args, rerun, prepare)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_live_opensearch_ingest_releases_its_cursor(
    tmp_path: Path, inputs: dict[str, Path], how: signal.Signals
) -> None:
    """Loopback server (tests/opensearch_server.py): its pages are slowed so the stop
    lands mid-scan, which a real node cannot be made to do on demand."""
    from tests.opensearch_server import LoopbackOpenSearch

    docs = [json.loads(line) for line in inputs["payloads"].read_text().splitlines()[:20_000]]
    with LoopbackOpenSearch({"litellm-1": docs}, mappings={"@timestamp": "date"},
                            delay=0.05) as server:  # fmt: skip
        args = ["ingest", "opensearch", server.url, "--index", "litellm-1", "--time-field",
                "startTime", "--page-size", "500"]  # fmt: skip

        def rerun(db: Path) -> None:
            with api.connect_opensearch(server.url) as cluster:
                api.ingest_opensearch(db, cluster, "litellm-1", time_field="startTime",
                                      page_size=500)  # fmt: skip

        _stop_and_rerun(tmp_path, how, args, rerun)
        assert server.open_pits() == [] and server.open_scrolls() == []


@pytest.mark.parametrize("method", ["pit", "scroll"])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_cursor_opens_still_releases_it(
    tmp_path: Path, how: signal.Signals, method: str
) -> None:
    """Loopback server: the request that opens the point in time (or the scroll) is held
    until the stop has been sent, which a real node cannot be made to do on demand. The
    server opens it all the same; the stop waits for its id and deletes it (without
    waiting, the id was lost and the cursor stayed open until its keep_alive)."""
    import threading

    from tests.opensearch_server import LoopbackOpenSearch
    from tests.test_opensearch_live import SPAN_MAPPING, spans

    asked = threading.Event()
    go = threading.Event()

    def hold(number: int, verb: str, path: str) -> None:
        if verb == "POST" and ("/_search/point_in_time" in path if method == "pit" else
                               "/_search?" in path and "scroll=" in path):  # fmt: skip
            asked.set()
            go.wait(10)
        return None

    with LoopbackOpenSearch({"spans": spans()}, mappings={"spans": SPAN_MAPPING},
                            fault=hold) as server:  # fmt: skip
        db = tmp_path / "s.duckdb"
        proc = subprocess.Popen(
            [*COMMAND, "ingest", "opensearch", server.url, "--index", "spans", "--time-field",
             "startTime", "--page-size", "5", "--method", method, "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert asked.wait(60), proc.communicate(timeout=60)
        proc.send_signal(how)
        time.sleep(0.3)  # the signal is in before the answer
        go.set()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + how, err
        assert "unexpected" not in err and "Traceback" not in err, err
        time.sleep(0.5)  # a client that did not wait is gone before the server opens it
        assert server.open_pits() == [] and server.open_scrolls() == []
        deleted = [r for r in server.requests if r[0] == "DELETE"]
        assert deleted, server.requests  # released by the client, not by its keep_alive


def test_a_stop_deferred_lands_when_the_block_ends() -> None:
    from forensics.errors import stop_deferred

    # Python's own Ctrl-C handler: another test of this process may have set its own
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        steps = []
        with pytest.raises(KeyboardInterrupt):
            with stop_deferred():
                signal.raise_signal(signal.SIGINT)
                steps.append("after the signal")  # the block runs to its end
            steps.append("never")
        assert steps == ["after the signal"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
        with pytest.raises(KeyboardInterrupt), stop_deferred():  # a stop wins over an error
            signal.raise_signal(signal.SIGINT)
            raise ValueError("the request failed")
        steps.clear()
        with pytest.raises(KeyboardInterrupt), stop_deferred():  # asked twice: at once
            signal.raise_signal(signal.SIGINT)
            steps.append("after the first")
            signal.raise_signal(signal.SIGINT)
            steps.append("never")
        assert steps == ["after the first"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    # SIGTERM at the system's default (outside the command line): deferred too, and then
    # it ends the process as it would have
    script = (
        "import os, signal\n"
        "from forensics.errors import stop_deferred\n"
        "with stop_deferred():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    print('after the signal', flush=True)\n"
        "print('never', flush=True)\n"
    )
    done = _python(script)
    assert done.returncode == -signal.SIGTERM and done.stdout == "after the signal\n", done


def test_a_stop_held_lands_where_the_block_checks_and_only_once() -> None:
    from forensics.errors import stops_held

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        steps = []
        with pytest.raises(KeyboardInterrupt), stops_held() as check:
            check()  # nothing caught: nothing delivered
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)  # a second one waits too
            steps.append("held")
            try:
                check()
            finally:  # what the block does while the stop goes up runs; no stop again
                signal.raise_signal(signal.SIGINT)
                steps.append("cleaned up")
            steps.append("never")
        assert steps == ["held", "cleaned up"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with stops_held() as check:  # none: the block ends as it would
            check()
        steps.clear()
        with pytest.raises(KeyboardInterrupt), stops_held() as outer:
            with stops_held() as inner:  # held in turn by the block around it
                signal.raise_signal(signal.SIGINT)
                inner()
                steps.append("inner ended")
            steps.append("outer goes on")
            outer()
            steps.append("never")
        assert steps == ["inner ended", "outer goes on"]
        steps.clear()
        with pytest.raises(KeyboardInterrupt), stops_held():  # two holds that caught
            with stops_held():  # nothing are two holds: the inner one ends, not the outer
                steps.append("inner")
            signal.raise_signal(signal.SIGINT)
            steps.append("held by the outer")
        assert steps == ["inner", "held by the outer"]
        with pytest.raises(KeyboardInterrupt):  # and no hold is left open to swallow it
            signal.raise_signal(signal.SIGINT)
        done: list[str] = []

        def elsewhere() -> None:
            with stops_held() as check:  # only the main thread receives signals
                check()
                done.append(str(signal.getsignal(signal.SIGINT) is signal.default_int_handler))

        import threading

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        assert done == ["True"]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_work_done_as_its_wait_times_out_is_its_result() -> None:
    from concurrent.futures import Future

    from forensics.errors import waited

    class Late(Future):  # done between the wait's timeout and the look at it
        def result(self, timeout: float | None = None) -> object:
            if timeout is not None and not self.done():
                self.set_result("read")
                raise TimeoutError
            return super().result(timeout)

    assert waited(Late()) == "read"
    failed: Future[object] = Future()
    failed.set_exception(TimeoutError("the work's own"))
    with pytest.raises(TimeoutError, match="the work's own"):
        waited(failed)


def test_stops_at_any_instant_of_a_pooled_read_never_hang_it(tmp_path: Path) -> None:
    """ccusage's question answered forty times from transcripts that two forked workers
    read, each answer stopped at an instant drawn (seeded) while the batches are handed
    out or read: each ends with KeyboardInterrupt, no worker is left, and the process
    exits. (A stop raised inside the pool's submit left
    its work queue's lock held: the pool's manager thread then waited on it for ever,
    and the process for it, at the stop (CI, once in 30) or at its exit.)"""
    _transcripts(tmp_path / "in", sessions=40, turns=4)
    script = (
        "import multiprocessing, os, random, signal, threading\n"
        "from forensics.sources.files import claude_code_usage as u\n"
        "from forensics.straight import cost_ccusage_transcripts\n"
        "u.WORKER_BYTES, u.BATCH_BYTES = 0, 64\n"
        f"folder = {str(tmp_path / 'in')!r}\n"
        "cost_ccusage_transcripts([folder])  # (what it imports, imported whole)\n"
        "random.seed(5)\n"
        "stopped = 0\n"
        "for _ in range(40):\n"
        "    timer = threading.Timer(random.uniform(0.0, 0.3), os.kill,\n"
        "                            (os.getpid(), signal.SIGINT))\n"
        "    try:\n"
        "        timer.start()\n"
        "        cost_ccusage_transcripts([folder])\n"
        "        timer.join()\n"
        "    except KeyboardInterrupt:\n"
        "        stopped += 1\n"
        "    timer.join()\n"
        "print(stopped, len(multiprocessing.active_children()), flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "FORENSICS_WORKERS": "2"})  # fmt: skip
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("a stopped read hung")
    assert proc.returncode == 0, err
    stopped, left = map(int, out.split())
    assert stopped >= 30 and left == 0, out  # (a read the stop missed is read whole)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("fails", [False, True])
def test_a_stop_after_the_command_ended_ends_the_process_without_a_traceback(
    how: signal.Signals, fails: bool, tmp_path: Path
) -> None:
    """A stop that lands while Python shuts down (here: waiting for a thread) once the
    command has returned: its output is kept; after a success the exit code is the
    stop's and one line says the work was done, after a failure the command's code
    stands and nothing claims it (a traceback from threading's shutdown before)."""
    args = ["sessions", "--db", str(tmp_path / "none.duckdb")] if fails else ["--version"]
    script = (
        "import os, signal, sys, threading, time\n"
        "from forensics import cli\n"
        "threading.Thread(target=time.sleep, args=(4,)).start()  # Python waits for it\n"
        # (1.5 s: the command has ended by then, even on two busy cores)
        f"threading.Timer(1.5, os.kill, (os.getpid(), {int(how)})).start()\n"
        f"sys.argv = ['forensics', *{args!r}]\n"
        "cli.main()\n"
    )
    done = _python(script)
    assert "Traceback" not in done.stderr, done
    if fails:
        assert done.returncode == 1 and "no store at" in done.stderr, done
        assert "work was done" not in done.stderr, done
    else:
        assert done.returncode == 128 + how and "as the command ended" in done.stderr, done
        assert done.stdout.strip(), done  # the version, printed before the stop


@pytest.mark.parametrize(("how", "part"), [(signal.SIGINT, 4096), (signal.SIGTERM, 4096),
                                           (signal.SIGTERM, 1)])  # fmt: skip
def test_ccusages_question_stopped_while_its_workers_read_ends_them_and_says_so(
    tmp_path: Path, how: signal.Signals, part: int
) -> None:
    """`cost --ccusage-compatible --transcripts` stopped while its forked workers read:
    the exit code says how, no traceback, and no worker outlives the command. (The
    workers are slowed by a pause per file, injected in the command's own process
    before it forks them, so that the stop lands while they read; with parts of a byte,
    hundreds of thousands of them, it lands while they are still handed out, which
    left the process waiting for its workers at exit, for ever.)"""
    _transcripts(tmp_path / "in", sessions=40, turns=4)
    pids = tmp_path / "pids"
    code = (
        "import os, time\n"
        "from forensics.sources.files import claude_code_usage as u\n"
        f"u.WORKER_BYTES, u.BATCH_BYTES = 0, {part}\n"
        "read = u._read_file\n"
        "def slow(task, *rest):\n"
        f"    with open({str(pids)!r}, 'a') as f: f.write(f'{{os.getpid()}}\\n')\n"
        "    time.sleep(0.2)\n"
        "    return read(task, *rest)\n"
        "u._read_file = slow\n"
        "from forensics.cli import main\nmain()"
    )
    env = {**os.environ, "FORENSICS_WORKERS": "2"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "cost", "--by", "day", "--ccusage-compatible",
         "--transcripts", str(tmp_path / "in")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not pids.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + how, err
    assert "unexpected" not in err and "Traceback" not in err, err
    workers = {int(p) for p in pids.read_text().split()}
    assert workers and proc.pid not in workers
    gone = time.monotonic() + 10
    while time.monotonic() < gone and any(_alive(p) for p in workers):
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """`script` run by this Python in a process of its own (a minute at most)."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("terminated", [False, True])
def test_a_stopped_claude_code_ingest_says_what_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminated: bool
) -> None:
    """A run that commits batch by batch and is stopped after some were committed says
    how many records it kept, as its ledger row does (it said "nothing from this run was
    committed" while the store held them); stopped before any, it says nothing was."""
    from typer.testing import CliRunner

    from forensics.cli import app
    from forensics.cli.common import state
    from forensics.ingest import pipeline
    from forensics.sources.files import claude_code

    _transcripts(tmp_path / "in", sessions=12, turns=10)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)  # a batch or more per session
    insert = pipeline._Run.insert
    for stop_at, db in ((3, tmp_path / "some.duckdb"), (1, tmp_path / "none.duckdb")):
        calls = [0]

        def stopping(run: pipeline._Run, batch: object, stop_at: int = stop_at,
                     calls: list[int] = calls) -> None:  # fmt: skip
            calls[0] += 1
            if calls[0] == stop_at:
                state["terminated"] = terminated  # (what the SIGTERM handler sets)
                raise KeyboardInterrupt
            insert(run, batch)

        monkeypatch.setattr(pipeline._Run, "insert", stopping)
        try:
            out = CliRunner().invoke(app, ["ingest", "claude-code", str(tmp_path / "in"),
                                           "--db", str(db)])  # fmt: skip
        finally:
            state["terminated"] = False
        assert out.exit_code == (143 if terminated else 130), out.output
        how = "Terminated" if terminated else "Interrupted"
        last = out.stderr.strip().splitlines()[-1]
        kept = int(api.ingests(db)["rows_loaded"][0])
        if stop_at == 1:
            assert kept == 0 and api.sessions(db).is_empty()
            assert last == f"{how}: nothing from this run was committed.", last
        else:
            assert kept == api.sessions(db)["events"].sum() > 0
            assert last == (f"{how}: the {kept:,} records loaded before it are kept; the same "
                            "ingest again loads the rest."), last  # fmt: skip


def test_a_killed_ingest_is_listed_with_what_it_kept_and_a_rerun_completes_it(
    tmp_path: Path,
) -> None:
    """A process killed outright (SIGKILL, here its own, once two batches are committed)
    writes no ledger row but keeps the batches it committed: `ingests` lists the run as
    `unrecorded` with the records it stored (the ledger showed nothing, and the next
    run's id skipped its number), and the same ingest again completes the store, saying
    why it read those sessions again (it said their files had changed)."""
    _transcripts(tmp_path / "in", sessions=12, turns=10)
    fresh = tmp_path / "fresh.duckdb"
    api.ingest_claude_code(fresh, [tmp_path / "in"])
    db = tmp_path / "killed.duckdb"
    patch = (
        "import os, signal\n"
        "from forensics.ingest import pipeline\n"
        "from forensics.sources.files import claude_code\n"
        "claude_code.BATCH_CHARS = 20_000\n"
        "insert, done = pipeline._Run.insert, []\n"
        "def killing(run, batch):\n"
        "    insert(run, batch)\n"
        "    done.append(1)\n"
        "    if len(done) == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "pipeline._Run.insert = killing\n"
    )
    proc = subprocess.run(_patched_ingest(patch, tmp_path / "in", db), capture_output=True,
                          text=True, timeout=120, env={**os.environ, "FORENSICS_WORKERS": "1"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    ledger = api.ingests(db)
    kept = api.sessions(db)["events"].sum()
    assert 0 < kept < api.sessions(fresh)["events"].sum()
    assert ledger.select("ingest_id", "status", "rows_loaded").rows() == [(1, "unrecorded", kept)]
    assert ledger["error"][0] == (
        "stopped with no ledger row (its process killed, or the machine stopped): the store "
        f"holds {kept:,} records it committed; the same ingest run again loads what it did not"
    )
    assert api.ingest_skips(db, 1).is_empty()  # listed, so its skips can be asked for
    rerun = subprocess.run(
        [*COMMAND, "ingest", "claude-code", str(tmp_path / "in"), "--db", str(db)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert "stored before replaced: their sessions were read whole again (--full, a file " \
        "changed since, or the run that stored them did not finish)" in rerun.stdout, rerun.stdout
    whole = api.sessions(fresh).select("session_id", "events").sort("session_id")
    assert api.sessions(db).select("session_id", "events").sort("session_id").equals(whole)
    assert api.ingests(db)["status"].to_list() == ["ok"]  # its events all stored again


@pytest.mark.parametrize("stop_at", [2, 3, 5])
def test_a_full_claude_code_ingest_stopped_mid_session_is_completed_by_a_plain_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop_at: int
) -> None:
    """`--full` reads every session whole again, replacing what is stored of it, with
    sessions cut between batches. Stopped after a batch that replaced a session's events
    and stored only their first part, a plain ingest must read that session again: its
    files were still recorded as read by the earlier run, so it was passed over as
    unchanged and kept its first part only, for good (found by a kill-and-resume sweep:
    a session left with 3 of its 10 events, the day's cost cut by half)."""
    from forensics.ingest import pipeline
    from forensics.sources.files import claude_code

    _transcripts(tmp_path / "in", sessions=12, turns=10)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)  # a batch or more per session
    fresh = tmp_path / "fresh.duckdb"
    api.ingest_claude_code(fresh, [tmp_path / "in"])
    whole = api.sessions(fresh).select("session_id", "events").sort("session_id")
    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [tmp_path / "in"])
    insert, calls = pipeline._Run.insert, [0]

    def stopping(run: pipeline._Run, batch: object) -> None:
        calls[0] += 1
        if calls[0] == stop_at:
            raise KeyboardInterrupt
        insert(run, batch)

    monkeypatch.setattr(pipeline._Run, "insert", stopping)
    with pytest.raises(KeyboardInterrupt):
        api.ingest_claude_code(db, [tmp_path / "in"], full=True)
    monkeypatch.setattr(pipeline._Run, "insert", insert)
    cut = api.sessions(db).select("session_id", "events").sort("session_id")
    assert not cut.equals(whole)  # the stop left a session in part (what is tested)
    api.ingest_claude_code(db, [tmp_path / "in"])
    assert api.sessions(db).select("session_id", "events").sort("session_id").equals(whole)
    assert api.cost(db, by="day").drop("source", strict=False).equals(
        api.cost(fresh, by="day").drop("source", strict=False))
    assert api.ingest_claude_code(db, [tmp_path / "in"]).rows_read == 0  # and then it is


def test_a_killed_claude_code_ingest_leaves_no_worker_behind(tmp_path: Path) -> None:
    """Killed outright (SIGKILL, here its own at its first batch, while its workers read
    sessions ahead), the ingest's worker processes end within a second or two: they
    stayed for ever, blocked on their pipes, holding the command's stdout and stderr
    (whatever read its output waited for ever) and the store's files open."""
    _transcripts(tmp_path / "in", sessions=80, turns=40)
    patch = (
        "import os, signal\n"
        "from forensics.ingest import pipeline\n"
        "from forensics.sources.files import claude_code\n"
        "claude_code.WORKER_MIN_BYTES = 0\n"
        "claude_code.BATCH_CHARS = 20_000\n"
        "def killing(run, batch):\n"
        "    me = os.getpid()\n"
        "    kids = set()\n"
        "    for task in os.listdir(f'/proc/{me}/task'):\n"
        "        with open(f'/proc/{me}/task/{task}/children') as f:\n"
        "            kids.update(f.read().split())\n"
        "    print(' '.join(sorted(kids)), flush=True)\n"
        "    os.kill(me, signal.SIGKILL)\n"
        "pipeline._Run.insert = killing\n"
    )
    proc = subprocess.Popen(_patched_ingest(patch, tmp_path / "in", tmp_path / "k.duckdb"),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "FORENSICS_WORKERS": "2"})  # fmt: skip
    assert proc.stdout is not None
    kids = [int(pid) for pid in proc.stdout.readline().split()]
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert kids, "no worker was running at the kill: nothing tested"
    def alive(pid: int) -> bool:  # (a zombie an init that does not reap keeps is ended)
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in kids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived the killed ingest"
    assert proc.stdout.read() == ""  # (its end of the output closed: no worker holds it)


def test_a_stop_just_after_a_batch_commits_still_counts_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C that lands just after a batch's COMMIT, before the run counted it: the
    ledger and the stop's message count every committed batch (they were one batch short:
    5,152 records said, 5,838 stored, in a kill-and-resume sweep)."""
    from typer.testing import CliRunner

    from forensics.cli import app
    from forensics.sources.files import claude_code
    from forensics.store import handle

    _transcripts(tmp_path / "in", sessions=12, turns=10)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)
    run, commits = handle.Store.run, [0]

    def interrupted(store: handle.Store, statement: str, params: object = None) -> object:
        found = run(store, statement, params)
        if statement == "COMMIT":
            commits[0] += 1
            if commits[0] == 3:  # (the first commits: the migrations, then a batch)
                os.kill(os.getpid(), signal.SIGINT)
        return found

    monkeypatch.setattr(handle.Store, "run", interrupted)
    db = tmp_path / "s.duckdb"
    out = CliRunner().invoke(app, ["ingest", "claude-code", str(tmp_path / "in"), "--db", str(db)])
    monkeypatch.setattr(handle.Store, "run", run)
    assert out.exit_code == 130, out.output
    stored = api.sessions(db)["events"].sum()
    assert stored > 0
    assert api.ingests(db)["rows_loaded"].to_list() == [stored]
    assert out.stderr.strip().splitlines()[-1] == (
        f"Interrupted: the {stored:,} records loaded before it are kept; the same ingest "
        "again loads the rest.")  # fmt: skip


def test_a_stop_before_a_batch_commits_undoes_it_and_the_run_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop that lands after a batch's statements, just before its COMMIT (here: as the
    hold around the COMMIT begins): the batch is undone and the run's ledger row written
    (the transaction was left open, the ledger's own then failed, and the run showed as
    killed). The committed batch before it is counted."""
    from forensics.ingest import pipeline
    from forensics.sources.files import claude_code

    _transcripts(tmp_path / "in", sessions=12, turns=10)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)
    held, entered = pipeline.stops_held, [0]

    def stopping(**kwargs: bool) -> object:
        if kwargs.get("second_now"):  # (the COMMIT's; prefetch's waits hold stops too)
            entered[0] += 1
            if entered[0] == 2:
                raise KeyboardInterrupt
        return held(**kwargs)

    monkeypatch.setattr(pipeline, "stops_held", stopping)
    db = tmp_path / "s.duckdb"
    with pytest.raises(KeyboardInterrupt):
        api.ingest_claude_code(db, [tmp_path / "in"])
    stored = api.sessions(db)["events"].sum()
    assert entered[0] == 2
    assert api.ingests(db).select("status", "rows_loaded").rows() == [("interrupted", stored)]


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_the_process_tears_down_leaves_the_commands_exit_code(
    tmp_path: Path, how: signal.Signals
) -> None:
    """Python puts the system's own stop handlers back after its exit handlers, while it
    frees the modules; a stop landing then ended a command that had done its work with
    -2 or -15 and no word. Here the teardown is made long on purpose: an object of the
    script's own, freed with its module, says so and sleeps, and the stop lands then,
    with another thread running (a stop the main thread blocks goes to that one)."""
    ready = tmp_path / "tearing-down"
    script = (
        "import pathlib, time\n"
        "class Slow:\n"
        "    def __del__(self):\n"
        f"        pathlib.Path({str(ready)!r}).touch()\n"
        "        time.sleep(1.5)\n"
        "slow = Slow()\n"
        # a second thread, as a command has DuckDB's and polars': one gets a stop the
        # main thread blocks
        "import threading\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "from forensics.cli import main\n"
        "main()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, "--version"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.exists(), proc.communicate(timeout=60)
    proc.send_signal(how)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err  # the command's: it printed its version
    assert out.startswith("agent-forensics ") and not err, (out, err)


def test_a_second_stop_while_a_reading_thread_is_waited_for_is_raised_after_it_ended() -> None:
    """A stop closes the ingest's reading thread and waits for it (it may be inside
    DuckDB's normaliser). A second stop raised inside that wait left the thread running
    as the interpreter exited, where a thread inside DuckDB aborts the process (SIGABRT,
    seen once in 180 double stops). Now the second stop is raised once the thread ended.
    (Real signals; the batch the thread works on is a sleep. Whether the thread ended is
    what it did last, not `is_alive()`: Python 3.11 takes a wait a signal interrupted
    for the thread's end.)"""
    import threading

    from forensics.ingest.pipeline import prefetch

    busy, ended = threading.Event(), threading.Event()

    def batches():
        try:
            yield 1
            busy.set()
            time.sleep(1.0)  # (the next batch being normalised)
            yield 2
        finally:
            ended.set()  # (the thread closes what it reads, last)

    read = prefetch(batches())
    assert next(read) == 1
    assert busy.wait(10)
    second = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    second.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            read.throw(KeyboardInterrupt)  # the first stop, where the ingest consumes
        assert ended.is_set()
    finally:
        second.join()
        ended.wait(10)


def test_work_after_a_stop_finishes_and_keeps_its_answer_when_another_lands() -> None:
    """What an ingest does after a stop (ask the ledger whether the run ended, write its
    row) runs to its end when a second stop lands in it (a real SIGINT, here), and keeps
    its answer: the second stop is passed over, the first being said. Raised inside it,
    the row was lost (the run listed `unrecorded`) with the stop's message."""
    from forensics.ingest.pipeline import _quietly_held

    steps: list[str] = []

    def step(answer: int) -> int:
        steps.append("began")
        signal.raise_signal(signal.SIGINT)
        steps.append("ended")
        return answer

    assert _quietly_held(step, 7) == 7
    assert steps == ["began", "ended"]


def test_a_second_stop_keeps_the_first_ones_account_of_what_was_kept() -> None:
    """A second stop raised while the first one's account (the ingest was committed,
    its facts not built) was on its way out replaced it, and the command said that
    nothing was committed (3 of 61 double stops of committed ingests). The account is
    found in what the second one replaced."""
    from forensics.cli.common import _kept_account
    from forensics.errors import FactsInterrupted

    try:
        try:
            raise FactsInterrupted.after_commit(6_400)
        except FactsInterrupted:
            try:
                raise RuntimeError("a memory cap set back")  # (any clean-up on the way)
            except RuntimeError:
                raise KeyboardInterrupt from None  # (the second stop; `from None` too)
    except KeyboardInterrupt as second:
        found = _kept_account(second)
    assert found is not None and "the ingest was committed (6,400 events loaded)" in found.message
    assert _kept_account(KeyboardInterrupt()) is None


def test_a_stop_as_an_ingest_ends_says_it_was_committed(tmp_path: Path, monkeypatch) -> None:
    """A stop landing after an ingest and its facts returned (the store being closed, a
    checkpoint; the summary being printed) was said as 'nothing from this run was
    committed' (2 of 60 trials of a sweep of stops): the run is committed, and said so.
    (The stop is raised as the store's close returns: where a signal during it lands.)"""
    from forensics.cli.common import Format
    from forensics.cli.ingest import report_ingest
    from forensics.errors import FactsInterrupted
    from forensics.store import Store

    db = tmp_path / "s.duckdb"
    close = Store.close

    def closed_then_stopped(self: Store) -> None:
        close(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "close", closed_then_stopped)
    sample = Path(__file__).resolve().parents[1] / "sample_data" / "adk_v1.db"
    with pytest.raises(FactsInterrupted, match="the ingest was committed: the stop came"):
        api.ingest_sqlite(db, sample)
    monkeypatch.setattr(Store, "close", close)
    assert api.ingests(db)["status"].to_list() == ["ok"]
    assert api.sessions(db).height == 3
    result = api.ingest_sqlite(db, sample)  # (nothing new: its summary, stopped)

    def stopped(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("forensics.cli.ingest.echo", stopped)
    with pytest.raises(FactsInterrupted, match=r"committed \(0 records loaded\): the stop"):
        report_ingest(result, Format.table, db)
