"""A PostgreSQL server reached read-only: every statement bounded, every message scrubbed.

Shared by the ADK loader and `forensics plan`: one place opens the connection, sets
`statement_timeout`, makes every transaction READ ONLY, and turns driver errors into
SourceErrors that name the server and never the password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from ...errors import SourceError, TransientSourceError
from ...sanitize import one_line
from ...secrets import Secret, scrub, unusable


class ReadOnlyServer:
    def __init__(
        self, dsn: str, *, statement_timeout_ms: int = 60_000, connect_timeout_s: int = 10
    ):
        reason = unusable(dsn)
        if reason:
            # never handed to the driver, whose message would quote it whole
            raise SourceError(
                reason,
                hint="use postgresql://user@host:5432/dbname (two slashes) or "
                "'host=... dbname=... user=...'; put the password in PGPASSWORD or ~/.pgpass",
            )
        self._dsn = Secret(dsn)  # str() and repr() show it redacted
        self.location = str(self._dsn)
        self.statement_timeout_ms = statement_timeout_ms
        self.connect_timeout_s = connect_timeout_s

    def __repr__(self) -> str:
        return f"ReadOnlyServer({self.location!r})"

    def scrub(self, error: BaseException) -> str:
        """psycopg's message, its password out, on one line (libpq's "Is the server
        running...?", a server's DETAIL: sanitize.one_line)."""
        return scrub(one_line(str(error)), self._dsn)

    def connect(self) -> psycopg.Connection:
        """A read-only connection whose every statement is bounded by the timeout."""
        try:
            con = psycopg.connect(
                self._dsn.reveal(),
                connect_timeout=self.connect_timeout_s,
                application_name="agent-forensics",
            )
        except psycopg.OperationalError as e:
            raise TransientSourceError(
                f"cannot connect to {self.location}: {self.scrub(e)}",
                hint="check host, port and credentials; the server must accept connections",
            ) from e
        except psycopg.ProgrammingError as e:
            raise SourceError(
                f"invalid connection string {self.location}: {scrub(str(e), self._dsn)}"
            ) from e
        try:
            # set after connecting, not as startup `options`: those would replace
            # any the DSN carries (search_path) and poolers refuse them
            con.execute(
                "SELECT set_config('statement_timeout', %s, false)",
                [f"{int(self.statement_timeout_ms)}ms"],
            )
            con.commit()
        except psycopg.Error as e:
            con.close()
            raise SourceError(f"{self.location}: {self.scrub(e)}") from e
        con.read_only = True  # every transaction: BEGIN READ ONLY
        return con

    @contextmanager
    def transaction(self, hint: str = "raise --statement-timeout") -> Iterator[psycopg.Connection]:
        """One read-only transaction on a fresh connection, always rolled back."""
        con = self.connect()
        try:
            with con.transaction():
                yield con
                raise psycopg.Rollback()  # read-only: end the transaction, commit nothing
        except psycopg.errors.QueryCanceled as e:
            raise TransientSourceError(
                f"{self.location}: a statement ran past statement_timeout "
                f"({self.statement_timeout_ms} ms): {self.scrub(e)}",
                hint=hint,
            ) from e
        except psycopg.OperationalError as e:
            raise TransientSourceError(f"{self.location}: {self.scrub(e)}") from e
        except psycopg.Error as e:
            raise SourceError(f"{self.location}: {self.scrub(e)}") from e
        finally:
            con.close()


def one(con: psycopg.Connection, statement: Any, params: Any = None) -> tuple[Any, ...]:
    """The first row of a statement that always returns one (a count, a SHOW)."""
    row = con.execute(statement, params).fetchone()
    assert row is not None, statement
    return row
