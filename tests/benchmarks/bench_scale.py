"""Scale: ingest with the facts rebuilt, and the query commands on the stored facts.

Run by hand, never by CI. The data is generated once (generate_pg_events.py) into
databases you keep, and reused:

    createdb bench200k && createdb bench1m
    python tests/benchmarks/generate_pg_events.py --dsn .../bench200k
    python tests/benchmarks/generate_pg_events.py --dsn .../bench1m \\
        --events 1000000 --sessions 25000
    python tests/benchmarks/bench_scale.py --dsn .../bench200k --dsn .../bench1m [--spark]

Prints, in one run:
- per database: the psql `\\copy` floor, `forensics ingest adk-postgres` (which builds
  the facts of every session it loaded), `forensics analyze --rebuild-all` (the facts
  alone), each with seconds and peak RSS, and the ingest's ratio to the floor;
- on the largest store and on copies holding its first 20% and 50% of sessions:
  whole-store `turns`, `growth --top 20`, `calls --all` and one incident report
  (the session with the most events), each in a fresh process;
- with --spark: the largest store's Parquet export analysed by the local engine and by
  Spark (`--master`, default local[2]), the seconds of each, and whether their facts
  and their whole-export turns and growth (Spark SQL against DuckDB SQL) are equal.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import bench_floor, forensics_cmd, run_child, tail  # noqa: E402


def _timed(label: str, cmd: list[str]) -> dict:
    rc, seconds, rss, out, err = run_child(cmd, capture=True)
    if rc != 0:
        print(f"  {label}: FAILED ({rc}) {tail(err, 3)}")
        return {"label": label, "seconds": None, "rss_mb": None, "out": out}
    print(f"  {label:<42} {seconds:8.2f} s  {rss / 1024:8.0f} MB", flush=True)
    return {"label": label, "seconds": seconds, "rss_mb": rss / 1024, "out": out}


def _events(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
    finally:
        con.close()


def _subset(source: Path, target: Path, fraction: float) -> int:
    """A copy of the store holding its first `fraction` of sessions (by first event),
    with their facts: the facts stay current (no ingest ran)."""
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
    tables = ["parts", "events", "sessions", "fact_sessions", "fact_calls", "fact_carried",
              "fact_tool_calls", "fact_turns", "fact_compactions"]  # fmt: skip
    for table in tables:  # names from the list above, never from data
        statement = (f"DELETE FROM {table} AS t WHERE NOT EXISTS (SELECT 1 FROM keep AS k "  # noqa: S608
                     "WHERE k.app_name = t.app_name AND k.user_id = t.user_id "
                     "AND k.session_id = t.session_id)")  # fmt: skip
        con.execute(statement).fetchall()
    con.execute("CHECKPOINT").fetchall()
    con.close()
    return _events(target)


def _biggest_session(db: Path) -> str:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT session_id FROM events GROUP BY ALL ORDER BY count(*) DESC, session_id LIMIT 1"
        ).fetchall()[0][0]
    finally:
        con.close()


def bench_ingest(dsn: str, work: Path, reuse: bool) -> tuple[Path, list[str]]:
    label = dsn.rsplit("/", 1)[-1]
    db = work / f"{label}.duckdb"
    print(f"{label}:", flush=True)
    if reuse and db.exists() and _events(db):
        print(f"  reusing {db} ({_events(db):,} events)")
        return db, []
    floor = bench_floor(dsn)
    if floor.seconds:
        label_floor = "psql \\copy floor (warm)"
        print(f"  {label_floor:<42} {floor.seconds:8.2f} s  "
              f"{(floor.peak_rss_kb or 0) / 1024:8.0f} MB")  # fmt: skip
    ingest = _timed("ingest adk-postgres (+ facts)", [*forensics_cmd(), "ingest",
                    "adk-postgres", dsn, "--db", str(db)])  # fmt: skip
    facts = _timed("analyze --rebuild-all (facts alone)",
                   [*forensics_cmd(), "analyze", "--rebuild-all", "--db", str(db)])  # fmt: skip
    lines = []
    if floor.seconds and ingest["seconds"]:
        events = _events(db)
        size = db.stat().st_size
        lines.append(
            f"{label}: {events:,} events; ingest {ingest['seconds']:.1f} s = "
            f"{ingest['seconds'] / floor.seconds:.2f}x the floor ({floor.seconds:.1f} s), "
            f"peak {ingest['rss_mb']:.0f} MB; facts alone {facts['seconds']:.1f} s "
            f"({facts['seconds'] / events * 1e5:.2f} s per 100k events), "
            f"store {size / 1e6:.0f} MB ({size / events:.0f} bytes per event)"
        )
    return db, lines


def bench_queries(db: Path, work: Path) -> list[str]:
    lines = []
    for fraction in (0.2, 0.5, 1.0):  # of 1M: the 200k, 500k and 1M points
        target = db if fraction == 1.0 else work / f"subset-{fraction}.duckdb"
        events = _events(db) if fraction == 1.0 else _subset(db, target, fraction)
        session = _biggest_session(target)
        print(f"queries on {events:,} events ({fraction:.0%} of the sessions):", flush=True)
        f = [*forensics_cmd()]
        runs = [
            _timed("turns (whole store)", [*f, "turns", "--db", str(target), "-f", "json"]),
            _timed("growth --top 20", [*f, "growth", "--top", "20", "--db", str(target)]),
            _timed("calls --all", [*f, "calls", "--all", "--db", str(target), "-f", "csv"]),
            _timed(f"report incident {session[:12]}", [*f, "report", "incident", session,
                   "--db", str(target), "--out", str(work / "r.html")]),  # fmt: skip
        ]
        lines.append(f"{events:,} events: " + ", ".join(
            f"{r['label'].split(' ')[0]} {r['seconds']:.2f} s/{r['rss_mb']:.0f} MB"
            for r in runs if r["seconds"] is not None))  # fmt: skip
    return lines


def bench_spark(db: Path, work: Path, master: str) -> list[str]:
    import polars as pl

    from forensics.analysis.facts import FACT_SCHEMAS
    from forensics.engines.output import SUMMARIES

    export = work / "export"
    for folder in (export, work / "local", work / "spark"):  # this benchmark's own output
        shutil.rmtree(folder, ignore_errors=True)
    print("engines over the Parquet export:", flush=True)
    _timed("export parquet", [*forensics_cmd(), "export", "parquet", str(export),
                              "--db", str(db)])  # fmt: skip
    local = _timed("analyze --engine local", [*forensics_cmd(), "analyze", "--input",
                   str(export), "--output", str(work / "local")])  # fmt: skip
    spark = _timed(f"analyze --engine spark --master {master}", [*forensics_cmd(), "analyze",
                   "--engine", "spark", "--master", master, "--input", str(export),
                   "--output", str(work / "spark")])  # fmt: skip
    equal = True
    for table, schema in FACT_SCHEMAS.items():
        a = pl.read_parquet(work / "local" / table / "*.parquet").select(schema.names)
        b = pl.read_parquet(work / "spark" / table / "*.parquet").select(schema.names)
        equal &= a.sort(schema.names, nulls_last=True).equals(
            b.sort(schema.names, nulls_last=True))
    same = all(  # the summaries, in the order each engine wrote them
        pl.read_parquet(work / "local" / name / "*.parquet").equals(
            pl.read_parquet(work / "spark" / name / "*.parquet"))
        for name in SUMMARIES)  # fmt: skip
    manifest = json.loads((work / "local" / "manifest.json").read_text())
    calls = manifest["tables"]["fact_calls"]["rows"]
    return [f"engines on {_events(db):,} events ({calls:,} calls): local "
            f"{local['seconds']:.1f} s, spark {master} {spark['seconds']:.1f} s; "
            f"facts equal: {equal}; turns and growth (Spark SQL) equal: {same}"]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", action="append", required=True,
                    help="an ADK V1 database (generate_pg_events.py); give smallest first")
    ap.add_argument("--spark", action="store_true", help="also run the engines' comparison")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--workdir", type=Path, help="keep the stores here (default: a temp dir)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --workdir: a store already there is not ingested again")
    args = ap.parse_args()  # fmt: skip
    work = args.workdir or Path(tempfile.mkdtemp(prefix="forensics-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    summary: list[str] = []
    db = None
    for dsn in args.dsn:
        db, lines = bench_ingest(dsn, work, args.reuse)
        summary += lines
    assert db is not None
    summary += bench_queries(db, work)
    if args.spark:
        summary += bench_spark(db, work, args.master)
    print("\nsummary:")
    print("\n".join(f"  {line}" for line in summary))
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
