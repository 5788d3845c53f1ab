"""Normalised batches into the store: events once per identity, their parts, sessions."""

from __future__ import annotations

import pyarrow as pa

from .. import sql
from ..model import Release, TracedCall
from ..sanitize import storable
from .arrow import columns_table, session_keys_table
from .handle import Store


def insert_batch(
    store: Store,
    *,
    events: pa.Table,
    parts: pa.Table,
    sessions: pa.Table,
    ingest_id: int,
    source: str,
    conflicts: list[tuple[str, str, str, str]] | None = None,
    appending: bool = False,
) -> int:
    """Insert one batch inside the caller's transaction; returns the events newly stored
    (an event already in the store, by (app, user, session, event id), is not stored again;
    `conflicts` gets the keys of those whose stored content differs). `appending`: the
    rows as new (`Query.appending`): an event stored already, or a row that comes twice,
    fails the insert with duckdb.ConstraintException (a stored session is passed over
    by the statement's own join: a session's events come in more than one batch)."""
    con = store.con
    con.register("new_events", events)
    con.register("new_parts", parts)
    con.register("new_sessions", sessions)
    try:
        loaded = store.run(_statement("store/insert_events", appending),
                           {"ingest_id": ingest_id})[0][0]  # fmt: skip
        # only an event the store held already can differ from it (after the insert the
        # new ones match themselves): a first load never scans the stored events for it
        if conflicts is not None and loaded < events.num_rows:
            conflicts += store.query("store/conflicting_events")
        store.run(_statement("store/insert_parts", appending))
        store.run(_statement("store/insert_sessions", appending),
                  {"source": source, "ingest_id": ingest_id})  # fmt: skip
    finally:
        store.unregister("new_events", "new_parts", "new_sessions")
    return int(loaded)


def _statement(name: str, appending: bool) -> str:
    query = sql.load(name)
    return query.appending if appending else query.sql


# the tables insert_releases and set_session_sources register, built through polars
# (store/arrow.py: pyarrow's builders import pandas)
_RELEASES = pa.schema([(n, pa.string()) for n in (
    "app_name", "user_id", "session_id", "basis", "version", "since_version", "until_version",
    "detail")])  # fmt: skip
_SOURCES = pa.schema([*((n, pa.string()) for n in ("app_name", "user_id", "session_id", "source")),
                      ("replaced", pa.bool_())])  # fmt: skip

# the families' side tables a batch may carry, the query that stores each (or, of the
# files whose sessions a run reads whole again, deletes their earlier rows), and whether
# an appending batch appends it (Query.appending: not a file's row, which an ingest
# replaces; a searched session's passes over one stored already, as insert_sessions)
SIDE_TABLES = {
    "transcript_events": ("store/insert_transcript_events", True),
    "transcript_files": ("store/insert_transcript_files", False),
    "anchors": ("store/insert_anchors", True),
    "anchor_sessions": ("store/insert_anchor_sessions", True),
    "forgotten_files": ("store/forget_transcript_files", False),
}


def insert_side(store: Store, name: str, table: pa.Table, ingest_id: int,
                appending: bool = False) -> None:  # fmt: skip
    """Store a batch's side table (SIDE_TABLES) inside the caller's transaction; a row
    whose event is stored already keeps the first one's details (`appending`: as
    insert_batch's, where SIDE_TABLES says so)."""
    found = SIDE_TABLES.get(name)
    if found is None:
        raise ValueError(f"no side table {name!r} (known: {', '.join(SIDE_TABLES)})")
    query, appended = found
    view = f"new_{name}"
    store.con.register(view, table)
    try:
        store.run(_statement(query, appending and appended), {"ingest_id": ingest_id})
    finally:
        store.unregister(view)


def replace_sessions(store: Store, keys: list[tuple[str, str, str]]) -> int:
    """Delete the stored events, parts, transcript details and anchors of these sessions inside
    the caller's transaction (their source reads them whole again); returns the events
    deleted."""
    store.con.register("replaced_sessions", session_keys_table(keys))
    try:
        # a session never stored has nothing to delete: the deletes scan whole tables (a
        # quadratic cost over an ingest's batches), `sessions` holds a row per stored one
        (stored,) = store.run(sql.load("store/replaced_stored").sql)[0]
        if not stored:
            return 0
        return int(store.run(sql.load("store/delete_sessions").sql)[0][0])
    finally:
        store.unregister("replaced_sessions")


def set_session_family(store: Store, family: str, ingest_id: int) -> None:
    """The sessions this ingest created were written by `family`."""
    store.run(sql.load("store/set_session_family").sql, {"family": family, "ingest_id": ingest_id})


