"""How the forensic lookups will run on an ADK PostgreSQL database, checked read-only.

The CLI (`forensics plan`, in cli.py)::

    forensics plan DSN [--app APP] [--user USER] [--session SESSION]
                       [--since TIME] [--until TIME] [--query FILE.sql ...]
                       [--analyze] [--statement-timeout SECONDS] [--format table|json|csv]

    Show how the lookups an investigation runs on ADK's events table would be
    executed, without running them: for each, the top plan node, every scan with
    its type and relation, total cost, estimated rows, the indexes used, and a
    verdict. A sequential scan gets a suggested CREATE INDEX CONCURRENTLY; when
    the HypoPG extension is installed in that database, the plan with the
    suggested index as a hypothetical index (nothing is built). Also lists the
    indexes on events and sessions.

    Nothing is written: one READ ONLY transaction, rolled back, every statement
    under statement_timeout. Besides catalog reads and one sample row of events,
    only EXPLAIN runs, unless --analyze, which executes each lookup (EXPLAIN
    ANALYZE) inside that transaction.

    --app/--user/--session/--since/--until  filters of the loader's own query
        (exactly what `forensics ingest adk-postgres` would run with them); they
        also pick the session for the session lookups and the time-only range
        (default: the 30 days before now).
    --query FILE.sql  add your own lookup (repeatable); one SELECT or WITH ...
        SELECT per file, no parameters. Anything else is refused.
    --analyze  also execute each lookup and report actual_ms (still read-only).

    Example:
    forensics plan "postgresql://forensics@db/adk" --since 2026-10-01 --query slow.sql

The catalogue of named lookups (`kind` = "catalogue", SQL in queries/plan_*.sql):
by_session, session_events, compaction_range, by_invocation, time_range; then the
loader's own queries (`kind` = "loader": loader_events, loader_sessions) built
from `adk_postgres.where_clause`, and one row per query file (`kind` = "query").
Values are always bound; the sample session, invocation and timestamp come from
the filters or else from the first row of `events`.

HypoPG: `hypopg_create_index` keeps its hypothetical index in backend memory
only, and works inside a READ ONLY transaction; `CREATE EXTENSION` writes the
catalog. So HypoPG is used only when the extension is already installed in the
inspected database; when the server has it but the database does not, the
report says CREATE EXTENSION hypopg would be needed and that it was not done.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from . import queries
from .errors import ForensicsError
from .sources import adk_v0
from .sources.adk_postgres import AdkPostgresSource, where_clause
from .sources.base import Filters

CATALOGUE = (
    "plan_by_session",
    "plan_session_events",
    "plan_compaction_range",
    "plan_by_invocation",
    "plan_time_range",
)
TIME_RANGE_DEFAULT = timedelta(days=30)  # the founding document's 30-day count
COMPACTION_RANGE = timedelta(hours=1)
# Text columns holding JSON (output.View.json_columns).
JSON_COLUMNS = ("params", "scans", "relation_rows")
SCHEMA: dict[str, pl.DataType] = {
    "name": pl.Utf8(),
    "kind": pl.Utf8(),  # catalogue | loader | query
    "sql": pl.Utf8(),  # as passed to psycopg: %(name)s placeholders
    "params": pl.Utf8(),  # JSON object: the bound values
    "top_node": pl.Utf8(),
    "total_cost": pl.Float64(),
    "estimated_rows": pl.Int64(),
    "uses_index": pl.Boolean(),
    "indexes_used": pl.List(pl.Utf8()),
    "seq_scan_relations": pl.List(pl.Utf8()),
    "relation_rows": pl.Utf8(),  # JSON object: relation -> pg_class.reltuples
    "scans": pl.Utf8(),  # JSON list: every scan node
    "suggested_index": pl.Utf8(),
    "hypothetical_cost": pl.Float64(),
    "hypothetical_uses_index": pl.Boolean(),
    "actual_ms": pl.Float64(),
    "actual_rows": pl.Int64(),
    "advice": pl.Utf8(),
}
INDEX_SCHEMA: dict[str, pl.DataType] = {
    "table": pl.Utf8(),
    "name": pl.Utf8(),
    "definition": pl.Utf8(),
}

_PARAM = re.compile(r"(?<![\w$:])\$([a-z_][a-z0-9_]*)")  # as queries.py reads them
_REFUSED_WORDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "INTO", "TRUNCATE", "COPY"}


class QueryFileError(ForensicsError):
    """A --query file that cannot be explained safely."""


@dataclass(frozen=True)
class Lookup:
    name: str
    kind: str
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


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


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def plan_frame(
    dsn: str,
    *,
    filters: Filters = Filters(),  # noqa: B008 - frozen dataclass
    analyze: bool = False,
    extra_queries: Sequence[str | Path] = (),
    statement_timeout_ms: int = 30_000,
) -> pl.DataFrame:
    """One row per named lookup: its plan, verdict and advice (see `plan_report`)."""
    return plan_report(
        dsn,
        filters=filters,
        analyze=analyze,
        extra_queries=extra_queries,
        statement_timeout_ms=statement_timeout_ms,
    ).lookups


def plan_indexes(dsn: str, *, statement_timeout_ms: int = 30_000) -> pl.DataFrame:
    """The indexes on `events` and `sessions`: table, name, definition."""
    source = AdkPostgresSource(dsn, statement_timeout_ms=statement_timeout_ms)
    with source.read_only() as con:
        source.detect(con)  # the loader's own check and message for a missing table
        return _indexes(con)


def plan_report(
    dsn: str,
    *,
    filters: Filters = Filters(),  # noqa: B008 - frozen dataclass
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
    source = AdkPostgresSource(dsn, filters, statement_timeout_ms=statement_timeout_ms)
    with source.read_only() as con:
        layout, columns = source.detect(con)
        version = con.execute("SHOW server_version").fetchone()[0]
        notes: list[str] = []
        lookups = [
            *_catalogue(con, filters, notes),
            *_loader_lookups(con, filters, layout, columns),
            *files,
        ]
        hypopg, schema = _hypopg_status(con)
        hypopg_note = _hypopg_note(hypopg)
        catalog = _Catalog(con)
        rows = [
            _plan_row(con, catalog, lookup, analyze, statement_timeout_ms, schema, hypopg_note)
            for lookup in lookups
        ]
        return PlanReport(
            location=source.location,
            server_version=version,
            layout=layout,
            hypopg=hypopg,
            hypopg_note=hypopg_note,
            lookups=pl.DataFrame(rows, schema=SCHEMA, orient="row"),
            indexes=_indexes(con),
            notes=notes,
        )


def read_query_file(path: Path) -> Lookup:
    """A --query file as a lookup, refused unless it is one read-only SELECT statement."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QueryFileError(f"query file {path}: cannot read it: {e}") from e
    statement = _single_select(text, path)
    return Lookup(f"query:{path.name}", "query", statement, path=path)


