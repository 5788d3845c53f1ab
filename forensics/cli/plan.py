"""`forensics plan`: how the forensic lookups run on an ADK PostgreSQL database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import (
    AppOption,
    Format,
    FormatOption,
    SessionOption,
    SinceOption,
    UntilOption,
    UserOption,
    app,
    boundary,
    echo,
    emit,
    selection,
    timeout_ms,
)


@app.command()
@boundary
def plan(
    dsn: Annotated[
        str, typer.Argument(help="PostgreSQL connection string; the password is never printed.")
    ],
    app_name: AppOption = None,
    user: UserOption = None,
    session: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    query: Annotated[
        list[Path] | None,
        typer.Option("--query", help="A file holding one SELECT to explain too (repeatable)."),
    ] = None,
    analyze: Annotated[
        bool,
        typer.Option(
            "--analyze",
            help="Also run each lookup (EXPLAIN ANALYZE), read-only, "
            "rolled back, under the statement timeout.",
        ),
    ] = False,
    statement_timeout: Annotated[
        float, typer.Option("--statement-timeout", help="Seconds any one statement may run.")
    ] = 30.0,
    fmt: FormatOption = Format.table,
) -> None:
    """How the forensic lookups run on an ADK PostgreSQL database: plans, indexes, advice.

    For each named lookup (by session, a session's events in order, a compaction range,
    by invocation, a time-only range, the loader's own queries with the filters given,
    and every --query file): EXPLAIN (FORMAT JSON) only, the top node, scans, cost,
    estimated rows, indexes used, and a verdict; a sequential scan gets a suggested
    CREATE INDEX CONCURRENTLY, tried as a hypothetical index when HypoPG is installed
    in that database. Nothing is written: one READ ONLY transaction, rolled back.

    Example: forensics plan "postgresql://forensics@db/adk" --since 2026-10-01
    """
    from .. import api
    from ..columns import PLAN_INDEXES, PLAN_LOOKUPS

    report = api.plan_report(
        dsn,
        selection(app_name, user, session, since, until),
        analyze=analyze,
        extra_queries=query or [],
        statement_timeout_ms=timeout_ms(statement_timeout),
    )
    emit(report.lookups, fmt, PLAN_LOOKUPS)
    notes = [
        f"server: {report.location} (PostgreSQL {report.server_version}, "
        f"ADK schema {report.layout})",
        f"HypoPG: {report.hypopg_note}",
        *report.notes,
    ]
    if fmt is Format.table:
        echo("")
        emit(report.indexes, fmt, PLAN_INDEXES)
        for note in notes:
            echo(note)
    else:  # stdout stays the lookups alone
        for note in notes:
            echo(note, err=True)
