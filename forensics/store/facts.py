"""The fact tables (schema 5): which sessions need rebuilding, and writing their rows.

A session's facts are stale when they are missing, when its inputs changed (its
stamp: counts and newest ingest of its events, traced requests and release
evidence; queries/facts/stale_sessions.sql) or when other rules built them. Two
`store_meta` keys make the common case free: the rules version the facts were
last brought up to date with, and the newest ingest they include.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from .. import sql
from ..errors import StoreError
from .handle import Store, raise_if_interrupted

TABLES = ("fact_sessions", "fact_calls", "fact_carried", "fact_tool_calls", "fact_turns",
          "fact_compactions")  # fmt: skip
Key = tuple[str, str, str]


def _meta(store: Store, key: str) -> str | None:
    rows = store.run("SELECT value FROM store_meta WHERE key = ?", [key])
    return rows[0][0] if rows else None


def newest_ingest(store: Store) -> int:
    return int(store.run("SELECT coalesce(max(ingest_id), 0) FROM ingests")[0][0])


def is_current(store: Store, rules_version: str) -> bool:
    """True when no ingest ran and no rule changed since the facts were last brought up
    to date (one lookup; the per-session check is `stale`)."""
    return _meta(store, "facts_rules") == rules_version and _meta(store, "facts_ingest") == str(
        newest_ingest(store)
    )


def mark_current(store: Store, rules_version: str, through_ingest: int) -> None:
    for key, value in (("facts_rules", rules_version), ("facts_ingest", str(through_ingest))):
        store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [key, value])


def stale(store: Store, rules_version: str, *, every: bool = False) -> list[tuple[Key, int, str]]:
    """(key, events, stamp) of every session whose facts need building (with `every`:
    of every session with events), in key order."""
    rows = store.query("facts/stale_sessions", rules_version=rules_version, every=every)
    return [((a, u, s), int(n), stamp) for a, u, s, n, stamp in rows]


def _stream(cursor: duckdb.DuckDBPyConnection, name: str, batch: int) -> Iterator[dict[str, Any]]:
    """The rows of a `queries/facts/` file, fetched `batch` at a time."""
    try:
        reader = cursor.sql(sql.load(name).sql).to_arrow_reader(batch)
        for chunk in reader:
            yield from chunk.to_pylist()
    except (duckdb.InterruptException, RuntimeError) as e:
        raise_if_interrupted(e)
        raise


def stale_rows(
    store: Store, keys: Sequence[Key], batch: int = 20_000
) -> Iterator[tuple[Key, list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per session of `keys`, in key order: its event rows and part rows, streamed (two
    readers walk events and parts side by side, so memory holds one session at a time
    plus one fetch batch)."""
    keys_table = pa.table(
        {
            "app_name": [k[0] for k in keys],
            "user_id": [k[1] for k in keys],
            "session_id": [k[2] for k in keys],
        }
    )
    readers = [store.con.cursor(), store.con.cursor()]
    try:
        for cursor in readers:
            cursor.register("stale_keys", keys_table)
        events = _stream(readers[0], "facts/stale_events", batch)
        parts = _stream(readers[1], "facts/stale_parts", batch)
        pending_part: dict[str, Any] | None = next(parts, None)
        current: Key | None = None
        rows: list[dict[str, Any]] = []
        for event in events:
            key = (event["app_name"], event["user_id"], event["session_id"])
            if key != current:
                if current is not None:
                    found, pending_part = _parts_of(current, pending_part, parts)
                    yield current, rows, found
                current, rows = key, []
            rows.append(event)
        if current is not None:
            found, pending_part = _parts_of(current, pending_part, parts)
            yield current, rows, found
    finally:
        for cursor in readers:
            cursor.close()


def _parts_of(
    key: Key, pending: dict[str, Any] | None, parts: Iterator[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The parts of session `key` from the key-ordered stream (the first one already
    read is `pending`); returns them and the first part of a later session."""
    found = []
    while pending is not None:
        at = (pending["app_name"], pending["user_id"], pending["session_id"])
        if at > key:
            break
        if at < key:  # every key of the stream has events: DuckDB's order is not Python's
            raise StoreError(
                f"the parts of session {at} came after those of {key}: facts not built",
                hint="report it: the store's string order differs from Python's",
            )
        if at == key:
            found.append(pending)
        pending = next(parts, None)
    return found, pending


def write(
    store: Store,
    tables: Mapping[str, list[dict[str, Any]]],
    stamps: Mapping[Key, str],
    schemas: Mapping[str, pa.Schema] | None = None,
) -> None:
    """Replace the facts of the sessions in `stamps` with `tables`' rows, in one
    transaction; each session's fact_sessions row gets its stamp. `schemas` (the
    engines' FACT_SCHEMAS) types the rows; without, types are inferred from them."""
    schemas = {**(schemas or {})}
    if "fact_sessions" in schemas:
        schemas["fact_sessions"] = schemas["fact_sessions"].append(pa.field("stamp", pa.string()))
    keys = pa.table(
        {
            "app_name": [k[0] for k in stamps],
            "user_id": [k[1] for k in stamps],
            "session_id": [k[2] for k in stamps],
        }
    )
    sessions = [
        {**row, "stamp": stamps[(row["app_name"], row["user_id"], row["session_id"])]}
        for row in tables["fact_sessions"]
    ]
    con = store.con
    registered = ["batch_keys"]
    con.register("batch_keys", keys)
    try:
        with store.transaction():
            store.run(sql.load("facts/delete_facts").sql)
            for table in TABLES:
                rows = sessions if table == "fact_sessions" else tables[table]
                if not rows:
                    continue
                name = f"new_{table}"
                con.register(name, pa.Table.from_pylist(rows, schema=schemas.get(table)))
                registered.append(name)
                # both names come from TABLES, never from data
                store.run(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")  # noqa: S608
    finally:
        store.unregister(*registered)

