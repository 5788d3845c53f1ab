"""Task outcomes into the store, as one ingest: every row checked before any is kept.

A row is skipped, with its file and row, when it cannot be read, when its session is
not in the store (load the sessions first: an outcome of a session the store does not
hold has no cost), or when it repeats an execution (session, invocation) an earlier
row of the same load gave. A row for an execution the store already has replaces it
(counted in the ledger's notes).
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
    seen: dict[tuple[str, str], str] = {}
    kept: list[Outcome] = []
    for row in rows:
        key = (row.session_id, row.invocation_id or "")
        if row.session_id not in known:
            why = f"session {row.session_id!r} is not in the store"
            result.skips.append(Skip(row.locator, why))
        elif key in seen:
            result.skips.append(Skip(row.locator, f"the same execution as {seen[key]}"))
        else:
            seen[key] = row.locator
            kept.append(row)
    try:
        with store.transaction():
            stored = {
                (s, i): (t, a, ok, sc)
                for s, i, t, a, ok, sc in store.run(
                    "SELECT session_id, invocation_id, task_id, arm, success, score FROM outcomes"
                    " WHERE (session_id, invocation_id) IN"
                    " (SELECT (unnest(?::VARCHAR[]), unnest(?::VARCHAR[])))",
                    [[r.session_id for r in kept], [r.invocation_id or "" for r in kept]],
                )
            }
            replaced = len(stored)
            changed = sum(
                1
                for r in kept
                if (r.session_id, r.invocation_id or "") in stored
                and stored[(r.session_id, r.invocation_id or "")]
                != (r.task_id, r.arm, r.success, r.score)
            )
            if kept:
                store.con.executemany(
                    "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (r.session_id, r.invocation_id or "", r.task_id, r.arm, r.success,
                         r.score, r.source, r.locator, result.ingest_id)
                        for r in kept
                    ],  # fmt: skip
                )
            result.rows_loaded = len(kept) - int(replaced)
            if replaced:
                result.notes["replaced"] = replaced
                result.notes["changed"] = changed
            result.notes["executions"] = len(kept)
            result.seconds = time.monotonic() - clock
            ledger.write(store, result, started, ledger.now(), "ok", None)
    except BaseException as e:
        result.seconds = time.monotonic() - clock
        ledger.write_stopped(store, result, started, ledger.now(), e)
        raise
    return result
