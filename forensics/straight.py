"""ccusage's question answered straight from Claude Code transcripts, without a store:
`cost --by day|session --ccusage-compatible --transcripts` (`api.cost_ccusage_transcripts`
is this). Here, below `api`, so that the command imports neither the analyses nor the
store's machinery, and so that what it does import (polars, pyarrow, DuckDB) and
ccusage's price table are taken while forked workers read the files, not before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ForensicsError
from .settings import workers
from .sources.files.claude_code_layout import found_roots
from .sources.files.claude_code_usage import USAGE_NAMES, Reading, usage_schema

if TYPE_CHECKING:
    import polars as pl

__all__ = ["cost_ccusage_transcripts"]


def cost_ccusage_transcripts(
    paths: Sequence[str | Path] = (),
    *,
    by: str = "day",
    ccusage: str | Path | None = None,
    since: float | None = None,
    until: float | None = None,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """ccusage's question answered straight from Claude Code transcripts, without a store:
    `cost_ccusage`'s totals (by day or session, its rules and prices) from the lines that
    record a usage (sources/files/claude_code_usage.py). `paths` as `ingest_claude_code`
    takes them (none: $CLAUDE_CONFIG_DIR, else ~/.config/claude and ~/.claude); `since`
    and `until` in epoch seconds (UTC), as a Selection holds them. Also what was read:
    roots, files, bytes, lines parsed, and the lines skipped (file:line, why)."""
    if by not in ("day", "session"):
        raise ForensicsError(
            f"ccusage totals by day or by session, not by {by!r}",
            hint="--by day|session with --ccusage-compatible",
        )
    given = [Path(p) for p in paths] or found_roots(
        "give the folder with --transcripts, or set CLAUDE_CONFIG_DIR"
    )
    reading = Reading(given, workers=workers())
    try:
        # while the workers read (forked above, before these start any thread)
        from .columns import COST_CCUSAGE_DAY, COST_CCUSAGE_SESSION
        from .cost import ccusage as rules
        from .store.arrow import columns_table

        table = rules.table_of(Path(ccusage) if ccusage else None)
        # and what the rows' first table costs besides their own (pyarrow's compute
        # module, which its cast imports; polars' first frame): 0.1 s after the reads
        columns_table({name: [] for name in USAGE_NAMES}, usage_schema())
        read = reading.result()
    finally:
        reading.close()
    usage = rules.TranscriptUsage(read.rows)
    try:
        frame = rules.Reconciliation(usage, table, (since, until)).totals(by)
    finally:
        usage.close()
    spec = COST_CCUSAGE_DAY if by == "day" else COST_CCUSAGE_SESSION
    summary = {
        "roots": [str(p) for p in given],
        "files": read.files,
        "bytes": read.bytes_read,
        "lines_parsed": read.lines_parsed,
        "skips": read.skips + read.passed_over,
    }
    return spec.from_query(frame), summary
