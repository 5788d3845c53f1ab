"""Every question command on one store, each a fresh process, against issue 27's targets.

    python tests/benchmarks/bench_commands.py --db /path/to/1m.duckdb [--runs 3]
    python tests/benchmarks/bench_commands.py --db ... --installed   # with bytecode

The store is one `make bench --million` (bench_floors.py) or bench_scale.py wrote; the
one-session commands take the session with the most events and its last model call.
Each command runs `--runs` times in a fresh process (the store's pages warm after the
first run of the first command); the median seconds and the largest peak RSS of the
command's own process are printed beside the target (1.0 s and 400 MB; `report weekly`
2.0 s; `report incident` 1.5 s) with what it misses.

This workplace sets PYTHONDONTWRITEBYTECODE, so each command also compiles the package
(about 0.15 s that an installed copy does not spend). `--installed` runs the commands
as an installed copy would: bytecode written once under a folder of its own
(PYTHONPYCACHEPREFIX) before the runs. Never run by CI; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402

SECONDS, MB = 1.0, 400


def _longest(db: Path) -> tuple[str, str]:
    """The session with the most events, and its last model call."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT session_id, count(*) AS n FROM events GROUP BY ALL "
            "ORDER BY n DESC, session_id LIMIT 1"
        ).fetchall()
        assert rows, f"{db} holds no events"
        session = str(rows[0][0])
        calls = con.execute(
            "SELECT call_id FROM fact_calls WHERE session_id = ? ORDER BY call_index DESC "
            "LIMIT 1",
            [session],
        ).fetchall()
        assert calls, f"{session} has no model call"
    return session, str(calls[0][0])


def commands(session: str, call: str, out: Path) -> list[tuple[str, list[str], float]]:
    """(label, arguments, target seconds) of each command issue 27 names, and issue 29's
    `cache`."""
    return [
        ("sessions", ["sessions"], SECONDS),
        ("turns SESSION", ["turns", session], SECONDS),
        ("calls SESSION", ["calls", session], SECONDS),
        ("window SESSION CALL", ["window", session, call], SECONDS),
        ("cost --by day", ["cost", "--by", "day"], SECONDS),
        ("cost --by agent", ["cost", "--by", "agent"], SECONDS),
        ("cost --by model", ["cost", "--by", "model"], SECONDS),
        ("cost --by session", ["cost", "--by", "session"], SECONDS),
        ("cost --share", ["cost", "--share"], SECONDS),
        ("cost --by tool", ["cost", "--by", "tool"], SECONDS),
        # issue 29: `cache` within the same targets
        ("cache", ["cache"], SECONDS),
        ("cache --by day", ["cache", "--by", "day"], SECONDS),
        ("cache --by agent", ["cache", "--by", "agent"], SECONDS),
        ("cache SESSION", ["cache", session], SECONDS),
        ("growth --top 20", ["growth", "--top", "20"], SECONDS),
        ("failures", ["failures"], SECONDS),
        ("guards", ["guards"], SECONDS),
        ("tasks", ["tasks"], SECONDS),
        ("compare", ["compare", "--baseline", "baseline", "--arm", "candidate"], SECONDS),
        ("breakeven", ["breakeven"], SECONDS),
        ("whatif --token-cap 16000 SESSION",
         ["whatif", "--token-cap", "16000", "--session", session], SECONDS),  # fmt: skip
        ("report weekly", ["report", "weekly", "--out", str(out / "weekly.html")], 2.0),
        ("report incident SESSION",
         ["report", "incident", session, "--out", str(out / "incident.html")], 1.5),  # fmt: skip
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--installed", action="store_true", help="bytecode written once first")
    ap.add_argument("--only", action="append", help="labels starting with this (repeatable)")
    ap.add_argument("--tree", type=Path, help="run the package of this checkout (a before)")
    args = ap.parse_args()
    session, call = _longest(args.db)
    out = Path(tempfile.mkdtemp(prefix="forensics-bench-commands-"))
    if args.installed:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(out / "pycache")
    todo = commands(session, call, out)
    if args.only:
        todo = [c for c in todo if any(c[0].startswith(o) for o in args.only)]
    base = [*forensics_cmd()]
    if args.tree:  # another checkout's package, with this environment's libraries
        base = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                "sys.argv[0] = 'forensics'; from forensics.cli import main; main()",
                str(args.tree.resolve())]  # fmt: skip
    run_child([*base, "sessions", "--db", str(args.db), "--limit", "1"])  # warms pages
    print(f"{os.cpu_count()} cores; {args.db}; session {session}; median of {args.runs}"
          f"{f'; the package of {args.tree}' if args.tree else ''}"
          f"{'; bytecode written once' if args.installed else ''}")  # fmt: skip
    print(f"{'command':<34} {'seconds':>8} {'RSS MB':>7}  target")
    missed = 0
    for label, argv, target in todo:
        times, peaks, note, said = [], [], "", ""
        for _ in range(args.runs):
            rc, seconds, rss, _, err = run_child([*base, *argv, "--db", str(args.db)],
                                                 capture=True)  # fmt: skip
            if rc == 1 and err.startswith("Error:"):  # a named answer (no outcomes): timed
                said = f" (exit 1: {err.splitlines()[0][7:67]})"
            elif rc != 0:
                note = f"failed ({rc}): {tail(err, 2)}"
                break
            times.append(seconds)
            peaks.append(rss / 1024)
        if note:
            print(f"{label:<34} {'-':>8} {'-':>7}  {note}")
            missed += 1
            continue
        seconds, mb = statistics.median(times), max(peaks)
        misses = [w for w, bad in ((f"{target:.1f} s", seconds > target),
                                   (f"{MB} MB", mb > MB)) if bad]  # fmt: skip
        missed += bool(misses)
        verdict = "met" if not misses else "misses " + " and ".join(misses)
        print(f"{label:<34} {seconds:>8.2f} {mb:>7,.0f}  {verdict}{said}")
    print(f"{len(todo) - missed} of {len(todo)} within their targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
