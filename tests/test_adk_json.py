"""ADK JSON exports: every shape ADK writes, and every way a file can be bad."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from forensics import api
from forensics.store import Store

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "real_data" / "adk"
ROOT_SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
TRACED = REAL.parent / "adk_traces"


def _event(i: int, *, camel: bool = False, text: str = "hello") -> dict:
    usage_key, prompt_key = (("usageMetadata", "promptTokenCount") if camel
                             else ("usage_metadata", "prompt_token_count"))
    return {
        "id": f"e{i}",
        ("invocationId" if camel else "invocation_id"): f"inv{i // 2}",
        "author": "user" if i % 2 == 0 else "agent",
        "timestamp": 1_761_123_600.0 + i,
        "content": {"role": "user" if i % 2 == 0 else "model", "parts": [{"text": text}]},
        usage_key: {prompt_key: 100 + i},
    }


def _session(events: list, camel: bool = False) -> dict:
    if camel:
        return {"id": "s1", "appName": "store", "userId": "u1", "events": events,
                "lastUpdateTime": 1_761_123_700.0}
    return {"id": "s1", "app_name": "store", "user_id": "u1", "events": events,
            "last_update_time": 1_761_123_700.0}


def _count(db: Path, sql: str) -> int:
    with Store.open(db, read_only=True) as con:
        return con.run(sql)[0][0]


@pytest.mark.parametrize("camel", [False, True])
def test_session_export_loads_usage_and_sizes(tmp_path, camel):
    path = tmp_path / "s1.json"
    path.write_text(json.dumps(_session([_event(i, camel=camel) for i in range(4)], camel)))
    result = api.ingest_json(tmp_path / "f.duckdb", [path])
    assert (result.rows_read, result.rows_loaded, result.rows_skipped) == (4, 4, 0)
    df = api.events(tmp_path / "f.duckdb", "s1")
    assert df["prompt_tokens"].to_list() == [100, 101, 102, 103]
    assert df["chars"].to_list() == [5, 5, 5, 5]
    assert df["invocation_id"].to_list() == ["inv0", "inv0", "inv1", "inv1"]
    assert api.sessions(tmp_path / "f.duckdb")["app_name"].to_list() == ["store"]


def test_list_and_ndjson_use_defaults_and_file_name(tmp_path):
    (tmp_path / "a.events.json").write_text(json.dumps([_event(i) for i in range(3)]))
    (tmp_path / "b.ndjson").write_text("\n".join(json.dumps(_event(i)) for i in range(5)))
    result = api.ingest_json(tmp_path / "f.duckdb", sorted(tmp_path.glob("*.*json")),
                             app="store", user="u9")
    assert result.rows_loaded == 8
    sessions = api.sessions(tmp_path / "f.duckdb").sort("session_id")
    assert sessions["session_id"].to_list() == ["a", "b"]
    assert sessions["events"].to_list() == [3, 5]
    assert set(sessions["user_id"]) == {"u9"}


def test_same_file_twice_is_stored_once(tmp_path):
    path = tmp_path / "s1.json"
    path.write_text(json.dumps(_session([_event(i) for i in range(4)])))
    api.ingest_json(tmp_path / "f.duckdb", [path])
    again = api.ingest_json(tmp_path / "f.duckdb", [path, path])
    assert (again.rows_read, again.rows_loaded, again.rows_already_stored) == (8, 0, 8)
    assert _count(tmp_path / "f.duckdb", "SELECT count(*) FROM events") == 4
    assert _count(tmp_path / "f.duckdb", "SELECT count(*) FROM parts") == 4


def test_a_file_naming_no_owner_is_keyed_to_the_one_session_holding_its_events(tmp_path):
    """An event list or NDJSON names no app or user: the stored session that holds its
    events is its key. Two stored sessions holding them: the list is skipped (NDJSON:
    each such line), said, and not stored a third time (it was, as app and user
    `unknown`), with --session too."""
    db = tmp_path / "f.duckdb"
    events = [_event(i) for i in range(4)]
    (tmp_path / "one.json").write_text(json.dumps(_session(events)))
    (tmp_path / "s1.json").write_text(json.dumps(events))
    (tmp_path / "s1.ndjson").write_text("\n".join(json.dumps(e) for e in events))
    api.ingest_json(db, [tmp_path / "one.json"])
    again = api.ingest_json(db, [tmp_path / "s1.json", tmp_path / "s1.ndjson"])
    assert (again.rows_loaded, again.rows_already_stored) == (0, 8)
    other = {**_session(events), "app_name": "other", "user_id": "u2"}
    (tmp_path / "two.json").write_text(json.dumps(other))
    api.ingest_json(db, [tmp_path / "two.json"])
    skipped = []
    for path, session, lines in ((tmp_path / "s1.json", None, 1),
                                 (tmp_path / "s1.ndjson", None, 4),
                                 (tmp_path / "s1.json", "s1", 1)):  # fmt: skip
        result = api.ingest_json(db, [path], session=session)
        assert (result.rows_loaded, result.rows_skipped) == (0, lines)
        skipped.append(api.ingest_skips(db, result.ingest_id))
    skips = pl.concat(skipped)
    assert skips["locator"].to_list() == [
        str(tmp_path / "s1.json"), *(f"{tmp_path / 's1.ndjson'}:{n}" for n in range(1, 5)),
        str(tmp_path / "s1.json")]
    assert skips["reason"].to_list()[0] == (
        "its events are stored in 2 sessions (app other, user u2, session s1; app store, "
        "user u1, session s1), and the file names no app or user: give --app and --user to "
        "say whose they are")
    assert _count(db, "SELECT count(*) FROM events") == 8  # two sessions' four, no third
    chosen = api.ingest_json(db, [tmp_path / "s1.ndjson"], app="other", user="u2")
    assert (chosen.rows_loaded, chosen.rows_already_stored) == (0, 4)
    # a whole Session on a line of such a file names its own: read, before or after
    for at, name in ((0, "sx"), (4, "sy")):
        fresh = {"id": f"fresh-{name}", "app_name": "x", "user_id": "y",
                 "events": [{**_event(i), "id": f"{name}-{i}"} for i in range(3)]}
        lines = [json.dumps(e) for e in events]
        lines.insert(at, json.dumps(fresh))
        (tmp_path / f"{name}.ndjson").write_text("\n".join(lines))
        mixed = api.ingest_json(db, [tmp_path / f"{name}.ndjson"])
        assert (mixed.rows_read, mixed.rows_loaded, mixed.rows_skipped) == (7, 3, 4)
        assert [skip.locator for skip in mixed.skips] == [
            f"{tmp_path / f'{name}.ndjson'}:{n}" for n in range(1, 6) if n != at + 1]


def test_malformed_ndjson_line_is_skipped_and_the_rest_loaded(tmp_path):
    lines = [json.dumps(_event(i)) for i in range(5)]
    lines[2] = lines[2][:-7]  # cut inside the object
    (tmp_path / "bad.ndjson").write_text("\n".join(lines))
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "bad.ndjson"])
    assert result.rows_loaded == 4
    assert [s.locator for s in result.skips] == [f"{tmp_path / 'bad.ndjson'}:3"]
    assert result.skips[0].reason.startswith("not valid JSON")
    ledger = api.ingests(tmp_path / "f.duckdb")
    assert ledger["rows_skipped"].to_list() == [1]
    assert json.loads(ledger["skip_reasons"][0]) == {result.skips[0].reason: 1}


def test_truncated_session_keeps_the_complete_events_before_the_cut(tmp_path):
    text = json.dumps(_session([_event(i) for i in range(6)]), indent=1)
    cut = text.index('"e4"')  # inside the fifth event
    (tmp_path / "cut.json").write_text(text[:cut])
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "cut.json"])
    assert result.rows_loaded == 4
    assert len(result.skips) == 1
    assert "truncated or malformed JSON" in result.skips[0].reason
    assert "4 complete events before it were read" in result.skips[0].reason
    assert api.sessions(tmp_path / "f.duckdb")["app_name"].to_list() == ["store"]


def test_wrong_shape_and_bad_events_name_the_file_and_event(tmp_path):
    (tmp_path / "shape.json").write_text(json.dumps({"hello": "world"}))
    events = [_event(0), "not an event", {"id": "x"}, {"timestamp": 1.0}, _event(4)]
    (tmp_path / "mixed.json").write_text(json.dumps(events))
    (tmp_path / "empty.json").write_text("  \n")
    (tmp_path / "latin1.json").write_bytes(b'[{"id": "\xe9"}]')
    paths = [tmp_path / n for n in ("shape.json", "mixed.json", "empty.json", "latin1.json")]
    result = api.ingest_json(tmp_path / "f.duckdb", paths)
    assert result.rows_loaded == 2
    reasons = {s.locator: s.reason for s in result.skips}
    assert reasons[str(tmp_path / "shape.json")].startswith(
        "wrong shape: expected an ADK Session (an object with 'events'), a list of events, "
        "or NDJSON; found an object with keys ['hello']")
    assert reasons[f"{tmp_path / 'mixed.json'}: event 1"] == "event is a JSON string, not an object"
    assert reasons[f"{tmp_path / 'mixed.json'}: event 2"] == "event x has no numeric 'timestamp'"
    assert reasons[f"{tmp_path / 'mixed.json'}: event 3"] == "event has no 'id'"
    assert reasons[str(tmp_path / "empty.json")] == "empty file"
    assert reasons[str(tmp_path / "latin1.json")] == (
        "not UTF-8 text (a binary file?): byte 9 is 0xe9")


def test_a_50_mb_event_is_loaded_and_sized(tmp_path):
    rows = [{"order": i, "notes": "x" * 990} for i in range(50_000)]
    big = _event(1)
    big["content"] = {"role": "user", "parts": [{"function_response": {
        "id": "adk-1", "name": "get_order_history", "response": {"status": "ok", "data": rows}}}]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_session([_event(0), big, _event(2)])))
    assert path.stat().st_size > 50_000_000
    result = api.ingest_json(tmp_path / "f.duckdb", [path])
    assert result.rows_loaded == 3
    payload = json.dumps({"status": "ok", "data": rows}, separators=(",", ":"))
    with Store.open(tmp_path / "f.duckdb", read_only=True) as con:
        chars, row_count, kind = con.run(
            "SELECT chars, row_count, kind FROM parts WHERE event_id = 'e1'")[0]
    assert kind == "function_response"
    assert chars == len("get_order_history") + len(payload)
    assert row_count == 50_000


def test_part_kinds_tool_names_and_row_counts(tmp_path):
    event = _event(1)
    event["content"] = {"role": "model", "parts": [
        {"text": "thinking", "thought": True},
        {"text": "ok"},
        {"function_call": {"id": "c1", "name": "lookup", "args": {"q": "é"}}},
        {"function_response": {"id": "c1", "name": "lookup", "response": [{"a": 1}, {"a": 2}]}},
        {"functionResponse": {"id": "c2", "name": "wrap", "response": {"result": {"rows": [[1]]}}}},
        {"inline_data": {"mime_type": "image/png", "data": "AAAA"}},
    ]}
    (tmp_path / "k.json").write_text(json.dumps([event]))
    api.ingest_json(tmp_path / "f.duckdb", [tmp_path / "k.json"])
    with Store.open(tmp_path / "f.duckdb", read_only=True) as con:
        rows = con.run("SELECT kind, tool_name, function_call_id, chars, row_count FROM parts "
                        "ORDER BY part_index")
    assert rows == [
        ("thought", None, None, 8, None),
        ("text", None, None, 2, None),
        ("function_call", "lookup", "c1", len("lookup") + len('{"q":"é"}'), None),
        ("function_response", "lookup", "c1", len("lookup") + len('[{"a":1},{"a":2}]'), 2),
        ("function_response", "wrap", "c2", len("wrap") + len('{"result":{"rows":[[1]]}}'), 1),
        ("other", None, None, len('{"mime_type":"image/png","data":"AAAA"}'), None),
    ]
    kinds = api.events(tmp_path / "f.duckdb", api.Selection(app="unknown", session="k"))
    kinds = kinds["kinds"].to_list()
    assert kinds == [["text", "thought", "function_call", "function_response", "other"]]


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
@pytest.mark.parametrize("name,events", [
    ("adk-samples_customer-service_123.session.json", 34),
    ("workshop_customer_service_session.camel.json", 29),
])
def test_real_exports_load_every_event(tmp_path, name, events):
    source = json.loads((REAL / name).read_text())
    assert len(source["events"]) == events
    result = api.ingest_json(tmp_path / "f.duckdb", [REAL / name])
    assert (result.rows_loaded, result.rows_skipped) == (events, 0)
    calls = sum(1 for e in source["events"] for p in (e.get("content") or {}).get("parts", [])
                if "function_call" in p or "functionCall" in p)
    assert _count(tmp_path / "f.duckdb",
                  "SELECT count(*) FROM parts WHERE kind = 'function_call'") == calls


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_calls_without_ids_are_paired_in_order(tmp_path):
    """Issue 33, item 6: an early ADK stored its function calls and responses without
    ids; each response pairs with the first unanswered call of its tool in its turn, so
    the tool calls grow windows (the report said "No tool calls." beside a Turns table
    of 3, and `growth` was empty). The ids say they were inferred."""
    name = "adk-samples_customer-service_123.session.json"
    source = json.loads((REAL / name).read_text())
    pairs = [(e.get("invocation_id"), p["function_call"]["name"])
             for e in source["events"] for p in (e.get("content") or {}).get("parts", [])
             if "function_call" in p]  # fmt: skip
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [REAL / name])
    growth = api.growth(db, "f7e81523-cd34-4202-821e-a1f44d9cef94", top=100)
    assert growth.height == len(pairs) == 6  # every call answered
    assert all(i.startswith("inferred:") for i in growth["function_call_id"])
    assert sorted(zip(growth["invocation_id"], growth["tool_name"], strict=True)) == sorted(
        (i, n) for i, n in pairs)  # fmt: skip
    turns = api.turns(db, "f7e81523-cd34-4202-821e-a1f44d9cef94")
    assert turns["tool_calls"].sum() == len(pairs)


def test_wrong_types_and_impossible_times_skip_the_row_not_the_file(tmp_path):
    events = [_event(0), _event(1), _event(2), _event(3), _event(4)]
    events[1]["invocation_id"] = 5
    events[2]["timestamp"] = 1e20
    events[3]["id"] = 7
    (tmp_path / "typed.json").write_text(json.dumps(events))
    (tmp_path / "int-session.json").write_text(json.dumps(
        {"id": 42, "app_name": "store", "user_id": "u1", "events": [_event(9)]}))
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps([_event(8)]).encode())
    paths = [tmp_path / n for n in ("typed.json", "int-session.json", "bom.json")]
    result = api.ingest_json(tmp_path / "f.duckdb", paths)
    assert result.rows_loaded == 3  # events 0, 4 and the one in bom.json
    reasons = {s.locator: s.reason for s in result.skips}
    assert reasons == {
        f"{tmp_path / 'typed.json'}: event 1": "invocation_id is int, not text",
        f"{tmp_path / 'typed.json'}: event 2":
            "timestamp 1e+20 is not a time between 1970 and 3000",
        f"{tmp_path / 'typed.json'}: event 3": "event has no 'id'",
        f"{tmp_path / 'int-session.json'}: event 0": "session_id is int, not text",
    }


def test_many_session_files_in_one_run_each_name_their_file(tmp_path):
    """Files share batches, so the pipeline asks each session's source while the reader
    thread is still adding files (it once saw the map change under it: 5,000 files)."""
    for n in range(400):
        events = [{"id": f"e{n}-{i}", "author": "user", "timestamp": 1_700_000_000 + i,
                   "invocation_id": "i", "content": {"parts": [{"text": "x" * 50}]}}
                  for i in range(30)]  # fmt: skip
        (tmp_path / f"s{n:03d}.json").write_text(
            json.dumps({"id": f"s{n}", "app_name": "a", "user_id": "u", "events": events}))
    db = tmp_path / "f.duckdb"
    result = api.ingest_json(db, sorted(tmp_path.glob("*.json")))
    assert result.rows_loaded == 12_000
    sources = api.sessions(db).select("session_id", "source").rows()
    assert len(sources) == 400
    assert all(source.endswith(f"s{sid[1:].zfill(3)}.json") for sid, source in sources)


def _tables(db: Path) -> dict[str, list[tuple]]:
    with Store.open(db, read_only=True) as con:
        names = [r[0] for r in con.run(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
            " AND table_name NOT IN ('ingests', 'meta') ORDER BY 1")]
        return {t: sorted(map(repr, con.run(f"SELECT * FROM {t}"))) for t in names}  # noqa: S608


def test_msgspec_reads_what_python_json_reads(tmp_path, monkeypatch):
    """The fast path (msgspec parses a file and writes each event back) loads the same
    store as Python's json, over the sample exports, the real ones and values where the
    two parsers could part: a key twice, big integers, escapes, floats, deep nesting."""
    from forensics.sources.files import adk_json

    odd = tmp_path / "odd.json"
    odd.write_text(
        '{"id": "odd", "app_name": "store", "user_id": "u1", "events": ['
        '{"id": "d1", "author": "a", "author": "user", "timestamp": 1761123600,'
        ' "content": {"parts": [{"text": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\n tab\\t"}]}},'
        '{"id": "d2", "author": "agent", "timestamp": 1761123601.25, "invocation_id": "i",'
        ' "content": {"parts": [{"function_response": {"name": "t", "response":'
        ' {"big": 123456789012345678901234567890, "f": [1.0, -0.0, 1E5, 2.5e-7],'
        ' "deep": ' + "[" * 200 + "]" * 200 + ', "rows": [{"a": 1}, {"a": "\\u00ff"}]}}}]},'
        ' "usage_metadata": {"prompt_token_count": 10}}]}'
    )
    lines = tmp_path / "odd.ndjson"  # the NDJSON path: a line at a time, CRLF, a blank
    lines.write_bytes(
        b'{"id": "n1", "author": "user", "timestamp": 1761123700, "content": {"parts":'
        b' [{"text": "\\u2028 caf\xc3\xa9 \\ud83d\\ude00"}]}}\r\n\r\n'
        b'{"id": "n2", "author": "agent", "author": "x", "timestamp": 1761123701.5,'
        b' "usage_metadata": {"prompt_token_count": 99999999999999999999}}\n'
        b'{"id": "n3", "author": "agent", "timestamp": NaN}\n'
    )
    files = sorted((ROOT_SAMPLE / "exports").glob("*.*json")) + [odd, lines]
    files += sorted(REAL.glob("*.json")) + sorted(TRACED.glob("*__session_*.json"))
    calls = {"fast": 0}
    real_read = adk_json._fast_read

    def counted(data):
        found = real_read(data)
        calls["fast"] += found is not adk_json._SLOW
        return found

    monkeypatch.setattr(adk_json, "_fast_read", counted)
    api.ingest_json(tmp_path / "fast.duckdb", files)
    assert calls["fast"] >= len(files)
    monkeypatch.setattr(adk_json, "_fast_read", lambda data: adk_json._SLOW)
    api.ingest_json(tmp_path / "slow.duckdb", files)
    fast, slow = _tables(tmp_path / "fast.duckdb"), _tables(tmp_path / "slow.duckdb")
    assert fast["events"] and fast.keys() == slow.keys()
    assert fast == slow


def test_values_python_reads_but_cannot_store_are_one_skip_each(tmp_path):
    """A lone surrogate (in the text, the event id, the session id), an integer of over
    4,300 digits (in a Session, in NDJSON), a timestamp or last_update_time beyond any
    float: each loses its event alone, with the reason and where; the good events of the
    same files are loaded (each of these aborted the whole ingest)."""
    def event(i: int, **extra: object) -> str:
        return json.dumps({"id": f"e{i}", "author": "user", "timestamp": 1_761_123_600 + i,
                           "content": {"parts": [{"text": "hi"}]}, **extra})  # fmt: skip

    def session(sid: str, *events: str, head: str = "") -> str:
        keys = f'"id": "{sid}", "app_name": "a", "user_id": "u", {head}'
        return f'{{{keys}"events": [{", ".join(events)}]}}'

    big = "1" * 5000
    TOO_LONG = "holds a number of over 4,300 digits, more than Python's json reads"  # noqa: N806
    files = {
        "surrogate.json": session("s1", event(1), event(2).replace('"hi"', '"\\ud800"')),
        "surrogate_id.json": session("s2", event(1), event(2).replace('"e2"', '"\\udc80"')),
        "surrogate_session.json": session("\\ud800x", event(1)),
        "bigint.json": session("s3", event(1), event(2).replace('"hi"', big)),
        "bigint.ndjson": event(7) + "\n" + event(8).replace('"hi"', big) + "\n",
        "timestamp.json": session("s4", event(1), event(2).replace("1761123602", "1" + "0" * 400)),
        "updated.json": session("s5", event(1), head=f'"last_update_time": 1{"0" * 400}, '),
        "both.json": session("s6", event(1), event(2).replace('"e2"', '"\\udc81"')
                             .replace("1761123602", '"noon"')),  # a reason would name the id
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = api.ingest_json(tmp_path / "f.duckdb", [tmp_path / n for n in files])
    assert (result.rows_read, result.rows_loaded) == (14, 7)
    found = {s.locator.removeprefix(f"{tmp_path}/"): s.reason for s in result.skips}
    assert found == {
        "surrogate.json: event 1":
            "the event's text is not valid Unicode: a lone surrogate \\ud800 at character 88",
        "surrogate_id.json: event 1":
            "event_id is not valid Unicode: a lone surrogate \\udc80 at character 0",
        "surrogate_session.json: event 0":
            "session_id is not valid Unicode: a lone surrogate \\ud800 at character 0",
        "bigint.json: event 1": TOO_LONG,
        "bigint.ndjson:2": TOO_LONG,
        "timestamp.json: event 1": "event e2 has a 'timestamp' beyond any date",
        "both.json: event 1":
            "event_id is not valid Unicode: a lone surrogate \\udc81 at character 0",
    }  # fmt: skip
    stored = api.sessions(tmp_path / "f.duckdb")
    assert sorted(stored["session_id"].to_list()) == ["bigint", "s1", "s2", "s3", "s4", "s5", "s6"]


def test_a_folder_whose_name_is_not_utf8_is_read_and_named_with_its_escapes(
    tmp_path: Path,
) -> None:
    # a byte no encoding decodes (Python keeps it as U+DCFF): the ingest, the ledger, the
    # session's source and the JSON report used to stop at it
    import os
    import shutil

    from typer.testing import CliRunner

    from forensics.cli import app

    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/adk\xff"))
    folder.mkdir()
    shutil.copy(ROOT_SAMPLE / "exports" / "incident.snake.json", folder)
    db = tmp_path / "s.duckdb"
    args = ["ingest", "adk-json", "--db", str(db), str(folder / "incident.snake.json"),
            "--format", "json"]  # fmt: skip
    runs = [CliRunner().invoke(app, args) for _ in range(2)]
    assert [r.exit_code for r in runs] == [0, 0], runs[0].output
    first, again = (json.loads(r.stdout)[0] for r in runs)
    assert (first["rows_loaded"], again["rows_already_stored"]) == (14, 14)
    assert first["source"].endswith("adk\\udcff/incident.snake.json")
    with Store.open(db, read_only=True) as store:
        (source,), = store.run("SELECT DISTINCT source FROM sessions")
        (location,), = store.run("SELECT DISTINCT location FROM ingests")
    assert "adk\\udcff" in source and "adk\\udcff" in location
