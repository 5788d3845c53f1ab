"""Logged documents read offline: the built-in shapes (Data Prepper spans of both
shapes and logs, LiteLLM payloads) on real documents from shared/real_data and on ADK's
own span names, the file layouts, mapping files, and what maps to nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.errors import ForensicsError
from forensics.families import context_limit
from forensics.families.documents import read
from forensics.families.mapping import load as load_mapping
from forensics.store import Store

REAL = Path(__file__).resolve().parents[2] / "shared" / "real_data"
OPENSEARCH = REAL / "opensearch"
needs_real = pytest.mark.skipif(not OPENSEARCH.is_dir(), reason="shared/real_data is absent")


def _read(document: dict) -> object:
    found = read(document, "doc")
    assert found.problem is None, found.problem
    return found.record


def adk_span(**attributes: object) -> dict:
    """An ADK 2.13 `generate_content` span as Data Prepper's default shape stores it."""
    doc = {
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spanId": "00f067aa0ba902b7",
        "parentSpanId": "",
        "name": "generate_content gemini-2.5-flash",
        "kind": "SPAN_KIND_INTERNAL",
        "startTime": "2026-10-22T09:01:20.254000123Z",
        "endTime": "2026-10-22T09:01:21.254000123Z",
        "status.code": 0,
        "resource.attributes.service@name": "agent-api",
        "span.attributes.gen_ai@operation@name": "generate_content",
        "span.attributes.gen_ai@conversation@id": "s-1",
        "span.attributes.gen_ai@agent@name": "orders",
        "span.attributes.gcp@vertex@agent@invocation_id": "e-1",
        "span.attributes.gcp@vertex@agent@event_id": "ev-1",
        "span.attributes.gen_ai@request@model": "gemini-2.5-flash",
        "span.attributes.gen_ai@response@finish_reasons": '["stop"]',
    }
    doc.update({f"span.attributes.{k.replace('.', '@')}": v for k, v in attributes.items()})
    return doc


def test_default_shape_adk_call_span() -> None:
    r = _read(
        adk_span(
            **{
                "gen_ai.usage.input_tokens": 181386,
                "gen_ai.usage.output_tokens": 14,
                "gen_ai.usage.cache_read.input_tokens": 1103,
            }
        )
    )
    assert (r.kind, r.shape, r.family) == ("call", "data-prepper", "otel-span")
    assert (r.session_id, r.invocation_id, r.event_id, r.agent) == ("s-1", "e-1", "ev-1", "orders")
    assert (r.input_tokens, r.output_tokens, r.cache_read_tokens) == (181386, 14, 1103)
    assert r.status == "ok" and r.service == "agent-api" and r.model == "gemini-2.5-flash"
    assert r.started_at == pytest.approx(1792659680.254000123)
    assert r.latency_s == pytest.approx(1.0)
    assert r.record_key == "span:4bf92f3577b34da6a3ce929d0e0e4736:00f067aa0ba902b7"


def test_otel_shape_error_span_is_a_context_failure() -> None:
    doc = {
        "traceId": "t",
        "spanId": "s",
        "name": "call_llm",
        "startTime": "2026-10-22T09:01:22Z",
        "attributes": {"gcp.vertex.agent.session_id": "s-9", "gen_ai.request.model": "gemini"},
        "status": {"code": "2", "message": "400 INVALID_ARGUMENT. The input token count "
                   "(1439860) exceeds the maximum number of tokens allowed (1048576)."},
    }
    r = _read(doc)
    assert (r.kind, r.shape, r.status, r.session_id) == ("call", "otel", "error", "s-9")
    assert r.context_failure and (r.context_tokens, r.context_limit) == (1439860, 1048576)


def test_tool_agent_and_turn_spans() -> None:
    tool = adk_span(**{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                       "gen_ai.tool.call.id": "adk-1", "gcp.vertex.agent.tool_response": "{}"})
    tool["name"] = "execute_tool lookup"
    r = _read(tool)
    assert (r.kind, r.tool_name, r.tool_call_id) == ("tool", "lookup", "adk-1")
    assert r.result_chars is None  # content capture off: ADK wrote "{}"
    merged = dict(tool, **{"span.attributes.gen_ai@tool@name": "(merged tools)"})
    assert read(merged, "doc").record is None  # ADK's merge span: each tool has its own
    turn = {k: v for k, v in adk_span().items() if "operation" not in k}
    turn["name"] = "invoke_workflow orchestrator"
    assert _read(turn).kind == "turn"


