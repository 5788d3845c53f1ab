"""What every command shares: the Typer apps, options defined once, the error boundary,
output in the three formats, the ingest progress line.

polars, duckdb and psycopg are imported inside the commands, so `forensics --help`
starts without them.
"""

from __future__ import annotations

import contextvars
import errno
import functools
import inspect
import itertools
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from ..errors import FactsInterrupted, ForensicsError, cancelled, stops_held, waited
from ..sanitize import storable, visible

if TYPE_CHECKING:
    from concurrent.futures import Future

    import polars as pl

    from ..api import IngestResult
    from ..provenance import Spec
    from ..selection import Selection
    from .output import Footnote

app = typer.Typer(
    help="Offline forensics for tool-calling LLM agents: load ADK sessions and traces, "
    "OpenSearch logs and Claude Code transcripts into a local DuckDB store and read them "
    "back call by call.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # locals would print DSNs with passwords
    add_completion=False,
)
ingest_app = typer.Typer(
    help="Load agent records into the store: ADK sessions (PostgreSQL, SQLite, JSON), ADK "
    "traces, OpenSearch documents, Claude Code transcripts, a Parquet export (idempotent: "
    "the same event is stored once).",
    no_args_is_help=True,
)
report_app = typer.Typer(help="Self-contained HTML reports to share.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(report_app, name="report")
export_app = typer.Typer(
    help="Write the store's tables for other engines and tools.", no_args_is_help=True
)
app.add_typer(export_app, name="export")

# --debug, --workers, and the running command's StageProgress
state: dict[str, Any] = {"debug": False, "workers": None}


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


# --- options, defined once ----------------------------------------------------

def store_file(given: str) -> Path:
    """--db (or FORENSICS_DB) as typed: a store is a file, and a name ending in `/` names a
    folder, which DuckDB would make a store file of that name (`--db newdb/` wrote one)."""
    if given == "-":
        raise typer.BadParameter("'-' is no store: a store is a file, not standard input or output")
    if given.endswith(("/", os.sep)):
        raise typer.BadParameter(
            f"{given!r} ends in '/', a folder: the store is a file "
            f"(e.g. {given.rstrip('/' + os.sep) or '.'}/forensics.duckdb)"
        )
    return Path(given)


DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        parser=store_file,
        envvar="FORENSICS_DB",
        show_default="./forensics.duckdb",
        help="The DuckDB store file.",
    ),
]
FormatOption = Annotated[
    Format, typer.Option("--format", "-f", help="table, json or csv.", case_sensitive=False)
]


def stored_name(value: str | None) -> str | None:
    """A name given on the command line (an app, a user, a session id) as the store keeps
    it: a byte no encoding decodes, which the shell passes on as it is (a name taken from
    a file's, say), written as its escape (`sanitize.storable`), as the store writes it."""
    return value if value is None else storable(value)


# filters a loader pushes into the source's SQL
AppOption = Annotated[
    str | None, typer.Option("--app", help="Only this app_name.", callback=stored_name)
]
UserOption = Annotated[
    str | None, typer.Option("--user", help="Only this user_id.", callback=stored_name)
]
SessionOption = Annotated[
    str | None, typer.Option("--session", help="Only this session id.", callback=stored_name)
]
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
StatementTimeoutOption = Annotated[
    float,
    typer.Option("--statement-timeout", help="Seconds any one statement may run on the server."),
]


def timeout_ms(seconds: float) -> int:
    """--statement-timeout in milliseconds, as PostgreSQL takes it: at least one (0 is no
    limit there, and a value under a millisecond rounded to it), at most its largest."""
    ms = round(seconds * 1000)
    if ms < 1:
        raise ForensicsError(
            f"--statement-timeout {seconds:g} is under a millisecond: PostgreSQL would run "
            "every statement without a limit",
            hint="give seconds, e.g. --statement-timeout 60",
        )
    if ms > 2**31 - 1:
        raise ForensicsError(f"--statement-timeout {seconds:g} is past PostgreSQL's largest "
                             "(2,147,483 seconds)")  # fmt: skip
    return ms
