"""Hostile input and a newcomer's pass over every command (the hardening issue).

Each test names the defect it guards against; all run against the real code paths
(the CLI through typer's runner, or a subprocess where a signal or terminal matters).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

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
