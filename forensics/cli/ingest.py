"""`forensics ingest ...`: load ADK events into the store, and say what was loaded."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import FactsInterrupted
from ..words import counted
from .common import (
    AppOption,
    DbOption,
    Format,
    FormatOption,
    FullOption,
    Progress,
    SessionOption,
    SinceOption,
    StatementTimeoutOption,
    UntilOption,
    UserOption,
    boundary,
    echo,
    emit,
    ingest_app,
    selection,
    stored_name,
    timeout_ms,
)

if TYPE_CHECKING:
    from ..api import IngestResult


def report_ingest(result: IngestResult, fmt: Format, db: Path | None) -> None:
    """The run's summary; a stop while it is printed is said as a stop of a run that
    was committed (it was said to have committed nothing)."""
    try:
        _report_ingest(result, fmt, db)
    except KeyboardInterrupt:
        raise FactsInterrupted.as_it_ended(result.rows_loaded) from None


def _report_ingest(result: IngestResult, fmt: Format, db: Path | None) -> None:
    # (each import where it is needed: an ingest that found nothing new imports no
    # frame library for its table; quick.py)
    from ..quick import default_db_path

    if fmt is not Format.table:
        from ..columns import INGEST_RUN

        emit(INGEST_RUN.frame([result.as_record()]), fmt, INGEST_RUN)
        _fail_if_nothing_readable(result)
        return
    target = db or default_db_path()
    echo(f"ingest {result.ingest_id}: {result.kind}:{result.location} -> {target}")
    noun = _noun(result.kind)
    if result.rows_read == 0:
        echo(f"no {noun}s read (nothing matched) in {result.seconds:.1f} s")
    elif result.rows_loaded == 0 and result.rows_skipped == 0 and result.rows_ignored:
        if result.rows_ignored == result.rows_read:
            echo(
                f"nothing loaded: none of the {_count(result.rows_read, noun)} read is about "
                f"agents (read, not stored) in {result.seconds:.1f} s"
            )
        else:
            echo(
                f"no new {noun}s: read {result.rows_read:,}, {result.rows_ignored:,} not "
                f"about agents (read, not stored), {result.rows_already_stored:,} already "
                f"stored, in {result.seconds:.1f} s"
            )
    elif result.rows_loaded == 0 and result.rows_skipped == 0:
        echo(
            f"no new {noun}s (read {result.rows_read:,}, all already stored) "
            f"in {result.seconds:.1f} s"
        )
    else:
        ignored = (
            f"{result.rows_ignored:,} not about agents (read, not stored), "
            if result.rows_ignored
            else ""
        )
        replaced = int(result.notes.get("replaced", 0))  # type: ignore[call-overload]
        over = f"replaced {replaced:,} stored that differed, " if replaced else ""
        echo(
            f"read {_count(result.rows_read, noun)}: loaded {result.rows_loaded - replaced:,} "
            f"new, {over}{result.rows_already_stored:,} already stored, {ignored}"
            f"skipped {result.rows_skipped:,} in {result.seconds:.1f} s"
        )
    if "records" in result.notes:
        kinds = ", ".join(f"{k} {v:,}" for k, v in result.notes["records"].items())  # type: ignore[attr-defined]
        shapes = ", ".join(f"{k} {v:,}" for k, v in result.notes["shapes"].items())  # type: ignore[attr-defined]
        echo(f"records: {kinds or 'none'}; read as: {shapes or 'nothing'}")
    if result.incremental and result.watermark is not None:
        from ..api import WATERMARK_OVERLAP_S
        echo(
            f"newest event: {_when(result.watermark)}; the next run of this source reads from "
            f"{WATERMARK_OVERLAP_S / 60:.0f} minutes before it (--full reads everything)"
        )
    if "rows_ahead" in result.notes:
        echo(
            f"warning: {counted(_int(result.notes['rows_ahead']), 'row')} dated after this "
            "ingest began (a writer's clock ahead?): the newest event is taken as no later "
            "than the ingest's start, and the next run reads them again",
            err=True,
        )
    for note in result.notes.get("not_read") or []:  # type: ignore[attr-defined]
        echo(f"note: {note}", err=True)  # an export's column or folder not read
    if "events_replaced" in result.notes:
        echo(
            f"{counted(_int(result.notes['events_replaced']), 'event')} stored before "
            "replaced: their sessions were read whole again (--full, a file changed since, or "
            "the run that stored them did not finish)"
        )
    if "sessions_unchanged" in result.notes:
        echo(
            f"{counted(_int(result.notes['sessions_unchanged']), 'session')} not read again: "
            "their files are unchanged since an ingest read them for this user (--full reads "
            "them)"
        )
    if "lines_not_events" in result.notes:
        counts = result.notes["lines_not_events"].items()  # type: ignore[attr-defined]
        kinds = ", ".join(f"{k} {v:,}" for k, v in counts)
        echo(f"{counted(_int(result.notes['lines']), 'line')} in "
             f"{counted(_int(result.notes['files']), 'file')}; not conversation, counted: "
             f"{kinds}")  # fmt: skip
    if "event_times" in result.notes:
        echo(f"event times: {result.notes['event_times']}")
    if "facts_failed" in result.notes:
        echo(f"warning: {result.notes['facts_failed']}", err=True)
    if "conflicting_events" in result.notes:
        echo(f"warning: {result.notes['conflicting_events']}", err=True)
    if "keyed_by_store" in result.notes:
        echo(str(result.notes["keyed_by_store"]))
    if "adk_release" in result.notes:
        echo(f"google-adk release: {result.notes['adk_release']}")
    if "adk_versions" in result.notes:
        releases = ", ".join(map(str, result.notes["adk_versions"]))  # type: ignore[call-overload]
        echo(f"traced by google-adk {releases}")
    for reason, count in result.skip_reasons.items():
        echo(f"  skipped {count:,}: {reason}")
    for skip in result.skips[:10]:
        echo(f"    {skip.locator}: {skip.reason}")
    if result.rows_skipped > 10 and Path(target).exists():
        echo(f"    ... `forensics ingests --skips {result.ingest_id}` lists up to 500")
    elif result.rows_skipped > 10:  # a store this run made and kept nothing in is removed
        echo(f"    ... and {result.rows_skipped - 10:,} more (the store made for them was not "
             "kept: nothing was loaded into it)")  # fmt: skip
    _fail_if_nothing_readable(result)


def _when(epoch: float) -> str:
    """A watermark as UTC ISO text; one no datetime holds (a store's from before the
    watermark was capped at the ingest's start: 1e300, year 10000) as its number."""
    from .output import iso

    try:
        return iso(datetime.fromtimestamp(epoch, UTC))
    except (OverflowError, ValueError, OSError):
        return f"{epoch!r} (epoch seconds, not a date)"


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _noun(kind: str) -> str:
    if kind == "adk-trace":
        return "traced request"
    if kind == "outcomes":
        return "outcome"
    return "document" if kind.startswith("opensearch") else "event"


def _count(n: int, noun: str) -> str:
    return counted(n, noun)


def _fail_if_nothing_readable(result: IngestResult) -> None:
    """One exit rule for every ingest: a run that loaded nothing because nothing it read
    could be loaded (every row skipped, none already stored) fails, after the report."""
    if result.nothing_loaded:
        what = _noun(result.kind)
        echo(
            f"Error: nothing loaded: every {what} read was skipped "
            f"({result.rows_skipped:,}; reasons above)",
            err=True,
        )
        raise typer.Exit(1)


AdkVersionOption = Annotated[
    str | None,
    typer.Option(
        "--adk-version",
        help="The google-adk release that wrote these sessions (X.Y.Z): its window rules "
        "apply. Default: the release a trace names, or one the rows prove (schema V0), "
        "else the newest modelled rules, labelled assumed.",
    ),
]


@ingest_app.command("adk-postgres")
@boundary
def ingest_postgres(
    dsn: Annotated[
        str,
        typer.Argument(
            help="PostgreSQL connection string, e.g. postgresql://user@host/db. Prefer PGPASSWORD "
            "or ~/.pgpass to a password in the string; it is never printed or stored."
        ),
    ],
    app_name: AppOption = None,
    user: UserOption = None,
    session: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    full: FullOption = False,
    statement_timeout: StatementTimeoutOption = 60.0,
    adk_version: AdkVersionOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read an ADK DatabaseSessionService database (schema V0 or V1) in PostgreSQL.

    Read-only transaction, statement_timeout, rows streamed through a server-side
    cursor; filters use ADK's (app_name, user_id, session_id, timestamp) index.
    A second run reads only from the newest event the first one saw.

    Example:
    forensics ingest adk-postgres "postgresql://forensics@db/adk" --app store --since 2026-10-01
    """
    from .. import api

    progress = Progress()
    result = api.ingest_postgres(
        db,
        dsn,
        selection(app_name, user, session, since, until),
        incremental=not full,
        statement_timeout_ms=timeout_ms(statement_timeout),
        progress=progress,
        adk_version=adk_version,
    )
    progress.done()
    report_ingest(result, fmt, db)


@ingest_app.command("adk-sqlite")
@boundary
def ingest_sqlite(
    path: Annotated[Path, typer.Argument(help="An ADK SQLite session file.")],
    app_name: AppOption = None,
    user: UserOption = None,
    session: SessionOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    full: FullOption = False,
    source_tz: Annotated[
        str | None,
        typer.Option(
            "--source-tz",
            help="The clock a schema V0 file's event times were written in (+05:30, UTC, "
            "Europe/Berlin); default: detected from the sessions' UTC times.",
        ),
    ] = None,
    adk_version: AdkVersionOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read an ADK SQLite file: DatabaseSessionService (V0 or V1) or SqliteSessionService.

    Schema V0 (ADK 1.x) stores event times in the writing machine's local time and
    session times in UTC; the writer's offset is detected by comparing the two (it
    is printed, and kept in the ledger's notes), or given with --source-tz.

    Example: forensics ingest adk-sqlite .adk/session.db --app store
    """
    from .. import api

    progress = Progress()
    result = api.ingest_sqlite(
        db,
        path,
        selection(app_name, user, session, since, until),
        incremental=not full,
        source_tz=source_tz,
        progress=progress,
        adk_version=adk_version,
    )
    progress.done()
    report_ingest(result, fmt, db)


@ingest_app.command("parquet")
@boundary
def ingest_parquet(
    folder: Annotated[Path, typer.Argument(help="A folder `forensics export parquet` wrote.")],
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read a Parquet export back into a store: every session, event, part, traced request
    and release note it holds that the store lacks, as one ingest.

    The export's manifest is checked first (format and version). Rows already stored
    are kept as they are. Example: forensics ingest parquet exports/week-47 --db team.duckdb
    """
    from .. import api

    report_ingest(api.ingest_parquet(db, folder), fmt, db)


@ingest_app.command("adk-trace")
@boundary
def ingest_trace(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="ADK trace files: the dev UI's export (a JSON list of spans) or OTLP JSON "
            "(an ExportTraceServiceRequest per file or per line, as a collector's file "
            "exporter writes them)."
        ),
    ],
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read ADK's own traces of model requests: what each request really held.

    Every `call_llm` span that names a stored event (gcp.vertex.agent.event_id) is
    kept as sizes: its parts by role, its function responses, the system instruction
    and tool declarations, the measured input tokens; never the request's text. The
    release in the request's header (or, in OTLP, the tracer's version) chooses the
    window rules for that session. ADK 2.10+ writes `call_llm` spans only with
    ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1 (its default semconv spans carry no request).
    Compare with `forensics fidelity`. Example: forensics ingest adk-trace traces/*.json
    """
    from .. import api

    report_ingest(api.ingest_traces(db, paths), fmt, db)


@ingest_app.command("adk-json")
@boundary
def ingest_json(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Session exports (web API camelCase or `adk run --save_session`), event lists "
            "or NDJSON files."
        ),
    ],
    app_name: Annotated[
        str | None,
        typer.Option("--app", help="app_name for files that do not say (event lists, NDJSON).",
                     callback=stored_name),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", help="user_id for files that do not say.", callback=stored_name),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Session id for files that do not say (default: the file's name "
            "up to its first dot).",
            callback=stored_name,
        ),
    ] = None,
    adk_version: AdkVersionOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read ADK JSON files: a Session, a list of events, or NDJSON; one file or many.

    Example: forensics ingest adk-json exports/*.json
    """
    from .. import api

    progress = Progress()
    result = api.ingest_json(
        db,
        paths,
        app=app_name,
        user=user,
        session=session,
        progress=progress,
        adk_version=adk_version,
    )
    progress.done()
    report_ingest(result, fmt, db)


@ingest_app.command("claude-code")
@boundary
def ingest_claude_code(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Claude Code config folders (holding projects/), projects folders, one "
            "project's folder or .jsonl files. Default: each folder of $CLAUDE_CONFIG_DIR "
            "(comma-separated), else ~/.config/claude and ~/.claude.",
            show_default=False,
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            help="user_id for these sessions: whose transcripts they are (default "
            "claude-code). Each project folder is an app.",
            callback=stored_name,
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Read every session again; by default a session whose files are unchanged "
            "(size and time) since an ingest read them for the same --user is passed over.",
        ),
    ] = False,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read Claude Code transcripts: every session, its subagents and compactions.

    One call per model response (message.id and requestId; the largest of its lines'
    usages, not the streaming placeholder), tool calls and results, compaction
    boundaries, failed requests (api_error lines). Lines of other kinds (progress,
    snapshots, summaries) are counted, not stored; a line that cannot be read is
    skipped with its file and line. Files are read line by line, whatever their size.
    A session whose files have not changed since an ingest read them is not read again
    (--full reads it); one that changed is read whole and replaces what was stored of it
    (it may have been read while Claude Code was still writing it).

    Example: forensics ingest claude-code ~/.claude/projects
    Example: CLAUDE_CONFIG_DIR=~/work-claude forensics ingest claude-code
    """
    from .. import quick

    # nothing new, the facts current: said without importing the analyses (quick.py)
    look = quick.look_claude_code(db, paths or [], user=user, full=full)
    result = look.result
    if result is None:
        from .. import api

        progress = Progress()
        result = api.ingest_claude_code(db, paths or [], user=user, full=full,
                                        progress=progress, layout=look.layout)  # fmt: skip
        progress.done()
    report_ingest(result, fmt, db)
