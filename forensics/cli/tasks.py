"""`forensics outcomes load`, `tasks`, `compare`, `breakeven`: what a successful task
cost, whether one arm beat another, and what a tool-output saving can pay for."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    PricesOption,
    SinceOption,
    UntilOption,
    UserPick,
    app,
    boundary,
    emit,
    selection,
)
from .ingest import report_ingest

outcomes_app = typer.Typer(
    help="Task outcomes: which sessions ran which task, under which arm, and succeeded.",
    no_args_is_help=True,
)
app.add_typer(outcomes_app, name="outcomes")


@outcomes_app.command("load")
@boundary
def load(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="CSV or JSON rows (session_id, [invocation_id], task_id, [arm], success "
            "or score), or ADK eval results (*.evalset_result.json)."
        ),
    ],
    arm: Annotated[
        str | None,
        typer.Option("--arm", help="The arm of rows that name none (an eval run's config)."),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", help="A score at or above it is a success."),
    ] = None,
    adk_eval: Annotated[
        bool,
        typer.Option(
            "--adk-eval",
            help="Every file must be ADK's EvalSetResult JSON (another is a skip); without "
            "it they are still recognised by their shape.",
        ),
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="A row for a stored execution that says otherwise (another task, arm, "
            "success or score) replaces it; without it such a row is a skip naming what "
            "differs.",
        ),
    ] = False,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Load task outcomes, keyed by session (or by turn with invocation_id).

    Each eval case of an ADK EvalSetResult is one execution: its session, its task
    `<eval_set_id>/<eval_id>`, success from final_eval_status. A row whose session (or
    turn) is not in the store, a repeated execution and a bad value are each a skip
    naming the file and row. A stored execution is never rewritten unasked: a row that says the
    same is already stored, one that differs is a skip until --replace.
    Example: forensics outcomes load runs/*.evalset_result.json --arm aggressive
    """
    from .. import api

    report_ingest(
        api.load_outcomes(
            db, paths, arm=arm, threshold=threshold, eval_only=adk_eval, replace=replace
        ),
        fmt,
        db,
    )


class TasksBy(StrEnum):
    task = "task"
    arm = "arm"


@app.command()
@boundary
def tasks(
    by: Annotated[
        TasksBy,
        typer.Option("--by", help="task: per task and arm (the default); arm: per arm."),
    ] = TasksBy.task,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Cost per successful task, success rate, and trajectory length (model calls and
    ADK turns per execution), from the loaded outcomes.

    Cost per successful task is the whole cost, failures included, over the successes.
    Example: forensics tasks --by arm
    """
    from .. import api
    from ..columns import TASK_ARMS, TASKS

    chosen = selection(app_name, user, None, since, until)
    frame = api.tasks(db, chosen, by=by.value, prices=prices)
    emit(frame, fmt, TASK_ARMS if by is TasksBy.arm else TASKS)


@app.command()
@boundary
def compare(
    baseline: Annotated[str, typer.Option("--baseline", help="The arm to compare against.")],
    arm: Annotated[str, typer.Option("--arm", help="The arm compared.")],
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Paired arms: for each task run under both, the relative cost difference; their
    mean with a percentile bootstrap interval (10,000 resamples, seeded), cost per
    successful execution against the baseline, success rates, trajectory lengths.

    Tasks run under one arm only are listed, never mixed in; with fewer than 10 pairs
    the note says the interval is too wide to decide.
    Example: forensics compare --baseline conservative --arm aggressive
    """
    from .. import api
    from ..columns import TASK_COMPARE

    chosen = selection(app_name, user, None, since, until)
    emit(api.compare(db, baseline, arm, chosen, prices=prices), fmt, TASK_COMPARE)


@app.command()
@boundary
def breakeven(
    agent: Annotated[
        str | None, typer.Option("--agent", help="One agent (default: each, and all).")
    ] = None,
    reduction: Annotated[
        float,
        typer.Option(
            "--reduction",
            min=0.0,
            max=1.0,
            help="The cut of the tool-output slice to price (0.384: the cost study's).",
        ),
    ] = 0.384,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """How many extra model calls a tool-output saving can pay for before it is lost.

    From the bill (low bounds): the share that is cache traffic (s_cache), the share
    that is tool output (s_tool: its first sends, as `cost --share` shows), and the mean
    cost of one more call (a session's last call's input). The saving r * s_tool pays
    for one more call (the cost study's "turn") once a trajectory is s_cache / (r *
    s_tool) calls long. An unpriced call makes the money unknown, never 0.
    Example: forensics breakeven --reduction 0.4
    """
    from .. import api
    from ..columns import BREAKEVEN

    chosen = selection(app_name, user, None, since, until)
    emit(api.breakeven(db, chosen, agent=agent, reduction=reduction, prices=prices), fmt,
         BREAKEVEN)  # fmt: skip
