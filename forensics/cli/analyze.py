"""`forensics analyze`: build the reconstruction's facts once, for every query to read."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ForensicsError
from .common import DbOption, Format, FormatOption, app, boundary, echo, emit


class Engine(StrEnum):
    local = "local"
    spark = "spark"


@app.command("analyze")
@boundary
def analyze(
    rebuild_all: Annotated[
        bool,
        typer.Option("--rebuild-all", help="Rebuild every session, not only the stale ones."),
    ] = False,
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="local (the default), or spark over a Parquet export (--input, --output).",
            case_sensitive=False,
        ),
    ] = Engine.local,
    input_dir: Annotated[
        Path | None,
        typer.Option("--input", help="A `forensics export parquet` folder to read."),
    ] = None,
    output_dir: Annotated[
        Path | None,
        typer.Option("--output", help="A new or empty folder for the facts as Parquet."),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option("--master", help="Spark's master URL, passed as given (default local[2])."),
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Rebuild the facts of every session whose events, traces or release changed since
    they were built, or that other rules built: each call's window size by role, the
    tool results it carried, tool calls, turns, compaction ranges.

    Every ingest does this for the sessions it changed, and opening a store whose facts
    are stale does it first, so on a store this is rarely needed by hand: after an
    interrupted ingest, or to pay the rebuild before a review. Sessions are rebuilt one
    at a time (memory does not grow with the store); an interrupted run keeps what it
    wrote. Token estimates and rankings are computed from the facts at query time, so a
    new ratio fit never needs a rebuild.

    With --input and --output (--db is then not read), the facts of a Parquet export
    are written as Parquet (one folder per fact table; turns/ and growth/ for the whole
    export, every tool call ranked; and a manifest.json), by this machine
    (--engine local) or by Apache Spark (--engine spark; needs pyspark and Java 17+;
    --master local[4], spark://host:7077, ...). Both run the same per-session function
    and write the same rows.
    Example: forensics analyze --db forensics.duckdb
    Example: forensics analyze --engine spark --input exports/week-47 --output facts/week-47
    """
    import polars as pl

    from .. import api

    if master is not None and engine is not Engine.spark:
        raise ForensicsError("--master is Spark's", hint="add --engine spark")
    if (input_dir is None) != (output_dir is None):
        raise ForensicsError(
            "--input and --output go together", hint="give both, or neither for the store"
        )
    if input_dir is not None and output_dir is not None:
        if rebuild_all:
            raise ForensicsError(
                "--rebuild-all is for the store: an export's facts are always built whole"
            )
        rows = api.analyze_export(
            input_dir, output_dir, engine=engine.value, master=master or "local[2]"
        )
        emit(pl.DataFrame({"table": list(rows), "rows": list(rows.values())}), fmt)
        if fmt is Format.table:
            echo(f"written to {output_dir} (manifest.json says how)")
        _say_failed(
            api.analyzed_failures(output_dir),
            "(each has a fact_sessions row with its error; the others' facts are written)",
        )
        return
    if engine is Engine.spark:
        raise ForensicsError(
            "--engine spark reads a Parquet export and writes Parquet",
            hint="forensics export parquet DIR, then: forensics analyze --engine spark"
            " --input DIR --output FACTS",
        )
    path = db if db is not None else api.default_db_path()
    if not path.exists():
        raise ForensicsError(
            f"no store at {path}",
            hint="load something first (`forensics ingest ...`), or point --db at a store",
        )
    done = api.analyze(path, every=rebuild_all)
    failed = api.facts_failures(path)
    frame = pl.DataFrame(
        {
            "sessions_rebuilt": [done.sessions],
            "events": [done.events],
            "calls": [done.calls],
            "seconds": [round(done.seconds, 3)],
            "sessions_failed": [len(failed)],
        }
    )
    emit(frame, fmt)
    if fmt is Format.table and not done.sessions:
        echo("the facts were up to date: nothing to rebuild")
    _say_failed(failed, "(no command shows them until they change; --rebuild-all tries again)")


def _say_failed(failed: list[tuple[tuple[str, str, str], str]], why: str) -> None:
    """The sessions whose facts could not be built, on stderr whatever the format (the
    others' facts are built): the first ten, with their errors."""
    if not failed:
        return
    echo(
        f"the facts of {len(failed):,} session{'s' if len(failed) != 1 else ''} could not"
        f" be built {why}:",
        err=True,
    )
    for (app_name, user_id, session_id), error in failed[:10]:
        echo(f"  {app_name}/{user_id}/{session_id}: {error}", err=True)
    if len(failed) > 10:
        echo(f"  ... and {len(failed) - 10:,} more", err=True)
