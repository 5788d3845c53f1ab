"""The growth ranking's figures of every tool call, kept: `growth_kept`.

`forensics growth` ranks every selected tool call by how much its result grew the next
request's window: each tool call joined to the calls before and after it
(queries/facts/growth_figures.sql), 0.5 s and about 200 MB of DuckDB's memory at
1,000,000 events each time, for figures that change only when the facts or the fitted
ratios do. Where the facts are brought up to date they are computed once for every
session with the ratios the refresh fitted and kept, stamped with that fit (which says
which facts it read) and this code; `growth` reads them when the ratios it sizes with
are the kept ones and the stamp holds, and computes them otherwise (the same rows:
tests/test_facts.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .. import sql
from ..selection import Selection
from ..store import Store
from .stored import FITS_KEY, Facts

TABLE = "growth_kept"
STAMP_KEY = "growth_kept"  # store_meta: the fit and code the kept rows were computed with
FIGURES = "facts/growth_figures"


def stamp(store: Store) -> str | None:
    """The kept fit (its ratios, and the stamp of the facts it read) and the code that
    computes the figures; None when no fit is kept."""
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [FITS_KEY])
    if not rows:
        return None
    digest = hashlib.sha256(rows[0][0].encode())
    digest.update(sql.load(FIGURES).sql.encode())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def current(facts: Facts) -> bool:
    """Whether `facts` may read the kept figures: sized with the kept ratios, and the
    figures kept with them."""
    if not facts.ratios_kept:
        return False
    rows = facts.store.run(
        "SELECT value FROM store_meta WHERE key = ? AND EXISTS (SELECT 1 FROM"
        " information_schema.tables WHERE table_name = ? AND table_schema = 'main')",
        [STAMP_KEY, TABLE],
    )
    return bool(rows) and rows[0][0] == stamp(facts.store)


def keep(store: Store) -> None:
    """Compute and keep every tool call's figures, unless those kept still hold."""
    facts = Facts(store, Selection())
    if current(facts) or not facts.ratios_kept:
        return
    query = sql.load(FIGURES).sql.strip().rstrip(";")
    facts.execute(f"CREATE OR REPLACE TABLE {TABLE} AS {query}")  # noqa: S608
    store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [STAMP_KEY, stamp(store)])
