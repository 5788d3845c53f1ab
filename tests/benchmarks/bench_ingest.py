"""Time `forensics ingest adk-postgres` against a floor and against ADK itself.

    python tests/benchmarks/bench_ingest.py --dsn postgresql://... [--sample 200]
    python tests/benchmarks/bench_ingest.py --start-server [--events 200000 --sessions 5000]

(a) floor: `psql DSN -c "\\copy (select event_data from events) to /dev/null"`,
    i.e. the server reading and sending every event_data once;
(b) `forensics ingest adk-postgres DSN --db <tmp>/bench.duckdb`, a subprocess;
(c) ADK's DatabaseSessionService(postgresql+psycopg://...).get_session() for
    every session, one by one (with --sample N: N random sessions, the time
    scaled up to all sessions).

Each runs in its own process; peak RSS is that process's ru_maxrss (see run_child). Prints the
times, b/a and c/b. Never run by CI, asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.pg import find_psql, sqlalchemy_url, start_pg_server  # noqa: E402


@dataclass
class Figure:
    label: str
    seconds: float | None = None
    peak_rss_kb: int | None = None
    note: str = ""


# A child's ru_maxrss is at least its parent's RSS when it was spawned (Linux
# carries the pre-exec memory's high-water mark over exec), so measuring our
# children directly would report this script's own size. This small launcher
# forks and execs the command and reports the command's ru_maxrss; its own
# footprint (~10 MB) is the floor of every figure.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_child(cmd: list[str], *, capture: bool = False) -> tuple[int, float, int, str, str]:
    """Run `cmd`; returns exit code, wall seconds, its peak RSS (KB), stdout, stderr."""
    with (
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
        tempfile.NamedTemporaryFile("r") as rss_file,
    ):
        started = time.perf_counter()
        rc = subprocess.call(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, rss_file.name, *cmd],
            stdin=subprocess.DEVNULL,
            stdout=out if capture else subprocess.DEVNULL,
            stderr=err,
        )
        seconds = time.perf_counter() - started
        rss = int(rss_file.read().strip() or 0)
        out.seek(0)
        err.seek(0)
        return rc, seconds, rss, out.read(), err.read()


def tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# ---------------------------------------------------------------------------
# (a) floor
# ---------------------------------------------------------------------------


def bench_floor(dsn: str) -> Figure:
    fig = Figure("(a) psql \\copy event_data > /dev/null")
    psql = find_psql()
    if psql is None:
        fig.note = "psql not found"
        return fig
    cmd = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn,
           "-c", "\\copy (select event_data from events) to /dev/null"]  # fmt: skip
    run_child(cmd)  # warm the cache, so (a), (b) and (c) all read a warm server
    rc, seconds, rss, _, err = run_child(cmd)
    if rc != 0:
        fig.note = f"psql failed ({rc}): {tail(err)}"
        return fig
    fig.seconds, fig.peak_rss_kb, fig.note = seconds, rss, "second run (first warms the cache)"
    return fig


# ---------------------------------------------------------------------------
# (b) forensics ingest
# ---------------------------------------------------------------------------


def forensics_cmd() -> list[str]:
    script = Path(sys.executable).parent / "forensics"
    for candidate in (script, ROOT / ".venv" / "bin" / "forensics"):
        if os.access(candidate, os.X_OK):
            return [str(candidate)]
    return [sys.executable, "-m", "forensics.cli"]


def bench_forensics(dsn: str, workdir: Path) -> Figure:
    fig = Figure("(b) forensics ingest adk-postgres")
    db = workdir / "bench.duckdb"
    cmd = [*forensics_cmd(), "ingest", "adk-postgres", dsn, "--db", str(db)]
    rc, seconds, rss, _, err = run_child(cmd)
    if rc != 0:
        fig.note = f"failed ({rc}): {shlex.join(cmd[:3])} ...: {tail(err, 3)}"
        return fig
    size = db.stat().st_size if db.exists() else 0
    fig.seconds, fig.peak_rss_kb = seconds, rss
    fig.note = f"bench.duckdb {size / 1e6:,.1f} MB"
    return fig


# ---------------------------------------------------------------------------
# (c) ADK get_session, one session at a time (runs in a child: --adk-worker)
# ---------------------------------------------------------------------------


async def _adk_read(dsn: str, keys: list[tuple[str, str, str]]) -> dict:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    events = 0
    async with DatabaseSessionService(sqlalchemy_url(dsn)) as svc:
        await svc.prepare_tables()  # schema check once, outside the timed loop
        started = time.perf_counter()
        for app_name, user_id, session_id in keys:
            session = await svc.get_session(
                app_name=app_name, user_id=user_id, session_id=session_id
            )
            if session is None:
                raise RuntimeError(f"session {session_id} vanished")
            events += len(session.events)
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "events": events, "sessions": len(keys)}


def adk_worker(dsn: str, sample: int | None, seed: int) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT app_name, user_id, id FROM sessions ORDER BY 1, 2, 3")
        keys = [tuple(r) for r in rows]
    total = len(keys)
    if sample is not None and sample < total:
        keys = random.Random(seed).sample(keys, sample)
    result = asyncio.run(_adk_read(dsn, keys))  # type: ignore[arg-type]
    result["total_sessions"] = total
    print(json.dumps(result))
    return 0


def bench_adk(dsn: str, sample: int | None, seed: int) -> Figure:
    fig = Figure("(c) ADK get_session, one by one")
    cmd = [sys.executable, __file__, "--adk-worker", "--dsn", dsn, "--seed", str(seed)]
    if sample is not None:
        cmd += ["--sample", str(sample)]
    rc, seconds, rss, out, err = run_child(cmd, capture=True)
    if rc != 0:
        fig.note = f"failed ({rc}): {tail(err, 3)}"
        return fig
    r = json.loads(out.strip().splitlines()[-1])
    fig.peak_rss_kb = rss
    if r["sessions"] < r["total_sessions"]:
        fig.seconds = r["seconds"] * r["total_sessions"] / max(1, r["sessions"])
        fig.note = (
            f"EXTRAPOLATED: {r['seconds']:.2f}s for a random {r['sessions']} of "
            f"{r['total_sessions']} sessions ({r['events']:,} events)"
        )
    else:
        fig.seconds = r["seconds"]
        fig.note = f"all {r['sessions']:,} sessions, {r['events']:,} events"
    fig.note += f"; get_session loop only (process: {seconds:.1f}s)"
    return fig


# ---------------------------------------------------------------------------


def print_table(figs: list[Figure], extra: list[str]) -> None:
    print()
    print(f"{'figure':<40} {'seconds':>9} {'peak RSS':>10}  notes")
    for f in figs:
        secs = f"{f.seconds:9.2f}" if f.seconds is not None else f"{'n/a':>9}"
        rss = f"{f.peak_rss_kb / 1024:7.0f} MB" if f.peak_rss_kb else f"{'':>10}"
        print(f"{f.label:<40} {secs} {rss}  {f.note}")
    a, b, c = (f.seconds for f in figs)

    def ratio(x: float | None, y: float | None) -> str:
        return f"{x / y:,.1f}x" if x is not None and y else "n/a"

    print()
    print(f"b/a (ingest vs. floor)   {ratio(b, a)}")
    print(f"c/b (ADK vs. ingest)     {ratio(c, b)}")
    print(f"c/a (ADK vs. floor)      {ratio(c, a)}")
    for line in extra:
        print(line)


def bench(dsn: str, sample: int | None, seed: int) -> list[Figure]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        n_events, n_sessions, size = conn.execute(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM sessions),"
            " pg_total_relation_size('events')"
        ).fetchone()
    print(f"source: {n_events:,} events in {n_sessions:,} sessions, events {size / 1e6:,.1f} MB")
    with tempfile.TemporaryDirectory(prefix="forensics-bench-") as tmp:
        print("(a) floor ...", flush=True)
        a = bench_floor(dsn)
        print("(b) forensics ingest ...", flush=True)
        b = bench_forensics(dsn, Path(tmp))
        print("(c) ADK get_session ...", flush=True)
        c = bench_adk(dsn, sample, seed)
    return [a, b, c]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", help="database holding ADK's V1 tables (see generate_pg_events.py)")
    ap.add_argument("--sample", type=int, help="(c) on N random sessions, extrapolated to all")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--start-server", action="store_true",
                    help="start a throwaway cluster (tests/pg.py), generate data, bench, remove")
    ap.add_argument("--events", type=int, default=200_000, help="with --start-server")
    ap.add_argument("--sessions", type=int, default=5_000, help="with --start-server")
    ap.add_argument("--adk-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)  # fmt: skip

    if args.adk_worker:
        return adk_worker(args.dsn, args.sample, args.seed)
    if args.start_server == bool(args.dsn):
        ap.error("give exactly one of --dsn or --start-server")
    if args.dsn:
        print_table(bench(args.dsn, args.sample, args.seed), [])
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generate_pg_events import generate, print_stats

    with start_pg_server() as server:
        print(f"server: {server!r}")
        dsn = server.create_database("forensics_bench")
        stats = generate(dsn, events=args.events, sessions=args.sessions, seed=args.seed)
        print_stats(stats)
        figs = bench(dsn, args.sample, args.seed)
    print_table(figs, [f"(generated {stats.events:,} events in {stats.seconds:.1f}s)"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
