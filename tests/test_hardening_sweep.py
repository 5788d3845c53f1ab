"""A sweep of what was added since the first hardening issue (issue 32, item 2): outcome
files, prices and mapping files, the task and guard commands on an empty and a one-call
store, and the Parquet round trip, each given hostile input through the commands users run.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
LITELLM = SAMPLES / "opensearch" / "litellm.ndjson"  # logged calls, no ADK session
runner = CliRunner()
RLO, ESC = "\u202e", "\x1b"


def _session(sid: str, app_name: str, user: str, tool: str | None, text: str) -> dict:
    """An ADK session (web API JSON): one turn, one model call; with `tool`, the call asks
    for it, its result follows and the turn ends in an error naming `text`."""
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 5}
    user_event = {"id": "e0", "invocationId": "i1", "author": "user", "timestamp": 1.76e9,
                  "content": {"role": "user", "parts": [{"text": text}]}}  # fmt: skip
    if tool is None:
        reply = {"role": "model", "parts": [{"text": "done"}]}
        events = [user_event, {"id": "e1", "invocationId": "i1", "author": "agent",
                               "timestamp": 1.76e9 + 1, "content": reply,
                               "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}]
    else:
        call = {"functionCall": {"id": "c1", "name": tool, "args": {"q": text}}}
        result = {"functionResponse": {"id": "c1", "name": tool, "response": {"rows": [text]}}}
        events = [
            user_event,
            {"id": "e1", "invocationId": "i1", "author": "agent", "timestamp": 1.76e9 + 1,
             "content": {"role": "model", "parts": [call]}, "usageMetadata": usage,
             "modelVersion": "gemini-2.5-flash"},
            {"id": "e2", "invocationId": "i1", "author": "agent", "timestamp": 1.76e9 + 2,
             "content": {"role": "user", "parts": [result]}},
            {"id": "e3", "invocationId": "i1", "author": "agent", "timestamp": 1.76e9 + 3,
             "errorCode": "RESOURCE_EXHAUSTED", "errorMessage": text},
        ]  # fmt: skip
    return {"id": sid, "appName": app_name, "userId": user, "events": events}


def _store(tmp_path: Path, *sessions: dict, name: str = "f.duckdb") -> Path:
    db = tmp_path / name
    files = []
    for i, session in enumerate(sessions):
        files.append(tmp_path / f"{name}-{i}.json")
        files[-1].write_text(json.dumps(session))
    assert api.ingest_json(db, files).rows_loaded > 0
    return db


def _invoke(*args: str) -> tuple[int, str]:
    out = runner.invoke(app, list(args))
    assert "unexpected" not in out.output and "Traceback" not in out.output, out.output
    return out.exit_code, out.output


# -- 1. outcome files: wrong types, duplicates, empty files, formulas --------------------


def test_outcome_values_of_the_wrong_type_are_skips_naming_row_and_field(tmp_path):
    db = _store(tmp_path, _session("s1", "a", "u", None, "hi"))
    rows = [
        {"session_id": "s1", "task_id": True, "success": True},  # a flag is no task name
        {"session_id": "s1", "task_id": "t", "arm": False, "success": True},
        {"session_id": ["s1"], "task_id": "t", "success": True},
        {"session_id": "s1", "task_id": 1.5, "success": True},
        {"session_id": "s1", "task_id": "t", "arm": {"a": 1}, "success": True},
        {"session_id": "s1", "task_id": "t", "score": True, "threshold": 0.5},
        {"session_id": "s1", "task_id": "t", "score": "1e999", "threshold": 0.5},
        {"session_id": "s1", "task_id": "t", "score": [0.9], "threshold": 0.5},
        {"session_id": "s1", "task_id": "t", "success": 2},
        {"session_id": "s1", "task_id": "t", "success": "x" * 10_000},
        "a row",
        {"session_id": "s1", "task_id": "t", "success": "passed"},  # the one good row
    ]
    (tmp_path / "o.json").write_text(json.dumps(rows))
    result = api.load_outcomes(db, [tmp_path / "o.json"])
    assert result.rows_loaded == 1
    assert [(s.locator.rsplit(" ", 1)[1], s.reason) for s in result.skips] == [
        ("[0]", "task_id is not text: bool"),
        ("[1]", "arm is not text: bool"),
        ("[2]", "session_id is not text: list"),
        ("[3]", "task_id is not text: float"),
        ("[4]", "arm is not text: dict"),
        ("[5]", "score is not a number: True"),
        ("[6]", "score is not a finite number: '1e999'"),
        ("[7]", "score is not a number: '[0.9]'"),
        ("[8]", "success is not true or false: '2'"),
        ("[9]", "success is not true or false: '" + "x" * 40 + "'"),  # cut to 40
        ("[10]", "a row is not an object"),
    ]
    assert api.tasks(db).select("task_id", "successes").rows() == [("t", 1)]


def test_duplicates_across_files_are_skips_and_turns_are_executions(tmp_path):
    db = _store(tmp_path, _session("s1", "a", "u", None, "hi"))
    first, second = tmp_path / "first.csv", tmp_path / "second.json"
    first.write_text("session_id,invocation_id,task_id,success\n"
                     "s1,,t,true\ns1,i1,t,false\ns1,i2,t,true\nghost,,t,true\n")  # fmt: skip
    second.write_text(json.dumps([{"session_id": "s1", "task_id": "t", "success": True},
                                  {"session_id": "s1", "invocation_id": "i1", "task_id": "t",
                                   "success": False}]))  # fmt: skip
    result = api.load_outcomes(db, [first, second])
    assert (result.rows_read, result.rows_loaded) == (6, 2)
    assert [(s.locator, s.reason) for s in result.skips] == [
        (f"{first}:4", "turn 'i2' is not in session 's1'"),  # else loaded, then left out
        (f"{first}:5", "session 'ghost' is not in the store"),
        (f"{second}: [0]", f"the same execution as {first}:2"),
        (f"{second}: [1]", f"the same execution as {first}:3"),
    ]
    assert api.tasks(db).select("executions", "successes").rows() == [(2, 1)]


@pytest.mark.parametrize("name,content,code,said", [
    ("empty.csv", "", 1, "the header names no session_id and task_id columns (found: nothing)"),
    ("empty.json", "", 1, "not valid JSON: Expecting value"),
    ("blank.json", " \n\t\n", 1, "not valid JSON: Expecting value"),
    ("bom.csv", "\ufeff", 1, "the header names no session_id and task_id columns"),
    ("object.json", "{}", 1, "not outcomes: expected a CSV, a JSON list of rows"),
    ("header.csv", "session_id,task_id,success\n", 0, "no outcomes read (nothing matched)"),
    ("list.json", "[]", 0, "no outcomes read (nothing matched)"),
])  # fmt: skip
def test_an_empty_outcomes_file_is_said_never_a_crash(tmp_path, name, content, code, said):
    db = _store(tmp_path, _session("s1", "a", "u", None, "hi"))
    (tmp_path / name).write_text(content, encoding="utf-8")
    exit_code, output = _invoke("outcomes", "load", str(tmp_path / name), "--db", str(db))
    assert exit_code == code and said in output, output
    if code:
        assert "Error: nothing loaded: every outcome read was skipped" in output
    assert api.tasks(db).is_empty()


_NUMBER = re.compile(r"-\d[\d,]*(\.\d+)?([eE][-+]?\d+)?")


def _live_formulas(text: str) -> list[str]:
    """The CSV cells a spreadsheet would run as a formula (OWASP's list of starts)."""
    cells = [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]
    return [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")
            or (c[:1] == "-" and not _NUMBER.fullmatch(c))]  # fmt: skip


def test_a_tab_before_a_formula_is_text_in_both_csv_writers():
    from forensics.cli.output import to_csv
    from forensics.cli.writers import write_csv

    values = ["\t=1+1", "\t", "a\t=1", "\r=1", "-1,000.5", "-1e5", "-", "=1", "ok"]
    frame = pl.DataFrame({"v": values, "l": [[v] for v in values]})
    pieces: list[bytes] = []
    write_csv(frame, lambda b: pieces.append(bytes(b)))
    assert b"".join(pieces).decode() == to_csv(frame)
    rows = list(csv.reader(io.StringIO(to_csv(frame), newline="")))[1:]
    assert [r[0] for r in rows] == ["'\t=1+1", "'\t", "a\t=1", "\\x0d=1", "-1,000.5", "-1e5",
                                    "'-", "'=1", "ok"]  # fmt: skip
    assert _live_formulas(to_csv(frame)) == []


FORMULA_SESSIONS = [
    _session("=cmd|' /C calc'!A0", "+SUM(1,1)", "\t=1+1", "@SUM(A1)", "-2+3"),
    _session('@HYPERLINK("http://x")', "+SUM(1,1)", "\r=1+1", "=tool()", "=1+1"),
]


def test_formulas_in_data_never_reach_a_csv_as_formulas(tmp_path):
    db = _store(tmp_path, *FORMULA_SESSIONS)
    rows = tmp_path / "o.csv"
    with rows.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["session_id", "task_id", "arm", "success"])
        out.writerow(["=cmd|' /C calc'!A0", "=cmd|' /C calc'!A0", "@arm", "true"])
        out.writerow(['@HYPERLINK("http://x")', "=cmd|' /C calc'!A0", "-arm", "false"])
    assert api.load_outcomes(db, [rows]).rows_loaded == 2
    d = ["--db", str(db), "-f", "csv"]
    commands = [["sessions"], ["tasks"], ["tasks", "--by", "arm"], ["cost"], ["calls", "--all"],
                ["compare", "--baseline", "@arm", "--arm=-arm"], ["growth"], ["guards"],
                ["whatif", "--token-cap", "1", "--by", "result"], ["breakeven"],
                ["events", "=cmd|' /C calc'!A0"], ["outcomes", "load", str(rows)]]  # fmt: skip
    for command in commands:
        code, output = _invoke(*command, *d)
        assert code == 0, (command, output)
        if command[0] != "outcomes":  # its summary is lines, not CSV
            assert _live_formulas(output) == [], command
    shown = runner.invoke(app, ["sessions", *d]).output
    assert "'=cmd|' /C calc'!A0" in shown and "'\t=1+1" in shown and "\\x0d=1+1" in shown
    assert "'+SUM(1,1)" in shown
    exact = json.loads(runner.invoke(app, ["tasks", "--db", str(db), "-f", "json"]).output)
    assert {(r["task_id"], r["arm"]) for r in exact} == {("=cmd|' /C calc'!A0", "@arm"),
                                                         ("=cmd|' /C calc'!A0", "-arm")}


