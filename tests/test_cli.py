"""The CLI: exact messages, the JSON contract, help everywhere, a light start-up."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.secrets import Secret, redact

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture
def store(tmp_path):
    from test_store import make_sqlite_service_db

    db = tmp_path / "f.duckdb"
    src = make_sqlite_service_db(tmp_path / "adk.db")
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(src), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


def _json(args: list[str]) -> list[dict]:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_json_contracts(store):
    sessions = _json(["sessions", "--db", str(store)])
    assert len(sessions) == 2
    assert {"app_name", "user_id", "session_id", "events", "turns", "first_event_at",
            "last_event_at", "source"} <= sessions[0].keys()
    assert sessions[0]["events"] == 6 and sessions[0]["turns"] == 2
    assert sessions[0]["first_event_at"] == "2025-10-22T09:00:00Z"
    assert sessions[0]["provenance"] == {"prompt_tokens": "measured"}
    events = _json(["events", "s0", "--db", str(store)])
    assert len(events) == 6
    assert {"event_id", "invocation_id", "author", "timestamp", "kinds", "chars",
            "prompt_tokens", "candidates_token_count", "cached_tokens", "error_code",
            "is_compaction"} <= events[0].keys()
    assert events[0]["kinds"] == ["text"] and events[0]["chars"] == 10
    assert events[0]["provenance"]["prompt_tokens"] == "measured"
    ingests = _json(["ingests", "--db", str(store)])
    assert {"source", "started_at", "rows_read", "rows_loaded", "rows_skipped",
            "skip_reasons"} <= ingests[0].keys()
    assert ingests[0]["skip_reasons"] == {}
    assert ingests[0]["source"].startswith("adk-sqlite:")


def test_table_has_totals_computed_in_code(store):
    result = runner.invoke(app, ["events", "s0", "--db", str(store)])
    assert result.exit_code == 0
    total = [line for line in result.stdout.splitlines() if line.startswith("total")]
    assert total and re.search(r"\b75\b", total[0])  # chars 10+11+...+15
    csv = runner.invoke(app, ["sessions", "--db", str(store), "--format", "csv"]).stdout
    assert csv.splitlines()[0].startswith("app_name,user_id,session_id,events")


def test_ingest_twice_says_nothing_new(store, tmp_path):
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "adk.db"),
                                 "--db", str(store)])
    assert result.exit_code == 0
    assert "no new events (read 6, all already stored)" in result.stdout
    assert "reads from 10 minutes before it" in result.stdout


def test_missing_store_and_unknown_session_are_clear_errors(store, tmp_path):
    result = runner.invoke(app, ["sessions", "--db", str(tmp_path / "nope.duckdb")])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"Error: no store at {tmp_path / 'nope.duckdb'}"
    result = runner.invoke(app, ["events", "zzz", "--db", str(store)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: no session 'zzz' in the store", "Hint: known sessions include: s0, s1"]
    # a session an --app or --user leaves out is named as such, with whose it is
    keys = _json(["sessions", "--db", str(store)])
    s0 = next(row for row in keys if row["session_id"] == "s0")
    result = runner.invoke(app, ["turns", "s0", "--app", "other", "--db", str(store)])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: session 's0' is not of --app other",
        f"Hint: it is of --app {s0['app_name']} --user {s0['user_id']}"]
    failures = runner.invoke(app, ["failures", "s0", "--app", "other", "--db", str(store)])
    assert failures.exit_code == 1
    assert failures.stderr.splitlines() == result.stderr.splitlines()


def test_bad_dates_and_unknown_files(tmp_path):
    result = runner.invoke(app, ["ingest", "adk-sqlite", "x.db", "--since", "yesterday",
                                 "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: --since 'yesterday' is not a date or time")
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "missing.db"),
                                 "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {tmp_path / 'missing.db'}: no such file")


def test_a_failed_first_ingest_leaves_no_store_behind(tmp_path, store):
    """Issue 33: a mistyped path (an error), or a source whose every row was skipped,
    into a store the ingest would create: no empty store is left, so the next command
    says there is none; into an existing store, the run is in the ledger as failed."""
    db = tmp_path / "new.duckdb"
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "mistyped.db"),
                                 "--db", str(db)])  # fmt: skip
    assert result.exit_code == 1 and not db.exists()
    result = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "mistyped.json"),
                                 "--db", str(db)])  # fmt: skip
    assert result.exit_code == 1 and not db.exists() and not Path(f"{db}.wal").exists()
    assert result.stderr.splitlines()[-1] == (
        "Error: nothing loaded: every event read was skipped (1; reasons above)")
    result = runner.invoke(app, ["sessions", "--db", str(db)])
    assert result.stderr.splitlines()[0] == f"Error: no store at {db}"
    # Claude Code transcripts of no readable line: the file's row a run keeps is no load
    # (it was, and the store stayed, holding that row and the failed run only)
    (tmp_path / "cc" / "projects" / "p").mkdir(parents=True)
    (tmp_path / "cc" / "projects" / "p" / "s1.jsonl").write_text("{not json\n")
    result = runner.invoke(app, ["ingest", "claude-code", str(tmp_path / "cc"), "--db", str(db)])
    assert result.exit_code == 1 and not db.exists(), result.output
    # the same into a store that exists: kept, and the ledger does not call the run ok
    result = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "mistyped.json"),
                                 "--db", str(store)])  # fmt: skip
    assert result.exit_code == 1 and store.exists()
    ledger = _json(["ingests", "--db", str(store)])
    newest = max(ledger, key=lambda r: r["ingest_id"])
    assert (newest["status"], newest["error"]) == (
        "failed", "nothing loaded: each of the 1 read was skipped")


def test_a_connection_error_is_printed_on_one_line(tmp_path):
    """psycopg's message holds a newline and a tab: its lines are joined, not printed as
    the escapes `\\x0a\\x09` (an error is one line: a newline in it is data's)."""
    result = runner.invoke(app, ["ingest", "adk-postgres",
                                 "postgresql://u:secret@127.0.0.1:1/db",  # nothing listens
                                 "--db", str(tmp_path / "c.duckdb")])  # fmt: skip
    assert result.exit_code == 1
    assert "\\x09" not in result.stderr and "secret" not in result.stderr
    assert "Connection refused; Is the server running" in result.stderr.splitlines()[0]
    assert not (tmp_path / "c.duckdb").exists()


def test_unknown_sqlite_layout_names_the_columns(tmp_path):
    import sqlite3

    con = sqlite3.connect(tmp_path / "odd.db")
    con.execute("CREATE TABLE events (id TEXT, payload TEXT)")
    con.commit()
    con.close()
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "odd.db"),
                                 "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"Error: {tmp_path / 'odd.db'}: table 'events' is neither ADK layout: it has neither "
        "event_data (schema V1) nor actions (schema V0) (columns: id, payload)")
    (tmp_path / "text.db").write_text("not sqlite at all " * 100)
    result = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "text.db"),
                                 "--db", str(tmp_path / "f.duckdb")])
    assert result.exit_code == 1
    assert "not a SQLite database" in result.stderr


