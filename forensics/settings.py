"""What a caller sets for the library calls it makes, in context variables: where long
analyses report how far they are, and how many processes rebuild facts. A shared piece
(no layer): every command sets both, also one that then imports nothing else (an
ingest that finds nothing new, forensics/quick.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Where long analyses report how far they are: (stage, done, total); None: nowhere.
PROGRESS: ContextVar[Callable[[str, int, int], None] | None] = ContextVar(
    "forensics_progress", default=None
)
# what `--workers` sets for the commands of one process (None: FORENSICS_WORKERS, else
# every core this process may use; engines/local.py)
WORKERS: ContextVar[int | None] = ContextVar("forensics_workers", default=None)


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
