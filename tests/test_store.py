"""The store: idempotent, incremental, all-or-nothing ingests and a truthful ledger."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from forensics import api
from forensics import sql as queries
from forensics.ingest import ingest
from forensics.selection import Selection
from forensics.sources.base import EventBatcher
from forensics.store import WATERMARK_OVERLAP_S, Store

sqlite_service = pytest.importorskip("google.adk.sessions.sqlite_session_service")


STEP = 300.0  # seconds between events: wider than the watermark's re-read margin in total


def _epoch(i: int) -> float:
    return 1_761_123_600.0 + STEP * i


def _event_json(i: int, session: str) -> str:
    return json.dumps({
        "id": f"{session}-e{i}", "invocation_id": f"inv{i // 3}", "author": "agent",
        "timestamp": _epoch(i),
        "content": {"role": "model", "parts": [{"text": "x" * (10 + i)}]},
    })


def make_sqlite_service_db(path: Path, sessions: int = 2, events: int = 6) -> Path:
    """A file with ADK SqliteSessionService's own DDL (REAL timestamps, event_data TEXT)."""
    con = sqlite3.connect(path)
    con.executescript(sqlite_service.CREATE_SCHEMA_SQL)
    for s in range(sessions):
        sid = f"s{s}"
        con.execute("INSERT INTO sessions VALUES ('store', 'u1', ?, '{}', ?, ?)",
                    (sid, 1_761_123_600.0, 1_761_123_700.0))
        for i in range(events):
            add_event(con, sid, i)
    con.commit()
    con.close()
    return path


def add_event(con: sqlite3.Connection, sid: str, i: int) -> None:
    con.execute("INSERT INTO events VALUES (?, 'store', 'u1', ?, ?, ?, ?)",
                (f"{sid}-e{i}", sid, f"inv{i // 3}", _epoch(i), _event_json(i, sid)))


def test_every_query_declares_exactly_the_parameters_it_uses():
    all_queries = queries.all_queries()
    assert len(all_queries) >= 10
    for query in all_queries:
        assert set(query.params) == query.used_params(), query.name


def test_a_view_leaves_out_only_its_own_final_order():
    """Query.unordered: the last ORDER BY of the statement itself goes; one in a window,
    a subquery, an aggregate, a string or a comment stays, and so does one a LIMIT
    or OFFSET follows (it chooses rows); every query still parses without it."""
    from forensics.sql import Query

    def unordered(text: str) -> str:
        return Query("t", "", (), text).unordered

    assert unordered("SELECT a FROM t ORDER BY a;\n") == "SELECT a FROM t"
    kept = ("SELECT string_agg(a, ',' ORDER BY a), row_number() OVER (ORDER BY b)"
            " FROM (SELECT * FROM t ORDER BY c) -- ORDER BY d\n WHERE x = ') ORDER BY'")
    assert unordered(kept + " ORDER BY e") == kept
    assert unordered(kept) == kept
    for chooses in ("SELECT a FROM t ORDER BY a LIMIT 3", "SELECT a FROM t ORDER BY a OFFSET 1"):
        assert unordered(chooses) == chooses
    con = duckdb.connect()
    for query in queries.all_queries():
        if not query.name.startswith("spark/"):
            statements = len(con.extract_statements(query.sql))
            assert len(con.extract_statements(query.unordered)) == statements, query.name


def test_an_appending_statement_is_its_insert_without_the_conflict_check():
    """Query.appending: the statement's own INSERT OR IGNORE as a plain INSERT (not a
    word of its header or elsewhere), and an error for a statement that is none."""
    from forensics.sql import Query

    text = ("-- name: t\n-- INSERT OR IGNORE INTO x\n-- params: (none)\n"
            "INSERT OR IGNORE INTO t BY NAME\n")
    assert Query("t", "", (), text + "SELECT 'INSERT OR IGNORE INTO' AS a;").appending == (
        "-- name: t\n-- INSERT OR IGNORE INTO x\n-- params: (none)\nINSERT INTO t BY NAME\n"
        "SELECT 'INSERT OR IGNORE INTO' AS a;")  # fmt: skip
    with pytest.raises(ValueError, match="not an INSERT OR IGNORE"):
        _ = queries.load("store/insert_transcript_files").appending
    for name in ("insert_events", "insert_parts", "insert_transcript_events", "insert_anchors"):
        assert queries.load(f"store/{name}").appending.count("INSERT INTO") == 1


