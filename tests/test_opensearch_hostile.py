"""Logged documents others wrote, at their worst: each bad document is one skip with
its file and line, and nothing good beside it is lost; merges and matches that must
not join what is distinct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics import api
from forensics.analysis.failures import failures as merge_failures
from forensics.columns import CALLS
from forensics.errors import ForensicsError, SourceError
from forensics.families import context_limit
from forensics.families.fields import count, epoch
from forensics.families.mapping import load as load_mapping
from forensics.store import Store
from tests.test_opensearch_files import adk_span


def _ingest(tmp_path: Path, lines: list[str | bytes], name: str = "d.ndjson"):
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    db = tmp_path / "h.duckdb"
    return path, db, api.ingest_opensearch_files(db, [path])


def _span(n: int, **extra: object) -> str:
    doc = adk_span(**{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 1})
    doc["spanId"] = f"{n:016x}"
    doc.update(extra)
    return json.dumps(doc)


def test_bad_values_are_skips_that_name_the_line(tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    path, db, result = _ingest(tmp_path, [
        _span(1),
        _span(2, startTime=1e300),                       # no time at all
        _span(3, startTime="2026-13-40T99:00:00Z"),      # not a date
        _span(4, **{"status.code": [2]}),                # a status that is a list
        '{"traceId": "t", "spanId": "s", "name": "x", "startTime": ' + deep + "}",
        _span(6, **{"span.attributes.gen_ai@usage@input_tokens": 2**70}),  # not a count
        _span(7),
    ])  # fmt: skip
    reasons = {s.locator.split(":")[1]: s.reason for s in result.skips}
    assert set(reasons) == {"2", "3", "5"}, result.skips
    assert reasons["2"].startswith("not a time")
    assert "month must be in 1..12" in reasons["3"]
    assert result.rows_loaded == 4  # 1, 4 (status read as unknown), 6 (count dropped), 7
    with Store.open(db, read_only=True) as store:
        rows = dict(store.run("SELECT span_id, input_tokens FROM logged"))
    assert rows[f"{6:016x}"] is None and rows[f"{1:016x}"] == 10


def test_spans_without_ids_do_not_collapse_into_one(tmp_path: Path) -> None:
    lines = []
    for n in range(3):
        doc = json.loads(_span(n))
        doc["traceId"], doc["spanId"] = None, ""
        doc["startTime"] = f"2026-10-22T09:00:0{n}Z"
        lines.append(json.dumps(doc))
    _, _, result = _ingest(tmp_path, lines)
    assert result.rows_loaded == 3


def test_a_line_that_is_not_utf8_is_one_skip(tmp_path: Path) -> None:
    lines: list[str | bytes] = [_span(n) for n in range(200)]
    lines[100] = b'{"name": "\xff\xfe"}'
    path, _, result = _ingest(tmp_path, lines)
    assert [(s.locator, s.reason[:12]) for s in result.skips] == [(f"{path}:101", "not UTF-8 te")]
    assert result.rows_loaded == 199


def test_ndjson_whose_first_line_is_bad_loses_only_that_line(tmp_path: Path) -> None:
    _, _, result = _ingest(tmp_path, ["{broken", _span(1), _span(2)])
    assert len(result.skips) == 1 and result.skips[0].locator.endswith(":1:2")
    assert result.rows_loaded == 2


def test_ndjson_of_search_bodies_and_an_empty_file(tmp_path: Path) -> None:
    body = {"hits": {"hits": [{"_index": "i", "_id": "a", "_source": json.loads(_span(1))}]}}
    other = {"hits": {"hits": [{"_index": "i", "_id": "b", "_source": json.loads(_span(2))}]}}
    path, _, result = _ingest(tmp_path, [json.dumps(body), json.dumps(other)])
    assert result.rows_loaded == 2 and not result.skips
    empty = tmp_path / "empty.ndjson"
    empty.write_text("\n")
    out = api.ingest_opensearch_files(tmp_path / "e.duckdb", [empty])
    assert [(s.locator, s.reason) for s in out.skips] == [(str(empty), "empty file")]
    with pytest.raises(SourceError, match="a directory"):
        api.ingest_opensearch_files(tmp_path / "e.duckdb", [path, tmp_path])


def test_counts_and_times_read_only_what_they_can_be() -> None:
    assert [count(v) for v in (12, "12", 12.0, -5, "-5", 2**64, 1.5, True, "1e3")] == [
        12, 12, 12, None, None, None, None, None, None]
    assert epoch("2026-10-22T09:00:00.123456789Z") == pytest.approx(1792659600.123456789)
    assert epoch("2026-10-22 09:00:00") == epoch("2026-10-22T09:00:00+00:00")
    assert epoch(1792659600123) == pytest.approx(1792659600.123)  # milliseconds
    for bad in (float("inf"), float("nan"), 10**30, "2026-10-22T09:00:00+25:00", "soon"):
        with pytest.raises(ValueError):
            epoch(bad)


def test_mentions_of_a_context_are_not_context_failures() -> None:
    assert context_limit.parse("context length must be positive") is None
    assert context_limit.parse("the context window was exceeded") is not None
    assert context_limit.parse("9" * 50_000) is None  # a long run of digits is read quickly


def _failure_rows(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        row = {"record_key": r["key"], "family": r.get("family", "otel-log"), "locator": "x",
               "started_at": r["at"], "trace_id": r.get("trace"), "session_id": r.get("session"),
               "invocation_id": None, "event_id": r.get("event"), "agent": None, "model": None,
               "error_code": None, "error_text": "context", "context_tokens": r.get("figure"),
               "context_limit": None, "responses_before": None}  # fmt: skip
        out.append(row)
    return out


def _frame(rows: list[dict]):
    import polars as pl

    return pl.DataFrame(_failure_rows(rows), schema={
        "record_key": pl.String, "family": pl.String, "locator": pl.String,
        "started_at": pl.Float64, "trace_id": pl.String, "session_id": pl.String,
        "invocation_id": pl.String, "event_id": pl.String, "agent": pl.String,
        "model": pl.String, "error_code": pl.String, "error_text": pl.String,
        "context_tokens": pl.Int64, "context_limit": pl.Int64, "responses_before": pl.Int64})


def _no_adk():
    import polars as pl

    return CALLS.frame([]), pl.DataFrame(schema={
        "app_name": pl.String, "user_id": pl.String, "session_id": pl.String,
        "event_id": pl.String, "error_code": pl.String, "error_message": pl.String})


def test_two_requests_that_failed_close_together_stay_two_failures() -> None:
    calls, errors = _no_adk()
    logged = _frame([
        {"key": "a", "at": 100.0, "session": "s", "event": "e1", "figure": 1_400_000},
        {"key": "b", "at": 103.0, "session": "s", "event": "e2", "figure": 2_800_000},
        {"key": "c", "at": 101.0, "session": "s", "family": "litellm"},     # names no event
        {"key": "d", "at": 200.0, "trace": "t9", "figure": 5},               # no session
        {"key": "e", "at": 201.0, "trace": "t9", "family": "litellm"},       # its trace's
        {"key": "f", "at": 202.0, "trace": "t8"},                            # another trace
    ]).sort("started_at")  # fmt: skip
    found = merge_failures(logged, calls, errors)
    assert found.select("session_id", "evidence", "logged_tokens").rows() == [
        ("s", "otel-log, litellm", 1_400_000),
        ("s", "otel-log", 2_800_000),
        (None, "otel-log, litellm", 5),
        (None, "otel-log", None),
    ]
    assert found["verdict"].to_list() == ["no session", "no session", "no session", "no figure"]


def test_the_failing_adk_call_is_the_one_the_log_names(tmp_path: Path) -> None:
    """A context failure at one event and, 2 s later in the same session, a refusal of
    another kind: the log's failure is matched to its own event, not the nearer one."""
    events = [
        {"id": "u1", "invocation_id": "i1", "author": "user", "timestamp": 1_792_659_600.0,
         "content": {"role": "user", "parts": [{"text": "hi"}]}},
        {"id": "f1", "invocation_id": "i1", "author": "agent", "timestamp": 1_792_659_601.0,
         "error_code": "CONTEXT_LENGTH_EXCEEDED",
         "error_message": "prompt is too long: 216,230 tokens > 200,000 maximum"},
        {"id": "f2", "invocation_id": "i1", "author": "agent", "timestamp": 1_792_659_603.0,
         "error_code": "RESOURCE_EXHAUSTED", "error_message": "429 quota"},
    ]  # fmt: skip
    session = tmp_path / "s.json"
    session.write_text(json.dumps({"id": "s", "app_name": "a", "user_id": "u", "events": events}))
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [session])
    log = {"time": "2026-10-22T09:00:01.500Z", "severityNumber": 17,
           "body": "model call failed: prompt is too long: 216,230 tokens > 200,000 maximum",
           "attributes": {"session.id": "s", "event.id": "f1"}}  # fmt: skip
    logs = tmp_path / "logs.ndjson"
    logs.write_text(json.dumps(log) + "\n")
    api.ingest_opensearch_files(db, [logs])
    found = api.context_failures(db)
    assert found.select("call_id", "evidence").rows() == [("f1", "otel-log, adk")]
    assert api.context_failures(db, api.Selection(app="other")).is_empty()


