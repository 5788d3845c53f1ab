"""The query commands' frames, as SQL over the stored facts (queries/facts/).

The facts hold characters and counts; here they become tokens with the ratios fitted
per model on the fixed sample of FIT_SESSIONS sessions, from the facts (no session is
rebuilt), so a refit never needs a rebuild. The fit is made once where the facts are
brought up to date and kept in store_meta (store_fits); a query fits again only when
events or facts changed since (an ingest killed before its facts, an older store).
Three relations are registered for each query: `scope_sessions` (the selected
sessions, numbered in key order), `scope_ratios` and `scope_constants` (the ratios and
each agent's constant).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from .. import sql
from ..columns import CALLS, COMPACTION_RANGES, COMPACTION_SESSIONS, GROWTH, TURNS
from ..model import Session
from ..provenance import Spec
from ..selection import Selection
from ..store import Store
from ..store.arrow import rows_table
from ..store.facts import keep_fit, kept_fit, write
from ..store.migrations import migrate
from .facts import FACT_SCHEMAS, FACT_TABLES, session_facts
from .ratio import AgentKey, Ratio, TracedSample, fit_ratio, fit_traced

FIT_SESSIONS = 50  # per model: hundreds of calls for a steady fit
# A frame read a run of sessions at a time (Facts.runs): the events of a run, per query.
# Each run scans the fact tables again, each holds its rows in DuckDB and in the writer.
# At 1,000,000 events (2 cores, another process busy on one), `calls --all -f csv` read
# whole peaked at 1,020 MB; by runs of 100,000 events 504-537 MB in 3.8-4.0 s, of
# 60,000 430-437 MB in 3.4-4.9 s; `turns -f json` by runs of 100,000 events 388-405 MB
# in 2.2-2.4 s, of 250,000 424-435 MB in 1.8-2.3 s, of 500,000 470-490 MB.
RUN_EVENTS = {"facts/calls": 60_000, "facts/turns": 250_000}

_RATIOS = pa.schema(
    [
        ("model", pa.string()),
        ("chars_per_token", pa.float64()),
        ("source", pa.string()),
        ("note", pa.string()),
        ("shown_chars_per_token", pa.float64()),
        ("shown_mean_abs_error", pa.float64()),
    ]
)
_CONSTANTS = pa.schema(
    [
        ("model", pa.string()),
        ("app_name", pa.string()),
        ("agent", pa.string()),
        ("constant", pa.float64()),
    ]
)


def _code(text: str) -> str:
    """SQL without its `--` comments (a view named in a comment is not read)."""
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def shared_views(query: str, views: dict[str, str]) -> set[str]:
    """The views (name -> queries/ source) that `query` would compute more than once:
    DuckDB expands a view at each place it is named, through the views that name it,
    so `cost_calls` was priced five times over for `cost --share` (7.2 s and 2.0 GB at
    1,000,000 events; 3.9-4.1 s and 1.1 GB with it made a table once). Those are made temp
    tables; a view read once stays a view (a table of it only adds the writing)."""
    texts = {view: _code(sql.load(source).sql) for view, source in views.items()}

    def named(view: str, text: str) -> int:
        return len(re.findall(rf"\b{view}\b", text))

    uses = {view: named(view, _code(query)) for view in views}
    tables = set()
    # a view names only views before it: its readers are all counted when it is reached
    for view in reversed(list(views)):
        if uses[view] > 1:
            tables.add(view)
        times = 1 if view in tables else uses[view]  # a table's own query runs once
        for other in views:
            if other != view:
                uses[other] += times * named(other, texts[view])
    return tables


def fit_ratios(store: Store, models: set[str]) -> dict[str, Ratio]:
    """Per model, the ratio fitted on its sample (facts/fit_samples.sql)."""
    return {
        model: fit_sample(model, store.query("facts/fit_samples", model=model, limit=FIT_SESSIONS))
        for model in sorted(models)
    }


def store_fits(store: Store) -> None:
    """Fit every model of the store's facts once and keep the ratios in store_meta, so
    that a query command reads them instead of fitting (0.3-0.5 s of every command on
    1,000,000 events). Called where the facts are brought up to date."""
    models = {r[0] for r in store.query("facts/all_models")}
    ratios = fit_ratios(store, models)
    keep_fit(store, {model: _ratio_record(ratio) for model, ratio in ratios.items()})


def stored_fits(store: Store) -> dict[str, Ratio] | None:
    """The ratios store_fits kept, when nothing they were fitted on changed since."""
    records = kept_fit(store)
    if records is None:
        return None
    return {model: _ratio_of(record) for model, record in records.items()}


def _ratio_record(ratio: Ratio) -> dict[str, Any]:
    return {
        "chars_per_token": ratio.chars_per_token,
        "source": ratio.source,
        "calls": ratio.calls,
        "mean_abs_error": ratio.mean_abs_error,
        "constants": [[app, agent, value] for (app, agent), value in ratio.constant_tokens.items()],
        "note": ratio.note,
        "model": ratio.model,
    }


def _ratio_of(record: dict[str, Any]) -> Ratio:
    return Ratio(
        record["chars_per_token"],
        record["source"],
        record["calls"],
        record["mean_abs_error"],
        {(app, agent): value for app, agent, value in record["constants"]},
        note=record["note"],
        model=record["model"],
    )


def fit_sample(model: str, rows: Iterable[Sequence[Any]]) -> Ratio:
    """One model's ratio from its sample's rows (app, agent, chars, system+tools chars,
    tokens): from the traced calls when enough are traced (analysis/ratio.py), else from
    the measured ones, else the default."""
    samples: list[tuple[AgentKey, int, int]] = []
    traced: list[TracedSample] = []
    for app, agent, chars, system_tools, tokens in rows:
        samples.append(((app, agent), chars, tokens))
        if system_tools is not None:
            traced.append(((app, agent), chars, system_tools, tokens))
    return fit_traced(traced, model) or fit_ratio(samples, model)


def ratio_tables(ratios: dict[str, Ratio]) -> tuple[pa.Table, pa.Table]:
    """The ratios as the queries read them: `scope_ratios` and `scope_constants`."""
    table = rows_table(
        [
            {
                "model": model,
                "chars_per_token": r.chars_per_token,
                "source": r.source,
                "note": r.note or None,
                "shown_chars_per_token": round(r.chars_per_token, 3),
                "shown_mean_abs_error": None
                if r.mean_abs_error is None
                else round(r.mean_abs_error, 4),
            }
            for model, r in ratios.items()
        ],
        _RATIOS,
    )
    constants = rows_table(
        [
            {"model": model, "app_name": app, "agent": agent, "constant": value}
            for model, r in ratios.items()
            for (app, agent), value in r.constant_tokens.items()
        ],
        _CONSTANTS,
    )
    return table, constants


class Facts:
    """The selected sessions' stored facts, sized with the ratios their models fit."""

    def __init__(self, store: Store, selection: Selection, ratios: dict[str, Ratio] | None = None):
        self.store = store
        self.selection = selection
        if ratios is not None:
            self.__dict__["ratios"] = ratios  # given: not fitted
        self.sessions = store.arrow(
            "facts/scope_sessions",
            app=selection.app,
            user=selection.user,
            session=selection.session,
            since=selection.since,
            until=selection.until,
            family=selection.family,
        )

    @cached_property
    def ratios(self) -> dict[str, Ratio]:
        """Per model the selected sessions need, its ratio."""
        self.store.con.register("scope_sessions", self.sessions)
        try:
            models = {r[0] for r in self.store.query("facts/models")}
        finally:
            self.store.unregister("scope_sessions")
        kept = stored_fits(self.store)
        if kept is not None and models <= kept.keys():
            self.__dict__["ratios_kept"] = True
            return {model: kept[model] for model in sorted(models)}
        return fit_ratios(self.store, models)

    @cached_property
    def ratio_tables(self) -> tuple[pa.Table, pa.Table]:
        """`scope_ratios` and `scope_constants`, built once."""
        return ratio_tables(self.ratios)

    @property
    def ratios_kept(self) -> bool:
        """Whether the ratios are those the facts' last refresh fitted and kept (what
        the stored priced calls were sized with), not given nor fitted again."""
        self.ratios  # noqa: B018  (fitting, or reading the kept fit, sets the flag)
        return bool(self.__dict__.get("ratios_kept", False))

    def query(
        self,
        name: str,
        tables: dict[str, pa.Table] | None = None,
        views: dict[str, str] | None = None,
        sessions: pa.Table | None = None,
        scans: frozenset[str] = frozenset(),
        **params: Any,
    ) -> pl.DataFrame:
        """Run queries/`name`.sql over the selection's facts, with `scope_sessions`
        (`sessions`, some of them, if given), `scope_ratios` and `scope_constants`
        registered, `tables` beside them, and each of `views` (name -> a query without
        parameters) as a temporary view (a temp table where the query would compute it
        more than once: shared_views; never those of `scans`, views that only read a
        stored table, which a copy would cost more than a second read): a query
        another reads without its rows ever leaving DuckDB."""
        with self._beside(sql.load(name).sql, tables, views, sessions, scans):
            return self.store.frame(name, **params)

    def execute(
        self,
        statement: str,
        tables: dict[str, pa.Table] | None = None,
        views: dict[str, str] | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        """Run `statement` (code's, not data's) with what `query` registers beside it,
        `params` bound by name."""
        with self._beside(statement, tables, views, None, frozenset(), unordered=False):
            self.store.run(statement, params)

    @contextmanager
    def _beside(
        self,
        text: str,
        tables: dict[str, pa.Table] | None,
        views: dict[str, str] | None,
        sessions: pa.Table | None,
        scans: frozenset[str],
        unordered: bool = True,
    ) -> Iterator[None]:
        """`tables` registered and `views` made for `text` to read; a view's own ORDER
        BY is left out (Query.unordered) unless `unordered` is False: a statement that
        keeps a view's rows as they come (a stored table whose order clusters it)."""
        ratios, constants = self.ratio_tables
        registered = {
            "scope_sessions": self.sessions if sessions is None else sessions,
            "scope_ratios": ratios,
            "scope_constants": constants,
            **(tables or {}),
        }
        for relation, table in registered.items():
            self.store.con.register(relation, table)
        made: list[str] = []
        computed_once = shared_views(text, views or {}) - scans
        try:
            for view, source in (views or {}).items():
                query = sql.load(source)
                assert not query.params, f"{source}: a view takes no parameters"
                kind = "TABLE" if view in computed_once else "VIEW"
                made.append(view)
                # one of the other kind left by a query whose clean-up was interrupted
                # would refuse CREATE OR REPLACE (view names come from code, not data)
                other = "VIEW" if kind == "TABLE" else "TABLE"
                self.store.quietly(f"DROP {other} IF EXISTS {view}")
                statement = query.unordered if unordered else query.sql.strip().rstrip(";")
                self.store.run(f"CREATE OR REPLACE TEMP {kind} {view} AS {statement}")  # noqa: S608
            yield
        finally:
            stopped = False  # (a stop in one drop: the rest dropped, then it is raised)
            for view in reversed(made):
                for kind in ("VIEW", "TABLE"):
                    try:
                        self.store.quietly(f"DROP {kind} IF EXISTS {view}")
                    except KeyboardInterrupt:
                        stopped = True
            try:
                self.store.unregister(*registered)
            except KeyboardInterrupt:
                stopped = True
            if stopped:
                raise KeyboardInterrupt

    def _frame(self, name: str, spec: Spec, **params: Any) -> pl.DataFrame:
        return spec.from_query(self.query(name, **params))

    def runs(self, name: str, spec: Spec, **params: Any) -> Iterator[pl.DataFrame]:
        """The frame of queries/`name`.sql a run of sessions at a time (RUN_EVENTS[name]
        events or so each), for a query whose rows each come from one session and are
        ordered by `scope_sessions`' ordinal first: the runs one after the other are the
        frame read whole. At least one frame (empty when nothing is selected): a writer
        takes the columns from it."""
        found = False
        for part in self.session_runs(RUN_EVENTS[name]):
            found = True
            yield spec.from_query(self.query(name, sessions=part, **params))
        if not found:
            yield self._frame(name, spec, **params)

    def session_runs(self, events: int) -> Iterator[pa.Table]:
        """The selection's sessions (`scope_sessions`' rows) in runs of about `events`
        events, in order; none when nothing is selected."""
        sizes = self.query("facts/scope_sizes")["events"].to_list()
        start, weight = 0, 0
        for end, size in enumerate(sizes, 1):
            weight += size
            if weight >= events or end == len(sizes):
                yield self.sessions.slice(start, end - start)
                start, weight = end, 0

    def calls_in_runs(self) -> Iterator[pl.DataFrame]:
        return self.runs("facts/calls", CALLS, turn=None)

    def turns_in_runs(self) -> Iterator[pl.DataFrame]:
        return self.runs("facts/turns", TURNS)

    def calls(self, turn: int | None = None) -> pl.DataFrame:
        return self._frame("facts/calls", CALLS, turn=turn)

    def failed_calls(self) -> tuple[pl.DataFrame, set[str]]:
        """The CALLS rows of the selection's failed calls (each session that has one
        computed whole, as `calls` does), and the ids of the sessions with calls."""
        self.store.con.register("scope_sessions", self.sessions)
        try:
            failing = self.store.arrow("facts/failing_sessions")
            loaded = {r[0] for r in self.store.query("facts/call_sessions")}
        finally:
            self.store.unregister("scope_sessions")
        calls = CALLS.from_query(self.query("facts/calls", sessions=failing, turn=None))
        return calls.filter(pl.col("kind") == "failed"), loaded

    def growth(self, top: int | None = None) -> pl.DataFrame:
        from . import kept_growth  # (it reads this module's Facts)

        # the figures kept at the last refresh when they are those of these ratios
        figures = "facts/growth_kept_rows" if kept_growth.current(self) else "facts/growth_figures"
        return self._frame("facts/growth", GROWTH, views={"growth_figures": figures},
                           top=top or None)  # 0: no limit, as before  # fmt: skip

    def turns(self) -> pl.DataFrame:
        return self._frame("facts/turns", TURNS)

    def compaction_ranges(self) -> pl.DataFrame:
        return self._frame("facts/compaction_ranges", COMPACTION_RANGES)

    def compaction_sessions(self, threshold_tokens: int | None = None) -> pl.DataFrame:
        return self._frame("facts/compaction_sessions", COMPACTION_SESSIONS,
                           threshold=threshold_tokens)  # fmt: skip

    def ranged(self) -> pl.DataFrame:
        """The selected sessions whose release is not known and whose rule sets rebuild
        some agent calls differently: how many of how many, the rules, the boundaries."""
        return self.query("facts/ranged_sessions")

    def rules(self) -> dict[str, str]:
        """Per selected session id, the ADK release rules its facts were built with."""
        return {
            sid: rules.split(" ", 1)[-1]
            for sid, rules in zip(
                self.sessions["session_id"].to_pylist(),
                self.sessions["rules"].to_pylist(),
                strict=True,
            )
        }


def facts_of(sessions: list[Session], ratios: dict[str, Ratio]) -> Facts:
    """The facts of sessions built in memory, sized with the given ratios: the frames of
    sessions that were never stored (tests, notebooks), by the same SQL."""
    store = Store(duckdb.connect(), Path(":memory:"), read_only=False)
    migrate(store.run, store.path)
    tables: dict[str, list[dict[str, Any]]] = {t: [] for t in FACT_TABLES}
    for session in sessions:
        for table, rows in session_facts(session).tables.items():
            tables[table] += rows
    write(store, tables, {s.key: "memory" for s in sessions}, FACT_SCHEMAS)
    store.con.register("memory_sessions", rows_table(
        [{"app_name": s.app_name, "user_id": s.user_id, "session_id": s.session_id,
          "source": s.source} for s in sessions],
        schema=pa.schema([(c, pa.string()) for c in
                          ("app_name", "user_id", "session_id", "source")])))  # fmt: skip
    store.run("INSERT INTO sessions BY NAME SELECT *, 0 AS ingest_id FROM memory_sessions")
    store.unregister("memory_sessions")
    return Facts(store, Selection(), ratios)
