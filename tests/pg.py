"""A throwaway PostgreSQL for tests and benchmarks, plus ADK schema helpers.

`start_pg_server()` returns a `PgServer`:

* with env `FORENSICS_TEST_PG_DSN` set, that server is used as is (databases are
  created and dropped through it);
* otherwise a private cluster is initdb'ed in a temp dir, listening only on
  127.0.0.1 on a free port, with fsync off and trust auth, and removed again
  by `close()` (also registered with atexit). initdb refuses to run as root,
  so as root every server command runs as the `postgres` system user.

`PgNotFound` means there is no PostgreSQL to use (the test fixtures skip on
it, or fail under `FORENSICS_REQUIRE_PG=1`); any other error starting one is
a real failure.

`create_adk_schema()` creates ADK's own tables (its SQLAlchemy metadata), and
`copy_adk_sqlite_to_pg()` copies a DatabaseSessionService SQLite file into
them, so tests can read PostgreSQL data that ADK itself wrote.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import glob
import os
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg
from psycopg import sql

ENV_DSN = "FORENSICS_TEST_PG_DSN"
ENV_REQUIRE = "FORENSICS_REQUIRE_PG"
PG_SUPERUSER = "postgres"
_SEARCH_GLOBS = (
    "/usr/lib/postgresql/*/bin",  # Debian, Ubuntu
    "/usr/pgsql-*/bin",  # RHEL, PGDG rpms
    "/usr/local/pgsql/bin",  # source installs
    "/opt/homebrew/opt/postgresql@*/bin",
    "/usr/local/opt/postgresql@*/bin",
)
ADK_TABLES = ("sessions", "events", "app_states", "user_states")


class PgNotFound(RuntimeError):
    """No usable PostgreSQL installation (the caller may skip)."""


def pg_required() -> bool:
    return os.environ.get(ENV_REQUIRE, "").strip().lower() in ("1", "true", "yes")


# ---------------------------------------------------------------------------
# Finding binaries
# ---------------------------------------------------------------------------


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path)) or (0,)


def find_pg_bindir() -> Path | None:
    """The directory holding pg_ctl and initdb: PATH first, then known places."""
    candidates: list[Path] = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        # Resolve symlinks (/usr/local/bin/pg_ctl -> .../15/bin/pg_ctl) so that
        # initdb and postgres come from the same installation.
        candidates.append(Path(os.path.realpath(on_path)).parent)
        candidates.append(Path(on_path).parent)
    for pattern in _SEARCH_GLOBS:
        for found in sorted(glob.glob(pattern), key=_version_key, reverse=True):
            candidates.append(Path(found))
    for bindir in candidates:
        if all(os.access(bindir / exe, os.X_OK) for exe in ("pg_ctl", "initdb")):
            return bindir
    return None


def find_psql() -> str | None:
    found = shutil.which("psql")
    if found:
        return found
    bindir = find_pg_bindir()
    if bindir and os.access(bindir / "psql", os.X_OK):
        return str(bindir / "psql")
    return None


# ---------------------------------------------------------------------------
# DSNs
# ---------------------------------------------------------------------------


def _url_from_params(params: dict[str, str]) -> str:
    """A postgresql:// URL from libpq connection parameters."""
    params = dict(params)
    user = params.pop("user", "")
    password = params.pop("password", "")
    host = params.pop("host", "")
    port = params.pop("port", "")
    dbname = params.pop("dbname", "")
    if host.startswith("/"):  # a unix socket directory goes into the query
        params["host"] = host
        host = ""
    netloc = ""
    if user:
        netloc = urllib.parse.quote(user, safe="")
        if password:
            netloc += ":" + urllib.parse.quote(password, safe="")
        netloc += "@"
    netloc += host
    if port:
        netloc += f":{port}"
    url = f"postgresql://{netloc}/{urllib.parse.quote(dbname, safe='')}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    return url


