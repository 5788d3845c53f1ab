"""The library API: a Store and a Selection in, polars DataFrames out.

The CLI and the reports call only this module, so a notebook gets the same answers
as the terminal. Every function takes the store first (an open `Store`, or a path:
then it is opened for that call alone), then what to select, then its options:

    from forensics import api
    with api.open_store("forensics.duckdb") as store:
        scope = api.Scope(store, api.Selection(session="incident"))
        calls, turns = scope.calls(), scope.turns()   # one reconstruction for both

A selection may be given as a session id alone: `api.calls(store, "incident")`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from . import analysis
from .analysis import Ratio, Reconstruction
from .analysis.facts import RULES_VERSION
from .analysis.reconstruct import reconstruct
from .analysis.stored import Facts as StoredFacts
from .columns import COST_BY, EVENTS, FIDELITY, INGEST_SKIPS, INGESTS, SESSIONS
from .cost import billed
from .cost.prices import PriceBook, read_overrides
from .cost.stored import book_of
from .cost.stored import current as priced_current
from .engines.local import Refresh, refresh
from .errors import FactsInterrupted, ForensicsError, SourceError, StoreError
from .families import context_limit as _context_limit
from .families.adk.releases import given as given_release
from .families.mapping import Mapping
from .families.mapping import load as load_mapping
from .ingest import Progress, ingest
from .model import Release
from .quick import look_in
from .selection import Selection
from .settings import PROGRESS, home_expanded
from .settings import progress_to as progress_to  # (the library's: set where it reports)
from .settings import workers as _local_workers
from .settings import workers_to as workers_to  # (and how many processes rebuild facts)
from .sources.base import Source
from .sources.files.adk_json import AdkJsonSource
from .sources.sqlite.adk import AdkSqliteSource
from .store import WATERMARK_OVERLAP_S, IngestResult, Store, default_db_path
from .store.facts import failure, failures
from .store.ledger import is_interrupt as is_interrupt  # the CLI's: Ctrl-C however it surfaced
from .store.lookup import check_session_named, resolve_session, result_preview, stored_keys
from .store.prices import forget as forget_kept_prices
from .store.prices import keep as keep_kept_prices
from .straight import cost_ccusage_transcripts as cost_ccusage_transcripts  # (no store)
from .whatif.guard import Guard
from .whatif.replay import Replay

if TYPE_CHECKING:
    from .plan import PlanReport
    from .sources.files.claude_code_layout import Layout
    from .sources.opensearch.live import Cluster

__all__ = [
    "WATERMARK_OVERLAP_S",
    "IngestResult",
    "Refresh",
    "PlanReport",
    "Scope",
    "Selection",
    "Store",
    "analyze",
    "analyze_export",
    "calls",
    "compaction",
    "compaction_sessions",
    "default_db_path",
    "events",
    "fidelity",
    "growth",
    "ingest_claude_code",
    "ingest_json",
    "ingest_postgres",
    "ingest_skips",
    "ingest_sqlite",
    "ingest_traces",
    "ingests",
    "open_store",
    "plan_report",
    "ratios",
    "sessions",
    "turns",
    "using",
    "window",
]

StoreLike = Store | str | Path | None
SelectionLike = Selection | str | None
PricesLike = PriceBook | str | Path | None


def open_store(path: str | Path | None = None, *, read_only: bool = True) -> Store:
    """The store at `path` (default ./forensics.duckdb or FORENSICS_DB); close it when done.

    A read-only open finds the facts up to date: when an ingest or a rules change left
    some sessions' facts stale, they are rebuilt first (the store opened writable for
    that, as a schema upgrade is); when none is stale, the store is not written."""
    opened = Store.open(path, read_only=read_only)
    if read_only and not facts_current(opened) and _has_stale(opened):
        opened.close()
        try:
            with Store.open(path) as writable:
                refresh(writable, PROGRESS.get())
        except StoreError as e:
            raise StoreError(
                f"the facts of {opened.path} are out of date and it cannot be opened to"
                f" rebuild them: {e}",
                hint="run `forensics analyze` when no other process has the store open",
            ) from None
        opened = Store.open(path, read_only=True)
    return opened


def _has_stale(store: Store) -> bool:
    """Whether some session's facts need building (a ledger row alone, such as a failed
    ingest's, changes none: the store is then read as it is, never written)."""
    from .store.facts import stale

    return bool(stale(store, RULES_VERSION))


def facts_current(store: Store) -> bool:
    """True when the store's facts include every ingest, built by these rules."""
    from .store.facts import is_current

    return is_current(store, RULES_VERSION)


def analyze(store: StoreLike, *, every: bool = False) -> Refresh:
    """Bring the stored facts up to date: rebuild each session whose events, traces or
    release changed, or that other rules built (every session with `every`)."""
    with using(store, read_only=False) as target:
        return refresh(target, PROGRESS.get(), every=every)


def facts_failures(store: StoreLike) -> list[tuple[tuple[str, str, str], str]]:
    """The sessions whose facts could not be built (key, error): no query shows them
    until their inputs or the rules change, or `analyze --rebuild-all` tries again."""
    with using(store) as s:
        return failures(s)


@contextmanager
def using(store: StoreLike, *, read_only: bool = True) -> Iterator[Store]:
    """`store` itself when it is open, else the store at that path, open for the block."""
    if isinstance(store, Store):
        if not read_only and store.read_only:
            raise StoreError(f"{store.path} is open read-only; loading needs it writable")
        yield store
        return
    opened = open_store(store, read_only=read_only)
    try:
        yield opened
    finally:
        opened.close()


@contextmanager
def _loading(store: StoreLike) -> Iterator[Store]:
    """`using(store, read_only=False)` for an ingest: a store the ingest created that
    holds nothing loaded when it ends (a mistyped path, a source that could not be
    read, every row skipped) is removed, not left behind empty (where `sessions` would
    then print no rows instead of saying there is no store). An interrupted one is kept,
    with the ledger row that says so."""
    _local_workers()  # a count of processes refused before the load, not after its commit
    # (the file itself: a link to a store not made yet is kept, the store it made is not;
    # DuckDB's log is beside the name it was given)
    given = None if isinstance(store, Store) else home_expanded(store or default_db_path())
    path = None if given is None else Path(os.path.realpath(given))
    try:
        created = path is not None and not path.exists()
    except OSError:  # a path the system refuses: Store.open says so, nothing is removed
        created = False
    loaded = True
    ended = False  # the ingest, and its facts, returned
    try:
        with using(store, read_only=False) as target:
            try:
                yield target
                ended = True
            except KeyboardInterrupt:  # kept: its ledger says the run was interrupted
                created = False
                raise
            finally:
                if created:
                    loaded = _loaded_any(target)
    except KeyboardInterrupt:
        if ended:  # (as the store was closed: what was committed stays, and is said to)
            raise FactsInterrupted.as_it_ended() from None
        raise
    finally:
        if created and not loaded and path is not None and given is not None:
            for leftover in (path, path.with_name(path.name + ".wal"),
                             given.with_name(given.name + ".wal")):  # fmt: skip
                leftover.unlink(missing_ok=True)