# -- stores sections 2 and 3 share (never changed by a test) -----------------------------


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """A store with no session (from a file of none), one session of one model call, the
    same with its outcome loaded, and a path where no store is."""
    folder = tmp_path_factory.mktemp("stores")
    empty = folder / "empty.duckdb"  # a file with no sessions: LiteLLM's logged calls
    assert api.ingest_opensearch_files(empty, [LITELLM]).rows_loaded > 0
    assert api.sessions(empty).is_empty()
    one = _store(folder, _session("only", "a", "u", None, "hi"), name="one.duckdb")
    judged = _store(folder, _session("only", "a", "u", None, "hi"), name="judged.duckdb")
    (folder / "o.csv").write_text("session_id,task_id,arm,success\nonly,t,base,true\n")
    assert api.load_outcomes(judged, [folder / "o.csv"]).rows_loaded == 1
    return {"empty": empty, "one": one, "judged": judged, "missing": folder / "none.duckdb"}


# -- 2. prices and mapping files with hostile values -------------------------------------

BASE = "[[price]]\nmodel = 'm'\noutput_mtok = 1\n"
DEEP_ARRAY = "x = " + "[" * 5_000 + "]" * 5_000 + "\n"
PRICE_CASES = [
    (BASE + "input_mtok = 1e400\n", "p.toml price[0]: input_mtok Decimal('1E+400') is above"),
    (BASE + "input_mtok = 99999999999999999999999999\n", "input_mtok 999999999999999999"),
    (BASE + "input_mtok = -0.5\n", "input_mtok Decimal('-0.5') is not a price (a number >= 0)"),
    (BASE + "input_mtok = nan\n", "input_mtok Decimal('NaN') is not a price (a number >= 0)"),
    (BASE + "input_mtok = inf\n", "input_mtok Decimal('Infinity') is not a price"),
    (BASE + "input_mtok = -inf\n", "input_mtok Decimal('-Infinity') is not a price"),
    (BASE + "input_mtok = 'NaN'\n", "input_mtok 'NaN' is not a price"),
    (BASE + "input_mtok = 'ten'\n", "p.toml price[0]: input_mtok 'ten' is not a number"),
    (BASE + "input_mtok = [1]\n", "p.toml price[0]: input_mtok must be a number, not list"),
    (BASE + "input_mtok = true\n", "input_mtok must be a number, not bool"),
    (BASE + "input_mtok = 2026-01-01\n", "input_mtok must be a number, not date"),
    (BASE + "input_mtok = 1\n[[price.tier]]\nabove = 99999999999999999999\n",
     "p.toml price[0].tier[0]: above must be a whole number of input tokens, larger than "
     "the tier before (0) and at most 9,223,372,036,854,775,807"),
    ("[[price]]\nmodel = {a = 1}\ninput_mtok = 1\noutput_mtok = 1\n",
     "p.toml price[0]: model must be a non-empty string"),
    (DEEP_ARRAY, "p.toml is not valid TOML: nested too deeply to read"),
    (BASE + "input_mtok = 1\n[[price.tier]]\nabove = " + "9" * 5_000 + "\n",
     "p.toml is not valid TOML: an integer of over 4,300 digits, more than Python reads"),
    (BASE + "input_mtok = '0." + "1" * 100_000 + "'\n",  # shown cut short, not 100 KB
     "input_mtok '0." + "1" * 38 + "'... (100,002 characters) has more than 12 decimal"),
    ("x = " + "{a = " * 3_000 + "1" + "}" * 3_000 + "\n", "nested too deeply to read"),
    ("[" + ".".join(["price"] * 3_000) + "]\n", "price must be an array of tables"),
    (BASE + f'input_mtok = 1\n"k{ESC}[2J{RLO}" = 1\n'.replace(ESC, "\\u001b").replace(
        RLO, "\\u202e"), "p.toml price[0]: unknown field k\\x1b[2J\\u202e"),
    (f'["{ESC}]0;pwned\x07"]\n'.replace(ESC, "\\u001b").replace("\x07", "\\u0007"),
     "unknown table \\x1b]0;pwned\\x07"),
]  # fmt: skip