def test_second_run_loads_nothing_and_third_reads_only_new_rows(tmp_path):
    src = make_sqlite_service_db(tmp_path / "adk.db")
    db = tmp_path / "f.duckdb"
    first = api.ingest_sqlite(db, src)
    assert (first.rows_read, first.rows_loaded) == (12, 12)
    second = api.ingest_sqlite(db, src)
    # reads from the watermark less the overlap: only the newest events come back
    assert second.watermark_before == first.watermark - WATERMARK_OVERLAP_S
    assert second.rows_loaded == 0
    newer = sum(1 for i in range(6) if _epoch(i) >= second.watermark_before)
    assert second.rows_read == 2 * newer < first.rows_read
    con = sqlite3.connect(src)
    add_event(con, "s1", 6)
    add_event(con, "s1", 7)
    con.commit()
    con.close()
    third = api.ingest_sqlite(db, src)
    assert third.rows_loaded == 2
    full = api.ingest_sqlite(db, src, incremental=False)
    assert (full.rows_read, full.rows_loaded) == (14, 0)
    assert api.sessions(db)["events"].to_list() == [6, 8]


def test_filters_select_rows_and_keep_separate_watermarks(tmp_path):
    src = make_sqlite_service_db(tmp_path / "adk.db")
    db = tmp_path / "f.duckdb"
    only_s0 = api.ingest_sqlite(db, src, Selection(session="s0"))
    assert only_s0.rows_loaded == 6
    window = api.ingest_sqlite(db, src, Selection(since=_epoch(2), until=_epoch(4)))
    assert window.rows_read == 4  # s0 and s1, events 2 and 3
    assert window.rows_loaded == 2  # s1's; s0's are stored already


class FailingSource:
    """Yields good batches, then fails the way an interrupted ingest does."""

    kind = "test"
    location = "failing"

    def __init__(self, error: BaseException, good_batches: int = 2):
        self.error, self.good_batches = error, good_batches

    def batches(self, since_watermark):
        for b in range(self.good_batches):
            out = EventBatcher()
            for i in range(5):
                out.rows_read += 1
                out.add(app_name="a", user_id="u", session_id="s", event_id=f"b{b}e{i}",
                        invocation_id="i", timestamp=1.0 + i, event_json=_event_json(i, "s"),
                        locator=f"row {i}")
            yield out.take()
        raise self.error


class HangingSource(FailingSource):
    """Three good batches, then says READY and waits to be killed."""

    def __init__(self):
        super().__init__(RuntimeError("unreachable"), good_batches=3)

    def batches(self, since_watermark):
        batches = super().batches(since_watermark)
        for _ in range(self.good_batches):
            yield next(batches)
        print("READY", flush=True)
        time.sleep(60)


class GoodBatches(FailingSource):
    """Its good batches, then the end: an ingest that completes."""

    notes: dict[str, object] = {}

    def __init__(self, good_batches: int):
        super().__init__(RuntimeError("unused"), good_batches)

    def batches(self, since_watermark):
        read = super().batches(since_watermark)
        for _ in range(self.good_batches):
            yield next(read)


def test_a_batch_that_meets_the_stores_memory_cap_is_stored_again_with_the_cap_doubled(
    tmp_path, monkeypatch
):
    """The primary keys' index lives under the ingest's cap and grows with the store (at
    128 MB an ingest of 1,000,000 events ran out at 571,000): a batch that meets the cap
    is undone and stored again with it doubled, counted once. Here the cap is 2 MB, which
    the first batch meets. (Appending, its plain INSERTs fit, and its commit would meet
    the cap, which DuckDB does not survive: holding more than half the cap before the
    commit, it is undone and stored with the checked statements, which meet it.)"""
    from forensics.ingest import pipeline

    raised: list[str] = []
    run = Store.run

    def watched(self, statement, params=None):
        if statement.startswith("SET memory_limit") and params and "MiB" in str(params[0]):
            raised.append(str(params[0]))
        return run(self, statement, params)

    monkeypatch.setattr(pipeline, "INGEST_MEMORY_LIMIT", "2MB")
    monkeypatch.setattr(Store, "run", watched)
    con = Store.open(tmp_path / "f.duckdb")
    result = ingest(con, GoodBatches(good_batches=3))
    monkeypatch.undo()
    assert raised, "the cap was never met: the test does not reach the retry"
    assert (result.rows_read, result.rows_loaded) == (15, 15)
    assert con.run("SELECT count(*) FROM events")[0][0] == 15
    assert con.run("SELECT count(DISTINCT event_id) FROM parts")[0][0] == 15
    assert con.run("SELECT status, rows_read, rows_loaded FROM ingests")[0] == ("ok", 15, 15)
    con.close()


