"""Golden output files: every query command, in every --format, on the bundled sample.

`tests/test_golden.py` compares each command's stdout with its file in
`tests/golden/`, byte for byte, and the incident report's template context with
`tests/golden/incident-context.json`. After a deliberate change in output,
regenerate them (and the README's field table, from forensics/columns.py) and
review the diff before committing:

    .venv/bin/python -m tests.golden

The store is built from `sample_data/adk_v1.db`, the sample's OpenSearch documents
(`sample_data/opensearch/`), its second app (`sample_data/tasks.db`) and that app's
outcomes (`sample_data/outcomes.csv`), read by their paths relative to the repository root;
the ledger's two clock readings (`started_at`, `finished_at`) are set to a fixed
time, the only figures that differ from run to run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
FORMATS = ("table", "json", "csv")
FIXED_CLOCK = "2026-01-01 00:00:00"
# The specialist's first call in the incident: its window holds relayed parts.
WINDOW_CALL = "acfe7286-2ea4-408e-902c-cd0865e20b08"
SAMPLE_PRICES = "sample_data/prices.toml"  # read relative to the repository root
SAMPLE_LOGGED = [
    f"sample_data/opensearch/{name}.ndjson"
    for name in ("litellm", "logs-otel-v1", "otel-v1-apm-span")
]

COMMANDS: dict[str, list[str]] = {
    "sessions": ["sessions"],
    "sessions-app": ["sessions", "--app", "store", "--user", "u-1001"],
    "events-incident": ["events", "incident"],
    "ingests": ["ingests"],
    "turns": ["turns"],
    "turns-incident": ["turns", "incident"],
    "calls-incident": ["calls", "incident"],
    "calls-compaction-turn-2": ["calls", "compaction", "--turn", "2"],
    "window-incident": ["window", "incident", WINDOW_CALL],
    "growth": ["growth", "--top", "5"],
    "growth-session": ["growth", "--session", "parallel"],
    "compaction": ["compaction"],
    "compaction-by-session": ["compaction", "--by-session", "--threshold-tokens", "150000"],
    "fidelity": ["fidelity"],  # the sample has no trace: the command says so
    # the sample's scripted model is priced through the alias in sample_data/prices.toml
    "cost": ["cost", "--prices", SAMPLE_PRICES],
    "cost-incident": ["cost", "incident", "--prices", SAMPLE_PRICES],
    "cost-by-day": ["cost", "--by", "day", "--prices", SAMPLE_PRICES],
    "cost-by-tool": ["cost", "--by", "tool", "--prices", SAMPLE_PRICES],
    "cost-share": ["cost", "--share", "--prices", SAMPLE_PRICES],
    "cache": ["cache", "--prices", SAMPLE_PRICES],
    "cache-incident": ["cache", "incident", "--prices", SAMPLE_PRICES],
    "prices": ["prices", "--on", "2026-10-22", "--prices", SAMPLE_PRICES],
    # the sample's spans, app logs and LiteLLM payloads are loaded too (build_store)
    "failures": ["failures"],
    "failures-by-agent": ["failures", "--by", "agent"],
    "failures-by-cluster": ["failures", "--by", "cluster"],
    # the sample's second app: 12 tasks under two arms, with their outcomes (build_store)
    "tasks": ["tasks", "--prices", SAMPLE_PRICES],
    "tasks-by-arm": ["tasks", "--by", "arm", "--prices", SAMPLE_PRICES],
    "compare": ["compare", "--baseline", "conservative", "--arm", "aggressive",
                "--prices", SAMPLE_PRICES],
    "breakeven": ["breakeven", "--prices", SAMPLE_PRICES],
    # the founding document's guards replayed on the whole sample (the incident's cases)
    "whatif-token-cap": ["whatif", "--token-cap", "16000", "--prices", SAMPLE_PRICES],
    "whatif-row-cap-results": ["whatif", "--row-cap", "200", "--by", "result",
                               "--session", "incident", "--prices", SAMPLE_PRICES],
    "whatif-calls-incident": ["whatif", "--token-cap", "16000", "--page-size", "200",
                              "--by", "call", "--session", "incident", "--prices",
                              SAMPLE_PRICES],
    "whatif-by-session": ["whatif", "--token-cap", "16000", "--tool", "get_order_history",
                          "--by", "session", "--prices", SAMPLE_PRICES],
    "guards": ["guards", "--budget", "16000"],
    "explain-mapping": [
        "ingest", "opensearch-file", *SAMPLE_LOGGED[1:2], "--explain-mapping", "--sample", "4"
    ],
}


@contextmanager
def in_root() -> Iterator[None]:
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(here)


def build_store(db: Path) -> Path:
    """The sample loaded into `db`, its ledger clock fixed."""
    import duckdb
    from typer.testing import CliRunner

    from forensics.cli import app

    with in_root():
        result = CliRunner().invoke(
            app, ["ingest", "adk-sqlite", "sample_data/adk_v1.db", "--db", str(db)]
        )
    assert result.exit_code == 0, result.output
    for extra in (
        ["ingest", "opensearch-file", *SAMPLE_LOGGED],
        ["ingest", "adk-sqlite", "sample_data/tasks.db"],
        ["outcomes", "load", "sample_data/outcomes.csv"],
    ):
        with in_root():
            result = CliRunner().invoke(app, [*extra, "--db", str(db)])
        assert result.exit_code == 0, result.output
    con = duckdb.connect(str(db))
    try:
        con.execute(
            "UPDATE ingests SET started_at = ?::TIMESTAMP, finished_at = ?::TIMESTAMP",
            [FIXED_CLOCK, FIXED_CLOCK],
        )
    finally:
        con.close()
    return db


def output(db: Path, name: str, fmt: str) -> str:
    from typer.testing import CliRunner

    from forensics.cli import app

    with in_root():
        result = CliRunner().invoke(app, [*COMMANDS[name], "--db", str(db), "--format", fmt])
    assert result.exit_code == 0, (name, fmt, result.output)
    return result.stdout


def golden_path(name: str, fmt: str) -> Path:
    return GOLDEN / f"{name}.{ {'table': 'txt'}.get(fmt, fmt) }"


def incident_context(db: Path) -> str:
    """The incident report's template context as JSON (charts not drawn: svg stays empty)."""
    from forensics.reports.incident import build_incident

    context = build_incident(db, "incident", prices=ROOT / SAMPLE_PRICES)
    assert context.method is not None
    context.method.generated_at = FIXED_CLOCK
    return json.dumps(dataclasses.asdict(context), indent=1, ensure_ascii=False) + "\n"


def regenerate(db: Path) -> list[Path]:
    written = []
    for name in COMMANDS:
        for fmt in FORMATS:
            path = golden_path(name, fmt)
            path.write_text(output(db, name, fmt), encoding="utf-8")
            written.append(path)
    path = GOLDEN / "incident-context.json"
    path.write_text(incident_context(db), encoding="utf-8")
    written.append(path)
    return written


README = ROOT / "README.md"
FIELDS_START, FIELDS_END = "<!-- fields:start -->\n", "<!-- fields:end -->"


def readme_with_fields(text: str) -> str:
    """The README with its field table generated from forensics/columns.py."""
    from forensics.columns import field_table

    head, rest = text.split(FIELDS_START, 1)
    _, tail = rest.split(FIELDS_END, 1)
    return head + FIELDS_START + field_table() + FIELDS_END + tail


def main() -> None:
    import tempfile

    README.write_text(readme_with_fields(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(README.relative_to(ROOT))
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = build_store(Path(tmp) / "golden.duckdb")
        for path in regenerate(db):
            print(path.relative_to(ROOT))
    sys.exit(0)


if __name__ == "__main__":
    main()
