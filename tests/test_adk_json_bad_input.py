"""ADK JSON files the bad-input sweep broke (its H1, H2, M2, M3 and L6): each test runs the
real `forensics ingest adk-json` and checks that the good events beside the bad input load
and that every skip names the file and line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from forensics import api
from forensics.cli import app

runner = CliRunner()


def _event(n: int, text: str = "hello", **extra: object) -> dict:
    return {"id": f"e{n}", "invocationId": f"inv{n // 2}", "author": "user",
            "timestamp": 1_761_123_600.0 + n,
            "content": {"role": "user", "parts": [{"text": f"{text} {n}"}]}, **extra}


def _session(sid: str, events: list[dict]) -> dict:
    return {"id": sid, "appName": "store", "userId": "u1", "state": {}, "events": events,
            "lastUpdateTime": 1_761_123_700.0}


def _ingest(db: Path, *paths: Path, extra: tuple[str, ...] = ()) -> Result:
    return runner.invoke(app, ["ingest", "adk-json", *map(str, paths), "--db", str(db), *extra])


def _sessions(db: Path) -> dict[str, tuple[str, str, int]]:
    """session id -> (app, user, events)"""
    rows = api.sessions(db).to_dicts()
    return {r["session_id"]: (r["app_name"], r["user_id"], r["events"]) for r in rows}


# -- H1: an invalid escape or raw control character in a malformed file's header ----------


@pytest.mark.parametrize("bad", ["a\\qb", "a\tb"], ids=["invalid-escape", "raw-tab"])
def test_a_bad_string_in_a_malformed_header_is_one_skip_and_the_other_files_load(
        tmp_path, bad):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_session("g1", [_event(i) for i in range(3)])))
    text = json.dumps(_session("b1", [_event(10 + i) for i in range(4)]))
    broken = tmp_path / "broken.json"
    broken.write_text(text.replace('"appName": "store"', f'"appName": "{bad}"'))
    out = _ingest(tmp_path / "f.duckdb", good, broken)
    assert out.exit_code == 0, out.output
    assert f"{broken}:1:" in out.output and "truncated or malformed JSON" in out.output
    assert "4 complete events before it were read" in out.output
    sessions = _sessions(tmp_path / "f.duckdb")
    assert sessions["g1"] == ("store", "u1", 3)
    # the app name could not be read: the events keep their session and user
    assert sessions["b1"] == ("unknown", "u1", 4)


# -- H2: lines end at "\n" only, not at U+2028, U+2029 or U+0085 inside a string ----------


@pytest.mark.parametrize("name", ["events.ndjson", "events.json"])
def test_line_separators_inside_strings_do_not_split_an_ndjson_line(tmp_path, name):
    lines = [json.dumps(_event(0, "one\u2028two\u2029three\x85four"), ensure_ascii=False),
             json.dumps(_event(1)), '{"id": "e2", "cut', json.dumps(_event(3))]
    path = tmp_path / name
    path.write_text("\r\n".join(lines) + "\n", encoding="utf-8")
    out = _ingest(tmp_path / "f.duckdb", path, extra=("--app", "a", "--user", "u"))
    assert out.exit_code == 0, out.output
    assert "read 4 events: loaded 3 new, 0 already stored, skipped 1" in out.output
    assert f"{path}:3: not valid JSON" in out.output
    df = api.events(tmp_path / "f.duckdb", "events")
    chars = dict(zip(df["event_id"].to_list(), df["chars"].to_list(), strict=True))
    assert chars == {"e0": len("one\u2028two\u2029three\x85four 0"), "e1": 7, "e3": 7}


def test_an_ndjson_file_is_keyed_by_the_ids_of_a_first_line_holding_a_separator(tmp_path):
    db = tmp_path / "f.duckdb"
    stored = tmp_path / "s1.json"
    event = _event(0, "a\u2028b")
    stored.write_text(json.dumps(_session("s1", [event]), ensure_ascii=False))
    assert _ingest(db, stored).exit_code == 0
    again = tmp_path / "other.ndjson"
    again.write_text(json.dumps(event, ensure_ascii=False) + "\n", encoding="utf-8")
    out = _ingest(db, again)
    assert out.exit_code == 0, out.output
    assert "no new events (read 1, all already stored)" in out.output
    assert set(_sessions(db)) == {"s1"}


# -- M2: NDJSON of whole Sessions; a Session followed by a stray line -----------------------


def test_ndjson_of_sessions_loads_each_session(tmp_path):
    path = tmp_path / "bundle.ndjson"
    path.write_text(json.dumps(_session("s1", [_event(i) for i in range(3)])) + "\n"
                    + json.dumps(_session("s2", [_event(10 + i) for i in range(2)])) + "\n"
                    + json.dumps(_event(20)) + "\n"
                    + json.dumps(_session("s3", [_event(30), {"id": "x"}])) + "\n")
    out = _ingest(tmp_path / "f.duckdb", path, extra=("--app", "a", "--user", "u"))
    assert out.exit_code == 0, out.output
    assert "read 8 events: loaded 7 new, 0 already stored, skipped 1" in out.output
    assert f"{path}:4: event 1: event x has no numeric 'timestamp'" in out.output
    assert _sessions(tmp_path / "f.duckdb") == {
        "s1": ("store", "u1", 3), "s2": ("store", "u1", 2), "s3": ("store", "u1", 1),
        "bundle": ("a", "u", 1)}


@pytest.mark.parametrize("indent", [None, 1], ids=["compact", "indented"])
def test_a_session_followed_by_extra_data_keeps_its_events(tmp_path, indent):
    path = tmp_path / "extra.json"
    text = json.dumps(_session("s1", [_event(i) for i in range(5)]), indent=indent)
    path.write_text(text + '\n{"garbage": 1}\n')
    out = _ingest(tmp_path / "f.duckdb", path)
    assert out.exit_code == 0, out.output
    assert "read 6 events: loaded 5 new, 0 already stored, skipped 1" in out.output
    line = text.count("\n") + 2
    assert f"{path}:{line}: event has no 'id'" in out.output
    assert _sessions(tmp_path / "f.duckdb") == {"s1": ("store", "u1", 5)}


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "indented"])
def test_sessions_one_after_another_are_each_read_whole(tmp_path, indent):
    """`cat a.json b.json`: the second Session, pretty-printed, was read line by line (a
    skip a line, its events lost)."""
    path = tmp_path / "both.json"
    first = json.dumps(_session("s1", [_event(i) for i in range(3)]), indent=indent)
    second = json.dumps(_session("s2", [_event(10 + i) for i in range(4)]), indent=indent)
    path.write_text(f"{first}\n{second}\n")
    out = _ingest(tmp_path / "f.duckdb", path)
    assert out.exit_code == 0, out.output
    assert "read 7 events: loaded 7 new, 0 already stored, skipped 0" in out.output
    assert _sessions(tmp_path / "f.duckdb") == {"s1": ("store", "u1", 3), "s2": ("store", "u1", 4)}


# -- M3: a truncated event list is not a Session, whatever "events" keys its events hold ----


def test_a_truncated_event_list_is_not_filed_under_an_events_id(tmp_path):
    events = [_event(i) for i in range(6)]
    events[2]["content"]["parts"].append({"functionResponse": {
        "id": "call-1", "name": "calendar", "response": {"events": [{"id": "cal-evt-9"}]}}})
    text = json.dumps(events)
    path = tmp_path / "trunc.json"
    path.write_text(text[: text.index('"e4"')])
    out = _ingest(tmp_path / "f.duckdb", path, extra=("--app", "a", "--user", "u"))
    assert out.exit_code == 0, out.output
    assert f"{path}:1:" in out.output and "4 complete events before it were read" in out.output
    assert _sessions(tmp_path / "f.duckdb") == {"trunc": ("a", "u", 4)}


def test_a_truncated_event_list_is_keyed_like_the_whole_file(tmp_path):
    """Without --app/--user: the stored session that holds its events, as the whole file."""
    db = tmp_path / "f.duckdb"
    events = [_event(i) for i in range(6)]
    events[0]["actions"] = {"stateDelta": {"id": "not-a-session", "events": []}}
    (tmp_path / "s1.json").write_text(json.dumps(_session("s1", events[:2])))
    assert _ingest(db, tmp_path / "s1.json").exit_code == 0
    text = json.dumps(events)
    path = tmp_path / "more.json"
    path.write_text(text[: text.index('"e5"')])  # inside the sixth event
    out = _ingest(db, path)
    assert out.exit_code == 0, out.output
    assert "5 complete events before it were read" in out.output
    assert _sessions(db) == {"s1": ("store", "u1", 5)}


# -- L6: a FIFO (or any file that is not a regular file) is skipped, not waited on ----------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_among_the_paths_is_skipped_by_name(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_session("s1", [_event(0)])))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    command = [sys.executable, "-c", "from forensics.cli import main; main()", "ingest",
               "adk-json", str(good), str(fifo), "--db", str(tmp_path / "f.duckdb")]
    try:  # a FIFO no one writes to blocks its reader for ever
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the ingest waited on the FIFO")
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "read 2 events: loaded 1 new, 0 already stored, skipped 1" in output
    assert f"{fifo}: not a regular file" in output


# -- a file saved as UTF-16 (Windows tools): named, with what to do --------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"], ids=["with-bom", "without-bom"])
def test_a_utf16_file_is_named_as_such(tmp_path, encoding):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_session("g1", [_event(0)])))
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(_session("w1", [_event(1)])), encoding=encoding)
    out = _ingest(tmp_path / "f.duckdb", good, wide)
    assert out.exit_code == 0, out.output
    assert f"{wide}: UTF-16 text, not UTF-8: save it as UTF-8" in out.output
    assert set(_sessions(tmp_path / "f.duckdb")) == {"g1"}