class RepeatingSource(FailingSource):
    """Four batches of five events; the third holds two events of the first again."""

    notes: dict[str, object] = {}

    def __init__(self) -> None:
        super().__init__(RuntimeError("unused"), good_batches=4)

    def batches(self, since_watermark):
        for b, batch in enumerate(super().batches(since_watermark)):
            if b == 2:
                out = EventBatcher()
                for i in range(5):
                    out.rows_read += 1
                    out.add(app_name="a", user_id="u", session_id="s",
                            event_id=f"b0e{i}" if i < 2 else f"b2e{i}", invocation_id="i",
                            timestamp=1.0 + i, event_json=_event_json(i, "s"),
                            locator=f"row {i}")  # fmt: skip
                batch = out.take()
            yield batch
            if b == 3:
                return


@pytest.mark.parametrize("appending", [True, False])
def test_events_are_appended_until_one_is_stored_already(tmp_path, monkeypatch, appending):
    """An ingest appends each batch's events (Query.appending) until a batch holds one
    that is stored already: that batch is undone and stored again with the conflict
    check, and so is every later one. The store and the counts are those of the run
    that checks every batch; a session stored by an earlier batch is no conflict (its
    row, the first, is kept)."""
    from forensics.ingest import pipeline

    statements: list[str] = []
    run = Store.run

    def watched(self, statement, params=None):
        if "INTO events" in statement:
            statements.append("append" if "OR IGNORE" not in statement else "check")
        return run(self, statement, params)

    monkeypatch.setattr(Store, "run", watched)
    if not appending:  # the run as before: every batch checked
        init = pipeline._Run.__init__

        def checking(self, *args, **kwargs):
            init(self, *args, **kwargs)
            self.appending = False

        monkeypatch.setattr(pipeline._Run, "__init__", checking)
    con = Store.open(tmp_path / "f.duckdb")
    result = ingest(con, RepeatingSource())
    monkeypatch.undo()
    assert statements == (["append", "append", "append", "check", "check"] if appending
                          else ["check"] * 4)  # fmt: skip
    assert (result.rows_read, result.rows_loaded, result.rows_already_stored) == (20, 18, 2)
    assert con.run("SELECT count(*), count(DISTINCT event_id) FROM events")[0] == (18, 18)
    assert con.run("SELECT count(*) FROM parts")[0][0] == 18
    assert con.run("SELECT count(*) FROM sessions")[0][0] == 1
    # another source's later event of the stored session: appended, the session's row
    # (its source, the ingest that stored it) the first one's
    first = con.run("SELECT source, ingest_id FROM sessions")[0]

    class Later(FailingSource):
        kind, location, notes = "later", "elsewhere", {}

        def batches(self, since_watermark):
            out = EventBatcher()
            out.rows_read += 1
            out.add(app_name="a", user_id="u", session_id="s", event_id="later", invocation_id="i",
                    timestamp=9.0, event_json=_event_json(9, "s"), locator="row 0")  # fmt: skip
            yield out.take()

    statements.clear()
    monkeypatch.setattr(Store, "run", watched)
    later = ingest(con, Later(RuntimeError("unused")))
    monkeypatch.undo()
    assert statements == ["append"] and later.rows_loaded == 1
    assert con.run("SELECT source, ingest_id FROM sessions")[0] == first
    assert first[0] == "test:failing"
    con.close()


