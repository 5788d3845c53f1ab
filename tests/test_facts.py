"""The reconstruction's facts, stored once: built at ingest for the sessions it changed,
rebuilt when inputs or rules change, kept when a rebuild is interrupted, read by every
query command; and the same facts from the Spark engine as from the local one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from forensics import api
from forensics.analysis import facts as facts_module
from forensics.analysis.facts import FACT_SCHEMAS, FACT_TABLES, RULES_VERSION
from forensics.cli import app
from forensics.engines import local
from forensics.engines.output import SUMMARIES
from forensics.store.reads import session_tables

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
RELEASE = ROOT / "tests" / "adk_releases" / "1.18.0"
runner = CliRunner()
HOSTILE_APP = "café ü/x %41"  # non-ASCII, a slash and a literal percent sign


def _count(db: Path, statement: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute(statement).fetchall()[0][0])
    finally:
        con.close()


def _frames(db: Path) -> dict[str, pl.DataFrame]:
    with api.open_store(db) as store:
        scope = api.Scope(store)
        return {
            "calls": scope.calls(),
            "growth": scope.growth(),
            "turns": scope.turns(),
            "compaction": scope.compaction(),
            "retained": scope.compaction_sessions(2_000),
        }


def _same_frames(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    for name in a:
        assert_frame_equal(a[name], b[name], check_exact=True)


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    return db


def test_an_ingest_stores_the_facts_of_the_sessions_it_loaded(store: Path) -> None:
    sessions = _count(store, "SELECT count(*) FROM sessions")
    assert _count(store, "SELECT count(*) FROM fact_sessions") == sessions == 3
    calls = api.calls(store)
    assert _count(store, "SELECT count(*) FROM fact_calls") == calls.height > 0
    assert _count(store, "SELECT count(*) FROM fact_tool_calls") == api.growth(store).height
    assert _count(store, "SELECT count(*) FROM fact_turns") == api.turns(store).height
    # every request's carried results are kept: at least one per tool call re-sent
    assert _count(store, "SELECT count(*) FROM fact_carried") >= api.growth(store)[
        "resent_calls"
    ].sum()
    with api.open_store(store) as s:
        assert api.facts_current(s)
    # nothing changed: the next analyze rebuilds nothing
    assert api.analyze(store).sessions == 0


def test_a_later_ingest_rebuilds_only_the_sessions_it_changed(store: Path) -> None:
    before = _count(store, "SELECT count(*) FROM fact_sessions")
    with api.using(store, read_only=False) as s:
        s.run("UPDATE store_meta SET value = 'x' WHERE key = 'facts_ingest'")
    assert api.analyze(store).sessions == 0  # stamps unchanged: no session is stale
    api.ingest_sqlite(store, RELEASE / "sessions.db")
    added = _count(store, "SELECT count(*) FROM fact_sessions") - before
    assert added == _count(store, "SELECT count(*) FROM sessions") - before == 2
    # a trace answers events of some stored sessions: only those are rebuilt (not the
    # sessions of another app that share their ids)
    with api.using(store, read_only=False) as s:
        stamps = dict(s.run("SELECT session_id || app_name, stamp FROM fact_sessions"))
    api.ingest_traces(store, [RELEASE / "trace.otlp.json"])
    with api.using(store, read_only=False) as s:
        after = dict(s.run("SELECT session_id || app_name, stamp FROM fact_sessions"))
        traced = s.run("SELECT count(*) FROM fact_calls WHERE window_source = 'traced'")[0][0]
        answered = s.run("SELECT DISTINCT e.session_id || e.app_name FROM traced_calls AS t "
                         "JOIN events AS e USING (session_id, event_id)")  # fmt: skip
    changed = sorted(k for k in after if after[k] != stamps[k])
    assert changed == sorted(r[0] for r in answered) == ["parallelshop", "relayshop"]
    assert traced > 0 and "parallelstore" in after


def test_facts_built_by_other_rules_are_rebuilt_when_the_store_opens(store: Path) -> None:
    expected = _frames(store)
    with api.using(store, read_only=False) as s:
        s.run("UPDATE fact_sessions SET rules = 'old ' || rules")
        s.run("UPDATE fact_calls SET chars_user = chars_user + 999")  # what old rules said
        s.run("UPDATE store_meta SET value = 'old' WHERE key = 'facts_rules'")
    _same_frames(_frames(store), expected)  # a read-only open rebuilt them first
    assert _count(store, "SELECT count(*) FROM fact_sessions WHERE rules LIKE 'old %'") == 0
    with api.open_store(store) as s:
        fresh = s.run("SELECT count(*) FROM fact_sessions WHERE starts_with(rules, ?)",
                      [f"{RULES_VERSION} "])  # fmt: skip
    assert fresh[0][0] == 3


def test_an_interrupted_rebuild_keeps_its_batches_and_the_next_finishes_it(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.ingest_sqlite(store, RELEASE / "sessions.db")
    expected = _frames(store)
    monkeypatch.setattr(local, "BATCH_EVENTS", 1)  # a batch per session
    built = []
    real = local.session_facts

    def interrupting(session, traced=None):
        if len(built) == 2:
            raise KeyboardInterrupt
        built.append(session.session_id)
        return real(session, traced)

    monkeypatch.setattr(local, "session_facts", interrupting)
    with api.using(store, read_only=False) as s:  # as if other rules had built them all
        s.run("UPDATE fact_sessions SET rules = 'old ' || rules")
        s.run("UPDATE store_meta SET value = 'old' WHERE key = 'facts_rules'")
    with pytest.raises(KeyboardInterrupt, match="facts of 2 of 5 sessions were built"):
        api.analyze(store)
    with api.using(store, read_only=False) as s:
        assert not api.facts_current(s)
        kept = s.run(
            "SELECT count(*) FROM fact_sessions WHERE starts_with(rules, ?)", [RULES_VERSION]
        )
    assert kept[0][0] == 2  # the two batches written before Ctrl-C
    monkeypatch.setattr(local, "session_facts", real)
    again = api.analyze(store)
    assert again.sessions == 3  # the sessions not rebuilt before, and only those
    _same_frames(_frames(store), expected)


def test_a_rebuild_that_meets_its_memory_cap_doubles_it_and_builds_the_rest(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The facts' cap also holds the fact tables' index, which grows with the store: a
    rebuild that meets it keeps what it wrote and builds the rest with the cap doubled.
    Here the cap is 2 MB (a real DuckDB OutOfMemoryException), and then, since no cap
    places one between two writes at this size, an OutOfMemoryException raised by the
    second write itself: the three sessions after it are built once, and counted once."""
    from forensics.store import Store

    api.ingest_sqlite(store, RELEASE / "sessions.db")
    expected = _frames(store)
    with api.using(store, read_only=False) as s:
        everything = api.analyze(s, every=True)
    raised: list[bool] = []
    real_raise = Store.raise_memory_limit

    def watched(self, *args):
        raised.append(real_raise(self, *args))
        return raised[-1]

    monkeypatch.setattr(Store, "raise_memory_limit", watched)
    monkeypatch.setattr(local, "FACTS_MEMORY_LIMIT", "2MB")
    again = api.analyze(store, every=True)
    assert raised and all(raised), "the cap was never met: the test does not reach the retry"
    assert (again.sessions, again.events, again.calls) == (
        everything.sessions, everything.events, everything.calls)
    _same_frames(_frames(store), expected)

    monkeypatch.setattr(local, "FACTS_MEMORY_LIMIT", "256MB")
    monkeypatch.setattr(local, "BATCH_EVENTS", 1)  # a write per run,
    monkeypatch.setattr(local.stored, "CHUNK_EVENTS", 1)  # a run per session
    writes: list[int] = []
    real_write = local.stored.write

    def running_out_once(store_, tables, stamps, *args):
        writes.append(len(stamps))
        if len(writes) == 2:
            raise duckdb.OutOfMemoryException("injected: the second write runs out")
        return real_write(store_, tables, stamps, *args)

    monkeypatch.setattr(local.stored, "write", running_out_once)
    raised.clear()
    again = api.analyze(store, every=True)
    assert raised == [True], writes
    assert sum(writes) == everything.sessions + 1  # the one that ran out, written again
    assert (again.sessions, again.events, again.calls) == (
        everything.sessions, everything.events, everything.calls)
    _same_frames(_frames(store), expected)


