"""JSON and CSV of whole frames, formatted a column at a time by polars and written in
chunks: the bytes of `output.to_json` and `output.to_csv`, without a dict per row.

`output.to_json` and `output.to_csv` stay the definition (rows as dicts, `json.dumps`
with indent 2, the csv module); tests/test_writers.py holds these writers equal to them
on generated frames of every column type, hostile text included. Measured on 200,000
ADK events (98,768 calls): `calls --all -f csv` spent 10 of its 11.9 s in the
definition's Python per row, and `-f json` held 1.6 GB of dicts and text.

Each column type has a formatter: polars expressions that write its values as the
definition would. A formatter first asks the frame, in one pass over all its columns,
which of its steps some value needs (text with a character to escape, show or quote;
a float repr lays out otherwise than polars), so that ids and names, most of a frame,
are written as they are. A type without a formatter (a JSON text column, a list of
times) is written by the definition's own code, value by value.

The frames may come in runs of rows (a whole store's, read a part at a time): they are
written as one JSON array or one CSV table.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import polars as pl
import pyarrow as pa

from ..sanitize import json_escapes, json_safe, visible_escapes
from .output import (
    MAX_CELL,
    WHOLE,
    Footnote,
    csv_cell,
    display_width,
    fine_times,
    footnote_lines,
    plain_value,
    shorten,
    table_cell,
    table_line,
    to_csv,
    to_json,
    to_table,
    totals_row,
)

# rows formatted and written at a time: 8 MB of calls as JSON (at 1,000,000 events
# 20,000 rows a chunk peaked at 656 MB, 5,000 at 503 MB, in the same time)
CHUNK_ROWS = 5_000
ROW_INDENT = "    "  # a row's values are two levels deep in the JSON array of objects

Write = Callable[[bytes | memoryview], None]  # pieces of UTF-8


class Formatted(NamedTuple):
    """A column's formatter on one frame: what to ask of the frame (each probe a boolean,
    true when some value needs a step), and its text's expression from the answers."""

    probes: list[pl.Expr]
    text: Callable[[list[bool]], pl.Expr]


Format = Callable[[pl.Expr], Formatted]  # the column's values -> its formatter


def _always(text: pl.Expr) -> Formatted:
    return Formatted([], lambda found: text)


# text in which no character needs a second look: printable ASCII but for what each
# format escapes or quotes, and not starting like a formula (output.csv_cell)
_PLAIN_JSON = r'[^ !#-\[\]-~]'
_PLAIN_CSV = r'[^ !#-+\--~]|^[=+@-]'
_NUMBER = r"^-?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?$"
_CSV_QUOTED = r'[,"\n]'  # what makes the csv module quote a field (lineterminator "\n")


class _Escapes:
    """Characters, and what one rule writes for each."""

    def __init__(self, escapes: dict[str, str]) -> None:
        self.chars = list(escapes)
        self.escapes = list(escapes.values())

    def apply(self, text: pl.Expr) -> pl.Expr:
        return text.str.replace_many(self.chars, self.escapes)


@functools.cache
def _json_escapes() -> _Escapes:
    return _Escapes(json_escapes())


@functools.cache
def _dumps_escapes() -> _Escapes:
    """What json.dumps(ensure_ascii=False) alone escapes: quote, backslash, C0."""
    escapes = {c: json.dumps(c, ensure_ascii=False)[1:-1] for c in map(chr, range(0x80))}
    return _Escapes({c: e for c, e in escapes.items() if e != c})


@functools.cache
def _visible_escapes() -> _Escapes:
    return _Escapes(visible_escapes(keep_tabs=True))


# --- floats ---------------------------------------------------------------------

# Python writes a float as the shortest text that reads back the same (repr); polars'
# cast finds the same digits, and lays them out differently in two places only: from
# 1e-5 to 1e-4 it writes 0.0000d... where repr writes d...e-05, and it writes a
# one-digit exponent (e-7) where repr writes two (e-07).
_FLOAT_PROBES = (
    0.0, -0.0, 1.0, 3.6, 0.1, 2 / 3, 1e-4, 1.5e-5, 1e-5, 3.0000000000000004e-05, 9.99e-6,
    1e-7, -2.5e-10, 5e-324, 1e15, 1e16, 1.5e16, 9999999999999998.0, 1.7976931348623157e308,
    123456789012345.6, 0.000123, -6.668789766928146e-05,
)