@pytest.mark.parametrize("text,message", PRICE_CASES)
def test_a_hostile_prices_file_is_a_named_error_and_never_kept(stores, tmp_path, text, message):
    db = stores["one"]  # refused whole: it never changes
    (tmp_path / "p.toml").write_text(text)
    try:
        for command in (["prices", "--keep"], ["cost", "--prices"], ["prices", "m", "--prices"]):
            code, output = _invoke(*command, str(tmp_path / "p.toml"), "--db", str(db))
            assert code == 1 and message in output, (command, output)
            assert ESC not in output and RLO not in output and "\x07" not in output
    finally:
        kept = api.forget_prices(db)  # the store the other cases read stays as it was
    assert kept is False  # the refused file was not kept


def test_hostile_and_long_model_names_are_priced_and_shown_inert(stores, tmp_path):
    name = f"m{RLO}{ESC}[31m" + "x" * 5_000
    db = stores["one"]
    quoted = json.dumps(name)  # a TOML basic string is written as JSON writes one
    (tmp_path / "p.toml").write_text(
        f"[[price]]\nmodel = {quoted}\ninput_mtok = 1\noutput_mtok = 1\nnote = {quoted}\n")
    code, output = _invoke("prices", name, "--prices", str(tmp_path / "p.toml"), "--db", str(db))
    assert code == 0 and "override p.toml price[0]" in output
    assert ESC not in output and RLO not in output and "\\u202e\\x1b[31m" in output
    code, output = _invoke("prices", name, "--prices", str(tmp_path / "p.toml"), "--db", str(db),
                           "-f", "json")  # fmt: skip
    (row,) = json.loads(output)
    assert row["model"] == name.lower() and row["note"] == name