@needs_real
def test_real_data_prepper_and_genai_documents() -> None:
    raw = json.loads((OPENSEARCH / "data-prepper" / "raw-span-complete-1.json").read_text())
    found = read(raw, "raw")
    assert found.shape == "otel-span" and found.record is None  # an HTTP span: not an agent's
    claude = _read(json.loads(
        (OPENSEARCH / "data-prepper" / "genai" / "claude-code-llm-request-span.json").read_text()
    ))
    assert (claude.kind, claude.input_tokens, claude.cache_read_tokens, claude.cache_write_tokens,
            claude.output_tokens, claude.status) == ("call", 13, 8593, 4423, 156, "ok")
    assert claude.session_id == "f9ff4ec4-34fc-473d-9551-cf6e73594c92"
    inference = _read(json.loads(
        (OPENSEARCH / "data-prepper" / "genai" / "openinference-child-span.json").read_text()
    ))
    assert (inference.kind, inference.input_tokens) == ("call", 150)
    assert inference.agent == "weather-agent"
    payload = _read(json.loads((REAL / "litellm" / "standard_logging_payload.json").read_text()))
    assert (payload.kind, payload.family, payload.model, payload.input_tokens,
            payload.output_tokens, payload.status) == ("call", "litellm", "gpt-4o", 10, 20, "ok")
    assert payload.logged_cost_usd == pytest.approx(0.000225)


