"""Advice on a plan: scans that read a whole table, the index that would serve the lookup,
and the plan with that index as a HypoPG hypothetical index.

HypoPG: `hypopg_create_index` keeps its hypothetical index in backend memory
only, and works inside a READ ONLY transaction; `CREATE EXTENSION` writes the
catalog. So HypoPG is used only when the extension is already installed in the
inspected database; when the server has it but the database does not, the
report says CREATE EXTENSION hypopg would be needed and that it was not done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ..sanitize import one_line
from ..sources.postgres.connection import one
from .catalog import Catalog
from .explain import explain, walk
from .lookups import Lookup

_LITERAL = re.compile(r"'(?:[^']|'')*'")
_IDENT = re.compile(r'"((?:[^"]|"")+)"|\b([A-Za-z_][A-Za-z0-9_$]*)\b')
_AFTER = re.compile(r"(?:\)|::[a-z_ ]+(?:\([0-9, ]+\))?|\s)*(?P<op>>=|<=|<>|!=|=|<|>)?", re.I)


# a key taken out of a JSON column, as the planner prints it: (event_data ->> 'author'::text),
# or a chain of them: ((event_data -> 'content'::text) ->> 'role'::text)
_KEY = r"\s*(?:->>|->|#>>|#>)\s*'(?:[^']|'')*'(?:::[a-z_\[\] ]+)?"
_JSON_PATH = re.compile(
    r'(?P<open>\(*)(?P<column>"(?:[^"]|"")+"|\b[A-Za-z_][A-Za-z0-9_$]*)'
    rf"(?P<path>{_KEY}(?:\)?{_KEY})*)",
    re.I,
)


def condition_columns(condition: str | None, columns: list[str]) -> list[tuple[str, str]]:
    """(column, "eq"|"range"|"other") for the table's columns a plan condition tests.

    A key taken out of a JSON column (`event_data ->> 'author'`) is tested as that
    expression, not as the column: an index on the whole document would not serve it
    (and cannot hold documents over a third of a page); the entry's name is then the
    expression in parentheses, as an expression index takes it."""
    if not condition:
        return []
    found: dict[str, str] = {}
    order = {"eq": 0, "range": 1, "other": 2}
    for m in _JSON_PATH.finditer(condition):
        name = m.group("column").strip('"').replace('""', '"')
        if name not in columns:
            continue
        path = m.group("path")
        last = re.findall(r"(->>|->|#>>|#>)", path)[-1]
        if last in ("->", "#>"):
            continue  # compares a JSON value: an index on that sub-document would not serve
        after = _AFTER.match(condition, m.end())
        op = after.group("op") if after else None
        how = "eq" if op == "=" else "range" if op in ("<", ">", "<=", ">=") else "other"
        # the planner's own text of the expression, its parentheses balanced
        body = m.group("column") + path
        opened = min(len(m.group("open")), body.count(")"))
        expression = "(" + "(" * opened + body + ")"
        if expression not in found or order[how] < order[found[expression]]:
            found[expression] = how
    # the JSON keys' columns are not tested themselves
    text = _LITERAL.sub("''", _JSON_PATH.sub("''", condition))
    for m in _IDENT.finditer(text):
        name = m.group(1).replace('""', '"') if m.group(1) else m.group(2)
        if name not in columns or text[: m.start()].rstrip().endswith("::"):  # a type name
            continue
        after = _AFTER.match(text, m.end())  # every part is optional: it always matches
        op = after.group("op") if after else None
        how = "eq" if op == "=" else "range" if op in ("<", ">", "<=", ">=") else "other"
        if order[how] < order[found.get(name, "other")] or name not in found:
            found[name] = how
    return sorted(found.items(), key=lambda item: order[item[1]])


@dataclass
class Finding:
    """A scan that reads a whole table or index although the lookup has a condition."""

    relation: str
    rows: int | None
    what: str  # sentence start for the advice
    columns: list[tuple[str, str]]
    covered_by: str | None  # an existing index that leads with the first column


def findings(scans: list[dict[str, Any]], catalog: Catalog) -> list[Finding]:
    out = []
    for scan in scans:
        table = catalog.table(scan["relation"]) if scan["relation"] else None
        if table is None:
            continue
        rows = table["rows"]
        size = f"{rows:,} rows" if rows is not None else "row count unknown: never ANALYZEd"
        if scan["node_type"].endswith("Seq Scan"):
            columns = condition_columns(scan["filter"], table["columns"])
            what = f"{scan['node_type']} on {scan['relation']} ({size})"
        elif scan["index"] and scan["index_cond"]:
            index = catalog.index(scan["index"])
            tested = condition_columns(scan["index_cond"], table["columns"])
            if not index or not index["columns"] or index["columns"][0] in {c for c, _ in tested}:
                continue
            columns = condition_columns(
                f"{scan['index_cond']} AND {scan['filter'] or ''}", table["columns"]
            )
            what = (
                f"{scan['node_type']} reads all of {scan['index']} on {scan['relation']} "
                f"({size}): its leading column {index['columns'][0]} is not constrained"
            )
        else:
            continue
        covered = None
        if columns:
            lead = columns[0][0]
            covered = next(
                (
                    i["name"]
                    for i in table["indexes"]
                    if i and i["columns"] and i["columns"][0] == lead
                ),
                None,
            )
        out.append(Finding(scan["relation"], rows, what, columns, covered))
    return out


def suggest(con: psycopg.Connection, catalog: Catalog, finding: Finding) -> tuple[str, str] | None:
    """(CREATE INDEX CONCURRENTLY ..., the same as a plain CREATE INDEX for HypoPG)."""
    if not finding.columns or finding.covered_by:
        return None
    table = catalog.table(finding.relation)
    if table is None:
        return None
    schema = table["schema"]
    names = [c for c, _ in finding.columns]
    words = [re.sub(r"[^A-Za-z0-9]+", "_", n).strip("_") for n in names]
    index_name = "_".join(["idx", finding.relation, *words])[:63]
    # quote_ident on the server: it knows which words are keywords
    concurrently, plain = one(
        con,
        "SELECT format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %%I ON %%I.%%I (%%s)', "
        "  %(index)s::text, %(schema)s::text, %(table)s::text, cols), "
        "format('CREATE INDEX ON %%I.%%I (%%s)', %(schema)s::text, %(table)s::text, cols) "
        # an expression (from the planner's own text) goes in as it is, a column quoted
        "FROM (SELECT string_agg(CASE WHEN left(c, 1) = '(' THEN c ELSE quote_ident(c) END, "
        "  ', ' ORDER BY n) AS cols "
        "  FROM unnest(%(columns)s::text[]) WITH ORDINALITY AS u(c, n)) AS s",
        {"index": index_name, "schema": schema, "table": finding.relation, "columns": names},
    )
    return concurrently, plain


def hypopg_status(con: psycopg.Connection) -> tuple[str, str | None]:
    row = con.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'hypopg'"
    ).fetchone()
    if row:
        return "installed", row[0]
    (available,) = one(con, "SELECT count(*) FROM pg_available_extensions WHERE name = 'hypopg'")
    return ("available" if available else "absent"), None


def hypopg_note(status: str) -> str:
    if status == "installed":
        return "HypoPG is installed: suggested indexes were tried as hypothetical indexes"
    if status == "available":
        return (
            "HypoPG is on the server but not installed in this database: CREATE EXTENSION "
            "hypopg would be needed; not done: read-only"
        )
    return (
        "HypoPG is absent from this server: the suggested index was not tried "
        "(Debian: postgresql-<major>-hypopg, then CREATE EXTENSION hypopg)"
    )


def hypothetical(
    con: psycopg.Connection, schema: str, create: str, lookup: Lookup
) -> tuple[float, bool] | str:
    """(cost, uses the index) of `lookup` with `create` as a HypoPG index, or why not."""
    created = None
    try:
        with con.transaction():  # a savepoint: a failure must not end the outer transaction
            created = one(
                con,
                sql.SQL("SELECT indexrelid, indexname FROM {}.hypopg_create_index(%s)").format(
                    sql.Identifier(schema)
                ),
                [create],
            )
            plan = explain(con, lookup, analyze=False)["Plan"]
    except psycopg.errors.QueryCanceled:
        raise
    except psycopg.Error as e:
        return f"HypoPG could not try it: {one_line(str(e))}"
    finally:
        if created is not None:
            with con.transaction():
                con.execute(
                    sql.SQL("SELECT {}.hypopg_drop_index(%s)").format(sql.Identifier(schema)),
                    [created[0]],
                )
    uses = any(node.get("Index Name") == created[1] for node in walk(plan))
    return float(plan["Total Cost"]), uses
