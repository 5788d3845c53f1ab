"""`forensics compaction`: what each range covers, and what the next request still carried."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    OptionalSessionArg,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    selection,
)


@app.command()
@boundary
def compaction(
    session_id: OptionalSessionArg = None,
    threshold_tokens: Annotated[
        int | None,
        typer.Option(
            "--threshold-tokens",
            help="Count calls whose window exceeded this "
            "(per-session part: --by-session, or the table's second section).",
        ),
    ] = None,
    by_session: Annotated[
        bool, typer.Option("--by-session", help="One row per session instead of per range.")
    ] = False,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Audit compaction: each range, what it covers, and what the next request still carried.

    Stored and sent are kept apart: compaction deletes nothing, so raw_events_in_range
    are still in the session table; summary_in_next_request and raw_in_range_sent_next
    say what the next model call's request held (from the window reconstruction).
    --by-session lists the raw window retained after the last range, its largest tool
    result, and with --threshold-tokens the calls over it despite compaction, and the
    sessions that crossed it with no compaction at all.
    """
    from .. import api
    from ..columns import COMPACTION_RANGES, COMPACTION_SESSIONS

    with api.open_store(db) as store:
        scope = api.Scope(store, selection(app_name, user, session_id))
        if by_session:
            emit(scope.compaction_sessions(threshold_tokens), fmt, COMPACTION_SESSIONS)
            return
        emit(scope.compaction(), fmt, COMPACTION_RANGES)
        if fmt is Format.table:  # the same reconstruction, a second section
            echo("")
            emit(scope.compaction_sessions(threshold_tokens), fmt, COMPACTION_SESSIONS)