_HOLDING = ("sessions", "events", "logged", "traced_calls", "outcomes",
            # the files a run read whole (an empty transcript), kept only where that run
            # succeeded: a failed one's are never taken as read (store/transcript_files.sql)
            "transcript_files JOIN ingests USING (ingest_id) WHERE status = 'ok'")  # fmt: skip


def _loaded_any(store: Store) -> bool:
    """Whether the store holds anything a source gave (not only its ledger)."""
    import duckdb

    counts = " + ".join(f"(SELECT count(*) FROM {table})" for table in _HOLDING)  # noqa: S608
    try:
        return bool(store.run(f"SELECT {counts}")[0][0])  # table names from code
    except duckdb.Error:  # a store an error left unusable: keep it, to be looked at
        return True


def _selection(selection: SelectionLike) -> Selection:
    if isinstance(selection, str):
        return Selection(session=selection)
    return selection or Selection()


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def _release(adk_version: str | None) -> Release | None:
    if adk_version is None:
        return None
    try:
        return given_release(adk_version)
    except ValueError as e:
        raise ForensicsError(
            f"--adk-version: {e}", hint="give the google-adk release as X.Y.Z, e.g. 1.18.0"
        ) from None


def analyze_export(
    input_dir: str | Path,
    output_dir: str | Path,
    *,
    engine: str = "local",
    master: str = "local[2]",
) -> dict[str, int]:
    """Write the facts of a Parquet export as Parquet under `output_dir`, built by the
    local engine or by Spark (`master` as Spark takes it); returns rows per table."""
    given, output = home_expanded(input_dir), home_expanded(output_dir)
    _apart(given, output)
    if engine == "spark":
        from .engines import spark

        return spark.analyze(given, output, master=master)
    from .engines import parquet

    return parquet.analyze(given, output, PROGRESS.get())


def _apart(export: Path, output: Path) -> None:
    """The facts' folder is not inside the export (its files would be read as the
    export's next time: `ingest parquet` refused it after) nor the export inside it."""
    inside, outer = export.resolve(), output.resolve()
    if inside in outer.parents:
        raise ForensicsError(
            f"--output {output} is inside the export {export}: the facts would become "
            "files of the export",
            hint="give a folder outside it",
        )
    if outer in inside.parents:
        raise ForensicsError(
            f"the export {export} is inside --output {output}",
            hint="give --output a folder beside the export, not above it",
        )


def analyzed_failures(output_dir: str | Path) -> list[tuple[tuple[str, str, str], str]]:
    """The sessions whose facts `analyze_export` could not build into `output_dir`
    (key, error), in key order; each has a fact_sessions row there with its error."""
    from .engines.output import failures

    return failures(Path(output_dir))


def _refreshed(store: Store, result: IngestResult) -> IngestResult:
    """`result`, once the facts of the sessions it changed are rebuilt."""
    try:
        done = refresh(store, PROGRESS.get())
    except BaseException as e:  # (a stop DuckDB names as its own error, too)
        if is_interrupt(e):
            raise FactsInterrupted.after_commit(result.rows_loaded) from None
        raise
    if done.failed:
        n = len(done.failed)
        result.notes["facts_failed"] = (
            f"the facts of {n:,} session{'s' if n != 1 else ''} could not be built: no command"
            " shows them; `forensics analyze` lists them"
        )
    return result


def _load(
    store: StoreLike,
    source: Source,
    selection: Selection,
    incremental: bool,
    progress: Progress | None,
    release: Release | None,
) -> IngestResult:
    """One ingest of a database source with its filters recorded, then its facts."""
    with _loading(store) as target:
        result = ingest(
            target,
            source,
            filters=selection.as_dict(),
            incremental=incremental,
            progress=progress,
            release=release,
        )
        return _refreshed(target, result)


def ingest_postgres(
    store: StoreLike,
    dsn: str,
    selection: Selection | None = None,
    *,
    incremental: bool = True,
    statement_timeout_ms: int = 60_000,
    progress: Progress | None = None,
    adk_version: str | None = None,
) -> IngestResult:
    """Load ADK events from a PostgreSQL DatabaseSessionService database (V0 or V1).

    `adk_version` names the google-adk release that wrote it (its window rules)."""
    from .sources.postgres.adk import AdkPostgresSource  # psycopg only when it is used

    release = _release(adk_version)
    selection = selection or Selection()
    source = AdkPostgresSource(dsn, selection, statement_timeout_ms=statement_timeout_ms)
    return _load(store, source, selection, incremental, progress, release)


def ingest_sqlite(
    store: StoreLike,
    path: str | Path,
    selection: Selection | None = None,
    *,
    incremental: bool = True,
    source_tz: str | None = None,
    progress: Progress | None = None,
    adk_version: str | None = None,
) -> IngestResult:
    """Load ADK events from a SQLite file (DatabaseSessionService V0/V1 or SqliteSessionService).

    Schema V0 stores event times in the writer's local time: the offset is detected from
    the sessions' UTC times, or given as `source_tz` (`+05:30`, `UTC`, `Europe/Berlin`).
    `adk_version` names the google-adk release that wrote it (its window rules)."""
    release = _release(adk_version)
    selection = selection or Selection()
    source = AdkSqliteSource(Path(path), selection, source_tz=source_tz)
    return _load(store, source, selection, incremental, progress, release)


def ingest_traces(store: StoreLike, paths: Sequence[str | Path]) -> IngestResult:
    """Load ADK's trace exports (the dev UI's list of spans): each traced request's sizes."""
    from .ingest.traces import ingest_traces as load

    with _loading(store) as target:
        return _refreshed(target, load(target, [Path(p) for p in paths]))


def ingest_parquet(store: StoreLike, folder: str | Path) -> IngestResult:
    """Read a `forensics export parquet` folder back: the rows the store lacks, one ingest."""
    from .ingest.parquet import ingest_parquet as load

    with _loading(store) as target:
        return _refreshed(target, load(target, Path(folder)))


def export_parquet(
    store: StoreLike, folder: str | Path, selection: SelectionLike = None
) -> dict[str, int]:
    """Write the selected sessions' tables as Parquet under `folder` (new or empty), with a
    manifest; returns the rows written per table."""
    from .store.parquet import export

    with using(store) as s:  # read-only: the export's key list is a temp table
        return export(s, home_expanded(folder), _selection(selection)).rows


def ingest_json(
    store: StoreLike,
    paths: Sequence[str | Path],
    *,
    app: str | None = None,
    user: str | None = None,
    session: str | None = None,
    progress: Progress | None = None,
    adk_version: str | None = None,
) -> IngestResult:
    """Load ADK JSON exports: Session objects (camelCase or snake_case), event lists, NDJSON.

    `adk_version` names the google-adk release that wrote them (its window rules)."""
    release = _release(adk_version)
    # recorded in the ledger as what they are: defaults for files that do not say
    defaults: dict[str, object] = {
        f"default_{k}": v for k, v in (("app", app), ("user", user), ("session", session)) if v
    }
    with _loading(store) as target:
        lookup = Store(target.con.cursor(), target.path, True)  # the reader's own thread
        source = AdkJsonSource(
            [Path(p) for p in paths],
            app=app,
            user=user,
            session=session,
            resolve=lambda sid, ids: stored_keys(lookup, sid, ids),
        )
        try:
            result = ingest(
                target,
                source,
                filters=defaults,
                incremental=False,
                progress=progress,
                release=release,
            )
        finally:
            lookup.close()
        return _refreshed(target, result)


