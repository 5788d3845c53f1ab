"""Each ADK ingest against the floor of its source, in one run (`make bench`).

    python tests/benchmarks/bench_floors.py                       # 200,000 events
    python tests/benchmarks/bench_floors.py --million             # 1,000,000 events
    python tests/benchmarks/bench_floors.py --dsn postgresql://.../bench  # data already there

Without --dsn a throwaway PostgreSQL is started (tests/pg.py) and filled by
generate_pg_events.py (ADK's V1 schema; 3% of events are tool results of 50-500 KB).
The same events are then written as an ADK SQLite file (DatabaseSessionService V1) and
as one Session JSON file per session, and for each source, each in a fresh process:

- the floor: reading the source's bytes and throwing them away. PostgreSQL: psql's
  `\\copy (select event_data from events) to /dev/null`, the second of two runs;
  SQLite: the faster of the sqlite3 shell printing `SELECT event_data` to /dev/null and a
  Python loop over the same query; JSON: `cat` of every file to /dev/null;
- `forensics ingest adk-postgres|adk-sqlite|adk-json` into a new store, the facts of
  every session built (the ingest builds them);

with its wall seconds, the peak RSS of the command's own process, the peak of the sum
of RSS over its process tree (the facts' worker processes included; shared pages are
counted in each, so it is an upper bound), and the ratio to the floor. Never run by CI;
nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402

from tests.pg import find_psql, start_pg_server  # noqa: E402


@dataclass
class Row:
    source: str
    floor_how: str
    floor_s: float | None
    ingest_s: float | None
    rss_mb: float | None
    tree_mb: float | None
    note: str = ""


def _tree_rss_kb(pid: int) -> int:
    """The RSS of `pid` and all its descendants, from /proc (0 once gone)."""
    total, todo = 0, [pid]
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
        todo += children.get(current, [])
    return total


def timed(cmd: list[str]) -> tuple[int, float, int, int, str]:
    """Run `cmd`: exit code, seconds, its own peak RSS (KB), its tree's peak (KB), stderr."""
    peak = 0
    done = threading.Event()

    def watch(pid_file: Path) -> None:
        nonlocal peak
        while not done.is_set():
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                time.sleep(0.05)
                continue
            peak = max(peak, _tree_rss_kb(pid))
            time.sleep(0.2)

    with tempfile.TemporaryDirectory() as tmp:
        pid_file = Path(tmp) / "pid"
        wrapped = ["sh", "-c", f'echo $$ > {pid_file}; exec "$@"', "sh", *cmd]
        watcher = threading.Thread(target=watch, args=(pid_file,), daemon=True)
        watcher.start()
        rc, seconds, rss, _, err = run_child(wrapped, capture=True)
        done.set()
        watcher.join()
    return rc, seconds, rss, peak, err


def _ingest(kind: str, args: list[str], work: Path) -> tuple[float | None, float, float, str]:
    db = work / f"{kind}.duckdb"
    db.unlink(missing_ok=True)
    rc, seconds, rss, tree, err = timed([*forensics_cmd(), "ingest", kind, *args, "--db", str(db)])
    if rc != 0:
        return None, 0.0, 0.0, f"failed ({rc}): {tail(err, 3)}"
    return seconds, rss / 1024, tree / 1024, f"store {db.stat().st_size / 1e6:,.0f} MB"


def bench_postgres(dsn: str, work: Path) -> Row:
    psql = find_psql()
    floor = None
    if psql:
        cmd = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", dsn,
               "-c", "\\copy (select event_data from events) to /dev/null"]  # fmt: skip
        run_child(cmd)  # warms the server's cache for both figures
        rc, floor, _, _, _ = run_child(cmd)
        floor = floor if rc == 0 else None
    seconds, rss, tree, note = _ingest("adk-postgres", [dsn], work)
    return Row("adk-postgres", "psql \\copy event_data", floor, seconds, rss, tree, note)


