"""One row per lookup: its plan, the indexes it uses, a verdict and advice."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import psycopg

from ..columns import PLAN_INDEXES, PLAN_LOOKUPS
from ..sanitize import one_line
from ..selection import Selection
from ..sources.postgres.adk import AdkPostgresSource
from ..sources.postgres.connection import one
from .advice import findings as find_whole_scans
from .advice import hypopg_note, hypopg_status, hypothetical, suggest
from .catalog import Catalog
from .explain import display, explain, unique
from .explain import scans as scan_nodes
from .lookups import Lookup, catalogue, loader_lookups
from .query_files import QueryFileError, read_query_file

SCHEMA = PLAN_LOOKUPS.schema


@dataclass
class PlanReport:
    """Everything `forensics plan` shows: lookups, indexes, HypoPG status."""

    location: str  # the DSN, password redacted
    server_version: str
    layout: str  # "v1" or "v0"
    hypopg: str  # installed | available | absent
    hypopg_note: str
    lookups: pl.DataFrame
    indexes: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def plan_frame(
    dsn: str,
    *,
    selection: Selection = Selection(),  # noqa: B008 - frozen dataclass
    analyze: bool = False,
    extra_queries: Sequence[str | Path] = (),
    statement_timeout_ms: int = 30_000,
) -> pl.DataFrame:
    """One row per named lookup: its plan, verdict and advice (see `plan_report`)."""
    return plan_report(
        dsn,
        selection=selection,
        analyze=analyze,
        extra_queries=extra_queries,
        statement_timeout_ms=statement_timeout_ms,
    ).lookups


def plan_indexes(dsn: str, *, statement_timeout_ms: int = 30_000) -> pl.DataFrame:
    """The indexes on `events` and `sessions`: table, name, definition."""
    source = AdkPostgresSource(dsn, statement_timeout_ms=statement_timeout_ms)
    with source.server.transaction() as con:
        source.detect(con)  # the loader's own check and message for a missing table
        return _indexes(con)


def plan_report(
    dsn: str,
    *,
    selection: Selection = Selection(),  # noqa: B008 - frozen dataclass
    analyze: bool = False,
    extra_queries: Sequence[str | Path] = (),
    statement_timeout_ms: int = 30_000,
) -> PlanReport:
    """EXPLAIN every lookup of the catalogue, the loader and `extra_queries`, read-only.

    With `analyze`, each lookup also runs (EXPLAIN ANALYZE) in the same READ ONLY
    transaction, which is rolled back; a lookup that hits `statement_timeout_ms`
    keeps its plain plan and says so in `advice`.
    """
    files = [read_query_file(Path(p)) for p in extra_queries]  # refuse before connecting
    source = AdkPostgresSource(dsn, selection, statement_timeout_ms=statement_timeout_ms)
    with source.server.transaction() as con:
        layout, columns = source.detect(con)
        (version,) = one(con, "SHOW server_version")
        notes: list[str] = []
        lookups = [
            *catalogue(con, selection, notes),
            *loader_lookups(con, source, layout, columns),
            *files,
        ]
        hypopg, schema = hypopg_status(con)
        note = hypopg_note(hypopg)
        catalog = Catalog(con)
        rows = [
            _plan_row(con, catalog, lookup, analyze, statement_timeout_ms, schema, note)
            for lookup in lookups
        ]
        return PlanReport(
            location=source.location,
            server_version=version,
            layout=layout,
            hypopg=hypopg,
            hypopg_note=note,
            lookups=PLAN_LOOKUPS.frame(rows),
            indexes=_indexes(con),
            notes=notes,
        )


def _plan_row(
    con: psycopg.Connection,
    catalog: Catalog,
    lookup: Lookup,
    analyze: bool,
    timeout_ms: int,
    hypopg_schema: str | None,
    hypopg_note: str,
) -> dict[str, Any]:
    advice: list[str] = []
    actual_ms = actual_rows = None
    result = None
    try:
        with con.transaction():  # a savepoint per lookup
            if analyze:
                try:
                    with con.transaction():
                        result = explain(con, lookup, analyze=True)
                    actual_ms = float(result["Execution Time"])
                    actual_rows = int(result["Plan"]["Actual Rows"])
                except psycopg.errors.QueryCanceled:
                    advice.append(f"EXPLAIN ANALYZE stopped at statement_timeout ({timeout_ms} ms)")
            if result is None:
                result = explain(con, lookup, analyze=False)
    except psycopg.Error as e:
        if lookup.path is None:
            raise
        raise QueryFileError(
            f"query file {lookup.path}: PostgreSQL cannot plan it: {one_line(str(e))}"
        ) from e
    plan = result["Plan"]
    scans = scan_nodes(plan, catalog)
    indexes_used = unique(s["index"] for s in scans)
    seq = unique(s["relation"] for s in scans if s["node_type"].endswith("Seq Scan"))
    relations = unique(s["relation"] for s in scans)
    relation_rows = {r: (catalog.table(r) or {}).get("rows") for r in relations}
    suggested = hypothetical_cost = hypothetical_uses = None
    findings = find_whole_scans(scans, catalog)
    for finding in findings:
        sentence = finding.what
        if not finding.columns:
            sentence += " with no condition: reads it all, as this lookup asks"
        elif finding.covered_by:
            sentence += (
                f"; index {finding.covered_by} leads with {finding.columns[0][0]}, "
                "but the planner expects this condition to match too many rows to use it"
            )
        elif suggested is None and (pair := suggest(con, catalog, finding)):
            candidate, hypo_create = pair
            lead = finding.columns[0][0]
            tried = hypothetical(con, hypopg_schema, hypo_create, lookup) if hypopg_schema else None
            if isinstance(tried, tuple):
                hypothetical_cost, hypothetical_uses = tried
                helps = hypothetical_uses and hypothetical_cost < float(plan["Total Cost"])
                cost = (
                    f"as a hypothetical index (HypoPG) the cost would be "
                    f"{hypothetical_cost:,.0f} instead of {plan['Total Cost']:,.0f}"
                    + ("" if hypothetical_uses else ", and the planner would not use it")
                )
                if helps:  # only what the hypothetical plan showed to help is suggested
                    suggested = candidate
                    sentence += f"; no index leads with {lead}: suggested {suggested}; {cost}"
                else:
                    sentence += f"; no index leads with {lead}, and one would not help: {cost}"
            else:
                suggested = candidate
                sentence += f"; no index leads with {lead}: suggested {suggested}"
                sentence += f"; {tried}" if isinstance(tried, str) else f"; {hypopg_note}"
        advice.append(sentence)
    if not findings:
        verdict = f"uses index {', '.join(indexes_used)}" if indexes_used else "no table scan"
        advice.insert(0, verdict)
    return {
        "name": lookup.name,
        "kind": lookup.kind,
        "sql": lookup.sql,
        "params": json.dumps({k: _plain(v) for k, v in lookup.params.items()}),
        "top_node": display(plan),
        "total_cost": float(plan["Total Cost"]),
        "estimated_rows": int(plan["Plan Rows"]),
        "uses_index": bool(indexes_used),
        "indexes_used": indexes_used,
        "seq_scan_relations": seq,
        "relation_rows": json.dumps(relation_rows),
        "scans": json.dumps(scans),
        "suggested_index": suggested,
        "hypothetical_cost": hypothetical_cost,
        "hypothetical_uses_index": hypothetical_uses,
        "actual_ms": actual_ms,
        "actual_rows": actual_rows,
        "advice": "; ".join(advice),
    }


def _plain(value: Any) -> Any:
    return value.isoformat(sep=" ") if isinstance(value, datetime) else value


def _indexes(con: psycopg.Connection) -> pl.DataFrame:
    rows = con.execute(
        "SELECT tablename::text, indexname::text, indexdef FROM pg_indexes "
        "WHERE schemaname = current_schema() AND tablename IN ('events', 'sessions') "
        "ORDER BY tablename, indexname"
    ).fetchall()
    return PLAN_INDEXES.frame(dict(zip(PLAN_INDEXES.names, row, strict=True)) for row in rows)