# which stored session a session id means, when it exists in several apps or users
PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="A TOML file of dated rates and aliases that take precedence over genai-prices "
        "(docs/cost.md); default: the file $FORENSICS_PRICES names, else the one the store "
        "keeps (`forensics prices --keep`).",
    ),
]
SourceOption = Annotated[
    str | None,
    typer.Option(
        "--source",
        help="Only sessions this agent software wrote: adk or claude-code (default: both).",
    ),
]
SessionArg = Annotated[
    str, typer.Argument(help="The session id (see `forensics sessions`).", callback=stored_name)
]
OptionalSessionArg = Annotated[
    str | None,
    typer.Argument(help="One session; all sessions when left out.", callback=stored_name),
]
AppPick = Annotated[
    str | None,
    typer.Option("--app", help="The app, when the id is in several.", callback=stored_name),
]
UserPick = Annotated[
    str | None,
    typer.Option("--user", help="The user, when the id exists for several.", callback=stored_name),
]


def selection(
    app_name: str | None = None,
    user: str | None = None,
    session: str | None = None,
    since: str | None = None,
    until: str | None = None,
    family: str | None = None,
) -> Selection:
    from ..selection import Selection

    return Selection.parse(app_name, user, session, since, until, family)


# --- the one error boundary -----------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])


def echo(message: str, *, err: bool = False, nl: bool = True) -> None:
    """One line for people: text from data in it has its control and bidi characters
    shown (sanitize.visible), newlines and tabs too, so nothing a session stored or a
    file's name holds can drive the terminal or print a line of its own (`Error: ...`).
    Lines are echoed one at a time; `echo("")` is a blank one."""
    typer.echo(visible(message), err=err, nl=nl)


_NO_SPACE = os.strerror(errno.ENOSPC)  # "No space left on device"


def _stopped_code() -> int:
    """130 for Ctrl-C (SIGINT), 143 for SIGTERM: 128 and the signal, as a shell says."""
    return 143 if state.get("terminated") else 130


def _said_stopped(stages: StageProgress, kept: FactsInterrupted | None) -> NoReturn:
    """Ctrl-C or SIGTERM said, with its exit code: what `kept` says was kept, else that
    nothing was committed."""
    stages.done()
    how = "Terminated" if state.get("terminated") else "Interrupted"
    said = kept.message if kept is not None else "nothing from this run was committed."
    typer.echo(f"{how}: {said}", err=True)
    raise typer.Exit(_stopped_code()) from None


def _kept_account(error: BaseException) -> FactsInterrupted | None:
    """The account of what a stop kept (FactsInterrupted) that `error` is, or that it
    replaced: a second stop raised while the first's was on its way out (its clean-up,
    a memory cap set back) took its place, and a committed ingest was said to have
    committed nothing (6 of 94 trials of a sweep of stops). Python keeps the replaced
    one as the new one's context."""
    seen: set[int] = set()
    at: BaseException | None = error
    while at is not None and id(at) not in seen:
        if isinstance(at, FactsInterrupted):
            return at
        seen.add(id(at))
        at = at.__context__
    return None