@pytest.mark.parametrize("dsn,shown", [
    ("postgresql://ann:s3cr%40t@db.example:5432/adk?sslmode=require",
     "postgresql://ann@db.example:5432/adk?sslmode=require"),
    ("postgresql://ann@db/adk?password=s3cr%40t", "postgresql://ann@db/adk"),
    # libpq takes # and ? inside a URL password; a URL parser would cut there
    ("postgresql://ann:s3#cr@db/adk", "postgresql://ann@db/adk"),
    ("postgresql://ann:s3?cr@db:5433/adk?sslmode=require",
     "postgresql://ann@db:5433/adk?sslmode=require"),
    ("postgres:///adk?host=/run/pg&password=s3x", "postgres:///adk?host=%2Frun%2Fpg"),
    ("host=db user=ann password='s3 cr@t' dbname=adk", "user=ann dbname=adk host=db"),
    ("host=db password=s3cr@t", "host=db"),
    ("postgresql://ann:s3@[broken", "<unparseable connection string>"),
])
def test_redact_removes_passwords(dsn, shown):
    assert redact(dsn) == shown
    assert "s3" not in str(Secret(dsn)) and "s3" not in repr(Secret(dsn))
    assert Secret(dsn).reveal() == dsn


def test_every_command_has_help_and_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    commands = ["ingest adk-postgres", "ingest adk-sqlite", "ingest adk-json", "sessions",
                "events", "ingests", "demo", "turns", "calls", "window", "growth",
                "compaction", "report incident", "plan", "ingest adk-trace", "fidelity",
                "ingest claude-code", "cache"]
    for command in commands:
        result = runner.invoke(app, [*command.split(), "--help"])
        assert result.exit_code == 0
        assert len(result.stdout) > 200
        assert f"forensics {command}" in readme, command


