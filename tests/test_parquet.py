"""The store as Parquet (`forensics export parquet`, `forensics ingest parquet`): the same
answers after a round trip, safe partition paths, a manifest that is checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.selection import Selection

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
RELEASE = ROOT / "tests" / "adk_releases" / "1.18.0"
OPENSEARCH = [SAMPLES / "opensearch" / name for name in
              ("otel-v1-apm-span.ndjson", "logs-otel-v1.ndjson", "litellm.ndjson")]  # fmt: skip
runner = CliRunner()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("parquet") / "source.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    api.ingest_sqlite(db, RELEASE / "sessions.db")  # V0: release evidence inferred
    api.ingest_json(db, [RELEASE / "compaction.session.json"], app="shop", user="u-3")
    api.ingest_traces(db, [RELEASE / "trace.otlp.json"])
    api.ingest_opensearch_files(db, OPENSEARCH)  # logged: spans, logs, LiteLLM payloads
    return db


def _logged(db: Path) -> pl.DataFrame:
    """The store's logged records as they were logged (not which ingest loaded them)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql("SELECT * EXCLUDE (ingest_id) FROM logged ORDER BY record_key").pl()
    finally:
        con.close()


def _same(a: Path, b: Path) -> None:
    assert api.sessions(a).equals(api.sessions(b))
    for sid in api.sessions(a)["session_id"].unique().to_list():
        if sid in ("relay", "parallel", "compaction"):
            continue  # ids shared by two apps: compared through the whole-store frames
        assert api.events(a, sid).equals(api.events(b, sid)), sid
    assert api.calls(a).equals(api.calls(b))
    assert api.turns(a).equals(api.turns(b))
    assert api.growth(a).equals(api.growth(b))
    assert api.compaction(a).equals(api.compaction(b))
    assert api.fidelity(a).equals(api.fidelity(b))
    assert _logged(a).equals(_logged(b))
    # what the logged records answer: context failures, and the cache writes LiteLLM counted
    assert api.context_failures(a).equals(api.context_failures(b))
    assert api.cost(a, by="call").equals(api.cost(b, by="call"))


def test_a_round_trip_gives_the_same_answers(source, tmp_path):
    folder = tmp_path / "export"
    out = runner.invoke(app, ["export", "parquet", str(folder), "--db", str(source)])
    assert out.exit_code == 0, out.output
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "agent-forensics-parquet" and manifest["version"] == 1
    stored = duckdb.connect(str(source), read_only=True)
    try:
        for table, about in manifest["tables"].items():
            (count,) = stored.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
            assert about["rows"] == count, table
    finally:
        stored.close()
    target = tmp_path / "target.duckdb"
    first = api.ingest_parquet(target, folder)
    assert first.rows_loaded == first.rows_read == manifest["tables"]["events"]["rows"]
    _same(source, target)
    again = api.ingest_parquet(target, folder)
    assert again.rows_loaded == 0 and again.rows_read == first.rows_read
    _same(source, target)


def test_any_parquet_reader_reads_it(source, tmp_path):
    folder = tmp_path / "export"
    rows = api.export_parquet(source, folder)
    con = duckdb.connect()
    (events,) = con.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)",
        [f"{folder}/events/**/*.parquet"],
    ).fetchone()
    assert events == rows["events"]
    days = {p.name for p in (folder / "events" / "app_name=store").iterdir()}
    assert days == {"day=2026-10-22"}


def test_a_selection_exports_whole_sessions(source, tmp_path):
    folder = tmp_path / "one"
    rows = api.export_parquet(source, folder, "incident")
    assert rows["sessions"] == 1
    assert rows["events"] == api.events(source, "incident").height


