"""The guards audit's figures of every tool result, kept: `guard_kept`.

`forensics guards` reads each result's rows' sizes (34 million at 1,000,000 events)
and reduces them in DuckDB: 0.7 s and 330 MB of its buffers each time, for figures
that change only when the store does. Where the facts are brought up to date they are
computed once (queries/whatif/guard_sizes.sql over every session, at the founding
guard's 3.0 characters per token) and kept with a stamp of what they were computed
from; the audit reads them for that ratio when the stamp still holds and no row of a
selected result is over the budget on its own (how many are needs the rows), and
reduces the rows as before otherwise.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import sql
from ..selection import Selection
from ..store import Store

TABLE = "guard_kept"
STAMP_KEY = "guard_kept"  # store_meta: what the kept rows were computed from
CHARS_PER_TOKEN = 3.0  # the founding guard's estimate, the audit's default
_NO_BUDGET = 2**62  # computed with no row over it: the reader decides per budget


def stamp(store: Store) -> str:
    """What the kept rows depend on: the stored tool results (events, and sums over
    their parts' sizes, so that a part sized again shows), the facts that pick each
    tool call's result, and the code that computes them."""
    (row,) = store.run(sql.load("whatif/guard_kept_stamp").sql)
    digest = hashlib.sha256(sql.load("whatif/guard_sizes").sql.encode())
    digest.update(Path(__file__).read_bytes())
    return json.dumps([*row, digest.hexdigest()], default=str)


def current(store: Store) -> bool:
    return store.kept_stamp(STAMP_KEY, TABLE) == stamp(store)


def keep(store: Store) -> None:
    """Compute and keep every tool result's figures, unless those kept still hold."""
    if current(store):
        return
    from ..analysis.stored import Facts  # (here: the stamp's check needs no analysis)

    facts = Facts(store, Selection())
    query = sql.load("whatif/guard_sizes").sql.strip().rstrip(";")
    facts.execute(f"CREATE OR REPLACE TABLE {TABLE} AS {query}", params={  # noqa: S608
        "budget": _NO_BUDGET, "chars_per_token": CHARS_PER_TOKEN})  # fmt: skip
    store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [STAMP_KEY, stamp(store)])
