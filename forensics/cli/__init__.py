"""The `forensics` command: a thin layer over `forensics.api`, one module per command group.

common.py holds the Typer apps, the options (defined once), the error boundary and
the output formats; importing a command module registers its commands, in the order
`--help` lists them.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated

import typer
from typer.main import get_command_name

from .. import __version__
from ..errors import STOPS, TERMINATED, hold_stops
from ..settings import cores
from .common import app, state

# Each module registers its commands when imported; `--help` lists them in this order.
for _module in ("stored", "windows", "compaction", "cost", "whatif", "tasks", "plan", "report",
                "ingest",
                "opensearch", "analyze", "export"):
    importlib.import_module(f"{__name__}.{_module}")

__all__ = ["app", "main"]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agent-forensics {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version.", callback=_version, is_eager=True),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes that build the facts of the sessions a command loaded or finds"
            " stale, and that read Claude Code transcripts (default: FORENSICS_WORKERS,"
            " else every core); the store and the figures are the same whatever the"
            " number.",
        ),
    ] = None,
) -> None:
    state["debug"] = debug
    state["workers"] = workers


# glibc's heaps (arenas) that this process's threads share: one a core (its default is
# eight a core), so that threads working at once do not wait on each other's heap
ARENAS = max(2, cores())


def _keep_freed_memory() -> None:
    """glibc hands a freed block over 128 KB back to the system at once, and the next
    such block faults its pages in again: normalising 200,000 events faulted 2.3 million
    pages (13 s of system time, on two cores). This process keeps what it frees for
    reuse instead (measured: 40% fewer faults, normalising 15% faster, the same peak);
    a program that imports the library keeps its own allocator's settings.

    What is kept is kept per arena, and glibc gives each new thread one of its own (up
    to eight per core): an ingest's reader, normaliser, sizing and store threads each
    held what it had freed. They share ARENAS now, one a core: on two cores,
    `ingest adk-postgres` of 1,000,000 events peaked at 950 MB against 1,015 MB (223.6
    and 225.4 s), of 200,000 from SQLite at 833-848 MB against 914-932 MB (31.1-32.8 s
    and 30.4-32.2 s)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: blocks up to 1 GB from the heap
        libc.mallopt(-1, 1 << 31)  # M_TRIM_THRESHOLD: give back only past 2 GB free
        libc.mallopt(-8, ARENAS)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc: its allocator is left as it is
        pass


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (a supervisor, `kill`, a container stopping) stops a command as Ctrl-C
    does, so an ingest's run is undone the same way; the exit code is 143 (128 + 15)."""
    state["terminated"] = True
    TERMINATED.set()
    raise KeyboardInterrupt


def _stopped_at_exit(code: int) -> Callable[[int, object], None]:
    """What a stop does once the command has returned with `code` (Python waiting for
    threads to end, flushing, closing): it only ends the process. A command that
    succeeded did its work, which a line says, and the exit code is the stop's; one
    that failed or was stopped already said so, and keeps its code. (Raising
    KeyboardInterrupt there printed a traceback from Python's own shutdown.)"""

    def stopped(signum: int, frame: object) -> None:
        try:
            sys.stdout.flush()
            if not code:
                stop = "Interrupted (Ctrl-C)" if signum == signal.SIGINT else "Terminated (SIGTERM)"
                sys.stderr.write(f"{stop} as the command ended: its work was done.\n")
                sys.stderr.flush()
        finally:
            os._exit(code or 128 + signum)

    return stopped


