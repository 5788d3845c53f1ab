"""The `forensics` command: a thin layer over `forensics.api`.

polars, duckdb and psycopg are imported inside the commands, so `forensics --help`
starts without them.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from . import __version__
from .errors import ForensicsError

if TYPE_CHECKING:
    from .output import View
    from .store import IngestResult

app = typer.Typer(
    help="Offline forensics for tool-calling LLM agents: load ADK sessions into a local "
    "DuckDB store and read them back call by call.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # locals would print DSNs with passwords
    add_completion=False,
)
ingest_app = typer.Typer(
    help="Load ADK session events into the store (idempotent: the same event is stored once).",
    no_args_is_help=True,
)
app.add_typer(ingest_app, name="ingest")
report_app = typer.Typer(help="Self-contained HTML reports to share.", no_args_is_help=True)
app.add_typer(report_app, name="report")

_state = {"debug": False}


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        envvar="FORENSICS_DB",
        show_default="./forensics.duckdb",
        help="The DuckDB store file.",
    ),
]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="table, json or csv.")]
AppOption = Annotated[str | None, typer.Option("--app", help="Only this app_name.")]
UserOption = Annotated[str | None, typer.Option("--user", help="Only this user_id.")]
SessionOption = Annotated[str | None, typer.Option("--session", help="Only this session id.")]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", help="Events at or after this UTC time (2026-10-01 or 2026-10-01T12:00)."
    ),
]
UntilOption = Annotated[str | None, typer.Option("--until", help="Events before this UTC time.")]
FullOption = Annotated[
    bool,
    typer.Option("--full", help="Ignore the watermark of earlier runs and read everything again."),
]


def boundary(command):
    """The one error boundary: `Error: ...` and a hint on stderr, exit 1; traceback with --debug."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except ForensicsError as e:
            if _state["debug"]:
                raise
            typer.echo(f"Error: {e}", err=True)
            if e.hint:
                typer.echo(f"Hint: {e.hint}", err=True)
            raise typer.Exit(1) from None
        except BrokenPipeError:  # `forensics events x | head`: the reader left, not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            typer.echo("Interrupted: nothing from this run was committed.", err=True)
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except Exception as e:
            if _state["debug"]:
                raise
            typer.echo(f"Error: unexpected {type(e).__name__}: {e}", err=True)
            typer.echo("Hint: run again with --debug for the traceback, and report it", err=True)
            raise typer.Exit(2) from None

    return wrapper


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    _state["debug"] = debug
    if version:
        typer.echo(f"agent-forensics {__version__}")
        raise typer.Exit()