def ingest_claude_code(
    store: StoreLike,
    paths: Sequence[str | Path] = (),
    *,
    user: str | None = None,
    full: bool = False,
    progress: Progress | None = None,
    layout: Layout | None = None,
) -> IngestResult:
    """Load Claude Code transcripts: config folders (holding projects/), projects folders,
    project folders or .jsonl files; none: $CLAUDE_CONFIG_DIR, else ~/.config/claude and
    ~/.claude. Each project is an app, each session a session of `user` (default
    `claude-code`); a session whose files an earlier ingest read for that user, unchanged
    since, is not read again unless `full`. docs/claude-code.md. `layout`: the sessions
    a look just found under `paths` (`quick.look_claude_code(...).layout`), not looked
    for again."""
    from .sources.files.claude_code import DEFAULT_USER, ClaudeCodeSource

    filters: dict[str, object] = {"user": user} if user else {}
    with _loading(store) as target:
        owner = user or DEFAULT_USER
        if not full and layout is None:
            # nothing new and the facts current: the ledger row and the marks (quick.py)
            look = look_in(target, paths, user=user)
            if look.result is not None:
                return look.result
            layout = look.layout
        # per user: the same files read for another user are another user's sessions
        rows = [] if full else target.query("store/transcript_files", user_id=owner)
        known = {p: (size, mtime) for p, size, mtime in rows}
        source = ClaudeCodeSource([Path(p) for p in paths], user=owner, known=known,
                                  workers=_local_workers(), layout=layout)  # fmt: skip
        # incremental by file, not by watermark: a session is read again when one of its
        # files changed
        result = ingest(
            target,
            source,
            filters=filters,
            incremental=False,
            progress=progress,
            commit_each_batch=True,  # a user's folders have no size bound
        )
        return _refreshed(target, result)


# ---------------------------------------------------------------------------
# Logged records: OpenSearch and its files
# ---------------------------------------------------------------------------

# Each index family's time field and sort: real fields, unique together where the
# documents have such (a span's trace and span id); `_shard_doc` is added from 3.3.
INDEX_DEFAULTS = (
    ("otel-v1-apm-span", "startTime", ("startTime", "traceId", "spanId")),
    ("logs-otel-v1", "time", ("time", "_id")),
)
DEFAULT_TIME_FIELD = "@timestamp"


def check_index(index: str) -> None:
    """SourceError for an --index that names no index (a search of none reads them all)."""
    from .sources.opensearch.live import check_index as checked

    checked(index)


def index_defaults(index: str, time_field: str | None) -> tuple[str, tuple[str, ...]]:
    """(time field, sort fields) for an index pattern: Data Prepper's by its names."""
    for prefix, field, sort in INDEX_DEFAULTS:
        if index.startswith(prefix) and time_field in (None, field):
            return field, sort
    chosen = time_field or DEFAULT_TIME_FIELD
    return chosen, (chosen, "_id")


def connect_opensearch(url: str, **options: Any) -> Cluster:
    """A read-only connection to a cluster (sources/opensearch/live.py: credentials from
    the URL, the environment or a netrc file, TLS verified unless `insecure`)."""
    from .sources.opensearch.live import connect

    return connect(url, **options)


def _mapping(path: str | Path | None) -> Mapping | None:
    return load_mapping(Path(path)) if path is not None else None


def ingest_opensearch_files(
    store: StoreLike,
    paths: Sequence[str | Path],
    *,
    mapping: str | Path | None = None,
    progress: Callable[[IngestResult], None] | None = None,
) -> IngestResult:
    """Load OpenSearch documents saved to files (NDJSON of `_source` documents, `_search`
    response bodies, elasticdump or `_bulk` lines) as one ingest."""
    from .ingest.logged import ingest_documents
    from .sources.opensearch.files import documents

    chosen = _mapping(mapping)
    files = [Path(p) for p in paths]
    for path in files:  # every file checked before any is read: no half-run ledger row
        if not path.is_file():
            what = "a directory" if path.is_dir() else "not found"
            raise SourceError(f"cannot read {path}: {what}")

    def every() -> Iterator[Any]:
        for path in files:
            yield from documents(path)

    shown = ", ".join(str(p) for p in files[:3]) + (
        f" and {len(files) - 3} more" if len(files) > 3 else ""
    )
    filters: dict[str, object] = {"mapping": str(mapping)} if mapping else {}
    with _loading(store) as target:
        return ingest_documents(
            target,
            every(),
            kind="opensearch-file",
            location=shown,
            filters=filters,
            mapping=chosen,
            progress=progress,
        )


def opensearch_documents(
    cluster: Cluster,
    index: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    query: str | None = None,
    time_field: str | None = None,
    page_size: int = 5000,
    method: str = "auto",
    progress: Callable[[int], None] | None = None,
) -> Generator[tuple[str, Any], None, None]:
    """(index/_id, _source) of every document the search selects, page by page; close
    it to stop early (the point in time is released)."""
    field, sort = index_defaults(index, time_field)
    for hit in cluster.scan(
        index,
        time_field=field,
        since=since,
        until=until,
        query=query,
        sort=sort,
        page_size=page_size,
        method=method,
        progress=progress,
    ):
        yield f"{hit.index}/{hit.id}", hit.source


def ingest_opensearch(
    store: StoreLike,
    cluster: Cluster,
    index: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    query: str | None = None,
    time_field: str | None = None,
    mapping: str | Path | None = None,
    page_size: int = 5000,
    method: str = "auto",
    progress: Callable[[IngestResult], None] | None = None,
    pages: Callable[[int], None] | None = None,
) -> IngestResult:
    """Load what one search of a live cluster selects (read-only; see
    sources/opensearch/live.py) as one ingest; the filters are recorded in the ledger."""
    from .ingest.logged import ingest_documents

    check_index(index)
    field, _ = index_defaults(index, time_field)
    filters: dict[str, object] = {
        k: v
        for k, v in (
            ("index", index),
            ("since", since.isoformat() if since else None),
            ("until", until.isoformat() if until else None),
            ("query", query),
            ("time_field", field),
            ("mapping", str(mapping) if mapping else None),
        )
        if v is not None
    }
    chosen = _mapping(mapping)
    docs = opensearch_documents(
        cluster,
        index,
        since=since,
        until=until,
        query=query,
        time_field=time_field,
        page_size=page_size,
        method=method,
        progress=pages,
    )
    with _loading(store) as target:
        return ingest_documents(
            target,
            docs,
            kind="opensearch",
            location=f"{cluster.url}/{index}",
            filters=filters,
            mapping=chosen,
            progress=progress,
        )


def explain_mapping(
    documents: Iterable[Any], mapping: str | Path | None = None, sample: int = 20
) -> pl.DataFrame:
    """What the first `sample` documents would load as, without loading anything."""
    from .columns import MAPPING_EXPLAIN
    from .ingest.logged import explain

    names = MAPPING_EXPLAIN.names
    rows = [{n: row.get(n) for n in names} for row in explain(documents, _mapping(mapping), sample)]
    return MAPPING_EXPLAIN.frame(rows)


