"""Render a DataFrame for people (aligned table with totals) or programs (JSON, CSV)."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import polars as pl

from ..sanitize import json_safe, visible
from ..words import counted

MAX_CELL = 60
MONEY_PLACES = 6  # a table rounds USD amounts to this many places; JSON and CSV keep all
# cut nowhere: what a reader must copy whole (a skipped row's place and reason, a
# suggested statement)
WHOLE = frozenset({"locator", "reason", "suggested_index", "definition", "advice", "problem"})


def shorten(text: str, limit: int = MAX_CELL) -> str:
    """`text` cut in the middle to `limit` terminal columns (display_width): both ends
    stay readable (a path's file and its row, an id's head and tail)."""
    if text.isascii():
        if len(text) <= limit:
            return text
        head = (limit - 1) // 2
        return text[:head] + "…" + text[-(limit - 1 - head) :]
    if display_width(text) <= limit:
        return text
    head = _taking(text, (limit - 1) // 2)
    tail = len(text) - _taking(reversed(text), limit - 1 - (limit - 1) // 2)
    while tail < len(text) and not _char_width(text[tail]):  # no mark without its letter
        tail += 1
    return text[:head] + "…" + text[tail:]


def _taking(chars: Iterable[str], columns: int) -> int:
    """How many of `chars`, from the first, fit in `columns` terminal columns."""
    used = taken = 0
    for char in chars:
        used += _char_width(char)
        if used > columns:
            break
        taken += 1
    return taken


def display_width(text: str) -> int:
    """The terminal columns `text` takes, as a table aligns it: an East Asian wide or
    fullwidth character (漢, Ａ, most emoji) two, a combining mark none, any other one.
    (A cell's control and format characters are escapes by then: `visible`.)"""
    if text.isascii():
        return len(text)
    return sum(map(_char_width, text))


@functools.lru_cache(maxsize=8192)
def _char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


@dataclass(frozen=True)
class View:
    """How one query's rows are shown: table columns and totals, provenance of figures."""

    columns: Sequence[str] | None = None
    totals: Sequence[str] = ()
    footnote: str | None = None
    json_columns: Sequence[str] = ()  # text columns holding JSON, parsed for output
    provenance: dict[str, str] = field(default_factory=dict)  # figure -> measured/...


def iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def exact(value: Decimal) -> str:
    """A Decimal as plain text with every digit it has and no trailing zeros."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def plain_value(value: Any, json_columns: set[str], column: str) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):  # a day (datetimes are handled above)
        return value.isoformat()
    if isinstance(value, Decimal):  # exact, as text: a JSON number would be a float
        return exact(value)
    if column in json_columns and isinstance(value, str):
        return json.loads(value)
    return value


def records(df: pl.DataFrame, json_columns: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Rows as plain dicts: datetimes in ISO 8601 UTC, JSON columns parsed."""
    wanted = set(json_columns)
    return [{k: plain_value(v, wanted, k) for k, v in row.items()} for row in df.to_dicts()]


def to_json(
    df: pl.DataFrame, json_columns: Sequence[str] = (), extra: dict[str, Any] | None = None
) -> str:
    rows = records(df, json_columns)
    if extra:
        rows = [{**row, **extra} for row in rows]
    return json_safe(json.dumps(rows, indent=2, ensure_ascii=False))


def to_csv(df: pl.DataFrame, json_columns: Sequence[str] = ()) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(df.columns)
    for row in records(df, json_columns):
        writer.writerow([csv_cell(v) for v in row.values()])
    return buffer.getvalue()


_NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?")


def csv_cell(value: Any) -> Any:
    """A CSV field: text with control and bidi characters shown (sanitize.visible)."""
    if value is None:
        return ""
    if isinstance(value, bool):  # as JSON and every CSV reader spell them, not Python's
        return "true" if value else "false"
    if isinstance(value, list):
        value = ";".join(map(str, value))
    elif isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, str):
        return value
    text = visible(value, keep_tabs=True)
    # a spreadsheet runs a field that starts like a formula (after a tab, which it may
    # strip first; a carriage return is already shown as \x0d): shown as text instead
    if text[:1] in ("=", "+", "@", "\t") or (text[:1] == "-" and not _NUMBER.fullmatch(text)):
        text = "'" + text
    return text


