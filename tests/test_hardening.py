"""Hostile input and a newcomer's pass over every command (the hardening issue).

Each test names the defect it guards against; all run against the real code paths
(the CLI through typer's runner, or a subprocess where a signal or terminal matters).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner, Result

from forensics import api
from forensics.cli import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
runner = CliRunner()


# -- 1. a malformed DSN never leaks its password --------------------------------------

LEAKY = [
    "postgresql:/alice:Leak@host/db",  # one slash missing: libpq reads it as key=value
    "mysql://alice:Leak@host/db",  # another scheme
    "postgresql://alice:p@ssLeak@host/db",  # a raw @ inside the password
    "alice:Leak@host/db",
]


@pytest.mark.parametrize("dsn", LEAKY)
@pytest.mark.parametrize("command", [["ingest", "adk-postgres"], ["plan"]])
def test_a_malformed_dsn_is_refused_without_echoing_it(tmp_path, dsn, command):
    db = tmp_path / "f.duckdb"
    extra = ["--db", str(db)] if command[0] == "ingest" else []
    out = runner.invoke(app, [*command, dsn, *extra])
    assert out.exit_code == 1, out.output
    assert "Leak" not in out.output
    assert "it is not shown" in out.output
    if db.exists():  # nothing of it in the store either
        assert b"Leak" not in db.read_bytes()
        assert "Leak" not in json.dumps(api.ingests(db).to_dicts(), default=str)


def test_driver_messages_lose_every_piece_of_the_password():
    from forensics.secrets import Secret, scrub

    dsn = Secret("host=db.invalid user=ann password=Leak0 dbname=adk")
    message = 'connection to "host=db.invalid user=ann password=Leak0 dbname=adk" failed (Leak0)'
    cleaned = scrub(message, dsn)
    assert "Leak0" not in cleaned and "dbname=adk" in cleaned


# -- 3. no network from an offline tool; a non-DuckDB --db is named as such -----------------


def test_every_connection_refuses_to_load_or_fetch_extensions():
    from forensics.store.handle import connect

    con = connect()
    settings = dict(con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN "
        "('autoload_known_extensions', 'autoinstall_known_extensions')").fetchall())
    assert settings == {"autoload_known_extensions": "false",
                        "autoinstall_known_extensions": "false"}


@pytest.mark.parametrize("content,what", [
    (None, "a SQLite database"),
    (b"\x00\x01garbage bytes that are no database at all" * 10, "not a DuckDB file"),
])
def test_a_db_that_is_not_a_store_is_refused(tmp_path, content, what):
    target = tmp_path / "other.db"
    if content is None:
        import shutil
        shutil.copy(SAMPLES / "adk_v1.db", target)
    else:
        target.write_bytes(content)
    before = target.read_bytes()
    for command in (["sessions"], ["ingest", "adk-sqlite", str(SAMPLES / "adk_v1.db")]):
        out = runner.invoke(app, [*command, "--db", str(target)])
        assert out.exit_code == 1, out.output
        assert f"{target} is not a forensics store ({what})" in out.output
    assert target.read_bytes() == before  # untouched


def test_a_directory_as_db_is_named(tmp_path):
    out = runner.invoke(app, ["sessions", "--db", str(tmp_path)])
    assert out.exit_code == 1 and "is a directory, not a forensics store" in out.output


# -- 2. control and bidi characters from data never act on a terminal or a page ------------

RLO, ESC = "\u202e", "\x1b"
HOSTILE_APP = f"shop{RLO}009"
HOSTILE_USER = f"u{ESC}]0;pwned\x07"
HOSTILE_TOOL = f"get{RLO}orders"
HOSTILE_ERROR = f"refused {ESC}[2J{ESC}]52;c;cHduZWQ=\x07 900 tokens{RLO}\x00"


def _hostile_session(path: Path) -> Path:
    def event(n, author, content=None, **extra):
        body = {"id": f"e{n}", "invocationId": "inv-1", "author": author,
                "timestamp": 1_760_000_000 + n, "actions": {}, **extra}
        if content is not None:
            body["content"] = content
        return body

    usage = {"promptTokenCount": 900, "candidatesTokenCount": 10}
    events = [
        event(0, "user", {"role": "user", "parts": [{"text": f"hello {ESC}[31mred"}]}),
        event(1, "agent", {"role": "model", "parts": [{"functionCall": {
            "id": "adk-1", "name": HOSTILE_TOOL, "args": {}}}]}, usageMetadata=usage,
            modelVersion="m"),
        event(2, "agent", {"role": "user", "parts": [{"functionResponse": {
            "id": "adk-1", "name": HOSTILE_TOOL, "response": {"rows": ["x" * 400]}}}]}),
        event(3, "agent", None, errorCode="RESOURCE_EXHAUSTED", errorMessage=HOSTILE_ERROR),
    ]
    session = {"id": "s-1", "appName": HOSTILE_APP, "userId": HOSTILE_USER, "state": {},
               "events": events, "lastUpdateTime": 1_760_000_010}
    path.write_text(json.dumps(session))
    return path


@pytest.fixture()
def hostile_db(tmp_path):
    db = tmp_path / "f.duckdb"
    result = api.ingest_json(db, [_hostile_session(tmp_path / "hostile.json")])
    assert result.rows_loaded == 4
    return db


def _assert_inert(text: str) -> None:
    for raw in (ESC, "\x07", "\x00", RLO):
        assert raw not in text, repr(raw)


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_tables_and_csv_show_control_characters(hostile_db, fmt):
    for command in (["sessions"], ["events", "s-1"], ["calls", "s-1"], ["growth"]):
        out = runner.invoke(app, [*command, "--db", str(hostile_db), "-f", fmt])
        assert out.exit_code == 0, out.output
        _assert_inert(out.output)
    out = runner.invoke(app, ["sessions", "--db", str(hostile_db), "-f", fmt])
    assert "shop\\u202e009" in out.output and "u\\x1b]0;pwned\\x07" in out.output


def test_json_keeps_the_exact_text_escaped(hostile_db):
    out = runner.invoke(app, ["sessions", "--db", str(hostile_db), "-f", "json"])
    _assert_inert(out.output)
    (row,) = json.loads(out.output)
    assert (row["app_name"], row["user_id"]) == (HOSTILE_APP, HOSTILE_USER)


def test_hints_from_data_are_inert(hostile_db):
    out = runner.invoke(app, ["events", "nope", "--db", str(hostile_db)])
    assert out.exit_code == 1
    _assert_inert(out.output)


def test_the_report_isolates_and_shows_hostile_text(hostile_db, tmp_path):
    out_file = tmp_path / "r.html"
    out = runner.invoke(app, ["report", "incident", "s-1", "--db", str(hostile_db),
                              "--out", str(out_file)])
    assert out.exit_code == 0, out.output
    page = out_file.read_text(encoding="utf-8")
    _assert_inert(page)
    assert "<bdi>shop\\u202e009</bdi>" in page
    assert "refused \\x1b[2J" in page


# -- 5. one deeply nested event is one skipped row ------------------------------------------


def _event(n: int, **extra) -> dict:
    return {"id": f"e{n}", "invocationId": "inv", "author": "user", "timestamp": 1.0 + n,
            "content": {"role": "user", "parts": [{"text": f"message {n}"}]}, **extra}


def test_a_deeply_nested_event_is_skipped_and_the_rest_loads(tmp_path):
    deep = json.dumps(_event(1))[:-1] + ', "customMetadata": ' + '{"a": ' * 1200 + "{}" \
        + "}" * 1200 + "}"
    (tmp_path / "deep.json").write_text(f"[{json.dumps(_event(0))}, {deep}, "
                                        f"{json.dumps(_event(2))}]")
    (tmp_path / "deep.ndjson").write_text(deep + "\n" + json.dumps(_event(3)) + "\n")
    (tmp_path / "good.json").write_text(json.dumps([_event(4)]))
    paths = [tmp_path / n for n in ("deep.json", "deep.ndjson", "good.json")]
    result = api.ingest_json(tmp_path / "f.duckdb", paths)
    assert result.rows_loaded == 4
    reasons = {s.locator: s.reason for s in result.skips}
    too_deep = "nested too deeply to read (over about 1,000 levels of objects and lists)"
    assert reasons == {f"{tmp_path / 'deep.json'}: event 1": too_deep,
                       f"{tmp_path / 'deep.ndjson'}:1": too_deep}


# -- 6. an ingest that loaded nothing readable fails; not-events files said once ------------


@pytest.mark.parametrize("name,content,reason", [
    ("missing.json", None, "no such file"),
    ("adir", "dir", "a directory, not a JSON file (give the files in it)"),
    ("empty.json", b"", "empty file"),
    ("binary.json", b"\x89PNG\r\n\x1a\n\x00\x00",
     "not UTF-8 text (a binary file?): byte 0 is 0x89"),
    ("spans.json",
     json.dumps([{"name": "call_llm", "span_id": 1, "trace_id": 2}] * 30).encode(),
     "a trace export (spans), not ADK events: load it with `forensics ingest adk-trace`"),
    ("otlp.json", json.dumps({"resourceSpans": []}).encode(),
     "a trace export (spans), not ADK events: load it with `forensics ingest adk-trace`"),
    ("numbers.json", b"[1, 2, 3]",
     "not ADK events: none of its 3 items has author, content, invocation_id, actions or "
     "timestamp"),
])
def test_an_unreadable_input_fails_the_run_with_its_reason(tmp_path, name, content, reason):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    for fmt in ("table", "json"):
        out = runner.invoke(app, ["ingest", "adk-json", str(path), "--db",
                                  str(tmp_path / "f.duckdb"), "-f", fmt])
        assert out.exit_code == 1, out.output
        assert "Error: nothing loaded: every event read was skipped (1; reasons above)" \
            in out.output
    assert f"{path}: {reason}" in runner.invoke(
        app, ["ingest", "adk-json", str(path), "--db", str(tmp_path / "f.duckdb")]).output


def test_a_partly_readable_run_succeeds(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps([_event(0)]))
    out = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "good.json"),
                              str(tmp_path / "missing.json"), "--db", str(tmp_path / "f.duckdb")])
    assert out.exit_code == 0, out.output
    assert "read 2 events: loaded 1 new, 0 already stored, skipped 1" in out.output
    again = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "good.json"),
                                "--db", str(tmp_path / "f.duckdb")])
    assert again.exit_code == 0 and "no new events (read 1, all already stored)" in again.output


def test_adk_sqlite_on_a_directory_says_so(tmp_path):
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path), "--db",
                              str(tmp_path / "f.duckdb")])
    assert out.exit_code == 1
    assert f"{tmp_path} is a directory, not an ADK SQLite file" in out.output


# -- 4. Ctrl-C at any moment of an ingest: nothing committed, exit 130, ledger says so ------


def _big_ndjson(path: Path, events: int = 24_000) -> Path:
    with path.open("w") as f:
        for i in range(events):
            # user messages only: no model call, so the facts after the ingest are quick
            # (one session's 12,000 calls would be rebuilt at 24,000 events each)
            f.write(json.dumps({"id": f"e{i}", "invocationId": f"inv{i // 10}",
                                "author": "user",
                                "timestamp": 1.7e9 + i,
                                "content": {"role": "user", "parts": [{"text": "x" * 2000}]}})
                    + "\n")
    return path


def test_ctrl_c_during_an_ingest_commits_nothing_and_a_rerun_loads_all(tmp_path):
    """A real ingest in a subprocess, SIGINT sent at several points after it opened the
    store (reading, normalising, inserting: DuckDB raises its interrupt differently in
    each)."""
    import signal
    import subprocess
    import sys
    import time

    data = _big_ndjson(tmp_path / "big.ndjson")
    command = [sys.executable, "-c", "from forensics.cli import main; main()", "ingest",
               "adk-json", str(data), "--app", "a", "--user", "u"]

    def started(db):
        proc = subprocess.Popen([*command, "--db", str(db)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not db.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return proc

    # the stops are placed through one uninterrupted run's time, from the store's creation
    # to its end: a faster machine, or a busier one, moves every phase (on two busy cores
    # the stops at 0.45 and 0.6 of it have both landed after the end)
    proc = started(tmp_path / "whole.duckdb")
    clock = time.monotonic()
    assert proc.wait(timeout=120) == 0
    whole = time.monotonic() - clock
    outcomes = []
    for fraction in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6):
        db = tmp_path / f"at-{fraction}.duckdb"
        proc = started(db)
        time.sleep(fraction * whole)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        if proc.returncode == 0 or "as the command ended" in err:  # it finished first
            assert api.sessions(db)["events"].to_list() == [24_000]  # complete, committed
            outcomes.append("finished")
            continue
        assert proc.returncode == 130, err
        if "the ingest was committed" in err:  # it landed while the facts were built
            assert api.ingests(db)["status"].to_list() == ["ok"]
            assert api.sessions(db)["events"].to_list() == [24_000]  # and they are now
            outcomes.append("facts")
            continue
        assert err.strip().endswith("Interrupted: nothing from this run was committed."), err
        assert "unexpected" not in err
        # stopped before the run began (while the store was created): no ledger row
        statuses = api.ingests(db)["status"].to_list()
        assert statuses in ([], ["interrupted"])
        assert api.sessions(db).is_empty()
        rerun = api.ingest_json(db, [data], app="a", user="u")
        assert rerun.rows_loaded == 24_000
        outcomes.append("ledger" if statuses else "before the run")
    assert outcomes.count("ledger") >= 3, outcomes


# -- 7. the README's commands, in its order, on the sample data -----------------------------

# tests/test_adk_postgres.py, test_plan.py; the loopback OpenSearch: test_opensearch_ingest.py
NEEDS_A_SERVER = ("ingest adk-postgres", "plan ", "ingest opensearch ")
# run through the command line by tests/test_facts.py on an export of every family (its
# facts compared with the local engine's): Spark's start and jobs took 35-50 s here
SPARK = "forensics analyze --engine spark "


def _readme_commands() -> list[str]:
    """Every `forensics ...` line of the README's sh blocks, continuations joined."""
    import re

    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("forensics "):
                commands.append(line)
    return commands


