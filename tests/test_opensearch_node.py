"""The live OpenSearch source against a real node (tests/opensearch_node.py), not the
loopback imitation: Data Prepper's own span template, the bundled span sample, and
both paging methods, with every cursor released afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.sources.opensearch.live import connect
from tests.opensearch_node import OpenSearchNode

ROOT = Path(__file__).resolve().parents[1]
SPANS = ROOT / "sample_data" / "opensearch" / "otel-v1-apm-span.ndjson"
TEMPLATE = (
    ROOT.parent / "shared" / "real_data" / "opensearch" / "data-prepper"
    / "otel-v1-apm-span-index-template.json"
)
# The fields the scan sorts on, as Data Prepper's template maps them, for when shared/
# (which holds the template itself) is absent.
FALLBACK_TEMPLATE = {
    "template": {
        "mappings": {
            "date_detection": False,
            "properties": {
                "traceId": {"type": "keyword", "ignore_above": 256},
                "spanId": {"type": "keyword", "ignore_above": 256},
                "startTime": {"type": "date_nanos"},
                "endTime": {"type": "date_nanos"},
            },
        }
    }
}
INDEX = "otel-v1-apm-span-000001"
SORT = ["startTime", "traceId", "spanId"]


@pytest.mark.parametrize("line", ["opensearch_node", "opensearch3_node"])
def test_a_real_node_is_scanned_whole_with_pit_and_scroll_and_keeps_no_cursor(
    line: str, request: pytest.FixtureRequest
) -> None:
    node: OpenSearchNode = request.getfixturevalue(line)
    print(f"\nOpenSearch {node.version} at {node.url}: READY after {node.ready_seconds:.1f} s, "
          f"green after {node.start_seconds:.1f} s")

    # the session's node is shared with test_opensearch_real.py: this index made anew
    node.request("DELETE", f"/{INDEX}?ignore_unavailable=true")
    template = json.loads(TEMPLATE.read_text()) if TEMPLATE.is_file() else FALLBACK_TEMPLATE
    node.put_index_template("otel-v1-apm-span", template, ["otel-v1-apm-span-*"])
    docs = [json.loads(line) for line in SPANS.read_text().splitlines() if line.strip()]
    assert len(docs) == 65
    assert node.bulk(INDEX, docs, id_field="spanId") == 65
    mapping = node.request("GET", f"/{INDEX}/_mapping")[INDEX]["mappings"]["properties"]
    assert mapping["startTime"]["type"] == "date_nanos"
    assert mapping["traceId"]["type"] == "keyword"

    expected = sorted((d["startTime"], d["traceId"], d["spanId"]) for d in docs)
    notices: list[str] = []
    with connect(node.url, notice=notices.append) as cluster:
        assert cluster.version == node.version and cluster.distribution == "opensearch"
        for method in ("pit", "scroll"):
            totals: list[int] = []
            hits = list(cluster.scan(
                INDEX, time_field="startTime", since=None, until=None, query=None,
                sort=SORT, page_size=7, method=method, total=totals.append,
            ))
            keys = [(h.source["startTime"], h.source["traceId"], h.source["spanId"])
                    for h in hits]
            assert keys == expected, method  # all 65, once each, in sort order
            assert {h.index for h in hits} == {INDEX}
            assert totals == [65], method
            assert node.open_pits() == [], method
            assert node.open_scrolls() == 0, method
    assert notices == []