def test_a_stop_just_after_the_runs_commit_keeps_the_run(tmp_path, monkeypatch):
    """Ctrl-C that lands just after the COMMIT of the run's last transaction (its ledger
    row written `ok`), before the code knew it ended: the run stays, whole, and is said
    to have been committed. (It was undone under an `ok` row: events gone, ledger not.)"""
    from forensics.errors import FactsInterrupted
    from forensics.ingest import pipeline

    run = Store.run
    finishing: list[bool] = []
    finish = pipeline._Run.finish

    def finished(self):
        finish(self)
        finishing.append(True)

    def stopped_after(self, statement, params=None):
        found = run(self, statement, params)
        if statement == "COMMIT" and finishing:
            finishing.clear()
            raise KeyboardInterrupt
        return found

    monkeypatch.setattr(pipeline._Run, "finish", finished)
    monkeypatch.setattr(Store, "run", stopped_after)
    con = Store.open(tmp_path / "f.duckdb")
    stop: BaseException | None = None
    try:  # (a bare KeyboardInterrupt would end pytest's run: caught, and checked)
        ingest(con, GoodBatches(good_batches=2))
    except KeyboardInterrupt as e:
        stop = e
    monkeypatch.undo()
    assert isinstance(stop, FactsInterrupted) and "the ingest was committed" in stop.message
    assert con.run("SELECT status, rows_loaded FROM ingests")[0] == ("ok", 10)
    assert con.run("SELECT count(*) FROM events")[0][0] == 10
    con.close()


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("server went away")])
def test_an_interrupted_ingest_commits_nothing_and_the_ledger_says_so(tmp_path, error):
    db = tmp_path / "f.duckdb"
    con = Store.open(db)
    with pytest.raises(type(error)):
        ingest(con, FailingSource(error))
    assert con.run("SELECT count(*) FROM events")[0][0] == 0
    assert con.run("SELECT count(*) FROM sessions")[0][0] == 0
    status, read, loaded, err = con.run(
        "SELECT status, rows_read, rows_loaded, error FROM ingests")[0]
    stopped = isinstance(error, KeyboardInterrupt)
    assert (status, read, loaded) == ("interrupted" if stopped else "failed", 10, 0)
    assert err == ("interrupted (Ctrl-C); nothing committed" if stopped
                   else "RuntimeError: server went away")
    con.close()
    src = make_sqlite_service_db(tmp_path / "adk.db")
    assert api.ingest_sqlite(db, src).rows_loaded == 12


def test_a_killed_ingest_process_leaves_the_store_usable(tmp_path):
    """SIGKILL mid-transaction: nothing of that run is in the store, and a rerun completes."""
    db = tmp_path / "f.duckdb"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_store import HangingSource
        from forensics.ingest import ingest
        from forensics.store import Store
        ingest(Store.open({str(db)!r}), HangingSource())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "READY"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    time.sleep(0.1)
    con = Store.open(db)
    assert con.run("SELECT count(*) FROM events")[0][0] == 0
    con.close()
    src = make_sqlite_service_db(tmp_path / "adk.db")
    assert api.ingest_sqlite(db, src).rows_loaded == 12


def test_unreadable_event_rows_are_skipped_by_name_and_neighbours_kept(tmp_path):
    src = make_sqlite_service_db(tmp_path / "adk.db", sessions=1, events=4)
    con = sqlite3.connect(src)
    for event_id, data in (("bad-json", '{"id": "bad-json", "content": {"parts": [{"te'),
                           ("bad-shape", '["an", "array"]')):
        con.execute("INSERT INTO events VALUES (?, 'store', 'u1', 's0', 'inv9', 1761123650.0, ?)",
                    (event_id, data))
    con.commit()
    con.close()
    result = api.ingest_sqlite(tmp_path / "f.duckdb", src)
    assert (result.rows_read, result.rows_loaded) == (6, 4)
    assert {s.locator: s.reason for s in result.skips} == {
        f"{src}: events row id='bad-json' session='s0'": "event is not valid JSON",
        f"{src}: events row id='bad-shape' session='s0'": "event is JSON but not an object",
    }
    skips = api.ingest_skips(tmp_path / "f.duckdb", result.ingest_id)
    assert skips["reason"].to_list() == ["event is not valid JSON",
                                         "event is JSON but not an object"]


def test_a_batch_with_nothing_to_stage_opens_no_duckdb_and_empty_sessions_are_kept(tmp_path):
    """An unchanged re-ingest's one batch has no event nor session row: the normaliser
    passes it through without opening its DuckDB (what it carries kept). A batch of
    session rows without events still goes through it, and they are stored."""
    from forensics.families.adk.normalize import Normalizer
    from forensics.model import RAW_EVENT_SCHEMA, Batch, Skip

    normalizer = Normalizer()
    out = normalizer(Batch(RAW_EVENT_SCHEMA.empty_table(), None, [Skip("f:1", "bad")], 3))
    assert normalizer._con is None
    assert (out.events.num_rows, out.rows_read, out.skipped) == (0, 3, [Skip("f:1", "bad")])
    normalizer.close()

    src = make_sqlite_service_db(tmp_path / "adk.db", sessions=2, events=1)
    con = sqlite3.connect(src)
    con.execute("DELETE FROM events")
    con.commit()
    con.close()
    db = tmp_path / "f.duckdb"
    assert api.ingest_sqlite(db, src).rows_loaded == 0
    assert api.sessions(db)["session_id"].to_list() == ["s0", "s1"]
    assert api.sessions(db)["events"].to_list() == [0, 0]


