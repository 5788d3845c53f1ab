"""The fact tables (schema 5): which sessions need rebuilding, and writing their rows.

A session's facts are stale when they are missing, when its inputs changed (its
stamp: counts and newest ingest of its events, traced requests and release
evidence; queries/facts/stale_sessions.sql) or when other rules built them. Two
`store_meta` keys make the common case free: the rules version the facts were
last brought up to date with, and the newest ingest they include.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import sql
from .handle import Store

if TYPE_CHECKING:  # (imported where used: the marks and the fit's stamp need neither)
    import pyarrow as pa

TABLES = ("fact_sessions", "fact_calls", "fact_carried", "fact_tool_calls", "fact_turns",
          "fact_compactions")  # fmt: skip
Key = tuple[str, str, str]
KEY_COLUMNS = ("app_name", "user_id", "session_id")


def _meta(store: Store, key: str) -> str | None:
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [key])
    return rows[0][0] if rows else None


def failures(store: Store) -> list[tuple[Key, str]]:
    """The sessions whose facts could not be built, with the error, in key order."""
    rows = store.run(
        "SELECT app_name, user_id, session_id, error FROM fact_sessions"
        " WHERE error IS NOT NULL ORDER BY ALL"
    )
    return [((a, u, s), e) for a, u, s, e in rows]


def failure(store: Store, key: Key) -> str | None:
    """Why the facts of one session could not be built, if they could not."""
    rows = store.run(
        "SELECT error FROM fact_sessions WHERE app_name = ? AND user_id = ? AND session_id = ?",
        list(key),
    )
    return rows[0][0] if rows else None


def newest_ingest(store: Store) -> int:
    """The newest ingest, in the ledger or in the events: a process killed mid-ingest
    leaves committed batches and no ledger row, and its events must still make the
    facts stale."""
    return int(
        store.run(
            "SELECT greatest((SELECT coalesce(max(ingest_id), 0) FROM ingests),"
            " (SELECT coalesce(max(ingest_id), 0) FROM events))"
        )[0][0]
    )


def is_current(store: Store, rules_version: str) -> bool:
    """True when no ingest ran and no rule changed since the facts were last brought up
    to date (one lookup; the per-session check is `stale`)."""
    return _meta(store, "facts_rules") == rules_version and _meta(store, "facts_ingest") == str(
        newest_ingest(store)
    )


def mark_current(store: Store, rules_version: str, through_ingest: int) -> None:
    for key, value in (("facts_rules", rules_version), ("facts_ingest", str(through_ingest))):
        store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [key, value])


FITS_KEY = "fitted_ratios"  # store_meta: every model's ratio, as the facts last fitted it


def fit_stamp(store: Store) -> list[object]:
    """What a fit read: the facts' rules, the newest ingest that wrote events, how many
    events and calls the store holds, and every session's facts (the inputs and rules
    each was built from, its error). A fit stored before any of them changed is not
    used. Not the ingest the facts are current through: an ingest that loads nothing
    (or only outcomes, or logged records) moves it and changes no fact, and keeping the
    fit under it took four queries and a write at every such ingest."""
    row = store.run(
        "SELECT (SELECT value FROM store_meta WHERE key = 'facts_rules'),"
        " (SELECT max(ingest_id) FROM events),"
        " (SELECT count(*) FROM events), (SELECT count(*) FROM fact_calls),"
        " (SELECT [count(*), sum(hash(app_name, user_id, session_id, stamp, rules, error))]"
        "::VARCHAR FROM fact_sessions)"
    )[0]
    return list(row)


def kept_fit(store: Store) -> dict[str, Any] | None:
    """The ratio records the facts' last fit kept (model -> record), when nothing it
    was fitted on changed since (`fit_stamp`); None otherwise."""
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [FITS_KEY])
    if not rows:
        return None
    payload = json.loads(rows[0][0])
    if payload.get("stamp") != json.loads(json.dumps(fit_stamp(store))):
        return None
    ratios: dict[str, Any] = payload["ratios"]
    return ratios


def keep_fit(store: Store, records: Mapping[str, Any]) -> None:
    """Keep the ratio records of a fit made now (`kept_fit` reads them)."""
    payload = {"stamp": fit_stamp(store), "ratios": dict(records)}
    store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [FITS_KEY, json.dumps(payload)])


def stale(
    store: Store, rules_version: str, *, every: bool = False
) -> list[tuple[Key, int, str, bool]]:
    """(key, events, stamp, built) of every session whose facts need building (with
    `every`: of every session with events), in key order; `built`: it has facts now."""
    rows = store.query("facts/stale_sessions", rules_version=rules_version, every=every)
    return [((a, u, s), int(n), stamp, bool(b)) for a, u, s, n, stamp, b in rows]


def drop_orphans(store: Store) -> int:
    """Delete the facts of sessions that have no stored event any more (queries/facts/
    orphan_sessions.sql), in one transaction; returns how many sessions."""
    gone = store.query("facts/orphan_sessions")
    if not gone:
        return 0
    from .arrow import session_keys_table

    keys = session_keys_table(gone)
    store.con.register("batch_keys", keys)
    try:
        with store.transaction():
            store.run(sql.load("facts/delete_facts").sql)
    finally:
        store.unregister("batch_keys")
    return len(gone)


CHUNK_EVENTS = 20_000  # the sessions read at once hold about this many events


def _chunks(keys: Sequence[Key], sizes: Mapping[Key, int], limit: int) -> Iterator[list[Key]]:
    """`keys` in order, cut into runs of sessions holding about `limit` events (a
    session larger than that is a run of its own)."""
    run: list[Key] = []
    held = 0
    for key in keys:
        if run and held + sizes.get(key, 1) > limit:
            yield run
            run, held = [], 0
        run.append(key)
        held += sizes.get(key, 1)
    if run:
        yield run


def stale_tables(
    store: Store,
    keys: Sequence[Key],
    sizes: Mapping[Key, int] | None = None,
    chunk_events: int = CHUNK_EVENTS,
) -> Iterator[tuple[list[Key], pa.Table, pa.Table]]:
    """The sessions of `keys` a run at a time (`sizes`: each one's events; a run holds
    about `chunk_events`), in the order of `keys`: the run's keys, and its event rows and
    part rows as Arrow tables (queries/facts/stale_events.sql, stale_parts.sql), so
    memory holds one run's rows however many sessions there are."""
    from .arrow import session_keys_table

    for run in _chunks(keys, sizes or {}, chunk_events):
        table = session_keys_table(run)
        store.con.register("stale_keys", table)
        try:
            events = store.arrow("facts/stale_events")
            parts = store.arrow("facts/stale_parts")
        finally:
            store.unregister("stale_keys")
        yield run, events, parts


