"""The live OpenSearch source against real nodes of both lines (2.19 on Java 17, 3.x on
Java 21+; tests/opensearch_node.py), loaded with what production has: Data Prepper's span
index template, span documents of both shapes, OTel log documents, LiteLLM payloads and
the bundled incident's own, in indices named as Data Prepper names them. The loader reads
them through the engine's own mapping, sorting and paging.

The loopback imitation (test_opensearch_live.py) keeps only what a real node cannot
produce here: authentication (no security plugin), a cluster without point in time,
slow pages, a failed shard, and the request bodies the loader sends.
"""

from __future__ import annotations

import json
import random
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import duckdb
import pytest

from forensics import api
from forensics.errors import MissingRelationError, SourceError
from forensics.sources.opensearch.live import Cluster, Hit, connect
from tests.opensearch_node import OpenSearchHTTPError, OpenSearchNode
from tests.opensearch_server import epoch_nanos

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "opensearch"
SHARED = ROOT.parent / "shared" / "real_data"
DATA_PREPPER = SHARED / "opensearch" / "data-prepper"
DASHBOARDS = SHARED / "opensearch" / "dashboards-observability"
LITELLM = SHARED / "litellm" / "standard_logging_payload.json"
LINES = ["opensearch_node", "opensearch3_node"]
SORT = ["startTime", "traceId", "spanId"]
SPAN_TEMPLATE = DATA_PREPPER / "otel-v1-apm-span-index-template.json"
# the fields the scan sorts on, as Data Prepper's template maps them (when shared/ is absent)
FALLBACK_TEMPLATE = {"template": {"mappings": {"date_detection": False, "properties": {
    "traceId": {"type": "keyword", "ignore_above": 256},
    "spanId": {"type": "keyword", "ignore_above": 256},
    "startTime": {"type": "date_nanos"}, "endTime": {"type": "date_nanos"}}}}}  # fmt: skip
# Data Prepper's `otel` output shape (attributes as objects) in an index of its own: the
# default template maps every `resource.attributes.*` to a keyword, and the real engine
# refuses an object there (measured: "KeywordFieldMapper cannot be cast to ObjectMapper")
OTEL_INDEX = "otel-v1-apm-span-otel-000001"
TIES = "ties"  # an index of spans whose sort fields tie on startTime, as the loopback's


def tied_spans(n: int = 53, seed: int = 7) -> list[dict[str, Any]]:
    """Spans whose startTime repeats (three values), unique with traceId and spanId."""
    rng = random.Random(seed)
    times = ["2025-03-01T10:00:00.000000001Z", "2025-03-01T10:00:00.000000002Z",
             "2025-03-01T10:00:01Z"]  # fmt: skip
    docs = [{"startTime": rng.choice(times), "traceId": f"t{rng.randrange(4)}",
             "spanId": f"s{i:03d}", "serviceName": rng.choice(["cart", "checkout"]),
             "name": f"op{i}"} for i in range(n)]  # fmt: skip
    rng.shuffle(docs)
    return docs


def _ndjson(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]  # fmt: skip


def production_documents() -> dict[str, list[dict[str, Any]]]:
    """Per index, as Data Prepper (and a LiteLLM logger) would name it, the documents it
    gets: the bundled incident's, and where shared/real_data is here, the real ones."""
    spans = _ndjson(SAMPLE / "otel-v1-apm-span.ndjson")
    logs = _ndjson(SAMPLE / "logs-otel-v1.ndjson")
    litellm = _ndjson(SAMPLE / "litellm.ndjson")
    otel: list[dict[str, Any]] = []  # Data Prepper's `otel` output shape
    if DATA_PREPPER.is_dir():
        spans += [json.loads(p.read_text()) for p in sorted(DATA_PREPPER.glob("raw-span-*.json"))]
        genai = sorted((DATA_PREPPER / "genai").glob("*.json"))
        otel += [json.loads(p.read_text()) for p in genai]
    if DASHBOARDS.is_dir():
        otel += _ndjson(DASHBOARDS / "otel_v1_apm_span_explore.data.ndjson")
        logs += _ndjson(DASHBOARDS / "logs_otel_v1_explore.data.ndjson")
    if LITELLM.is_file():
        litellm.append(json.loads(LITELLM.read_text()))
    found = {"otel-v1-apm-span-000001": spans, "logs-otel-v1-000001": logs,
             "litellm-logs-000001": litellm}  # fmt: skip
    if otel:  # the default template's dynamic keywords refuse the otel shape's objects
        found[OTEL_INDEX] = otel
    return found


