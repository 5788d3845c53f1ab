"""Time the query frames (calls, growth, turns) over a large store's stored facts.

Run by hand, never by CI:

    .venv/bin/python tests/benchmarks/bench_analyses.py --db STORE.duckdb

STORE is a forensics store, e.g. from `forensics ingest adk-postgres` of the table
that tests/benchmarks/generate_pg_events.py writes (200,000 events). The script copies
it into stores holding the first 25%, 50% and 100% of its sessions (by first event),
and times, in a fresh process for each, one pass of calls + growth + turns over every
session (SQL over the facts; the ratio fit is `reconstruct_s`), with that process's
peak RSS. The subsets keep their sessions' facts, so nothing is rebuilt.

    .venv/bin/python tests/benchmarks/bench_analyses.py --huge-session 4000 [--shape tools]

One session of N, 4N and 16N events (written as ADK JSON, loaded with `forensics ingest
adk-json`), its facts rebuilt alone (`engines.local.refresh(..., every=True)`) in a
fresh process: seconds and peak RSS per size, and the seconds per 1,000 events, which
stay flat when the rebuild is linear in the session's length. Shapes: `plain`
(alternating user messages and model answers of 200 characters), `tools` (each turn a
prompt, a tool call, its 500-character result and an answer; a compaction every 5
turns covering the last 30 events, its range overlapping the one before), `covering`
(the turns of `tools`, and after every 49 turns four compactions each covering the
session from its first event: every compaction's range grows with the session).
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

from bench_ingest import forensics_cmd  # noqa: E402
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


def huge_session(n: int, shape: str) -> list[dict]:
    """One ADK session of `n` events (model_dump, snake_case), as described above."""
    events: list[dict] = []
    clock = 1_767_225_600.0  # 2026-01-01
    text = "x" * 200
    turn = 0

    def add(author: str, invocation: str, part: dict, **more) -> None:
        nonlocal clock
        clock += 1.0
        role = "user" if author == "user" or "function_response" in part else "model"
        events.append({"id": f"e{len(events):07d}", "invocation_id": invocation,
                       "author": author, "timestamp": clock,
                       "content": {"role": role, "parts": [part]}, **more})

    usage = {"usage_metadata": {"prompt_token_count": 100, "candidates_token_count": 50,
                                "total_token_count": 150}}
    while len(events) < n:
        invocation = f"inv{turn}"
        turn += 1
        add("user", invocation, {"text": text})
        if shape in ("tools", "covering"):
            call = f"call{turn}"
            add("root", invocation, {"function_call": {"id": call, "name": "lookup",
                                                       "args": {"q": "a"}}}, **usage)
            add("root", invocation, {"function_response": {"id": call, "name": "lookup",
                                                           "response": {"r": "y" * 500}}})
        add("root", invocation, {"text": text}, **usage)
        if shape == "tools" and turn % 5 == 0 and len(events) > 30:
            start, end = events[-30]["timestamp"], events[-1]["timestamp"]
            clock += 1.0
            events.append({
                "id": f"e{len(events):07d}", "invocation_id": f"cmp{turn}", "author": "user",
                "timestamp": clock,
                "actions": {"compaction": {
                    "start_timestamp": start, "end_timestamp": end,
                    "compacted_content": {"role": "model", "parts": [{"text": "s" * 300}]}}},
            })  # fmt: skip
        if shape == "covering" and turn % 49 == 0:
            start, end = events[0]["timestamp"], events[-1]["timestamp"]
            for k in range(4):
                clock += 1.0
                events.append({
                    "id": f"e{len(events):07d}", "invocation_id": f"cmp{turn}.{k}",
                    "author": "user", "timestamp": clock,
                    "actions": {"compaction": {
                        "start_timestamp": start, "end_timestamp": end,
                        "compacted_content": {"role": "model", "parts": [{"text": "s" * 300}]}}},
                })  # fmt: skip
    return events[:n]


def _rebuild(db: Path) -> dict:
    """In this process: the facts of every session of `db` rebuilt; prints JSON."""
    sys.path.insert(0, str(ROOT))
    from forensics.engines.local import refresh
    from forensics.store import Store

    with Store.open(db) as store:
        started = time.perf_counter()
        done = refresh(store, every=True)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "events": done.events, "calls": done.calls,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def bench_huge_session(n: int, shape: str) -> None:
    print(f"One session rebuilt alone ({shape}), each size in a fresh process:")
    print(f"{'events':>8} {'calls':>8} {'rebuild s':>10} {'s per 1k ev':>12} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (n, 4 * n, 16 * n):
            source = Path(tmp) / f"huge{size}.json"
            source.write_text(json.dumps(huge_session(size, shape)))
            db = Path(tmp) / f"huge{size}.duckdb"
            subprocess.run([*forensics_cmd(), "ingest", "adk-json", str(source), "--db", str(db)],
                           check=True, capture_output=True)
            out = subprocess.run([sys.executable, __file__, "--rebuild", str(db)], check=True,
                                 capture_output=True, text=True)
            r = json.loads(out.stdout)
            print(f"{r['events']:>8,} {r['calls']:>8,} {r['seconds']:>10.2f} "
                  f"{r['seconds'] / r['events'] * 1000:>12.3f} {r['peak_rss_mb']:>12,.0f}",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path)
    parser.add_argument("--huge-session", type=int, metavar="N",
                        help="rebuild one session of N, 4N and 16N events")
    parser.add_argument("--shape", choices=("plain", "tools", "covering"), default="plain")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rebuild", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(_measure(args.measure)))
        return
    if args.rebuild:
        print(json.dumps(_rebuild(args.rebuild)))
        return
    if args.huge_session:
        bench_huge_session(args.huge_session, args.shape)
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
