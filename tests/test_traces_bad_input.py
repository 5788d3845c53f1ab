"""Bad input to `forensics ingest adk-trace`: each bad span is one skip naming the file and
the span, the rest of the file and the other files load, and no run ends in a traceback."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.ingest.traces import read_trace_file

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "real_data" / "adk_traces"
# a dev UI export of 3 traced requests, and one of another session to load beside it
SIMPLE = "customer_service_20260110_002956__trace_cs_simple_17a89ba6_session_bbf7f3e4-8067-41d2-9b0d-1c41a98a9f8e.json"  # noqa: E501
OTHER = "customer_service_20260110_002956__trace_cs_simple_2f260f51_session_78bff4d3-7b21-4218-881c-328d8551703c.json"  # noqa: E501
# OTLP JSON, one request on one line: 24 traced requests (20 distinct events), the
# first at spans[2]
OTLP = ROOT / "tests" / "adk_releases" / "2.13.0" / "trace.otlp.json"
OTLP_FIRST = "resourceSpans[0].scopeSpans[0].spans[2]"
DEEP = "nested too deeply to read (over about 1,000 levels of objects and lists)"
LONG = "holds a number of over 4,300 digits, more than Python's json reads"


def _real(name: str) -> Path:
    if not (TRACES / name).is_file():
        pytest.skip("shared/real_data is absent")
    return TRACES / name


def _spans() -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = json.loads(_real(SIMPLE).read_text(encoding="utf-8"))
    return spans


def _first_call(spans: list[dict[str, Any]]) -> int:
    return next(i for i, s in enumerate(spans) if s.get("name") == "call_llm")


def _request(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """A change to a span's llm_request, as a change to the span."""

    def changed(span: dict[str, Any]) -> None:
        attributes = span["attributes"]
        request = json.loads(attributes["gcp.vertex.agent.llm_request"])
        change(request)
        attributes["gcp.vertex.agent.llm_request"] = json.dumps(request)

    return changed


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda target: target.__setitem__(key, value)


def _first_part(part: Any) -> Callable[[dict[str, Any]], None]:
    return _request(lambda r: r["contents"][0].__setitem__("parts", [part]))


def _attribute(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda span: span["attributes"].__setitem__(key, value)


WRONG_SPANS = {
    "attributes a list": (_set("attributes", [1, 2]), "attributes is list, not an object"),
    "config text": (_request(_set("config", "x")), "llm_request config is str, not an object"),
    "http_options text": (
        _request(lambda r: r["config"].__setitem__("http_options", "x")),
        "llm_request config.http_options is str, not an object",
    ),
    "scope text": (_set("scope", "gcp"), "scope is str, not an object"),
    "contents a number": (
        _request(_set("contents", 5)), "llm_request contents is int, not a list"),
    "contents of text": (
        _request(_set("contents", ["a", "b"])), "llm_request contents[0] is str, not an object"),
    "parts of text": (
        _request(lambda r: r["contents"][0].__setitem__("parts", ["a", 5])),
        "llm_request contents[0].parts[0] is str, not an object",
    ),
    "function_call text": (
        _first_part({"function_call": "x"}),
        "llm_request contents[0].parts[0].function_call is str, not an object",
    ),
    "function_call name a number": (
        _first_part({"function_call": {"name": 5, "args": {}}}),
        "llm_request contents[0].parts[0].function_call.name is int, not text",
    ),
    "function_response text": (
        _first_part({"function_response": ["x"]}),
        "llm_request contents[0].parts[0].function_response is list, not an object",
    ),
    "start_time Infinity": (
        _set("start_time", float("inf")), "start_time is not a time in nanoseconds: inf"),
    "end_time beyond a float": (
        _set("end_time", 10**400), "end_time is not a time in nanoseconds: " + "1" + "0" * 39),
    "llm_request 5,000 deep": (
        _attribute("gcp.vertex.agent.llm_request", '{"a": ' + "[" * 5000 + "]" * 5000 + "}"),
        f"llm_request is {DEEP}",
    ),
}


@pytest.mark.parametrize("case", WRONG_SPANS, ids=list(WRONG_SPANS))
def test_a_span_of_the_wrong_shape_is_one_skip_and_the_other_files_load(case, tmp_path):
    change, reason = WRONG_SPANS[case]
    spans = _spans()
    first = _first_call(spans)
    change(spans[first])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spans), encoding="utf-8")  # Infinity as JSON's extension
    good = _real(OTHER)
    result = api.ingest_traces(tmp_path / "f.duckdb", [good, bad])
    assert [(s.locator, s.reason) for s in result.skips] == [(f"{bad}: span {first}", reason)]
    assert result.rows_loaded == len(read_trace_file(good, [])) + 2