def test_a_10_mb_prices_file_loads_and_a_10_mb_value_is_a_named_error(tmp_path):
    db = _store(tmp_path, _session("s1", "a", "u", None, "hi"))
    big = tmp_path / "big.toml"
    big.write_text("# " + "c" * 5_000_000 + "\n[[price]]\nmodel = 'gemini-2.5-flash'\n"
                   "input_mtok = 2\noutput_mtok = 4\nnote = '" + "n" * 5_000_000 + "'\n")
    assert big.stat().st_size > 10_000_000
    code, output = _invoke("prices", "--keep", str(big), "--db", str(db))
    assert code == 0 and "kept big.toml" in output
    (row,) = json.loads(_invoke("cost", "--db", str(db), "-f", "json")[1])
    assert row["cost_usd_low"] == "0.00022"  # 100 in at 2, 5 out at 4, per million
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE + "input_mtok = '" + "9" * 10_000_000 + "'\n")
    code, output = _invoke("cost", "--prices", str(bad), "--db", str(db))
    assert code == 1 and output.startswith("Error: bad.toml price[0]: input_mtok '999")
    assert output.rstrip().endswith("is above 1,000,000,000 USD: not a price")


FIELDS = '[fields]\ntime = "@timestamp"\n'
MAPPING_CASES = [
    (FIELDS + "[match]\n" + DEEP_ARRAY, "not valid TOML: nested too deeply to read"),
    (FIELDS + "[match]\nx = " + "9" * 5_000 + "\n",
     "not valid TOML: an integer of over 4,300 digits, more than Python reads as one"),
    (FIELDS + "[" + ".".join(["match"] + ["a"] * 3_000) + "]\nx = 1\n",
     "[match] is nested too deeply to read"),
    (FIELDS + "[match]\nx = 2026-01-01\n", "[match] 'x' must be text, a number or true/false"),
    (FIELDS + "[match]\nx = [1]\n", "[match] 'x' must be text, a number or true/false, not list"),
    (FIELDS + 'kind = "k"\n[kinds]\nx = {a = 1}\n', "[kinds] 'x' = {'a': 1} is not a kind"),
    (FIELDS + '"t\\u001b[2J\\u202e" = "x"\n',
     "[fields] 't\\x1b[2J\\u202e' is not a field a mapping knows"),
    ('name = 5\n' + FIELDS, "name must be a non-empty string"),
    ('[fields]\ntime = 5\n', "[fields] time must be a document path (a string)"),
    ('"\\u001b]0;x" = 1\n' + FIELDS, "unknown key '\\x1b]0;x'"),
]  # fmt: skip


