"""`forensics cost` and `forensics prices`: usage priced into billed cost, and the prices."""

from __future__ import annotations

import time
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ForensicsError
from ..settings import default_db_path
from ..words import counted
from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    OptionalSessionArg,
    PricesOption,
    SinceOption,
    SourceOption,
    UntilOption,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    selection,
)

if TYPE_CHECKING:
    import polars as pl

    from ..api import PriceBook, Store
    from ..selection import Selection


class By(StrEnum):
    session = "session"
    day = "day"
    agent = "agent"
    model = "model"
    tool = "tool"
    tool_call = "tool-call"
    turn = "turn"
    app = "app"
    call = "call"


def _footnote(sources: str) -> str:
    return (
        f"USD, priced with {sources}; low..high where the store cannot say (cache writes, "
        "a Claude call's thinking, a streamed placeholder output); cost_source says how "
        "each figure is known"
    )


@app.command()
@boundary
def cost(
    session_id: OptionalSessionArg = None,
    by: Annotated[
        By | None,
        typer.Option(
            "--by",
            help="session (the default), day, agent, model, turn, app; tool: what each "
            "tool's results cost when sent and re-sent; tool-call: the same per tool call, "
            "beside its estimated tokens (growth's); call: every call (the default with a "
            "SESSION_ID).",
            case_sensitive=False,
        ),
    ] = None,
    share: Annotated[
        bool,
        typer.Option(
            "--share",
            help="Where the money went: cache reads, cache writes, uncached input, output, "
            "and the tool-output slice, as amounts and percentages.",
        ),
    ] = False,
    ccusage_compatible: Annotated[
        bool,
        typer.Option(
            "--ccusage-compatible",
            help="Claude Code usage as ccusage 20 totals it (--by day or session): its "
            "dedup, its price table (from its install) and rules (each field's tokens above "
            "200,000 at the long-context rate; 1-hour writes at 2x input), to reconcile "
            "with it line by line; without an install, genai-prices under its rules, "
            "fast requests unpriced. Not the provider's bill: docs/claude-code.md.",
        ),
    ] = False,
    ccusage: Annotated[
        Path | None,
        typer.Option(
            "--ccusage",
            help="The ccusage install whose price table --ccusage-compatible uses: its "
            "binary, package or a folder holding node_modules (default: $FORENSICS_CCUSAGE, "
            "else the ccusage on PATH, else genai-prices under ccusage's rules).",
        ),
    ] = None,
    transcripts: Annotated[
        list[Path] | None,
        typer.Option(
            "--transcripts",
            help="With --ccusage-compatible: these Claude Code folders or .jsonl files read "
            "straight, without a store or an ingest (only the lines that record a usage are "
            "parsed; --db is not read). Repeatable. With no store named (--db, "
            "FORENSICS_DB) and none here, the folders ccusage reads ($CLAUDE_CONFIG_DIR, "
            "else ~/.config/claude and ~/.claude) are read so.",
        ),
    ] = None,
    source: SourceOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Billed cost: each model call's measured usage times the price of its UTC day.

    Prices come from genai-prices (bundled, pinned; looked up with the call's day and the
    provider its model name routes to) or from --prices. Gemini's prompt count includes
    its cached tokens and its output is candidates plus thoughts; a Claude prompt count
    includes cache reads and writes. ADK does not store cache writes, so a cost from its
    sessions alone is a range: low assumes none, high that every uncached input token was
    written. A model without a price has no cost (never 0); a call without usage is
    estimated from its window's characters. With --since/--until, the calls in that
    time.

    Claude Code transcripts record every call's usage, cache writes by TTL included
    (5-minute writes at the write rate, 1-hour ones at the 1-hour rate); a 2.1 response
    whose final usage line was never written kept a placeholder output count: its high
    bound adds its content's estimated tokens. --ccusage-compatible totals them as
    ccusage does instead, to reconcile.

    Example: forensics cost --by day --since 2026-11-16 --until 2026-11-23
    Example: forensics cost SESSION_ID --prices contract.toml -f json
    Example: forensics cost --share
    Example: forensics cost --by day --source claude-code --ccusage-compatible
    Example: forensics cost --by day --ccusage-compatible --transcripts ~/.claude/projects
    """
    chosen = by.value if by is not None else ("call" if session_id else "session")
    if share and by is not None:
        raise ForensicsError("--share splits the whole bill", hint="give --share or --by")
    picked = selection(app_name, user, session_id, since, until, source)
    if ccusage is not None and not ccusage_compatible:
        raise ForensicsError("--ccusage names the install --ccusage-compatible reads",
                             hint="add --ccusage-compatible")  # fmt: skip
    if transcripts and not ccusage_compatible:
        raise ForensicsError(
            "--transcripts answers ccusage's question (--ccusage-compatible) without a store",
            hint="add --ccusage-compatible, or `forensics ingest claude-code` them for the "
            "provider's bill",
        )
    if ccusage_compatible:
        if prices is not None:
            raise ForensicsError(
                "--ccusage-compatible prices under ccusage's rules, not with --prices",
                hint="drop --prices (it prices `cost` without the flag)",
            )
        if share or chosen not in ("day", "session"):
            raise ForensicsError(
                "--ccusage-compatible totals by day or by session, as ccusage does",
                hint="--by day or --by session",
            )
        # with no store named (no --db, no FORENSICS_DB) and none here, ccusage's question
        # is answered from its own folders; a store named that is not there is an error
        no_store = db is None and not default_db_path().exists()
        if transcripts or no_store:
            # --db is not a conflict with --transcripts: it may be FORENSICS_DB's
            given = (session_id, app_name, user, source)
            _ccusage_straight(transcripts or [], chosen, ccusage, picked, fmt, given,
                              None if transcripts else default_db_path())  # fmt: skip
            return
    # (imported here: ccusage's question without a store imports neither)
    from .. import api
    from ..columns import (
        COST_CALLS,
        COST_CCUSAGE_DAY,
        COST_CCUSAGE_SESSION,
        COST_SHARE,
        COST_TOOL_CALLS,
        COST_TOOLS,
        cost_spec,
    )

    if ccusage_compatible:
        frame = api.cost_ccusage(db, picked, by=chosen, ccusage=ccusage)
        spec = COST_CCUSAGE_DAY if chosen == "day" else COST_CCUSAGE_SESSION
        shown = frame["price_source"][0] if frame.height else "no Claude Code usage selected"
        emit(frame, fmt, spec, f"ccusage's rules, not the provider's bill; prices: {shown}")
        return
    started = time.monotonic()
    # a prices file given is read first (told before the store when it cannot be); the
    # store is opened once, for the prices it keeps and its calls
    given_book = api.price_book(prices) if prices is not None else None
    with api.using(db) as store:
        book = given_book if given_book is not None else api.price_book(None, store)
        if share:
            frame = api.cost_share(store, picked, prices=book)
        else:
            frame = api.cost(store, picked, by=chosen, prices=book)
        unpriced = [] if share else _unpriced_models(frame, store, picked, book)
    note = _footnote(book.sources)
    if share:
        emit(frame, fmt, COST_SHARE, note)
        _stale_hint(db, prices, started)
        return
    if chosen in BY_COST:  # the costliest first (a day, a turn, a call: in time order)
        frame = frame.sort("cost_usd_low", descending=True, nulls_last=True, maintain_order=True)
    specs = {"call": COST_CALLS, "tool": COST_TOOLS, "tool-call": COST_TOOL_CALLS}
    spec = specs.get(chosen) or cost_spec(chosen)
    emit(frame, fmt, spec, note)
    _unpriced_hint(frame, unpriced, book)
    _stale_hint(db, prices, started)


SLOW_S = 1.0  # a cost command slower than this looks for kept prices gone stale


def _stale_hint(db: Path | None, prices: Path | None, started: float) -> None:
    """A slow command on the store's own prices: say so when the calls it keeps priced
    are out of date (each command then prices them all again, silently slower)."""
    from .. import api

    if prices is not None or time.monotonic() - started < SLOW_S:
        return
    if api.priced_calls_current(db):
        return
    echo(
        "Hint: the calls this store keeps priced are out of date (priced by another release "
        "or another prices file), so each cost command prices them all again; "
        "`forensics analyze` keeps them priced once more",
        err=True,
    )


BY_COST = ("session", "agent", "model", "app", "user")


class CacheBy(StrEnum):
    call = "call"
    turn = "turn"
    session = "session"
    agent = "agent"
    day = "day"


@app.command()
@boundary
def cache(
    session_id: OptionalSessionArg = None,
    by: Annotated[
        CacheBy | None,
        typer.Option(
            "--by",
            help="session (the default), turn, agent, day; call: every call with its "
            "thread's previous one (the default with a SESSION_ID).",
            case_sensitive=False,
        ),
    ] = None,
    min_break_tokens: Annotated[
        int,
        typer.Option(
            "--min-break-tokens",
            help="A prefix break reads at least this many tokens fewer than the prefix the "
            "thread's previous call left cached (1,024: the shortest prompt Anthropic's "
            "models cache).",
        ),
    ] = 1024,
    min_break_share: Annotated[
        float,
        typer.Option(
            "--min-break-share",
            help="...and at least this share of that prefix (0 to 1).",
        ),
    ] = 0.1,
    source: SourceOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    prices: PricesOption = None,
    app_name: AppPick = None,
    user: UserPick = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """The prompt cache: what it read, wrote and saved, and where its prefix broke.

    Each call's prompt split into cache reads, cache writes (5-minute and 1-hour, where a
    Claude Code transcript, a LiteLLM payload or a span recorded them; ADK stores none)
    and uncached input; its hit rate (reads over the prompt); what the reads saved
    against the uncached input rate, and net of what the writes cost above it.

    A prefix break is a call that read well below what its thread's previous call left
    cached (a thread: one agent's requests in one session and branch). Its cost is what
    those tokens cost written or sent uncached instead of read; its cause, the first
    that applies: compaction (measured), model changed (measured), system instruction,
    tool declarations or earlier contents changed (traced: ADK's traces of both
    requests, with where they differ), ttl (the calls further apart than the cache
    lives: inferred), else unexplained. docs/cache.md.

    Example: forensics cache --by day
    Example: forensics cache SESSION_ID
    Example: forensics cache --by call -f csv > calls.csv
    """
    from .. import api
    from ..columns import CACHE_CALLS, cache_spec

    started = time.monotonic()
    chosen = by.value if by is not None else ("call" if session_id else "session")
    picked = selection(app_name, user, session_id, since, until, source)
    book = api.price_book(prices, db if db is not None else api.default_db_path())
    if chosen == "call" and fmt is not Format.table:  # a run of sessions at a time
        emit(api.cache_in_runs(db, picked, prices=book, min_break_tokens=min_break_tokens,
                               min_break_share=min_break_share), fmt, CACHE_CALLS)  # fmt: skip
        _stale_hint(db, prices, started)
        return
    frame = api.cache(db, picked, by=chosen, prices=book, min_break_tokens=min_break_tokens,
                      min_break_share=min_break_share)  # fmt: skip
    if chosen in ("session", "agent"):  # the costliest breaks first
        frame = frame.sort("break_cost_usd_high", descending=True, nulls_last=True,
                           maintain_order=True)  # fmt: skip
    spec = CACHE_CALLS if chosen == "call" else cache_spec(chosen)
    emit(frame, fmt, spec, _cache_footnote(book.sources))
    _stale_hint(db, prices, started)


def _cache_footnote(sources: str) -> str:
    return (
        f"USD, priced with {sources}; tokens measured (writes where a record gives them); "
        "breaks inferred from the thread's previous call; low..high where the writes are "
        "unknown; a break's cause is measured (compaction, model), traced (system, tools, "
        "history) or inferred (ttl)"
    )


def _ccusage_straight(
    paths: list[Path],
    by: str,
    ccusage: Path | None,
    picked: Selection,
    fmt: Format,
    store_options: tuple[object, ...],
    no_store: Path | None,
) -> None:
    """--ccusage-compatible from transcripts, without a store: --by (day or session, as
    the caller checked), --since, --until and --ccusage apply; `store_options` select a
    store's sessions. `no_store`: the store that is not there, when no --transcripts
    were given."""
    from .. import straight

    if any(o is not None for o in store_options):
        reads = ("--transcripts reads" if no_store is None
                 else f"with no store at {no_store}, ccusage's totals read")  # fmt: skip
        raise ForensicsError(
            f"{reads} the files whole: a session, --app, --user and --source select a store's "
            "sessions",
            hint="use --since/--until, or ingest them (forensics ingest claude-code) and "
            "select in the store",
        )
    if no_store is not None:
        echo(f"No store at {no_store}: ccusage's totals are read straight from the "
             "transcripts ccusage reads (--transcripts names others).", err=True)  # fmt: skip
    frame, read = straight.cost_ccusage_transcripts(
        paths, by=by, ccusage=ccusage, since=picked.since, until=picked.until
    )
    skips = read["skips"]
    if skips:
        where, why = skips[0]
        echo(f"Skipped {counted(len(skips), 'line')} that could not be read (the first: "
             f"{where}: {why})", err=True)  # fmt: skip
    from ..columns import COST_CCUSAGE_DAY, COST_CCUSAGE_SESSION  # (imported by now)

    spec = COST_CCUSAGE_DAY if by == "day" else COST_CCUSAGE_SESSION
    shown = frame["price_source"][0] if frame.height else "no Claude Code usage found"
    read_from = (f"read straight from {counted(read['files'], 'file')} "
                 f"({read['bytes'] / 1e6:,.1f} MB) under {', '.join(read['roots'])}, no store: "
                 f"{counted(read['lines_parsed'], 'line')} with a usage parsed")  # fmt: skip
    emit(frame, fmt, spec, f"ccusage's rules, not the provider's bill; prices: {shown}; "
         f"{read_from}")  # fmt: skip


def _unpriced_models(
    frame: pl.DataFrame, store: Store, picked: Selection, book: PriceBook
) -> list[str | None]:
    """The models of `frame`'s calls that have no price (none: every call is priced),
    asked of the store the cost was read from."""
    import polars as pl

    from .. import api

    if "unknown_calls" not in frame.columns or not frame["unknown_calls"].sum():
        return []
    models = api.cost(store, picked, by="model", prices=book).filter(pl.col("unknown_calls") > 0)
    return list(models["model"].to_list())


def _unpriced_hint(frame: pl.DataFrame, models: list[str | None], book: PriceBook) -> None:
    """Calls whose model has no price: which models, and how to price them."""
    if not models:
        return
    names = ", ".join(m or "(none named)" for m in models[:5])
    sample = " (the bundled sample's scripted models: sample_data/prices.toml)" if any(
        str(m).startswith("scripted-") for m in models) else ""  # fmt: skip
    how = (
        f"give their rates with --prices FILE{sample}, or keep a file for this store with "
        "`forensics prices --keep FILE`"
    )
    if book.overrides is not None:  # a file was given or kept: it does not price them
        how = (
            f"the prices file {book.overrides.label} does not price them: add a [[price]] for "
            "each (an [[alias]] prices one as a model genai-prices knows: `forensics prices "
            "MODEL` shows whether it does)"
        )
    echo(
        f"Hint: {counted(int(frame['unknown_calls'].sum()), 'call')} unpriced: no price for "
        f"{names}; {how}",
        err=True,
    )


@app.command()
@boundary
def prices(
    models: Annotated[
        list[str] | None,
        typer.Argument(help="Model names as calls record them; default: the store's models."),
    ] = None,
    on: Annotated[
        str | None,
        typer.Option(
            "--on",
            help="The UTC day (2026-11-16); default: today, or for the store's models the "
            "day of each one's newest call.",
        ),
    ] = None,
    prices_file: PricesOption = None,
    keep: Annotated[
        Path | None,
        typer.Option(
            "--keep",
            help="Keep this prices file in the store (checked first): every later cost of "
            "the store uses it unless --prices or FORENSICS_PRICES names another.",
        ),
    ] = None,
    forget: Annotated[
        bool, typer.Option("--forget", help="Drop the prices file the store keeps.")
    ] = False,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Which price applies to a model on a day, tier by tier, and where it came from.

    USD per million tokens: input, cache read, cache write (5 minutes and 1 hour),
    output; `tier_above` is the input size above which a whole request pays that tier.
    Overrides come from --prices, else FORENSICS_PRICES, else the file the store keeps
    (--keep), then genai-prices.

    Example: forensics prices gemini-2.5-pro --on 2026-11-16
    Example: forensics prices us.anthropic.claude-sonnet-4-20250514-v1:0
    Example: forensics prices --keep contract.toml
    """
    from .. import api
    from ..columns import PRICES

    store = db if db is not None else api.default_db_path()
    if keep is not None or forget:
        if keep is not None and forget:
            raise ForensicsError("--keep and --forget exclude each other")
        if not store.exists():
            raise ForensicsError(f"no store at {store}", hint="load something first, or --db")
        if keep is not None:
            when = api.keep_prices(store, keep)
            done = {"store": str(store), "prices_file": keep.name, "kept": True,
                    "kept_at": when}  # fmt: skip
            said = f"kept {keep.name} in {store} ({when}): its costs use it from now on"
        else:
            had = api.forget_prices(store)
            done = {"store": str(store), "prices_file": None, "kept": False,
                    "dropped": had}  # fmt: skip
            said = f"{store} kept a prices file: dropped" if had else f"{store} kept no prices file"
        if fmt is Format.table:
            echo(said)
        else:  # a program asked: what was done, as a record (a sentence was no JSON)
            import polars as pl

            emit(pl.DataFrame([done]), fmt)
        return

    day = None
    if on is not None:
        try:
            day = date.fromisoformat(on)
        except ValueError:
            raise ForensicsError(f"--on {on!r} is not a day", hint="e.g. --on 2026-11-16") from None
    book = api.price_book(prices_file, store)
    names: list[str] | dict[str, date] = list(models or [])
    if not names:
        names = api.stored_models(store)  # each at the day of its newest call
        if not names:
            raise ForensicsError(
                "the store's calls name no model", hint="name one: forensics prices MODEL"
            )
    frame = api.prices(names, day, prices=book)
    emit(frame, fmt, PRICES, f"USD per million tokens; from {book.sources}")
    if fmt is Format.table and frame["price_source"].is_null().any():
        echo("a model without a price has no cost (never 0): add it to a --prices file")