def test_the_command_loads_the_good_file_given_with_a_bad_one(tmp_path):
    spans = _spans()
    _request(_set("config", "x"))(spans[_first_call(spans)])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spans), encoding="utf-8")
    db = tmp_path / "f.duckdb"
    out = CliRunner().invoke(app, ["ingest", "adk-trace", str(_real(OTHER)), str(bad),
                                   "--db", str(db)])
    assert out.exit_code == 0, out.output
    with api.open_store(db) as store:
        (sessions,) = store.run("SELECT count(DISTINCT session_id) FROM traced_calls")[0]
    assert sessions == 2


def test_a_lone_surrogate_is_stored_as_its_escape(tmp_path):
    spans = _spans()
    first = _first_call(spans)
    system = "be brief\ud800 always"
    _request(lambda r: r["config"].__setitem__("system_instruction", system))(spans[first])
    spans[first]["attributes"]["gcp.vertex.agent.event_id"] = "ev\ud800"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spans), encoding="utf-8")  # ASCII: the surrogate as \ud800
    result = api.ingest_traces(tmp_path / "f.duckdb", [bad])
    assert (result.rows_loaded, result.skips) == (3, [])
    with api.open_store(tmp_path / "f.duckdb") as store:
        rows = store.run("SELECT system_sha256, system_head, system_chars FROM traced_calls"
                         " WHERE event_id = ?", ["ev\\ud800"])
    digest = hashlib.sha256(system.encode("utf-8", "surrogatepass")).hexdigest()
    assert rows == [(digest, "be brief\\ud800 always", len(system))]


@pytest.mark.parametrize("tokens", [10**30, -5, 1.5, "many"])
def test_a_token_count_that_is_no_count_is_unknown(tokens, tmp_path):
    spans = _spans()
    first = _first_call(spans)
    spans[first]["attributes"]["gen_ai.usage.input_tokens"] = tokens
    event = spans[first]["attributes"]["gcp.vertex.agent.event_id"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spans), encoding="utf-8")
    result = api.ingest_traces(tmp_path / "f.duckdb", [bad])
    assert (result.rows_loaded, result.skips) == (3, [])
    with api.open_store(tmp_path / "f.duckdb") as store:
        assert store.run("SELECT input_tokens FROM traced_calls WHERE event_id = ?",
                         [event]) == [(None,)]


@pytest.mark.parametrize(
    ("shape", "reason"),
    [("[" * 5000 + "]" * 5000, DEEP), ("9" * 5000, LONG), ('{"n": ' + "9" * 5000 + "}", LONG)],
    ids=["5,000 deep", "5,000 digits", "5,000 digits in a span"],
)
def test_an_element_json_cannot_read_costs_only_that_span(shape, reason, tmp_path):
    spans = _spans()
    text = json.dumps(spans, indent=1)
    bad = tmp_path / "bad.json"
    bad.write_text(f"{text[:-1]},\n {shape}, {json.dumps(spans[-1])}\n]", encoding="utf-8")
    skips: list[Any] = []
    calls = read_trace_file(bad, skips)
    assert [(s.locator, s.reason) for s in skips] == [(f"{bad}: span {len(spans)}", reason)]
    assert len(calls) == 3


def test_a_span_list_cut_short_keeps_the_complete_spans_before_the_cut(tmp_path):
    spans = _spans()
    last = max(i for i, s in enumerate(spans) if s.get("name") == "call_llm")
    head = "[" + ", ".join(json.dumps(s) for s in spans[:last]) + ", "
    cut = head + json.dumps(spans[last])[:500]
    bad = tmp_path / "cut.json"
    bad.write_text(cut, encoding="utf-8")
    skips: list[Any] = []
    calls = read_trace_file(bad, skips)
    assert len(calls) == 2  # the 3rd request is the one cut short
    (skip,) = skips
    error = _error(cut)
    assert skip.locator == f"{bad}:1:{error.colno}"
    assert skip.reason == (
        f"not valid JSON: {error.msg} column {error.colno} (cut short?); "
        f"the {last} complete spans before it were read")


def _error(text: str) -> json.JSONDecodeError:
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return e
    raise AssertionError("valid JSON")