def test_two_payloads_of_one_call_do_not_count_it_twice(tmp_path: Path) -> None:
    from tests.test_cost import _store

    usage = {"prompt_token_count": 10_000, "cached_content_token_count": 8_000,
             "candidates_token_count": 500}
    db = _store(tmp_path, {"s": (1_789_992_000.0, "claude-sonnet-4-20250514", [usage])})
    payload = {"call_type": "acompletion", "status": "success", "model": "claude-sonnet-4",
               "startTime": "2026-09-21 12:00:01", "prompt_tokens": 10_000,
               "metadata": {"requester_metadata": {"session_id": "s", "event_id": "e1"},
                            "usage_object": {"cache_creation_input_tokens": 1_000}}}
    logged = tmp_path / "two.ndjson"
    logged.write_text(json.dumps({**payload, "id": "p1"}) + "\n"
                      + json.dumps({**payload, "id": "p2"}) + "\n")  # fmt: skip
    api.ingest_opensearch_files(db, [logged])
    calls = api.cost(db, by="call")
    assert calls.height == 1 and calls["cache_write_tokens"].to_list() == [1_000]


def test_a_mapping_matches_nested_tables_and_refuses_lists(tmp_path: Path) -> None:
    good = tmp_path / "m.toml"
    good.write_text('[match.labels]\nenv = "prod"\n[fields]\ntime = "t"\n')
    mapping = load_mapping(good)
    assert mapping.match == {"labels.env": "prod"}
    assert mapping.matches({"labels": {"env": "prod"}, "t": 1})
    bad = tmp_path / "b.toml"
    bad.write_text('[match]\nenv = ["prod"]\n[fields]\ntime = "t"\n')
    with pytest.raises(ForensicsError, match=r"\[match\] 'env' must be text"):
        load_mapping(bad)
