"""The small error hierarchy every layer raises; the CLI turns it into `Error: ...`."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.context import ForkContext, SpawnContext

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


# Why json could not read a value it found no syntax error in, as a skip says it: an
# integer of over 4,300 digits (a ValueError that is no JSONDecodeError:
# sys.get_int_max_str_digits), or nesting past the recursion limit (a RecursionError)
NUMBER_TOO_LONG = "holds a number of over 4,300 digits, more than Python's json reads"
TOO_DEEP = "nested too deeply to read (over about 1,000 levels of objects and lists)"
# and tomllib's (a ValueError that is no TOMLDecodeError)
TOML_NUMBER_TOO_LONG = "an integer of over 4,300 digits, more than Python reads as one"


TERMINATED = threading.Event()
"""Set by the command line's SIGTERM handler before it stops the run as Ctrl-C does: the
ledger then says the run was terminated, not interrupted."""


class FactsInterrupted(KeyboardInterrupt):
    """Ctrl-C after part or all of an ingest was committed: while the facts were being
    built after it, or between the batches of a run that commits each. What was loaded
    stays (the facts not built are built by the next command). `message` says what was
    kept; the caller says how it was stopped (Ctrl-C or SIGTERM)."""

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

    @classmethod
    def as_it_ended(cls, records: int | None = None) -> FactsInterrupted:
        """The stop of a run that had committed and returned (the store being closed, its
        summary printed): nothing of it is undone."""
        loaded = "" if records is None else f" ({records:,} records loaded)"
        return cls(f"the ingest was committed{loaded}: the stop came as it ended.")

    @classmethod
    def batches_kept(cls, records: int) -> FactsInterrupted:
        """The stop of a run that commits batch by batch, some committed (its ledger row
        says the same)."""
        return cls(
            f"the {records:,} records loaded before it are kept; the same ingest again loads"
            " the rest."
        )


@contextmanager
def stop_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM during the block takes effect when it ends: for a request whose
    answer must reach the caller for it to clean up after it (a point in time or a scroll
    the server opens, whose id only its answer carries; the request has a timeout). A
    second one does not wait."""
    with stops_held(second_now=True):
        yield


STOPS = (signal.SIGINT, signal.SIGTERM)


@dataclass(eq=False)  # each block its own: found in _HOLDS by identity, not by value
class _Hold:
    """What one open `stops_held` block caught, and whether it delivered it."""

    second_now: bool
    caught: list[signal.Signals] = field(default_factory=list)
    delivered: bool = False


_HOLDS: list[_Hold] = []  # the main thread's open holds, innermost last


class Holding:
    """A stop's handler (Python's Ctrl-C one, the command line's SIGTERM one) that holds
    the stop for the innermost open `stops_held` block of the main thread, if any, and
    else is the handler it wraps. The command line installs it once, before polars sets
    its own SIGINT handler in front of Python's: a block then swaps no handler."""

    def __init__(self, handler: Callable[[int, Any], Any]):
        self.handler = handler

    def __call__(self, signum: int, frame: Any) -> None:
        if not _HOLDS:
            self.handler(signum, frame)
            return
        hold = _HOLDS[-1]
        hold.caught.append(signal.Signals(signum))
        if hold.second_now and len(hold.caught) > 1 and not hold.delivered:  # asked twice
            hold.delivered = True
            self.handler(signum, frame)


def _default(signum: int, frame: Any) -> None:
    """A stop whose handler is the system's default (SIGTERM outside the command line),
    delivered: the process ends as that signal ends it."""
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


def _handler(handler: Any) -> Callable[[int, Any], Any] | None:
    """What delivers a stop whose handler is `handler` (None: not Python's to hold)."""
    if isinstance(handler, Holding):
        return handler.handler
    return handler if callable(handler) else _default if handler == signal.SIG_DFL else None


def hold_stops() -> None:
    """Ctrl-C's and SIGTERM's Python handlers wrapped in `Holding`, for good."""
    for number in STOPS:
        handler = signal.getsignal(number)
        if callable(handler) and not isinstance(handler, Holding):
            signal.signal(number, Holding(handler))