def test_a_store_in_a_missing_folder_names_the_folder(tmp_path):
    from typer.testing import CliRunner

    from forensics.cli import app

    target = tmp_path / "no-such-folder" / "f.duckdb"
    result = CliRunner().invoke(app, ["ingest", "adk-sqlite", str(make_sqlite_service_db(
        tmp_path / "adk.db")), "--db", str(target)])  # fmt: skip
    assert result.exit_code == 1
    assert f"the folder {target.parent} does not exist" in result.output
    assert not target.parent.exists()


def test_capped_work_runs_as_before_where_the_cap_cannot_hold(tmp_path):
    """Store.capped: work that meets the cap is done again with it doubled; where the cap
    cannot hold (a cap DuckDB refuses, spilling where it cannot write: an IO error) the
    work runs at the limit the connection had, and that limit is back after it."""
    import duckdb

    from forensics import api
    from forensics.store.handle import Store

    db = tmp_path / "c.duckdb"
    api.ingest_sqlite(db, Path(__file__).resolve().parents[1] / "sample_data" / "adk_v1.db")
    with Store.open(db, read_only=True) as store:
        (before,) = store.run("SELECT current_setting('memory_limit')")[0]
        seen: list[str] = []
        fail = [True]

        def spills() -> int:
            seen.append(store.run("SELECT current_setting('memory_limit')")[0][0])
            if fail and fail.pop():
                raise duckdb.IOException('Failed to create directory "x.duckdb.tmp"')
            return 42

        def limit() -> str:
            return store.run("SELECT current_setting('memory_limit')")[0][0]

        assert store.capped("64MB", spills) == 42
        # capped, then as before (DuckDB shows a limit rounded: set back, it reads as the
        # rounded figure, '18.8 GiB' as '18.7 GiB')
        assert seen[0] == "61.0 MiB" and seen[1] == limit() and seen[1][:2] == before[:2]
        seen.clear()
        again = limit()
        assert store.capped("not a size", spills) == 42 and seen == [again]  # as it was
        assert limit() == again