def test_every_readme_command_runs_in_order(tmp_path, monkeypatch):
    import glob
    import shlex

    monkeypatch.chdir(ROOT)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # `demo`'s store: not left in /tmp
    env = {"FORENSICS_DB": str(tmp_path / "readme.duckdb")}
    ran = []
    for line in _readme_commands():
        if any(line.startswith(f"forensics {s}") for s in NEEDS_A_SERVER):
            continue
        if line.startswith(SPARK):  # the options test_facts.py gives it, and no other
            assert [w for w in shlex.split(line)[1:] if not w.startswith(("exports/", "facts/"))
                    ] == ["analyze", "--engine", "spark", "--input", "--output"], line
            continue
        line = re.sub(r"\s*\[[^]]*\]", "", line)  # optional arguments left out
        call_id = None
        if "CALL_ID" in line:
            calls = json.loads(runner.invoke(app, ["calls", "incident", "-f", "json"],
                                              env=env).output)
            call_id = calls[-1]["call_id"]
        args = []
        for word in shlex.split(line)[1:]:
            word = word.replace("CALL_ID", call_id or "").replace("SESSION_ID", "incident")
            word = word.replace("traces/*.json", "tests/adk_releases/2.13.0/trace.otlp.json")
            if word.endswith((".html", ".duckdb")) or word.startswith(("exports/", "facts/")):
                word = str(tmp_path / word)  # nothing written into the checkout
            args += sorted(glob.glob(word)) if "*" in word else [word]
        out = runner.invoke(app, args, env=env)
        assert out.exit_code == 0, f"{line}\n{out.output}"
        ran.append(line)
        if args[:2] == ["ingest", "adk-json"]:
            # the exports hold the database's events: none stored twice
            sessions = json.loads(runner.invoke(app, ["sessions", "-f", "json"], env=env).output)
            assert sorted(s["session_id"] for s in sessions) == ["compaction", "incident",
                                                                  "parallel"]
            alone = tmp_path / "db-only.duckdb"
            api.ingest_sqlite(alone, SAMPLES / "adk_v1.db")
            assert sum(s["prompt_tokens"] for s in sessions) == api.sessions(alone)[
                "prompt_tokens"].sum()
    assert len(ran) >= 15