def _float_layout(text: pl.Expr) -> pl.Expr:
    """polars' text of a float64, laid out as repr lays it out (finite values)."""
    return (
        text.str.replace(r"^(-?)0\.0000([1-9])$", "${1}${2}e-05")
        .str.replace(r"^(-?)0\.0000([1-9])(\d+)$", "${1}${2}.${3}e-05")
        .str.replace(r"e([-+]?)(\d)$", "e${1}0${2}")
    )


@functools.cache
def _polars_floats_agree() -> bool:
    """Whether this polars writes floats as the rule above expects (polars is not pinned:
    should a release write them otherwise, floats are written by repr, value by value)."""
    probes = pl.DataFrame({"x": _FLOAT_PROBES}, schema={"x": pl.Float64})
    got = probes.select(_float_layout(pl.col("x").cast(pl.String))).to_series().to_list()
    return got == [repr(v) for v in _FLOAT_PROBES]


def _float(value: pl.Expr, *, json_style: bool, null: str | None) -> Formatted:
    """A float as repr writes it (json.dumps: NaN, Infinity; str: nan, inf); a null as
    `null` (None: kept)."""
    value = value.cast(pl.Float64)  # a float32 is shown as the float64 it widens to
    nan, inf = ("NaN", "Infinity") if json_style else ("nan", "inf")
    size = value.abs()

    def text(found: list[bool]) -> pl.Expr:
        laid_out, special = found
        if not _polars_floats_agree():
            shown = value.map_elements(repr, return_dtype=pl.String)
        else:
            shown = _float_layout(value.cast(pl.String)) if laid_out else value.cast(pl.String)
        if special:
            shown = (
                pl.when(value.is_nan())
                .then(pl.lit(nan))
                .when(value == float("inf"))
                .then(pl.lit(inf))
                .when(value == float("-inf"))
                .then(pl.lit("-" + inf))
                .otherwise(shown)
            )
        return shown if null is None else shown.fill_null(null)

    return Formatted(
        [
            ((size < 1e-4) & (size > 0) | (size >= 1e16)).any(),
            (value.is_nan() | value.is_infinite()).any(),
        ],
        text,
    )


# --- scalars shared by both formats ---------------------------------------------


def _iso(value: pl.Expr, dtype: pl.Datetime) -> pl.Expr:
    """output.iso: ISO 8601 in UTC (a naive time is UTC), microseconds only when any."""
    if dtype.time_zone is not None:
        value = value.dt.convert_time_zone("UTC")
    return value.dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").str.replace(r"\.000000Z$", "Z")


def _exact(value: pl.Expr, dtype: pl.Decimal) -> pl.Expr:
    """output.exact: every digit a Decimal has, no trailing zeros."""
    text = value.cast(pl.String)
    return text.str.replace(r"\.?0*$", "") if (dtype.scale or 0) > 0 else text


def _bool(value: pl.Expr, true: str, false: str) -> pl.Expr:
    return pl.when(value).then(pl.lit(true)).when(~value).then(pl.lit(false))


def _item(
    dtype: Any, escapes: _Escapes, *, json_style: bool
) -> Callable[[pl.Expr], pl.Expr] | None:
    """A list item's or struct field's text as json.dumps (json_style) or str writes it,
    text escaped by `escapes`; None for other types (the definition hands items to
    json.dumps or str as they are: times, Decimals and nesting are left to it)."""
    if dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum):
        if not json_style:
            return lambda v: v.cast(pl.String)
        return lambda v: _quoted(escapes.apply(v.cast(pl.String)), "null")
    null = "null" if json_style else "None"
    if dtype.is_integer():
        return lambda v: v.cast(pl.String).fill_null(null)
    if dtype.is_float():  # every step, without asking
        return lambda v: _float(v, json_style=json_style, null=null).text([True, True])
    if dtype == pl.Boolean:
        true, false = ("true", "false") if json_style else ("True", "False")
        return lambda v: _bool(v, true, false).fill_null(null)
    if dtype == pl.Null:
        return lambda v: pl.lit(null)
    return None


