"""Facts as Parquet: the folder both engines write (`forensics analyze --output DIR`).

One folder per fact table (FACT_SCHEMAS' columns; Parquet files inside, however many
the engine wrote); one per summary (SUMMARIES: the whole export's `turns` and `growth`,
the columns and order those commands show, tokens from the ratios the facts fit; the
Spark engine computes them in Spark SQL, queries/spark/); and `manifest.json`: the
format, the rules version that built the facts, the engine and its master, the export
it read, the rows per table, the ratio each model was sized with, and how many
sessions could not be rebuilt (their fact_sessions rows hold the error; `failures`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from ..analysis.facts import FACT_SCHEMAS, RULES_VERSION
from ..analysis.ratio import Ratio
from ..columns import GROWTH, TURNS
from ..folders import written_whole
from ..provenance import Spec
from ..sanitize import require_utf8_name

FORMAT = "agent-forensics-facts"
FORMAT_VERSION = 1
# the frames of the whole export an engine writes beside the facts: folder -> columns
SUMMARIES: dict[str, Spec] = {"turns": TURNS, "growth": GROWTH}


@contextmanager
def output_folder(folder: Path) -> Iterator[None]:
    """The block that writes the facts into `folder`, new (it is made) or empty: facts
    never mix with other files. When it fails (a bad export, a full disk, a stop), what
    it wrote is removed again (and the folder, when this run made it), so a failed
    analysis leaves nothing that looks like facts behind."""
    require_utf8_name(folder, "write the facts to {}", "DuckDB or Spark writes a file",
                      "give a folder whose path is named in UTF-8")
    with written_whole(folder, "the facts are never written over other files",
                       {*FACT_SCHEMAS, *SUMMARIES}):  # fmt: skip
        yield


def write_manifest(
    folder: Path,
    engine: str,
    master: str | None,
    source: dict[str, Any],
    rows: dict[str, int],
    seconds: float,
    ratios: dict[str, Ratio],
    sessions_failed: int,
) -> None:
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "rules_version": RULES_VERSION,
        "engine": engine,
        "master": master,
        "built_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "seconds": round(seconds, 3),
        "source": {k: source.get(k) for k in ("format", "version", "store_schema", "selection")},
        "tables": {name: {"rows": n} for name, n in rows.items()},
        # sessions whose rebuild raised: a fact_sessions row each, with its error
        "sessions_failed": sessions_failed,
        # the chars-per-token ratio each model's summaries were sized with
        "ratios": {
            model: {"chars_per_token": r.chars_per_token, "source": r.source, "calls": r.calls}
            for model, r in ratios.items()
        },
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def failures(folder: Path) -> list[tuple[tuple[str, str, str], str]]:
    """The sessions of the facts at `folder` whose rebuild raised, with the error, in
    key order (what `facts_failures` gives for a store)."""
    columns = [*FACT_SCHEMAS["fact_sessions"].names[:3], "error"]
    found = ds.dataset(folder / "fact_sessions", format="parquet").to_table(
        columns=columns, filter=ds.field("error").is_valid()
    )
    return sorted(((a, u, s), e) for a, u, s, e in zip(*found.to_pydict().values(), strict=True))