@needs_real
def test_real_ndjson_files_load_and_reload_once(tmp_path: Path) -> None:
    db = tmp_path / "f.duckdb"
    files = sorted((OPENSEARCH / "dashboards-observability").glob("*.ndjson"))
    first = api.ingest_opensearch_files(db, files)
    assert first.rows_read == sum(len(f.read_text().splitlines()) for f in files)
    assert first.rows_skipped == 0
    # the demo's spans and logs are a web shop's, not an agent's: read, none stored
    assert first.rows_ignored == first.rows_read and first.rows_loaded == 0
    assert first.notes["shapes"] == {"otel-log": 72, "otel-span": 50}
    # issue 33: said so, never "all already stored"; and no empty store left behind
    new = tmp_path / "new.duckdb"
    result = CliRunner().invoke(app, ["ingest", "opensearch-file", *map(str, files),
                                      "--db", str(new)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].startswith(
        "nothing loaded: none of the 122 documents read is about agents (read, not stored)")
    assert "already stored" not in result.stdout and not new.exists()


def test_litellm_context_window_failure() -> None:
    r = _read({
        "id": "c-1", "call_type": "acompletion", "status": "failure", "model": "claude-sonnet-4",
        "startTime": "2026-10-22 09:01:22.000000", "endTime": "2026-10-22 09:01:22.500000",
        "prompt_tokens": 0, "completion_tokens": 0,
        "error_str": "litellm.ContextWindowExceededError: prompt is too long: 216,230 tokens > "
                     "200,000 maximum",
        "error_information": {"error_class": "ContextWindowExceededError"},
        "metadata": {"requester_metadata": {"session_id": "incident", "agent_name": "orders"},
                     "usage_object": {"cache_creation_input_tokens": 512}},
    })
    assert (r.status, r.context_failure, r.context_tokens, r.context_limit) == (
        "error", True, 216230, 200000)
    assert (r.session_id, r.agent, r.error_code, r.cache_write_tokens) == (
        "incident", "orders", "ContextWindowExceededError", 512)
    assert r.latency_s == pytest.approx(0.5)


@pytest.mark.parametrize(
    "text, sizes",
    [
        ("The input token count (1439860) exceeds the maximum number of tokens allowed "
         "(1048576).", (1439860, 1048576)),
        ("prompt is too long: 216,230 tokens > 200,000 maximum", (216230, 200000)),
        ("This model's maximum context length is 128000 tokens. However, you requested 130512 "
         "tokens (130000 in the messages, 512 in the completion).", (130512, 128000)),
        ("Input is too long for requested model.", (None, None)),
        ("CONTEXT_LENGTH_EXCEEDED", (None, None)),
    ],
)
def test_context_error_texts(text: str, sizes: tuple) -> None:
    found = context_limit.parse(text)
    assert found is not None and (found.requested, found.limit) == sizes


def test_other_errors_are_not_context_failures() -> None:
    assert context_limit.parse("429 RESOURCE_EXHAUSTED: quota") is None
    assert context_limit.parse(None, "") is None


def test_file_layouts_and_bad_lines(tmp_path: Path) -> None:
    span = adk_span(**{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2})
    other = dict(span, spanId="00f067aa0ba902b8")
    ndjson = tmp_path / "dump.ndjson"
    ndjson.write_text(json.dumps(span) + "\n{not json\n" + json.dumps({"hello": 1}) + "\n"
                      + json.dumps(other) + "\n")
    search = tmp_path / "search.json"
    search.write_text(json.dumps(
        {"took": 1, "hits": {"total": {"value": 1}, "hits": [
            {"_index": "otel-v1-apm-span-000001", "_id": "a", "_source": span}]}}, indent=2))
    elasticdump = tmp_path / "dump.elasticdump"
    elasticdump.write_text(json.dumps({"_index": "otel-v1-apm-span-000001", "_id": "b",
                                       "_source": other}) + "\n")
    bulk = tmp_path / "bulk.ndjson"
    bulk.write_text(json.dumps({"index": {"_index": "i", "_id": "c"}}) + "\n"
                    + json.dumps(dict(span, spanId="00f067aa0ba902b9")) + "\n")
    db = tmp_path / "f.duckdb"
    result = api.ingest_opensearch_files(db, [ndjson, search, elasticdump, bulk])
    assert result.rows_read == 7
    assert result.rows_loaded == 3  # span, other, the bulk one; the rest already stored
    assert [(s.locator, s.reason[:20]) for s in result.skips] == [
        (f"{ndjson}:2:2", "not valid JSON: Expe"),
        (f"{ndjson}:3", "maps to nothing: not"),
    ]
    with Store.open(db, read_only=True) as store:
        locators = sorted(r[0] for r in store.run("SELECT locator FROM logged"))
    assert locators == [f"{bulk}:2 (i/c)", f"{ndjson}:1", f"{ndjson}:4"]


def test_a_number_too_long_or_a_broken_list_loses_only_what_it_holds(tmp_path: Path) -> None:
    """A number of over 4,300 digits (Python's json refuses it with a plain ValueError)
    is one skip in a file of lines; in a list of documents, a document nested too deeply
    or holding one is skipped by its index and the others read; a list or a _search
    body cut short keeps the documents before the cut; a single document cut short is
    one skip, never its own nested hits read as documents."""
    def spans(first: int) -> list[dict]:  # three of their own (a span is stored once)
        return [dict(adk_span(**{"gen_ai.usage.input_tokens": 10}), spanId=f"00f067aa0ba9{i:04x}")
                for i in range(first, first + 3)]

    long = '{"a": ' + "9" * 5000 + "}"
    lines = tmp_path / "long.ndjson"
    lines.write_text("\n".join([json.dumps(spans(0)[0]), long, json.dumps(spans(0)[1])]) + "\n")
    first = tmp_path / "long-first.ndjson"
    first.write_text("\n".join([long, json.dumps(spans(0)[2])]) + "\n")
    listed = tmp_path / "list.json"
    listed.write_text(f"{json.dumps(spans(3))[:-1]}, {long}, {json.dumps(spans(9)[0])}]")
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(spans(6))[:-1] + ', {"x": ' + "[" * 5000 + "]" * 5000 + "}]")
    body = json.dumps({"took": 1, "hits": {"total": {"value": 3}, "max_score": 1.0, "hits": [
        {"_index": "otel-v1-apm-span-000001", "_id": str(i), "_source": s}
        for i, s in enumerate(spans(12))]}}, indent=2)  # fmt: skip
    cut = tmp_path / "search.json"
    cut.write_text(body[: body.index('"_id": "2"')])
    one = tmp_path / "one.json"  # a document holding a body of its own, cut short
    one.write_text(json.dumps(dict(spans(15)[0], response={"hits": {"total": 1, "hits": [
        {"_source": {"a": 1}}]}}), indent=2)[:-40])  # fmt: skip
    result = api.ingest_opensearch_files(tmp_path / "f.duckdb",
                                         [lines, first, listed, deep, cut, one])  # fmt: skip
    reasons = [(s.locator, s.reason) for s in result.skips]
    too_long = "not read: holds a number of over 4,300 digits, more than Python's json reads"
    assert reasons[:2] == [(f"{lines}:2", too_long), (f"{first}:1", too_long)]
    assert reasons[2] == (f"{listed}: [3]", too_long)
    assert reasons[3] == (f"{deep}: [3]", "not read: JSON nested too deeply")
    where, why = reasons[4]
    assert where.startswith(f"{cut}:") and why.startswith("not valid JSON: ")
    assert why.endswith("(the 2 documents before it read, none after)")
    where, why = reasons[5]
    assert where.startswith(f"{one}:") and why.startswith("not valid JSON: ")
    assert len(reasons) == 6
    with Store.open(tmp_path / "f.duckdb", read_only=True) as store:
        locators = sorted(r[0] for r in store.run("SELECT locator FROM logged"))
    assert f"{listed}: [2]" in locators and f"{listed}: [4]" in locators
    assert f"{deep}: [2]" in locators and not any(str(one) in loc for loc in locators)
    assert f"{cut}: hits.hits[1] (otel-v1-apm-span-000001/1)" in locators
    assert f"{lines}:3" in locators and f"{first}:2" in locators