def test_demo_refuses_a_store_in_use(tmp_path):
    db = tmp_path / "investigation.duckdb"
    api.ingest_json(db, [SAMPLES / "exports" / "parallel.camel.json"])
    out = runner.invoke(app, ["demo", "--db", str(db)])
    assert out.exit_code == 1
    assert f"{db} already holds 1 session: the demo does not load" in out.output
    assert api.sessions(db).height == 1


# -- 8. a report names only its own session's sources; a session knows its files -----------


def test_sources_are_per_session(tmp_path):
    from forensics.reports.incident import build_incident

    db = tmp_path / "f.duckdb"
    exports = SAMPLES / "exports"
    api.ingest_json(db, [exports / "parallel.camel.json", exports / "compaction.camel.json"])
    secret_path = tmp_path / "private-customer-x" / "other.json"
    secret_path.parent.mkdir()
    secret_path.write_text(json.dumps([_event(0)]))
    api.ingest_json(db, [secret_path], app="other", user="x")
    sources = {r["session_id"]: r["source"] for r in api.sessions(db).iter_rows(named=True)}
    assert sources["parallel"] == f"adk-json:{exports / 'parallel.camel.json'}"
    assert sources["compaction"] == f"adk-json:{exports / 'compaction.camel.json'}"
    method = build_incident(db, "parallel").method
    assert method is not None
    from forensics.reports.incident import portable

    # the file as a shared page names it: relative to here, or its name (issue 31)
    assert method.sources == [
        portable(f"adk-json:{exports / 'parallel.camel.json'}")
        + " (no filters; ingest 1, 6 events of this session)"
    ]
    assert str(ROOT) not in method.sources[0] and "parallel.camel.json" in method.sources[0]
    assert "private-customer-x" not in json.dumps(method.sources)


# -- 9. validation: each bad argument or state gets a clear error and a non-zero exit -------


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("hardening") / "f.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    return db