# ---------------------------------------------------------------------------
# Connection
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# The lookups
# ---------------------------------------------------------------------------


def _naive_utc(epoch: float) -> datetime:
    # ADK stores naive UTC timestamps; bound the way the loader binds them
    return datetime.fromtimestamp(epoch, UTC).replace(tzinfo=None)


def _sample(con: psycopg.Connection, filters: Filters, notes: list[str]) -> dict[str, Any]:
    """Key values for the catalogue: the filters', else those of the first matching event."""
    keys = Filters(app=filters.app, user=filters.user, session=filters.session)
    where, params = where_clause(keys, None)
    row = con.execute(
        sql.SQL('SELECT app_name, user_id, session_id, invocation_id, "timestamp" FROM events')
        + where
        + sql.SQL(" LIMIT 1"),
        params,
    ).fetchone()
    if row is None:
        notes.append(
            "no event matches the filters (or events is empty): the session and invocation "
            "lookups use placeholder values"
        )
        row = (None, None, None, None, None)
    app, user, session, invocation, ts = row
    ts = ts or _naive_utc(filters.since or datetime.now(UTC).timestamp())
    return {
        "app_name": filters.app or app or "app",
        "user_id": filters.user or user or "user",
        "session_id": filters.session or session or "session",
        "invocation_id": invocation or "invocation",
        "timestamp": ts,
    }