def test_logged_records_travel_with_the_sessions_they_name(source, tmp_path):
    """A logged record names a session id (or its trace does: a tool span names none);
    an export of one session carries that session's records, and only those."""
    everything = _logged(source)
    assert everything.height == 92
    api.export_parquet(source, tmp_path / "one", "incident")
    back = tmp_path / "one.duckdb"
    api.ingest_parquet(back, tmp_path / "one")
    named = pl.col("session_id") == "incident"
    traces = everything.filter(named)["trace_id"].drop_nulls().unique().to_list()
    expected = everything.filter(
        named | (pl.col("session_id").is_null() & pl.col("trace_id").is_in(traces))
    )
    assert expected.filter(pl.col("session_id").is_null()).height > 0  # tool spans name none
    assert expected.height < everything.height
    assert _logged(back).equals(expected)
    assert api.context_failures(back).equals(api.context_failures(source, "incident"))
    days = {p.name for p in (tmp_path / "one" / "logged").iterdir()}
    assert days == {"day=2026-10-22"}  # partitioned by the day they started


def test_a_store_of_logged_records_alone_exports_them(tmp_path):
    """OpenSearch only, no ADK session loaded: the failures are still there after a round trip."""
    db = tmp_path / "logs.duckdb"
    api.ingest_opensearch_files(db, OPENSEARCH)
    rows = api.export_parquet(db, tmp_path / "export")
    assert rows["events"] == 0 and rows["logged"] == _logged(db).height == 92
    back = tmp_path / "back.duckdb"
    loaded = api.ingest_parquet(back, tmp_path / "export")
    assert loaded.notes["rows_read"]["logged"] == 92
    assert _logged(back).equals(_logged(db))
    assert api.context_failures(back).height == 1
    assert api.context_failures(back).equals(api.context_failures(db))
    # a time range takes the records that started in it (sessions or none)
    since, until = 1792659601.0, 1792661400.0
    rows = api.export_parquet(db, tmp_path / "hour", Selection(since=since, until=until))
    started = _logged(db)["started_at"]
    assert rows["logged"] == started.is_between(since, until, closed="left").sum() > 0
    assert rows["logged"] < started.len()


def test_app_names_never_become_paths(tmp_path):
    hostile = {"id": "s", "appName": "../../escape/app", "userId": "u", "events": [{
        "id": "e0", "invocationId": "i", "author": "user", "timestamp": 1.7e9,
        "content": {"role": "user", "parts": [{"text": "hi"}]}}]}
    (tmp_path / "s.json").write_text(json.dumps(hostile))
    db = tmp_path / "f.duckdb"
    api.ingest_json(db, [tmp_path / "s.json"])
    folder = tmp_path / "deep" / "export"
    api.export_parquet(db, folder)
    written = [p for p in tmp_path.rglob("*.parquet")]
    assert written and all(folder in p.parents for p in written)
    back = tmp_path / "back.duckdb"
    api.ingest_parquet(back, folder)
    assert api.sessions(back)["app_name"].to_list() == ["../../escape/app"]