def write(
    store: Store,
    tables: Mapping[str, pa.Table | list[dict[str, Any]]],
    stamps: Mapping[Key, str],
    schemas: Mapping[str, pa.Schema] | None = None,
    built: Collection[Key] | None = None,
) -> None:
    """Replace the facts of the sessions in `stamps` with `tables`' rows (Arrow tables, or
    rows that `schemas`, the engines' FACT_SCHEMAS, type; without, types are inferred),
    in one transaction; each session's fact_sessions row gets its stamp (a session whose
    rebuild failed has a row with its `error`). `built`: the sessions of `stamps` that
    have facts to replace (default: all of them); deleting costs a scan of every fact
    table, which a first build of a session does not need."""
    import pyarrow as pa

    from .arrow import column, rows_table, session_keys_table

    schemas = schemas or {}
    frames = {
        t: rows
        if isinstance(rows, pa.Table)
        else rows_table(rows, schemas[t])
        if t in schemas
        else pa.Table.from_pylist(rows)
        for t, rows in tables.items()
    }
    sessions = frames["fact_sessions"]
    stamp_of = [
        stamps[key]
        for key in zip(*(sessions.column(c).to_pylist() for c in KEY_COLUMNS), strict=True)
    ]
    frames["fact_sessions"] = sessions.append_column("stamp", column(stamp_of, pa.string()))
    had = set(stamps if built is None else built)
    replaced = [k for k in stamps if k in had]
    keys = session_keys_table(replaced)
    con = store.con
    registered = ["batch_keys"]
    con.register("batch_keys", keys)
    try:
        with store.transaction():
            if replaced:
                store.run(sql.load("facts/delete_facts").sql)
            for table in TABLES:
                frame = frames.get(table)
                if frame is None or not frame.num_rows:
                    continue
                name = f"new_{table}"
                con.register(name, frame)
                registered.append(name)
                # both names come from TABLES, never from data
                store.run(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")  # noqa: S608
    finally:
        store.unregister(*registered)