@pytest.mark.parametrize("text,message", MAPPING_CASES)
def test_a_hostile_mapping_file_is_a_named_error(tmp_path, text, message):
    mapping = tmp_path / "m.toml"
    mapping.write_text(text)
    for extra in ([], ["--explain-mapping"]):
        code, output = _invoke("ingest", "opensearch-file", str(LITELLM), "--mapping", str(mapping),
                               *extra, "--db", str(tmp_path / "f.duckdb"))  # fmt: skip
        assert code == 1 and f"{mapping}: {message}" in output, output
        assert ESC not in output and RLO not in output
    assert not (tmp_path / "f.duckdb").exists()


def test_files_saved_as_utf16_are_named_as_such(tmp_path):
    """A prices, mapping or outcomes file saved as UTF-16 (as Windows tools write) says so,
    and what to do; its error before was UTF-8's ("invalid start byte")."""
    db = _store(tmp_path, _session("s1", "a", "u", None, "hi"))
    prices, mapping, outcomes = tmp_path / "p.toml", tmp_path / "m.toml", tmp_path / "o.csv"
    prices.write_text(BASE + "input_mtok = 1\n", encoding="utf-16")
    mapping.write_text(FIELDS, encoding="utf-16")
    outcomes.write_text("session_id,task_id,success\ns1,t,true\n", encoding="utf-16")
    wanted = "UTF-16 text, not UTF-8: save it as UTF-8"
    code, output = _invoke("cost", "--prices", str(prices), "--db", str(db))
    assert code == 1 and f"cannot read the prices file {prices}: {wanted}" in output
    code, output = _invoke("ingest", "opensearch-file", str(LITELLM), "--mapping", str(mapping),
                           "--db", str(tmp_path / "f.duckdb"))  # fmt: skip
    assert code == 1 and f"{mapping}: not valid TOML: {wanted}" in output
    code, output = _invoke("outcomes", "load", str(outcomes), "--db", str(db))
    assert code == 1 and f"cannot read {outcomes}: {wanted}" in output


def test_a_10_mb_mapping_with_a_hostile_name_is_read(tmp_path):
    mapping = tmp_path / "m.toml"
    mapping.write_text('name = "logs\\u202e\\u001b[2J"\n' + FIELDS + "[match]\n"
                       + "".join(f'"k{i}" = "v{i}"\n' for i in range(500_000)))  # fmt: skip
    assert mapping.stat().st_size > 10_000_000
    code, output = _invoke("ingest", "opensearch-file", str(LITELLM), "--mapping", str(mapping),
                           "--explain-mapping", "--db", str(tmp_path / "f.duckdb"))  # fmt: skip
    assert code == 0 and ESC not in output and RLO not in output


