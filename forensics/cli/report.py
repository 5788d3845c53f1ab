"""`forensics report incident`, `report weekly` and `forensics demo`: the HTML reports."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ForensicsError
from ..reports.destination import file_name_part, report_destination, standard_stream
from ..sanitize import shell_word
from .common import (
    AppPick,
    DbOption,
    Format,
    PricesOption,
    SessionArg,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    report_app,
    selection,
    store_file,
    stored_name,
)


def _write_incident(
    db: Path | None,
    session_id: str,
    out: Path | None,
    *,
    turn: int | None = None,
    show_content: bool = False,
    app_name: str | None = None,
    user: str | None = None,
    prices: Path | None = None,
    whatif_cap: int | None = 16_000,
) -> Path | None:
    from .. import api
    from ..reports.incident import build_incident
    from ..reports.render import write_incident

    with api.open_store(db) as store:
        context = build_incident(
            store,
            selection(app_name, user, session_id),
            turn=turn,
            show_content=show_content,
            prices=prices,
            whatif_cap=whatif_cap,
        )
    return write_incident(context, out)


@report_app.command("weekly")
@boundary
def report_weekly(
    week: Annotated[
        str | None,
        typer.Option("--week", help="An ISO week, e.g. 2026-W47 (default: the newest "
                     "call's week)."),  # fmt: skip
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Instead of --week: from this time.")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="... to this time.")] = None,
    tz: Annotated[
        str, typer.Option("--tz", help="The time zone of the week's days (IANA name).")
    ] = "UTC",
    app_name: Annotated[
        str | None, typer.Option("--app", help="One app.", callback=stored_name)
    ] = None,
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="Tokens per tool result before it is flagged.")
    ] = 16_000,
    out: Annotated[
        str,
        typer.Option(
            "--out",
            help="The HTML file (- for standard output), or a folder for review-WEEK.html "
            "(an existing one, or a name ending in / to make).",
        ),
    ] = "review.html",
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="With --arm: compare two arms' tasks.")
    ] = None,
    arm: Annotated[str | None, typer.Option("--arm", help="The arm compared.")] = None,
    prices: PricesOption = None,
    db: DbOption = None,
) -> None:
    """The weekly cost review: one self-contained HTML page a team reads on Monday.

    The week's billed cost against the week before, by day (stacked by agent), agent,
    model and tool (results sent and re-sent), the sessions that cost most, where the
    money went, context failures, the tool calls that grew windows most and the tools
    over --budget, and cost per successful task where outcomes are loaded. ISO weeks
    (Monday 00:00) in --tz. Example: forensics report weekly --week 2026-W47 --out review.html
    """
    from datetime import UTC, datetime

    from .. import api
    from ..reports.render import write_weekly
    from ..reports.weekly import build_weekly

    if week is not None and (since or until):
        raise ForensicsError("give --week or --since/--until, not both")
    if (baseline is None) != (arm is None):
        raise ForensicsError("--baseline and --arm go together")
    chosen = selection(since=since, until=until)
    start = datetime.fromtimestamp(chosen.since, UTC) if chosen.since is not None else None
    end = datetime.fromtimestamp(chosen.until, UTC) if chosen.until is not None else None
    target = _destination(out, f"review-{file_name_part(week or 'week')}.html")
    with api.open_store(db) as store:
        context = build_weekly(store, week_label=week, tz=tz, since=start, until=end,
                               app=app_name, budget=budget, prices=prices,
                               arms=(baseline, arm) if baseline and arm else None)  # fmt: skip
    _said(write_weekly(context, target))


@report_app.command("incident")
@boundary
def report_incident(
    session_id: SessionArg,
    out: Annotated[
        str,
        typer.Option(
            "--out",
            "-o",
            help="The HTML file (- for standard output), or a folder for "
            "incident-SESSION.html (an existing one, or a name ending in / to make).",
        ),
    ],
    turn: Annotated[
        int | None, typer.Option("--turn", help="Chart only this turn (default: every turn).")
    ] = None,
    show_content: Annotated[
        bool,
        typer.Option(
            "--show-content",
            help="Include the first 2,000 characters of the "
            "largest tool results (default: names and sizes only).",
        ),
    ] = False,
    whatif_cap: Annotated[
        int,
        typer.Option(
            "--whatif-cap",
            help="The token cap the what-if box replays on the top growth call's tool "
            "(`forensics whatif --token-cap`); 0 leaves the box out.",
            min=0,
        ),
    ] = 16_000,
    prices: PricesOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
) -> None:
    """Write the incident report for a session: one HTML file, no external requests.

    Headline, turns (with their cost), a chart of the window per call against
    cumulative input, the tool calls that grew it (and what re-sending them cost), a
    what-if box (a token cap on the top growth call's tool: the saving, and the extra
    turns it pays for), compaction, the failure, what is measured, priced, estimated
    and open, and the method. Money is priced as `forensics cost` prices it (--prices,
    FORENSICS_PRICES).
    Example: forensics report incident incident --out incident.html
    """
    path = _write_incident(
        db,
        session_id,
        _destination(out, f"incident-{file_name_part(session_id)}.html"),
        turn=turn,
        show_content=show_content,
        app_name=app_name,
        user=user,
        prices=prices,
        whatif_cap=whatif_cap or None,
    )
    _said(path)


def _destination(out: str, default_name: str) -> Path | None:
    """--out's file (report_destination), or None for `-`: standard output."""
    return None if out == "-" else report_destination(out, default_name)