def _command_paths() -> list[list[str]]:
    from typer.main import get_command

    top = get_command(app)
    paths = []
    for name, command in sorted(top.commands.items()):  # type: ignore[attr-defined]
        paths.append([name])
        paths += [[name, sub] for sub in sorted(getattr(command, "commands", {}))]
    return paths


def test_a_named_command_is_made_alone_and_answers_the_same():
    """The command line makes only the named command's click command (28-44 ms for the
    33 made at every start): each command's help, a usage error and an unknown
    command's "did you mean" are the same as with all of them made, and the app is
    whole after."""
    from forensics.cli import _named_command, _only_the_named

    paths = _command_paths()
    assert len(paths) > 30
    whole = (len(app.registered_commands), len(app.registered_groups))
    for path in [*paths, ["sesions"], ["--debug", "ingest", "nope"]]:
        for tail in (["--help"], ["--no-such-option"]):
            args = [*path, *tail]
            expected = runner.invoke(app, args)
            with _only_the_named(args):
                made = (len(app.registered_commands), len(app.registered_groups))
                got = runner.invoke(app, args)
            assert (got.exit_code, got.output) == (expected.exit_code, expected.output), args
            if path[-1] != "sesions":
                assert sum(made) == 1, (args, made)
        assert (len(app.registered_commands), len(app.registered_groups)) == whole
    assert _named_command(["--workers", "2", "--debug", "cost"]) == "cost"
    assert _named_command(["--workers=2", "cost", "--help"]) == "cost"
    assert _named_command(["--help", "cost"]) is None
    assert _named_command(["--version"]) is None
    assert _named_command([]) is None


def test_help_starts_without_heavy_imports():
    code = ("import sys\nfrom forensics.cli import app\nfrom typer.testing import CliRunner\n"
            "CliRunner().invoke(app, ['--help'])\n"
            "print(sorted(m for m in ('polars', 'duckdb', 'matplotlib', 'psycopg', 'pyarrow') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        (["sessions"], ()),
        # the store's calls are priced where its facts are made: no price tables read
        (["cost", "--by", "turn"], ()),
        (["cost", "--share"], ()),
        (["report", "incident", "incident", "--out", "{tmp}/r.html"], ("jinja2",)),
        (["report", "weekly", "--week", "2026-W43", "--out", "{tmp}/w.html"], ("jinja2",)),
    ],
)
def test_a_command_imports_only_what_it_uses(tmp_path, command, allowed):
    """`sessions` (a query command) reads the store and prints a table: no chart or
    template library, no source client, no price tables (issue 27: start-up). Nothing
    imports pandas (pyarrow's builders would, asked for a table of Python values: 0.2 s)
    or matplotlib (the incident's charts are written directly), nor pydantic (typer 0.29
    validates every parameter with it: 50-60 ms; pyproject keeps typer below it)."""
    db = tmp_path / "q.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    heavy = ("matplotlib", "jinja2", "opensearchpy", "psycopg", "genai_prices", "pandas",
             "pyspark", "google", "pydantic")  # fmt: skip
    argv = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules),"
            " file=sys.stderr))\n"
            f"sys.argv = ['forensics', *{argv!r}, '--db', {str(db)!r}]\n"
            "from forensics.cli import main\nmain()")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
    assert out.stderr.strip().splitlines()[-1] == str(sorted(allowed))


