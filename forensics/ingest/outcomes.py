"""Task outcomes into the store, as one ingest: every row checked before any is kept.

A row is skipped, with its file and row, when it cannot be read, when its session is
not in the store (load the sessions first: an outcome of a session the store does not
hold has no cost), or when it repeats an execution (session, invocation) an earlier
row of the same load gave. A row for an execution the store already has is already
stored when it says the same (task, arm, success, score) and is left alone; when it
differs it is a skip naming what differs and where the stored one came from, unless
`replace` is given: then it replaces the stored one (counted in the ledger's notes).
Nothing a load did not mean to change is rewritten.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import SourceError
from ..model import Outcome, Skip
from ..sources.files.outcomes import read_outcomes
from ..store import Store, ledger
from ..store.ledger import IngestResult


def ingest_outcomes(
    store: Store,
    paths: Sequence[Path],
    *,
    arm: str | None = None,
    threshold: float | None = None,
    eval_only: bool = False,
    replace: bool = False,
) -> IngestResult:
    shown = ", ".join(str(p) for p in paths[:3]) + (
        f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    )
    filters: dict[str, object] = {
        k: v for k, v in (("arm", arm), ("threshold", threshold)) if v is not None
    }
    result = IngestResult(ledger.next_id(store), "outcomes", shown, filters)
    started, clock = ledger.now(), time.monotonic()
    rows: list[Outcome] = []
    for path in paths:
        before = len(result.skips)
        try:
            found = read_outcomes(
                Path(path), result.skips, arm=arm, threshold=threshold, eval_only=eval_only
            )
        except SourceError as e:  # one unreadable file: a skip; the others still load
            result.skips.append(Skip(str(path), str(e)))
            found = []
        result.rows_read += len(found) + len(result.skips) - before
        rows += found
    known = {r[0] for r in store.run("SELECT DISTINCT session_id FROM sessions")}
    # an outcome of a turn the store lacks would be loaded, then left out of every task
    asked = sorted({r.session_id for r in rows if r.invocation_id})
    turns: set[tuple[str, str]] = set()
    if asked:
        turns = set(store.run("SELECT DISTINCT session_id, invocation_id FROM events"
                              " WHERE session_id IN (SELECT unnest(?::VARCHAR[]))", [asked]))
    seen: dict[tuple[str, str], str] = {}
    kept: list[Outcome] = []
    for row in rows:
        key = (row.session_id, row.invocation_id or "")
        if row.session_id not in known:
            why = f"session {row.session_id!r} is not in the store"
            result.skips.append(Skip(row.locator, why))
        elif row.invocation_id and key not in turns:
            why = f"turn {row.invocation_id!r} is not in session {row.session_id!r}"
            result.skips.append(Skip(row.locator, why))
        elif key in seen:
            result.skips.append(Skip(row.locator, f"the same execution as {seen[key]}"))
        else:
            seen[key] = row.locator
            kept.append(row)
    try:
        with store.transaction():
            stored = {
                (s, i): ((t, a, ok, sc), ingest)
                for s, i, t, a, ok, sc, ingest in store.run(
                    "SELECT session_id, invocation_id, task_id, arm, success, score, ingest_id"
                    " FROM outcomes WHERE (session_id, invocation_id) IN"
                    " (SELECT (unnest(?::VARCHAR[]), unnest(?::VARCHAR[])))",
                    [[r.session_id for r in kept], [r.invocation_id or "" for r in kept]],
                )
            }
            written: list[Outcome] = []
            replaced = 0
            for r in kept:
                values = (r.task_id, r.arm, r.success, r.score)
                held = stored.get((r.session_id, r.invocation_id or ""))
                if held is None:
                    written.append(r)
                elif held[0] == values:
                    continue  # already stored, as it was
                elif replace:
                    written.append(r)
                    replaced += 1
                else:
                    result.skips.append(Skip(r.locator, _conflict(held, values)))
            if written:
                store.con.executemany(
                    "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (r.session_id, r.invocation_id or "", r.task_id, r.arm, r.success,
                         r.score, r.source, r.locator, result.ingest_id)
                        for r in written
                    ],  # fmt: skip
                )
            result.rows_loaded = len(written)
            if replaced:
                result.notes["replaced"] = replaced
            result.notes["executions"] = len(kept)
            result.seconds = time.monotonic() - clock
            ledger.write(store, result, started, ledger.now(), "ok", None)
    except BaseException as e:
        result.seconds = time.monotonic() - clock
        ledger.write_stopped(store, result, started, ledger.now(), e)
        raise
    return result


_FIELDS = ("task_id", "arm", "success", "score")


def _conflict(held: tuple[tuple[object, ...], int], values: tuple[object, ...]) -> str:
    """Why a row that names a stored execution with other values was not loaded (the
    same words for every row alike, so a file of them is one line of the summary)."""
    differs = "; ".join(
        # a score is a measurement: its values would make a reason per row
        "score differs" if name == "score" else f"{name} {old!r} there, {new!r} here"
        for name, old, new in zip(_FIELDS, held[0], values, strict=True)
        if old != new
    )
    return f"differs from the outcome ingest {held[1]} stored: {differs}; --replace overwrites it"
