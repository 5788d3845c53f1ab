"""Time the reconstruction analyses (calls, windows, growth, turns) on a large store.

Run by hand, never by CI:

    .venv/bin/python tests/benchmarks/bench_analyses.py --db STORE.duckdb

STORE is a forensics store, e.g. from `forensics ingest adk-postgres` of the table
that tests/benchmarks/generate_pg_events.py writes (200,000 events). The script copies
it into stores holding the first 25%, 50% and 100% of its sessions (by first event),
and times, in a fresh process for each, one pass of calls + growth + turns over every
session (every agent call's window is rebuilt), with that process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _subset(source: Path, target: Path, fraction: float) -> int:
    import duckdb

    shutil.copy(source, target)
    con = duckdb.connect(str(target))
    con.execute("""
        CREATE TEMP TABLE keep AS
        SELECT app_name, user_id, session_id FROM (
            SELECT *, row_number() OVER (ORDER BY first, session_id) AS n,
                   count(*) OVER () AS total
            FROM (SELECT app_name, user_id, session_id, min(epoch) AS first
                  FROM events GROUP BY ALL))
        WHERE n <= ceil(total * ?)""", [fraction]).fetchall()
    for delete in (
        "DELETE FROM parts WHERE (app_name, user_id, session_id) NOT IN (SELECT * FROM keep)",
        "DELETE FROM events WHERE (app_name, user_id, session_id) NOT IN (SELECT * FROM keep)",
        "DELETE FROM sessions WHERE (app_name, user_id, session_id) NOT IN (SELECT * FROM keep)",
    ):
        con.execute(delete).fetchall()
    events = con.execute("SELECT count(*) FROM events").fetchall()[0][0]
    con.execute("CHECKPOINT").fetchall()
    con.close()
    return events


def _measure(db: Path) -> dict:
    """In this process: one full pass; prints JSON."""
    sys.path.insert(0, str(ROOT))
    from forensics.analysis import calls_frame, growth_frame, reconstruct, turns_frame
    from forensics.store import Store

    started = time.perf_counter()
    with Store.open(db, read_only=True) as con:
        rec = reconstruct(con)
    loaded = time.perf_counter()
    calls = calls_frame(rec)
    growth = growth_frame(rec)
    turns = turns_frame(rec)
    done = time.perf_counter()
    return {"seconds": done - started, "reconstruct_s": loaded - started,
            "frames_s": done - loaded, "calls": calls.height, "tool_calls": growth.height,
            "turns": turns.height,
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