def load(node: OpenSearchNode) -> dict[str, list[dict[str, Any]]]:
    """The node as production has it (each index made anew: the session's node is shared)."""
    for index in ("otel-v1-apm-span-*", "logs-otel-v1-*", "litellm-logs-*", TIES, "window"):
        node.request("DELETE", f"/{index}?ignore_unavailable=true&allow_no_indices=true")
    template = json.loads(SPAN_TEMPLATE.read_text()) if SPAN_TEMPLATE.is_file() \
        else FALLBACK_TEMPLATE
    node.put_index_template("otel-v1-apm-span", template, ["otel-v1-apm-span-*"])
    if DASHBOARDS.is_dir():  # the otel shape's index, as the dashboards project maps it
        mapping = json.loads((DASHBOARDS / "otel_v1_apm_span_explore.mapping.json").read_text())
        node.put_index_template("otel-v1-apm-span-otel", mapping, [OTEL_INDEX], priority=10)
    docs = production_documents()
    # LiteLLM's times ("2025-01-24 09:20:46.847371") are no date to dynamic mapping: its
    # index needs one (the real engine maps them as text, and refuses to sort on them)
    node.create_index("litellm-logs-000001", mappings={"properties": {
        "startTime": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss.SSSSSS"},
        "endTime": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss.SSSSSS"}}})  # fmt: skip
    if DASHBOARDS.is_dir():  # the log index as the dashboards project maps it
        mapping = json.loads((DASHBOARDS / "logs_otel_v1_explore.mapping.json").read_text())
        node.create_index("logs-otel-v1-000001", mappings=mapping["mappings"])
    refused: list[dict[str, Any]] = []
    for index, found in docs.items():
        kept = []
        for doc in found:  # one by one: a document the engine refuses is set aside
            try:
                node.request("POST", f"/{index}/_doc", doc)
                kept.append(doc)
            except OpenSearchHTTPError as e:
                refused.append({"index": index, "status": e.status, "error": e.body,
                                "doc": doc})
        docs[index] = kept
    node.request("POST", "/_refresh")
    node.refused = refused  # type: ignore[attr-defined]
    tie_mapping = {"properties": {"startTime": {"type": "date_nanos"},
                                  "traceId": {"type": "keyword"}, "spanId": {"type": "keyword"},
                                  "serviceName": {"type": "keyword"}}}  # fmt: skip
    node.create_index(TIES, mappings=tie_mapping)
    node.bulk(TIES, tied_spans())
    node.create_index("window", mappings=tie_mapping, settings={"index.max_result_window": 20})
    node.bulk("window", tied_spans())
    return docs


@pytest.fixture(scope="module", params=LINES)
def node(request: pytest.FixtureRequest) -> Iterator[OpenSearchNode]:
    found: OpenSearchNode = request.getfixturevalue(request.param)
    found.documents = load(found)  # type: ignore[attr-defined]
    yield found


def scan(cluster: Cluster, index: str = TIES, **options: Any) -> list[Hit]:
    options = {"time_field": "startTime", "since": None, "until": None, "query": None,
               "sort": SORT, **options}  # fmt: skip
    return list(cluster.scan(index, **options))


def no_cursor_left(node: OpenSearchNode) -> bool:
    return node.open_pits() == [] and node.open_scrolls() == 0


# --- scope 2: what production has, read through the engine --------------------------------


def _logged(db: Path) -> set[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = [c for (c,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'logged' "
            "AND column_name NOT IN ('locator', 'ingest_id') ORDER BY ordinal_position"
        ).fetchall()]  # fmt: skip
        return set(con.execute(f"SELECT {', '.join(columns)} FROM logged").fetchall())  # noqa: S608
    finally:
        con.close()


def test_production_indices_read_live_give_the_records_their_files_give(node, tmp_path):
    """Every index pattern read live (PIT + search_after, pages of 7) stores exactly the
    records that the same documents give read from files: the engine's mapping (Data
    Prepper's template makes span attributes keywords), sorting and paging lose,
    repeat and change nothing."""
    documents: dict[str, list[dict[str, Any]]] = node.documents
    files = []
    for index, docs in documents.items():
        path = tmp_path / f"{index}.ndjson"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        files.append(path)
    from_files = tmp_path / "files.duckdb"
    api.ingest_opensearch_files(from_files, files)
    live = tmp_path / "live.duckdb"
    with connect(node.url) as cluster:
        for pattern, time_field in (("otel-v1-apm-span-*", None), ("logs-otel-v1-*", None),
                                    ("litellm-logs-*", "startTime")):
            api.ingest_opensearch(live, cluster, pattern, page_size=7, time_field=time_field)
    assert no_cursor_left(node)
    read, written = _logged(live), _logged(from_files)
    assert read == written
    kinds = {r[3] for r in read}  # family, shape, kind ...
    assert {"call", "tool", "log"} <= kinds
    # the bundled incident's failure, from its log line and LiteLLM payload, read live
    failures = api.context_failures(live)
    assert failures.height >= 1
    incident = failures.filter(failures["session_id"] == "incident").row(0, named=True)
    assert incident["logged_tokens"] == 216_230 and incident["context_limit"] == 200_000


def test_the_span_template_maps_what_the_loader_sorts_on(node):
    mapping = node.request("GET", "/otel-v1-apm-span-000001/_mapping")
    properties = mapping["otel-v1-apm-span-000001"]["mappings"]["properties"]
    assert properties["startTime"]["type"] == "date_nanos"
    assert properties["traceId"]["type"] == "keyword"
    if SPAN_TEMPLATE.is_file():  # a string attribute is a keyword, not text
        attributes = properties["span"]["properties"]["attributes"]["properties"]
        assert {v.get("type") for v in attributes.values()} == {"keyword"}


# --- scope 3: paging, filters, cursors, errors on the real engine ----------------------------


@pytest.mark.parametrize("method", ["pit", "scroll"])
def test_pages_with_ties_on_the_sort_fields_lose_and_repeat_nothing(node, method):
    seen: list[int] = []
    totals: list[int] = []
    with connect(node.url) as cluster:
        hits = scan(cluster, page_size=7, method=method, progress=seen.append,
                    total=totals.append)  # fmt: skip
    ids = [h.source["spanId"] for h in hits]
    assert len(ids) == 53 and set(ids) == {f"s{i:03d}" for i in range(53)}
    # in the engine's order: date_nanos as instants (…00.000000001Z before …01Z), then ids
    keys = [(epoch_nanos(h.source["startTime"]), h.source["traceId"], h.source["spanId"])
            for h in hits]  # fmt: skip
    assert keys == sorted(keys)  # type: ignore[type-var]
    assert seen == [7, 14, 21, 28, 35, 42, 49, 53] and totals == [53]
    assert no_cursor_left(node)


def test_the_time_range_and_the_query_are_pushed_into_the_search(node):
    since = datetime(2025, 3, 1, 10, 0, 0, 1, tzinfo=UTC)  # 1 µs: the first two times out
    until = datetime(2025, 3, 1, 10, 0, 2, tzinfo=UTC)
    with connect(node.url) as cluster:
        hits = scan(cluster, since=since, until=until, query='serviceName:"cart"', page_size=5)
        naive = scan(cluster, until=datetime(2025, 3, 1, 10, 0, 1))  # a naive time is UTC
    expected = {d["spanId"] for d in tied_spans() if d["serviceName"] == "cart"
                and d["startTime"] == "2025-03-01T10:00:01Z"}  # fmt: skip
    assert {h.source["spanId"] for h in hits} == expected and expected
    assert len(naive) == sum(d["startTime"] != "2025-03-01T10:00:01Z" for d in tied_spans())
    assert no_cursor_left(node)


def test_a_missing_index_and_a_pattern_matching_nothing(node):
    with connect(node.url) as cluster:
        with pytest.raises(MissingRelationError) as missing:
            scan(cluster, "no-such-index")
        assert str(missing.value) == f"{node.url}: no index 'no-such-index'"
        with pytest.raises(MissingRelationError, match="no index 'gone'"):
            scan(cluster, f"{TIES},gone", method="scroll")
        assert scan(cluster, "nothing-*") == []
        assert scan(cluster, "nothing-*", method="scroll") == []
        assert len(scan(cluster, f"{TIES[:2]}*,nothing-*", page_size=50)) == 53
    assert no_cursor_left(node)


@pytest.mark.parametrize("method", ["pit", "scroll"])
def test_a_page_over_max_result_window_says_so(node, method):
    with connect(node.url) as cluster:
        with pytest.raises(SourceError) as too_large:
            scan(cluster, "window", page_size=25, method=method)
        assert len(scan(cluster, "window", page_size=20, method=method)) == 53
    assert str(too_large.value) == (
        f"{node.url}: page size 25 is over the max_result_window (20) of index 'window'"
    )
    assert no_cursor_left(node)


@pytest.mark.parametrize("method", ["pit", "scroll"])
def test_cursors_are_released_on_success_early_stop_error_and_ctrl_c(node, method):
    with connect(node.url) as cluster:
        pages = cast(Generator[Hit, None, None], cluster.scan(
            TIES, time_field=None, since=None, until=None, query=None, sort=SORT,
            page_size=5, method=method))  # fmt: skip
        assert len([next(pages) for _ in range(7)]) == 7
        assert node.open_pits() or node.open_scrolls()  # open while the scan is
        pages.close()
        assert no_cursor_left(node)

        def fail(n: int) -> None:
            if n >= 10:
                raise RuntimeError("the consumer's own error")

        with pytest.raises(RuntimeError, match="consumer's own error"):
            scan(cluster, page_size=5, method=method, progress=fail)
        assert no_cursor_left(node)

        def interrupt(n: int) -> None:
            if n >= 10:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            scan(cluster, page_size=5, method=method, progress=interrupt)
        assert no_cursor_left(node)


def test_a_sort_field_no_index_maps_is_named(node):
    with connect(node.url) as cluster, pytest.raises(SourceError) as unmapped:
        scan(cluster, sort=["startTime", "noSuchField"])
    assert str(unmapped.value) == (
        f"{node.url}: index '{TIES}' has no field 'noSuchField' to sort on"
    )
    assert no_cursor_left(node)


def test_shard_doc_is_used_from_3_3_and_only_with_a_pit(node):
    with connect(node.url) as cluster:
        major, minor = (int(p) for p in node.version.split(".")[:2])
        assert cluster.has_shard_doc is ((major, minor) >= (3, 3))
        # the real logs hold one record twice: (time, traceId, spanId) ties
        if not DASHBOARDS.is_dir():
            pytest.skip(f"{DASHBOARDS} is absent")
        logs = scan(cluster, "logs-otel-v1-*", time_field="time",
                    sort=["time", "traceId", "spanId"], page_size=3)  # fmt: skip
        total = len(node.documents["logs-otel-v1-000001"])
        # before 3.3 nothing breaks the tie: where it straddles a page, one copy is skipped
        assert len(logs) in ((total,) if cluster.has_shard_doc else (total, total - 1))
    assert no_cursor_left(node)


def test_what_the_engine_refuses_to_index_is_said(node):
    """Of the real documents the engine refuses two, which production would not hold
    either: a Data Prepper raw span (`mysql.APM`) whose attribute is a keyword under the
    template and an object in the document, and a GenAI fixture (`ChatBedrock.chat`)
    whose `llm.input_messages` is a value in one fixture and an object in another.
    Everything else is indexed and read back (the first test)."""
    refused = node.refused
    print(f"\nOpenSearch {node.version} refused {len(refused)}: "
          + "; ".join(f"{r['index']} {r['doc'].get('name')}: "
                      f"{r['error']['error']['root_cause'][0]['reason'][:120]}" for r in refused))
    assert all(r["status"] == 400 for r in refused)
    assert {r["doc"].get("name") for r in refused} <= {"mysql.APM", "ChatBedrock.chat"}
