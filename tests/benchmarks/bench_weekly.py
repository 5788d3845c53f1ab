"""The weekly review on stores of growing size: seconds and peak RSS of
`forensics report weekly`, each in a fresh process.

    python tests/benchmarks/bench_weekly.py --db /var/tmp/scale/subset-0.2.duckdb \\
        --db /var/tmp/scale/bench1m.duckdb

Each store is made by bench_scale.py; the review covers the week of its newest call
(the default) and is priced by genai-prices (the benchmark's models are list models).
The issue's target at a million events: under 5 s and 1 GB. Prints the figures;
asserts nothing. A store of an older schema is upgraded by the first command: run the
benchmark twice and read the second run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402
from bench_scale import _events  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, action="append", required=True, help="smallest first")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-weekly-")) / "review.html"
    summary = []
    for db in args.db:
        events = _events(db)
        cmd = [*forensics_cmd(), "report", "weekly", "--db", str(db), "--out", str(out)]
        rc, seconds, rss, _, err = run_child(cmd, capture=True)
        if rc != 0:
            print(f"{db} ({events:,} events): FAILED ({rc}) {tail(err, 3)}")
            continue
        line = (f"{events:,} events: report weekly {seconds:.2f} s, {rss / 1024:.0f} MB peak "
                f"RSS, page {out.stat().st_size / 1e3:,.0f} kB")
        print(line, flush=True)
        summary.append(line)
    print("\nsummary:")
    print("\n".join(f"  {line}" for line in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