def with_dbname(dsn: str, dbname: str) -> str:
    """The same server and credentials as `dsn`, another database, as a URL."""
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["dbname"] = dbname
    return _url_from_params({k: str(v) for k, v in params.items() if v is not None})


def sqlalchemy_url(dsn: str) -> str:
    """`postgresql+psycopg://...` for SQLAlchemy (sync or async engine)."""
    if "://" not in dsn:
        dsn = _url_from_params(
            {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
        )
    scheme, rest = dsn.split("://", 1)
    if scheme not in ("postgresql", "postgres", "postgresql+psycopg"):
        raise ValueError(f"not a PostgreSQL DSN: {scheme}://...")
    return f"postgresql+psycopg://{rest}"


# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------


class PgServer:
    """A PostgreSQL server that tests can create databases in."""

    admin_dsn: str

    def dsn(self, dbname: str) -> str:
        return with_dbname(self.admin_dsn, dbname)

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, ending its sessions first; errors are ignored."""
        drop = sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name))
        with contextlib.suppress(psycopg.Error):
            with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
                try:
                    conn.execute(drop + sql.SQL(" WITH (FORCE)"))
                except psycopg.errors.SyntaxError:  # before PostgreSQL 13
                    conn.execute(drop)

    def close(self) -> None:
        pass

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ExternalPgServer(PgServer):
    """A server given by DSN (its database is used to create others)."""

    def __init__(self, dsn: str):
        self.admin_dsn = dsn
        try:
            with psycopg.connect(dsn, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as e:
            raise RuntimeError(f"cannot connect to {ENV_DSN} server: {e}") from e

    def __repr__(self) -> str:
        params = psycopg.conninfo.conninfo_to_dict(self.admin_dsn)
        params.pop("password", None)  # never print it
        return f"ExternalPgServer({_url_from_params({k: str(v) for k, v in params.items()})!r})"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _temp_base(as_root: bool) -> str | None:
    """Where to make the cluster's temp dir (None: the default temp dir).

    As root the postgres user must be able to reach it, and the socket path
    (dir + '/.s.PGSQL.NNNNN') must stay under the 107-byte limit.
    """
    base = Path(tempfile.gettempdir()).resolve()
    reachable = all(os.stat(p).st_mode & 0o001 for p in (base, *base.parents))
    if len(str(base)) > 60 or (as_root and not reachable):
        return "/tmp"
    return None


def _as_postgres_user(cmd: list[str]) -> list[str]:
    """`cmd` run as the postgres system user (we are root)."""
    runuser = shutil.which("runuser") or (
        "/usr/sbin/runuser" if os.access("/usr/sbin/runuser", os.X_OK) else None
    )
    if runuser:
        return [runuser, "-u", PG_SUPERUSER, "--", *cmd]
    su = shutil.which("su")
    if su:
        return [su, PG_SUPERUSER, "-s", "/bin/sh", "-c", shlex.join(cmd)]
    raise PgNotFound("running as root, but neither runuser nor su is available")


class LocalPgCluster(PgServer):
    """A private cluster in a temp dir; `close()` stops it and removes it."""

    def __init__(self, bindir: Path, *, port: int | None = None, start_timeout: int = 60):
        self.bindir = bindir
        self.as_root = os.geteuid() == 0
        self._uid_gid: tuple[int, int] | None = None
        if self.as_root:
            import pwd

            try:
                pw = pwd.getpwnam(PG_SUPERUSER)
            except KeyError:
                raise PgNotFound(
                    "running as root and there is no 'postgres' system user to run "
                    "initdb/pg_ctl as (initdb refuses to run as root)"
                ) from None
            self._uid_gid = (pw.pw_uid, pw.pw_gid)
        self.tmpdir = Path(tempfile.mkdtemp(prefix="forensics-pg-", dir=_temp_base(self.as_root)))
        self.datadir = self.tmpdir / "data"
        self.logfile = self.tmpdir / "postgres.log"
        self.port = port or _free_port()
        self.admin_dsn = self._url("postgres")
        self._running = False
        self._closed = False
        atexit.register(self.close)
        try:
            if self._uid_gid:
                os.chown(self.tmpdir, *self._uid_gid)
            self._initdb()
            self._start(start_timeout)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"LocalPgCluster(port={self.port}, dir={str(self.tmpdir)!r})"

    def _url(self, dbname: str) -> str:
        return f"postgresql://{PG_SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def dsn(self, dbname: str) -> str:
        return self._url(dbname)

    def _run(self, *args: str, check: bool = True, timeout: float = 120):
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            cmd = _as_postgres_user(cmd)
        proc = subprocess.run(
            cmd,
            cwd=self.tmpdir,  # the postgres user may not be able to enter our cwd
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
                + self._log_tail()
            )
        return proc

    def _log_tail(self) -> str:
        try:
            text = self.logfile.read_text(errors="replace")
        except OSError:
            return ""
        return "\n--- postgres.log (tail) ---\n" + text[-4000:]

    def _initdb(self) -> None:
        self._run(
            "initdb",
            "-D", str(self.datadir),
            "-U", PG_SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )  # fmt: skip
        # Appended after initdb, so these settings win over the defaults.
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": "'" + str(self.tmpdir).replace("'", "''") + "'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "100",
            "logging_collector": "off",
            # Tests compare plans and counters of tables they just loaded; autovacuum
            # reaching such a table first sets its visibility map, and the planner then
            # takes an Index Only Scan where the test (and a freshly loaded production
            # table) has a sequential scan: measured, 2 of 7 full runs failed so.
            "autovacuum": "off",
        }
        with open(self.datadir / "postgresql.conf", "a") as conf:
            conf.write("\n# forensics test harness\n")
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())

    def _start(self, timeout: int) -> None:
        self._running = True  # from here on, close() tries to stop it
        self._run(
            "pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile),
            "-w", "-t", str(timeout), "start",
            timeout=timeout + 30,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.admin_dsn, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._running:
                self._run(
                    "pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop",
                    check=False,
                    timeout=60,
                )  # fmt: skip
                self._running = False
        finally:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            atexit.unregister(self.close)


def start_pg_server() -> PgServer:
    """The server from `FORENSICS_TEST_PG_DSN`, else a fresh local cluster.

    Raises PgNotFound when there is no PostgreSQL installation to start.
    """
    external = os.environ.get(ENV_DSN, "").strip()
    if external:
        return ExternalPgServer(external)
    bindir = find_pg_bindir()
    if bindir is None:
        raise PgNotFound(
            "PostgreSQL not found: no pg_ctl/initdb on PATH or in "
            + ", ".join(_SEARCH_GLOBS)
            + f". Install the PostgreSQL server or set {ENV_DSN}."
        )
    last_error: Exception | None = None
    for _attempt in range(3):  # a free port can be taken before the server binds it
        try:
            return LocalPgCluster(bindir)
        except RuntimeError as e:
            if isinstance(e, PgNotFound):
                raise
            last_error = e
    assert last_error is not None
    raise last_error


# ---------------------------------------------------------------------------
# ADK schema helpers
# ---------------------------------------------------------------------------


def _adk_metadata(version: str):
    if version == "1":
        from google.adk.sessions.schemas import v1

        return v1.Base.metadata
    if version == "0":
        from google.adk.sessions.schemas import v0

        return v0.Base.metadata
    raise ValueError(f"unknown ADK schema version {version!r} (expected '0' or '1')")


def create_adk_schema(dsn: str, version: str = "1") -> None:
    """Create ADK's session tables in `dsn` exactly as DatabaseSessionService does.

    V1: the tables and indexes of `schemas.v1.Base.metadata` plus the
    `adk_internal_metadata` row ('schema_version', '1') that
    DatabaseSessionService.prepare_tables writes and that
    `_schema_check_utils` reads to tell V1 from V0. V0: the tables of
    `schemas.v0.Base.metadata`, no metadata table (ADK recognises V0 by
    `events.actions` without `events.event_data`). Idempotent.
    """
    from google.adk.sessions.migration import _schema_check_utils as check
    from sqlalchemy import create_engine
    from sqlalchemy.dialects.postgresql import insert

    metadata = _adk_metadata(version)
    engine = create_engine(sqlalchemy_url(dsn))
    try:
        with engine.begin() as conn:
            metadata.create_all(bind=conn)
            if version == check.SCHEMA_VERSION_1_JSON:
                from google.adk.sessions.schemas.v1 import StorageMetadata

                conn.execute(
                    insert(StorageMetadata)
                    .values(key=check.SCHEMA_VERSION_KEY, value=check.SCHEMA_VERSION_1_JSON)
                    .on_conflict_do_nothing(index_elements=["key"])
                )
    finally:
        engine.dispose()


def sqlite_adk_version(sqlite_path: str | os.PathLike[str]) -> str:
    """'1' if the SQLite events table has event_data, '0' if it has actions."""
    con = sqlite3.connect(f"file:{os.fspath(sqlite_path)}?mode=ro", uri=True)
    try:
        cols = {row[1] for row in con.execute("PRAGMA table_info(events)")}
    finally:
        con.close()
    if "event_data" in cols:
        return "1"
    if "actions" in cols:
        return "0"
    raise ValueError(f"{sqlite_path}: no ADK events table (columns: {sorted(cols)})")


def _sqlite_timestamp(value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.UTC).replace(tzinfo=None)
    return value  # 'YYYY-MM-DD HH:MM:SS[.ffffff]' text: PostgreSQL parses it


def _converter(pg_type: str):
    if pg_type in ("jsonb", "json"):
        # SQLite holds JSON text; COPY text format hands it to jsonb verbatim.
        return lambda v: v.decode() if isinstance(v, bytes) else v
    if pg_type == "bytea":
        return lambda v: v.encode() if isinstance(v, str) else v
    if pg_type.startswith("timestamp"):
        return _sqlite_timestamp
    if pg_type == "boolean":
        return lambda v: None if v is None else bool(v)
    return lambda v: v


def copy_adk_sqlite_to_pg(
    sqlite_path: str | os.PathLike[str], dsn: str, *, create_schema: bool = True
) -> dict[str, int]:
    """Copy the rows of an ADK DatabaseSessionService SQLite file into PostgreSQL.

    The SQLite schema version is detected (V0: events.actions, V1:
    events.event_data) and the same-version ADK schema is created in `dsn`
    (unless `create_schema=False`). Columns are copied by name, as present in
    both: JSON text -> jsonb, pickle BLOB -> bytea, timestamp text ->
    timestamp, 0/1 -> boolean. Returns the row count copied per table.
    """
    version = sqlite_adk_version(sqlite_path)
    if create_schema:
        create_adk_schema(dsn, version)
    src = sqlite3.connect(f"file:{os.fspath(sqlite_path)}?mode=ro", uri=True)
    counts: dict[str, int] = {}
    try:
        with psycopg.connect(dsn) as dst:
            for table in ADK_TABLES:  # sessions before events (foreign key)
                src_cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
                if not src_cols:
                    continue
                pg_types = dict(
                    dst.execute(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_schema = current_schema() AND table_name = %s",
                        (table,),
                    ).fetchall()
                )
                cols = [c for c in src_cols if c in pg_types]
                convert = [_converter(pg_types[c]) for c in cols]
                col_list = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
                copy_stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(
                    sql.Identifier(table),
                    sql.SQL(", ").join(sql.Identifier(c) for c in cols),
                )
                n = 0
                with dst.cursor().copy(copy_stmt) as copy:
                    for row in src.execute(f'SELECT {col_list} FROM "{table}"'):  # noqa: S608
                        copy.write_row([f(v) for f, v in zip(convert, row, strict=True)])
                        n += 1
                counts[table] = n
            dst.commit()
    finally:
        src.close()
    return counts