class _StopFirst:
    """A store's real DuckDB connection whose `method` meets a Ctrl-C at its first call,
    before it runs (what Python's handler raises where the stop lands; a real one lands
    inside the clean-up once in hundreds of tries: 243 of 8,000 in a stress of stops
    every 2 ms)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, method: str):
        self.con, self.method, self.stopped = con, method, False

    def __getattr__(self, name: str) -> object:
        found = getattr(self.con, name)
        if name != self.method or self.stopped:
            return found

        def stopped(*args: object) -> object:
            if self.stopped:  # (the method taken once, called again)
                return found(*args)
            self.stopped = True
            raise KeyboardInterrupt

        return stopped


def test_a_stop_landing_in_a_clean_up_is_raised_once_it_is_done(tmp_path: Path) -> None:
    """A stop landing while the store drops its views or rolls back was passed over: the
    work went on after the Ctrl-C, and a ROLLBACK it stopped left the transaction open
    and aborted, refusing every later statement. Now the clean-up is done, then the stop
    raised."""
    import pyarrow as pa

    with Store.open(tmp_path / "s.duckdb") as store:
        real = store.con
        for name in ("a", "b"):
            real.register(name, pa.table({"x": [1]}))
        store.con = _StopFirst(real, "unregister")  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            store.unregister("a", "b")
        store.con = real
        for name in ("a", "b"):
            with pytest.raises(duckdb.CatalogException):
                store.run(f"SELECT * FROM {name}")  # noqa: S608 (names from the test)
        store.run("BEGIN")
        store.run("CREATE TABLE t (x INTEGER)")
        store.con = _StopFirst(real, "execute")  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            store.quietly("ROLLBACK")
        store.con = real
        assert store.run("SELECT count(*) FROM duckdb_tables() WHERE table_name = 't'") == [(0,)]
        store.run("BEGIN")  # (refused inside a transaction left open)
        store.run("COMMIT")


class SignalAtCommit:
    """A store's real DuckDB connection that sends this process a real SIGINT as the
    first COMMIT is asked for (after a statement holding `after`, if given): a stop
    landing at a COMMIT, which a stress of stops lands once in hundreds."""

    def __init__(self, con: duckdb.DuckDBPyConnection, after: str = ""):
        self.con, self.after, self.armed = con, after, not after

    def __getattr__(self, name: str) -> object:
        return getattr(self.con, name)

    def execute(self, statement: str, *args: object) -> object:
        if self.after and self.after in statement:
            self.armed = True
        if self.armed and statement == "COMMIT":
            self.armed, self.after = False, ""
            signal.raise_signal(signal.SIGINT)
        return self.con.execute(statement, *args)


def test_a_stop_at_a_commit_is_raised_after_it_committed(tmp_path: Path) -> None:
    """A Ctrl-C landing at a transaction's COMMIT (a real signal, sent as the COMMIT is
    asked for) is held over it: the rows are committed, then the stop is raised. Before,
    it stopped the COMMIT, which then had committed or not, the caller not knowing."""
    path = tmp_path / "s.duckdb"
    with Store.open(path) as store:
        real = store.con
        store.run("CREATE TABLE t (x INTEGER)")
        with pytest.raises(KeyboardInterrupt):
            with store.transaction():
                store.run("INSERT INTO t VALUES (1)")
                store.con = SignalAtCommit(real)  # type: ignore[assignment]
        store.con = real
        assert store.run("SELECT count(*) FROM t") == [(1,)]
        store.run("BEGIN")  # (no transaction left open)
        store.run("ROLLBACK")
    with Store.open(path, read_only=True) as store:
        assert store.run("SELECT count(*) FROM t") == [(1,)]


def test_a_stop_at_the_commit_of_the_facts_counts_what_it_wrote(tmp_path: Path) -> None:
    """A stop at the COMMIT of a batch of facts is raised once the batch is counted: the
    stop's message says the sessions whose facts were written (it said 0 of 3 where 3
    were)."""
    from forensics.engines.local import refresh
    from forensics.errors import FactsInterrupted

    path = tmp_path / "s.duckdb"
    api.ingest_sqlite(path, Path(__file__).resolve().parents[1] / "sample_data" / "adk_v1.db")
    with Store.open(path) as store:
        real = store.con
        store.con = SignalAtCommit(real, after="INSERT INTO fact_")  # type: ignore[assignment]
        with pytest.raises(FactsInterrupted) as stopped:
            refresh(store, every=True)
        store.con = real
        written = store.run("SELECT count(*) FROM fact_sessions")[0][0]
    assert written == 3
    assert "the facts of 3 of 3 sessions were built and kept" in stopped.value.message


def test_a_stop_just_after_begin_leaves_no_transaction_open(tmp_path: Path) -> None:
    """A stop landing as BEGIN returns (before the block that rolls back) left the
    transaction open: every later BEGIN was refused, a stopped run's ledger row too."""

    class StopAfterBegin:
        def __init__(self, con: duckdb.DuckDBPyConnection):
            self.con = con

        def __getattr__(self, name: str) -> object:
            return getattr(self.con, name)

        def execute(self, statement: str, *args: object) -> object:
            done = self.con.execute(statement, *args)
            if statement == "BEGIN":
                raise KeyboardInterrupt  # (what Python's handler raises as the call returns)
            return done

    with Store.open(tmp_path / "s.duckdb") as store:
        real = store.con
        store.con = StopAfterBegin(real)  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            with store.transaction():
                pass
        store.con = real
        store.run("BEGIN")  # (refused inside a transaction left open)
        store.run("ROLLBACK")


def test_a_stop_duckdb_names_as_its_own_error_is_a_stop(tmp_path: Path) -> None:
    """A Ctrl-C that stops a Python object DuckDB reads as Arrow data comes back as
    DuckDB's InvalidInputException naming the KeyboardInterrupt; a store's statement
    raises it as the stop (an `except duckdb.Error` passed it over: the stop was lost,
    or a stop after an ingest's commit said that nothing was committed)."""

    import pyarrow as pa

    class Stopped:  # (its rows' export is where the stop landed)
        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            raise KeyboardInterrupt

        def __arrow_c_schema__(self) -> object:
            return pa.schema([("x", pa.int64())]).__arrow_c_schema__()

    with Store.open(tmp_path / "s.duckdb") as store:
        store.con.register("stopped", Stopped())
        with pytest.raises(KeyboardInterrupt):
            store.run("SELECT count(*) FROM stopped")
        store.unregister("stopped")
        assert store.run("SELECT 1") == [(1,)]  # (the connection serves on)
