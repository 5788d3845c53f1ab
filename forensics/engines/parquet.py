"""The local engine over a Parquet export: the same facts the Spark engine writes.

The export is read into a temporary store (the import any `forensics ingest parquet`
does), its facts are built by the local engine, and each fact table is written as
Parquet, in key order, with the columns of FACT_SCHEMAS; the summaries (SUMMARIES) are
the store's own frames of the whole export (analysis/stored.py).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..analysis.facts import FACT_SCHEMAS
from ..analysis.stored import Facts
from ..errors import ForensicsError
from ..ingest.parquet import ingest_parquet
from ..selection import Selection
from ..store import Store
from ..store.parquet import read_export
from .local import StageProgress, refresh
from .output import SUMMARIES, output_folder, write_manifest

# what a write that found no room says (the system's words, inside DuckDB's or Arrow's)
_NO_ROOM = ("No space left on device", "File too large", "Disk quota exceeded")


def _no_room(error: BaseException) -> str | None:
    text = f"{error} {getattr(error, 'strerror', '') or ''}"
    return next((words for words in _NO_ROOM if words in text), None)


def _not_written(output_dir: Path, why: str) -> ForensicsError:
    room = "free some space there, or " if any(words in why for words in _NO_ROOM) else ""
    return ForensicsError(
        f"cannot write the facts to {output_dir}: {why}",
        hint=f"{room}give --output a folder on another disk (nothing of this run is left "
        "there)",
    )


def analyze(
    input_dir: Path, output_dir: Path, progress: StageProgress | None = None
) -> dict[str, int]:
    """Build the facts of the export at `input_dir`; returns the rows written per table."""
    export = read_export(input_dir)  # (its files' footers read once, for both)
    manifest = export.manifest
    with output_folder(output_dir):
        started = time.perf_counter()
        rows = {}
        with tempfile.TemporaryDirectory(prefix="forensics-facts-") as tmp:
            writing = False  # (the working store's statements, then the facts' files)
            try:
                with Store.open(Path(tmp) / "facts.duckdb") as store:
                    ingest_parquet(store, input_dir, export)
                    built = refresh(store, progress)
                    writing = True
                    for table, schema in FACT_SCHEMAS.items():
                        target = output_dir / table
                        target.mkdir()
                        columns = ", ".join(f'"{name}"' for name in schema.names)
                        # table and column names come from FACT_SCHEMAS, never from data
                        statement = (
                            f"COPY (SELECT {columns} FROM {table} "  # noqa: S608
                            "ORDER BY ALL) TO ? (FORMAT parquet)"
                        )
                        store.run(statement, [str(target / "part-0.parquet")])
                        rows[table] = int(store.run(f"SELECT count(*) FROM {table}")[0][0])  # noqa: S608
                    facts = Facts(store, Selection())
                    summaries = {"turns": facts.turns(), "growth": facts.growth()}
                    assert summaries.keys() == SUMMARIES.keys()
                    for name, frame in summaries.items():
                        (output_dir / name).mkdir()
                        frame.write_parquet(output_dir / name / "part-0.parquet")
                        rows[name] = frame.height
            except Exception as e:
                if (full := _no_room(e)) is None:
                    raise
                if writing:
                    raise _not_written(output_dir, full) from e
                raise ForensicsError(
                    f"the analysis's working store (in {tmp}) cannot grow: {full}",
                    hint="set TMPDIR to a folder with room for a store of the export, and "
                    "run it again (nothing was written to --output)",
                ) from e
        seconds = time.perf_counter() - started
        failed = len(built.failed)
        try:
            write_manifest(output_dir, "local", None, manifest, rows, seconds, facts.ratios,
                           failed)  # fmt: skip
        except OSError as e:
            raise _not_written(output_dir, e.strerror or str(e)) from e
        return rows
