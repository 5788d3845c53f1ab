"""`forensics turns`, `calls`, `window`, `growth`: how the context grew, call by call."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer

from ..words import counted, union_of
from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    OptionalSessionArg,
    SessionArg,
    SinceOption,
    UntilOption,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    selection,
    state,
    stored_name,
)

if TYPE_CHECKING:
    import polars as pl

    from ..provenance import Spec

_ESTIMATE_NOTE = (
    "measured: provider usage_metadata; estimated: window characters / chars-per-token "
    "({ratio}); inferred: measured minus estimated visible content (system + tool schemas)"
)


def _ratio_note(frame: pl.DataFrame) -> str:
    """The ratios behind the estimates, one per model, with the fit's error."""
    if frame.is_empty():
        return "no calls"
    notes = []
    for row in frame.unique("ratio_model", maintain_order=True).iter_rows(named=True):
        error = row["ratio_mean_abs_error"]
        fit = (
            f"{row['ratio_source']}, mean error {error:.1%}"
            if row["ratio_source"] in ("fitted", "traced")
            else f"default: {row['ratio_note'] or 'nothing measured to fit'}"
        )
        model = row["ratio_model"] or "unnamed model"
        notes.append(f"{row['chars_per_token']:.2f} chars/token for {model} ({fit})")
    return "; ".join(dict.fromkeys(notes))


