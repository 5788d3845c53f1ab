"""`forensics export parquet`: the store's tables for Spark, a notebook or a warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import (
    AppOption,
    DbOption,
    Format,
    FormatOption,
    SessionOption,
    SinceOption,
    UntilOption,
    UserOption,
    boundary,
    echo,
    emit,
    export_app,
    selection,
)


@export_app.command("parquet")
@boundary
def export_parquet(
    folder: Annotated[Path, typer.Argument(help="A new or empty folder to write into.")],
    app_name: AppOption = None,
    user: UserOption = None,
    session: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Write the selected sessions as Parquet: sessions, events, parts (by app and UTC day,
    Hive-style), traced requests, release evidence, their logged records (OpenSearch
    spans and logs, LiteLLM payloads; by UTC day) and stored facts, with a manifest.json.

    A session is exported whole when it has an event in --since/--until; a logged record
    goes with the session whose id it (or its trace) names, and without --app, --user or
    --session every logged record in --since/--until goes too. Partition
    values are URI-encoded, so no app name becomes a path. Read it back with
    `forensics ingest parquet DIR`, or with any Parquet reader (Spark, DuckDB, polars).
    Example: forensics export parquet exports/week-47 --since 2026-11-16 --until 2026-11-23
    """
    import polars as pl

    from .. import api

    rows = api.export_parquet(db, folder, selection(app_name, user, session, since, until))
    frame = pl.DataFrame({"table": list(rows), "rows": list(rows.values())})
    emit(frame, fmt)
    if fmt is Format.table:
        echo(f"written to {folder} (manifest.json says what it holds)")