@contextmanager
def stops_held(*, second_now: bool = False) -> Iterator[Callable[[], None]]:
    """Ctrl-C or SIGTERM during the block is held, and delivered where the block calls
    the `check()` it is given, or when it ends (the stop wins over an error the block
    ended with). For code that works with what other threads need: a handler's
    KeyboardInterrupt is raised at whatever the main thread runs next, and that can be
    the Python-level `__exit__` of a queue's or a future's lock before it releases it;
    the thread that needs the lock then waits for ever (a process pool's manager thread,
    which the process waits for at its exit; CI hung so, once in 30 stops). Between
    `check()`s the block's steps must be short or have timeouts. `second_now`: a second
    stop is delivered at once. A block inside another hands what it caught to that one.
    Only the main thread receives signals; elsewhere, or for a stop that is ignored or
    whose handler was set outside Python, the block runs as it is (a stop whose handler
    is the system's default ends the process at `check()` or the block's end). Where
    the handlers are not yet `Holding` (outside the command line) they are for the
    block, and Python's are put back after it (in front of polars', as at the command's
    end)."""
    if threading.current_thread() is not threading.main_thread():
        yield _unchecked
        return
    before = {n: signal.getsignal(n) for n in STOPS}
    swapped = {n: deliver for n, h in before.items()  # (the rest as they are)
               if not isinstance(h, Holding) and (deliver := _handler(h)) is not None}
    if swapped:
        with _signals_blocked(STOPS):  # no signal between the swaps
            for number, deliver in swapped.items():
                signal.signal(number, Holding(deliver))
    hold, outer = _Hold(second_now), _HOLDS[-1] if _HOLDS else None
    _HOLDS.append(hold)

    def check() -> None:
        if not hold.caught or hold.delivered:
            return
        hold.delivered = True
        number = hold.caught[0]
        if outer is not None and outer in _HOLDS:  # the enclosing block holds it in turn
            outer.caught.append(number)
            return
        deliver = _handler(before[number])
        if deliver is not None:
            deliver(number, None)  # Ctrl-C's raises KeyboardInterrupt, SIGTERM's too

    try:
        yield check
    finally:
        _HOLDS.remove(hold)
        if swapped:
            with _signals_blocked(STOPS):
                for number in swapped:
                    signal.signal(number, before[number])
        check()


def _unchecked() -> None:
    """`check()` where stops are not held: nothing to deliver."""


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


def fork_context() -> ForkContext | SpawnContext:
    """Worker processes forked where the system can: a worker runs Python (json, msgspec,
    Arrow) only, never DuckDB or polars, whose threads the process that forks it holds;
    a spawned one (elsewhere) runs the caller's __main__ again."""
    import multiprocessing

    if hasattr(os, "fork"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` processes (`fork_context`) that leave stops to this process
    and end when it is gone (`ignore_stops`)."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=fork_context(), initializer=ignore_stops,
                               initargs=(os.getpid(),))  # fmt: skip


def ignore_stops(parent: int) -> None:
    """A worker process's initializer (`worker_pool`'s): Ctrl-C and SIGTERM
    (sent to the whole process group by a terminal or a supervisor) are the process's
    that started it, which stops its pool; a worker that raised them too printed its own
    traceback. And it ends when that process, `parent`, is gone (`_ends_with_parent`;
    its id given by it: read in the worker, it may be gone already)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _ends_with_parent(parent)


PARENT_CHECK_S = 0.5  # how often a worker looks whether the process that started it lives


def _ends_with_parent(parent: int) -> None:
    """A thread that ends this worker once `parent`, the process that forked it, is gone
    (killed outright: SIGKILL, out of memory). Its pool's workers each hold the pipes'
    other ends, so none sees them close: they waited for ever, blocked on a full result
    pipe or an empty task one, holding the command's stdout and stderr (a `$(...)` or a
    pipe into `tee` then never ended) and the store's files open. A worker that cannot
    start a thread (a process's thread limit) works on without it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    try:
        threading.Thread(target=watch, name="forensics-parent", daemon=True).start()
    except RuntimeError:  # ("can't start new thread")
        pass


def cancelled(futures: Iterable[Future[Any] | None]) -> None:
    """Each future not started cancelled, a stop held meanwhile (`Future.cancel` takes a
    lock the pool's threads need: see `stops_held`)."""
    with stops_held():
        for future in futures:
            if future is not None:
                future.cancel()


def waited(future: Future[T]) -> T:
    """`future.result()`, with a stop (Ctrl-C, SIGTERM) acted on while this thread waits,
    at most 0.2 s after it came, and only between the waits: a stop raised inside one
    could leave the future's lock held, and the thread that sets its result waiting for
    ever (`stops_held`). (A plain wait would not do either: polars, once imported,
    handles SIGINT itself with SA_RESTART, so the kernel resumes a wait the signal
    interrupted, and Python's handler runs only when the main thread next runs.)"""
    with stops_held() as check:
        while True:
            try:
                return future.result(timeout=0.2)
            except TimeoutError:
                if future.done():  # done since: its result, or the work's own TimeoutError
                    return future.result()
            check()