def table_cell(value: Any, *, whole: bool = False, fine: bool = False) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, Decimal):
        return f"{value:,.{MONEY_PLACES}f}"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return (
            value.strftime("%Y-%m-%d %H:%M:%S.%f")[:23]
            if fine
            else value.strftime("%Y-%m-%d %H:%M:%S")
        )
    if isinstance(value, list):
        value = ",".join(map(str, value))
    if isinstance(value, dict):
        value = "; ".join(f"{k}: {table_cell(v)}" for k, v in value.items())
    text = visible(" ".join(str(value).split()))
    return text if whole else shorten(text)


def fine_times(df: pl.DataFrame, columns: Sequence[str]) -> set[str]:
    """Time columns to show to the millisecond: those where two different instants
    would read the same to the second (events closer than a second)."""
    fine = set()
    for c in columns:
        if not isinstance(df.schema[c], pl.Datetime):
            continue
        values = df[c].drop_nulls().unique()
        if values.dt.truncate("1s").n_unique() < values.len():
            fine.add(c)
    return fine


def totals_row(df: pl.DataFrame, columns: Sequence[str], totals: Sequence[str]) -> list[str]:
    """A table's last row: the `totals` columns summed in code, the first cell the count."""
    sums = {  # money stays exact; counts are whole; unknown when no row knows it
        c: None
        if df.height and df[c].null_count() == df.height
        else df[c].sum()
        if isinstance(df.schema[c], pl.Decimal)
        else float(df[c].fill_null(0).sum())
        if df.schema[c].is_float()
        else int(df[c].fill_null(0).sum())
        for c in totals
    }
    total_row = [table_cell(sums[c]) if c in sums else "" for c in columns]
    total_row[0] = f"total ({counted(df.height, 'row')})"
    return total_row


Footnote = str | tuple[str, ...] | None  # a table's note: a line, or lines


def footnote_lines(footnote: Footnote) -> list[str]:
    """A footnote's lines as a table ends with them: each one line whatever it holds (it
    may name what data named: a model in a ratio's note, a price file), so a newline in
    data is shown, not printed."""
    lines = (footnote,) if isinstance(footnote, str) else footnote or ()
    return [visible(line) for line in lines if line]


def table_line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    """One line of a table, in terminal columns (display_width): numbers to the right,
    the rest to the left."""
    padded = (
        (" " * (w - display_width(cell)) + cell) if r else (cell + " " * (w - display_width(cell)))
        for cell, w, r in zip(cells, widths, right, strict=True)
    )
    return "  ".join(padded).rstrip()


def to_table(
    df: pl.DataFrame,
    columns: Sequence[str] | None = None,
    totals: Sequence[str] = (),
    footnote: Footnote = None,
    json_columns: Sequence[str] = (),
) -> str:
    """An aligned text table; `totals` columns are summed in code into a last row."""
    columns = list(columns or df.columns)
    parse = set(json_columns)
    rows = [
        {k: json.loads(v) if k in parse and isinstance(v, str) else v for k, v in row.items()}
        for row in df.select(columns).to_dicts()
    ]
    numeric = {c for c in columns if df.schema[c].is_numeric()}
    fine = fine_times(df, columns)
    body = [[table_cell(row[c], whole=c in WHOLE, fine=c in fine) for c in columns] for row in rows]
    if totals and rows:
        body.append(totals_row(df, columns, totals))
    widths = [max([len(c)] + [display_width(r[i]) for r in body]) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return table_line(cells, widths, [c in numeric for c in columns])

    out = [line(columns), line(["-" * w for w in widths])]
    for i, cells in enumerate(body):
        if totals and rows and i == len(body) - 1:
            out.append(line(["-" * w for w in widths]))
        out.append(line(cells))
    if not rows:
        out.append("(no rows)")
    out += footnote_lines(footnote)
    return "\n".join(out) + "\n"