@pytest.mark.parametrize("args,message", [
    (["growth", "--top", "0"], "Invalid value for '--top'"),
    (["growth", "--top", "-5"], "Invalid value for '--top'"),
    (["calls", "incident", "--turn", "99"], "no turn 99: the session has turns 1 to 2"),
    (["report", "incident", "incident", "--turn", "5", "--out", "/tmp/x.html"],
     "no turn 5: the session has turns 1 to 2"),
    (["ingests", "--skips", "99"], "no ingest 99 in the store (ingests 1 to 1)"),
    (["report", "incident", "incident", "--out", "/nonexistent-folder/r.html"],
     "cannot write /nonexistent-folder/r.html: the folder /nonexistent-folder does not exist"),
    # a sweep of the command line (each was a traceback or "unexpected"):
    (["sessions", "--columns", ""], "Error: --columns names no column"),
    (["sessions", "--columns", "session_id,session_id"], "--columns names 'session_id' twice"),
    (["sessions", "--limit", str(10**30)], "--limit 1,000,000,000,000,000,000,000,000,000,000 "
     "is past the largest number it takes (9,223,372,036,854,775,807)"),
    (["growth", "--top", str(2**63)], "--top 9,223,372,036,854,775,808 is past the largest"),
    (["whatif", "--row-cap", str(10**30)], "--row-cap 1,000,000,000,000,000,000,000,000,000,000"),
    (["whatif", "--token-cap", "100", "--chars-per-token", "1e-300"],
     "--chars-per-token 1e-300 is not a number of characters a token, 0.01 or more"),
    (["ingest", "adk-postgres", "postgresql://u@127.0.0.1:1/x", "--statement-timeout", "nan"],
     "--statement-timeout nan is not a number it takes"),
    (["ingest", "adk-postgres", "postgresql://u@127.0.0.1:1/x", "--statement-timeout", "0"],
     "--statement-timeout 0 is under a millisecond: PostgreSQL would run every statement "
     "without a limit"),
    (["ingest", "adk-postgres", "postgresql://u@127.0.0.1:1/x", "--statement-timeout", "0.0004"],
     "--statement-timeout 0.0004 is under a millisecond"),
    (["breakeven", "--reduction", "1e-39"], "--reduction 1e-39 is not a cut between 1e-06"),
    (["whatif", "--token-cap", "100", "--tool", "get_order_histroy"],  # (a typo guarded nothing)
     "--tool 'get_order_histroy': no tool result in the store came from it"),
    (["report", "weekly", "--week", "9999-W52", "--out", "/tmp/x.html"],
     "--week '9999-W52' is outside the years the store holds, 1970 to 2999"),
    (["report", "weekly", "--since", "0001-01-01", "--until", "9999-12-31", "--out", "/tmp/x.html"],
     "is outside the years the store holds"),
    (["report", "incident", "incident", "--out", "/tmp/" + "x" * 300],
     "File name too long"),
])  # fmt: skip
def test_bad_arguments_are_errors(sample_db, args, message):
    out = runner.invoke(app, [*args, "--db", str(sample_db)])
    assert out.exit_code != 0, out.output
    assert message in out.output
    assert "unexpected" not in out.output and "Traceback" not in out.output


def test_a_struct_column_chosen_for_a_table_is_shown_as_its_fields(sample_db):
    """`calls --columns by_role` in a table (which unnests by_role) named a column the
    table no longer had: unexpected KeyError. No server is needed to refuse a timeout of
    0 (no limit to PostgreSQL) or an empty --index (every index of the cluster)."""
    out = runner.invoke(app, ["calls", "incident", "--columns", "call_id,by_role",
                              "--db", str(sample_db)])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert out.output.split()[:3] == ["call_id", "user", "model"]
    out = runner.invoke(app, ["plan", "postgresql://u@127.0.0.1:1/x", "--statement-timeout", "0"])
    assert out.exit_code == 1 and "--statement-timeout 0 is under a millisecond" in out.output
    out = runner.invoke(app, ["ingest", "opensearch", "http://127.0.0.1:1", "--index", "",
                              "--db", str(sample_db)])  # fmt: skip
    assert out.exit_code == 1, out.output
    assert "--index '' names no index: it would search every index of the cluster" in out.output


def test_format_names_and_version(sample_db):
    out = runner.invoke(app, ["sessions", "--db", str(sample_db), "--format", "JSON"])
    assert out.exit_code == 0 and json.loads(out.output)[0]["session_id"] == "incident"
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.output.startswith("agent-forensics ")


def test_a_truncated_store_is_named_damaged(sample_db, tmp_path):
    cut = tmp_path / "cut.duckdb"
    cut.write_bytes(sample_db.read_bytes()[:200_000])
    out = runner.invoke(app, ["sessions", "--db", str(cut)])
    assert out.exit_code == 1
    assert f"the store {cut} is damaged or incomplete" in out.output


def test_a_locked_store_says_who_holds_it(sample_db, tmp_path, monkeypatch):
    """Another process holds the store (as a running ingest does): the command waits
    FORENSICS_LOCK_WAIT seconds, then names the holder's PID."""
    import subprocess
    import sys

    locked = tmp_path / "locked.duckdb"
    locked.write_bytes(sample_db.read_bytes())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('READY', flush=True); time.sleep(60)", str(locked)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "READY"
        monkeypatch.setenv("FORENSICS_LOCK_WAIT", "0.5")
        out = runner.invoke(app, ["sessions", "--db", str(locked)])
        assert out.exit_code == 1
        assert f"the store {locked} is in use by another process (PID {holder.pid}" in out.output
        assert "waited 0.5 s" in out.output
        # not a forensics command: no ingest is named (a running ingest was, whatever held it)
        assert "Hint: another program holds it (one writer, or readers only): wait for it, " \
            "or set FORENSICS_LOCK_WAIT to wait longer" in out.output, out.output
    finally:
        holder.kill()
        holder.wait()
    assert runner.invoke(app, ["sessions", "--db", str(locked)]).exit_code == 0
    # a forensics command holds it: named by its command words, never its arguments
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; import forensics.cli; "
         "c = duckdb.connect(sys.argv[4]); print('READY', flush=True); time.sleep(60)",
         "ingest", "adk-postgres", "postgresql://u:s3cret@db/x", str(locked)],
        stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "READY"
        out = runner.invoke(app, ["sessions", "--db", str(locked)])
        assert out.exit_code == 1
        assert "Hint: `forensics ingest adk-postgres` holds it until it ends: wait for it, or " \
            "set FORENSICS_LOCK_WAIT to wait longer" in out.output, out.output
        assert "s3cret" not in out.output
    finally:
        holder.kill()
        holder.wait()


