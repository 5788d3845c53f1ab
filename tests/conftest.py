"""Shared pytest fixtures.

PostgreSQL: `pg_server` (session) is a throwaway server from tests/pg.py, or
the one named by FORENSICS_TEST_PG_DSN; `pg_db` (function) is a fresh empty
database on it, as a `postgresql://user@host:port/name` DSN. Without a
PostgreSQL installation these tests skip, unless FORENSICS_REQUIRE_PG=1 (CI),
where they fail.

OpenSearch: `opensearch_node` and `opensearch3_node` (session) are real single-node
clusters of the 2.x and 3.x lines (tests/opensearch_node.py, built by .ci/run from
tests/opensearch_java/); they skip when not built, unless FORENSICS_REQUIRE_OPENSEARCH=1
(and FORENSICS_REQUIRE_OPENSEARCH3=1).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from tests.opensearch_node import opensearch3_node, opensearch_node  # noqa: F401 - fixtures
from tests.pg import PgNotFound, PgServer, pg_required, start_pg_server

# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server for this test session: `.dsn(db)`, `.create_database(name)`."""
    try:
        server = start_pg_server()
    except PgNotFound as e:
        if pg_required():
            pytest.fail(f"FORENSICS_REQUIRE_PG=1 but no PostgreSQL is usable: {e}", pytrace=False)
        pytest.skip(str(e))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def pg_db(pg_server: PgServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, uniquely named empty database; yields its DSN, drops it afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]
    name = f"t_{stem}_{uuid.uuid4().hex[:8]}"
    dsn = pg_server.create_database(name)
    try:
        yield dsn
    finally:
        pg_server.drop_database(name)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    """One line per reason the run skipped tests, with how many: a group that did not
    run (the OpenSearch node not built, ../shared absent) is named once, not per file."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if not reasons:
        return
    terminalreporter.write_sep("-", "skipped, by reason")
    for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{count:4d}  {reason}")


@pytest.fixture
def caps_met(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gains an item each time a DuckDB memory cap is met and doubled
    (Store.raise_memory_limit), for tests of capped work."""
    from forensics.store.handle import Store

    met: list[int] = []
    raise_limit = Store.raise_memory_limit

    def counted(self: Store, *args: object, **kwargs: object) -> bool:
        met.append(1)
        return raise_limit(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "raise_memory_limit", counted)
    return met