def test_a_file_of_nothing_readable_fails_after_its_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"a": 1}\n{"b": 2}\n')
    out = CliRunner().invoke(app, ["ingest", "opensearch-file", str(bad), "--db",
                                   str(tmp_path / "f.duckdb")])
    assert out.exit_code == 1
    assert f"{bad}:1: maps to nothing" in out.output
    assert "Error: nothing loaded: every document read was skipped (2;" in out.output


MAPPING = """
name = "app-logs"
[match]
"service.name" = "agent-api"
[fields]
time = "@timestamp"
session = "labels.session_id"
agent = "labels.agent"
kind = "event.action"
input_tokens = "llm.usage.prompt"
context_tokens = "llm.context_size"
error_text = "error.message"
[kinds]
"llm.response" = "call"
"llm.error" = "log"
"""


def _app_logs() -> list[dict]:
    base = {"service.name": "agent-api", "labels": {"session_id": "s-1", "agent": "orders"}}
    return [
        dict(base, **{"@timestamp": "2026-10-22T09:00:01Z", "event": {"action": "llm.response"},
                      "llm": {"usage": {"prompt": 1200}}}),
        dict(base, **{"@timestamp": "2026-10-22T09:00:05Z", "event": {"action": "llm.error"},
                      "llm": {"context_size": 1412345},
                      "error": {"message": "context length exceeded"}}),
        {"service.name": "billing", "@timestamp": "2026-10-22T09:00:06Z"},
    ]


def test_mapping_file_maps_a_teams_own_logs(tmp_path: Path) -> None:
    mapping = tmp_path / "logs.toml"
    mapping.write_text(MAPPING)
    dump = tmp_path / "logs.ndjson"
    dump.write_text("".join(json.dumps(d) + "\n" for d in _app_logs()))
    shown = api.explain_mapping(api.opensearch_file_documents([dump]), mapping)
    assert shown["shape"].to_list() == ["mapping:app-logs", "mapping:app-logs", None]
    assert shown["kind"].to_list() == ["call", "log", None]
    assert shown["context_tokens"].to_list() == [None, 1412345, None]
    assert "maps to nothing" in shown["problem"][2]
    db = tmp_path / "f.duckdb"
    result = api.ingest_opensearch_files(db, [dump], mapping=mapping)
    assert (result.rows_loaded, result.rows_skipped) == (2, 1)
    failures = api.context_failures(db)
    assert failures.select("session_id", "agent", "evidence", "logged_tokens",
                           "responses_before", "verdict").rows() == [
        ("s-1", "orders", "mapping:app-logs", 1412345, 1, "no session")]


