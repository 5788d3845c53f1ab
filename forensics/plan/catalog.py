"""Tables and indexes the plans mention, read from pg_catalog once each."""

from __future__ import annotations

from typing import Any

import psycopg


class Catalog:
    """Per relation: schema, estimated rows, columns, indexes; per index: table, columns."""

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
