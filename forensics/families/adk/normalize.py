"""Raw ADK events (JSON text) into the store's rows, in a DuckDB of its own.

Normalising runs in a private in-memory DuckDB, apart from the store's
connection: the store holds one transaction open for a whole ingest, and temp
tables replaced inside that transaction are kept until it ends (8.6 GB for
200,000 events, measured). Here each statement commits on its own, so a batch's
staging tables are freed when the next batch replaces them; and it can run in
the reader thread while the store inserts the previous batch.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from ... import sql
from ...errors import waited
from ...model import RAW_SESSION_SCHEMA, Batch, Skip
from ...store.handle import connect, raise_if_interrupted
from .results import size_results

# With the store's own cap (ingest.pipeline.INGEST_MEMORY_LIMIT) 384 MB kept a 200,000-event,
# 1.85 GB ingest under 1 GB of resident memory (measured 968 MB). The guard's row sizes
# in SQL (stage_results) overran it 54 times in that ingest, each batch then normalised
# again, and took 768 MB; they are read from the bytes now (results.py), the SQL sizing
# only what that declines, and 384 MB is enough again (measured: peak 902 MB at 200,000
# events, with the store committing batch by batch; 972 MB with 768 MB).
# With the sizes in threads beside the statements (SIZING_THREADS): 891 MB at 200,000
# events from PostgreSQL, 922 MB from SQLite (bench_floors.py, 2026-12-07).
MEMORY_LIMIT = "384MB"
MAX_MEMORY_MB = 16_384
# Threads that size a batch's tool results (results.py), a chunk each, beside this
# module's DuckDB: the sizing was the normaliser's critical path (16 s of 28 s on
# 200,000 ADK events), with a core a quarter idle.
SIZING_THREADS = 2
# One thread: a batch's statements gain little from a second (they wait on each other's
# tasks), and the core they took is the one the store's inserts, the reader and the
# server need. Measured on 200,000 events from PostgreSQL: the ingest took 27.6-28.5 s
# against 30.3 s with two, with 20% fewer page faults (DuckDB's per-thread buffers).
THREADS = 1


@dataclass
class Normalized:
    """One batch as the store's rows, plus what could not be read."""

    events: pa.Table
    parts: pa.Table
    sessions: pa.Table
    rows_read: int
    skipped: list[Skip] = field(default_factory=list)
    newest: float | None = None  # the newest event timestamp in the batch (epoch seconds)
    side: dict[str, pa.Table] = field(default_factory=dict)  # the batch's, passed through
    replaces: list[tuple[str, str, str]] = field(default_factory=list)  # the same
    # per session, what its events' keys say of the ADK release (release_keys.sql)
    release_keys: list[dict[str, object]] = field(default_factory=list)
    # each raw event's key and where it came from (the store names an event it finds
    # stored with other content by it); None for a batch of made rows only
    located: pa.Table | None = None


