"""How the forensic lookups will run on an ADK PostgreSQL database, checked read-only.

`forensics plan DSN` (cli/plan.py) shows, for each lookup an investigation runs on
ADK's events table, how PostgreSQL would execute it, without running it: the top
plan node, every scan, total cost, estimated rows, the indexes used, and advice;
a sequential scan gets a suggested CREATE INDEX CONCURRENTLY, tried as a HypoPG
hypothetical index when the extension is installed in that database.

Nothing is written: one READ ONLY transaction, rolled back, every statement under
statement_timeout. Besides catalog reads and one sample row of events, only
EXPLAIN runs, unless `analyze`, which executes each lookup (EXPLAIN ANALYZE)
inside that transaction.

The modules, one job each: lookups.py (the catalogue in queries/plan/ and the
loader's own statements, built by the loader), query_files.py (--query files,
refused unless one read-only SELECT), explain.py (EXPLAIN and its nodes),
catalog.py (tables and indexes from pg_catalog), advice.py (whole-table scans,
suggested indexes, HypoPG), report.py (one row per lookup).
"""

from .lookups import CATALOGUE
from .query_files import QueryFileError, read_query_file
from .report import SCHEMA, PlanReport, plan_frame, plan_indexes, plan_report

__all__ = [
    "CATALOGUE",
    "SCHEMA",
    "PlanReport",
    "QueryFileError",
    "plan_frame",
    "plan_indexes",
    "plan_report",
    "read_query_file",
]
