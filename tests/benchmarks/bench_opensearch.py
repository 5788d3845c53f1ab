"""`forensics ingest opensearch` of span documents from the loopback OpenSearch: seconds
and peak RSS for growing numbers of documents, pages of 5,000.

    python tests/benchmarks/bench_opensearch.py                 # 250k, 500k, 1M documents
    python tests/benchmarks/bench_opensearch.py --docs 100000   # one size

The documents are the bundled sample's 65 ADK spans (sample_data/opensearch/, Data
Prepper's default shape) repeated with fresh trace and span ids and later times, so
every document is a distinct record. The loopback server (tests/opensearch_server.py)
runs in a process of its own, so the figures are the loader's alone: each size is one
fresh `forensics ingest opensearch` process into a new store (--db under --workdir).
The issue's target: under 500 MB, flat in the number of documents. Prints the figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPANS = ROOT / "sample_data" / "opensearch" / "otel-v1-apm-span.ndjson"
MAPPING = {"startTime": "date_nanos", "traceId": "keyword", "spanId": "keyword"}


def documents(n: int) -> list[dict]:
    """n span documents: the sample's, repeated with new ids and times a minute apart."""
    from forensics.families.fields import epoch

    base = [json.loads(line) for line in SPANS.read_text().splitlines()]
    out = []
    for i in range(n):
        doc = dict(base[i % len(base)])
        copy = i // len(base)
        doc["traceId"] = f"{copy:016x}{doc['traceId'][16:]}"
        doc["spanId"] = f"{i:016x}"
        start = epoch(doc["startTime"]) or 0.0
        shifted = start + copy * 60
        whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(shifted)))
        doc["startTime"] = f"{whole}.{round((shifted % 1) * 1e9):09d}Z"
        out.append(doc)
    return out


def serve(sizes: list[int], ready: multiprocessing.Queue, stop: multiprocessing.Event) -> None:  # type: ignore[type-arg]
    from tests.opensearch_server import LoopbackOpenSearch

    largest = documents(max(sizes))
    indices = {f"otel-v1-apm-span-{n:07d}": largest[:n] for n in sizes}
    with LoopbackOpenSearch(indices, mappings={k: MAPPING for k in indices}) as server:
        ready.put(server.url)
        stop.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, action="append", help="default: 250k, 500k, 1M")
    ap.add_argument("--page-size", type=int, default=5000)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    sizes = sorted(args.docs or [250_000, 500_000, 1_000_000])
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-opensearch-"))
    ready: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    stop = multiprocessing.Event()
    started = time.perf_counter()
    server = multiprocessing.Process(target=serve, args=(sizes, ready, stop), daemon=True)
    server.start()
    url = ready.get(timeout=3600)
    print(f"loopback server with {sizes} documents up in "
          f"{time.perf_counter() - started:.0f} s at {url}", flush=True)
    summary = []
    try:
        for n in sizes:
            db = workdir / f"spans-{n}.duckdb"
            db.unlink(missing_ok=True)
            index = f"otel-v1-apm-span-{n:07d}"
            cmd = [*forensics_cmd(), "ingest", "opensearch", url, "--index", index,
                   "--page-size", str(args.page_size), "--db", str(db), "-f", "json"]
            rc, seconds, rss, out, err = run_child(cmd, capture=True)
            if rc != 0:
                print(f"  {n:>9,} documents: FAILED ({rc}) {tail(err, 3)}")
                continue
            loaded = json.loads(out)[0]["rows_loaded"]
            line = (f"{n:>9,} documents: {seconds:7.1f} s, {rss / 1024:6.0f} MB peak RSS, "
                    f"{loaded:,} records loaded, {n / seconds:,.0f} documents/s, "
                    f"store {db.stat().st_size / 1e6:,.0f} MB")
            print(f"  {line}", flush=True)
            summary.append(line)
    finally:
        stop.set()
        server.join(timeout=30)
    print("\nsummary:")
    print("\n".join(f"  {line}" for line in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