def boundary(command: F) -> F:
    """`Error: ...` and a hint on stderr, exit 1; traceback only with --debug. A command
    that prints a frame (it takes --format) takes --columns too."""
    signature = inspect.signature(command, eval_str=True)
    chooses = "fmt" in signature.parameters

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ..settings import progress_to, workers_to  # (not api: quick.py)

        columns = kwargs.pop("columns", None)
        stages = StageProgress()
        state["stages"] = stages
        try:
            state["columns"] = _column_list(columns) if chooses else None
            _numbers_in_range(kwargs)
            _home_expanded(kwargs)
            with (
                progress_to(stages if stages.enabled else None),
                workers_to(state.get("workers")),
            ):
                return command(*args, **kwargs)
        except ForensicsError as e:
            stages.done()
            if state["debug"]:
                raise
            echo(f"Error: {e}", err=True)  # (one line each: echo shows a newline in them)
            if e.hint:
                echo(f"Hint: {e.hint}", err=True)
            raise typer.Exit(1) from None
        except BrokenPipeError:  # `forensics events x | head`: the reader left, not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(0) from None
        except KeyboardInterrupt as e:
            _said_stopped(stages, _kept_account(e))
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except (Exception, _panic()) as e:  # (a panic: polars' Rust code's assertion)
            stages.done()
            try:
                from ..quick import is_interrupt  # (not api: its imports, during a stop)

                interrupted = is_interrupt(e)  # DuckDB's own, from inside a query
            except Exception:  # (that import failed too: memory short, as `e` may say)
                interrupted = False
            if interrupted:
                _said_stopped(stages, _kept_account(e))
            if state["debug"]:
                raise
            if isinstance(e, OSError) and e.errno in _PATH_ERRORS and e.filename:  # a path refused
                echo(f"Error: cannot use {e.filename}: {e.strerror}", err=True)
                echo(f"Hint: {_PATH_ERRORS[e.errno]}", err=True)
                raise typer.Exit(1) from None
            if _out_of_memory(e):
                detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                echo(f"Error: out of memory ({detail})", err=True)
                echo("Hint: a store's work is undone or kept as the ingest's ledger says "
                     "(`forensics ingests`); give the command more memory (ulimit -v, a "
                     "container's limit), or fewer processes (--workers 1)", err=True)  # fmt: skip
                raise typer.Exit(1) from None
            if _too_many_files(e):
                echo(f"Error: too many open files ({e})", err=True)
                echo("Hint: raise the limit (`ulimit -n 1024`) and run it again", err=True)
                raise typer.Exit(1) from None
            if isinstance(e, OSError) and e.errno == errno.ENOSPC and not e.filename:
                # (Python's own write: the output, a pipe or file to a full disk; the
                # store's writes are DuckDB's, whose errors are no OSError)
                echo(f"Error: cannot write the output: {e.strerror}", err=True)
                echo("Hint: free some space where the output goes and run it again (what "
                     "the command did before it printed, an ingest's load or a report's "
                     "file, is kept)", err=True)  # fmt: skip
                raise typer.Exit(1) from None
            if _NO_SPACE in str(e):  # DuckDB's or the system's: the disk is full
                echo(f"Error: the disk is full: {e}", err=True)
                typer.echo("Hint: free some space (or give --db a store on another disk)"
                           " and run it again: what was committed before is kept",
                           err=True)  # fmt: skip
                raise typer.Exit(1) from None
            echo(f"Error: unexpected {type(e).__name__}: {e}", err=True)
            typer.echo("Hint: run again with --debug for the traceback, and report it", err=True)
            raise typer.Exit(2) from None
        finally:
            stages.done()
            state.pop("stages", None)

    wrapper.__doc__ = flowed(command.__doc__)
    if chooses:
        params = list(signature.parameters.values())
        at = [p.name for p in params].index("fmt") + 1
        params.insert(at, inspect.Parameter("columns", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=None, annotation=ColumnsOption))  # fmt: skip
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


ColumnsOption = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="Only these columns, in this order (names as the JSON gives them, separated "
        "by commas).",
    ),
]


def _column_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ForensicsError("--columns names no column", hint="e.g. --columns session_id,events")
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ForensicsError(f"--columns names {twice!r} twice", hint="name each column once")
    return names


_LARGEST = 2**63 - 1  # what DuckDB's BIGINT and polars' Int64 hold
# a path the system refuses to use (too long, not this user's, a read-only disk): said
_PATH_ERRORS = {  # a path the system refused, and what to give instead
    errno.ENAMETOOLONG: "give a shorter path",
    errno.EACCES: "give a path this user may write (or read)",
    errno.EPERM: "give a path this user may write (or read)",
    errno.EROFS: "give a path on a disk that is not read-only",
}


