"""The store's calls priced once: `priced_calls`, and what it was priced with.

Pricing every call (queries/cost/calls.sql: usage, the tier each input reaches, both
bounds part by part) was most of every cost command's time on a large store, and each
command priced the same calls with the same book again (0.6 s of `cost --by day`, and
more where a command reads the calls more than once, at 1,000,000 events). Where the
facts are brought up to date the whole store is priced once, with the book a cost of
the store uses when given no prices file, and kept in `priced_calls`; so are each tool
result's first send and what it cost when sent and re-sent (`priced_first_sends`,
`priced_tool_calls`, at all times: a time range changes which sends count, so a cost
of a time range prices those), and each call's prompt cache with the default break
rules (`cached_calls`: a time range keeps its rows, the threads are whole). A cost
of some of the sessions reads its rows from there (billed.Costing).

The rows are those calls.sql gives for the whole store, so reading them for a
selection is exact: every figure of a call depends on that call, its session and the
store (a logged record is matched among all of the store's calls), never on which
other sessions are selected. They are used only while everything they were priced
from is unchanged, as the stamp below checks: the kept ratio fit (which changes with
the events and facts), the logged records, the price book (genai-prices' release, a
prices file's text and where it is kept) and the code that prices (the queries and
modules). Otherwise calls are priced as the query asks, as before: a prices file given
to the command, an upgraded genai-prices, a store an older release wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import sql
from ..errors import ForensicsError
from ..settings import home_expanded
from ..store import Store
from ..store.facts import FITS_KEY  # store_meta: the kept ratio fit
from ..store.prices import kept as kept_prices
from .prices import PriceBook, parse_overrides, read_overrides

PRICES_ENV = "FORENSICS_PRICES"  # a prices file every cost uses unless given another

TABLE = "priced_calls"
TOOL_TABLE = "priced_tool_calls"  # queries/cost/tool_calls.sql over the store at all times
FIRST_SENDS = "priced_first_sends"  # queries/cost/first_sends.sql, the same
CACHE_TABLE = "cached_calls"  # queries/cost/cache_calls.sql, the same, default break rules
STAMP_KEY = "priced_calls"  # store_meta: the stamp of the rows in TABLE
# the views calls.sql reads, in the order they build on each other (billed._VIEWS)
VIEWS = {
    "cost_logged_writes": "cost/logged_writes",
    "cost_transcript_writes": "cost/transcript_writes",
    "cost_transcript_copies": "cost/transcript_copies",
    "cost_calls": "cost/calls",
}
_MODULES = ("billed.py", "prices.py", "stored.py")
_ALSO = ("cost/call_prices", "cost/first_sends", "cost/tool_calls",  # TOOL_TABLE's too
         "cost/cache_calls")  # and CACHE_TABLE's


def _code() -> str:
    """A digest of what prices a call: the queries and this package's modules."""
    digest = hashlib.sha256()
    for source in (*VIEWS.values(), *_ALSO):
        digest.update(sql.load(source).sql.encode())
    for name in _MODULES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


def stamp(store: Store, book: PriceBook) -> str:
    """What the store's priced calls for `book` depend on, as one string."""
    (fits, logged) = store.run(
        "SELECT (SELECT value FROM store_meta WHERE key = ?),"
        " (SELECT [count(*), max(ingest_id)] FROM logged)",
        [FITS_KEY],
    )[0]
    parts = [
        hashlib.sha256((fits or "").encode()).hexdigest(),
        logged,
        book.identity,
        _code(),
    ]
    return json.dumps(parts, default=str)


def current(store: Store, book: PriceBook) -> bool:
    """Whether `priced_calls` holds the store's calls priced by `book`, as they are."""
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [STAMP_KEY])
    return bool(rows) and rows[0][0] == stamp(store, book)


def mark(store: Store, book: PriceBook) -> None:
    store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [STAMP_KEY, stamp(store, book)])


def book_of(store: Store | None) -> PriceBook:
    """The book a cost uses when given no prices file: genai-prices' bundled, dated
    prices, with the overrides and aliases of the file $FORENSICS_PRICES names first,
    else of the one kept in `store` (`forensics prices --keep`)."""
    path = os.environ.get(PRICES_ENV) or None
    if path is not None:
        try:
            return PriceBook(read_overrides(home_expanded(path)))
        except ForensicsError as e:  # (the path came from the environment: say so)
            raise ForensicsError(f"{e} (named by {PRICES_ENV})", hint=e.hint) from None
    found = None if store is None else kept_prices(store)
    if store is None or found is None:
        return PriceBook()
    text, name, when = found
    return PriceBook(parse_overrides(text, Path(name), f"{name} (kept in {store.path} {when})"))


def unmark(store: Store) -> None:
    store.run("DELETE FROM store_meta WHERE key = ?", [STAMP_KEY])