def test_a_ctrl_c_before_a_write_that_runs_out_of_memory_still_stops_the_rebuild(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a run, whose sessions built before it are then written by a write
    that runs out of memory (injected: no cap places one there at test size): the
    rebuild stops as Ctrl-C asks, it does not retry the rest with a larger cap."""
    api.ingest_sqlite(store, RELEASE / "sessions.db")
    calls: list[str] = []
    real = local.session_facts

    def interrupting(session, traced=None):
        calls.append(session.session_id)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(session, traced)

    def running_out(*args, **kwargs):
        raise duckdb.OutOfMemoryException("injected: the write after Ctrl-C runs out")

    monkeypatch.setattr(local, "session_facts", interrupting)
    monkeypatch.setattr(local.stored, "write", running_out)
    with pytest.raises(KeyboardInterrupt, match="facts of 0 of"):
        api.analyze(store, every=True)
    assert len(calls) == 3  # nothing built again after the stop


def _streamed(store, keys, chunk_events):
    """Each session's event and part rows as the engine reads them: runs of sessions
    (store.facts.stale_tables), each run's rows per session (store.reads.session_tables)."""
    keys = [tuple(k) for k in keys]
    for _, events, parts in local.stored.stale_tables(store, keys, chunk_events=chunk_events):
        for key, event_rows, part_rows, _ in session_tables(events, parts):
            yield key, event_rows, part_rows


def test_a_session_without_parts_between_others_streams_apart(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    expected = _frames(db)
    with api.using(db, read_only=False) as s:
        keys = s.run("SELECT app_name, user_id, session_id FROM sessions ORDER BY ALL")
        rows = [(key, len(events), len(parts)) for key, events, parts in _streamed(s, keys, 20)]
        stored = s.run(
            "SELECT app_name, user_id, session_id, count(*) FROM events GROUP BY ALL ORDER BY ALL"
        )
    assert [(k, n) for k, n, _ in rows] == [((a, u, sid), n) for a, u, sid, n in stored]
    assert sum(p for _, _, p in rows) == _count(db, "SELECT count(*) FROM parts")
    # the middle session loses its parts: each session still gets its own (one run each)
    with api.using(db, read_only=False) as s:
        middle = keys[1]
        s.run("DELETE FROM parts WHERE session_id = ?", [middle[2]])
        rows = list(_streamed(s, keys, 1))
    assert [len(p) for _, _, p in rows][1] == 0
    assert [k for k, _, _ in rows] == [tuple(k) for k in keys]
    assert expected["calls"].height > 0


def test_the_query_commands_read_the_facts_not_the_events(store: Path) -> None:
    expected = _frames(store)
    with api.using(store, read_only=False) as s:
        s.run("DELETE FROM parts")  # the facts alone answer calls, growth, turns, compaction
    _same_frames(_frames(store), expected)


def test_fact_schemas_are_the_store_tables(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    try:
        for table, schema in FACT_SCHEMAS.items():
            columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            # the store's own: the inputs' stamp (a failed rebuild's error is the engines' too)
            extra = ["stamp"] if table == "fact_sessions" else []
            assert sorted(columns) == sorted(schema.names + extra), table
    finally:
        con.close()
    assert FACT_TABLES == tuple(FACT_SCHEMAS)  # the store's list, in the schemas' order
    # the rules version digests the code that decides what a window held
    from forensics.analysis import rules
    from forensics.families.claude_code import windows as claude_code_windows
    from forensics.store import reads

    assert rules.FACTS_VERSION >= 1 and facts_module.RULES_VERSION == rules.RULES_VERSION
    package = Path(rules.__file__).resolve().parents[1]
    hashed = {package / source for source in rules.RULES_SOURCES}
    for module in (facts_module._windows, facts_module._releases, facts_module._model,
                   claude_code_windows, reads, facts_module):  # fmt: skip
        assert Path(str(module.__file__)).resolve() in hashed, module


def test_analyze_on_the_command_line(store: Path) -> None:
    result = runner.invoke(app, ["analyze", "--db", str(store), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["sessions_rebuilt"] == 0
    result = runner.invoke(app, ["analyze", "--db", str(store), "--rebuild-all", "-f", "json"])
    row = json.loads(result.output)[0]
    assert row["sessions_rebuilt"] == 3 and row["calls"] == api.calls(store).height
    result = runner.invoke(app, ["analyze", "--db", str(store)])
    assert "nothing to rebuild" in result.output


# ---------------------------------------------------------------------------
# Engines over a Parquet export: local and Spark give the same facts
# ---------------------------------------------------------------------------


def _spark_ready() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return shutil.which("java") is not None


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.adk_stress import DB_FILE, generate_stress

    root = tmp_path_factory.mktemp("engines")
    stress = root / "stress"
    generate_stress(stress)
    db = root / "source.duckdb"
    for path in (SAMPLES / "adk_v1.db", SAMPLES / "adk_v0.db", SAMPLES / "adk_sqlite_service.db",
                 RELEASE / "sessions.db", stress / DB_FILE):  # fmt: skip
        api.ingest_sqlite(db, path)
    api.ingest_traces(db, [RELEASE / "trace.otlp.json"])
    api.ingest_claude_code(db, [SAMPLES / "claude_code"])  # another family's window rules
    with api.using(db, read_only=False) as s:  # an app name a partition path must encode
        for table in ("sessions", "events", "parts", "session_releases"):
            s.run(f"UPDATE {table} SET app_name = ? WHERE app_name = 'shop'", [HOSTILE_APP])  # noqa: S608
        for table in FACT_TABLES:
            s.run(f"DELETE FROM {table}")  # noqa: S608 (rebuilt at the next open)
        s.run("UPDATE store_meta SET value = 'renamed' WHERE key = 'facts_ingest'")
    assert api.sessions(db).filter(pl.col("app_name") == HOSTILE_APP).height == 2
    api.export_parquet(db, root / "export")
    return root / "export"


def _facts(folder: Path) -> dict[str, pl.DataFrame]:
    found = {}
    for table, schema in FACT_SCHEMAS.items():
        frame = pl.read_parquet(folder / table / "*.parquet").select(schema.names)
        found[table] = frame.sort(schema.names, nulls_last=True)
    return found


def test_the_local_engine_over_an_export_gives_the_stores_facts(
    export: Path, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["analyze", "--input", str(export), "--output", str(tmp_path / "f"), "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = {r["table"]: r["rows"] for r in json.loads(result.output)}
    written = _facts(tmp_path / "f")
    assert {t: rows[t] for t in FACT_TABLES} == {t: f.height for t, f in written.items()}
    # the summaries are the store's own frames of the whole export
    db = tmp_path / "copy.duckdb"
    api.ingest_parquet(db, export)
    for name, expected in (("turns", api.turns(db)), ("growth", api.growth(db, top=0))):
        written_frame = pl.read_parquet(tmp_path / "f" / name / "*.parquet")
        assert rows[name] == written_frame.height == expected.height
        assert_frame_equal(written_frame, expected)
    assert written["fact_calls"].height > 50 and written["fact_compactions"].height > 0
    manifest = json.loads((tmp_path / "f" / "manifest.json").read_text())
    assert manifest["rules_version"] == RULES_VERSION and manifest["engine"] == "local"
    again = runner.invoke(app, ["analyze", "--input", str(export), "--output", str(tmp_path / "f")])
    assert again.exit_code == 1 and "not an empty folder" in again.output


@pytest.mark.skipif(
    not _spark_ready() and not os.environ.get("CI"), reason="needs pyspark and Java"
)
def test_spark_and_the_local_engine_build_identical_facts(export: Path, tmp_path: Path) -> None:
    from forensics.engines import parquet as local_parquet
    from forensics.engines import spark

    local_rows = local_parquet.analyze(export, tmp_path / "local")
    spark_rows = spark.analyze(export, tmp_path / "spark", master="local[2]")
    assert spark_rows == local_rows
    ours, theirs = _facts(tmp_path / "local"), _facts(tmp_path / "spark")
    for table in FACT_TABLES:
        assert_frame_equal(theirs[table], ours[table], check_exact=True)
    # the summaries: Spark SQL against the store's SQL, in the order each wrote them
    for name in SUMMARIES:
        local = pl.read_parquet(tmp_path / "local" / name / "*.parquet")
        spark_sql = pl.read_parquet(tmp_path / "spark" / name / "*.parquet")
        assert local.height > 20
        assert_frame_equal(spark_sql, local, check_exact=True)
    assert ours["fact_calls"].filter(pl.col("window_source") == "traced").height > 0
    assert HOSTILE_APP in theirs["fact_sessions"]["app_name"].to_list()
    # Claude Code sessions were rebuilt by their own rules there too (their family read
    # from the export's sessions)
    claude = theirs["fact_sessions"].filter(pl.col("user_id") == "claude-code")
    assert claude.height > 0 and all(r.endswith("claude-code rules") for r in claude["rules"])
    manifest = json.loads((tmp_path / "spark" / "manifest.json").read_text())
    assert manifest["engine"] == "spark" and manifest["master"] == "local[2]"
    # the same ratios sized both: fitted, traced and default ones, from the same samples
    ratios = manifest["ratios"]
    assert ratios == json.loads((tmp_path / "local" / "manifest.json").read_text())["ratios"]
    assert {r["source"] for r in ratios.values()} >= {"fitted", "traced"}, ratios


@pytest.mark.skipif(
    not _spark_ready() and not os.environ.get("CI"), reason="needs pyspark and Java"
)
def test_both_engines_list_a_session_whose_rebuild_raises_and_build_the_rest(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    opensearch = SAMPLES / "opensearch"  # logged records in the export: no engine needs them
    api.ingest_opensearch_files(db, [opensearch / "otel-v1-apm-span.ndjson",
                                     opensearch / "litellm.ndjson"])  # fmt: skip
    with api.using(db, read_only=False) as s:
        # a release no window rule reads: `--adk-version 2.x` is refused at ingest, but a
        # stored row (an export another tool wrote, a store edited by hand) is taken as is
        (user,) = s.run("SELECT user_id FROM sessions WHERE session_id = 'parallel'")[0]
        s.run("INSERT INTO session_releases VALUES ('store', ?, 'parallel', 'given', '2.x',"
              " NULL, NULL, 'typed by hand', 1)", [user])  # fmt: skip
    assert api.export_parquet(db, tmp_path / "export")["logged"] > 0
    error = "ValueError: not a release number (X.Y.Z): '2.x'"  # what the local engine says
    for engine in ("local", "spark"):
        result = runner.invoke(app, ["analyze", "--engine", engine, "--input",
                                     str(tmp_path / "export"), "--output", str(tmp_path / engine),
                                     "-f", "json"])  # fmt: skip
        assert result.exit_code == 0, result.output  # the job finishes
        assert "the facts of 1 session could not be built" in result.stderr, engine
        assert f"store/{user}/parallel: {error}" in result.stderr, engine
    ours, theirs = _facts(tmp_path / "local"), _facts(tmp_path / "spark")
    for table in FACT_TABLES:
        assert_frame_equal(theirs[table], ours[table], check_exact=True)
    for name in SUMMARIES:
        assert_frame_equal(
            pl.read_parquet(tmp_path / "spark" / name / "*.parquet"),
            pl.read_parquet(tmp_path / "local" / name / "*.parquet"),
            check_exact=True,
        )
    failed = theirs["fact_sessions"].filter(pl.col("error").is_not_null())
    assert failed.select("session_id", "error", "calls").rows() == [("parallel", error, 0)]
    assert failed["rules"].to_list() == [f"{RULES_VERSION} (not built)"]
    # the other sessions' facts are all there, and the summaries are theirs
    assert set(theirs["fact_calls"]["session_id"]) == {"incident", "compaction"}
    turns = pl.read_parquet(tmp_path / "spark" / "turns" / "*.parquet")
    assert set(turns["session_id"]) == {"incident", "compaction"}
    local_manifest, spark_manifest = (
        json.loads((tmp_path / engine / "manifest.json").read_text())
        for engine in ("local", "spark")
    )
    assert spark_manifest["ratios"] == local_manifest["ratios"]
    assert spark_manifest["sessions_failed"] == local_manifest["sessions_failed"] == 1
    rows = {r["table"]: r["rows"] for r in json.loads(result.stdout)}
    assert rows["fact_sessions"] == 3


def test_an_export_carries_the_facts_and_an_import_builds_its_own(
    store: Path, tmp_path: Path
) -> None:
    api.export_parquet(store, tmp_path / "export")
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    for table in FACT_TABLES:
        rows = _count(store, f"SELECT count(*) FROM {table}")  # noqa: S608 (our table names)
        assert manifest["tables"][table]["rows"] == rows
    exported = pl.read_parquet(tmp_path / "export" / "fact_calls" / "**" / "*.parquet")
    assert exported.height == api.calls(store).height and "stamp" not in exported.columns
    # an export's facts are never read back: the importing store builds its own
    calls = tmp_path / "export" / "fact_calls"
    for part in calls.rglob("*.parquet"):
        part.write_bytes(b"not parquet")
    copy = tmp_path / "copy.duckdb"
    api.ingest_parquet(copy, tmp_path / "export")
    _same_frames(_frames(copy), _frames(store))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--input", "x"], "--input and --output go together"),
        (["--master", "local[4]"], "--master is Spark's"),
        (["--engine", "spark"], "--engine spark reads a Parquet export"),
        (["--input", "x", "--output", "y", "--rebuild-all"], "--rebuild-all is for the store"),
        (["--input", "{tmp}", "--output", "{tmp}-out"], "not a forensics Parquet export"),
        (["--db", "{tmp}/none.duckdb"], "no store at"),
    ],
)
def test_analyze_refuses_what_it_cannot_do(tmp_path: Path, args: list[str], message: str):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = runner.invoke(app, ["analyze", *args])
    assert result.exit_code == 1 and message in result.output, result.output
    assert not (tmp_path / "none.duckdb").exists()  # a missing store is not created


def test_a_session_whose_rebuild_raises_is_kept_apart_and_the_rest_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.duckdb"
    real = local.session_facts

    def failing(session, traced=None):  # what a session ADK never wrote could provoke
        if session.session_id == "parallel":
            raise ValueError("an event this release cannot place")
        return real(session, traced or {})

    monkeypatch.setattr(local, "session_facts", failing)
    loaded = runner.invoke(app, ["ingest", "adk-sqlite", str(SAMPLES / "adk_v1.db"), "--db",
                                 str(db)])  # fmt: skip
    assert loaded.exit_code == 0  # the ingest itself is kept, and says what was not built
    assert "the facts of 1 session could not be built" in loaded.output
    ((key, error),) = api.facts_failures(db)
    assert key[2] == "parallel" and error == "ValueError: an event this release cannot place"
    # the others' facts are built and read; the failed one is in no frame
    turns = api.turns(db)
    assert set(turns["session_id"]) == {"incident", "compaction"}
    assert "parallel" not in set(api.cost(db)["session_id"])
    assert "parallel" not in set(api.compaction_sessions(db)["session_id"])
    # asked for by name, it is an error that says why, not a session with nothing in it
    for args in (["turns", "parallel"], ["report", "incident", "parallel", "--out",
                                         str(tmp_path / "r.html")]):  # fmt: skip
        asked = runner.invoke(app, [*args, "--db", str(db)])
        assert asked.exit_code == 1, asked.output
        assert "the facts of session parallel could not be built: ValueError" in asked.output
    # not rebuilt at every open: its stamp is kept
    with api.open_store(db) as s:
        assert api.facts_current(s)
    result = runner.invoke(app, ["analyze", "--db", str(db)])
    assert result.exit_code == 0 and "nothing to rebuild" in result.output
    assert "could not be built" in result.output and "parallel: ValueError" in result.output
    # once the rule is fixed, --rebuild-all builds it
    monkeypatch.setattr(local, "session_facts", real)
    again = runner.invoke(app, ["analyze", "--db", str(db), "--rebuild-all", "-f", "json"])
    assert json.loads(again.stdout)[0]["sessions_failed"] == 0
    assert "parallel" in set(api.turns(db)["session_id"]) and api.facts_failures(db) == []


def test_events_of_a_run_killed_before_its_ledger_row_make_the_facts_stale(tmp_path: Path) -> None:
    """An ADK ingest commits batch by batch; a process killed outright leaves committed
    events and no ledger row. The facts must still count them as new."""
    db = tmp_path / "s.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    with api.using(db, read_only=False) as s:
        assert api.facts_current(s)
        s.run("UPDATE events SET ingest_id = 999 WHERE session_id = 'incident'")
        assert not api.facts_current(s)  # the ledger's newest is 1, the events' 999
    with api.open_store(db) as s:  # a read-only open rebuilds what is stale first
        assert api.facts_current(s)


def test_the_ratio_fit_is_stored_with_the_facts(tmp_path, monkeypatch):
    """Each refresh of the facts fits every model once and keeps the ratios; a query
    command reads them (equal to a fit made now) until events or facts change."""
    from forensics.analysis.stored import fit_ratios, stored_fits
    from forensics.store import Store

    db = tmp_path / "f.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    with Store.open(db, read_only=True) as store:
        kept = stored_fits(store)
        assert kept is not None and kept == fit_ratios(store, set(kept))
        assert any(r.constant_tokens for r in kept.values())  # constants kept, by agent
    api.ingest_sqlite(db, SAMPLES / "tasks.db")  # new events: refitted with the facts
    with Store.open(db, read_only=True) as store:
        again = stored_fits(store)
        assert again is not None and again == fit_ratios(store, set(again)) != kept
    # an ingest that loads nothing rebuilds no fact: the kept fit stands as it was (not
    # refitted, not written again), and so do the calls priced with it
    from forensics.engines import local

    def kept(store: Store) -> list[object]:
        return store.run("SELECT key, value FROM store_meta WHERE key IN "
                         "('fitted_ratios', 'priced_calls') ORDER BY key")  # fmt: skip

    with Store.open(db, read_only=True) as store:
        before = kept(store)
    fitted = []
    monkeypatch.setattr(local, "store_fits", lambda store: fitted.append(store))
    api.ingest_sqlite(db, SAMPLES / "tasks.db")
    assert fitted == []
    with Store.open(db, read_only=True) as store:
        assert api.facts_current(store) and stored_fits(store) == again
        assert kept(store) == before and len(before) == 2
    # a session's facts built from other inputs (same counts): the stored fit is not used
    with Store.open(db) as store:
        query = "SELECT any_value(stamp) FROM fact_sessions WHERE session_id = 'incident'"
        (stamp,) = store.run(query)[0]
        store.run("UPDATE fact_sessions SET stamp = ? WHERE session_id = 'incident'", [stamp + "+"])
        assert stored_fits(store) is None
        store.run("UPDATE fact_sessions SET stamp = ? WHERE session_id = 'incident'", [stamp])
        assert stored_fits(store) == again
    # events a killed ingest committed, facts not refreshed: the stored fit is not used
    with Store.open(db) as store:
        store.run("UPDATE events SET ingest_id = ingest_id + 100 WHERE session_id = 'incident'")
        assert stored_fits(store) is None


def test_the_growth_kept_at_refresh_is_the_growth_computed(store: Path, monkeypatch) -> None:
    """analysis/kept_growth.py: the figures kept for every session, read for the whole
    store and for one session, equal those computed per query; an ingest that changes
    the facts leaves the kept figures unread until the refresh keeps them again."""
    from forensics.analysis import kept_growth

    sessions = api.sessions(store)["session_id"].to_list()
    assert _count(store, "SELECT count(*) FROM growth_kept") == _count(
        store, "SELECT count(*) FROM fact_tool_calls") > 0  # fmt: skip
    picks = [None, sessions[0], sessions[-1]]
    kept = [api.growth(store, pick) for pick in picks]
    used = []
    original = kept_growth.current
    monkeypatch.setattr(kept_growth, "current", lambda f: used.append(original(f)) or False)
    computed = [api.growth(store, pick) for pick in picks]
    assert used == [True, True, True]
    for a, b in zip(kept, computed, strict=True):
        assert_frame_equal(a, b)
    monkeypatch.setattr(kept_growth, "current", original)
    with api.open_store(store) as s:
        before = kept_growth.stamp(s)
    # an ingest that loads nothing keeps them (it moves only the ingest the facts are
    # current through: recomputing for it was 0.12 s of an unchanged 2 GB ingest)
    again = api.ingest_sqlite(store, SAMPLES / "adk_v1.db")
    assert again.rows_loaded == 0
    with api.open_store(store) as s:
        assert kept_growth.stamp(s) == before and kept_growth.current(api.Scope(s, None).facts)
    with duckdb.connect(str(store)) as con:  # a ratio fitted otherwise: the stamp no longer holds
        (value,) = con.execute(
            "SELECT value FROM store_meta WHERE key = 'fitted_ratios'").fetchone()  # fmt: skip
        fit = json.loads(value)
        for record in fit["ratios"].values():
            record["chars_per_token"] += 0.5
        con.execute("UPDATE store_meta SET value = ? WHERE key = 'fitted_ratios'",
                    [json.dumps(fit)])  # fmt: skip
    with api.open_store(store) as s:
        assert not kept_growth.current(api.Scope(s, None).facts)
