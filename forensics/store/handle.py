"""One open DuckDB store file: opened once per command and passed down."""

from __future__ import annotations

import functools
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from .. import sql
from ..errors import StoreError, stops_held
from ..sanitize import require_utf8_name
from ..settings import DEFAULT_DB as DEFAULT_DB  # (the store's name for them)
from ..settings import default_db_path as default_db_path
from ..settings import home_expanded
from . import migrations

if TYPE_CHECKING:  # (imported where used: an ingest that finds nothing new needs neither)
    import polars as pl
    import pyarrow as pa

T = TypeVar("T")


# An offline tool opens no network: DuckDB would otherwise download an extension it
# knows (sqlite_scanner for a SQLite file given as --db, httpfs for a URL).
OFFLINE = {"autoload_known_extensions": False, "autoinstall_known_extensions": False}
_DUCKDB_MAGIC = b"DUCK"  # bytes 8-12 of every DuckDB database file


def connect(
    database: str = ":memory:", *, read_only: bool = False, **config: str | int | bool
) -> duckdb.DuckDBPyConnection:
    """Every DuckDB connection the project opens: extensions never loaded or fetched, and
    no progress bar (DuckDB draws one on the terminal for a query over 2 s, over ours)."""
    con = duckdb.connect(database, read_only=read_only, config={**OFFLINE, **config})
    con.execute("SET enable_progress_bar = false")
    return con


def _interrupted(error: BaseException) -> bool:
    """Ctrl-C inside DuckDB: its InterruptException, or, in a scan of Arrow data or a
    clean-up, a bare RuntimeError('Query interrupted'), or the InvalidInputException
    naming the KeyboardInterrupt that stopped a Python object DuckDB was reading as
    Arrow data (`... registered as 'cost_window' failed: KeyboardInterrupt`)."""
    return isinstance(error, duckdb.InterruptException) or (
        isinstance(error, RuntimeError) and "Query interrupted" in str(error)
    ) or (isinstance(error, duckdb.InvalidInputException) and "KeyboardInterrupt" in str(error))


def raise_if_interrupted(error: BaseException) -> None:
    """Ctrl-C inside DuckDB (`_interrupted`) is a KeyboardInterrupt."""
    if _interrupted(error):
        raise KeyboardInterrupt from None


def _despite_stops(step: Callable[[], object], stopped: bool = False) -> bool:
    """Whether a stop landed in `step` (clean-up that can run twice), run once more
    where one did: before the call, or inside DuckDB. Its own failure is passed over,
    but a RuntimeError that is no DuckDB interrupt (raised, or the stop raised over it
    where one landed: `stopped` too, a stop before)."""
    for _ in range(2):
        try:
            step()
            break
        except KeyboardInterrupt:
            stopped = True
        except (duckdb.Error, RuntimeError) as e:
            if not _interrupted(e):
                if isinstance(e, RuntimeError):
                    if stopped:  # (the stop wins)
                        raise KeyboardInterrupt from e
                    raise
                break
            stopped = True
    return stopped


MAX_MEMORY_MIB = 16_384  # Store.raise_memory_limit doubles a cap up to this

LOCK_WAIT_S = 5.0  # FORENSICS_LOCK_WAIT: how long to wait for a store another process holds
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.*?) \(PID (?P<pid>\d+)\)")


def _lock_wait() -> float:
    """FORENSICS_LOCK_WAIT's seconds (0 or more; `inf`: for as long as it takes), or
    LOCK_WAIT_S; a value that is none of these is an error naming it (it was taken as
    5 s, or as -1 s waited)."""
    text = os.environ.get("FORENSICS_LOCK_WAIT", "").strip()
    if not text:
        return LOCK_WAIT_S
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not wait >= 0:  # (NaN too)
        raise StoreError(f"FORENSICS_LOCK_WAIT={text!r} is not a number of seconds",
                         hint="set it to 0 or more (inf: wait as long as it takes), or "
                         "unset it for 5 s")  # fmt: skip
    return wait