# -- 3. the task and guard commands on an empty store and a one-call store ---------------


NO_ARM = "Error: no outcomes under arm 'base'"
# command -> what each store gives: rows of the JSON, or exit 1 and the message; the store
# with an outcome only where outcomes matter; where no store is: "no store at"
EXPECTED = {
    ("whatif", "--row-cap", "200"): {"empty": 0, "one": 1},
    ("whatif", "--token-cap", "10", "--by", "result"): {"empty": 0, "one": 0},
    ("whatif", "--token-cap", "10", "--by", "call"): {"empty": 0, "one": 1},
    ("whatif", "--token-cap", "10", "--by", "session"): {"empty": 0, "one": 1},
    ("guards", "--budget", "1"): {"empty": 0, "one": 0},
    ("tasks",): {"empty": 0, "one": 0, "judged": 1},
    ("tasks", "--by", "arm"): {"empty": 0, "one": 0, "judged": 1},
    ("compare", "--baseline", "base", "--arm", "other"): {
        "empty": NO_ARM, "one": NO_ARM, "judged": "Error: no outcomes under arm 'other'"},
    ("breakeven",): {"empty": "Error: no model calls in the selection", "one": 2},
}  # fmt: skip
CASES = [(command, kind) for command, kinds in EXPECTED.items() for kind in [*kinds, "missing"]]


@pytest.mark.parametrize("command,kind", CASES)
def test_analyses_of_an_empty_or_one_call_store_answer_or_say_why(stores, command, kind):
    expected = EXPECTED[command].get(kind, f"Error: no store at {stores[kind]}")
    for fmt in ("json", "table"):  # CSV: test_formulas_in_data_never_reach_a_csv_as_formulas
        code, output = _invoke(*command, "--db", str(stores[kind]), "-f", fmt)
        if isinstance(expected, str):
            assert code == 1 and output.startswith(expected), output
            assert "Hint: " in output
        elif fmt == "json":
            assert code == 0 and len(json.loads(output)) == expected, output
        else:
            assert code == 0 and output.strip(), output  # the header at least
    assert not stores["missing"].exists()  # a read never creates a store


# -- 4. the Parquet round trip keeps hostile text exactly ---------------------------------

HOSTILE_TEXT = {
    "bidi": (f"s{RLO}1", f"app{RLO}x", f"u{RLO}", f"get{RLO}orders", f"refused {RLO}009"),
    "ansi": (f"s{ESC}[2J", f"a{ESC}]0;x\x07", f"u{ESC}[31m", f"t{ESC}[1m", f"{ESC}]52;c;x\x07"),
    "html": ("<script>alert(1)</script>", "<script>a</script>", "<b>u</b>",
             "<img src=x onerror=alert(1)>", "</textarea><script>alert('x')</script>"),
    "emoji": ("🦜🔥", "app🦜", "👩‍👩‍👧", "tool_🔧", "hello 🌍 " * 10),
    "long": ("s" * 5_000, "a" * 200, "u" * 5_000, "t" * 2_000, "x" * 200_000),
    "numeric app": ("007", "007", "0042", "1", "1"),  # pyarrow would read app 007 as 7
    "hive's null": ("s", "__HIVE_DEFAULT_PARTITION__", "u", "t", "x"),
    "paths": ("../s", "a/b=c%2F..", "u/../", "t", "x"),
    "quotes": ("s'\";--", "a'\"", "u'", "t'\"", "'; DROP TABLE events; --"),
}  # fmt: skip


def _tables(db: Path) -> dict[str, list[tuple]]:
    """The stored rows an export carries, less which ingest loaded them."""
    queries = {"sessions": "SELECT * EXCLUDE (ingest_id) FROM sessions",
               "events": "SELECT * EXCLUDE (ingest_id) FROM events",
               "parts": "SELECT * FROM parts"}  # fmt: skip
    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.sql(query + " ORDER BY ALL").fetchall()
                for table, query in queries.items()}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE_TEXT))
