"""Column declarations: each output column's name, type, provenance and meaning, once.

A frame builder hands `Spec.frame` its rows; the CLI takes a table's columns, totals
and footnote, the JSON `provenance` object and the CSV/JSON text columns from the same
`Spec`; the README's field table is generated from the columns' `help`. Provenance
words (docs/architecture.md): measured, estimated, inferred, traced, priced, logged; a
column whose figure can be either names the column that says which (`*_source`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

MEASURED, ESTIMATED, INFERRED = "measured", "estimated", "inferred"
TRACED = "traced"  # read from a trace of the request itself
PRICED = "priced"  # measured usage times a dated list or override price
LOGGED = "logged"  # as an application's logs or traces gave it (OpenSearch, their files)
# Rows give epoch seconds; the frame holds a UTC datetime (microseconds).
EPOCH = pl.Datetime("us", "UTC")


@dataclass(frozen=True)
class Column:
    name: str
    dtype: Any  # a polars data type
    provenance: str | None = None  # shown in every JSON row's `provenance` object
    help: str | None = None  # the README's field table
    epoch: bool = False  # rows hold epoch seconds, turned into `dtype` (a datetime)


# the epoch seconds of 0001-01-01 and 9999-12-31T23:59:59: the years a datetime can hold
_FIRST_SECOND, _LAST_SECOND = -62135596800, 253402300799


def _datetime(seconds: pl.Expr) -> pl.Expr:
    """Epoch seconds as a UTC datetime; null where they are no time a datetime can hold
    (NaN, infinite, past year 9999: a stored range that is no time is unknown, never an
    error of the command that shows it)."""
    held = pl.when(seconds.is_between(_FIRST_SECOND, _LAST_SECOND)).then(seconds * 1_000_000)
    return held.cast(pl.Int64).cast(EPOCH).alias(seconds.meta.output_name())


def epoch(name: str, help: str | None = None) -> Column:
    """A time column: epoch seconds in the rows, a UTC datetime in the frame."""
    return Column(name, EPOCH, help=help, epoch=True)


@dataclass(frozen=True)
class Spec:
    """One frame's columns in order, and how a table shows it."""

    name: str
    columns: tuple[Column, ...]
    table: tuple[str, ...] | None = None  # the columns a table shows (default: all)
    totals: tuple[str, ...] = ()  # summed in code into the table's last row
    footnote: str | None = None
    json_columns: tuple[str, ...] = ()  # text columns holding JSON, parsed for output
    unnest: tuple[str, ...] = ()  # struct columns a table shows as their fields
    command: str = ""  # the command that prints it, for the README (default: the name)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def schema(self) -> dict[str, Any]:
        return {c.name: c.dtype for c in self.columns}

    @property
    def provenance(self) -> dict[str, str]:
        return {c.name: c.provenance for c in self.columns if c.provenance}

    def frame(self, rows: Iterable[Mapping[str, object]]) -> pl.DataFrame:
        """The rows as a frame of exactly these columns; a row with other keys is a bug."""
        rows = list(rows)
        names = self.names
        for row in rows[:1]:
            if list(row) != names:
                missing = [n for n in names if n not in row]
                extra = [k for k in row if k not in names]
                raise ValueError(
                    f"{self.name}: row keys differ from the spec: missing {missing}, "
                    f"unexpected {extra} (or not in the declared order)"
                )
        raw = {c.name: pl.Float64 if c.epoch else c.dtype for c in self.columns}
        frame = pl.DataFrame(rows, schema=raw) if rows else pl.DataFrame(schema=raw)
        times = [c.name for c in self.columns if c.epoch]
        if not times:
            return frame
        return frame.with_columns(
            (pl.col(c) * 1_000_000).cast(pl.Int64).cast(EPOCH).alias(c) for c in times
        )

    def from_query(self, frame: pl.DataFrame) -> pl.DataFrame:
        """A frame from SQL that computed these columns (by name, in any order): the
        declared order and types, epoch seconds turned into UTC datetimes."""
        missing = [n for n in self.names if n not in frame.columns]
        if missing:
            raise ValueError(f"{self.name}: query lacks columns {missing}")
        times = {c.name for c in self.columns if c.epoch}
        return frame.select(
            _datetime(pl.col(c.name)) if c.name in times else pl.col(c.name).cast(c.dtype)
            for c in self.columns
        )

    def check(self, frame: pl.DataFrame) -> pl.DataFrame:
        """A frame from SQL, as declared: the same columns in the same order and types."""
        got = dict(frame.schema)
        if got != self.schema:
            raise ValueError(f"{self.name}: query returned {got}, declared {self.schema}")
        return frame