@pytest.mark.parametrize(
    "text, message",
    [
        ("name = 1\n[fields]\ntime='t'\n", "name must be a non-empty string"),
        ("[fields]\nsession = 's'\n", "[fields] has no `time`"),
        ("[fields]\ntime = 't'\nsesion = 's'\n", "[fields] 'sesion' is not a field"),
        ("[fields]\ntime = 't'\nkind='k'\n[kinds]\nx = 'call_llm'\n", "[kinds] 'x' = 'call_llm'"),
        ("[fields\n", "not valid TOML"),
        ("[fields]\ntime = 't'\n[extra]\n", "unknown key 'extra'"),
    ],
)
def test_bad_mapping_files_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(ForensicsError) as caught:
        load_mapping(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"


def test_the_samples_logged_failure_is_the_incidents_with_its_verdict(tmp_path: Path) -> None:
    """The bundled incident, as production would have indexed it (spans, app logs,
    LiteLLM payloads), merged with its stored session: one failure, three witnesses,
    and the logged figure is the failing request's window, not cumulative input."""
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    loaded = api.ingest_opensearch_files(db, sorted((SAMPLE / "opensearch").glob("*.ndjson")))
    assert loaded.rows_skipped == 0 and loaded.notes["records"] == {
        "agent": 12, "call": 44, "log": 9, "tool": 18, "turn": 9}
    found = api.context_failures(db)
    assert found.height == 1
    row = found.row(0, named=True)
    assert row["evidence"] == "otel-log, litellm, adk"
    assert (row["session_id"], row["agent"], row["turn"]) == ("incident", "orders_specialist", 2)
    assert (row["logged_tokens"], row["logged_tokens_source"], row["context_limit"]) == (
        216230, "logged", 200000)
    # six answered calls precede it: five in turn 1, one in turn 2 (LiteLLM's, once each)
    assert row["responses_before"] == 6
    assert row["verdict"] == "window" and row["gap_window_pct"] == 0.0
    assert row["cumulative_input"] == 397915 and row["gap_cumulative_pct"] < -45
    # reloading the same documents adds nothing and the failure stays one
    again = api.ingest_opensearch_files(db, sorted((SAMPLE / "opensearch").glob("*.ndjson")))
    assert again.rows_loaded == 0 and api.context_failures(db).height == 1
    # logs only, no session loaded: the figure is there, the verdict cannot be
    logs_only = tmp_path / "logs.duckdb"
    api.ingest_opensearch_files(logs_only, [SAMPLE / "opensearch" / "logs-otel-v1.ndjson"])
    alone = api.context_failures(logs_only).row(0, named=True)
    assert (alone["logged_tokens"], alone["verdict"], alone["responses_before"]) == (
        216230, "no session", None)
    # a session known from its logs alone is asked for by its id; one nothing names is
    # an error, as for `turns`, not "no context failures"
    assert api.context_failures(logs_only, api.Selection(session="incident")).height == 1
    out = CliRunner().invoke(app, ["failures", "incidnet", "--db", str(logs_only)])
    assert out.exit_code == 1 and out.stderr.splitlines() == [
        "Error: no session 'incidnet' in the store",
        "Hint: known sessions include: compaction, incident, parallel"], out.output  # (logs)
    with pytest.raises(ForensicsError, match="no session 'incidnet'"):
        api.context_failures(db, api.Selection(session="incidnet"))


def test_failures_by_agent_and_cluster() -> None:
    from forensics.analysis.failures import clusters
    from forensics.columns import FAILURES

    rows = []
    for number, (session, figure) in enumerate(
        [("a", 1_390_000), ("a", 2_790_000), ("b", 1_420_000), ("c", 2_810_000), ("d", None)], 1
    ):
        row = dict.fromkeys(FAILURES.names)
        row.update(failure=number, session_id=session, logged_tokens=figure, verdict="no session",
                   cluster=None, failed_at=float(number))
        rows.append(row)
    from forensics.analysis import failures as module

    module.assign_clusters(rows)
    assert [r["cluster"] for r in rows] == [1, 2, 1, 2, None]
    shown = clusters(FAILURES.frame(rows))
    assert shown.select("cluster", "failures", "sessions", "low_tokens", "median_tokens",
                        "high_tokens", "members").rows() == [
        (1, 2, 2, 1_390_000, 1_405_000, 1_420_000, "[1, 3]"),
        (2, 2, 2, 2_790_000, 2_800_000, 2_810_000, "[2, 4]"),
    ]
