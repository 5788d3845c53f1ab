"""The small error hierarchy every layer raises; the CLI turns it into `Error: ...`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


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

    @classmethod
    def after_commit(cls, events: int) -> FactsInterrupted:
        """The stop of a run whose ingest was committed and whose facts are not built."""
        return cls(
            f"the ingest was committed ({events:,} events loaded); the facts not built yet"
            " are built by `forensics analyze` or the next command."
        )


@contextmanager
def stop_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM during the block takes effect when it ends: for a request whose
    answer must reach the caller for it to clean up after it (a point in time or a scroll
    the server opens, whose id only its answer carries; the request has a timeout). A
    second one does not wait. Only the main thread receives signals; elsewhere, or where
    a handler was set outside Python, the block runs as it is."""
    numbers = (signal.SIGINT, signal.SIGTERM)
    before = {n: signal.getsignal(n) for n in numbers}
    if threading.current_thread() is not threading.main_thread() or None in before.values():
        yield
        return
    caught: list[signal.Signals] = []

    def deliver(number: signal.Signals) -> None:
        handler = before[number]
        if callable(handler):
            handler(number, None)  # Ctrl-C's raises KeyboardInterrupt, SIGTERM's too
        elif handler == signal.SIG_DFL:
            signal.raise_signal(number)

    def held(signum: int, frame: object) -> None:
        if caught:  # asked twice: now
            deliver(signal.Signals(signum))
        caught.append(signal.Signals(signum))

    with _signals_blocked(numbers):  # no signal between the two swaps
        for number in numbers:
            signal.signal(number, held)
    try:
        yield
    finally:
        with _signals_blocked(numbers):
            for number, handler in before.items():
                signal.signal(number, handler)
        if caught:  # the stop wins over an error the block ended with
            deliver(caught[0])


@contextmanager
def _signals_blocked(numbers: tuple[signal.Signals, ...]) -> Iterator[None]:
    """`numbers` held pending by the system for the block (where it can), then delivered."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, numbers)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_stops() -> None:
    """A worker process's initializer: Ctrl-C and SIGTERM (sent to the whole process
    group by a terminal or a supervisor) are the process's that started it, which stops
    its pool; a worker that raised them too printed its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def waited(future: Future[T]) -> T:
    """`future.result()`, woken five times a second, so that a Ctrl-C is acted on while
    this thread waits: polars, once imported, handles SIGINT itself with SA_RESTART, so
    the kernel resumes a wait the signal interrupted, and Python's handler runs only
    when the main thread next runs (a wait for a worker's minutes, for minutes)."""
    while True:
        try:
            return future.result(timeout=0.2)
        except TimeoutError:
            if future.done():  # the work's own TimeoutError
                raise