def insert_traced(
    store: Store, calls: list[TracedCall], ingest_id: int
) -> tuple[int, int]:
    """Store traced requests inside the caller's transaction; a request already stored (by
    session id and event id) is kept as it was, but that one stored before schema 11
    gains its system instruction's and tool declarations' digests and heads (its ingest
    stays the one that stored it; its session's facts are marked stale, so they and the
    kept cache rows are built again). Returns (requests newly stored, requests so
    completed)."""
    new = completed = 0
    for call in calls:
        (exists, digested) = store.run(
            "SELECT count(*), count(system_sha256) FROM traced_calls"
            " WHERE session_id = ? AND event_id = ?",
            [call.session_id, call.event_id],
        )[0]
        if exists and not digested and call.system_sha256 is not None:
            store.run(
                "UPDATE traced_calls SET system_sha256 = ?, system_head = ?, tools_sha256 = ?,"
                " tools_head = ? WHERE session_id = ? AND event_id = ?",
                [call.system_sha256, call.system_head, call.tools_sha256, call.tools_head,
                 call.session_id, call.event_id],
            )  # fmt: skip
            # (a stamp no build gives: facts/stale_sessions.sql finds the session stale)
            store.run("UPDATE fact_sessions SET stamp = '' WHERE session_id = ?",
                      [call.session_id])  # fmt: skip
            completed += 1
            continue
        if exists:
            continue
        store.run(
            "INSERT INTO traced_calls (session_id, event_id, span_id, trace_id, invocation_id,"
            " model, adk_version, started_at, ended_at, input_tokens, output_tokens,"
            " system_chars, tools_chars, contents, ingest_id, system_sha256, system_head,"
            " tools_sha256, tools_head)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                call.session_id,
                call.event_id,
                call.span_id,
                call.trace_id,
                call.invocation_id,
                call.model,
                call.adk_version,
                call.started_at,
                call.ended_at,
                call.input_tokens,
                call.output_tokens,
                call.system_chars,
                call.tools_chars,
                call.contents,
                ingest_id,
                call.system_sha256,
                call.system_head,
                call.tools_sha256,
                call.tools_head,
            ],
        )
        if call.parts:
            store.con.executemany(
                "INSERT INTO traced_parts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        call.session_id,
                        call.event_id,
                        p.content_index,
                        p.part_index,
                        p.role,
                        p.kind,
                        p.tool_name,
                        p.chars,
                    )
                    for p in call.parts
                ],
            )
        new += 1
    return new, completed


def insert_releases(
    store: Store, releases: dict[tuple[str, str, str], Release], ingest_id: int
) -> int:
    """Record how each session's release is known, inside the caller's transaction."""
    if not releases:
        return 0
    keys = list(releases)
    table = columns_table(
        {
            "app_name": [k[0] for k in keys],
            "user_id": [k[1] for k in keys],
            "session_id": [k[2] for k in keys],
            "basis": [releases[k].basis for k in keys],
            "version": [releases[k].version for k in keys],
            "since_version": [releases[k].since for k in keys],
            "until_version": [releases[k].until for k in keys],
            "detail": [releases[k].detail for k in keys],
        },
        _RELEASES,
    )
    store.con.register("new_releases", table)
    try:
        store.run(sql.load("store/insert_releases").sql, {"ingest_id": ingest_id})
    finally:
        store.unregister("new_releases")
    return len(keys)


def set_session_sources(
    store: Store, sources: dict[tuple[str, str, str], str], ingest_id: int,
    replaced: set[tuple[str, str, str]] | frozenset[tuple[str, str, str]] = frozenset(),
) -> None:  # fmt: skip
    """The sessions this ingest created, and those it read whole again (`replaced`: a
    session another ingest created, all of whose events now came from these files), get
    the file(s) their own events came from as their source, not the whole run's list of
    files (a path's bytes that no encoding decodes written as escapes: sanitize.storable)."""
    if not sources:
        return
    keys = list(sources)
    table = columns_table(
        {
            "app_name": [storable(k[0]) for k in keys],
            "user_id": [storable(k[1]) for k in keys],
            "session_id": [storable(k[2]) for k in keys],
            "source": [storable(sources[k]) for k in keys],
            "replaced": [k in replaced for k in keys],
        },
        _SOURCES,
    )
    store.con.register("session_sources", table)
    try:
        store.run(sql.load("store/set_session_sources").sql, {"ingest_id": ingest_id})
    finally:
        store.unregister("session_sources")


def insert_logged(store: Store, records: pa.Table, ingest_id: int) -> int:
    """Store one batch of logged records (LOGGED_SCHEMA) inside the caller's transaction;
    a record already stored (by record_key) is kept as it was. Returns those newly stored."""
    store.con.register("logged_batch", records)
    try:
        (loaded,) = store.query("store/insert_logged", ingest_id=ingest_id)[0]
    finally:
        store.unregister("logged_batch")
    return int(loaded)