def test_a_span_list_broken_between_spans_says_where(tmp_path):
    spans = _spans()
    bad = tmp_path / "bad.json"
    bad.write_text("[" + json.dumps(spans[0]) + " " + json.dumps(spans[1]) + "]",
                   encoding="utf-8")
    skips: list[Any] = []
    read_trace_file(bad, skips)
    (skip,) = skips
    assert skip.locator == f"{bad}:1:{len(json.dumps(spans[0])) + 3}"
    assert skip.reason.startswith("not valid JSON: Expecting ',' delimiter at column ")
    assert skip.reason.endswith("; the 1 complete spans before it were read")


# OTLP JSON -----------------------------------------------------------------------------


def _otlp() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(OTLP.read_text(encoding="utf-8"))
    return document


def _first_otlp_call(document: dict[str, Any]) -> dict[str, Any]:
    span: dict[str, Any] = document["resourceSpans"][0]["scopeSpans"][0]["spans"][2]
    assert span["name"] == "call_llm"
    return span


def _value(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda span: span["attributes"].append({"key": "x", "value": value})


WRONG_OTLP = {
    "intValue null": (
        _value({"intValue": None}), "attribute 'x': intValue is not an integer: None"),
    "doubleValue an object": (
        _value({"doubleValue": {}}), "attribute 'x': doubleValue is not a number: {}"),
    "arrayValue text": (
        _value({"arrayValue": "abc"}), "attribute 'x': arrayValue is str, not an object"),
    "kvlistValue text": (
        _value({"kvlistValue": "abc"}), "attribute 'x': kvlistValue is str, not an object"),
    "bytesValue a number": (
        _value({"bytesValue": 5}), "attribute 'x': bytesValue is int, not base64 text"),
    "startTimeUnixNano Infinity": (
        _set("startTimeUnixNano", float("inf")),
        "startTimeUnixNano is not an integer of nanoseconds",
    ),
}


@pytest.mark.parametrize("case", WRONG_OTLP, ids=list(WRONG_OTLP))
def test_an_otlp_value_of_the_wrong_shape_is_one_skip(case, tmp_path):
    change, reason = WRONG_OTLP[case]
    document = _otlp()
    change(_first_otlp_call(document))
    bad = tmp_path / "bad.otlp.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    result = api.ingest_traces(tmp_path / "f.duckdb", [bad])
    assert [(s.locator, s.reason) for s in result.skips] == [(f"{bad}: {OTLP_FIRST}", reason)]
    assert result.rows_loaded == 19


def test_otlp_lines_split_at_newlines_only(tmp_path):
    """JSON strings may hold U+2028, U+2029 and U+0085 raw: they end no line."""
    document = _otlp()
    _value({"stringValue": "one\u2028two\u2029three\u0085four"})(_first_otlp_call(document))
    empty = json.dumps({"resourceSpans": []})
    bad = tmp_path / "lines.jsonl"
    line = json.dumps(document, ensure_ascii=False)
    bad.write_text(f"{empty}\r\n{line}\r\n{empty}\n{{\n", encoding="utf-8", newline="")
    result = api.ingest_traces(tmp_path / "f.duckdb", [bad])
    assert result.rows_loaded == 20
    assert [(s.locator, s.reason) for s in result.skips] == [
        (f"{bad}:4:2", "not valid JSON: Expecting property name enclosed in double quotes")]


def test_an_otlp_line_json_cannot_read_costs_only_that_line(tmp_path):
    bad = tmp_path / "lines.jsonl"
    deep = '{"resourceSpans": ' + "[" * 5000 + "]" * 5000 + "}"
    bad.write_text(f"{deep}\n{OTLP.read_text(encoding='utf-8').strip()}\n", encoding="utf-8")
    result = api.ingest_traces(tmp_path / "f.duckdb", [bad])
    assert result.rows_loaded == 20
    assert [(s.locator, s.reason) for s in result.skips] == [(f"{bad}:1", DEEP)]


def test_a_pretty_printed_file_json_cannot_read_is_one_skip_saying_why(tmp_path):
    """One document over many lines that json refuses (a number of over 4,300 digits) is
    one skip naming the cause, not a \"not valid JSON\" skip per line."""
    document = json.loads(OTLP.read_text(encoding="utf-8"))
    document["note"] = 1
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(document, indent=2).replace('"note": 1', '"note": ' + "9" * 5000),
                      encoding="utf-8")  # fmt: skip
    result = api.ingest_traces(tmp_path / "f.duckdb", [pretty, OTLP])
    assert [(s.locator, s.reason) for s in result.skips] == [
        (str(pretty), "holds a number of over 4,300 digits, more than Python's json reads")]
    assert result.rows_loaded == 20  # the good file's
