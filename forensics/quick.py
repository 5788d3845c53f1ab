"""The library API's answers that need neither the analyses nor polars and Arrow.

One for now: an ingest of Claude Code transcripts that finds every session as an
earlier ingest read it. What it writes is what the full ingest writes when it reads
nothing (`api.ingest_claude_code`): its ledger row, and the facts marked current
through it, as that ingest's refresh marks them (no fact, fit or price changes). It
costs what finding that out costs, the files' walk and `stat`s and a few lookups in
the store; the full path imported 0.2 s of modules first (the analyses, polars and
Arrow) and rebuilt nothing. `api.ingest_claude_code` asks here first, and the CLI does
before it imports `api`. Where anything is to be read, rebuilt, fitted, priced or
kept again, nothing is written here and the answer is None. (`default_db_path` and
`is_interrupt` are here for the CLI, which needs them before it would import `api`.)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .analysis import kept_growth as growth_kept
from .analysis.rules import RULES_VERSION
from .cost import stored as priced
from .errors import ForensicsError, StoreError
from .settings import home_expanded, workers
from .sources.files.claude_code_layout import DEFAULT_USER, KIND, Layout, layout_of, to_read
from .store import IngestResult, Store, default_db_path, ledger
from .store.facts import is_current, kept_fit, mark_current
from .store.ledger import is_interrupt
from .whatif import kept as guard_kept

__all__ = ["Look", "default_db_path", "is_interrupt", "look_claude_code", "look_in"]


@dataclass
class Look:
    """What a look found: the ingest made (None: something is to be read or rebuilt),
    and the sessions found (None: not looked for), which the full ingest then reads
    without looking for them again."""

    result: IngestResult | None
    layout: Layout | None = None


def look_claude_code(
    store: Store | str | Path | None,
    paths: Sequence[str | Path] = (),
    *,
    user: str | None = None,
    full: bool = False,
) -> Look:
    """`api.ingest_claude_code(store, paths, user=user, full=full)` where it would read
    no file and rebuild no fact: the same ledger row and marks, written here. Its
    result is None, with nothing written, otherwise: `full`, no store yet, a session
    new or changed since an ingest read it for `user`, a file passed over (a skip to
    record), facts not current (other rules, or an ingest since their last refresh),
    or a kept ratio fit, priced calls or guards' or growth figures that no longer hold
    (another release, other prices)."""
    if full:
        return Look(None)
    if isinstance(store, Store):
        return look_in(store, paths, user=user)
    path = home_expanded(store) if store is not None else default_db_path()
    if not path.is_file():  # (no store: the full ingest makes it, or says why not)
        return Look(None)
    with Store.open(path) as opened:
        return look_in(opened, paths, user=user)


def look_in(store: Store, paths: Sequence[str | Path] = (), *, user: str | None = None) -> Look:
    """The look itself, in an open store (see `look_claude_code`)."""
    if store.read_only:
        raise StoreError(f"{store.path} is open read-only; loading needs it writable")
    workers()  # (a FORENSICS_WORKERS the full ingest refuses is refused here too)
    rows = store.query("store/transcript_files", user_id=user or DEFAULT_USER)
    if not rows:  # (nothing read before for this user: every session is new)
        return Look(None)
    known = {p: (size, mtime) for p, size, mtime in rows}
    layout = layout_of([Path(p) for p in paths])
    todo, unchanged = to_read(layout, known)
    if todo or layout.passed_over or not _kept_hold(store):
        return Look(None, layout)
    # (its clock starts where the full ingest's does: once the files are found)
    started, clock = ledger.now(), time.monotonic()
    result = IngestResult(ledger.next_id(store), KIND, ", ".join(layout.roots),
                          {"user": user} if user else {})  # fmt: skip
    # the notes the full ingest's source writes when it reads no file
    result.notes = {"files": 0, "lines": 0, "sessions_unchanged": unchanged}
    with store.transaction():
        result.seconds = time.monotonic() - clock
        ledger.write(store, result, started, ledger.now(), "ok", None)
        mark_current(store, RULES_VERSION, result.ingest_id)
    return Look(result, layout)


def _kept_hold(store: Store) -> bool:
    """Whether the refresh after an ingest that loads nothing would write nothing but
    the facts' mark (engines/local.py `refresh`): the facts current, and the ratio fit,
    the priced calls, the guards' and the growth's figures kept from what the store
    holds now (none of them is computed again; an upgrade or other prices change them)."""
    if not is_current(store, RULES_VERSION) or kept_fit(store) is None:
        return False
    if not (guard_kept.current(store) and growth_kept.holds(store)):
        return False
    try:
        book = priced.book_of(store)
    except ForensicsError:  # (a prices file that cannot be read: the refresh prices nothing)
        return True
    return priced.current(store, book)