@pytest.mark.parametrize(
    "command",
    [
        ["ingest", "claude-code", "{root}/sample_data/claude_code"],
        ["ingest", "adk-sqlite", "{root}/sample_data/adk_v1.db"],
        ["ingest", "adk-json", "{root}/sample_data/exports/incident.camel.json"],
    ],
)
def test_an_ingest_does_not_import_pandas(tmp_path, command):
    """An ingest and its facts' refresh build their Arrow tables through store/arrow.py:
    pyarrow's builders import pandas where it is installed (43 MB and 0.13 s of every
    ingest). The dev extras install it, so this can fail here."""
    pytest.importorskip("pandas")
    argv = [a.replace("{root}", str(ROOT)) for a in command]
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('pandas' in sys.modules, file=sys.stderr))\n"
            f"sys.argv = ['forensics', *{argv!r}, '--db', {str(tmp_path / 'i.duckdb')!r}]\n"
            "from forensics.cli import main\nmain()")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "read " in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "False"


def test_loaders_import_no_presentation_layers():
    code = ("import sys\nimport forensics.api\n"
            "print(sorted(m for m in ('typer', 'jinja2', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_demo_loads_the_bundled_samples(tmp_path):
    import sqlite3

    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.duckdb")])
    assert result.exit_code == 0, result.output
    con = sqlite3.connect(ROOT / "sample_data" / "adk_v1.db")
    events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    assert f"Loaded {events:,} events" in result.stdout
    sessions = _json(["sessions", "--db", str(tmp_path / "d.duckdb")])
    by_id = {s["session_id"]: s for s in sessions}
    con = sqlite3.connect(ROOT / "sample_data" / "tasks.db")
    task_events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    con.close()
    # the store app's events, then the support app's 12 tasks under two arms
    assert sum(s["events"] for s in sessions if s["app_name"] == "store") == events
    claude = [s for s in sessions if s["user_id"] == "claude-code"]
    assert sum(s["events"] for s in sessions) - sum(s["events"] for s in claude) == (
        events + task_events
    )
    assert f"Loaded {task_events:,} events of 12 tasks" in result.stdout
    # the Claude Code sample's sessions, one per transcript file of a session's own
    own = list((ROOT / "sample_data" / "claude_code" / "projects").glob("*/*.jsonl"))
    assert len(claude) == len([p for p in own if not p.name.startswith("agent-")])
    assert f"Loaded {sum(s['events'] for s in claude):,} events of Claude Code" in result.stdout
    report = (tmp_path / "claude-code-incident.html").read_text()
    failed = api.context_failures(tmp_path / "d.duckdb", api.Selection(family="claude-code"))
    assert failed["session_id"].to_list() == [failed["session_id"][0]]
    assert failed["session_id"][0] in report and "families/claude_code/windows.py" in report
    assert "Weekly review: " in result.stdout and (tmp_path / "review.html").is_file()
    # the Claude Code transcripts' prompt cache: the one break of the sample, priced
    cache = api.cache(tmp_path / "d.duckdb", api.Selection(family="claude-code"))
    assert "What their prompt cache saved" in result.stdout
    assert f"{cache['saved_usd'].sum():.6f}" in result.stdout and cache["breaks"].sum() == 1
    assert by_id["incident"]["errors"] == 1
    # compaction events carry invocation ids of their own and are not turns
    oracle = [json.loads(line) for line in
              (ROOT / "sample_data" / "oracle" / "calls.jsonl").read_text().splitlines()]
    turns = {c["invocation_id"] for c in oracle
             if c["session_id"] == "compaction" and c["kind"] == "agent"}
    assert by_id["compaction"]["turns"] == len(turns)


def test_the_demo_prints_forensics_as_it_can_be_typed(tmp_path, monkeypatch):
    """After `make demo` the command is the virtualenv's until it is activated: the
    demo's "Next:" line names the program as it was run unless PATH finds it."""
    from forensics.cli.report import _typed_forensics

    program = tmp_path / "venv" / "bin" / "forensics"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(program), "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert _typed_forensics() == [str(program)]
    monkeypatch.setenv("PATH", str(program.parent))
    assert _typed_forensics() == ["forensics"]


def test_sessions_by_time_errors_order_and_limit(tmp_path):
    """Issue 33, item 9: `sessions` takes the time filter every other command takes,
    shows only sessions with errors, sorts and limits; the total adds up the rows shown."""
    db = str(tmp_path / "s.duckdb")
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")

    def ids(*args: str) -> list[str]:
        return [r["session_id"] for r in _json(["sessions", *args, "--db", db])]

    assert ids() == ["incident", "parallel", "compaction"]  # the oldest first
    assert ids("--since", "2026-10-22T09:30", "--until", "2026-10-22T10:00") == ["parallel"]
    assert ids("--errors") == ["incident"]
    assert ids("--sort", "events") == ["compaction", "incident", "parallel"]
    assert ids("--sort", "newest", "--limit", "1") == ["compaction"]
    result = runner.invoke(app, ["sessions", "--sort", "events", "--limit", "2", "--db", db])
    assert "total (2 rows)" in result.stdout
    assert result.stderr.strip() == "2 of 3 sessions shown (--limit)"
    # growth takes the same time filter: the tool calls of the sessions in that time
    grown = _json(["growth", "--since", "2026-10-22T09:30", "--until", "2026-10-22T10:00",
                   "--top", "100", "--db", db])  # fmt: skip
    assert {r["session_id"] for r in grown} == {"parallel"} and len(grown) == 7


def test_help_paragraphs_flow_to_the_terminal_s_width():
    """Issue 33, item 9: `--help` kept the docstrings' own line breaks (88 columns) in
    any terminal; a paragraph now flows, an example keeps a line of its own."""
    from forensics.cli.common import flowed

    assert flowed("First line.\n\n    one\n    two\n    - item\n    Example: forensics x\n") == (
        "First line.\n\none two\n- item\nExample: forensics x")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", "from forensics.cli import main; main()",
                          "sessions", "--help"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"}, check=True).stdout  # fmt: skip
    assert ("prompt_tokens is the sum of the provider's usage_metadata over the session "
            "(measured). With --since/--until: the sessions") in out  # one line, not two


def test_columns_chooses_what_a_command_prints(tmp_path):
    """Issue 33, item 9: --columns on every command that prints a frame: those columns,
    in that order, in every format (the totals of the ones shown); a name the frame
    lacks is an error that lists the columns there are."""
    db = str(tmp_path / "s.duckdb")
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    rows = _json(["sessions", "--columns", "events,session_id", "--db", db])
    assert [list(r)[:2] for r in rows] == [["events", "session_id"]] * 3
    table = runner.invoke(app, ["sessions", "--columns", "session_id,errors", "--db", db])
    assert table.stdout.splitlines()[0].split() == ["session_id", "errors"]
    assert table.stdout.splitlines()[-2].split() == ["total", "(3", "rows)", "1"]
    csv = runner.invoke(app, ["calls", "incident", "--columns", "turn,kind", "-f", "csv",
                              "--db", db])  # fmt: skip
    assert csv.stdout.splitlines()[0] == "turn,kind" and len(csv.stdout.splitlines()) == 8
    wrong = runner.invoke(app, ["growth", "--columns", "tool_name,nope", "--db", db])
    assert wrong.exit_code == 1
    assert wrong.stderr.splitlines()[0] == "Error: --columns: no column 'nope' here"
    assert wrong.stderr.splitlines()[1].startswith("Hint: the columns are session_id, ")


_ARENAS = """
import ctypes, os, sys, tempfile, threading
if sys.argv[1] == "cli":
    from forensics.cli import _keep_freed_memory
    _keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")
n = int(sys.argv[2])
held, together = [], threading.Barrier(n)
def grab():  # a block malloc takes in this thread, each thread alive at once
    held.append(bytearray(1 << 20))
    together.wait()
threads = [threading.Thread(target=grab) for _ in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc.fopen.restype = ctypes.c_void_p
handle, path = tempfile.mkstemp()
os.close(handle)
f = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(f))
libc.fclose(ctypes.c_void_p(f))
with open(path) as info:
    print(info.read().count("<heap nr="))
os.remove(path)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator")
def test_the_command_s_threads_share_a_heap_a_core():
    # glibc gives each new thread a heap (arena) of its own, up to eight a core, and
    # each keeps what its thread freed (the command keeps freed blocks for reuse): the
    # command's threads share forensics.cli.ARENAS, counted by glibc's own malloc_info
    from forensics.cli import ARENAS

    def heaps(mode: str) -> int:
        done = subprocess.run([sys.executable, "-c", _ARENAS, mode, str(ARENAS + 4)],
                              capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
        return int(done.stdout)

    assert heaps("cli") == ARENAS < heaps("plain")


def test_skips_of_a_run_whose_new_store_was_not_kept_are_not_sent_to_it(tmp_path):
    """A run that made its store and loaded nothing removes it: the skips past the first
    ten are counted, not left to `ingests --skips` of a store that is gone."""
    bad = tmp_path / "bad.ndjson"
    bad.write_text("\n".join("{not json" for _ in range(12)))
    db = tmp_path / "new.duckdb"
    result = runner.invoke(app, ["ingest", "adk-json", str(bad), "--db", str(db)])
    assert result.exit_code == 1 and not db.exists()
    assert "    ... and 2 more (the store made for them was not kept: nothing was loaded into it)" \
        in result.stdout
    assert "ingests --skips" not in result.output


def test_a_newline_from_data_or_a_path_never_prints_a_line_of_its_own(tmp_path, monkeypatch):
    """A file's name, a path given, a Claude Code line's type, a model's name and a session
    id holding a newline (or a tab) are shown escaped in every message, hint, skip and
    footnote: each printed a line of its own (here, a fake `Error:` line)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FORENSICS_DB", str(tmp_path / "s.duckdb"))
    fake = "\nError: FAKE\t"
    (tmp_path / f"x{fake}.json").write_text("{bad")
    (tmp_path / "good.json").write_text(json.dumps({
        "id": "s1", "app_name": "a", "user_id": "u", "events": [{
            "id": "e1", "author": "user", "timestamp": 1761123600,
            "content": {"role": "user", "parts": [{"text": "hi"}]}}]}))  # fmt: skip
    project = tmp_path / "cc" / "projects" / "p"
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s2", "timestamp": "2026-11-16T10:00:01Z",
         "cwd": "/p", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "u2", "parentUuid": "u1", "sessionId": "s2",
         "timestamp": "2026-11-16T10:00:02Z", "requestId": "r1",
         "message": {"id": "m1", "role": "assistant", "type": "message", "model": f"m{fake}",
                     "content": [{"type": "text", "text": "ok"}],
                     "usage": {"input_tokens": 5, "output_tokens": 2}}},
        {"type": f"x{fake}", "uuid": "u3", "sessionId": "s2", "timestamp": "2026-11-16T10:00:03Z"},
    ]  # fmt: skip
    (project / f"s2{fake}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    said = []
    for args in (["ingest", "adk-json", "good.json", f"x{fake}.json"],
                 ["ingest", "adk-sqlite", f"nope{fake}"],
                 ["ingest", "claude-code", "cc"], ["cost"], ["calls", "--all"],
                 ["turns", "nosuch"], ["ingests", "--skips", "1"]):  # fmt: skip
        result = runner.invoke(app, args)
        said.append(result.output)
        forged = [line for line in result.output.splitlines() if line.startswith("Error: FAKE")]
        assert not forged, result.output
    text = "\n".join(said)
    assert "\nError: FAKE" not in text and "FAKE\t" not in text
    assert text.count("\\x0aError: FAKE\\x09") >= 6, text
