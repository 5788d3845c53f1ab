"""`forensics report incident` and `forensics demo`: the HTML incident report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import ForensicsError
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
)


def _write_incident(
    db: Path | None,
    session_id: str,
    out: Path,
    *,
    turn: int | None = None,
    show_content: bool = False,
    app_name: str | None = None,
    user: str | None = None,
    prices: Path | None = None,
) -> Path:
    from .. import api
    from ..reports.incident import build_incident
    from ..reports.render import write_incident

    if out.is_dir():
        out = out / f"incident-{session_id}.html"
    if not out.parent.is_dir():  # said before the report is built, not after
        raise ForensicsError(
            f"cannot write {out}: the folder {out.parent} does not exist",
            hint="create it first, or give --out an existing folder or file path",
        )
    with api.open_store(db) as store:
        context = build_incident(
            store,
            selection(app_name, user, session_id),
            turn=turn,
            show_content=show_content,
            prices=prices,
        )
    return write_incident(context, out)


@report_app.command("incident")
@boundary
def report_incident(
    session_id: SessionArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the HTML file.")],
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
    prices: PricesOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
) -> None:
    """Write the incident report for a session: one HTML file, no external requests.

    Headline, turns (with their cost), a chart of the window per call against
    cumulative input, the tool calls that grew it (and what re-sending them cost),
    compaction, the failure, what is measured, priced, estimated and open, and the
    method. Money is priced as `forensics cost` prices it (--prices, FORENSICS_PRICES).
    Example: forensics report incident incident --out incident.html
    """
    path = _write_incident(
        db,
        session_id,
        out,
        turn=turn,
        show_content=show_content,
        app_name=app_name,
        user=user,
        prices=prices,
    )
    echo(str(path))


@app.command()
@boundary
def demo(
    db: Annotated[
        Path | None,
        typer.Option("--db", help="Keep the demo store here (default: a temporary folder)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the report here (default: next to the store)."),
    ] = None,
) -> None:
    """The main job on the bundled sample data: load it, write the sample incident's report.

    The samples are real ADK output (sample_data/README.md). Prints the sessions it
    loaded, what they cost (their scripted model priced as Gemini 2.5 Flash,
    sample_data/prices.toml), the context failures the sample's OpenSearch documents
    and sessions show, and the path of the HTML report to open in a browser.
    """
    import tempfile

    from .. import api
    from ..columns import FAILURES, SESSIONS, cost_spec
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
    target = db or Path(tempfile.mkdtemp(prefix="forensics-demo-")) / "demo.duckdb"
    result = api.ingest_sqlite(target, samples / "adk_v1.db")
    echo(f"Loaded {result.rows_loaded:,} events from {samples / 'adk_v1.db'} into {target}\n")
    emit(api.sessions(target), Format.table, SESSIONS)
    # the sample's scripted model is priced as the model it imitates (sample_data/prices.toml)
    prices = samples / "prices.toml"
    echo("")
    emit(api.cost(target, prices=prices), Format.table, cost_spec("session"),
         f"USD, priced with {api.price_book(prices).sources}")  # fmt: skip
    # the same run as production would have indexed it: spans, app logs, LiteLLM payloads
    logged = sorted((samples / "opensearch").glob("*.ndjson"))
    loaded = api.ingest_opensearch_files(target, logged)
    echo(
        f"\nLoaded {loaded.rows_loaded:,} logged records (spans, logs, LiteLLM payloads) "
        f"from {samples / 'opensearch'}; the context failures they and the sessions show:\n"
    )
    emit(api.context_failures(target), Format.table, FAILURES)
    report = _write_incident(
        target, "incident", out or target.parent / "incident.html", prices=prices
    )
    echo(f"\nIncident report: {report}")
    echo(f"Next: forensics turns incident --db {target}")
