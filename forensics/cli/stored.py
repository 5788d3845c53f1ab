"""`forensics sessions`, `events`, `ingests`: what the store holds, as it was loaded."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import (
    AppOption,
    AppPick,
    DbOption,
    Format,
    FormatOption,
    SessionArg,
    UserOption,
    UserPick,
    app,
    boundary,
    emit,
    selection,
)


@app.command()
@boundary
def sessions(
    app_name: AppOption = None,
    user: UserOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """One row per session: events, turns, first and last event, errors, source.

    prompt_tokens is the sum of the provider's usage_metadata over the session (measured).
    """
    from .. import api
    from ..columns import SESSIONS

    emit(api.sessions(db, selection(app_name, user)), fmt, SESSIONS)


@app.command()
@boundary
def events(
    session_id: SessionArg,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """A session's events in order: author, part kinds, characters, usage, errors, compaction.

    chars: characters of the stored content parts (text; function_call name + args;
    function_response name + response, as compact JSON). Token columns are the
    provider's usage_metadata (measured); empty where the event carried none.
    """
    from .. import api
    from ..columns import EVENTS

    emit(api.events(db, selection(app_name, user, session_id)), fmt, EVENTS)


@app.command()
@boundary
def ingests(
    skips: Annotated[
        int | None,
        typer.Option("--skips", help="List the rows this ingest id skipped, with where and why."),
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """The ingest ledger: what was loaded from where, skipped and why (passwords redacted)."""
    from .. import api
    from ..columns import INGEST_SKIPS, INGESTS

    if skips is not None:
        emit(api.ingest_skips(db, skips), fmt, INGEST_SKIPS)
        return
    emit(api.ingests(db), fmt, INGESTS)
