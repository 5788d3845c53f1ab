"""Time the query frames (calls, growth, turns) over a large store's stored facts.

Run by hand, never by CI:

    .venv/bin/python tests/benchmarks/bench_analyses.py --db STORE.duckdb

STORE is a forensics store, e.g. from `forensics ingest adk-postgres` of the table
that tests/benchmarks/generate_pg_events.py writes (200,000 events). The script copies
it into stores holding the first 25%, 50% and 100% of its sessions (by first event),
and times, in a fresh process for each, one pass of calls + growth + turns over every
session (SQL over the facts; the ratio fit is `reconstruct_s`), with that process's
peak RSS. The subsets keep their sessions' facts, so nothing is rebuilt.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import _subset  # noqa: E402  (copies keep their sessions' facts)


def _measure(db: Path) -> dict:
    """In this process: one full pass over the stored facts; prints JSON."""
    sys.path.insert(0, str(ROOT))
    from forensics import api

    started = time.perf_counter()
    with api.open_store(db) as store:
        scope = api.Scope(store)
        ratios = scope.ratios()
        loaded = time.perf_counter()
        calls, growth, turns = scope.calls(), scope.growth(), scope.turns()
    done = time.perf_counter()
    return {"seconds": done - started, "reconstruct_s": loaded - started,
            "frames_s": done - loaded, "calls": calls.height, "tool_calls": growth.height,
            "turns": turns.height, "models": len(ratios),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(args.measure)))
        return
    if not args.db:
        parser.error("--db is required")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fraction in (0.25, 0.5, 1.0):
            target = Path(tmp) / f"s{fraction}.duckdb"
            events = _subset(args.db, target, fraction)
            out = subprocess.run([sys.executable, __file__, "--measure", str(target)],
                                 check=True, capture_output=True, text=True)
            rows.append({"events": events, **json.loads(out.stdout)})
    print(f"{'events':>8} {'calls':>8} {'tool calls':>10} {'turns':>7} {'total s':>8} "
          f"{'load+windows s':>15} {'frames s':>9} {'s per 100k ev':>14} {'peak RSS MB':>12}")
    for r in rows:
        print(f"{r['events']:>8,} {r['calls']:>8,} {r['tool_calls']:>10,} {r['turns']:>7,} "
              f"{r['seconds']:>8.1f} {r['reconstruct_s']:>15.1f} {r['frames_s']:>9.1f} "
              f"{r['seconds'] / r['events'] * 100_000:>14.1f} {r['peak_rss_mb']:>12,.0f}")


if __name__ == "__main__":
    main()
