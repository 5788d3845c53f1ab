"""What a caller sets for the library calls it makes, in context variables: where long
analyses report how far they are, and how many processes rebuild facts (with
FORENSICS_WORKERS: `workers`); and which store a command reads when none is named
(FORENSICS_DB: `default_db_path`). A shared piece (no layer): every command sets
them, also one that then imports nothing else (an ingest that finds nothing new,
forensics/quick.py; ccusage's question without a store, forensics/straight.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .errors import ForensicsError

# Where long analyses report how far they are: (stage, done, total); None: nowhere.
PROGRESS: ContextVar[Callable[[str, int, int], None] | None] = ContextVar(
    "forensics_progress", default=None
)
# what `--workers` sets for the commands of one process (None: FORENSICS_WORKERS, else
# every core this process may use; engines/local.py)
WORKERS: ContextVar[int | None] = ContextVar("forensics_workers", default=None)
WORKERS_ENV = "FORENSICS_WORKERS"
DEFAULT_DB = "forensics.duckdb"


def default_db_path() -> Path:
    """The store a command reads when none is named: $FORENSICS_DB, else ./forensics.duckdb."""
    given = os.environ.get("FORENSICS_DB") or DEFAULT_DB
    if given.endswith(("/", os.sep)):  # (DuckDB would make a store file of the folder's name)
        raise ForensicsError(f"FORENSICS_DB={given!r} ends in '/', a folder: the store is a file",
                             hint="set FORENSICS_DB to the store's file name")  # fmt: skip
    return home_expanded(given)


def home_expanded(path: str | Path) -> Path:
    """A path as DuckDB opens it, for Python to use the same file: `~` and `~/...` in
    the user's home (a shell leaves `--db=~/x`, a variable or a config file's `~` as it
    is, and DuckDB expands it); any other name starting with `~` is a file of that name
    here, made absolute (DuckDB would put `~x` in the home folder's parent, as `/rootx`;
    Python's `~user` is not a shell's here); a home the system cannot say: as given."""
    path = Path(path)
    if not path.parts or not path.parts[0].startswith("~"):
        return path
    if path.parts[0] != "~":
        return Path.cwd() / path
    try:
        return path.expanduser()
    except RuntimeError:  # (no HOME, and no passwd entry for this user)
        return path


@contextmanager
def progress_to(report: Callable[[str, int, int], None] | None) -> Iterator[None]:
    """Within the block, every reconstruction reports its stages to `report`."""
    token = PROGRESS.set(report)
    try:
        yield
    finally:
        PROGRESS.reset(token)


@contextmanager
def workers_to(count: int | None) -> Iterator[None]:
    """Within the block, facts are rebuilt by `count` processes (None: FORENSICS_WORKERS,
    else every core); the store they write is the same whatever the count."""
    token = WORKERS.set(count)
    try:
        yield
    finally:
        WORKERS.reset(token)


def workers(requested: int | None = None) -> int:
    """How many processes rebuild facts: `requested`, else WORKERS (--workers), else
    FORENSICS_WORKERS, else the cores this process may run on."""
    if requested is None:
        requested = WORKERS.get()
    if requested is None and os.environ.get(WORKERS_ENV, "").strip():
        text = os.environ[WORKERS_ENV].strip()
        try:
            requested = int(text)
        except ValueError:
            raise ForensicsError(
                f"{WORKERS_ENV}={text!r} is not a number of processes",
                hint=f"set {WORKERS_ENV} to 1 or more, or unset it to use every core",
            ) from None
    if requested is None:
        return cores()
    if requested < 1:
        named = WORKERS_ENV if WORKERS.get() is None else "--workers"
        raise ForensicsError(f"{named} {requested}: the facts need 1 or more processes")
    return requested


def cores() -> int:
    """The cores this process may run on (its affinity: a container's share, not the
    host's count, where the system says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