def test_a_store_holder_is_named_by_the_command_line_s_own_commands():
    """handle.COMMANDS and SUBCOMMANDS (the words a holder of the store is named by, and
    only those: an argument is never shown) are the command line's."""
    from forensics.store import handle

    def named(command) -> str:
        return (command.name or command.callback.__name__).replace("_", "-")

    groups = {g.name: {named(c) for c in g.typer_instance.registered_commands}
              for g in app.registered_groups}  # fmt: skip
    assert handle.COMMANDS == {named(c) for c in app.registered_commands} | set(groups)
    assert handle.SUBCOMMANDS == groups


@pytest.mark.parametrize("args,named", [
    (["events", "s-001"], "forensics events"),  # a session id is an argument
    (["ingest", "adk-postgres", "postgresql://u:pw@h/db"], "forensics ingest adk-postgres"),
    (["--label", "forensics", "hunter2"], "forensics"),  # never a word after an option
    (["report", "hunter2"], "forensics report"),
])
def test_a_store_holder_is_named_by_command_words_only(args, named):
    import subprocess
    import sys
    import time

    from forensics.store.handle import _holder_command

    code = "import time; time.sleep(30)  # as forensics.cli runs"
    proc = subprocess.Popen([sys.executable, "-c", code, *args])
    try:
        deadline = time.monotonic() + 10
        while _holder_command(proc.pid) != named and time.monotonic() < deadline:
            time.sleep(0.05)  # (until the interpreter has its arguments)
        assert _holder_command(proc.pid) == named
    finally:
        proc.kill()
        proc.wait()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *args])
    try:
        time.sleep(0.2)
        assert _holder_command(other.pid) is None  # not ours: not named
    finally:
        other.kill()
        other.wait()


def test_help_shows_no_type_after_a_flag():
    out = runner.invoke(app, ["ingest", "adk-sqlite", "--help"], env={"COLUMNS": "120"})
    assert out.exit_code == 0
    assert "<bool>" not in out.output and "--full" in out.output


# -- 10. tables keep what matters: locators whole, both ends of long text, milliseconds -----


def test_tables_cut_in_the_middle_and_keep_locators_and_milliseconds(tmp_path):
    from datetime import datetime

    import polars as pl

    from forensics.cli.output import to_table

    frame = pl.DataFrame({
        "locator": [f"{tmp_path}/exports/trace_q1_session_8f8025ca-605b: span {i}"
                    for i in (7, 12)],
        "error_message": ["prompt is too long: " + "x" * 80 + " 216,230 tokens > 200,000"] * 2,
        "at": [datetime(2026, 10, 22, 8, 56, 6, 120_000),
               datetime(2026, 10, 22, 8, 56, 6, 870_000)],
        "whole_seconds": [datetime(2026, 10, 22, 8, 56, 6), datetime(2026, 10, 22, 8, 56, 9)],
    })
    text = to_table(frame)
    assert "span 7" in text and "span 12" in text  # the row index is the distinguishing end
    assert "216,230 tokens > 200,000" in text and "prompt is too long" in text
    assert "08:56:06.120" in text and "08:56:06.870" in text
    assert "08:56:09" in text and "08:56:09.000" not in text


def test_skip_locators_are_whole_in_the_table(tmp_path):
    deep = tmp_path / ("a-long-folder-name-" * 4) / "trace_q1_session_8f8025ca-605b.json"
    deep.parent.mkdir(parents=True)
    deep.write_text(json.dumps([_event(0), 5, _event(2)]))
    db = tmp_path / "f.duckdb"
    result = api.ingest_json(db, [deep], app="a", user="u")
    out = runner.invoke(app, ["ingests", "--skips", str(result.ingest_id), "--db", str(db)])
    assert f"{deep}: event 1" in out.output


# -- 12. wording ---------------------------------------------------------------------------


def test_json_errors_read_as_sentences(tmp_path):
    (tmp_path / "cut.ndjson").write_text(json.dumps(_event(0)) + '\n{"id": "e1", "text": "no end\n')
    (tmp_path / "cut.json").write_text('[' + json.dumps(_event(2)) + ', {"id": "e3", "x": "abc')
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "cut.ndjson",
                                                     tmp_path / "cut.json"], app="a", user="u")
    reasons = " | ".join(s.reason for s in result.skips)
    assert "at at" not in reasons
    assert "Unterminated string starting at column 22" in reasons
    assert "Unterminated string starting at byte" in reasons


def test_a_sqlite_events_table_like_v1_names_what_it_lacks(tmp_path):
    import sqlite3

    con = sqlite3.connect(tmp_path / "half.db")
    con.execute("CREATE TABLE events (id TEXT, event_data TEXT, timestamp REAL)")
    con.commit()
    con.close()
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(tmp_path / "half.db"), "--db",
                              str(tmp_path / "f.duckdb")])
    assert out.exit_code == 1
    assert ("table 'events' has event_data like ADK schema V1 but lacks app_name, user_id, "
            "session_id, invocation_id") in out.output


def test_the_same_event_id_with_other_content_is_said(tmp_path):
    db = tmp_path / "f.duckdb"
    (tmp_path / "first.json").write_text(json.dumps([_event(0), _event(1)]))
    changed = _event(1)
    changed["content"]["parts"][0]["text"] = "a different message altogether"
    (tmp_path / "second.json").write_text(json.dumps([_event(0), changed]))
    runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "first.json"), "--app", "a",
                        "--user", "u", "--session", "s", "--db", str(db)])
    out = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "second.json"), "--app", "a",
                              "--user", "u", "--session", "s", "--db", str(db)])
    assert out.exit_code == 0
    assert ("warning: 1 events already stored with other content (time, size, author or "
            "turn): the first stored was kept") in out.output
    assert api.events(db, "s")["chars"].to_list() == [9, 9]  # "message 0", "message 1"
    # and which event, where: a skip in `forensics ingests`
    (skip,) = api.ingest_skips(db, 2).to_dicts()
    assert skip["locator"] == f"{tmp_path / 'second.json'}: event 1"
    assert skip["reason"] == ("an event stored already with other content (time, size, "
                              "author or turn): the first stored was kept")
    # a run that finds only such events is no failure (it read what was stored)
    (tmp_path / "third.json").write_text(json.dumps([changed]))
    again = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "third.json"), "--app", "a",
                                "--user", "u", "--session", "s", "--db", str(db)])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "skipped 1: an event stored already with other content" in again.output


