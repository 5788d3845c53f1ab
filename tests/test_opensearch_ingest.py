"""`forensics ingest opensearch` end to end against the loopback OpenSearch
(tests/opensearch_server.py; no OpenSearch server runs in these tests): the sample's
span and log documents read through PIT pages into the store, the failures they show,
and each bad case the user meets (unreachable, 401, a missing index, a cluster without
PIT, a document that maps to nothing, Ctrl-C mid-scan with the PIT released)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.errors import FactsInterrupted
from forensics.store import Store
from tests.opensearch_server import LoopbackOpenSearch

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
SPANS = "otel-v1-apm-span-000001"
LOGS = "logs-otel-v1-000001"
# Data Prepper's index templates type these fields so (otel-v1-apm-span-index-template)
MAPPINGS = {
    SPANS: {"startTime": "date_nanos", "traceId": "keyword", "spanId": "keyword"},
    LOGS: {"time": "date_nanos"},
}


def _docs(name: str) -> list[dict]:
    path = SAMPLE / "opensearch" / f"{name}.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _indices() -> dict[str, list[dict]]:
    return {SPANS: _docs("otel-v1-apm-span"), LOGS: _docs("logs-otel-v1"),
            "litellm-2026.10.22": _docs("litellm")}  # fmt: skip


def _cli(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def adk_store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    return db


def test_spans_and_logs_from_a_cluster_give_the_incidents_failure(adk_store: Path) -> None:
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS) as server:
        spans = _cli("ingest", "opensearch", server.url, "--index", "otel-v1-apm-span-*",
                     "--since", "2026-10-22", "--until", "2026-10-23", "--page-size", "10",
                     "--db", str(adk_store))  # fmt: skip
        assert spans.exit_code == 0, spans.output
        assert "read 65 documents: loaded 61 new, 0 already stored, 4 not about agents" in (
            spans.output
        )
        logs = _cli("ingest", "opensearch", server.url, "--index", LOGS, "--query",
                    "severityText:ERROR", "--db", str(adk_store), "-f", "json")  # fmt: skip
        assert logs.exit_code == 0, logs.output
        assert json.loads(logs.stdout)[0]["rows_loaded"] == 1  # the query was pushed down
        assert server.open_pits() == []
        searched = [b for _, p, b in server.requests if p.split("?")[0].endswith("_search") and b]
        assert any("query_string" in json.dumps(b) for b in searched)
        assert any('"range"' in json.dumps(b) and "startTime" in json.dumps(b) for b in searched)
    failures = _cli("failures", "--db", str(adk_store), "-f", "json")
    row = json.loads(failures.stdout)[0]
    assert (row["evidence"], row["logged_tokens"], row["verdict"]) == (
        "otel-log, adk", 216230, "window")
    # the spans' model calls: five answered before the failure in turn 1, one in turn 2
    assert row["responses_before"] == 6
    with Store.open(adk_store, read_only=True) as store:
        (location, filters), = store.run(
            "SELECT location, filters::VARCHAR FROM ingests WHERE kind = 'opensearch' "
            "ORDER BY ingest_id LIMIT 1")  # fmt: skip
    assert location == f"{server.url}/otel-v1-apm-span-*"
    assert json.loads(filters)["time_field"] == "startTime"


def test_explain_mapping_reads_a_sample_and_loads_nothing(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS) as server:
        out = _cli("ingest", "opensearch", server.url, "--index", "litellm-*",
                   "--time-field", "startTime", "--explain-mapping", "--sample", "3",
                   "--db", str(db), "-f", "json")  # fmt: skip
        assert out.exit_code == 0, out.output
        assert server.open_pits() == []
    rows = json.loads(out.stdout)
    assert [r["shape"] for r in rows] == ["litellm"] * 3
    assert rows[0]["session_id"] == "incident" and rows[0]["kind"] == "call"
    assert not db.exists()


def test_a_cluster_without_pit_is_read_by_scroll(tmp_path: Path) -> None:
    db = tmp_path / "n.duckdb"
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS, pit=False) as server:
        out = _cli("ingest", "opensearch", server.url, "--index", SPANS, "--page-size", "20",
                   "--db", str(db))  # fmt: skip
        assert out.exit_code == 0, out.output
        assert server.open_scrolls() == []
    assert f"{server.url} has no point-in-time API" in out.stderr
    assert "paging with scroll instead" in out.stderr and "loaded 61 new" in out.stdout


def test_unauthorised_names_the_cluster_never_the_password(tmp_path: Path) -> None:
    with LoopbackOpenSearch(_indices(), users={"alice": "right"}) as server:
        url = server.url.replace("http://", "http://alice:wr0ng-s3cret@")
        out = _cli("ingest", "opensearch", url, "--index", SPANS, "--db", str(tmp_path / "a.db"))
    assert out.exit_code == 1
    assert out.stderr.startswith(f"Error: {server.url}: authentication failed\n")
    assert "wr0ng-s3cret" not in out.output + out.stderr


def test_a_missing_index_and_an_unreachable_cluster(tmp_path: Path) -> None:
    db = str(tmp_path / "m.duckdb")
    with LoopbackOpenSearch(_indices()) as server:
        missing = _cli("ingest", "opensearch", server.url, "--index", "otel-v1-apm-span-999",
                       "--db", db)  # fmt: skip
    assert missing.exit_code == 1 and "otel-v1-apm-span-999" in missing.stderr
    assert server.url in missing.stderr
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = _cli("ingest", "opensearch", f"http://127.0.0.1:{port}", "--index", SPANS,
                "--timeout", "2", "--db", db)  # fmt: skip
    assert down.exit_code == 1 and f"http://127.0.0.1:{port}" in down.stderr
    assert "Traceback" not in down.output + down.stderr


def test_a_page_over_max_result_window_says_so(tmp_path: Path) -> None:
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS) as server:
        out = _cli("ingest", "opensearch", server.url, "--index", SPANS, "--page-size", "20000",
                   "--db", str(tmp_path / "w.duckdb"))  # fmt: skip
        assert server.open_pits() == []
    assert out.exit_code == 1
    assert "page size 20000 is over the max_result_window (10000)" in out.stderr
    assert "Hint: use a smaller --page-size" in out.stderr


def test_a_document_that_maps_to_nothing_is_one_skip(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    docs = _docs("litellm")[:2] + [{"_id": "odd-1", "_source": {"@timestamp": "2026-10-22",
                                                               "message": "hello"}}]
    with LoopbackOpenSearch({"mixed": docs}) as server:
        out = _cli("ingest", "opensearch", server.url, "--index", "mixed", "--time-field",
                   "@timestamp", "--db", str(db))  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "loaded 2 new" in out.stdout
    assert "mixed/odd-1: maps to nothing" in out.stdout


def test_ctrl_c_mid_scan_releases_the_pit_and_keeps_what_it_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("forensics.ingest.logged.BATCH_RECORDS", 10)  # a commit per page
    db = tmp_path / "c.duckdb"
    pages: list[int] = []

    def interrupt(done: int) -> None:
        pages.append(done)
        if len(pages) == 2:
            raise KeyboardInterrupt

    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS) as server:
        with (api.connect_opensearch(server.url) as cluster,
              pytest.raises(FactsInterrupted) as stopped):  # fmt: skip
            api.ingest_opensearch(db, cluster, SPANS, page_size=10, pages=interrupt)
        assert server.open_pits() == []
    assert pages == [10, 20]
    with Store.open(db, read_only=True) as store:
        kept = store.run("SELECT count(*) FROM logged")[0][0]
        # what the command then says (it said "nothing from this run was committed")
        assert stopped.value.message == (f"the {kept:,} records loaded before it are kept; "
                                         "the same ingest again loads the rest.")  # fmt: skip
        assert store.run("SELECT status, error, rows_loaded FROM ingests")[0] == (
            "interrupted",
            f"interrupted (Ctrl-C); the {kept:,} records loaded before it are kept; the same "
            "run again loads the rest", kept)  # fmt: skip
    assert 0 < kept < 61
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS) as server:
        with api.connect_opensearch(server.url) as cluster:
            again = api.ingest_opensearch(db, cluster, SPANS, page_size=10)
    assert again.rows_loaded == 61 - kept and again.rows_already_stored == kept


def test_a_password_in_the_url_is_in_no_output_and_not_in_the_store(tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    with LoopbackOpenSearch(_indices(), mappings=MAPPINGS, users={"alice": "s3cret-pw"}) as s:
        url = s.url.replace("http://", "http://alice:s3cret-pw@")
        out = _cli("ingest", "opensearch", url, "--index", SPANS, "--db", str(db))
        failed = _cli("ingest", "opensearch", url, "--index", "missing", "--db", str(db))
    assert out.exit_code == 0 and failed.exit_code == 1, out.output + failed.output
    shown = out.output + out.stderr + failed.output + failed.stderr
    assert "s3cret-pw" not in shown and "alice:" not in shown
    assert b"s3cret-pw" not in db.read_bytes()
    ledger = _cli("ingests", "--db", str(db), "-f", "json")
    assert s.url in ledger.stdout and "s3cret-pw" not in ledger.stdout