def _out_of_memory(error: BaseException) -> bool:
    """The system or DuckDB refused memory (an address-space limit, a container's), by
    the error's kind first (a message that quotes data must not pass for one): Python's
    MemoryError, DuckDB's OutOfMemoryException or its failure to allocate a block, a
    library the loader could not map, a thread the system would not start (memory, or
    a limit on processes)."""
    text = str(error)
    return (isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryException"
            or (_from_duckdb(error) and "ailed to allocate" in text)
            or (isinstance(error, ImportError) and "failed to map segment" in text)
            or (isinstance(error, RuntimeError) and text == "can't start new thread"))  # fmt: skip


def _too_many_files(error: BaseException) -> bool:
    """The open-files limit met (`ulimit -n`): Python's error, or polars' panic or
    DuckDB's error saying so (their own kinds: a message quoting data is neither)."""
    if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
        return True
    said = _from_duckdb(error) or isinstance(error, _panic())
    return said and "Too many open files" in str(error)


def _from_duckdb(error: BaseException) -> bool:
    """An error of DuckDB's own kinds (asked by module: duckdb need not be imported)."""
    return type(error).__module__.split(".")[0] in ("duckdb", "_duckdb")


def _home_expanded(options: dict[str, Any]) -> None:
    """A path given as `~/...` (from a variable or a config file, or `--db=~/x`, where no
    shell expands it) is the user's home: DuckDB opens stores and writes exports there
    itself, so Python's own reads and writes of the same path must too (an export was
    split between `~/x` and a folder named `~`)."""
    from ..settings import home_expanded

    for name, value in options.items():
        if isinstance(value, Path):
            options[name] = home_expanded(value)
        elif isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            options[name] = [home_expanded(v) for v in value]


def _panic() -> type[BaseException]:
    """polars' PanicException (a BaseException: its Rust code's assertion), asked for
    only when something was raised (polars is not imported by every command)."""
    from polars.exceptions import PanicException

    return PanicException


def _numbers_in_range(options: dict[str, Any]) -> None:
    """A number given to an option that no query can hold (past a 64-bit integer) or that
    is no number (NaN, an infinity) is refused, naming the option."""
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and abs(value) > _LARGEST:
            raise ForensicsError(f"{flag} {value:,} is past the largest number it takes "
                                 f"({_LARGEST:,})")  # fmt: skip
        if isinstance(value, float) and not math.isfinite(value):
            raise ForensicsError(f"{flag} {value} is not a number it takes")


