"""`forensics whatif` and `forensics guards`: a tool-output guard replayed on stored
history before it ships, and the audit of where a guard is missing or off."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    PricesOption,
    SessionOption,
    SinceOption,
    UntilOption,
    UserPick,
    app,
    boundary,
    emit,
    selection,
)

if TYPE_CHECKING:
    import polars as pl

CharsPerTokenOption = Annotated[
    float,
    typer.Option(
        "--chars-per-token",
        help="The guard's own estimate: a payload's json.dumps length over this, rounded up "
        "(the founding guard's 3.0; `forensics calls` shows the ratio fitted on your usage).",
    ),
]


class Placement(StrEnum):
    boundary = "boundary"
    transcript = "transcript"


class WhatifBy(StrEnum):
    turn = "turn"
    session = "session"
    call = "call"
    result = "result"


@app.command()
@boundary
def whatif(
    row_cap: Annotated[
        int | None,
        typer.Option("--row-cap", help="Keep at most this many rows of a result (a row guard)."),
    ] = None,
    token_cap: Annotated[
        int | None,
        typer.Option(
            "--token-cap",
            help="Keep rows while the guard's estimate of the result stays within this many "
            "tokens, at least one row however large (applied after --page-size).",
        ),
    ] = None,
    page_size: Annotated[
        int | None,
        typer.Option("--page-size", help="Rows past this go first (the tool's page)."),
    ] = None,
    chars_per_token: CharsPerTokenOption = 3.0,
    tool: Annotated[
        str | None, typer.Option("--tool", help="Guard only this tool's results.")
    ] = None,
    context_limit: Annotated[
        int | None,
        typer.Option(
            "--context-limit",
            help="The model's window in tokens, for every failed call; default: the limit "
            "each context failure's error named.",
        ),
    ] = None,
    placement: Annotated[
        Placement,
        typer.Option(
            "--placement",
            help="boundary (the default): the guard cuts a result before its first send. "
            "transcript: the result goes out whole once and is rewritten in the history "
            "after, which breaks the cached prefix from it on: the request that first "
            "carries the cut result re-sends what it read beyond it, less the cut "
            "(invalidated_tokens), priced in counterfactual_*. Compare the two in money.",
            case_sensitive=False,
        ),
    ] = Placement.boundary,
    by: Annotated[
        WhatifBy,
        typer.Option(
            "--by",
            help="turn (the default), session, call, or result (each tool result: rows "
            "kept, fired, over budget).",
            case_sensitive=False,
        ),
    ] = WhatifBy.turn,
    session: SessionOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Replay a tool-output guard on stored history: what each result, window, turn and
    bill would have been under it, the context failures it would have prevented, and
    how many extra turns its saving pays for.

    The guard is the founding document's: rows past --page-size and --row-cap go; then
    --token-cap keeps rows while its estimate (json.dumps length / --chars-per-token)
    stays within the cap, and at least one row, so one row over budget still goes out.
    A result with no list of records is sized whole and kept whole (over_budget says
    when it is over). The one big assumption: the trajectory is held fixed, the same
    calls in the same order, each request smaller by what the guard took out of the
    results it carried. A saving is never shown without extra_turns_paid_for: the turns
    (model calls) the saving pays for if the agent pages for what it lost.

    Anchors (Claude Code): the strings a later call reproduced from a result (an Edit's
    old_string). With --token-cap, each result over the cap says how many of them a text
    cut to the cap loses by head/tail truncation and by an anchor-preserving elision of
    the same size (anchors_cut_head_tail, anchors_cut_elision; the table's note sums
    them, --columns or --format json shows them per row).

    Example: forensics whatif --row-cap 200
    Example: forensics whatif --token-cap 16000 --page-size 200 --tool get_order_history
    Example: forensics whatif --token-cap 16000 --session incident --format json
    Example: forensics whatif --token-cap 16000 --placement transcript --by session
    """
    from .. import api
    from ..columns import WHATIF_CALLS, WHATIF_RESULTS, WHATIF_SESSIONS, WHATIF_TURNS

    book = api.price_book(prices, db if db is not None else api.default_db_path())
    frame = api.whatif(
        db,
        selection(app_name, user, session, since, until),
        row_cap=row_cap,
        token_cap=token_cap,
        page_size=page_size,
        chars_per_token=chars_per_token,
        tool=tool,
        context_limit=context_limit,
        by=by.value,
        prices=book,
        placement=placement.value,
    )
    spec = {"turn": WHATIF_TURNS, "session": WHATIF_SESSIONS, "call": WHATIF_CALLS,
            "result": WHATIF_RESULTS}[by.value]  # fmt: skip
    guard = frame["guard"][0] if frame.height else None
    notes = [f"guard: {guard}" if guard else None, spec.footnote,
             f"USD priced with {book.sources}", _anchor_note(frame)]  # fmt: skip
    emit(frame, fmt, spec, "; ".join(n for n in notes if n))


def _anchor_note(frame: pl.DataFrame) -> str | None:
    """What the cap does to the anchors of the results shown, where any are known."""
    if "anchors" not in frame.columns or not frame["anchors"].sum():
        return None
    n = int(frame["anchors"].sum())
    text = f"anchors: {n:,} string{'s' if n != 1 else ''} later calls reproduced from these " \
        "results (inferred)"  # fmt: skip
    cut = frame["anchors_cut_head_tail"]
    if cut.null_count() < frame.height:
        text += (f"; at the cap, head/tail truncation would cut {int(cut.sum()):,}, an "
                 f"anchor-preserving elision {int(frame['anchors_cut_elision'].sum()):,} "
                 "(estimated; docs/whatif.md, Anchors)")  # fmt: skip
    return text


@app.command()
@boundary
def guards(
    budget: Annotated[
        int,
        typer.Option("--budget", help="The token budget a result is held against."),
    ] = 16_000,
    row_cap: Annotated[
        int,
        typer.Option("--row-cap", help="The row guard whose blind spots are counted."),
    ] = 200,
    chars_per_token: CharsPerTokenOption = 3.0,
    session: SessionOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Per tool: which results exceeded a budget, how often and by how much, and where
    a guard is missing or off.

    Results over --budget (count, max, p95), those a row guard of --row-cap rows lets
    through, dict payloads (a row guard reads them as empty), single rows over the
    budget on their own, tokens per row, for flat rows (one scalar per column) a
    markdown table's size against JSON, and (Claude Code) the results that carry anchors:
    strings later calls reproduced from them, which a cap must keep. All on the guard's
    estimate: json.dumps length over --chars-per-token.

    Example: forensics guards --budget 16000
    """
    from .. import api
    from ..columns import GUARDS

    frame = api.guards(
        db,
        selection(app_name, user, session, since, until),
        budget=budget,
        row_cap=row_cap,
        chars_per_token=chars_per_token,
    )
    import polars as pl

    from ..sanitize import visible

    anchored = (  # per tool, whatever its app
        frame.filter(pl.col("anchors") > 0).group_by("tool_name")
        .agg(pl.col("anchors").sum(), pl.col("anchored_results").sum())
        .sort(["anchors", "tool_name"], descending=[True, False])
    )  # fmt: skip
    carry = ", ".join(
        f"{visible(tool)}: {n:,} in {results:,} result{'s' if results != 1 else ''}"
        for tool, n, results in anchored.iter_rows()  # a name from data: one line, shown
    )
    note = f"; results that carry anchors (strings later calls reproduced): {carry} " \
        "(inferred)" if carry else ""  # fmt: skip
    emit(frame, fmt, GUARDS, f"budget {budget:,} tokens; {GUARDS.footnote}{note}")