def _is_text(dtype: Any) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)


def _is_time(dtype: Any) -> bool:  # the units whose values hold whole microseconds
    return isinstance(dtype, pl.Datetime) and dtype.time_unit in ("us", "ms")


def _some(text: pl.Expr, pattern: str) -> pl.Expr:
    """Whether some value matches: the distinct values are asked, since most text
    columns repeat a few (an app, a model, a source; at 1,000,000 events the probes of
    calls took 0.30 s over every value, 0.15 s over the distinct ones)."""
    return text.unique().str.contains(pattern).any()


def _quoted(text: pl.Expr, null: str) -> pl.Expr:
    return pl.concat_str(pl.lit('"'), text, pl.lit('"')).fill_null(null)


# --- JSON ----------------------------------------------------------------------


def _json_text(value: pl.Expr) -> Formatted:
    text = value.cast(pl.String)
    return Formatted(
        [_some(text, _PLAIN_JSON)],
        lambda found: _quoted(_json_escapes().apply(text) if found[0] else text, "null"),
    )


def _json_format(dtype: Any) -> Format | None:
    """A formatter writing values as json.dumps(indent=2) writes a row's values, then
    json_safe; None for a type written value by value."""
    if _is_text(dtype):
        return _json_text
    if dtype.is_float():
        return functools.partial(_float, json_style=True, null="null")
    if dtype == pl.Null:
        return lambda v: _always(v.cast(pl.String).fill_null("null"))
    if dtype.is_integer() or dtype == pl.Boolean:
        item = _item(dtype, _json_escapes(), json_style=True)
        assert item is not None
        return lambda v: _always(item(v))
    if _is_time(dtype):
        return lambda v: _always(_quoted(_iso(v, dtype), "null"))
    if dtype == pl.Date:
        return lambda v: _always(_quoted(v.dt.strftime("%Y-%m-%d"), "null"))
    if isinstance(dtype, pl.Decimal):
        return lambda v: _always(_quoted(_exact(v, dtype), "null"))
    if isinstance(dtype, pl.List):
        return _json_list(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return _json_struct(dtype)
    return None


def _json_list(inner: Any) -> Format | None:
    if inner == pl.Null or (item := _item(inner, _json_escapes(), json_style=True)) is None:
        return None
    inside = "\n" + ROW_INDENT + "  "

    def text(value: pl.Expr) -> pl.Expr:
        items = value.list.eval(item(pl.element())).list.join("," + inside)
        return (
            pl.when(value.is_null())
            .then(pl.lit("null"))
            .when(value.list.len() == 0)
            .then(pl.lit("[]"))
            .otherwise(pl.concat_str(pl.lit("[" + inside), items, pl.lit("\n" + ROW_INDENT + "]")))
        )

    return lambda v: _always(text(v))


def _json_struct(dtype: pl.Struct) -> Format | None:
    inside = "\n" + ROW_INDENT + "  "
    pieces: list[Any] = []
    for i, field in enumerate(dtype.fields):
        if (item := _item(field.dtype, _json_escapes(), json_style=True)) is None:
            return None
        key = json_safe(json.dumps(field.name, ensure_ascii=False))
        pieces.append((("{" if i == 0 else ",") + inside + key + ": ", field.name, item))
    if not pieces:
        return None

    def text(value: pl.Expr) -> pl.Expr:
        parts: list[pl.Expr] = []
        for head, name, item in pieces:
            parts += [pl.lit(head), item(value.struct.field(name))]
        parts.append(pl.lit("\n" + ROW_INDENT + "}"))
        return pl.when(value.is_null()).then(pl.lit("null")).otherwise(pl.concat_str(parts))

    return lambda v: _always(text(v))


def _json_value_by_value(series: pl.Series, parse: bool) -> pl.Series:
    """The definition itself, one value at a time (for types without a formatter)."""
    wanted = {series.name} if parse else set()

    def one(value: Any) -> str:
        plain = plain_value(value, wanted, series.name)
        text = json.dumps(plain, indent=2, ensure_ascii=False).replace("\n", "\n" + ROW_INDENT)
        return json_safe(text)

    return pl.Series(series.name, [one(v) for v in series.to_list()], dtype=pl.String)


def write_json(
    frames: pl.DataFrame | Iterable[pl.DataFrame],
    write: Write,
    json_columns: Sequence[str] = (),
    extra: dict[str, Any] | None = None,
) -> None:
    """`output.to_json` of the frames' rows as one frame (their columns the same), and a
    newline, handed to `write` in pieces of UTF-8."""
    parse = set(json_columns)
    started = False
    for frame in [frames] if isinstance(frames, pl.DataFrame) else frames:
        if frame.height == 0:
            continue
        keys = {**dict.fromkeys(frame.columns), **dict.fromkeys(extra or {})}
        constants = {  # {**row, **extra}: a key of both keeps its place
            key: json_safe(
                json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + ROW_INDENT)
            )
            for key, value in (extra or {}).items()
        }
        if all(key in constants for key in keys):  # no column left to format
            text = to_json(frame, json_columns, extra)[2:-2]
            write((("[\n" if not started else ",\n") + text).encode())
            started = True
            continue
        formats, by_value = _formats(frame, parse, _json_format, _json_value_by_value)
        template: list[str | pl.Expr] = []
        pending = "  {"
        for i, key in enumerate(keys):
            pending += ("" if i == 0 else ",") + "\n" + ROW_INDENT
            pending += json_safe(json.dumps(key, ensure_ascii=False)) + ": "
            if key in constants:
                pending += constants[key]
            else:
                template += [pending, formats[key]]
                pending = ""
        template.append(pending + "\n  }")
        _write_rows(frame, by_value, template, ",\n", write, ",\n" if started else "[\n")
        started = True
    write(b"\n]\n" if started else b"[]\n")