def _open_waiting(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Connect; while another process holds the store's lock (a running ingest), wait up
    to FORENSICS_LOCK_WAIT seconds, then say who holds it."""
    wait = _lock_wait()
    deadline = time.monotonic() + wait
    while True:
        try:
            return connect(str(path), read_only=read_only)
        except duckdb.Error as e:
            holder = _HOLDER.search(str(e))
            if holder and time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            if holder:
                command = _holder_command(int(holder["pid"]))
                who = (f"`{command}` holds it until it ends" if command
                       else "another program holds it (one writer, or readers only)")  # fmt: skip
                raise StoreError(
                    f"the store {path} is in use by another process (PID "
                    f"{holder['pid']}, {holder['program']}); waited {wait:g} s",
                    hint=f"{who}: wait for it, or set FORENSICS_LOCK_WAIT to wait longer",
                ) from e
            if "Could not read enough bytes" in str(e) or "Corrupt" in str(e):
                raise StoreError(
                    f"the store {path} is damaged or incomplete (DuckDB: {e})",
                    hint="a copy cut short or a full disk can do this: load the sources "
                    "again into a new store",
                ) from e
            if not read_only and not path.parent.is_dir():
                raise StoreError(
                    f"cannot create the store {path}: the folder {path.parent} does not exist",
                    hint="create the folder first, or give --db a path in an existing one",
                ) from e
            raise StoreError(f"cannot open store {path}: {e}") from e


# the command line's commands, and the subcommands of its groups, by which a holder is
# named (tests/test_hardening.py holds them equal to the CLI's)
COMMANDS = frozenset({
    "analyze", "breakeven", "cache", "calls", "compaction", "compare", "cost", "demo",
    "events", "export", "failures", "fidelity", "growth", "guards", "ingest", "ingests",
    "outcomes", "plan", "prices", "report", "sessions", "tasks", "turns", "whatif", "window",
})  # fmt: skip
SUBCOMMANDS = {
    "ingest": frozenset({"adk-postgres", "adk-sqlite", "adk-json", "adk-trace", "parquet",
                         "claude-code", "opensearch", "opensearch-file"}),
    "export": frozenset({"parquet"}),
    "report": frozenset({"incident", "weekly"}),
    "outcomes": frozenset({"load"}),
}  # fmt: skip
_PYTHON = re.compile(rb"python[0-9.]*")


def _holder_command(pid: int) -> str | None:
    """The forensics command a process holding the store runs (`forensics ingest
    claude-code`): the program run as `forensics`, `python .../forensics`, `python -m
    forensics.cli` or `python -c` code that imports forensics.cli, and of what follows
    it only a command's name and its subcommand's, never an argument (a DSN may hold a
    password); None for another program, or where the system does not say (no /proc, a
    process of another container)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    name = [a.rsplit(b"/", 1)[-1] for a in argv]
    if name and name[0] == b"forensics":
        rest = argv[1:]
    elif len(argv) > 2 and _PYTHON.fullmatch(name[0]):
        if name[1] == b"forensics":
            rest = argv[2:]
        elif argv[1] in (b"-m", b"-c") and b"forensics" in argv[2]:
            rest = argv[3:]
        else:
            return None
    else:
        return None
    words = ["forensics"]
    if rest and (first := rest[0].decode("ascii", "replace")) in COMMANDS:
        words.append(first)
        if len(rest) > 1 and (second := rest[1].decode("ascii", "replace")) in SUBCOMMANDS.get(
                first, ()):  # fmt: skip
            words.append(second)
    return " ".join(words)


def _check_file(path: Path) -> None:
    """A file that is not a DuckDB database is refused before DuckDB reads it."""
    try:
        _check_head(path)
    except OSError as e:  # a name too long, no permission: said, not "unexpected"
        raise StoreError(f"cannot open store {path}: {e.strerror or e}") from e


def _check_head(path: Path) -> None:
    if path.is_dir():
        raise StoreError(
            f"{path} is a directory, not a forensics store",
            hint="--db / FORENSICS_DB names the store file, e.g. forensics.duckdb",
        )
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as f:
        head = f.read(16)
    if head[8:12] == _DUCKDB_MAGIC:
        return
    what = "a SQLite database" if head.startswith(b"SQLite format 3") else "not a DuckDB file"
    raise StoreError(
        f"{path} is not a forensics store ({what})",
        hint="--db / FORENSICS_DB names the toolkit's own store; read ADK files with "
        "`forensics ingest adk-sqlite FILE` or `forensics ingest adk-json FILE`",
    )


class Store:
    """The store file and its connection; `Store.open` checks or migrates the schema."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool):
        self.con = con
        self.path = path
        self.read_only = read_only

    @classmethod
    def open(cls, path: str | Path | None = None, *, read_only: bool = False) -> Store:
        """Open the store; a read-only open of a missing file is a StoreError with a hint."""
        # (`~`: DuckDB opens the user's home there, so every check here must look there)
        path = home_expanded(path) if path is not None else default_db_path()
        if str(path).startswith(":memory:"):
            raise StoreError(f"{path} is no store: a store is a file that keeps what is loaded",
                             hint="give --db (or FORENSICS_DB) a file path")  # fmt: skip
        require_utf8_name(path, "use {} as a store", "DuckDB opens a store",
                          "give --db (or FORENSICS_DB) a path named in UTF-8", StoreError)
        _check_file(path)
        if read_only and not path.exists():
            raise StoreError(
                f"no store at {path}",
                hint="load something first, e.g. `forensics ingest adk-sqlite sessions.db`, "
                "or point --db / FORENSICS_DB at an existing store",
            )
        con = _open_waiting(path, read_only)
        store = cls(con, path, read_only)
        try:
            if read_only:
                migrations.check(store.run, path)
                upgrade = migrations.needs_upgrade(store.run)
            else:
                migrations.migrate(store.run, path)
                upgrade = False
        except BaseException:
            con.close()
            raise
        if upgrade:  # an older store: upgrade it once, writable, then read it as asked
            con.close()
            cls.open(path).close()
            return cls.open(path, read_only=True)
        return store

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def run(self, statement: str, params: object = None) -> list[tuple[Any, ...]]:
        """Execute and fetch to the end: DuckDB 2 refuses new work while a result is open.
        Ctrl-C inside DuckDB (its InterruptException) is a KeyboardInterrupt here."""
        try:
            return self.con.execute(statement, params).fetchall()
        except (duckdb.InterruptException, duckdb.InvalidInputException, RuntimeError) as e:
            raise_if_interrupted(e)
            raise

    def query(self, name: str, **params: object) -> list[tuple[Any, ...]]:
        """The rows of a `queries/` file, its declared parameters bound by name."""
        query = sql.load(name)
        return self.run(query.sql, {k: params.get(k) for k in query.params})

    def arrow(self, name: str, **params: object) -> pa.Table:
        query = sql.load(name)
        try:
            relation = self.con.sql(query.sql, params={k: params.get(k) for k in query.params})
            return relation.to_arrow_table()
        except (duckdb.InterruptException, duckdb.InvalidInputException, RuntimeError) as e:
            raise_if_interrupted(e)
            raise

    def frame(self, name: str, **params: object) -> pl.DataFrame:
        import polars as pl

        frame = pl.from_arrow(self.arrow(name, **params))
        assert isinstance(frame, pl.DataFrame)
        return frame

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT; ROLLBACK on any exception, which is raised again. A stop
        (Ctrl-C, SIGTERM) is held over the COMMIT and raised after it: one landing at the
        COMMIT left it committed or not (in a stress of stops, 1,223 of 1,354 committed,
        the rest left the transaction open), where the caller takes the error for "not
        committed" and goes on. A second stop is not held. (BEGIN inside the block that
        rolls back: a stop landing just after it left the transaction open.)"""
        try:
            self.run("BEGIN")
            yield
        except BaseException:
            self.quietly("ROLLBACK")  # the first error is the one to report
            raise
        with stops_held(second_now=True):
            self.run("COMMIT")

    def quietly(self, statement: str) -> None:
        """Clean-up (a ROLLBACK, a DROP ... IF EXISTS: a statement that can run twice)
        that must not hide the error it cleans up after: its own failure is passed over
        (an aborted transaction refuses more work). A stop landing in it is raised once
        the statement ran (`_despite_stops`): it was lost otherwise, and the work went
        on after the Ctrl-C; a ROLLBACK a stop skipped left the transaction aborted, and
        every later statement refused."""
        if _despite_stops(lambda: self.con.execute(statement).fetchall()):
            raise KeyboardInterrupt

    def unregister(self, *names: str) -> None:
        """Drop registered views in clean-up, never raising over the real error but a
        stop: one landing inside it is raised once every name is dropped (passed over,
        it was lost: an ingest went on after the Ctrl-C)."""
        stopped = False
        for name in names:  # (a name not registered: no error)
            stopped = _despite_stops(functools.partial(self.con.unregister, name), stopped)
        if stopped:
            raise KeyboardInterrupt

    def raise_memory_limit(self, most_mib: int = MAX_MEMORY_MIB) -> bool:
        """Double DuckDB's buffer limit (inside a `memory_limit` block: set back at its
        end), for work that met it; False, and unchanged, when that passes `most_mib`.
        What a cap also holds grows with the store (the primary keys' index)."""
        _, limit = self.memory_mib()
        if limit is None:  # a spelling this does not know: the error stands
            return False
        raised = max(int(limit * 2), 1)
        if raised > most_mib:
            return False
        self.run("SET memory_limit = ?", [f"{raised}MiB"])
        return True

    def memory_mib(self) -> tuple[float, float | None]:
        """What DuckDB's buffers hold now (what its limit counts) and that limit, in MiB
        (the limit None: spelled in a unit this does not know)."""
        ((used, limit),) = self.run(
            "SELECT (SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()),"
            " current_setting('memory_limit')"
        )
        number, _, unit = str(limit).partition(" ")  # as DuckDB reads it back: '244.1 MiB'
        scale = {"bytes": 1 / 1024**2, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024,
                 "TiB": 1024**2, "PiB": 1024**3}.get(unit)  # fmt: skip
        return float(used) / 1024**2, None if scale is None else float(number) * scale

    def kept_stamp(self, key: str, table: str) -> str | None:
        """The stamp kept in store_meta under `key` for the figures kept in `table`, None
        when either is missing (a store kept by an older release, or never)."""
        rows = self.run(
            "SELECT value FROM store_meta WHERE key = ? AND EXISTS (SELECT 1 FROM"
            " information_schema.tables WHERE table_name = ? AND table_schema = 'main')",
            [key, table],
        )
        return rows[0][0] if rows else None

    def capped(self, limit: str, work: Callable[[], T]) -> T:
        """`work` (reads, or writes undone when they fail) with DuckDB's buffers capped at
        `limit`, doubled and `work` done again while it meets the cap: the blocks a scan
        reads stay cached up to the cap, so a command that scans much holds less. Where
        the cap cannot hold (the connection holds more already; spilling to disk where
        it cannot write, a read-only folder; doubled past MAX_MEMORY_MIB) `work` runs as
        it did before: at the limit the connection had."""
        (before,) = self.run("SELECT current_setting('memory_limit')")[0]
        try:
            self.run("SET memory_limit = ?", [limit])
        except duckdb.Error:
            return work()
        try:
            while True:
                try:
                    return work()
                except duckdb.OutOfMemoryException:
                    if not self.raise_memory_limit():
                        break
                except duckdb.IOException:
                    break
        finally:
            try:
                self.run("SET memory_limit = ?", [before])
            except (duckdb.Error, KeyboardInterrupt):
                pass
        return work()

    @contextmanager
    def memory_limit(self, limit: str) -> Iterator[None]:
        """DuckDB's buffer limit set for a block of work, and restored after it."""
        (before,) = self.run("SELECT current_setting('memory_limit')")[0]
        self.run("SET memory_limit = ?", [limit])
        try:
            yield
        finally:
            try:
                self.run("SET memory_limit = ?", [before])
            except (duckdb.Error, KeyboardInterrupt):
                pass