def test_csv_booleans_are_true_and_false(tmp_path):
    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    out = runner.invoke(app, ["calls", "incident", "--db", str(db), "-f", "csv"])
    import csv as csv_module
    import io

    rows = list(csv_module.DictReader(io.StringIO(out.output)))
    assert {r["gauge_blind"] for r in rows} == {"false"}


# -- 13. progress on long analyses: on a terminal's stderr only -----------------------------


def _run_with_stderr(args: list[str], tty: bool) -> tuple[str, str]:
    """Run the CLI in a subprocess, its stderr a pseudo-terminal or a pipe."""
    import os
    import pty
    import subprocess
    import sys

    env = {**os.environ, "FORENSICS_PROGRESS_INTERVAL": "0"}
    command = [sys.executable, "-c", "from forensics.cli import main; main()", *args]
    if not tty:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    proc.wait(timeout=120)
    os.close(leader)
    return out, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("command", [["growth"], ["turns"], ["compaction"]])
def test_long_analyses_show_progress_on_a_terminal_only(sample_db, command):
    args = [*command, "--db", str(sample_db)]
    events = len(api.events(sample_db, "incident")) + len(api.events(sample_db, "parallel"))
    events += len(api.events(sample_db, "compaction"))
    con = duckdb.connect(str(sample_db))  # as if a newer forensics opened it: facts stale
    con.execute("UPDATE store_meta SET value = 'old' WHERE key = 'facts_rules'")
    con.execute("UPDATE fact_sessions SET rules = 'old ' || rules")
    con.close()
    out, err = _run_with_stderr(args, tty=True)
    assert f"building facts: {events:,} of {events:,} events" in err
    assert "building" not in out and out.strip()  # the table itself, clean
    out_piped, err_piped = _run_with_stderr(args, tty=False)
    assert err_piped == "" and out_piped == out


def test_a_filter_that_matches_nothing_says_so(tmp_path):
    out = runner.invoke(app, ["ingest", "adk-sqlite", str(SAMPLES / "adk_v1.db"), "--app",
                              "no-such-app", "--db", str(tmp_path / "f.duckdb")])
    assert out.exit_code == 0
    assert "no events read (nothing matched)" in out.output
    assert "all already stored" not in out.output


# -- what the review of this change found -----------------------------------------------------


@pytest.mark.parametrize("dsn", [
    "postgresql://u:pw/xLeak@host/db",  # a raw '/' in the password
    "postgresql://u:p@ssLeak/x@host/db",
])
def test_a_password_libpq_would_split_is_refused(tmp_path, dsn):
    db = tmp_path / "f.duckdb"
    out = runner.invoke(app, ["ingest", "adk-postgres", dsn, "--db", str(db)])
    assert out.exit_code == 1 and "Leak" not in out.output
    assert not db.exists() or "Leak" not in json.dumps(api.ingests(db).to_dicts(), default=str)


def test_a_short_password_is_scrubbed_without_garbling_the_message():
    from forensics.secrets import Secret, scrub

    dsn = Secret("postgresql://app:e@db.internal/adk")
    assert scrub("connection to server failed: password 'e' rejected for e", dsn) == (
        "connection to server failed: password '***' rejected for ***")


def test_files_of_one_run_key_to_each_other(tmp_path):
    session = {"id": "abc", "appName": "shop", "userId": "bob", "events": [_event(0)]}
    (tmp_path / "session.json").write_text(json.dumps(session))
    (tmp_path / "abc.events.json").write_text(json.dumps([_event(1)]))
    db = tmp_path / "f.duckdb"
    for _ in range(2):  # and again: still one session
        api.ingest_json(db, [tmp_path / "session.json", tmp_path / "abc.events.json"])
        assert [(r["app_name"], r["user_id"], r["events"]) for r in
                api.sessions(db).iter_rows(named=True)] == [("shop", "bob", 2)]


def test_a_state_events_key_is_not_the_sessions_events(tmp_path):
    deep = json.dumps(_event(5))[:-1] + ', "customMetadata": ' + '{"a": ' * 1200 + "{}" \
        + "}" * 1200 + "}"
    decoy = {"events": [{"id": "bogus", "timestamp": 9, "author": "x"}]}
    text = ('{"id": "S", "appName": "A", "userId": "U", "state": ' + json.dumps(decoy)
            + ', "events": [' + json.dumps(_event(4)) + ", " + deep + ", "
            + json.dumps(_event(6)) + "]}")
    (tmp_path / "s.json").write_text(text)
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "s.json"])
    assert result.rows_loaded == 2 and len(result.skips) == 1
    assert api.events(tmp_path / "f.duckdb", "S")["event_id"].to_list() == ["e4", "e6"]


def test_ndjson_saved_as_json_with_a_deep_first_line_keeps_the_rest(tmp_path):
    deep = json.dumps(_event(0))[:-1] + ', "customMetadata": ' + '{"a": ' * 1200 + "{}" \
        + "}" * 1200 + "}"
    (tmp_path / "lines.json").write_text(deep + "\n" + json.dumps(_event(1)) + "\n"
                                         + json.dumps(_event(2)) + "\n")
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "lines.json"], app="a",
                             user="u")
    assert result.rows_loaded == 2 and [s.locator for s in result.skips] == [
        f"{tmp_path / 'lines.json'}:1"]


def test_invisible_format_characters_are_shown_and_csv_is_safe_in_a_spreadsheet():
    import polars as pl

    from forensics.cli.output import to_csv
    from forensics.sanitize import visible

    hidden = "ok\u200b\U000e0049\U000e0047\u2060"  # zero-width space, tag characters
    assert visible(hidden) == "ok\\u200b\\U000e0049\\U000e0047\\u2060"
    csv_text = to_csv(pl.DataFrame({"a": ["=HYPERLINK(1)", "-5", "-x", "a\tb\rc", "+1"]}))
    assert csv_text.splitlines()[1:] == ["'=HYPERLINK(1)", "-5", "'-x", 'a\tb\\x0dc', "'+1"]


