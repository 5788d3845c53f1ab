"""EXPLAIN (FORMAT JSON) of one lookup, and the plan's nodes and scans as plain data."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg import sql

from .catalog import Catalog
from .lookups import Lookup


def explain(con: psycopg.Connection, lookup: Lookup, analyze: bool) -> dict[str, Any]:
    options = sql.SQL("ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON")
    statement = sql.SQL("EXPLAIN ({}) ").format(options) + sql.SQL(lookup.sql)
    # without parameters psycopg leaves a `%` in a query file's text alone
    row = con.execute(statement, lookup.params or None).fetchone()
    assert row is not None  # EXPLAIN always returns its plan
    result = json.loads(row[0]) if isinstance(row[0], str) else row[0]
    plan: dict[str, Any] = result[0]
    return plan


def display(node: dict[str, Any]) -> str:
    """The node's name as text EXPLAIN shows it ("Parallel Seq Scan", "Finalize Aggregate")."""
    name = node["Node Type"]
    if name == "Aggregate":
        name = {
            "Sorted": "GroupAggregate",
            "Hashed": "HashAggregate",
            "Mixed": "MixedAggregate",
        }.get(node.get("Strategy") or "", "Aggregate")
        if node.get("Partial Mode", "Simple") != "Simple":
            name = f"{node['Partial Mode']} {name}"
    if node.get("Parallel Aware"):
        name = f"Parallel {name}"
    return name


def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from walk(child)


def scans(plan: dict[str, Any], catalog: Catalog) -> list[dict[str, Any]]:
    found = []
    for node in walk(plan):
        if not node["Node Type"].endswith("Scan"):
            continue
        index = node.get("Index Name")
        relation = node.get("Relation Name")
        if relation is None and index is not None:  # a Bitmap Index Scan names only its index
            info = catalog.index(index)
            relation = info["table"] if info else None
        found.append(
            {
                "node_type": display(node),
                "relation": relation,
                "index": index,
                "index_cond": node.get("Index Cond") or node.get("Recheck Cond"),
                "filter": node.get("Filter"),
                "estimated_rows": int(node["Plan Rows"]),
            }
        )
    return found


def unique(values: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))