def test_exports_and_imports_refuse_what_is_not_theirs(source, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    out = runner.invoke(app, ["export", "parquet", str(busy), "--db", str(source)])
    assert out.exit_code == 1 and "is not an empty folder" in out.output
    # what an export killed mid-way leaves (nothing could empty it): said as such
    cut = tmp_path / "cut"
    api.export_parquet(source, cut)
    (cut / "manifest.json").unlink()
    out = runner.invoke(app, ["export", "parquet", str(cut), "--db", str(source)])
    assert out.exit_code == 1, out.output
    assert f"Error: {cut} holds only the folders such a write makes, and no manifest.json: " \
        "a write into it was stopped before it finished (its process killed?), and an " \
        "export never mixes with other files" in out.output, out.output
    assert "Hint: if a stopped run of this command made the folder, remove it" in out.output
    # Parquet files of another kind are not taken for one (the user's data, not ours)
    lake = tmp_path / "lake" / "2024" / "sales"
    lake.mkdir(parents=True)
    shutil.copy(next(cut.rglob("*.parquet")), lake / "part-0.parquet")
    out = runner.invoke(app, ["export", "parquet", str(tmp_path / "lake"), "--db", str(source)])
    assert out.exit_code == 1 and "is not an empty folder" in out.output, out.output
    out = runner.invoke(app, ["ingest", "parquet", str(busy), "--db", str(tmp_path / "t.duckdb")])
    assert out.exit_code == 1 and "not a forensics Parquet export: no manifest.json" in out.output
    newer = tmp_path / "newer"
    api.export_parquet(source, newer)
    manifest = json.loads((newer / "manifest.json").read_text())
    (newer / "manifest.json").write_text(json.dumps({**manifest, "version": 99}))
    out = runner.invoke(app, ["ingest", "parquet", str(newer), "--db", str(tmp_path / "t.duckdb")])
    assert out.exit_code == 1 and "export format version 99" in out.output


def test_a_trace_names_the_release_only_of_the_session_it_traced(source):
    """The 1.18.0 trace holds sessions named relay, parallel and compaction, ids the sample
    (another app) uses too: only the sessions whose events the trace answered get it."""
    from forensics.store import Store
    from forensics.store.reads import load_sessions

    with Store.open(source, read_only=True) as store:
        releases = {s.key: s.release for s in load_sessions(store)}
    assert releases[("shop", "u-2", "parallel")].basis == "traced"
    sample = releases[("store", "u-1002", "parallel")]
    assert sample is None or sample.basis != "traced"


def test_an_export_or_facts_that_fail_part_way_leave_nothing(source, tmp_path):
    """A write that fails part way (the system's file-size limit here, as a full disk
    does) removes what it wrote: the folder it made, or the files in the empty folder it
    was given; it left part files and no manifest, which the next export refused."""
    import resource
    import subprocess
    import sys

    api.export_parquet(source, tmp_path / "whole")
    given = tmp_path / "given"
    given.mkdir()
    code = "from forensics.cli import main; main()"
    for args, made in (
        (["export", "parquet", str(tmp_path / "new"), "--db", str(source)], "new"),
        (["export", "parquet", str(given), "--db", str(source)], None),
        (["analyze", "--input", str(tmp_path / "whole"), "--output", str(tmp_path / "facts")],
         "facts"),
    ):  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (3_000, 3_000)),
        )  # fmt: skip
        assert out.returncode == 1 and "File too large" in out.stderr, (args, out.stderr)
        if args[0] == "analyze":  # (its working store meets the limit first: TMPDIR's)
            assert "the analysis's working store (in " in out.stderr
            assert "Hint: set TMPDIR to a folder with room" in out.stderr
        assert "unexpected" not in out.stderr and "Traceback" not in out.stderr
        if made:
            assert not (tmp_path / made).exists(), args
    assert list(given.iterdir()) == []
    assert api.export_parquet(source, given)["sessions"] > 0  # the same folder, again


def test_a_folder_to_write_that_cannot_be_is_said_by_name(source, tmp_path):
    """An export or facts folder under a file, a link to nowhere, a file, or inside the
    export it reads: exit 1 naming the path (they said "unexpected NotADirectoryError",
    exit 2; facts inside the export were written, and broke it)."""
    afile = tmp_path / "afile"
    afile.write_text("mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "dir")
    export = tmp_path / "ex"
    api.export_parquet(source, export)
    cases = [
        (["export", "parquet", str(afile / "sub")], "a folder above it is a file"),
        (["export", "parquet", str(tmp_path / "dangling")], "it is a link to"),
        (["export", "parquet", str(afile)], f"{afile} is a file, not a folder"),
        (["analyze", "--input", str(export), "--output", str(afile / "sub")],
         "a folder above it is a file"),
        (["analyze", "--input", str(export), "--output", str(export / "sessions" / "x")],
         "is inside the export"),
        (["analyze", "--input", str(export / "sessions"), "--output", str(export)],
         "is inside --output"),
        (["analyze", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "o")],
         f"{tmp_path / 'nope'} does not exist"),
    ]  # fmt: skip
    for args, said in cases:
        out = runner.invoke(app, [*args, "--db", str(source)] if args[0] == "export" else args)
        assert out.exit_code == 1 and said in " ".join(out.output.split()), (args, out.output)
    assert afile.read_text() == "mine" and not (tmp_path / "o").exists()
    assert not (export / "sessions" / "x").exists()
    assert api.ingest_parquet(tmp_path / "back.duckdb", export).rows_loaded > 0
