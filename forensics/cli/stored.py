"""`forensics sessions`, `events`, `ingests`: what the store holds, as it was loaded."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from .common import (
    AppOption,
    AppPick,
    DbOption,
    Format,
    FormatOption,
    SessionArg,
    SinceOption,
    UntilOption,
    UserOption,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    selection,
)


class SessionsSort(StrEnum):
    first = "first"
    newest = "newest"
    events = "events"
    errors = "errors"
    prompt_tokens = "prompt-tokens"


# the column each --sort puts the most of first (ties: the store's order, oldest first)
_SORTS = {"newest": "last_event_at", "events": "events", "errors": "errors",
          "prompt-tokens": "prompt_tokens"}  # fmt: skip


@app.command()
@boundary
def sessions(
    app_name: AppOption = None,
    user: UserOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    errors: Annotated[
        bool, typer.Option("--errors", help="Only sessions with an error event.")
    ] = False,
    sort: Annotated[
        SessionsSort,
        typer.Option(
            "--sort",
            help="first (the oldest first), newest (last event), events, errors, "
            "prompt-tokens (the most first).",
            case_sensitive=False,
        ),
    ] = SessionsSort.first,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many rows.")
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """One row per session: events, turns, first and last event, errors, source.

    prompt_tokens is the sum of the provider's usage_metadata over the session (measured).
    With --since/--until: the sessions with an event in that time (their figures over
    all their events). The total row adds up the rows shown.
    Example: forensics sessions --since 2026-11-16 --errors --sort newest --limit 20
    """
    from .. import api
    from ..columns import SESSIONS

    frame = api.sessions(db, selection(app_name, user, None, since, until), errors_only=errors)
    if sort.value in _SORTS:
        frame = frame.sort(
            _SORTS[sort.value], descending=True, nulls_last=True, maintain_order=True
        )
    shown = frame.head(limit) if limit is not None else frame
    emit(shown, fmt, SESSIONS)
    if shown.height < frame.height:
        echo(f"{shown.height:,} of {frame.height:,} sessions shown (--limit)", err=True)


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