def test_every_format_character_and_the_invisible_ones_are_shown():
    """Every character of Unicode's category Cf (as this Python knows it) is shown as an
    escape by `visible` (tables, CSV, messages, HTML) and in JSON, as are the invisible
    ones of other categories and code points not yet assigned in their ranges: a
    tool named "Bash" and six variation selectors past the sixteenth (bytes hidden behind
    it) showed as "Bash"; U+1D173, U+13430 or a Hangul filler passed raw."""
    import json
    import unicodedata

    from forensics.sanitize import json_safe, visible

    format_characters = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    others = ["\u034f", "\u115f", "\u3164", "\uffa0", "\u180b", "\u17b4", "\U000e0100",
              "\U000e01ef", "\u2065", "\ufff0", "\U000e0002"]  # fmt: skip
    for char in [*format_characters, *others]:
        assert visible(f"a{char}b").startswith("a\\"), hex(ord(char))
        assert char not in json_safe(json.dumps(f"a{char}b", ensure_ascii=False)), hex(ord(char))
    smuggled = "Bash" + "".join(chr(0xE0100 + b) for b in b"rm -rf")
    assert visible(smuggled) == "Bash" + "".join(f"\\U{0xE0100 + b:08x}" for b in b"rm -rf")
    assert visible("\u2764\ufe0f") == "\u2764\ufe0f"  # an emoji's own presentation: kept


def test_fine_times_all_carry_milliseconds():
    from datetime import datetime

    import polars as pl

    from forensics.cli.output import to_table

    text = to_table(pl.DataFrame({"at": [datetime(2026, 1, 1, 12, 0, 0),
                                         datetime(2026, 1, 1, 12, 0, 0, 500_000)]}))
    assert "2026-01-01 12:00:00.000" in text and "2026-01-01 12:00:00.500" in text


def test_nested_json_paths_in_plan_conditions():
    from forensics.plan.advice import condition_columns

    columns = ["id", "event_data"]
    assert condition_columns(
        "(((event_data -> 'content'::text) ->> 'role'::text) = 'model'::text)", columns
    ) == [("((event_data -> 'content'::text) ->> 'role'::text)", "eq")]
    # a JSON sub-document compared whole: no index on it would serve
    assert condition_columns("((event_data -> 'content'::text) = '{}'::jsonb)", columns) == []


def test_a_store_path_the_system_refuses_is_said(tmp_path):
    out = runner.invoke(app, ["sessions", "--db", str(tmp_path / ("x" * 300))])
    assert out.exit_code == 1 and "unexpected" not in out.output
    assert "cannot open store" in out.output
    # an ingest too (it asks whether the store exists before opening it)
    out = runner.invoke(app, ["ingest", "opensearch-file",
                              str(ROOT / "sample_data" / "opensearch" / "litellm.ndjson"),
                              "--db", str(tmp_path / ("x" * 300))])  # fmt: skip
    assert out.exit_code == 1 and "unexpected" not in out.output
    assert "cannot open store" in out.output


def test_files_of_one_ingest_share_batches_and_a_changed_event_is_still_said(tmp_path):
    """Files share batches (a batch per file made 500 small files cost 69 s); an event a
    later file repeats with other content starts a batch of its own, so the store still
    compares it with the one it kept and says so."""
    db = tmp_path / "f.duckdb"
    (tmp_path / "first.json").write_text(json.dumps([_event(0), _event(1)]))
    changed = _event(1)
    changed["content"]["parts"][0]["text"] = "a different message altogether"
    (tmp_path / "second.json").write_text(json.dumps([_event(0), changed, _event(2)]))
    out = runner.invoke(app, ["ingest", "adk-json", str(tmp_path / "first.json"),
                              str(tmp_path / "second.json"), "--app", "a", "--user", "u",
                              "--session", "s", "--db", str(db)])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "warning: 1 events already stored with other content" in out.output
    assert api.events(db, "s")["chars"].to_list() == [9, 9, 9]
    result = api.ingests(db)
    assert result["rows_read"].to_list()[-1] == 5


def test_a_run_that_fails_after_committing_batches_is_undone(tmp_path):
    """An ADK ingest commits batch by batch (one transaction held every row in memory);
    a run that fails part way deletes what it stored, so the store is as it was. The
    failure is injected by a source that stops after its first batch (a disk or a
    connection lost mid-read), since no real source fails on cue."""
    from forensics.ingest import ingest
    from forensics.sources.files.adk_json import AdkJsonSource
    from forensics.store import Store

    db = tmp_path / "f.duckdb"
    (tmp_path / "old.json").write_text(json.dumps([_event(100)]))
    api.ingest_json(db, [tmp_path / "old.json"], app="a", user="u", session="old")
    (tmp_path / "new.json").write_text(json.dumps([_event(n) for n in range(6)]))

    class Failing(AdkJsonSource):
        def batches(self, since_watermark):
            for number, batch in enumerate(super().batches(since_watermark)):
                if number == 2:
                    raise OSError("the disk went away")
                yield batch

    source = Failing([tmp_path / "new.json"], app="a", user="u", session="new", batch_size=2)
    with Store.open(db) as store, pytest.raises(OSError, match="went away"):
        ingest(store, source)
    assert api.sessions(db)["session_id"].to_list() == ["old"]
    assert api.events(db, "old").height == 1
    ledger = api.ingests(db).sort("ingest_id")
    assert ledger["status"].to_list() == ["ok", "failed"]
    assert ledger["rows_loaded"].to_list() == [1, 0]