def _catalogue(con: psycopg.Connection, filters: Filters, notes: list[str]) -> list[Lookup]:
    sample = _sample(con, filters, notes)
    until = _naive_utc(filters.until) if filters.until is not None else None
    since = _naive_utc(filters.since) if filters.since is not None else None
    until = until or datetime.now(UTC).replace(tzinfo=None)
    since = since or until - TIME_RANGE_DEFAULT
    # a compaction range is an hour of the sample session; the rest use the time-only range
    ranges = {
        "plan_compaction_range": (sample["timestamp"], sample["timestamp"] + COMPACTION_RANGE)
    }
    out = []
    for name in CATALOGUE:
        query = queries.load(name)
        first, last = ranges.get(name, (since, until))
        values = {**sample, "since": first, "until": last}
        params = {p: values[p] for p in query.params}
        out.append(Lookup(name.removeprefix("plan_"), "catalogue", _psycopg_text(query), params))
    return out


def _psycopg_text(query: queries.Query) -> str:
    """A queries/ file's statement with its `$name` parameters as psycopg's `%(name)s`."""
    body = "\n".join(
        line for line in query.sql.splitlines()[3:] if not line.startswith("--")
    ).strip()
    if not query.params:  # sent without parameters: psycopg leaves `%` alone
        return body
    return _PARAM.sub(r"%(\1)s", body.replace("%", "%%"))


def _loader_lookups(
    con: psycopg.Connection, filters: Filters, layout: str, columns: list[str]
) -> list[Lookup]:
    """The statements `AdkPostgresSource.batches` sends, with the same filters."""
    where, params = where_clause(filters, None)
    if layout == "v1":
        select = sql.SQL(
            "SELECT app_name, user_id, session_id, id, invocation_id, "
            "extract(epoch FROM timestamp)::float8, event_data::text FROM events"
        )
    else:
        present = [c for c in adk_v0.ALL_COLUMNS if c in columns and c != "timestamp"]
        select = sql.SQL("SELECT {}, extract(epoch FROM timestamp)::float8 FROM events").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in present)
        )
    out = [Lookup("loader_events", "loader", (select + where).as_string(con), params)]
    has_sessions = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'sessions' "
        "AND table_schema = current_schema() AND column_name IN "
        "('app_name', 'user_id', 'id', 'create_time', 'update_time')"
    ).fetchone()[0]
    if has_sessions == 5:
        fragments: list[sql.Composable] = []
        session_params: dict[str, Any] = {}
        for column, key, value in (
            ("app_name", "app", filters.app),
            ("user_id", "user", filters.user),
            ("id", "session", filters.session),
        ):
            if value is not None:
                fragments.append(
                    sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(key))
                )
                session_params[key] = value
        statement = sql.SQL(
            "SELECT app_name, user_id, id, extract(epoch FROM create_time)::float8, "
            "extract(epoch FROM update_time)::float8 FROM sessions"
        )
        if fragments:
            statement += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(fragments)
        out.append(Lookup("loader_sessions", "loader", statement.as_string(con), session_params))
    return out