def _said(path: Path | None) -> None:
    """The report's path, the command's one line (none when the page went to standard
    output: `--out -`, `--out /dev/stdout`)."""
    if path is not None and not standard_stream(path):
        echo(str(path))


@app.command()
@boundary
def demo(
    db: Annotated[
        Path | None,
        typer.Option("--db", parser=store_file,
                     help="Keep the demo store here (default: a temporary folder)."),  # fmt: skip
    ] = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="Write the incident report here, the other two reports beside it; or a "
            "folder for all three (default: next to the store).",
        ),
    ] = None,
) -> None:
    """The main job on the bundled sample data: load it, write the sample incident's report.

    The ADK samples are real ADK output, the Claude Code transcripts generated in
    Claude Code's formats (sample_data/README.md). Prints the sessions it
    loaded, what they cost (their scripted model priced as Gemini 2.5 Flash,
    sample_data/prices.toml), the context failures the sample's OpenSearch documents
    and sessions show, a 16,000-token cap replayed on the incident (`whatif`), the
    bundled Claude Code transcripts (their growth, bill and prompt cache), and the paths of the HTML
    reports to open in a browser.
    """
    import tempfile

    from .. import api
    from ..columns import (
        FAILURES,
        GROWTH,
        SESSIONS,
        TASK_ARMS,
        WHATIF_TURNS,
        cache_spec,
        cost_spec,
    )
    from ..resources import resource_dir

    samples = resource_dir("sample_data")
    if db is not None and db.exists() and db.stat().st_size:
        held = api.sessions(db).height
        if held:
            raise ForensicsError(
                f"{db} already holds {held:,} session{'s' if held != 1 else ''}: the demo "
                "does not load its sample "
                "data into a store in use",
                hint="give `demo --db` a new file, or leave --db out for a temporary store",
            )
    # where the three reports go (--out's folder, else the store's), checked before
    # anything is loaded; a temporary store's folder is new
    report_out: Path | None = None
    if out is not None:
        report_out = report_destination(out, "incident.html")
    elif db is not None:
        report_out = report_destination(str(db.parent / "incident.html"), "incident.html")
    if report_out is not None:
        for name in ("review.html", "claude-code-incident.html"):  # (its folder may be new)
            report_destination(f"{report_out.parent}{os.sep}", name)
    target = db or Path(tempfile.mkdtemp(prefix="forensics-demo-")) / "demo.duckdb"
    report_out = report_out or target.parent / "incident.html"
    beside = report_out.parent
    result = api.ingest_sqlite(target, samples / "adk_v1.db")
    echo(f"Loaded {result.rows_loaded:,} events from {samples / 'adk_v1.db'} into {target}")
    echo("")
    emit(api.sessions(target), Format.table, SESSIONS)
    # the sample's scripted model is priced as the model it imitates (sample_data/prices.toml)
    prices = samples / "prices.toml"
    echo("")
    emit(api.cost(target, prices=prices), Format.table, cost_spec("session"),
         f"USD, priced with {api.price_book(prices).sources}")  # fmt: skip
    # the same run as production would have indexed it: spans, app logs, LiteLLM payloads
    logged = sorted((samples / "opensearch").glob("*.ndjson"))
    loaded = api.ingest_opensearch_files(target, logged)
    _heading(
        f"Loaded {loaded.rows_loaded:,} logged records (spans, logs, LiteLLM payloads) "
        f"from {samples / 'opensearch'}; the context failures they and the sessions show:"
    )
    emit(api.context_failures(target), Format.table, FAILURES)
    _heading("The founding document's guard, a 16,000-token cap, replayed on the incident:")
    whatif = api.whatif(target, "incident", token_cap=16_000, prices=prices)
    emit(whatif, Format.table, WHATIF_TURNS,
         f"guard: {whatif['guard'][0]}; {WHATIF_TURNS.footnote}")  # fmt: skip
    report = _write_incident(target, "incident", report_out, prices=prices)
    from ..reports.render import write_weekly
    from ..reports.weekly import build_weekly

    # the sample's second app: 12 tasks under two arms, and their outcomes
    tasks = api.ingest_sqlite(target, samples / "tasks.db")
    outcomes = api.load_outcomes(target, [samples / "outcomes.csv"])
    _heading(
        f"Loaded {tasks.rows_loaded:,} events of 12 tasks run under two arms from "
        f"{samples / 'tasks.db'}, and their {outcomes.rows_loaded} outcomes:"
    )
    emit(api.tasks(target, by="arm", prices=prices), Format.table, TASK_ARMS)
    review = write_weekly(
        build_weekly(target, prices=prices, arms=("conservative", "aggressive")),
        beside / "review.html",
    )
    # a coding agent's transcripts: Claude Code's, the same questions asked of them
    claude = api.ingest_claude_code(target, [samples / "claude_code"])
    coding = api.Selection(family="claude-code")
    _heading(
        f"Loaded {claude.rows_loaded:,} events of Claude Code transcripts from "
        f"{samples / 'claude_code'}; the tool results that grew their windows most:"
    )
    emit(api.growth(target, coding, top=3), Format.table, GROWTH)
    _heading("What they cost, as the provider bills it (every figure in the transcripts):")
    emit(api.cost(target, coding, by="day"), Format.table, cost_spec("day"),
         f"USD, priced with {api.price_book(None).sources}")  # fmt: skip
    _heading("What their prompt cache saved, and where its prefix broke (`forensics cache`):")
    emit(api.cache(target, coding, by="session"), Format.table, cache_spec("session"),
         "USD, priced as above; breaks inferred from each thread's previous call "
         "(docs/cache.md)")  # fmt: skip
    failed = api.context_failures(target, coding)
    claude_report = None
    if failed.height:
        session = failed["session_id"][0]
        claude_report = _write_incident(target, session, beside / "claude-code-incident.html")
    echo("")
    echo(f"Incident report: {report}")
    echo(f"Weekly review: {review}")
    if claude_report is not None:
        echo(f"Claude Code incident report: {claude_report}")
    words = [*_typed_forensics(), "turns", "incident", "--db", str(target)]
    echo(f"Next: {' '.join(map(shell_word, words))}")


def _heading(line: str) -> None:
    """A line of the demo's with a blank line before and after it."""
    echo("")
    echo(line)
    echo("")


def _typed_forensics() -> list[str]:
    """`forensics` as the user can type it here: the name when PATH finds this very
    program, else its path (after `make demo`, `.venv/bin/forensics` until the
    virtualenv is activated)."""
    program = Path(sys.argv[0])
    found = shutil.which("forensics")
    if program.name != "forensics" or (found and Path(found).resolve() == program.resolve()):
        return ["forensics"]
    return [str(program)]