def _epoch(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ForensicsError(
            f"{option} {value!r} is not a date or time",
            hint="use ISO 8601 in UTC, e.g. 2026-10-01 or 2026-10-01T12:30:00",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _filters(app_name, user, session, since, until):
    from .sources.base import Filters

    filters = Filters(app_name, user, session, _epoch(since, "--since"), _epoch(until, "--until"))
    if filters.since is not None and filters.until is not None and filters.since >= filters.until:
        raise ForensicsError(f"--since {since} is not before --until {until}")
    return filters


class _Progress:
    """One line on stderr, rewritten at most twice a second, only on a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, result: IngestResult) -> None:
        now = time.monotonic()
        if self.enabled and now - self.last >= 0.5:
            self.last = now
            sys.stderr.write(
                f"\rread {result.rows_read:,} events, loaded {result.rows_loaded:,},"
                f" skipped {result.rows_skipped:,} "
            )
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\r\033[K")


def _report_ingest(result: IngestResult, fmt: Format, db: Path | None) -> None:
    from .output import iso
    from .store import WATERMARK_OVERLAP_S, default_db_path

    if fmt is not Format.table:
        import polars as pl

        from .output import View

        frame = pl.DataFrame([result.as_record()])
        _emit(frame, fmt, View(json_columns=("skip_reasons",)))
        return
    target = db or default_db_path()
    typer.echo(f"ingest {result.ingest_id}: {result.kind}:{result.location} -> {target}")
    if result.rows_loaded == 0 and result.rows_skipped == 0:
        typer.echo(
            f"no new events (read {result.rows_read:,}, all already stored) "
            f"in {result.seconds:.1f} s"
        )
    else:
        typer.echo(
            f"read {result.rows_read:,} events: loaded {result.rows_loaded:,} new, "
            f"{result.rows_already_stored:,} already stored, "
            f"skipped {result.rows_skipped:,} in {result.seconds:.1f} s"
        )
    if result.incremental and result.watermark is not None:
        newest = iso(datetime.fromtimestamp(result.watermark, UTC))
        typer.echo(
            f"newest event: {newest}; the next run of this source reads from "
            f"{WATERMARK_OVERLAP_S / 60:.0f} minutes before it (--full reads everything)"
        )
    for reason, count in result.skip_reasons.items():
        typer.echo(f"  skipped {count:,}: {reason}")
    for skip in result.skips[:10]:
        typer.echo(f"    {skip.locator}: {skip.reason}")
    if result.rows_skipped > 10:
        typer.echo(f"    ... `forensics ingests --skips {result.ingest_id}` lists up to 500")


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
    statement_timeout: Annotated[
        float,
        typer.Option(
            "--statement-timeout", help="Seconds any one statement may run on the server."
        ),
    ] = 60.0,
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
    from . import api

    progress = _Progress()
    result = api.ingest_postgres(
        db,
        dsn,
        _filters(app_name, user, session, since, until),
        incremental=not full,
        statement_timeout_ms=int(statement_timeout * 1000),
        progress=progress,
    )
    progress.done()
    _report_ingest(result, fmt, db)


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
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read an ADK SQLite file: DatabaseSessionService (V0 or V1) or SqliteSessionService.

    Example: forensics ingest adk-sqlite .adk/session.db --app store
    """
    from . import api

    progress = _Progress()
    result = api.ingest_sqlite(
        db,
        path,
        _filters(app_name, user, session, since, until),
        incremental=not full,
        progress=progress,
    )
    progress.done()
    _report_ingest(result, fmt, db)


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
        typer.Option("--app", help="app_name for files that do not say (event lists, NDJSON)."),
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="user_id for files that do not say.")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="Session id for files that do not say (default: the file's name "
            "up to its first dot).",
        ),
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read ADK JSON files: a Session, a list of events, or NDJSON; one file or many.

    Example: forensics ingest adk-json exports/*.json
    """
    from . import api

    progress = _Progress()
    result = api.ingest_json(db, paths, app=app_name, user=user, session=session, progress=progress)
    progress.done()
    _report_ingest(result, fmt, db)


def _emit(df, fmt: Format, view: View | None = None) -> None:
    from .output import View, to_csv, to_json, to_table

    view = view or View()
    if fmt is Format.json:
        extra = {"provenance": view.provenance} if view.provenance else None
        typer.echo(to_json(df, view.json_columns, extra))
    elif fmt is Format.csv:
        typer.echo(to_csv(df, view.json_columns), nl=False)
    else:
        typer.echo(
            to_table(df, view.columns, view.totals, view.footnote, view.json_columns), nl=False
        )


def _sessions_view() -> View:
    from .output import View

    return View(
        columns=(
            "session_id",
            "app_name",
            "user_id",
            "events",
            "turns",
            "errors",
            "prompt_tokens",
            "first_event_at",
            "last_event_at",
            "source",
        ),
        totals=("events", "turns", "errors", "prompt_tokens"),
        provenance={"prompt_tokens": "measured"},
        footnote="prompt_tokens: measured (provider usage_metadata), summed over the session; "
        "turns: invocations, compaction events not counted",
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
    from . import api

    _emit(api.sessions(db, app=app_name, user=user), fmt, _sessions_view())


@app.command()
@boundary
def events(
    session_id: Annotated[str, typer.Argument(help="The session id (see `forensics sessions`).")],
    app_name: Annotated[
        str | None, typer.Option("--app", help="The app, when the id exists in several.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="The user, when the id exists for several.")
    ] = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """A session's events in order: author, part kinds, characters, usage, errors, compaction.

    chars: characters of the stored content parts (text; function_call name + args;
    function_response name + response, as compact JSON). Token columns are the
    provider's usage_metadata (measured); empty where the event carried none.
    """
    from . import api
    from .output import View

    view = View(
        columns=(
            "timestamp",
            "author",
            "invocation_id",
            "kinds",
            "chars",
            "prompt_tokens",
            "candidates_token_count",
            "cached_tokens",
            "error_code",
            "is_compaction",
            "event_id",
        ),
        totals=("chars", "prompt_tokens", "candidates_token_count", "cached_tokens"),
        provenance={
            k: "measured"
            for k in ("chars", "prompt_tokens", "candidates_token_count", "cached_tokens")
        },
        footnote="chars: measured from stored content; *_tokens: measured (usage_metadata)",
    )
    _emit(api.events(session_id, db, app=app_name, user=user), fmt, view)


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
    from . import api

    if skips is not None:
        _emit(api.ingest_skips(skips, db), fmt)
        return
    from .output import View

    view = View(
        columns=(
            "ingest_id",
            "started_at",
            "status",
            "source",
            "rows_read",
            "rows_loaded",
            "rows_skipped",
            "skip_reasons",
            "error",
        ),
        totals=("rows_read", "rows_loaded", "rows_skipped"),
        json_columns=("filters", "skip_reasons"),
    )
    _emit(api.ingests(db), fmt, view)


SessionArg = Annotated[str, typer.Argument(help="The session id (see `forensics sessions`).")]
AppPick = Annotated[str | None, typer.Option("--app", help="The app, when the id is in several.")]
UserPick = Annotated[
    str | None, typer.Option("--user", help="The user, when the id exists for several.")
]
_ESTIMATE_NOTE = (
    "measured: provider usage_metadata; estimated: window characters / chars-per-token "
    "({ratio}); inferred: measured minus estimated visible content (system + tool schemas)"
)


def _ratio_note(frame) -> str:
    """The ratios behind the estimates, one per source, with the fit's error."""
    if frame.is_empty():
        return "no calls"
    notes = []
    for row in frame.unique("source", maintain_order=True).iter_rows(named=True):
        error = row["ratio_mean_abs_error"]
        fit = (
            f"fitted, mean error {error:.1%}"
            if row["ratio_source"] == "fitted"
            else "default: nothing measured to fit"
        )
        notes.append(f"{row['chars_per_token']:.2f} chars/token ({fit})")
    return "; ".join(dict.fromkeys(notes))


@app.command()
@boundary
def turns(
    session_id: Annotated[
        str | None, typer.Argument(help="One session; all sessions when left out.")
    ] = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, error.

    Cumulative input is the sum of the window over the turn's calls: what is billed as
    input again and again. Measured from usage where the calls have it, estimated
    from the reconstructed windows always.
    """
    from . import api
    from .output import View

    view = View(
        columns=(
            "session_id",
            "turn",
            "started_at",
            "calls",
            "tool_calls",
            "wall_s",
            "peak_occupancy",
            "cumulative_input_measured",
            "cumulative_input_estimated",
            "largest_tool_result",
            "largest_result_tokens_estimated",
            "error_code",
        ),
        totals=("calls", "tool_calls", "cumulative_input_measured", "cumulative_input_estimated"),
        provenance={
            "wall_s": "measured (first to last stored event of the turn)",
            "peak_occupancy_measured": "measured",
            "peak_occupancy_estimated": "estimated",
            "peak_occupancy": "measured where usage exists, else estimated",
            "cumulative_input_measured": "measured",
            "cumulative_input_estimated": "estimated",
            "largest_result_tokens_estimated": "estimated",
        },
        footnote="peak_occupancy: measured where usage exists, else estimated; "
        "cumulative_input_*: sum of the turn's call windows (measured / estimated)",
    )
    _emit(api.turns(session_id, db, app=app_name, user=user), fmt, view)


@app.command()
@boundary
def calls(
    session_id: SessionArg,
    turn: Annotated[int | None, typer.Option("--turn", help="Only this turn (1 = first).")] = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Per model call: window occupancy by role and cumulative input so far in the turn.

    The window is what ADK sent: rebuilt from the stored events with ADK's own rules
    (compaction summaries, other agents' messages as quoted text, orphaned calls
    dropped). Calls whose estimate and measurement differ by more than 25% are marked
    gauge_blind.
    """
    from . import api
    from .output import View

    frame = api.calls(session_id, db, turn=turn, app=app_name, user=user)
    table = frame.unnest("by_role") if fmt is Format.table else frame
    view = View(
        columns=(
            "turn",
            "timestamp",
            "agent",
            "kind",
            "occupancy_measured",
            "occupancy_estimated",
            "user",
            "model",
            "tool",
            "summary",
            "inferred_system",
            "cumulative_input_measured",
            "cumulative_input_estimated",
            "gauge_blind",
            "error_code",
            "call_id",
        )
        if fmt is Format.table
        else None,
        totals=("occupancy_measured", "occupancy_estimated"),
        provenance={
            "occupancy_measured": "measured",
            "occupancy_estimated": "estimated",
            "cumulative_input_measured": "measured",
            "cumulative_input_estimated": "estimated",
            "by_role": "estimated; inferred_system inferred",
            "estimate_error": "inferred",
        },
        footnote=_ESTIMATE_NOTE.format(ratio=_ratio_note(frame))
        + "; user..summary: estimated tokens by role",
    )
    _emit(table if fmt is Format.table else frame, fmt, view)


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
    from . import api
    from .output import View

    view = View(
        columns=(
            "event_id",
            "part_index",
            "part_kind",
            "author",
            "role",
            "relayed",
            "tool_name",
            "chars",
            "tokens_estimated",
        ),
        totals=("chars", "tokens_estimated"),
        provenance={
            "chars": "measured from stored content (relayed: ADK's rendering)",
            "tokens_estimated": "estimated",
        },
        footnote="chars: measured from the stored events; tokens_estimated: chars / ratio",
    )
    _emit(api.window(session_id, call_id, db, app=app_name, user=user), fmt, view)


@app.command()
@boundary
def growth(
    top: Annotated[int, typer.Option("--top", help="How many tool calls to show.")] = 10,
    session_id: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Tool calls ranked by how much their result grew the next request, and its re-send cost.

    latency_s is the time from the model request that issued the call to the stored
    result: ADK stamps a model event when its request starts, so it includes the
    model's own generation time (an upper bound on the tool's latency).
    """
    from . import api
    from .output import View

    view = View(
        columns=(
            "session_id",
            "turn",
            "tool_name",
            "latency_s",
            "rows",
            "tokens_per_row",
            "result_tokens_estimated",
            "occupancy_before",
            "occupancy_after",
            "growth_tokens",
            "resent_calls",
            "resent_tokens",
        ),
        totals=("resent_tokens",),
        provenance={
            "latency_s": "inferred (upper bound: includes model generation time)",
            "result_tokens_estimated": "estimated",
            "tokens_per_row": "estimated",
            "occupancy_before": "see occupancy_source",
            "occupancy_after": "see occupancy_source",
            "growth_tokens": "see occupancy_source; split by result size when parallel",
            "resent_tokens": "estimated",
        },
        footnote="occupancy_*: measured when both calls have usage (occupancy_source); "
        "resent_*: later calls that carried the result, and its estimated tokens times them",
    )
    _emit(api.growth(session_id, db, top=top, app=app_name, user=user), fmt, view)


@app.command()
@boundary
def compaction(
    session_id: Annotated[
        str | None, typer.Argument(help="One session; all sessions when left out.")
    ] = None,
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
    from . import api
    from .output import View

    sessions_view = View(
        columns=(
            "session_id",
            "compactions",
            "last_range_end",
            "retained_events_after",
            "retained_tokens_after",
            "largest_retained_tool_result",
            "largest_retained_result_tokens",
            "calls_over_threshold",
            "over_threshold_despite_compaction",
            "compaction_never_fired",
        ),
        totals=("compactions", "retained_events_after", "calls_over_threshold"),
        provenance={
            "retained_tokens_after": "estimated",
            "largest_retained_result_tokens": "estimated",
            "calls_over_threshold": "measured where usage exists, else estimated",
        },
        footnote="retained: raw events stored after the last range (what ADK's filters let "
        "through is sent verbatim); *_tokens: estimated from characters",
    )
    if by_session:
        frame = api.compaction_sessions(
            session_id, db, threshold_tokens=threshold_tokens, app=app_name, user=user
        )
        _emit(frame, fmt, sessions_view)
        return
    view = View(
        columns=(
            "session_id",
            "appended_after_turn",
            "start_timestamp",
            "end_timestamp",
            "raw_events_in_range",
            "tool_results_in_range",
            "tool_tokens_in_range",
            "summary_tokens",
            "summary_ratio",
            "overlap_with_previous",
            "retained_events_after",
            "summary_in_next_request",
            "raw_in_range_sent_next",
            "compaction_event_id",
        ),
        totals=(
            "raw_events_in_range",
            "tool_results_in_range",
            "tool_tokens_in_range",
            "summary_tokens",
        ),
        provenance={
            "raw_events_in_range": "measured (stored events)",
            "raw_tokens_in_range": "estimated",
            "tool_tokens_in_range": "estimated",
            "summary_tokens": "estimated",
            "summary_ratio": "estimated",
            "summarizer_prompt_tokens": "measured",
            "summarizer_output_tokens": "measured",
            "retained_tokens_after": "estimated",
            "summary_in_next_request": "inferred (window reconstruction)",
            "raw_in_range_sent_next": "inferred (window reconstruction)",
            "next_request_tokens_estimated": "estimated",
        },
        footnote="in range: still stored (compaction deletes nothing); *_next: what the next "
        "call's request held, reconstructed; tokens estimated from characters",
    )
    from .compaction import audit_ranges, audit_sessions

    rec = api.reconstruction(session_id, db, app=app_name, user=user)
    _emit(audit_ranges(rec), fmt, view)
    if fmt is Format.table:
        typer.echo("")
        _emit(audit_sessions(rec, threshold_tokens), fmt, sessions_view)


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
    from . import plan as planning
    from .output import View

    report = planning.plan_report(
        dsn,
        filters=_filters(app_name, user, session, since, until),
        analyze=analyze,
        extra_queries=query or [],
        statement_timeout_ms=int(statement_timeout * 1000),
    )
    view = View(
        columns=(
            "name",
            "top_node",
            "total_cost",
            "estimated_rows",
            "uses_index",
            "indexes_used",
            "seq_scan_relations",
            "hypothetical_cost",
            "advice",
        ),
        json_columns=planning.JSON_COLUMNS,
        provenance={
            "total_cost": "estimated (the planner's)",
            "estimated_rows": "estimated (the planner's)",
            "hypothetical_cost": "estimated (the planner's, hypothetical index)",
            "actual_ms": "measured (--analyze)",
        },
    )
    _emit(report.lookups, fmt, view)
    notes = [
        f"server: {report.location} (PostgreSQL {report.server_version}, "
        f"ADK schema {report.layout})",
        f"HypoPG: {report.hypopg_note}",
        *report.notes,
    ]
    if fmt is Format.table:
        typer.echo("")
        _emit(report.indexes, fmt)
        typer.echo("\n".join(notes))
    else:  # stdout stays the lookups alone
        typer.echo("\n".join(notes), err=True)


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
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
) -> None:
    """Write the incident report for a session: one HTML file, no external requests.

    Headline, turns, a chart of the window per call against cumulative input, the tool
    calls that grew it, compaction, the failure, what is measured, estimated and open,
    and the method. Example: forensics report incident incident --out incident.html
    """
    path = _write_incident(
        session_id, out, db, turn=turn, show_content=show_content, app=app_name, user=user
    )
    typer.echo(str(path))


def _write_incident(session_id: str, out: Path, db, **options) -> Path:
    from .incident import build_incident
    from .render import write_incident

    if out.is_dir():
        out = out / f"incident-{session_id}.html"
    return write_incident(build_incident(session_id, db, **options), out)


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
    loaded and the path of the HTML report to open in a browser.
    """
    import tempfile

    from . import api
    from .resources import resource_dir

    samples = resource_dir("sample_data")
    target = db or Path(tempfile.mkdtemp(prefix="forensics-demo-")) / "demo.duckdb"
    result = api.ingest_sqlite(target, samples / "adk_v1.db")
    typer.echo(f"Loaded {result.rows_loaded:,} events from {samples / 'adk_v1.db'} into {target}\n")
    _emit(api.sessions(target), Format.table, _sessions_view())
    report = _write_incident("incident", out or target.parent / "incident.html", target)
    typer.echo(f"\nIncident report: {report}")
    typer.echo(f"Next: forensics turns incident --db {target}")


def main() -> None:
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    app()


if __name__ == "__main__":
    main()