def _chosen(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame's columns --columns names, in its order; an unknown name is an error
    that lists the known ones."""
    names = state.get("columns")
    if not names:
        return frame
    unknown = [n for n in names if n not in frame.columns]
    if unknown:
        raise ForensicsError(
            f"--columns: no column {unknown[0]!r} here",
            hint="the columns are " + ", ".join(frame.columns),
        )
    return frame.select(names)


_OWN_LINE = re.compile(r"(Example|Examples|e\.g\.:|- |\* |forensics |\s)")


def flowed(doc: str | None) -> str | None:
    """A docstring whose paragraphs are reflowed by the terminal: typer (rich mode)
    keeps the source's line breaks, so `--help` was wrapped at 88 columns in a wide
    terminal and broke again in a narrow one. Lines join within a paragraph; an
    example, a list item or an indented line keeps a line of its own."""
    if doc is None:
        return None
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines: list[str] = []
        for line in paragraph.splitlines():
            if lines and not _OWN_LINE.match(line):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


# --- output -------------------------------------------------------------------


def emit(
    frame: pl.DataFrame | Iterator[pl.DataFrame],
    fmt: Format,
    spec: Spec | None = None,
    footnote: Footnote = None,
) -> None:
    """The frame on stdout: an aligned table with totals, JSON with provenance, or CSV,
    formatted a column at a time and written in chunks (cli/writers.py), of a frame or of
    its runs one after the other (api.calls_in_runs; a table joins them first)."""
    from .writers import write_csv, write_json, write_table

    if isinstance(frame, Iterator):
        # the first run opens the store (its facts brought up to date, its ratios fitted,
        # with their progress line) before a byte of output
        first = _chosen(next(frame))
        frame = itertools.chain([first], map(_chosen, _read_ahead(frame)))
    else:
        frame = _chosen(frame)
    chosen: list[str] | None = state.get("columns")
    stages = state.get("stages")
    if isinstance(stages, StageProgress):
        stages.done()  # the progress line goes before the output comes
    json_columns = [c for c in (spec.json_columns if spec else ()) if not chosen or c in chosen]
    if fmt is Format.json:
        extra = {"provenance": spec.provenance} if spec and spec.provenance else None
        write_json(frame, _echo_bytes, json_columns, extra)
    elif fmt is Format.csv:
        write_csv(frame, _echo_bytes, json_columns)
    else:
        import polars

        if not isinstance(frame, polars.DataFrame):
            frame = polars.concat(list(frame))
        unnest = [c for c in (spec.unnest if spec else ()) if c in frame.columns]
        table = frame.unnest(*unnest) if unnest else frame
        if chosen and unnest:  # a struct column chosen is shown as its fields, as unnested
            fields = {c: [f.name for f in frame.schema[c].fields] for c in unnest}  # type: ignore[attr-defined]
            chosen = [name for c in chosen for name in fields.get(c, [c])]
        write_table(
            table,
            _echo_bytes,
            chosen or (spec.table if spec else None),
            [t for t in (spec.totals if spec else ()) if not chosen or t in chosen],
            footnote or (spec.footnote if spec else None),
            json_columns,
            _terminal_width(),
        )


def _terminal_width() -> int | None:
    """A terminal's width, when stdout is one: a table wider than it loses columns from
    the right (said in its footnote); a pipe or a file gets every column."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return max(shutil.get_terminal_size().columns, 40)


def _read_ahead(frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """The frames, each read (by DuckDB, in a thread) while the one before is written (by
    polars): at 1,000,000 events the runs of calls --all -f csv were read and written in
    4.6 s one after the other, 3.7 s so."""
    from concurrent.futures import ThreadPoolExecutor

    context = contextvars.copy_context()  # the api's progress and workers, in the thread

    def read() -> pl.DataFrame | None:
        return context.run(next, frames, None)

    with ThreadPoolExecutor(1, thread_name_prefix="forensics-read") as pool:
        pending: Future[pl.DataFrame | None] | None = None
        try:
            while True:
                with stops_held():  # (a stop raised inside submit can leave a lock held)
                    pending = pool.submit(read)
                if (frame := waited(pending)) is None:
                    break
                yield frame
        finally:
            cancelled([pending])
            pool.shutdown(wait=True)  # the reader stopped before its store is closed
            close = getattr(frames, "close", None)
            if close is not None:
                close()


def _echo_bytes(data: bytes | memoryview) -> None:
    """Output already UTF-8 (writers.py) to stdout's bytes, as typer.echo writes bytes
    (text written before it flushed first): nothing to strip, since it holds no escape
    character (sanitised), and nothing to encode."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


class StageProgress:
    """How far a long analysis is, one line on stderr, only on a terminal; never on
    stdout. FORENSICS_PROGRESS_INTERVAL (seconds, default 0.5) spaces the updates."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        try:
            self.interval = float(os.environ.get("FORENSICS_PROGRESS_INTERVAL", "0.5"))
        except ValueError:
            self.interval = 0.5
        self.last = 0.0
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.last < self.interval and done < total):
            return
        self.last = now
        count = f": {done:,} of {total:,} sessions" if stage == "rebuilding windows" else ""
        count = f": {done:,} of {total:,} models" if stage.startswith("fitting") else count
        count = f": {done:,} of {total:,} events" if stage == "building facts" else count
        sys.stderr.write(f"\r\033[K{stage}{count}")
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.enabled and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


class Progress:
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