def export(dsn: str, work: Path) -> tuple[Path, Path]:
    """The PostgreSQL events as an ADK SQLite file (V1) and as Session JSON files."""
    import psycopg

    path = work / "adk.db"
    folder = work / "json"
    if path.exists() and folder.is_dir():
        return path, folder
    path.unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    lite = sqlite3.connect(path)
    lite.executescript(
        "CREATE TABLE sessions (app_name TEXT, user_id TEXT, id TEXT, state TEXT,"
        " create_time TIMESTAMP, update_time TIMESTAMP, PRIMARY KEY (app_name, user_id, id));"
        "CREATE TABLE events (id TEXT, app_name TEXT, user_id TEXT, session_id TEXT,"
        " invocation_id TEXT, timestamp TIMESTAMP, event_data TEXT,"
        " PRIMARY KEY (id, app_name, user_id, session_id));"
    )
    with psycopg.connect(dsn) as con, con.cursor(name="export") as cur:
        cur.itersize = 500
        cur.execute(
            "SELECT app_name, user_id, session_id, id, invocation_id, timestamp::text,"
            " event_data::text FROM events ORDER BY app_name, user_id, session_id, timestamp"
        )
        session: tuple[str, str, str] | None = None
        events: list[str] = []
        written = 0

        def flush() -> None:
            nonlocal written
            if session is None:
                return
            app, user, sid = session
            lite.execute("INSERT INTO sessions VALUES (?, ?, ?, '{}', NULL, NULL)", session)
            head = json.dumps({"id": sid, "app_name": app, "user_id": user, "state": {}})
            body = head[:-1] + ', "events": [' + ",".join(events) + "]}"
            (folder / f"{written:05d}.json").write_text(body)
            written += 1

        for app, user, sid, event_id, invocation, stamp, data in cur:
            if (app, user, sid) != session:
                flush()
                session, events = (app, user, sid), []
            lite.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (event_id, app, user, sid, invocation, stamp, data))  # fmt: skip
            events.append(data)
        flush()
    lite.commit()
    lite.close()
    return path, folder


def bench_sqlite(path: Path, work: Path) -> Row:
    floors = {}
    query = "SELECT event_data FROM events"
    rc, seconds, _, _, _ = run_child(["sh", "-c", f"sqlite3 {path} '{query}' > /dev/null"])
    if rc == 0:
        floors["sqlite3 shell"] = seconds
    loop = (f"import sqlite3\nfor (d,) in sqlite3.connect({str(path)!r}).execute({query!r}):"
            "\n    pass")  # fmt: skip
    rc, seconds, _, _, _ = run_child([sys.executable, "-c", loop])
    if rc == 0:
        floors["Python SELECT loop"] = seconds
    how, floor = min(floors.items(), key=lambda item: item[1]) if floors else ("", None)
    seconds, rss, tree, note = _ingest("adk-sqlite", [str(path)], work)
    return Row("adk-sqlite", how, floor, seconds, rss, tree, note)


def bench_json(folder: Path, work: Path) -> Row:
    files = sorted(str(p) for p in folder.iterdir())
    rc, floor, _, _, _ = run_child(["sh", "-c", f"cat {folder}/*.json > /dev/null"])
    seconds, rss, tree, note = _ingest("adk-json", files, work)
    return Row("adk-json", f"cat {len(files):,} files", floor if rc == 0 else None, seconds,
               rss, tree, note)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", help="a database generate_pg_events.py filled (else one is made)")
    ap.add_argument("--million", action="store_true", help="1,000,000 events in 25,000 sessions")
    ap.add_argument("--workdir", type=Path, help="keep the copies and stores here")
    ap.add_argument("--only", choices=("postgres", "sqlite", "json"), action="append")
    args = ap.parse_args()
    events, sessions = (1_000_000, 25_000) if args.million else (200_000, 5_000)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="forensics-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    server = None
    dsn = args.dsn
    if dsn is None:
        server = start_pg_server()
        dsn = server.create_database("bench")
        print(f"generating {events:,} events in {sessions:,} sessions...", flush=True)
        subprocess.run([sys.executable, str(Path(__file__).parent / "generate_pg_events.py"),
                        "--dsn", dsn, "--events", str(events), "--sessions", str(sessions)],
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    only = set(args.only or ("postgres", "sqlite", "json"))
    rows = []
    try:
        if "postgres" in only:
            rows.append(bench_postgres(dsn, work))
        if only & {"sqlite", "json"}:
            path, folder = export(dsn, work)
            if "sqlite" in only:
                rows.append(bench_sqlite(path, work))
            if "json" in only:
                rows.append(bench_json(folder, work))
    finally:
        if server is not None:
            server.close()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{os.cpu_count()} cores; each figure a fresh process")
    print(f"{'source':<13} {'floor':<22} {'floor s':>8} {'ingest s':>9} {'ratio':>6} "
          f"{'RSS MB':>7} {'tree MB':>8}  note")  # fmt: skip
    for r in rows:
        ratio = f"{r.ingest_s / r.floor_s:.2f}x" if r.ingest_s and r.floor_s else "-"
        print(f"{r.source:<13} {r.floor_how:<22} {r.floor_s or 0:>8.2f} {r.ingest_s or 0:>9.2f}"
              f" {ratio:>6} {r.rss_mb or 0:>7,.0f} {r.tree_mb or 0:>8,.0f}  {r.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