def test_a_stop_just_after_the_run_was_committed_says_it_was(tmp_path, monkeypatch):
    """Ctrl-C after the ingest's last commit, while its memory cap is set back (found by
    the test above at a stop 45% through the run): the run is kept and said to be, not
    "nothing from this run was committed". The interrupt is raised at that point here."""
    from contextlib import contextmanager

    from forensics.errors import FactsInterrupted
    from forensics.store import Store

    data = _big_ndjson(tmp_path / "small.ndjson", events=400)
    capped = Store.memory_limit

    from forensics.ingest.pipeline import INGEST_MEMORY_LIMIT

    stops = [KeyboardInterrupt]  # the first cap set back: the ingest's (the facts' after)

    @contextmanager
    def stopped_on_the_way_out(self, limit):
        with capped(self, limit):
            yield
        if limit == INGEST_MEMORY_LIMIT and stops:
            raise stops.pop()

    monkeypatch.setattr(Store, "memory_limit", stopped_on_the_way_out)
    db = tmp_path / "s.duckdb"
    with pytest.raises(KeyboardInterrupt) as stopped:  # (a bare one would end pytest)
        api.ingest_json(db, [data], app="a", user="u")
    assert isinstance(stopped.value, FactsInterrupted), repr(stopped.value)
    assert "the ingest was committed (400 events loaded)" in str(stopped.value)
    monkeypatch.undo()
    assert api.ingests(db)["status"].to_list() == ["ok"]
    assert api.sessions(db)["events"].to_list() == [400]


# -- names no encoding decodes ------------------------------------------------------


def test_files_whose_names_no_encoding_decodes_load_or_are_refused_by_name(tmp_path):
    """A file or folder whose name holds a byte no encoding decodes (Python reads it as a
    lone surrogate, which DuckDB and Arrow cannot take): each source loads it whole, its
    place written with the escape; what DuckDB or Arrow must open by that name is
    refused, naming it. Each command here stopped with an unexpected error before, or
    (opensearch-file) skipped every document for its locator."""
    import os
    import shutil

    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/dir\xfe"))
    odd.mkdir()

    def copied(sample: str, name: bytes) -> str:
        target = os.fsdecode(os.fsencode(odd) + b"/" + name)
        shutil.copy(SAMPLES / sample, target)
        return target

    def cli(*args: str) -> Result:
        return runner.invoke(app, [*args, "--format", "json"])

    db = str(tmp_path / "s.duckdb")
    sqlite = cli("ingest", "adk-sqlite", copied("adk_v1.db", b"v1\xff.db"), "--db", db)
    assert sqlite.exit_code == 0, sqlite.output
    assert json.loads(sqlite.stdout)[0]["rows_loaded"] > 0
    # the table a person reads says the place with its escapes (a terminal takes no
    # lone surrogate: the runner's output is strict UTF-8, as most locales' are)
    told = runner.invoke(app, ["ingest", "adk-sqlite", copied("adk_v1.db", b"v2\xff.db"),
                               "--db", str(tmp_path / "t.duckdb")])  # fmt: skip
    assert told.exit_code == 0 and "dir\\udcfe/v2\\udcff.db" in told.stdout, told.output
    # a bare event list's session is its file's name
    events, own = copied("exports/incident.ndjson", b"inc\xff.ndjson"), str(tmp_path / "j")
    runs = [cli("ingest", "adk-json", events, "--db", own) for _ in range(2)]
    assert [r.exit_code for r in runs] == [0, 0], runs[0].output
    first, again = (json.loads(r.stdout)[0] for r in runs)
    assert (first["rows_loaded"], again["rows_already_stored"]) == (14, 14)
    assert api.sessions(own)["session_id"].to_list() == ["inc\\udcff"]
    # and a name given as the shell passes it (a file's) finds the session stored so
    named = runner.invoke(app, ["events", os.fsdecode(b"inc\xff"), "--db", own])
    assert named.exit_code == 0 and "total (14 rows)" in named.stdout, named.output
    # outcomes keyed by their file's place
    outcomes = runner.invoke(app, ["outcomes", "load", copied("outcomes.csv", b"out\xff.csv"),
                                   "--db", own])  # fmt: skip
    assert outcomes.exit_code in (0, 1) and "unexpected" not in outcomes.output, outcomes.output
    assert "dir\\udcfe/out\\udcff.csv:2" in outcomes.output
    for sample in ("opensearch/litellm.ndjson", "opensearch/logs-otel-v1.ndjson"):
        logged = cli("ingest", "opensearch-file", copied(sample, b"os\xff.ndjson"), "--db", db)
        assert logged.exit_code == 0, logged.output
        assert json.loads(logged.stdout)[0]["rows_skipped"] == 0
    priced = cli("cost", "--by", "day", "--db", db, "--prices",
                 copied("prices.toml", b"prices\xff.toml"))  # fmt: skip
    assert priced.exit_code == 0, priced.output
    # DuckDB opens a store, and Arrow writes and reads an export, by a UTF-8 name only
    export = tmp_path / "export"
    assert runner.invoke(app, ["export", "parquet", str(export), "--db", db]).exit_code == 0
    for args, refused in (
        (("sessions", "--db", f"{odd}/s.duckdb"), "as a store: DuckDB opens a store by a UTF-8"),
        (("export", "parquet", f"{odd}/out", "--db", db), "cannot write an export to"),
        (("analyze", "--input", str(export), "--output", f"{odd}/out"),
         "cannot write the facts to"),
    ):
        said = runner.invoke(app, list(args))
        assert said.exit_code == 1 and refused in said.stderr, said.output
        assert "dir\\udcfe" in said.stderr and "unexpected" not in said.stderr
    assert not Path(f"{odd}/out").exists()
    moved = shutil.move(export, f"{odd}/export")
    said = runner.invoke(app, ["ingest", "parquet", str(moved), "--db", str(tmp_path / "p")])
    assert said.exit_code == 1 and "cannot read an export from" in said.stderr, said.output


def test_a_command_shown_with_a_hostile_id_runs_as_shown(tmp_path):
    """A word of a command the output suggests (a session id, an app, a path) holding a
    control, newline, bidi or invisible character is printable and, typed into bash,
    is the text itself: `$'...'` with the character escaped (the weekly review quoted
    the escape as text, so the command named another session)."""
    import shutil
    import subprocess

    from forensics.sanitize import shell_word, visible

    if shutil.which("bash") is None:
        pytest.skip("no bash here")
    texts = ["plain", "-x\x1b[1m y", "a'b\\c", "line\nbreak\ttab", "shop\u202e009", "é中😀",
             "\udcff\udc80x", "\x85c1", "Bash\U000e0172", "$HOME `x`", ""]
    for text in texts:
        word = shell_word(text)
        assert visible(word) == word and "\n" not in word, word
        typed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True,
                               check=True).stdout  # fmt: skip
        assert typed == text.encode("utf-8", "surrogateescape"), (text, word)
