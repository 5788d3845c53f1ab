"""The small error hierarchy every layer raises; the CLI turns it into `Error: ...`."""

from __future__ import annotations

import threading


class ForensicsError(Exception):
    """A failure the user can act on; `hint` says how."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class SourceError(ForensicsError):
    """A source (file, database) cannot be read as a whole."""


class TransientSourceError(SourceError):
    """The source may answer if asked again (server down, timeout)."""


class MissingRelationError(SourceError):
    """The source has no table or layout this loader knows."""


class UnsafePickleError(ForensicsError):
    """A stored pickle refers to something other than plain ADK/genai data."""


class StoreError(ForensicsError):
    """The local DuckDB store cannot be used."""


TERMINATED = threading.Event()
"""Set by the command line's SIGTERM handler before it stops the run as Ctrl-C does: the
ledger then says the run was terminated, not interrupted."""


class FactsInterrupted(KeyboardInterrupt):
    """Ctrl-C while the facts were being built after an ingest that was committed: what
    was loaded stays, and the facts not built are built by the next command. `message`
    says what was kept; the caller says how it was stopped (Ctrl-C or SIGTERM)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
