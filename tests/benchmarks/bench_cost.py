"""Billed cost on stores of growing size: seconds and peak RSS of each cost command.

    python tests/benchmarks/bench_cost.py --db /var/tmp/scale/subset-0.2.duckdb \\
        --db /var/tmp/scale/subset-0.5.duckdb --db /var/tmp/scale/bench1m.duckdb

Each store (made by bench_scale.py: its 1M store and the subsets holding its first 20%
and 50% of sessions) is read by, each in a fresh process: `cost --by day`, `cost` (by
session, JSON), `cost --share`, `cost --by tool` and `prices` (the store's models).
The issue's target for `cost --by day` at a million events: under 2 s and 500 MB.
Prints the figures; asserts nothing. The stores' facts must be current (a stale store
would rebuild them inside the first command).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402
from bench_scale import _events  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, action="append", required=True, help="smallest first")
    args = ap.parse_args()
    f = forensics_cmd()
    summary = []
    for db in args.db:
        events = _events(db)
        print(f"{db} ({events:,} events):", flush=True)
        runs = []
        for label, extra in (
            ("cost --by day", ["cost", "--by", "day"]),
            ("cost -f json", ["cost", "-f", "json"]),
            ("cost --share", ["cost", "--share"]),
            ("cost --by tool", ["cost", "--by", "tool"]),
            ("prices", ["prices"]),
        ):
            rc, seconds, rss, _, err = run_child([*f, *extra, "--db", str(db)], capture=True)
            if rc != 0:
                print(f"  {label}: FAILED ({rc}) {tail(err, 3)}")
                continue
            print(f"  {label:<20} {seconds:8.2f} s  {rss / 1024:8.0f} MB", flush=True)
            runs.append(f"{label} {seconds:.2f} s/{rss / 1024:.0f} MB")
        summary.append(f"{events:,} events: " + ", ".join(runs))
    print("\nsummary:")
    print("\n".join(f"  {line}" for line in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