def opensearch_file_documents(paths: Sequence[str | Path]) -> Iterator[Any]:
    """Every document of the files, in order (what `ingest opensearch-file` reads)."""
    from .sources.opensearch.files import documents

    for path in paths:
        yield from documents(Path(path))


def context_error(code: str | None, message: str | None) -> tuple[int | None, int | None] | None:
    """Whether an error's code and text say the request did not fit the model's window
    (families/context_limit.py: the providers' own wordings): (requested, limit) as the
    text gives them (either None when it gives none), or None when they do not say so."""
    found = _context_limit.parse(code, message)
    return None if found is None else (found.requested, found.limit)


def context_failures(store: StoreLike, selection: SelectionLike = None) -> pl.DataFrame:
    """Context failures from everything loaded: logged records and ADK's stored events,
    merged, each with its turn (both ways), figure, and verdict (analysis/failures.py)."""
    with using(store) as s:
        return _context_failures(s, _selection(selection))


def _context_failures(store: Store, chosen: Selection) -> pl.DataFrame:
    from .columns import CALLS

    if chosen.session is not None:  # a session no record names is a typo, not "no failures"
        check_session_named(store, chosen.session, chosen.app, chosen.user)
    in_adk = chosen.session is None or bool(
        store.run("SELECT count(*) FROM sessions WHERE session_id = ?", [chosen.session])[0][0]
    )
    if not in_adk:
        return _merged_failures(store, chosen, CALLS.frame([]), set())
    return Scope(store, chosen).failures()


def _merged_failures(
    store: Store, chosen: Selection, failed: pl.DataFrame, loaded: set[str]
) -> pl.DataFrame:
    """The failures of `chosen`: `failed` its failed calls (CALLS rows), `loaded` the
    sessions with calls."""
    from .analysis.failures import failures as merge_failures

    logged = store.frame(
        "failures/logged", since=chosen.since, until=chosen.until, session=chosen.session
    )
    if chosen.app is not None or chosen.user is not None or chosen.family is not None:
        # a logged record names no app, user or family: it is the selection's when its
        # session is
        logged = logged.filter(pl.col("session_id").is_in(sorted(loaded)))
    errors = store.frame(
        "failures/adk_errors",
        session_ids=failed["session_id"].to_list(),
        event_ids=failed["call_id"].to_list(),
    )
    return merge_failures(logged, failed, errors, loaded)


