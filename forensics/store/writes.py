"""Normalised batches into the store: events once per identity, their parts, sessions."""

from __future__ import annotations

import pyarrow as pa

from .. import sql
from .handle import Store


def insert_batch(
    store: Store,
    *,
    events: pa.Table,
    parts: pa.Table,
    sessions: pa.Table,
    ingest_id: int,
    source: str,
) -> int:
    """Insert one batch inside the caller's transaction; returns the events newly stored
    (an event already in the store, by (app, user, session, event id), is not stored again)."""
    con = store.con
    con.register("new_events", events)
    con.register("new_parts", parts)
    con.register("new_sessions", sessions)
    try:
        loaded = store.run(sql.load("store/insert_events").sql, {"ingest_id": ingest_id})[0][0]
        store.run(sql.load("store/insert_parts").sql)
        store.run(
            sql.load("store/insert_sessions").sql, {"source": source, "ingest_id": ingest_id}
        )
    finally:
        for name in ("new_events", "new_parts", "new_sessions"):
            con.unregister(name)
    return int(loaded)