# ---------------------------------------------------------------------------
# --query files
# ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>--[^\n]*)
    | (?P<block>/\*)
    | (?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)
    | (?P<string>[EeBbXxNn]?'(?:[^'\\]|\\.|'')*'|[Uu]&'(?:[^']|'')*')
    | (?P<ident>[Uu]&"(?:[^"]|"")*"|"(?:[^"]|"")*")
    | (?P<semi>;)
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<quote>['"])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """(kind, text, end offset) of each SQL token, comments and quoted text skipped over."""
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None  # `other` matches any character
        kind, value, pos = m.lastgroup or "other", m.group(), m.end()
        if kind == "block":  # block comments nest in PostgreSQL
            depth = 1
            while depth:
                nxt = re.compile(r"/\*|\*/").search(text, pos)
                if nxt is None:
                    raise QueryFileError(f"query file {path}: unterminated /* comment")
                depth += 1 if nxt.group() == "/*" else -1
                pos = nxt.end()
            continue
        if kind == "dollar":
            end = text.find(value, pos)
            if end < 0:
                raise QueryFileError(f"query file {path}: unterminated {value} quoted string")
            pos = end + len(value)
            kind = "string"
        if kind == "quote":
            line = text.count("\n", 0, pos) + 1
            raise QueryFileError(f"query file {path}, line {line}: unterminated {value} quote")
        if kind not in ("ws", "comment"):
            yield kind, value, pos


def _single_select(text: str, path: Path) -> str:
    """The one SELECT/WITH statement in `text`, without its `;`, or QueryFileError."""
    statements: list[list[tuple[str, str, int]]] = [[]]
    for token in _tokens(text, path):
        if token[0] == "semi":
            statements.append([])
        else:
            statements[-1].append(token)
    statements = [s for s in statements if s]
    hint = "a query file holds exactly one SELECT (or WITH ... SELECT), without parameters"
    if not statements:
        raise QueryFileError(f"query file {path}: holds no SQL statement", hint=hint)
    if len(statements) > 1:
        raise QueryFileError(
            f"query file {path}: refused: holds {len(statements)} statements, not one",
            hint=hint,
        )
    statement = statements[0]
    words = [value.upper() for kind, value, _ in statement if kind == "word"]
    first = words[0] if words and statement[0][0] == "word" else statement[0][1]
    if first not in ("SELECT", "WITH"):
        raise QueryFileError(
            f"query file {path}: refused: a {first} statement; only SELECT or WITH ... SELECT "
            "is explained",
            hint=hint,
        )
    bad = [w for w in words if w in _REFUSED_WORDS]
    bad += [
        f"FOR {b}" for a, b in zip(words, words[1:], strict=False) if a == "FOR" and b == "SHARE"
    ]
    if bad:
        raise QueryFileError(
            f"query file {path}: refused: it contains {bad[0]} (writes, creates or locks rows); "
            "only a read-only SELECT is explained",
            hint=hint,
        )
    return text[: statement[-1][2]].strip()


# ---------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------


def _explain(con: psycopg.Connection, lookup: Lookup, analyze: bool) -> dict[str, Any]:
    options = sql.SQL("ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON")
    statement = sql.SQL("EXPLAIN ({}) ").format(options) + sql.SQL(lookup.sql)
    # without parameters psycopg leaves a `%` in a query file's text alone
    (result,) = con.execute(statement, lookup.params or None).fetchone()
    if isinstance(result, str):
        result = json.loads(result)
    return result[0]


def _display(node: dict[str, Any]) -> str:
    """The node's name as text EXPLAIN shows it ("Parallel Seq Scan", "Finalize Aggregate")."""
    name = node["Node Type"]
    if name == "Aggregate":
        name = {
            "Sorted": "GroupAggregate",
            "Hashed": "HashAggregate",
            "Mixed": "MixedAggregate",
        }.get(node.get("Strategy"), "Aggregate")
        if node.get("Partial Mode", "Simple") != "Simple":
            name = f"{node['Partial Mode']} {name}"
    if node.get("Parallel Aware"):
        name = f"Parallel {name}"
    return name


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _walk(child)


def _scans(plan: dict[str, Any], catalog: _Catalog) -> list[dict[str, Any]]:
    scans = []
    for node in _walk(plan):
        if not node["Node Type"].endswith("Scan"):
            continue
        index = node.get("Index Name")
        relation = node.get("Relation Name")
        if relation is None and index is not None:  # a Bitmap Index Scan names only its index
            info = catalog.index(index)
            relation = info["table"] if info else None
        scans.append(
            {
                "node_type": _display(node),
                "relation": relation,
                "index": index,
                "index_cond": node.get("Index Cond") or node.get("Recheck Cond"),
                "filter": node.get("Filter"),
                "estimated_rows": int(node["Plan Rows"]),
            }
        )
    return scans


def _unique(values: Iterator[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


_LITERAL = re.compile(r"'(?:[^']|'')*'")
_IDENT = re.compile(r'"((?:[^"]|"")+)"|\b([A-Za-z_][A-Za-z0-9_$]*)\b')
_AFTER = re.compile(r"(?:\)|::[a-z_ ]+(?:\([0-9, ]+\))?|\s)*(?P<op>>=|<=|<>|!=|=|<|>)?", re.I)


def _condition_columns(condition: str | None, columns: list[str]) -> list[tuple[str, str]]:
    """(column, "eq"|"range"|"other") for the table's columns a plan condition tests."""
    if not condition:
        return []
    text = _LITERAL.sub("''", condition)
    found: dict[str, str] = {}
    order = {"eq": 0, "range": 1, "other": 2}
    for m in _IDENT.finditer(text):
        name = m.group(1).replace('""', '"') if m.group(1) else m.group(2)
        if name not in columns or text[: m.start()].rstrip().endswith("::"):  # a type name
            continue
        op = _AFTER.match(text, m.end()).group("op")
        how = "eq" if op == "=" else "range" if op in ("<", ">", "<=", ">=") else "other"
        if order[how] < order[found.get(name, "other")] or name not in found:
            found[name] = how
    return sorted(found.items(), key=lambda item: order[item[1]])


class _Catalog:
    """Tables and indexes the plans mention, read from pg_catalog once each."""

    def __init__(self, con: psycopg.Connection):
        self.con = con
        self._tables: dict[str, dict[str, Any] | None] = {}
        self._indexes: dict[str, dict[str, Any] | None] = {}

    def table(self, name: str) -> dict[str, Any] | None:
        if name not in self._tables:
            row = self.con.execute(
                "SELECT n.nspname, c.reltuples::float8, array(SELECT a.attname::text "
                "FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 "
                "AND NOT a.attisdropped ORDER BY a.attnum), array(SELECT i.indexrelid::regclass"
                "::text FROM pg_index i WHERE i.indrelid = c.oid) "
                "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = to_regclass(quote_ident(%s))",
                [name],
            ).fetchone()
            self._tables[name] = (
                None
                if row is None
                else {
                    "schema": row[0],
                    "rows": int(row[1]) if row[1] >= 0 else None,  # -1: never analyzed
                    "columns": row[2],
                    "indexes": [self.index(i) for i in row[3]],
                }
            )
        return self._tables[name]

    def index(self, name: str) -> dict[str, Any] | None:
        if name not in self._indexes:
            row = self.con.execute(
                "SELECT t.relname::text, array(SELECT a.attname::text "
                "FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord) "
                "LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum "
                "ORDER BY k.ord) "
                "FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
                "WHERE x.indexrelid = to_regclass(%s)",
                [name],
            ).fetchone()
            # hypothetical (HypoPG) indexes are in no catalog: None
            self._indexes[name] = (
                None if row is None else {"name": name, "table": row[0], "columns": row[1]}
            )
        return self._indexes[name]


@dataclass
class _Finding:
    """A scan that reads a whole table or index although the lookup has a condition."""

    relation: str
    rows: int | None
    what: str  # sentence start for the advice
    columns: list[tuple[str, str]]
    covered_by: str | None  # an existing index that leads with the first column


def _findings(scans: list[dict[str, Any]], catalog: _Catalog) -> list[_Finding]:
    out = []
    for scan in scans:
        table = catalog.table(scan["relation"]) if scan["relation"] else None
        if table is None:
            continue
        rows = table["rows"]
        size = f"{rows:,} rows" if rows is not None else "row count unknown: never ANALYZEd"
        if scan["node_type"].endswith("Seq Scan"):
            columns = _condition_columns(scan["filter"], table["columns"])
            what = f"{scan['node_type']} on {scan['relation']} ({size})"
        elif scan["index"] and scan["index_cond"]:
            index = catalog.index(scan["index"])
            tested = _condition_columns(scan["index_cond"], table["columns"])
            if not index or not index["columns"] or index["columns"][0] in {c for c, _ in tested}:
                continue
            columns = _condition_columns(
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
        out.append(_Finding(scan["relation"], rows, what, columns, covered))
    return out


def _suggest(
    con: psycopg.Connection, catalog: _Catalog, finding: _Finding
) -> tuple[str, str] | None:
    """(CREATE INDEX CONCURRENTLY ..., the same as a plain CREATE INDEX for HypoPG)."""
    if not finding.columns or finding.covered_by:
        return None
    schema = catalog.table(finding.relation)["schema"]
    names = [c for c, _ in finding.columns]
    index_name = "_".join(["idx", finding.relation, *names])[:63]
    # quote_ident on the server: it knows which words are keywords
    concurrently, plain = con.execute(
        "SELECT format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %%I ON %%I.%%I (%%s)', "
        "  %(index)s::text, %(schema)s::text, %(table)s::text, cols), "
        "format('CREATE INDEX ON %%I.%%I (%%s)', %(schema)s::text, %(table)s::text, cols) "
        "FROM (SELECT string_agg(quote_ident(c), ', ' ORDER BY n) AS cols "
        "  FROM unnest(%(columns)s::text[]) WITH ORDINALITY AS u(c, n)) AS s",
        {"index": index_name, "schema": schema, "table": finding.relation, "columns": names},
    ).fetchone()
    return concurrently, plain


def _hypopg_status(con: psycopg.Connection) -> tuple[str, str | None]:
    row = con.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'hypopg'"
    ).fetchone()
    if row:
        return "installed", row[0]
    available = con.execute(
        "SELECT count(*) FROM pg_available_extensions WHERE name = 'hypopg'"
    ).fetchone()[0]
    return ("available" if available else "absent"), None


def _hypopg_note(status: str) -> str:
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


def _hypothetical(
    con: psycopg.Connection, schema: str, create: str, lookup: Lookup
) -> tuple[float, bool] | str:
    """(cost, uses the index) of `lookup` with `create` as a HypoPG index, or why not."""
    created = None
    try:
        with con.transaction():  # a savepoint: a failure must not end the outer transaction
            created = con.execute(
                sql.SQL("SELECT indexrelid, indexname FROM {}.hypopg_create_index(%s)").format(
                    sql.Identifier(schema)
                ),
                [create],
            ).fetchone()
            plan = _explain(con, lookup, analyze=False)["Plan"]
    except psycopg.errors.QueryCanceled:
        raise
    except psycopg.Error as e:
        return f"HypoPG could not try it: {str(e).strip()}"
    finally:
        if created is not None:
            with con.transaction():
                con.execute(
                    sql.SQL("SELECT {}.hypopg_drop_index(%s)").format(sql.Identifier(schema)),
                    [created[0]],
                )
    uses = any(node.get("Index Name") == created[1] for node in _walk(plan))
    return float(plan["Total Cost"]), uses


def _plan_row(
    con: psycopg.Connection,
    catalog: _Catalog,
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
                        result = _explain(con, lookup, analyze=True)
                    actual_ms = float(result["Execution Time"])
                    actual_rows = int(result["Plan"]["Actual Rows"])
                except psycopg.errors.QueryCanceled:
                    advice.append(f"EXPLAIN ANALYZE stopped at statement_timeout ({timeout_ms} ms)")
            if result is None:
                result = _explain(con, lookup, analyze=False)
    except psycopg.Error as e:
        if lookup.path is None:
            raise
        raise QueryFileError(
            f"query file {lookup.path}: PostgreSQL cannot plan it: {str(e).strip()}"
        ) from e
    plan = result["Plan"]
    scans = _scans(plan, catalog)
    indexes_used = _unique(s["index"] for s in scans)
    seq = _unique(s["relation"] for s in scans if s["node_type"].endswith("Seq Scan"))
    relations = _unique(s["relation"] for s in scans)
    relation_rows = {r: (catalog.table(r) or {}).get("rows") for r in relations}
    suggested = hypothetical_cost = hypothetical_uses = None
    findings = _findings(scans, catalog)
    for finding in findings:
        sentence = finding.what
        if not finding.columns:
            sentence += " with no condition: reads it all, as this lookup asks"
        elif finding.covered_by:
            sentence += (
                f"; index {finding.covered_by} leads with {finding.columns[0][0]}, "
                "but the planner expects this condition to match too many rows to use it"
            )
        elif suggested is None and (pair := _suggest(con, catalog, finding)):
            suggested, hypo_create = pair
            sentence += f"; no index leads with {finding.columns[0][0]}: suggested {suggested}"
            if hypopg_schema:
                tried = _hypothetical(con, hypopg_schema, hypo_create, lookup)
                if isinstance(tried, str):
                    sentence += f"; {tried}"
                else:
                    hypothetical_cost, hypothetical_uses = tried
                    sentence += (
                        f"; as a hypothetical index (HypoPG) the cost would be "
                        f"{hypothetical_cost:,.0f} instead of {plan['Total Cost']:,.0f}"
                        + ("" if hypothetical_uses else ", and the planner would not use it")
                    )
            else:
                sentence += f"; {hypopg_note}"
        advice.append(sentence)
    if not findings:
        verdict = f"uses index {', '.join(indexes_used)}" if indexes_used else "no table scan"
        advice.insert(0, verdict)
    return {
        "name": lookup.name,
        "kind": lookup.kind,
        "sql": lookup.sql,
        "params": json.dumps({k: _plain(v) for k, v in lookup.params.items()}),
        "top_node": _display(plan),
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
    return pl.DataFrame(rows, schema=INDEX_SCHEMA, orient="row")