class Normalizer:
    def __init__(self) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._sizer: ThreadPoolExecutor | None = None  # a batch's size_results
        self._chunks: ThreadPoolExecutor | None = None  # and its chunks, two at a time
        self._staged = False  # `staged` holds a batch's parsed events (dropped when done)

    def _size_apart(self, payloads: pa.Table) -> Future[tuple[pa.Table, pa.Table]]:
        """size_results of a batch's payloads in threads of their own, while this one's
        DuckDB stages the parts and events (numpy and DuckDB let go of the GIL)."""
        if self._sizer is None or self._chunks is None:
            self._sizer = ThreadPoolExecutor(1, thread_name_prefix="forensics-sizes")
            self._chunks = ThreadPoolExecutor(SIZING_THREADS,
                                              thread_name_prefix="forensics-chunks")  # fmt: skip
        return self._sizer.submit(size_results, payloads, self._chunks.submit)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """Its DuckDB, opened at the first batch with rows (an unchanged re-ingest has
        none: opening it and staging nothing was 45 ms of 0.68 s)."""
        if self._con is None:
            self._con = connect(":memory:", memory_limit=MEMORY_LIMIT, threads=THREADS)
            self._run("macros")
        return self._con

    def _run(self, name: str) -> list[tuple[object, ...]]:
        try:
            return self.con.execute(sql.load(f"families/adk/{name}").sql).fetchall()
        except (duckdb.InterruptException, RuntimeError) as e:
            raise_if_interrupted(e)
            raise

    def _table(self, name: str) -> pa.Table:
        return self.con.sql(sql.load(f"families/adk/{name}").sql).to_arrow_table()

    def __call__(self, batch: Batch) -> Normalized:
        """Normalise one batch; a batch too big for the memory cap (one 50 MB event
        parses into several times that) is retried with the cap doubled."""
        if (not batch.events.num_rows and batch.made is None
                and (batch.sessions is None or not batch.sessions.num_rows)):  # fmt: skip
            return _nothing(batch)
        limit_mb = int(MEMORY_LIMIT.removesuffix("MB"))
        try:
            while True:
                try:
                    return self._normalize(batch)
                except duckdb.OutOfMemoryException:
                    if limit_mb >= MAX_MEMORY_MB:
                        raise
                    limit_mb *= 2
                    self.con.execute(f"SET memory_limit = '{limit_mb}MB'").fetchall()
        finally:
            if limit_mb != int(MEMORY_LIMIT.removesuffix("MB")):
                self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'").fetchall()

    def _normalize(self, batch: Batch) -> Normalized:
        """The batch's raw events parsed and sized by the SQL, beside the rows a family
        made itself (`batch.made`: their parts put with the parsed events' parts, their
        tool results sized with theirs); the statements of a kind of row the batch has
        none of are not run (each costs milliseconds to plan, whatever its rows)."""
        sessions = batch.sessions
        if sessions is None:  # (Schema.empty_table imports pandas, where it is installed)
            sessions = pa.Table.from_batches([], RAW_SESSION_SCHEMA)
        made = batch.made
        raw = batch.events.num_rows > 0 or made is None  # (a batch of sessions alone: the SQL)
        registered = {"raw_batch": batch.events, "raw_sessions": sessions}
        if made is not None:
            registered |= {"made_events": made.events, "made_parts": made.parts}
        for name, table in registered.items():
            self.con.register(name, table)
        try:
            skipped = list(batch.skipped)
            payloads = []
            if raw:
                self._staged = True
                self._run("stage_events")
                skipped += [Skip(str(loc), str(why)) for loc, why in self._run("invalid_events")]
                payloads.append(self._table("result_payloads"))
            if made is not None:
                payloads.append(self._table("made_payloads"))
            # the guard's sizes: results.py reads what it can (in a thread of its own, while
            # the statements below run), stage_results.sql the rest
            sizing = self._size_apart(_joined(payloads))
            newest: float | None = None
            release_keys: list[dict[str, object]] = []
            events = []
            try:
                if raw:
                    self._run("stage_parts")
                    # the watermark is on the column the loaders filter on, not the JSON's own
                    (newest,) = self.con.execute(
                        "SELECT max(coalesce(column_epoch, epoch)) FROM staged WHERE valid"
                    ).fetchall()[0]
                    keys = self.con.execute(sql.load("families/adk/release_keys").sql)
                    names = [d[0] for d in keys.description]
                    release_keys = [dict(zip(names, row, strict=True)) for row in keys.fetchall()]
                    events.append(self._table("event_rows"))
                elif self._staged:  # (a batch of made rows: the last parsed one's go)
                    self.con.execute("DROP TABLE IF EXISTS staged").fetchall()
                    self._staged = False
                if made is not None:
                    (made_newest,) = self.con.execute(
                        "SELECT max(epoch) FROM made_events").fetchall()[0]  # fmt: skip
                    newest = max(v for v in (newest, made_newest) if v is not None)
                    into = ("INSERT INTO staged_parts BY NAME " if raw
                            else "CREATE OR REPLACE TEMP TABLE staged_parts AS ")  # fmt: skip
                    self.con.execute(into + sql.load("families/adk/made_parts").sql).fetchall()
                    events.append(self._table("made_event_rows"))
                sources = [_PARSED_SESSIONS] * raw + [_MADE_SESSIONS] * (made is not None)
                self.con.execute(_BATCH_SESSIONS + " UNION ALL ".join(sources)).fetchall()
                session_rows = self._table("session_rows")
            finally:
                # (a sizing error replaces this thread's, an OutOfMemoryException too: the
                # batch is then not normalised again with the cap raised, but stops the run)
                sized, declined = waited(sizing)
            self.con.register("sized_results", sized)
            self.con.register("results_to_size", declined)
            if declined.num_rows:  # (a view: as a table, 890 to 938 MB at 200,000 ADK events)
                responses = [sql.load(f"families/adk/{name}").sql.strip().rstrip(";")
                             for name, there in (("result_responses", raw),
                                                 ("made_responses", made is not None))
                             if there]  # fmt: skip
                self.con.execute("CREATE OR REPLACE TEMP VIEW result_responses AS "
                                 + "\nUNION ALL BY NAME\n".join(responses)).fetchall()  # fmt: skip
                self._run("stage_results")
            else:  # (the statement unnests every part again to find none)
                self.con.execute(
                    "CREATE OR REPLACE TEMP TABLE staged_results AS FROM sized_results LIMIT 0"
                )
            return Normalized(
                events=_joined(events),
                parts=self._table("part_rows"),
                sessions=session_rows,
                rows_read=batch.rows_read,
                skipped=skipped,
                newest=newest,
                side=batch.side,
                replaces=batch.replaces,
                release_keys=release_keys,
                located=batch.events.select(list(_LOCATED)) if raw else None,
            )
        finally:
            for name in (*registered, "sized_results", "results_to_size"):
                try:  # clean-up must not hide the error (an interrupt) it follows
                    self.con.unregister(name)
                except (duckdb.Error, KeyboardInterrupt):
                    pass

    def close(self) -> None:
        try:
            for pool in (self._sizer, self._chunks):  # (the sizes first: they wait on chunks)
                if pool is not None:
                    pool.shutdown(cancel_futures=True)
        finally:
            if self._con is not None:
                self._con.close()


_LOCATED = ("app_name", "user_id", "session_id", "event_id", "locator")
# session_rows.sql's `batch_sessions`: of the parsed events, of the made ones, or both
_BATCH_SESSIONS = "CREATE OR REPLACE TEMP VIEW batch_sessions AS "
_PARSED_SESSIONS = "SELECT app_name, user_id, session_id FROM staged WHERE valid"
_MADE_SESSIONS = "SELECT app_name, user_id, session_id FROM made_events"


def _joined(tables: list[pa.Table]) -> pa.Table:
    """Tables of one query's columns (the SQL's rows, then a family's made rows) as one,
    of the first one's types."""
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables([tables[0], *(t.cast(tables[0].schema) for t in tables[1:])])


def _nothing(batch: Batch) -> Normalized:
    """A batch without an event or a session row: no rows to store (tables without
    columns), what it carries beside them passed through."""
    none = pa.table({})
    return Normalized(events=none, parts=none, sessions=none, rows_read=batch.rows_read,
                      skipped=list(batch.skipped), side=batch.side, replaces=batch.replaces)