def failures_by(frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """The failures grouped: `failure` (as they are), `agent`, `cluster`."""
    from .analysis.failures import by_agent, clusters

    if by == "failure":
        return frame
    if by == "agent":
        return by_agent(frame)
    if by == "cluster":
        return clusters(frame)
    raise ForensicsError(f"--by {by!r} is not a grouping", hint="one of: failure, agent, cluster")


# ---------------------------------------------------------------------------
# What-if: a tool-output guard replayed
# ---------------------------------------------------------------------------

WHATIF_BY = ("turn", "session", "call", "result")
BREAKEVEN_MEMORY_LIMIT = "192MB"  # DuckDB's buffers while breakeven reads (doubled when met)
WHATIF_ASSUMPTION = (
    "The trajectory is held fixed: the same calls in the same order, each request smaller by "
    "what the guard took out of the tool results it carried. What the agent would have done "
    "with fewer rows (answered from less, or paged for more) is not replayed."
)


def whatif(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    row_cap: int | None = None,
    token_cap: int | None = None,
    page_size: int | None = None,
    chars_per_token: float = 3.0,
    tool: str | None = None,
    context_limit: int | None = None,
    by: str = "turn",
    prices: PricesLike = None,
    placement: str = "boundary",
) -> pl.DataFrame:
    """A guard replayed on the selection's history (whatif/), by turn, session, call or
    tool result: occupancy, cumulative input and cost as they were and under the guard,
    the context failures it would have prevented, and the extra turns its saving pays
    for. The trajectory is held fixed. `placement`: `boundary` (cut before the first
    send) or `transcript` (rewritten after it, re-sending the cached prefix from it on:
    docs/whatif.md)."""
    if by not in WHATIF_BY:
        raise ForensicsError(f"--by {by!r} is not a grouping",
                             hint=f"one of: {', '.join(WHATIF_BY)}")  # fmt: skip
    if context_limit is not None and context_limit < 1:
        raise ForensicsError(f"--context-limit {context_limit} is not a count of 1 or more")
    guard = Guard(row_cap=row_cap, token_cap=token_cap, page_size=page_size,
                  chars_per_token=chars_per_token, tool=tool, placement=placement)  # fmt: skip
    with using(store) as s:
        if tool is not None:  # a tool no result came from (a typo) would guard nothing
            _check_tool(s, tool)
        found = Scope(s, selection).whatif(price_book(prices, s), guard, context_limit)
    if by == "result":
        return found.result_frame()
    if by == "call":
        return found.call_frame()
    if by == "session":
        return found.session_frame()
    return found.turn_frame()


def _check_tool(store: Store, tool: str) -> None:
    """ForensicsError when no stored tool result came from `tool`, naming those that did."""
    names = [r[0] for r in store.run(
        "SELECT DISTINCT tool_name FROM parts WHERE kind = 'function_response' "
        "AND tool_name IS NOT NULL ORDER BY 1")]  # fmt: skip
    if tool not in names:
        more = f" and {len(names) - 10:,} more" if len(names) > 10 else ""
        known = ", ".join(names[:10]) + more or "none stored"
        raise ForensicsError(f"--tool {tool!r}: no tool result in the store came from it",
                             hint=f"tools: {known}")  # fmt: skip


def guards(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    budget: int = 16_000,
    row_cap: int = 200,
    chars_per_token: float = 3.0,
) -> pl.DataFrame:
    """Per tool: which results exceeded `budget` and by how much, where a row guard of
    `row_cap` would not have fired, dict payloads, rows over budget on their own, tokens
    per row, and the markdown estimate for flat rows (whatif/audit.py)."""
    if budget < 1:
        raise ForensicsError(f"--budget {budget} is not a count of 1 or more")
    Guard(token_cap=budget, row_cap=row_cap, chars_per_token=chars_per_token)  # checks them
    with using(store) as s:
        return Scope(s, selection).guards(budget, row_cap, chars_per_token)


# ---------------------------------------------------------------------------
# Outcomes and tasks
# ---------------------------------------------------------------------------


def load_outcomes(
    store: StoreLike,
    paths: Sequence[str | Path],
    *,
    arm: str | None = None,
    threshold: float | None = None,
    eval_only: bool = False,
    replace: bool = False,
) -> IngestResult:
    """Load task outcomes (CSV/JSON rows, or ADK's EvalSetResult files) as one ingest;
    `eval_only`: every file must be an EvalSetResult (another is a skip); `replace`: a
    row that differs from a stored execution's outcome replaces it (else it is a skip)."""
    from .ingest.outcomes import ingest_outcomes

    path = None if isinstance(store, Store) else home_expanded(store or default_db_path())
    if path is not None and not path.exists():  # (an outcome names a stored session)
        raise ForensicsError(
            f"no store at {path}: outcomes are of the sessions a store holds",
            hint="ingest the sessions first (`forensics ingest ...`), or give --db",
        )
    with _loading(store) as target:
        return ingest_outcomes(target, [Path(p) for p in paths], arm=arm, threshold=threshold,
                               eval_only=eval_only, replace=replace)  # fmt: skip


def executions(scope: Scope, book: PriceBook) -> pl.DataFrame:
    """One row per loaded outcome of the selected sessions: its task, arm, success, cost
    bounds, model calls and turns (an outcome of one turn: that turn's)."""
    outcomes = scope.store.frame("store/outcomes")
    columns = ["session_id", "invocation_id", "task_id", "arm", "success", "calls", "turns",
               "cost_usd_low", "cost_usd_high"]  # fmt: skip
    if outcomes.is_empty():  # nothing to price (the weekly review asks every week)
        return pl.DataFrame(schema={
            "session_id": pl.String, "invocation_id": pl.String, "task_id": pl.String,
            "arm": pl.String, "success": pl.Boolean, "calls": pl.Int64, "turns": pl.Int64,
            "cost_usd_low": pl.Decimal(38, 18), "cost_usd_high": pl.Decimal(38, 18)})  # fmt: skip
    by_session = scope.cost(book, "session").select(
        "session_id", "calls", "cost_usd_low", "cost_usd_high"
    )
    turns = scope.sessions().select("session_id", "turns")
    whole = (
        outcomes.filter(pl.col("invocation_id") == "")
        .join(by_session, on="session_id", how="inner")
        .join(turns, on="session_id", how="left")
    )
    by_turn = scope.cost(book, "turn").select(
        "session_id", "invocation_id", "calls", "cost_usd_low", "cost_usd_high"
    )
    one_turn = (
        outcomes.filter(pl.col("invocation_id") != "")
        .join(by_turn, on=["session_id", "invocation_id"], how="inner")
        .with_columns(pl.lit(1, dtype=pl.Int64).alias("turns"))
    )
    return pl.concat([whole.select(columns), one_turn.select(columns)], how="vertical")


def compare_executions(frame: pl.DataFrame, baseline: str, arm: str) -> pl.DataFrame:
    """The paired comparison (TASK_COMPARE) of an `executions` frame's two arms."""
    from .analysis.tasks import compare as paired

    known = set(frame["arm"].unique().to_list())
    for name in (baseline, arm):
        if name not in known:
            raise ForensicsError(
                f"no outcomes under arm {name!r}",
                hint=f"arms loaded: {', '.join(sorted(known)) or 'none'}"
                " (`forensics outcomes load FILE --arm NAME`)",
            )
    return paired(frame, baseline, arm)


def arms_of(executions_frame: pl.DataFrame) -> pl.DataFrame:
    """Per arm (TASK_ARMS) of an `executions` frame."""
    from .analysis.tasks import arms

    return arms(executions_frame)


def tasks(store: StoreLike, selection: SelectionLike = None, *, by: str = "task",
          prices: PricesLike = None) -> pl.DataFrame:  # fmt: skip
    """Cost per successful task and trajectory length, per task and arm or per arm."""
    from .analysis.tasks import arms
    from .analysis.tasks import tasks as per_task

    with using(store) as s:
        frame = executions(Scope(s, selection), price_book(prices, s))
    if by == "arm":
        return arms(frame)
    if by == "task":
        return per_task(frame)
    raise ForensicsError(f"--by {by!r} is not a grouping", hint="one of: task, arm")


def compare(store: StoreLike, baseline: str, arm: str, selection: SelectionLike = None,
            *, prices: PricesLike = None) -> pl.DataFrame:  # fmt: skip
    """The paired comparison of two arms (analysis/tasks.py: bootstrap, seeded)."""
    with using(store) as s:
        frame = executions(Scope(s, selection), price_book(prices, s))
    return compare_executions(frame, baseline, arm)


def breakeven(store: StoreLike, selection: SelectionLike = None, *, agent: str | None = None,
              reduction: float = 0.384, prices: PricesLike = None) -> pl.DataFrame:  # fmt: skip
    """How many extra turns cutting the tool-output slice by `reduction` pays for, per
    agent and for all (analysis/tasks.py)."""
    from decimal import Decimal

    from .analysis.tasks import breakeven as rows_of

    if not 0 < reduction <= 1:
        raise ForensicsError(
            f"--reduction {reduction} is not a fraction in (0, 1]", hint="e.g. 0.384 for 38.4%"
        )
    with using(store) as s:
        scope = Scope(s, selection)
        costing = scope.costing(price_book(prices, s))
        # DuckDB's buffers capped: every call is read, and its blocks stayed cached
        found = s.capped(BREAKEVEN_MEMORY_LIMIT, lambda: costing.query("cost/breakeven"))
    rows = {(r["agent"], r["whole"]): r for r in found.iter_rows(named=True)}
    names = sorted(a for (a, whole), r in rows.items() if not whole and a is not None
                   and r["agent_calls"])  # fmt: skip
    groups = []
    for name in [*names, None] if agent is None else [agent]:
        row = rows.get((name, name is None))
        if row is None or not row["calls"]:
            if name is None:  # not one call selected (an empty store, a narrow --since)
                raise ForensicsError(
                    "no model calls in the selection",
                    hint="`forensics sessions` lists what the store holds",
                )
            raise ForensicsError(f"no model calls of agent {name!r}",
                                 hint=f"agents: {', '.join(names) or 'none'}")  # fmt: skip
        inputs = [row["last_read_usd"], row["last_uncached_usd"], row["last_write_usd"]]
        per_call = None
        if row["last_calls"] and None not in inputs:
            per_call = sum(inputs, Decimal(0)) / row["last_calls"]
        groups.append(
            {
                "agent": name or "all",
                "sessions": row["sessions"],
                "unpriced_calls": row["unpriced_calls"],
                "total_usd": row["total_usd"],
                "cache_usd": row["cache_usd"],
                "tool_usd": row["tool_usd"],
                "call_usd": per_call,
            }
        )
    return rows_of(groups, reduction)


# ---------------------------------------------------------------------------
# What is stored
# ---------------------------------------------------------------------------


def sessions(
    store: StoreLike, selection: SelectionLike = None, *, errors_only: bool = False
) -> pl.DataFrame:
    """One row per session: events, turns, first/last event, errors, measured prompt tokens
    (with the selection's since/until: the sessions with an event in that time)."""
    chosen = _selection(selection)
    with using(store) as s:
        frame = s.frame("store/sessions", app=chosen.app, user=chosen.user,
                        session=chosen.session, since=chosen.since, until=chosen.until,
                        errors_only=errors_only)  # fmt: skip
        return SESSIONS.check(frame)


def events(store: StoreLike, selection: SelectionLike) -> pl.DataFrame:
    """One session's events in order: kinds, parts, characters, usage, errors, compaction."""
    chosen = _selection(selection)
    if chosen.session is None:
        raise ForensicsError("events needs a session id", hint="see `forensics sessions`")
    with using(store) as s:
        app, user, session = resolve_session(s, chosen.session, chosen.app, chosen.user)
        return EVENTS.check(s.frame("store/events", app=app, user=user, session=session))


def ingests(store: StoreLike) -> pl.DataFrame:
    """The ingest ledger, newest first."""
    with using(store) as s:
        return INGESTS.check(s.frame("store/ingests"))


def session_ingests(store: StoreLike, key: tuple[str, str, str]) -> pl.DataFrame:
    """The ingests that stored one session's events or traced its requests, each with
    the session's own source (its files) and how many of its rows it loaded."""
    with using(store) as s:
        return s.frame("store/session_ingests", app=key[0], user=key[1], session=key[2])


def ingest_skips(store: StoreLike, ingest_id: int) -> pl.DataFrame:
    """The rows one ingest skipped (the first few hundred), with locator and reason."""
    with using(store) as s:
        # (those the ledger lists, an unrecorded run's too: it skipped none that is kept)
        known = sorted(s.frame("store/ingests")["ingest_id"].to_list())
        if ingest_id not in known:
            shown = f"ingests {known[0]} to {known[-1]}" if known else "no ingests yet"
            raise ForensicsError(
                f"no ingest {ingest_id} in the store ({shown})",
                hint="`forensics ingests` lists them with their ids",
            )
        return INGEST_SKIPS.check(s.frame("store/ingest_skips", ingest_id=ingest_id))


def plan_report(
    dsn: str,
    selection: Selection | None = None,
    *,
    analyze: bool = False,
    extra_queries: Sequence[str | Path] = (),
    statement_timeout_ms: int = 30_000,
) -> PlanReport:
    """How the forensic lookups run on an ADK PostgreSQL database (see `forensics.plan`)."""
    from .plan import plan_report as report  # psycopg only when it is used

    return report(
        dsn,
        selection=selection or Selection(),
        analyze=analyze,
        extra_queries=extra_queries,
        statement_timeout_ms=statement_timeout_ms,
    )


# ---------------------------------------------------------------------------
# What the calls saw: one reconstruction per scope
# ---------------------------------------------------------------------------


class Scope:
    """The selected sessions of one open store, rebuilt once for every frame asked of them.

    A session id in the selection must name one session (add app and user when it
    exists in several); app, user, session and the time range are pushed into the
    store's SQL, so only the selected sessions are read and rebuilt.
    """

    def __init__(self, store: Store, selection: SelectionLike = None):
        if not facts_current(store) and _has_stale(store):
            if store.read_only:
                raise StoreError(
                    f"the facts of {store.path} are out of date (an ingest ran since it was"
                    " opened, or did not finish)",
                    hint="open it again (`api.open_store` rebuilds them), or run"
                    " `forensics analyze`",
                )
            refresh(store, PROGRESS.get())
        self.store = store
        chosen = _selection(selection)
        if chosen.session is not None:
            key = resolve_session(store, chosen.session, chosen.app, chosen.user)
            chosen = chosen.narrowed(*key)
            error = failure(store, key)
            if error is not None:  # said, not shown as a session with nothing in it
                raise ForensicsError(
                    f"the facts of session {key[2]} could not be built: {error}",
                    hint="`forensics analyze --rebuild-all` tries again (after an upgrade);"
                    " `forensics events` shows what it stored",
                )
        self.selection = chosen

    @cached_property
    def facts(self) -> StoredFacts:
        """The selected sessions' stored facts (brought up to date when the store opened)."""
        return StoredFacts(self.store, self.selection)

    @cached_property
    def reconstruction(self) -> Reconstruction:
        """The selected sessions rebuilt in memory: for what the facts do not keep (one
        call's parts, the rebuilt sizes of traced calls)."""
        return reconstruct(self.store, self.selection, PROGRESS.get())

    def sessions(self) -> pl.DataFrame:
        return sessions(self.store, self.selection)

    def calls(self, turn: int | None = None) -> pl.DataFrame:
        """Per call: window occupancy (measured, estimated, by role), cumulative input so far
        (read once per scope: a report asks for them more than once)."""
        found: dict[int | None, pl.DataFrame] = self.__dict__.setdefault("_calls", {})
        if turn not in found:
            found[turn] = self.facts.calls(turn)
        return found[turn]

    def calls_in_runs(self) -> Iterator[pl.DataFrame]:
        """`calls()` a run of sessions at a time (about 60,000 events' calls a frame):
        the same rows in the same order, never all held at once."""
        return self.facts.calls_in_runs()

    def window(self, call_id: str) -> pl.DataFrame:
        """What one call's request contained: each event's parts, in order, with sizes."""
        rec = self.reconstruction
        try:
            return analysis.window_frame(rec, call_id)
        except LookupError:
            known = [c.event.event_id for _, c in rec.calls if c.kind != "summarizer"][:5]
            session = self.selection.session
            raise ForensicsError(
                f"no agent call {call_id!r} in session {session!r}",
                hint=f"call ids come from `forensics calls {session}`"
                + (f", e.g. {', '.join(known)}" if known else ""),
            ) from None

    def growth(self, top: int | None = None) -> pl.DataFrame:
        """Tool calls ranked by how much they grew the window, with what re-sending cost."""
        return self.facts.growth(top)

    def turns(self) -> pl.DataFrame:
        """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, error."""
        return self.facts.turns()

    def turns_in_runs(self) -> Iterator[pl.DataFrame]:
        """`turns()` a run of sessions at a time: the same rows in the same order."""
        return self.facts.turns_in_runs()

    def compaction(self) -> pl.DataFrame:
        """Per compaction event: its range, what it covers (stored), what the next call sent."""
        return self.facts.compaction_ranges()

    def compaction_sessions(self, threshold_tokens: int | None = None) -> pl.DataFrame:
        """Per session: the raw window retained after the last range; calls over a threshold."""
        return self.facts.compaction_sessions(threshold_tokens)

    def fidelity(self) -> pl.DataFrame:
        """Per traced call: the rebuilt window against the traced request (the selected
        sessions are rebuilt only when ADK traced some of their requests)."""
        traced = self.store.frame("store/traced_calls", session=self.selection.session)
        if traced.is_empty():
            return FIDELITY.frame([])
        rec = self.__dict__.get("reconstruction")  # (cached_property: built already?)
        if rec is None:  # only the traced sessions: an untraced one of an unknown release
            ids = sorted(set(traced["session_id"].to_list()))  # rebuilds every reading
            rec = reconstruct(self.store, self.selection, PROGRESS.get(), ids)
        return analysis.fidelity_frame(rec, traced)

    def ranged_sessions(self) -> pl.DataFrame:
        """The selected sessions of an unknown ADK release whose possible releases rebuild
        some agent calls differently: `ranged_calls` of `calls`, `rules`, `rules_range`."""
        return self.facts.ranged()

    def window_rules(self) -> dict[str, str]:
        """Per selected session id, the ADK release rules its windows were rebuilt with."""
        return self.facts.rules()

    def ratios(self) -> dict[str, Ratio]:
        """Per source, the chars-per-token ratio the estimates use: fitted, or the default."""
        return self.facts.ratios

    def result_preview(self, session: tuple[str, str, str], function_call_id: str) -> str | None:
        """The first 2,000 characters of one tool call's stored result."""
        return result_preview(self.store, session, function_call_id)

    def failures(self) -> pl.DataFrame:
        """The selected sessions' context failures, logged and stored, with verdicts (read
        once per scope)."""
        if "_failures" not in self.__dict__:
            failed, loaded = self.facts.failed_calls()
            self.__dict__["_failures"] = _merged_failures(self.store, self.selection, failed,
                                                          loaded)  # fmt: skip
        found: pl.DataFrame = self.__dict__["_failures"]
        return found

    def costing(self, book: PriceBook) -> billed.Costing:
        """The selection's calls priced by `book` (in the selection's time, when given)."""
        found: dict[int, billed.Costing] = self.__dict__.setdefault("_costing", {})
        if id(book) not in found or found[id(book)].book is not book:
            window = (self.selection.since, self.selection.until)
            found[id(book)] = billed.Costing(self.facts, book, window)
        return found[id(book)]

    def call_costs(self, book: PriceBook) -> pl.DataFrame:
        """Every model call of the selection, its usage priced at its day's rates."""
        return self.costing(book).calls()

    def call_minutes(self, book: PriceBook, seconds: int = 60) -> pl.DataFrame:
        """The calls summed by the `seconds` they started in (`bucket`, an epoch) and agent:
        calls, unpriced calls, cost_usd_low/high (queries/cost/minutes.sql)."""
        return self.costing(book).query("cost/minutes", seconds=seconds)

    def cost(self, book: PriceBook, by: str = "session") -> pl.DataFrame:
        """The calls' billed cost summed by session, day, agent, model, turn or app."""
        return self.costing(book).grouped(by)

    def tool_call_costs(self, book: PriceBook) -> pl.DataFrame:
        """Per tool call: what its result cost at its first send and every re-send."""
        return self.costing(book).tool_calls()

    def tool_costs(self, book: PriceBook) -> pl.DataFrame:
        """Per tool: what its results cost at their first send and every re-send."""
        return self.costing(book).tools()

    def cost_share(self, book: PriceBook) -> pl.DataFrame:
        """The bill split: cache reads, cache writes, uncached input, output, tool output."""
        return self.costing(book).share()

    def cache(self, book: PriceBook, by: str = "session") -> pl.DataFrame:
        """The prompt cache by call, turn, session, agent or day (`cache`), default rules."""
        return self.costing(book).cache(by)

    def cache_minutes(self, book: PriceBook, seconds: int = 60) -> pl.DataFrame:
        """The calls' prompt cache summed by the `seconds` they started in (`bucket`, an
        epoch) and agent (queries/cost/cache_minutes.sql)."""
        return self.costing(book).cache_query("cost/cache_minutes", seconds=seconds)

    def cache_breaks(self, book: PriceBook, top: int = 5) -> pl.DataFrame:
        """The `top` prefix breaks that cost most (queries/cost/cache_breaks.sql)."""
        return self.costing(book).cache_query("cost/cache_breaks", top=top)

    def ccusage(self, by: str = "day", binary: Path | None = None) -> pl.DataFrame:
        """The selection's Claude Code usage totalled by `day` or `session` as ccusage 20
        totals it, priced with the price table of its install (`binary`, else one found)
        under its rules; docs/claude-code.md says where they differ from the provider's."""
        from .columns import COST_CCUSAGE_DAY, COST_CCUSAGE_SESSION
        from .cost import ccusage

        if by not in ("day", "session"):
            raise ForensicsError(
                f"ccusage totals by day or by session, not by {by!r}",
                hint="--by day|session with --ccusage-compatible",
            )
        users = self.facts.query("cost/ccusage_users")["user_id"].to_list()
        if len(users) > 1:  # one run of ccusage reads one user's folders
            shown = ", ".join(users[:5]) + (", ..." if len(users) > 5 else "")
            raise ForensicsError(
                f"ccusage totals one user's transcripts; the selection holds {len(users)} "
                f"users' ({shown})",
                hint="--user USER with --ccusage-compatible",
            )
        window = (self.selection.since, self.selection.until)
        frame = ccusage.reconciled(self.facts, by, binary, window)
        spec = COST_CCUSAGE_DAY if by == "day" else COST_CCUSAGE_SESSION
        return spec.from_query(frame)

    def whatif(self, book: PriceBook, guard: Guard, context_limit: int | None = None) -> Replay:
        """`guard` replayed on the selection: each tool result cut as it would have been,
        every call's window and cost with those sizes, the trajectory held fixed."""
        from .whatif.replay import replay

        return replay(self.costing(book), self.calls(), self.failures(), guard, context_limit)

    def guards(self, budget: int, row_cap: int = 200,
               chars_per_token: float = 3.0) -> pl.DataFrame:  # fmt: skip
        """Per tool: results over `budget`, the row guard's blind spots, rows' sizes."""
        from .whatif.audit import guards

        return guards(self.facts, budget, row_cap, chars_per_token)


def calls(
    store: StoreLike, selection: SelectionLike = None, *, turn: int | None = None
) -> pl.DataFrame:
    """Per call: window occupancy (measured, estimated, by role) and cumulative input so far.
    A `turn` the selected session does not have is an error that names the turns it has."""
    with using(store) as s:
        scope = Scope(s, selection)
        if turn is not None:
            check_turn(scope.turns(), turn)
        return scope.calls(turn)


def calls_in_runs(store: StoreLike, selection: SelectionLike = None) -> Iterator[pl.DataFrame]:
    """Every selected session's calls, a run of sessions at a time: the frame of `calls`
    in pieces, so that a whole store's calls are written without being held (`forensics
    calls --all -f csv`). At least one frame, empty when no session is selected."""
    with using(store) as s:
        yield from Scope(s, selection).calls_in_runs()


def check_turn(turns: pl.DataFrame, turn: int) -> None:
    """ForensicsError unless `turn` is one of the session's turns."""
    have = sorted(set(turns["turn"].to_list()))
    if turn not in have:
        shown = f"turns 1 to {have[-1]}" if have else "no turns"
        raise ForensicsError(
            f"no turn {turn}: the session has {shown}",
            hint="turns are numbered from 1 in order; `forensics turns SESSION_ID` lists them",
        )


def window(store: StoreLike, selection: SelectionLike, call_id: str) -> pl.DataFrame:
    """What one call's request contained: each event's parts, in order, with sizes."""
    with using(store) as s:
        return Scope(s, selection).window(call_id)


def growth(
    store: StoreLike, selection: SelectionLike = None, *, top: int | None = None
) -> pl.DataFrame:
    """Tool calls ranked by how much they grew the window, with what re-sending them cost."""
    with using(store) as s:
        return Scope(s, selection).growth(top)


def turns(store: StoreLike, selection: SelectionLike = None) -> pl.DataFrame:
    """Per turn: calls, tool calls, wall time, peak occupancy, cumulative input, error."""
    with using(store) as s:
        return Scope(s, selection).turns()


def turns_in_runs(store: StoreLike, selection: SelectionLike = None) -> Iterator[pl.DataFrame]:
    """`turns` a run of sessions at a time (as `calls_in_runs`)."""
    with using(store) as s:
        yield from Scope(s, selection).turns_in_runs()


def fidelity(store: StoreLike, selection: SelectionLike = None) -> pl.DataFrame:
    """Per traced call: the rebuilt window against ADK's trace of the request."""
    with using(store) as s:
        return Scope(s, selection).fidelity()


def ratios(store: StoreLike, selection: SelectionLike = None) -> dict[str, Ratio]:
    """Per source, the chars-per-token ratio the estimates use: fitted, or the default."""
    with using(store) as s:
        return Scope(s, selection).ratios()


def compaction(store: StoreLike, selection: SelectionLike = None) -> pl.DataFrame:
    """Per compaction event: its range, what it covers (stored), what the next call sent."""
    with using(store) as s:
        return Scope(s, selection).compaction()


def compaction_sessions(
    store: StoreLike, selection: SelectionLike = None, *, threshold_tokens: int | None = None
) -> pl.DataFrame:
    """Per session: the raw window retained after the last range; calls over a threshold."""
    with using(store) as s:
        return Scope(s, selection).compaction_sessions(threshold_tokens)


def price_book(prices: PricesLike = None, store: StoreLike = None) -> PriceBook:
    """genai-prices' bundled, dated prices, with a user's overrides and aliases first: the
    TOML file `prices`, else the one $FORENSICS_PRICES names, else the one kept in
    `store` (`keep_prices`; docs/cost.md)."""
    if isinstance(prices, PriceBook):
        return prices
    if prices is not None:
        return PriceBook(read_overrides(home_expanded(prices)))
    if store is None or (not isinstance(store, Store) and not home_expanded(store).exists()):
        return book_of(None)
    with using(store) as s:
        return book_of(s)


def keep_prices(store: StoreLike, path: str | Path) -> str:
    """Keep a prices file in the store (checked first): every later cost of the store
    uses it unless given another. Returns when it was kept."""
    source = home_expanded(path)
    read_overrides(source)  # refused whole before anything is kept
    with using(store, read_only=False) as s:
        when = keep_kept_prices(s, source.read_text(encoding="utf-8"), source.name)
        billed.price_store(s, book_of(s))  # the calls priced again, by the kept file
        return when


def forget_prices(store: StoreLike) -> bool:
    """Drop the prices file the store keeps; False when it kept none."""
    with using(store, read_only=False) as s:
        had = forget_kept_prices(s)
        billed.price_store(s, book_of(s))
        return had


def cost(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    by: str = "session",
    prices: PricesLike = None,
) -> pl.DataFrame:
    """Billed cost by session, day, agent, model, turn or app; `call` for every call;
    `tool` and `tool-call` for what tool results cost when sent and re-sent."""
    with using(store) as s:
        book = price_book(prices, s)  # the store opened once, for its kept prices too
        scope = Scope(s, selection)
        if by == "call":
            return scope.call_costs(book)
        if by == "tool":
            return scope.tool_costs(book)
        if by == "tool-call":
            return scope.tool_call_costs(book)
        if by not in COST_BY:
            raise ForensicsError(
                f"cannot group cost by {by!r}",
                hint="--by " + "|".join((*COST_BY, "tool", "tool-call", "call")),
            )
        return scope.cost(book, by)


def priced_calls_current(store: StoreLike) -> bool:
    """Whether the store keeps its calls priced by its own book as they are now
    (cost/stored.py); False: every cost and cache command prices them all per query,
    until `forensics analyze` (or the next ingest) keeps them priced again."""
    with using(store) as s:
        try:
            return priced_current(s, book_of(s))
        except ForensicsError:  # a kept prices file that cannot be read: the command says so
            return True


CACHE_BY = ("call", "turn", "session", "agent", "day")


def cache(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    by: str = "session",
    prices: PricesLike = None,
    min_break_tokens: int = billed.CacheRules.min_tokens,
    min_break_share: float = billed.CacheRules.min_share,
) -> pl.DataFrame:
    """The prompt cache by call, turn, session, agent or day: each prompt split into cache
    reads, writes (5-minute and 1-hour where known) and uncached input, the hit rate,
    what the reads saved, and the prefix breaks (a call that read at least
    `min_break_tokens`, and `min_break_share` of it, fewer than the prefix its thread's
    previous call left cached) with what they cost and their cause (docs/cache.md)."""
    if by not in CACHE_BY:
        raise ForensicsError(f"cannot group the cache by {by!r}", hint="--by " + "|".join(CACHE_BY))
    rules = _cache_rules(min_break_tokens, min_break_share)
    with using(store) as s:
        book = price_book(prices, s)
        return Scope(s, selection).costing(book).cache(by, rules)


def cache_in_runs(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    prices: PricesLike = None,
    min_break_tokens: int = billed.CacheRules.min_tokens,
    min_break_share: float = billed.CacheRules.min_share,
) -> Iterator[pl.DataFrame]:
    """`cache(by="call")` a run of sessions at a time: the same rows in the same order,
    so that a whole store's calls are written without being held (`cache --by call`)."""
    rules = _cache_rules(min_break_tokens, min_break_share)
    with using(store) as s:
        yield from Scope(s, selection).costing(price_book(prices, s)).cache_in_runs(rules)


def _cache_rules(min_break_tokens: int, min_break_share: float) -> billed.CacheRules:
    if min_break_tokens < 0 or not 0 <= min_break_share <= 1:
        raise ForensicsError(
            f"a break is a shortfall of at least 0 tokens and a share from 0 to 1, not "
            f"{min_break_tokens} and {min_break_share}",
            hint="--min-break-tokens 1024 --min-break-share 0.1 (the defaults)",
        )
    return billed.CacheRules(min_break_tokens, min_break_share)


def cost_ccusage(
    store: StoreLike,
    selection: SelectionLike = None,
    *,
    by: str = "day",
    ccusage: str | Path | None = None,
) -> pl.DataFrame:
    """Claude Code usage by day or session under ccusage 20's rules and prices (its
    install: `ccusage`, else $FORENSICS_CCUSAGE, else the one on PATH), to reconcile
    with it line by line; not the provider's bill (`cost`)."""
    with using(store) as s:
        return Scope(s, selection).ccusage(by, Path(ccusage) if ccusage else None)


def cost_share(
    store: StoreLike, selection: SelectionLike = None, *, prices: PricesLike = None
) -> pl.DataFrame:
    """Where the money went: cache reads, cache writes, uncached input, output, tool output."""
    with using(store) as s:
        return Scope(s, selection).cost_share(price_book(prices, s))


def prices(
    models: Sequence[str] | dict[str, date], day: date | None = None, *, prices: PricesLike = None
) -> pl.DataFrame:
    """Which price applies to each model on `day` (UTC; default: the day a mapping of
    models gives it, else today), and its source."""
    given = models if isinstance(models, dict) else dict.fromkeys(models, datetime.now(UTC).date())
    days = {m: day or d for m, d in given.items()}
    return billed.price_list(price_book(prices), days)


def stored_models(store: StoreLike, selection: SelectionLike = None) -> dict[str, date]:
    """The models the selected sessions' calls name, as their events record them, each
    with the UTC day of its newest call (the day `cost` prices its latest calls at)."""
    with using(store) as s:
        newest: dict[str, date] = {}
        for model, day in Scope(s, selection).facts.query("cost/keys").iter_rows():
            newest[model] = max(day, newest.get(model, day))
        return dict(sorted(newest.items()))