def test_a_parquet_round_trip_keeps_hostile_text_equal(tmp_path, case):
    sid, app_name, user, tool, text = HOSTILE_TEXT[case]
    db = _store(tmp_path, _session(sid, app_name, user, tool, text))
    folder, back = tmp_path / "export", tmp_path / "back.duckdb"
    assert _invoke("export", "parquet", str(folder), "--db", str(db))[0] == 0
    code, output = _invoke("ingest", "parquet", str(folder), "--db", str(back))
    assert code == 0, output
    before, after = _tables(db), _tables(back)
    assert before["sessions"][0][:3] == (app_name, user, sid)
    assert any(tool in row for row in before["parts"])
    for table in before:
        assert after[table] == before[table], table
    assert api.calls(back).equals(api.calls(db))
    assert api.sessions(back).equals(api.sessions(db))
    assert all(folder in p.parents for p in tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize("app_name", ["a" * 300, "🦜" * 100])
def test_an_app_name_too_long_for_a_folder_is_a_named_error(tmp_path, app_name):
    db = _store(tmp_path, _session("s", app_name, "u", None, "hi"))
    code, output = _invoke("export", "parquet", str(tmp_path / "export"), "--db", str(db))
    assert code == 1, output
    assert f"Error: the app name {app_name[:40]!r}... ({len(app_name)} characters) is too " \
        "long to be a folder of a Parquet export (over 255 bytes once URI-encoded)" in output
    assert not (tmp_path / "export").exists()
    assert _invoke("export", "parquet", str(tmp_path / "none"), "--app", "other", "--db",
                   str(db))[0] == 0  # fmt: skip


# --- opensearch-file: huge and malformed lines; LiteLLM payloads with hostile values ----


def _payload(i: int, change: dict | None = None, path: str = "") -> str:
    """The sample's first LiteLLM payload, id `v{i}`, with `change` merged in at `path`
    (dotted, into nested objects)."""
    doc = json.loads(LITELLM.read_text().splitlines()[0])
    doc["id"] = f"v{i}"
    inner = doc
    for key in filter(None, path.split(".")):
        inner = inner[key]
    inner.update(change or {})
    return json.dumps(doc)


HOSTILE_VALUES = [  # (where, change, a skip's reason or None where the payload loads)
    ("", {"prompt_tokens": "abc", "completion_tokens": [1]}, None),
    ("", {"prompt_tokens": -5, "completion_tokens": 1.5}, None),
    ("", {"prompt_tokens": 10**30, "completion_tokens": float("inf")}, None),
    ("", {"prompt_tokens": True, "response_cost": "free"}, None),
    ("", {"response_cost": float("nan"), "status": 7}, None),
    ("", {"startTime": "garbage"}, "not a time: 'garbage'"),
    ("", {"startTime": "99999-01-01 00:00:00"}, "not a time"),
    ("", {"endTime": [1]}, "not a time: list"),
    ("", {"id": {"x": 1}, "model": ["a"]}, None),
    ("", {"metadata": [1, 2], "error_information": "text"}, None),
    ("metadata", {"usage_object": "text"}, None),
    ("metadata", {"usage_object": {"cache_read_input_tokens": "x",
                                   "cache_creation_input_tokens": 10**40}}, None),
    ("metadata.requester_metadata", {"session_id": {"a": 1}, "invocation_id": [1],
                                     "agent_name": 5}, None),
    ("metadata.requester_metadata", {"session_id": "x\u0000y" + RLO,
                                     "agent_name": "=cmd|' /C calc'!A0"}, None),
    ("", {"status": "failure", "error_str": "litellm.ContextWindowExceededError: prompt is "
          "too long: 99999999999999999999999 tokens > 5 maximum"}, "beyond a 64-bit integer"),
    ("", {"id": "\ud800lone"}, "not valid Unicode: a lone surrogate \\ud800"),
    ("", {"messages": "m" * (16 << 20)}, None),  # a 16 MB line
]


def test_hostile_lines_and_payloads_are_skips_by_line_and_the_rest_loads(tmp_path: Path) -> None:
    """Found by this sweep: a payload holding a lone surrogate, or a context error whose
    token count is beyond a BIGINT, failed the whole ingest (UnicodeEncodeError,
    OverflowError); each is one skip now, naming its line and field."""
    lines = [_payload(i, change, where) for i, (where, change, _) in enumerate(HOSTILE_VALUES)]
    n = len(lines)
    others = {  # line number: what the line is, and its skip
        n + 1: ('{"standard_logging_object": "text", "call_type": "x", "model": "m"}', None),
        n + 2: ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        n + 3: ('{"a": NaN, "b": Infinity, "c": 1e400}', "maps to nothing"),
        n + 4: ("42", "not a JSON object (int)"),
        n + 5: ('{"cut": ', "not valid JSON: Expecting value"),
    }
    lines += [line for line, _ in others.values()]
    raw = ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8", "surrogatepass")
    raw += b'{"bad": "\xff\xfe"}\n' + b'{"nul": "a\x00b"}\n' + _payload(99).encode()  # no \n
    path = tmp_path / "hostile.ndjson"
    path.write_bytes(raw)
    db = tmp_path / "h.duckdb"
    result = api.ingest_opensearch_files(db, [path])
    skips = {int(s.locator.split(":")[1].split()[0]): s.reason for s in result.skips}
    expected = {i + 1: why for i, (_, _, why) in enumerate(HOSTILE_VALUES) if why}
    expected |= {k: why for k, (_, why) in others.items() if why}
    expected |= {n + 6: "not UTF-8 text", n + 7: "not valid JSON: Invalid control character"}
    assert set(skips) - {n + 1} == set(expected), skips
    for line, why in expected.items():
        assert why in skips[line], (line, skips[line])
    stored = duckdb.connect(str(db), read_only=True)
    keys = {k for (k,) in stored.execute("SELECT record_key FROM logged").fetchall()}
    stored.close()
    assert any(k.startswith("litellm:v99:") for k in keys)  # the last line, after them all
    # every line is loaded, a skip, or (the wrapped string) read as not about agents
    assert len(keys) == result.rows_loaded
    assert result.rows_loaded + len(result.skips) + result.rows_ignored == len(lines) + 3
    for command in (["failures"], ["failures", "-f", "csv"], ["ingests"], ["cost", "--by", "day"]):
        out = runner.invoke(app, [*command, "--db", str(db)])
        assert out.exit_code == 0, (command, out.output)
        assert "\ud800" not in out.output and ESC not in out.stdout


def test_hostile_payloads_matched_to_adk_calls_leave_every_figure_finite(tmp_path: Path) -> None:
    """LiteLLM payloads naming the sample's sessions, with counts at the BIGINT's limit,
    negative or text counts, costs of 1e308 and NaN, markup and a formula for an agent:
    every cost command and both reports run, and no figure is infinite or NaN."""
    limit = 2**63 - 1
    changes = [
        ("", {"prompt_tokens": limit, "completion_tokens": limit}),
        ("metadata", {"usage_object": {"prompt_tokens": limit, "cache_read_input_tokens": limit,
                                       "cache_creation_input_tokens": limit}}),
        ("metadata", {"usage_object": {"cache_creation_input_tokens": -5,
                                       "prompt_tokens_details": {"cached_tokens": "lots"}}}),
        ("", {"response_cost": 1e308}),
        ("", {"response_cost": float("nan")}),
        ("metadata.requester_metadata", {"agent_name": "<script>x</script>=cmd|x" + RLO}),
    ]
    docs = [json.loads(line) for line in LITELLM.read_text().splitlines()]
    with (tmp_path / "p.ndjson").open("w") as f:
        for i, doc in enumerate(docs):
            where, change = changes[i % len(changes)]
            inner = doc
            for key in filter(None, where.split(".")):
                inner = inner[key]
            inner.update(change)
            f.write(json.dumps(doc) + "\n")
    db = tmp_path / "m.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    assert api.ingest_opensearch_files(db, [tmp_path / "p.ndjson"]).rows_loaded == len(docs)
    args = ["--db", str(db), "--prices", str(SAMPLES / "prices.toml")]
    for by in ("call", "session", "day", "agent"):
        out = runner.invoke(app, ["cost", "--by", by, "-f", "json", *args])
        assert out.exit_code == 0, out.output
        for row in json.loads(out.stdout):
            for key in ("cost_usd_low", "cost_usd_high"):
                value = row.get(key)
                assert value is None or float(value) < 1e6, (by, key, row)
    for command in (["cost", "--share"], ["cost", "--by", "tool"], ["breakeven"],
                    ["whatif", "--session", "incident", "--token-cap", "100"],
                    ["report", "incident", "incident", "--out", str(tmp_path / "i.html")],
                    ["report", "weekly", "--week", "2026-W43", "--out", str(tmp_path / "w.html")]):
        out = runner.invoke(app, [*command, *args])
        assert out.exit_code == 0, (command, out.output)
    assert runner.invoke(app, ["failures", "--db", str(db)]).exit_code == 0
    assert "<script>x" not in (tmp_path / "w.html").read_text()