def _streams_that_take_any_text() -> None:
    """Output that cannot fail for the environment's sake, after the work is done: a
    closed stdout or stderr (a cron job's, a daemon's) writes nowhere, as a pipe closed
    early does; an encoding that lacks a character (PYTHONIOENCODING=latin-1) writes its
    escape rather than ending an ingest that committed in an UnicodeEncodeError; and a
    width under 40 columns (COLUMNS=0: help and usage errors printed nothing) is 40, as
    the tables take it."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
        elif hasattr(stream, "reconfigure") and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) < MIN_COLUMNS:
        os.environ["COLUMNS"] = str(MIN_COLUMNS)


MIN_COLUMNS = 40  # (cli/common.py's tables: no narrower)

# the top-level options that take a value (before the command's name)
_VALUED = frozenset({"--workers"})


def _named_command(args: Sequence[str]) -> str | None:
    """The command (or group) the arguments name, after the top-level options; None for
    none (`--help`, `--version`, no arguments) or an argument Typer would refuse."""
    taken = iter(args)
    for arg in taken:
        if arg in _VALUED:
            next(taken, None)
        elif not arg.startswith("-"):
            return arg
        elif arg.partition("=")[0] not in (_VALUED | {"--debug"}):
            return None
    return None


@contextmanager
def _only_the_named(args: Sequence[str]) -> Iterator[None]:
    """Typer makes every command's click command (reading its parameters' annotations)
    before it parses the arguments: 28-44 ms of every command for the 33 of them. With
    the command's name given, only it (or its group) is made; its parsing, help and
    errors are the same. A name no command has makes them all, for click's "did you
    mean"."""
    name = _named_command(args)
    commands, groups = app.registered_commands, app.registered_groups
    chosen = [c for c in commands
              if (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == name]
    chosen_groups = [g for g in groups if g.name == name]
    if name is None or not (chosen or chosen_groups):
        yield
        return
    app.registered_commands, app.registered_groups = chosen, chosen_groups
    try:
        yield
    finally:
        app.registered_commands, app.registered_groups = commands, groups


def _help_read_in_part(exit: SystemExit) -> bool:
    """Whether an exit 1 is click's or rich's for help or the version that went into a
    reader that left (`forensics --help | head`): click wraps stdout to keep the exit's
    flush quiet, rich exits while the broken pipe is handled. Only for what the
    arguments asked (help, the version, a group without its command): an error whose
    reader left is still an error."""
    if not (type(sys.stdout).__name__ == "PacifyFlushWrapper"
            or isinstance(exit.__context__, BrokenPipeError)):  # fmt: skip
        return False
    args = sys.argv[1:]
    groups = {g.name for g in app.registered_groups}
    named = _named_command(args)  # (a group alone prints its help)
    return not args or "--help" in args or "--version" in args or (
        named in groups and args[-1] == named
    )


def _stops_ignored_at_teardown() -> None:
    """Python's last exit handler (registered first): Ctrl-C and SIGTERM are ignored for
    what is left of the process's teardown. Python puts the system's default handlers
    back after its exit handlers (those it set itself: an ignored stop stays ignored),
    and a stop landing then (freeing the modules: tens of milliseconds, more on a busy
    machine) killed the process after the command had done its work and said so: exit
    -2 or -15, no word, where a script waits for the command's own code (36 of 142
    trials of a sweep of stops). Ignored, not blocked: a signal the main thread blocks
    goes to another thread (DuckDB's, polars'), which it kills. A stop before this is
    `_stopped_at_exit`'s."""
    for number in STOPS:
        signal.signal(number, signal.SIG_IGN)


def main() -> None:
    atexit.register(_stops_ignored_at_teardown)  # (the first registered runs last)
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    _streams_that_take_any_text()
    _keep_freed_memory()
    signal.signal(signal.SIGTERM, _terminated)
    hold_stops()  # (before polars sets its SIGINT handler in front of Python's)
    code: int = 1  # an exception that is no exit: a failure
    try:
        with _only_the_named(sys.argv[1:]):
            app()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code == 1 and _help_read_in_part(e):
            code = 0  # (--help or --version into `head`: as a command's output is)
            raise SystemExit(0) from None
        raise
    except OSError as e:  # --help or --version, written while the arguments are parsed,
        # before any command's boundary: a full disk says so, without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.stderr.write(f"Error: cannot write the output: {e.strerror or e}\n")
        raise SystemExit(1) from None
    finally:
        signal.signal(signal.SIGTERM, _stopped_at_exit(code))
        signal.signal(signal.SIGINT, _stopped_at_exit(code))