# --- CSV -----------------------------------------------------------------------


def _csv_text(text: pl.Expr) -> Formatted:
    """output.csv_cell's rule for text: control and bidi characters shown, a formula
    shown as text; then quoted as the csv module quotes; null: empty."""

    def shown(found: list[bool]) -> pl.Expr:
        if not found[0]:
            return text.fill_null("")
        out = _visible_escapes().apply(text)
        formula = out.str.contains(r"^[=+@\t]") | (
            out.str.starts_with("-") & ~out.str.contains(_NUMBER)
        )
        out = pl.when(formula).then(pl.lit("'") + out).otherwise(out)
        quoted = _quoted(out.str.replace_all('"', '""', literal=True), "")
        return pl.when(out.str.contains(_CSV_QUOTED)).then(quoted).otherwise(out).fill_null("")

    return Formatted([_some(text, _PLAIN_CSV)], shown)


def _csv_format(dtype: Any) -> Format | None:
    """A formatter writing values as the definition writes its fields; None for a type
    written value by value."""
    if _is_text(dtype):
        return lambda v: _csv_text(v.cast(pl.String))
    if dtype.is_float():  # the csv module writes numbers itself: never quoted
        return functools.partial(_float, json_style=False, null="")
    if dtype.is_integer():
        return lambda v: _always(v.cast(pl.String).fill_null(""))
    if dtype == pl.Boolean:
        return lambda v: _always(_bool(v, "true", "false").fill_null(""))
    if dtype == pl.Null:
        return lambda v: _always(v.cast(pl.String).fill_null(""))
    if _is_time(dtype):  # digits, '-', ':', 'T', '.', 'Z': nothing to show or quote
        return lambda v: _always(_iso(v, dtype).fill_null(""))
    if dtype == pl.Date:
        return lambda v: _always(v.dt.strftime("%Y-%m-%d").fill_null(""))
    if isinstance(dtype, pl.Decimal):  # digits, a point, a sign: no formula, no quotes
        return lambda v: _always(_exact(v, dtype).fill_null(""))
    if isinstance(dtype, pl.List):
        return _csv_list(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return _csv_struct(dtype)
    return None


def _csv_list(inner: Any) -> Format | None:
    """";".join(map(str, items)), then as text (a null list: empty)."""
    if inner == pl.Null or (item := _item(inner, _dumps_escapes(), json_style=False)) is None:
        return None
    return lambda v: _csv_text(v.list.eval(item(pl.element()).fill_null("None")).list.join(";"))


def _csv_struct(dtype: pl.Struct) -> Format | None:
    """json.dumps(the row's dict, ensure_ascii=False), then as text (a null: empty)."""
    pieces: list[Any] = []
    for i, field in enumerate(dtype.fields):  # no json_safe: the text is then shown
        if (item := _item(field.dtype, _dumps_escapes(), json_style=True)) is None:
            return None
        head = ("{" if i == 0 else ", ") + json.dumps(field.name, ensure_ascii=False) + ": "
        pieces.append((head, field.name, item))
    if not pieces:
        return None
    # numbers and flags only, under plain names: the text is quoted (its keys are) and
    # nothing in it is shown otherwise, so the quoting is written around it
    plain = all(
        not _is_text(f.dtype) and re.fullmatch(r"[ !#-+\--~]*", f.name) for f in dtype.fields
    )

    def format_struct(value: pl.Expr) -> Formatted:
        parts: list[pl.Expr] = [pl.lit('"')] if plain else []
        for head, name, item in pieces:
            parts += [pl.lit(head.replace('"', '""') if plain else head),
                      item(value.struct.field(name))]  # fmt: skip
        parts.append(pl.lit('}"' if plain else "}"))
        text = pl.when(value.is_null()).then(pl.lit(None, pl.String)).otherwise(
            pl.concat_str(parts)
        )
        return _always(text.fill_null("")) if plain else _csv_text(text)

    return format_struct


def _csv_field(cell: Any) -> str:
    """One field as csv.writer(lineterminator="\\n") writes it."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cell, ""])
    return buffer.getvalue()[:-2]  # less the second, empty field and the line's end


def _csv_value_by_value(series: pl.Series, parse: bool) -> pl.Series:
    wanted = {series.name} if parse else set()
    return pl.Series(
        series.name,
        [_csv_field(csv_cell(plain_value(v, wanted, series.name))) for v in series.to_list()],
        dtype=pl.String,
    )


def write_csv(
    frames: pl.DataFrame | Iterable[pl.DataFrame],
    write: Write,
    json_columns: Sequence[str] = (),
) -> None:
    """`output.to_csv` of the frames' rows as one frame (their columns the same; the
    header from the first), handed to `write` in pieces of UTF-8."""
    parse = set(json_columns)
    header = False
    for frame in [frames] if isinstance(frames, pl.DataFrame) else frames:
        if frame.width < 2:  # one field alone is quoted when empty: the definition does it
            text = to_csv(frame, json_columns)
            write((text[text.index("\n") + 1 :] if header else text).encode())
            header = True
            continue
        if not header:
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerow(frame.columns)
            write(buffer.getvalue().encode())
            header = True
        if frame.height == 0:
            continue
        formats, by_value = _formats(frame, parse, _csv_format, _csv_value_by_value)
        template: list[str | pl.Expr] = []
        for i, name in enumerate(frame.columns):
            template += [",", formats[name]] if i else [formats[name]]
        template.append("\n")
        _write_rows(frame, by_value, template, "", write, "")


# --- writing -------------------------------------------------------------------


def _formats(
    frame: pl.DataFrame,
    parse: set[str],
    format_of: Callable[[Any], Format | None],
    by_value_of: Callable[[pl.Series, bool], pl.Series],
) -> tuple[dict[str, pl.Expr], dict[str, pl.Series]]:
    """Each column's text as an expression over the frame (the frame asked, in one pass,
    what its formatters need to know), and the columns written value by value."""
    formatted: dict[str, Formatted] = {}
    by_value: dict[str, pl.Series] = {}
    for name, dtype in frame.schema.items():
        fmt = None if name in parse and dtype == pl.String else format_of(dtype)
        if fmt is None:
            by_value[name] = by_value_of(frame[name], name in parse)
        else:
            formatted[name] = fmt(pl.col(name))
    probes = [p for f in formatted.values() for p in f.probes]
    answers = iter(frame.select(p.alias(f"p{i}") for i, p in enumerate(probes)).row(0)
                   if probes else ())  # fmt: skip
    texts = {
        name: f.text([bool(next(answers)) for _ in f.probes]) for name, f in formatted.items()
    }
    return {n: texts.get(n, pl.col(n)) for n in frame.columns}, by_value


def _write_rows(
    frame: pl.DataFrame,
    by_value: dict[str, pl.Series],
    template: list[str | pl.Expr],
    between: str,
    write: Write,
    before: str,
) -> None:
    """`before`, then each row as `template` says (text and the columns' expressions)
    with `between` them, CHUNK_ROWS rows at a time (one polars expression a chunk:
    its columns are formatted on every core)."""
    if by_value:
        frame = frame.with_columns(list(by_value.values()))
    pieces = [pl.lit(p) if isinstance(p, str) else p for p in template]
    row = pl.concat_str([*pieces, pl.lit(between)])  # each row and `between`
    trail = len(between.encode())
    write(before.encode())
    for offset in range(0, frame.height, CHUNK_ROWS):
        rows = _utf8(frame.slice(offset, CHUNK_ROWS).select(row).to_series())
        last = offset + CHUNK_ROWS >= frame.height
        write(rows[: len(rows) - trail] if last else rows)  # nothing after the last row


def _utf8(text: pl.Series) -> memoryview:
    """The UTF-8 of a text column's values one after the other: its Arrow data, where
    they lie end to end, not joined into one value and copied into Python (at 1,000,000
    events, turns as JSON were formatted and written in 0.47 s so, 0.58-0.67 s joined)."""
    array = text.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type != pa.large_string():
        array = array.cast(pa.large_string())
    _, offsets, data = array.buffers()
    ends = memoryview(offsets).cast("q")
    return memoryview(data)[ends[array.offset] : ends[array.offset + len(array)]]


# --- tables --------------------------------------------------------------------

# what str.split() splits on (str.isspace), which a table cell collapses to one space;
# tests/test_writers.py checks the list against Unicode as this Python sees it
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_SPACES = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in WHITESPACE) + "]+"
_PLAIN_CELL = r"[^ -~]|  |^ | $"  # text a cell shows as it is (but for its length)
# text whose terminal columns may not be its characters: a superset of the characters
# output.display_width counts as other than one column (combining marks from U+0300 on,
# wide ones from U+1100 on; tests/test_writers.py holds the rest to one column), but for
# the "…" a cut cell holds
_NOT_ONE_COLUMN = r"[\x{300}-\x{2025}\x{2027}-\x{10ffff}]"


@functools.cache
def _cell_escapes() -> _Escapes:
    return _Escapes(visible_escapes())


def _table_text(text: pl.Expr, whole: bool) -> Formatted:
    """output.table_cell's rule for text: whitespace collapsed, control and bidi
    characters shown, cut in the middle to MAX_CELL terminal columns unless `whole`."""

    def shown(found: list[bool]) -> pl.Expr:
        out = text
        if found[0]:
            out = _cell_escapes().apply(out.str.replace_all(_SPACES, " ").str.strip_chars(" "))
        if not whole and found[1]:
            out = out.map_batches(_shortened, return_dtype=pl.String)
        elif not whole:
            out = _cut_by_characters(out)
        return out.fill_null("")

    return Formatted([_some(text, _PLAIN_CELL), _some(text, _NOT_ONE_COLUMN)], shown)


def _cut_by_characters(text: pl.Expr) -> pl.Expr:
    """output.shorten of text that takes a column a character: cut to MAX_CELL of them."""
    head = (MAX_CELL - 1) // 2
    cut = pl.concat_str(text.str.slice(0, head), pl.lit("…"),
                        text.str.slice(-(MAX_CELL - 1 - head)))  # fmt: skip
    return pl.when(text.str.len_chars() > MAX_CELL).then(cut).otherwise(text)


def _shortened(values: pl.Series) -> pl.Series:
    """output.shorten of each value: by Python for the distinct ones that may take other
    than a column a character and are long enough to need a cut (over MAX_CELL // 2
    characters: none takes more than two columns), by characters for the rest."""
    frame = values.to_frame("v")
    text = pl.col("v")
    may = text.str.contains(_NOT_ONE_COLUMN) & (text.str.len_chars() > MAX_CELL // 2)
    picked = frame.filter(may)["v"].unique().to_list()
    cut = [shorten(v) for v in picked]
    shown = text.replace_strict(picked, cut, default=text, return_dtype=pl.String)
    return frame.select(pl.when(may).then(shown).otherwise(_cut_by_characters(text))).to_series()


def _beyond_characters(body: pl.DataFrame, asked: Sequence[str]) -> dict[str, pl.Series]:
    """For each of the `asked` columns holding text that may take other than a column a
    character: each cell's terminal columns beyond its characters (output.display_width),
    asked of its distinct such values once (not in each chunk of lines)."""
    if not body.height or not asked:
        return {}
    flags = body.select(pl.col(c).str.contains(_NOT_ONE_COLUMN).any() for c in asked).row(0)
    beyond = {}
    for name, flagged in zip(asked, flags, strict=True):
        if not flagged:
            continue
        cells = body[name]
        values = cells.filter(cells.str.contains(_NOT_ONE_COLUMN)).unique().to_list()
        more = [display_width(v) - len(v) for v in values]
        if any(more):
            beyond[name] = cells.replace_strict(values, more, default=0, return_dtype=pl.Int64)
    return beyond


def _table_format(dtype: Any, *, whole: bool, fine: bool) -> Format | None:
    """A formatter writing cells as output.table_cell writes them; None for a type whose
    cells are written value by value: numbers (f"{n:,}" took 0.2-0.3 s a column of
    493,840 calls, polars' string operations to group digits 0.5-1.8 s; floats and money
    are rounded as Python rounds them), lists, structs."""
    if _is_text(dtype):
        return lambda v: _table_text(v.cast(pl.String), whole)
    if dtype == pl.Boolean:
        return lambda v: _always(pl.when(v).then(pl.lit("yes")).otherwise(pl.lit("")))
    if _is_time(dtype):
        layout = "%Y-%m-%d %H:%M:%S%.3f" if fine else "%Y-%m-%d %H:%M:%S"

        def format_time(value: pl.Expr) -> Formatted:
            utc = value.dt.convert_time_zone("UTC") if dtype.time_zone else value
            # strftime pads a year before 1000 to four digits, Python's does not
            by_value = value.map_elements(lambda v: table_cell(v, fine=fine), pl.String)
            return Formatted(
                [(value.dt.year() < 1000).any()],
                lambda found: (by_value if found[0] else utc.dt.strftime(layout)).fill_null(""),
            )

        return format_time
    if dtype == pl.Date:
        return lambda v: _always(v.dt.strftime("%Y-%m-%d").fill_null(""))
    return None


def fitting(widths: Sequence[int], width: int) -> int:
    """How many of the columns (from the left, at least one) fit in `width` characters,
    two spaces between each."""
    used, kept = -2, 0
    for w in widths:
        if kept and used + 2 + w > width:
            break
        used, kept = used + 2 + w, kept + 1
    return kept


def write_table(
    frame: pl.DataFrame,
    write: Write,
    columns: Sequence[str] | None = None,
    totals: Sequence[str] = (),
    footnote: Footnote = None,
    json_columns: Sequence[str] = (),
    width: int | None = None,
) -> None:
    """`output.to_table(frame, columns, totals, footnote, json_columns)`, handed to `write`
    in pieces of UTF-8: every cell formatted first (the widths need them all), then the
    lines CHUNK_ROWS at a time. `width` (a terminal's): the columns that do not fit are
    left out from the right, the first always kept, and the footnote says which."""
    columns = list(columns or frame.columns)
    if not columns:
        write(to_table(frame, columns, totals, footnote, json_columns).encode())
        return
    parse = set(json_columns)
    fine = fine_times(frame, columns)
    right = [frame.schema[c].is_numeric() for c in columns]
    formatted: dict[str, Formatted] = {}
    cells: dict[str, pl.Series] = {}
    for name in columns:
        dtype = frame.schema[name]
        fmt = None if name in parse else _table_format(dtype, whole=name in WHOLE,
                                                       fine=name in fine)  # fmt: skip
        if fmt is None:
            values = frame[name].to_list()
            if name in parse:
                values = [json.loads(v) if isinstance(v, str) else v for v in values]
            whole = name in WHOLE
            cells[name] = pl.Series(
                name,
                [table_cell(v, whole=whole, fine=name in fine) for v in values],
                dtype=pl.String,
            )
        else:
            formatted[name] = fmt(pl.col(name))
    probes = [p for f in formatted.values() for p in f.probes]
    answers = iter(frame.select(p.alias(f"p{i}") for i, p in enumerate(probes)).row(0)
                   if probes else ())  # fmt: skip
    found = {name: [bool(next(answers)) for _ in f.probes] for name, f in formatted.items()}
    texts = [f.text(found[name]).alias(name) for name, f in formatted.items()]
    body = pl.DataFrame([*frame.select(texts).get_columns(), *cells.values()]).select(columns)
    total = totals_row(frame, columns, totals) if totals and frame.height else None
    # (a column a probe found nothing in is plain ASCII text, a number, a time or a day)
    beyond = _beyond_characters(body, [c for c in columns if c in cells or any(found[c])])
    lengths = body.select(
        (pl.col(c).str.len_chars() + (pl.lit(beyond[c]) if c in beyond else 0)).max()
        for c in body.columns
    ).row(0) if frame.height else ()  # fmt: skip
    widths = [
        max(len(c), lengths[i] or 0 if lengths else 0, len(total[i]) if total else 0)
        for i, c in enumerate(columns)
    ]
    left_out = None
    if width is not None:
        kept = fitting(widths, width)
        if kept < len(columns):
            left_out = (f"left out to fit {width} columns: {', '.join(columns[kept:])} (-f csv, "
                        "-f json or a wider terminal shows them)")  # fmt: skip
            columns, widths, right = columns[:kept], widths[:kept], right[:kept]
            body = body.select(columns)
            total = total[:kept] if total is not None else None
    dashes = table_line(["-" * w for w in widths], widths, right)
    write((table_line(columns, widths, right) + "\n" + dashes + "\n").encode())
    if beyond:  # padded to their columns once, each by its own count of characters
        body = body.with_columns(
            pl.col(c).str.pad_start(w - pl.lit(beyond[c])) if r
            else pl.col(c).str.pad_end(w - pl.lit(beyond[c]))
            for c, w, r in zip(columns, widths, right, strict=True) if c in beyond
        )  # fmt: skip
    line = pl.concat_str(
        [
            pl.col(c) if c in beyond
            else pl.col(c).str.pad_start(w) if r else pl.col(c).str.pad_end(w)
            for c, w, r in zip(columns, widths, right, strict=True)
        ],
        separator="  ",
    ).str.strip_chars_end(" ")
    for offset in range(0, body.height, CHUNK_ROWS):
        chunk = body.slice(offset, CHUNK_ROWS)
        write(chunk.select(line.str.join("\n").cast(pl.Binary)).item() + b"\n")
    tail = []
    if total is not None:
        tail += [dashes, table_line(total, widths, right)]
    if not frame.height:
        tail.append("(no rows)")
    tail += footnote_lines(footnote)
    if left_out:
        tail.append(left_out)
    if tail:
        write(("\n".join(tail) + "\n").encode())