@app.command()
@boundary
def turns(
    session_id: OptionalSessionArg = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, error.

    Cumulative input is the sum of the window over the turn's calls: what is billed as
    input again and again. Measured from usage where the calls have it, estimated
    from the reconstructed windows always. Where a session's ADK release is not known
    and the releases it may be rebuild a call differently, the estimates are a range
    (`_low`/`_high`, shown after the figure); --adk-version at ingest, or the
    session's trace, removes it.
    """
    from .. import api
    from ..columns import TURNS

    # read a run of sessions at a time: DuckDB never holds a whole store's turns at once
    runs = api.turns_in_runs(db, selection(app_name, user, session_id))
    if fmt is not Format.table:
        emit(runs, fmt, TURNS)
        return
    import polars as pl

    frame = pl.concat(list(runs))  # a table is laid out from all its rows
    frame, spec, said = _ranged(
        frame, TURNS, ("peak_occupancy", "cumulative_input_estimated"), "turn"
    )
    emit(frame, fmt, spec, footnote=(TURNS.footnote or "") + said)


@app.command()
@boundary
def calls(
    session_id: OptionalSessionArg = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every session's calls (or the --app/--user ones).")
    ] = False,
    turn: Annotated[int | None, typer.Option("--turn", help="Only this turn (1 = first).")] = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Per model call: window occupancy by role and cumulative input so far in the turn.

    The window is what ADK sent: rebuilt from the stored events with ADK's own rules
    (compaction summaries, other agents' messages as quoted text, orphaned calls
    dropped). A call whose visible content alone is estimated above 125% of its
    measured prompt is marked gauge_blind. Give a session id, or --all for the calls
    of every session (read from the stored facts: `-f csv` for a spreadsheet).
    Example: forensics calls incident --turn 2
    """
    from .. import api
    from ..columns import CALLS
    from ..errors import ForensicsError

    if (session_id is None) == (not every):
        raise ForensicsError(
            "give a session id or --all, not both" if every else "give a session id, or --all",
            hint="`forensics sessions` lists the session ids",
        )
    if every and turn is not None:
        raise ForensicsError("--turn needs one session", hint="forensics calls SESSION --turn N")
    if every:  # read a run of sessions at a time: DuckDB never holds them all at once
        runs = api.calls_in_runs(db, selection(app_name, user))
        if fmt is not Format.table:
            emit(runs, fmt, CALLS)
            return
        import polars as pl

        frame = pl.concat(list(runs))  # a table is laid out from all its rows
    else:
        frame = api.calls(db, selection(app_name, user, session_id), turn=turn)
    spec = CALLS
    if every and CALLS.table is not None:  # rows of many sessions: say whose
        spec = dataclasses.replace(CALLS, table=("session_id", *CALLS.table))
    note = _ESTIMATE_NOTE.format(ratio=_ratio_note(frame))
    note += "; user..summary: estimated tokens by role"
    if fmt is Format.table:
        frame, spec, said = _ranged(frame, spec, ("occupancy_estimated",), "call")
        note += said
    emit(frame, fmt, spec, footnote=note)


def _ranged(
    frame: pl.DataFrame, spec: Spec, figures: tuple[str, ...], what: str
) -> tuple[pl.DataFrame, Spec, str]:
    """For a table: where rows have a range because their session's ADK release is not
    known (`<figure>_low`/`_high` not empty), each such figure's range shown after it
    (the figure itself where the rule sets agree; totalled where the figure is) and a
    footnote sentence saying which boundaries cause it and what removes it."""
    import polars as pl

    figures = tuple(f for f in figures if frame[f"{f}_low"].is_not_null().any())
    if spec.table is None or not figures:
        return frame, spec, ""
    ranged = frame.filter(pl.any_horizontal(pl.col(f"{f}_low").is_not_null() for f in figures))
    said = (
        f"; {counted(ranged.height, what)} estimated differently by the ADK releases the"
        f" session may be from ({union_of(ranged['rules_range'])}): the figure is the"
        " newest kept rule set's,"
        " _low/_high the range (the figure where they agree); --adk-version at ingest or"
        " the session's trace removes it"
    )
    if state.get("columns"):  # the columns as chosen, each as stored (empty: no range)
        return frame, spec, said.replace(" (the figure where they agree)", "")
    table, totals = list(spec.table), list(spec.totals)
    for figure in figures:
        pair = (f"{figure}_low", f"{figure}_high")
        frame = frame.with_columns(pl.col(c).fill_null(pl.col(figure)) for c in pair)
        if figure in table:
            at = table.index(figure) + 1
            table[at:at] = pair
        if figure in totals:
            totals += pair
    return frame, dataclasses.replace(spec, table=tuple(table), totals=tuple(totals)), said


@app.command()
@boundary
def window(
    session_id: SessionArg,
    call_id: Annotated[str, typer.Argument(help="The call's id (`forensics calls SESSION`).")],
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """What one call's request contained: every event and part, in order, with its size.

    relayed parts are another agent's messages, calls and results, which ADK sends as
    quoted user text; a preamble part is ADK's own framing of such a message.
    """
    from .. import api
    from ..columns import WINDOW

    note = WINDOW.footnote or ""
    with api.using(db) as store:  # the store opened once for the parts and the calls
        scope = api.Scope(store, selection(app_name, user, session_id))
        frame = scope.window(call_id)
        calls = scope.calls() if fmt is Format.table else None
    if calls is not None:  # a call the possible releases rebuild apart: say whose parts
        mine = calls.filter(calls["call_id"] == call_id)
        if mine.height and mine["occupancy_estimated_low"][0] is not None:
            note += (
                "; the parts as the newest kept rule set rebuilds them: the ADK releases the"
                f" session may be from rebuild this call differently ({mine['rules_range'][0]}:"
                " `forensics calls` gives occupancy_estimated_low/_high); --adk-version at"
                " ingest or the session's trace removes it"
            )
    emit(frame, fmt, WINDOW, footnote=note)


@app.command()
@boundary
def growth(
    top: Annotated[
        int, typer.Option("--top", min=1, help="How many tool calls to show (1 or more).")
    ] = 10,
    session_id: Annotated[
        str | None, typer.Option("--session", help="Only this session.", callback=stored_name)
    ] = None,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Tool calls ranked by how much their result grew the next request, and its re-send cost.

    --since/--until: the tool calls of the sessions with an event in that time.

    latency_s is the time from the model request that issued the call to the stored
    result: ADK stamps a model event when its request starts, so it includes the
    model's own generation time (an upper bound on the tool's latency).

    Where a session's ADK release is not known and the releases it may be rebuild the
    two windows differently, the estimated windows and growth are a range
    (`_low`/`_high`, shown after the figure).
    """
    from .. import api
    from ..columns import GROWTH

    picked = selection(app_name, user, session_id, since, until)
    frame, spec = api.growth(db, picked, top=top), GROWTH
    note = GROWTH.footnote or ""
    if fmt is Format.table:
        figures = ("occupancy_before", "occupancy_after", "growth_tokens")
        frame, spec, said = _ranged(frame, GROWTH, figures, "tool call")
        note += said
    emit(frame, fmt, spec, footnote=note)


@app.command()
@boundary
def fidelity(
    session_id: OptionalSessionArg = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Rebuilt windows against ADK's own traces of the same requests (load them with
    `forensics ingest adk-trace`): function responses, characters by role, the gap.

    One row per traced call; a summary line counts the calls compared, those whose
    function responses are exactly the traced ones, and those within 2% in size.
    """
    from .. import api
    from ..columns import FIDELITY

    frame = api.fidelity(db, selection(app_name, user, session_id))
    summary = (
        f"{frame.height:,} traced calls compared: {int(frame['responses_exact'].sum()):,} "
        f"with exactly the traced function responses, {int(frame['within_2pct'].sum()):,} "
        f"within 2% of the traced size, {int((frame['chars_diff'] == 0).sum()):,} exact"
    )
    if frame.is_empty():
        summary = "no traced call in the selection: load traces with `forensics ingest adk-trace`"
    emit(frame, fmt, FIDELITY, footnote=(summary, FIDELITY.footnote or ""))
    if fmt is not Format.table:
        echo(summary, err=True)
