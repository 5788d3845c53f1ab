"""The growth ranking's figures of every tool call, kept: `growth_kept`.

`forensics growth` ranks every selected tool call by how much its result grew the next
request's window: each tool call joined to the calls before and after it
(queries/facts/growth_figures.sql), 0.5 s and about 200 MB of DuckDB's memory at
1,000,000 events each time, for figures that change only when the facts or the fitted
ratios do. Where the facts are brought up to date they are computed once for every
session with the ratios the refresh fitted and kept, stamped with those ratios, the
events and facts they were computed from, and this code; `growth` reads them when the
ratios it sizes with are the kept ones and the stamp holds, and computes them otherwise
(the same rows: tests/test_facts.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .. import sql
from ..selection import Selection
from ..store import Store
from ..store.facts import FITS_KEY

if TYPE_CHECKING:  # (imported where used: `holds` needs no analysis, forensics/quick.py)
    from .stored import Facts

TABLE = "growth_kept"
STAMP_KEY = "growth_kept"  # store_meta: the fit and code the kept rows were computed with
FIGURES = "facts/growth_figures"


def stamp(store: Store) -> str | None:
    """What the kept figures were computed from: the kept fit's ratios, the events (count,
    newest ingest: a session read again is loaded again), the facts (counts, rules), and
    the code; None when no fit is kept. Not the ingest the facts are current through: an
    ingest that loads nothing moves it, and recomputing for it cost 0.12 s of an
    unchanged Claude Code ingest of 2 GB."""
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [FITS_KEY])
    if not rows:
        return None
    ratios = json.loads(rows[0][0]).get("ratios")
    (facts,) = store.run(
        "SELECT [(SELECT count(*) FROM events)::VARCHAR, (SELECT max(ingest_id) FROM events)"
        "::VARCHAR, (SELECT count(*) FROM fact_tool_calls)::VARCHAR, (SELECT count(*) FROM"
        " fact_calls)::VARCHAR, (SELECT value FROM store_meta WHERE key = 'facts_rules')]"
    )[0]
    digest = hashlib.sha256(json.dumps([ratios, facts], sort_keys=True, default=str).encode())
    digest.update(sql.load(FIGURES).sql.encode())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def holds(store: Store) -> bool:
    """Whether the kept figures were computed from what the store holds now."""
    kept = store.kept_stamp(STAMP_KEY, TABLE)
    return kept is not None and kept == stamp(store)


def current(facts: Facts) -> bool:
    """Whether `facts` may read the kept figures: sized with the kept ratios, and the
    figures kept with them."""
    return facts.ratios_kept and holds(facts.store)


def keep(store: Store) -> None:
    """Compute and keep every tool call's figures, unless those kept still hold."""
    from .stored import Facts

    facts = Facts(store, Selection())
    if current(facts) or not facts.ratios_kept:
        return
    query = sql.load(FIGURES).sql.strip().rstrip(";")
    facts.execute(f"CREATE OR REPLACE TABLE {TABLE} AS {query}")  # noqa: S608
    store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [STAMP_KEY, stamp(store)])
