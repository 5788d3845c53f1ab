"""A Parquet export that was tampered with, copied in part or written by another version:
`ingest parquet` and `analyze --input` refuse it with one error naming the file (or
folder) and the table and column, exit 1, never a traceback, nothing loaded, and no
empty `--output` folder left behind; a column of a newer forensics or a link to a folder
is left out, said in the ingest's notes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from forensics import api
from forensics.cli import app
from forensics.errors import ForensicsError

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
EVENTS = Path("events/app_name=store/day=2026-10-22")
EVENTS_PART = EVENTS / "part-0.parquet"
runner = CliRunner()


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    """The sample's sessions and LiteLLM records, exported by the command users run."""
    where = tmp_path_factory.mktemp("parquet_bad")
    db = where / "source.duckdb"
    api.ingest_sqlite(db, SAMPLES / "adk_v1.db")
    api.ingest_opensearch_files(db, [SAMPLES / "opensearch" / "litellm.ndjson"])
    out = runner.invoke(app, ["export", "parquet", str(where / "export"), "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert (where / "export" / EVENTS_PART).is_file()
    return where / "export"


def _copy(export: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "export"
    shutil.copytree(export, folder, symlinks=True)
    return folder


def _manifest(folder: Path, change: Callable[[dict], dict]) -> None:
    path = folder / "manifest.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _tables(folder: Path, name: str, about: object) -> None:
    _manifest(folder, lambda m: {**m, "tables": {**m["tables"], name: about}})


def _rows(folder: Path, table: str) -> int:
    return int(json.loads((folder / "manifest.json").read_text())["tables"][table]["rows"])


def _retyped(folder: Path, column: str, value: object, kind: pa.DataType) -> None:
    path = folder / EVENTS_PART
    table = pq.read_table(path)
    at = table.schema.get_field_index(column)
    table = table.set_column(at, pa.field(column, kind), pa.array([value] * table.num_rows, kind))
    pq.write_table(table, path)


def _analyze(folder: Path, tmp_path: Path) -> Result:
    """`forensics analyze --input folder --output tmp_path/facts`."""
    args = ["analyze", "--input", str(folder), "--output", str(tmp_path / "facts")]
    return runner.invoke(app, [*args, "--db", str(tmp_path / "analyze.duckdb")])


def _refused(folder: Path, tmp_path: Path, message: str) -> None:
    """Both commands exit 1 with `message`; the ingest keeps nothing, the analysis no
    output folder."""
    db = tmp_path / "target.duckdb"
    out = runner.invoke(app, ["ingest", "parquet", str(folder), "--db", str(db)])
    assert out.exit_code == 1, out.output
    assert "Error: " in out.output and message in out.output, out.output
    assert not db.exists() or api.sessions(db).height == 0
    out = _analyze(folder, tmp_path)
    assert out.exit_code == 1, out.output
    assert "Error: " in out.output and message in out.output, out.output
    assert not (tmp_path / "facts").exists()


# -- files that are no Parquet file of the table, in folders an export never makes (H11)


def test_a_file_that_is_not_parquet_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    (folder / EVENTS / "README.txt").write_text("hello")
    _refused(folder, tmp_path, f"{EVENTS / 'README.txt'}: not a Parquet file of the events table")


def test_an_empty_part_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    (folder / EVENTS / "part-1.parquet").write_bytes(b"")
    _refused(folder, tmp_path, f"{EVENTS / 'part-1.parquet'}: not a Parquet file of the events "
                               "table (Parquet file size is 0 bytes)")  # fmt: skip


def test_a_truncated_part_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    data = (folder / EVENTS_PART).read_bytes()
    (folder / EVENTS_PART).write_bytes(data[: len(data) // 2])
    _refused(folder, tmp_path, f"{EVENTS_PART}: not a Parquet file of the events table")


def test_a_folder_not_in_hive_form_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    (folder / "events" / "app_name=store").rename(folder / "events" / "store")
    _refused(folder, tmp_path, "events/store/day=2026-10-22/part-0.parquet: not where an export "
             "keeps the events table's files (events/app_name=VALUE/day=VALUE/FILE)")  # fmt: skip


def test_a_partition_value_that_is_not_utf8_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    (folder / "events" / "app_name=store").rename(folder / "events" / "app_name=%ED%A0%80")
    _refused(folder, tmp_path, "events/app_name=%ED%A0%80/day=2026-10-22: the events table's "
             "app_name in this folder's name is not UTF-8 text once URI-decoded")  # fmt: skip


# -- a manifest of another shape (H11) or version (L7)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: {k: v for k, v in m.items() if k != "tables"},
         "manifest.json: `tables` is missing, not an object of the tables exported"),
        (lambda m: {**m, "tables": [1, 2]}, "manifest.json: `tables` is [1, 2], not an object"),
        (lambda m: {**m, "tables": {**m["tables"], "events": "x"}},
         'manifest.json: tables.events is "x", not its rows and partitions'),
        (lambda m: {**m, "tables": {**m["tables"], "events": {"rows": True, "partitioned_by":
                                                              ["app_name", "day"]}}},
         "manifest.json: tables.events is {"),
        (lambda m: {**m, "tables": {**m["tables"], "events": {**m["tables"]["events"],
                                                              "partitioned_by": ["app_name"]}}},
         'manifest.json: tables.events.partitioned_by is ["app_name"]; this forensics writes '
         "and reads the events table by ['app_name', 'day']"),
        (lambda m: {**m, "tables": {**m["tables"], "events": {**m["tables"]["events"],
                                                              "partitioned_by": "app_name"}}},
         'manifest.json: tables.events.partitioned_by is "app_name"'),
        (lambda m: {**m, "version": True},
         "manifest.json: export format version true is no version (this forensics reads 1)"),
        (lambda m: {**m, "version": 0},
         "manifest.json: export format version 0 is no version (this forensics reads 1)"),
        (lambda m: {**m, "store_schema": 99},
         "manifest.json: exported from store schema 99; this forensics reads up to"),
        (lambda m: {**m, "store_schema": "14"},
         'manifest.json: store_schema "14" is no store schema version'),
        (lambda m: {k: v for k, v in m.items() if k != "store_schema"},
         "manifest.json: store_schema missing is no store schema version"),
    ],
    ids=["no-tables", "tables-list", "table-text", "rows-bool", "partitioned-by-wrong",
         "partitioned-by-text", "version-bool", "version-0", "schema-newer", "schema-text",
         "schema-missing"],  # fmt: skip
)
def test_a_manifest_of_another_shape_is_refused(export, tmp_path, change, message):
    folder = _copy(export, tmp_path)
    _manifest(folder, change)
    _refused(folder, tmp_path, message)


# -- rows the manifest does not list (H12)


@pytest.mark.parametrize("table", ["parts", "events", "sessions"])
def test_a_missing_table_folder_is_an_incomplete_copy(export, tmp_path, table):
    folder = _copy(export, tmp_path)
    shutil.rmtree(folder / table)
    rows = _rows(folder, table)
    assert rows > 0
    _refused(folder, tmp_path, f"manifest.json lists {rows:,} rows of {table}, the export holds 0 "
                               "(an incomplete copy?)")  # fmt: skip


def test_a_missing_part_is_an_incomplete_copy(export, tmp_path):
    folder = _copy(export, tmp_path)
    (folder / EVENTS_PART).unlink()
    _refused(folder, tmp_path, f"lists {_rows(folder, 'events'):,} rows of events, the export "
                               "holds 0 (an incomplete copy?)")  # fmt: skip


def test_rows_beyond_the_manifest_are_refused(export, tmp_path):
    folder = _copy(export, tmp_path)
    shutil.copy(folder / EVENTS_PART, folder / EVENTS / "part-1.parquet")
    rows = _rows(folder, "events")
    _refused(folder, tmp_path, f"lists {rows:,} rows of events, the export holds {2 * rows:,} "
                               "(files added since?)")  # fmt: skip


def test_a_manifest_that_counts_other_rows_is_refused(export, tmp_path):
    folder = _copy(export, tmp_path)
    _tables(folder, "events", {"rows": 99_999, "partitioned_by": ["app_name", "day"]})
    _refused(folder, tmp_path, f"lists 99,999 rows of events, the export holds "
                               f"{_rows(export, 'events'):,} (an incomplete copy?)")  # fmt: skip


# -- columns and rows (H11): found as the rows are read


def test_a_missing_column_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    table = pq.read_table(folder / EVENTS_PART)
    pq.write_table(table.drop(["epoch", "author"]), folder / EVENTS_PART)
    _refused(folder, tmp_path, f"{EVENTS_PART}: the events table's column epoch is missing")


@pytest.mark.parametrize(
    ("column", "value", "kind", "found", "wanted"),
    [("prompt_tokens", "lots", pa.string(), "string", "int64"),
     ("event_id", 7, pa.int64(), "int64", "string"),
     ("epoch", "1.5", pa.string(), "string", "double")],  # fmt: skip
)
def test_a_column_of_another_type_is_named(export, tmp_path, column, value, kind, found, wanted):
    folder = _copy(export, tmp_path)
    _retyped(folder, column, value, kind)
    _refused(folder, tmp_path,
                     f"{EVENTS_PART}: the events table's column {column} is {found}, not {wanted}")


def test_null_ids_are_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    _retyped(folder, "event_id", None, pa.string())
    _refused(folder, tmp_path, f"{EVENTS_PART}: the events table's rows cannot be stored "
                     "(Constraint Error: NOT NULL constraint failed: events.event_id)")  # fmt: skip


def test_a_damaged_data_page_is_named(export, tmp_path):
    folder = _copy(export, tmp_path)
    footer = pq.read_metadata(folder / EVENTS_PART)
    page = footer.row_group(0).column(0).data_page_offset  # the first column's first page
    data = bytearray((folder / EVENTS_PART).read_bytes())
    data[page + 8 : page + 208] = b"\x00" * 200  # the page's body, past its header's start
    (folder / EVENTS_PART).write_bytes(bytes(data))
    _refused(folder, tmp_path, f"{EVENTS_PART}: cannot read the events table's rows (")


def test_a_failed_analysis_leaves_no_folder(export, tmp_path):
    folder = _copy(export, tmp_path)
    _retyped(folder, "event_id", None, pa.string())
    out = _analyze(folder, tmp_path)
    assert out.exit_code == 1, out.output
    assert not (tmp_path / "facts").exists()


def test_a_failed_analysis_into_an_empty_folder_leaves_it_empty(export, tmp_path, monkeypatch):
    """A folder given empty is emptied again when the analysis fails after writing facts
    (a stop, a full disk), so that the same command can run into it once more."""
    from forensics.engines import parquet as engine

    facts = tmp_path / "facts"
    facts.mkdir()

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine, "write_manifest", full_disk)
    with pytest.raises(ForensicsError, match="cannot write the facts to .*: No space left"):
        api.analyze_export(export, facts)
    assert facts.is_dir() and not any(facts.iterdir())
    monkeypatch.undo()
    assert api.analyze_export(export, facts)["fact_sessions"] > 0


# -- what is left out, and said (H11, L7)


def test_a_column_of_a_newer_forensics_is_left_out(export, tmp_path):
    folder = _copy(export, tmp_path)
    table = pq.read_table(folder / EVENTS_PART)
    pq.write_table(table.append_column("zzz", pa.array([1] * table.num_rows)), folder / EVENTS_PART)
    db = tmp_path / "target.duckdb"
    out = runner.invoke(app, ["ingest", "parquet", str(folder), "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "note: events: column zzz not read" in out.stderr
    result = api.ingest_parquet(tmp_path / "again.duckdb", folder)
    assert result.rows_loaded == _rows(folder, "events")
    assert result.notes["not_read"] == [
        "events: column zzz not read (this forensics' store has no such column; a newer "
        "forensics wrote the export?)"
    ]
    out = _analyze(folder, tmp_path)
    assert out.exit_code == 0, out.output


def test_a_link_to_a_folder_is_not_followed(export, tmp_path):
    folder = _copy(export, tmp_path)
    os.symlink(".", folder / "events" / "app_name=store" / "loop")  # a loop: read 41 times
    result = api.ingest_parquet(tmp_path / "target.duckdb", folder)
    assert result.rows_read == result.rows_loaded == _rows(folder, "events")
    assert result.notes["not_read"] == [
        f"{folder / 'events' / 'app_name=store' / 'loop'}: a link to a folder, not followed"
    ]


# -- times with a zone (Spark writes its timestamps as instants)


def _zoned(folder: Path, table: str, columns: tuple[str, ...], zone: str) -> None:
    """Every part of `table`: its `columns` the same instants, written with `zone`."""
    for path in (folder / table).rglob("*.parquet"):
        frame = pq.read_table(path)
        for column in columns:
            at = frame.schema.get_field_index(column)
            kind = pa.timestamp("us", tz=zone)
            frame = frame.set_column(at, pa.field(column, kind), frame.column(at).cast(kind))
        pq.write_table(frame, path)


def test_times_written_with_a_zone_are_stored_as_the_same_instants(export, tmp_path):
    """Each instant is stored as the UTC time it is, on a machine whose zone is not UTC
    (it was stored in the machine's zone: four hours early in New York)."""
    folder = _copy(export, tmp_path)
    _zoned(folder, "events", ("timestamp",), "UTC")
    _zoned(folder, "sessions", ("create_time", "update_time"), "Asia/Kolkata")
    db = tmp_path / "target.duckdb"
    command = [sys.executable, "-c", "from forensics.cli import main; main()", "ingest", "parquet",
               str(folder), "--db", str(db)]  # fmt: skip
    env = {**os.environ, "TZ": "America/New_York"}  # DuckDB's zone is the process's
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    def times(store: Path) -> list[tuple]:
        with duckdb.connect(str(store), read_only=True) as con:
            events = con.sql("SELECT event_id, timestamp FROM events ORDER BY ALL").fetchall()
            sessions = con.sql(
                "SELECT session_id, create_time, update_time FROM sessions ORDER BY ALL"
            ).fetchall()
        return events + sessions

    assert times(db) == times(export.parent / "source.duckdb")


def test_an_export_whose_partition_folder_was_renamed_is_refused(export, tmp_path):
    """A file's app and user are its folders' (app_name=..., user_id=...): a folder of
    events renamed by hand stored them under an app their session is not of, exit 0. It
    is a named error now, and nothing is loaded."""
    folder = _copy(export, tmp_path)
    events = sorted((folder / "events").iterdir())[0]
    app_name = events.name.partition("=")[2]
    events.rename(events.with_name("app_name=renamed"))
    db = tmp_path / "target.duckdb"
    out = runner.invoke(app, ["ingest", "parquet", str(folder), "--db", str(db)])
    assert out.exit_code == 1, out.output
    assert "of app renamed" in out.output and "belong to no session" in out.output
    assert "events/app_name=renamed renamed or moved?" in out.output
    assert not db.exists() or api.sessions(db).height == 0
    assert app_name  # (the folder was an app's)
    facts = runner.invoke(app, ["analyze", "--input", str(folder), "--output", str(tmp_path / "f")])
    assert facts.exit_code == 1 and "belong to no session" in facts.output
    assert not (tmp_path / "f").exists()
