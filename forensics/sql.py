"""SQL files in `queries/`: each starts with `-- name:`, a description and `-- params:`.

Files are grouped by the layer that runs them (`store/`, `families/adk/`, `plan/`)
and loaded by that path: `load("store/sessions")`. Files under `spark/` are Spark SQL,
run by the Spark engine; their parameters are written `:name`, as Spark binds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .resources import resource_dir

_HEADER = re.compile(r"^-- name: (?P<name>\S+)\n-- (?P<doc>.+)\n-- params: (?P<params>.*)\n")
# `$name` as DuckDB binds it; not `$$`, not `::type`, not inside a word
PARAM = re.compile(r"(?<![\w$:])\$([a-z_][a-z0-9_]*)")
# `:name` as Spark binds it; not `::type`
SPARK_PARAM = re.compile(r"(?<![\w:]):([a-z_][a-z0-9_]*)")
_COMMENT = re.compile(r"--[^\n]*")
_OR_IGNORE = re.compile(r"^INSERT OR IGNORE INTO\b", re.MULTILINE)
# what `unordered` reads: strings and comments whole (a parenthesis in one is no nesting)
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|--[^\n]*|[()]|\b(?:ORDER\s+BY|LIMIT|OFFSET)\b",
                     re.IGNORECASE)  # fmt: skip


def queries_dir() -> Path:
    return resource_dir("queries")


@dataclass(frozen=True)
class Query:
    name: str  # the path under queries/, without .sql
    doc: str
    params: tuple[str, ...]  # declared in the header
    sql: str

    @property
    def unordered(self) -> str:
        """The statement without its final ORDER BY (none when a LIMIT or OFFSET follows
        it), for a view another query reads: that query orders what it returns, and
        DuckDB would otherwise sort the view's rows wherever it is read (for an
        aggregate, every priced call sorted for nothing)."""
        depth, last = 0, None
        for token in _TOKENS.finditer(self.sql):
            word = token.group().upper()
            if word == "(":
                depth += 1
            elif word == ")":
                depth -= 1
            elif depth == 0 and word.startswith("ORDER"):
                last = token.start()
            elif depth == 0 and word in ("LIMIT", "OFFSET"):
                last = None
        return (self.sql[:last] if last is not None else self.sql).strip().rstrip(";")

    @property
    def appending(self) -> str:
        """The statement, an `INSERT OR IGNORE`, as a plain INSERT: for rows of which
        none is stored yet or comes twice, where DuckDB's check for a conflict is most of
        the insert's cost (about 8 ms a statement of 900 rows, three times the insert);
        a row that does conflict then fails the statement (ingest/pipeline.py then
        stores the batch again with the statement as written)."""
        found, count = _OR_IGNORE.subn("INSERT INTO", self.sql, count=1)
        if not count:
            raise ValueError(f"{self.name}: not an INSERT OR IGNORE statement")
        return found

    def used_params(self) -> set[str]:
        marker = SPARK_PARAM if self.name.startswith("spark/") else PARAM
        return set(marker.findall(_COMMENT.sub("", self.sql)))


@cache
def load(name: str) -> Query:
    path = queries_dir() / f"{name}.sql"
    text = path.read_text(encoding="utf-8")
    header = _HEADER.match(text)
    stem = name.rsplit("/", 1)[-1]
    if not header or header["name"] != stem:
        raise ValueError(f"{path}: must start with '-- name: {stem}', a description, '-- params:'")
    declared = header["params"].strip()
    params = (
        () if declared == "(none)" else tuple(p.strip().lstrip("$:") for p in declared.split(","))
    )
    return Query(name, header["doc"], params, text)


def all_queries() -> list[Query]:
    root = queries_dir()
    return [
        load(p.relative_to(root).with_suffix("").as_posix()) for p in sorted(root.rglob("*.sql"))
    ]
