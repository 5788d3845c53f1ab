"""JSON and CSV of a whole frame, formatted a column at a time by polars and written in
chunks: the bytes of `output.to_json` and `output.to_csv`, without a dict per row.

`output.to_json` and `output.to_csv` stay the definition (rows as dicts, `json.dumps`
with indent 2, the csv module); tests/test_writers.py holds these writers equal to them
on generated frames of every column type, hostile text included. Measured on 200,000
ADK events (98,768 calls): `calls --all -f csv` spent 10 of its 11.9 s in the
definition's Python per row, and `-f json` held 1.6 GB of dicts and text.

Each column type has a formatter that writes a chunk of its values as the definition
would; a type without one (a JSON text column, a list of structs, a time of day) is
written by the definition's own code, value by value. Text is escaped, shown as text
or quoted only in the chunks that hold a character needing it: most columns are ids
and names, and a test over a column costs what the rewrite would.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from ..sanitize import json_escapes, json_safe, visible_escapes
from .output import _csv_cell, _plain, to_csv, to_json

CHUNK_ROWS = 20_000  # rows formatted and written at a time: about 40 MB of calls as JSON
ROW_INDENT = "    "  # a row's values are two levels deep in the JSON array of objects

Write = Callable[[str], None]
# a chunk of a column -> the expression that writes its text (never null): a formatter
# looks at the chunk to skip what no value in it needs
Format = Callable[[pl.Series], pl.Expr]

# text in which no character needs a second look: printable ASCII but for what each
# format escapes or quotes, and not starting like a formula (output._csv_cell)
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


def _any(series: pl.Series, pattern: str) -> bool:
    return bool(series.cast(pl.String).str.contains(pattern).any())


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


def _float_text(
    value: pl.Expr, *, json_style: bool, chunk: pl.Series | None = None
) -> pl.Expr:
    """A float as repr writes it (json.dumps: NaN, Infinity; str: nan, inf); null kept.
    Given the chunk, only the steps some value in it needs."""
    value = value.cast(pl.Float64)  # a float32 is shown as the float64 it widens to
    if not _polars_floats_agree():
        return value.map_elements(repr, return_dtype=pl.String)
    numbers = chunk.cast(pl.Float64) if chunk is not None else None
    text = value.cast(pl.String)
    size = numbers.abs() if numbers is not None else None
    if size is None or bool(((size < 1e-4) & (size > 0) | (size >= 1e16)).any()):
        text = _float_layout(text)
    nan, inf = ("NaN", "Infinity") if json_style else ("nan", "inf")
    if numbers is not None and not (numbers.is_nan().any() or numbers.is_infinite().any()):
        return text
    return (
        pl.when(value.is_nan())
        .then(pl.lit(nan))
        .when(value == float("inf"))
        .then(pl.lit(inf))
        .when(value == float("-inf"))
        .then(pl.lit("-" + inf))
        .otherwise(text)
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


def _scalar(dtype: Any, *, json_style: bool) -> Callable[[pl.Expr], pl.Expr] | None:
    """Text of a number or a flag, as json.dumps (json_style) or str writes it; null kept."""
    if dtype.is_integer():
        return lambda v: v.cast(pl.String)
    if dtype.is_float():
        return functools.partial(_float_text, json_style=json_style)
    if dtype == pl.Boolean:
        true, false = ("true", "false") if json_style else ("True", "False")
        return functools.partial(_bool, true=true, false=false)
    return None


def _is_text(dtype: Any) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)


def _is_time(dtype: Any) -> bool:  # the units whose values hold whole microseconds
    return isinstance(dtype, pl.Datetime) and dtype.time_unit in ("us", "ms")


def _quoted(text: pl.Expr, null: str) -> pl.Expr:
    return pl.concat_str(pl.lit('"'), text, pl.lit('"')).fill_null(null)


# --- JSON ----------------------------------------------------------------------


def _json_text(chunk: pl.Series) -> pl.Expr:
    text = pl.col(chunk.name).cast(pl.String)
    if _any(chunk, _PLAIN_JSON):
        text = _json_escapes().apply(text)
    return _quoted(text, "null")


def _json_format(dtype: Any) -> Format | None:
    """A formatter writing values as json.dumps(indent=2) writes a row's values, then
    json_safe; None for a type written value by value."""
    if _is_text(dtype):
        return _json_text
    if dtype.is_float():
        return lambda s: _float_text(pl.col(s.name), json_style=True, chunk=s).fill_null("null")
    if (scalar := _scalar(dtype, json_style=True)) is not None:
        return lambda s: scalar(pl.col(s.name)).fill_null("null")
    if dtype == pl.Null:
        return lambda s: pl.col(s.name).cast(pl.String).fill_null("null")
    if _is_time(dtype):
        return lambda s: _quoted(_iso(pl.col(s.name), dtype), "null")
    if dtype == pl.Date:
        return lambda s: _quoted(pl.col(s.name).dt.strftime("%Y-%m-%d"), "null")
    if isinstance(dtype, pl.Decimal):
        return lambda s: _quoted(_exact(pl.col(s.name), dtype), "null")
    if isinstance(dtype, pl.List):
        return _json_list(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return _json_struct(dtype)
    return None


def _json_item(dtype: Any, escapes: _Escapes) -> Callable[[pl.Expr], pl.Expr] | None:
    """A list item's or struct field's JSON (the definition hands them to json.dumps as
    they are: only text, numbers and flags are written here, not times or Decimals),
    its text escaped by `escapes`."""
    if _is_text(dtype):
        return lambda v: _quoted(escapes.apply(v.cast(pl.String)), "null")
    if (scalar := _scalar(dtype, json_style=True)) is not None:
        return lambda v: scalar(v).fill_null("null")
    if dtype == pl.Null:
        return lambda v: pl.lit("null")
    return None


def _json_list(inner: Any) -> Format | None:
    if (item := _json_item(inner, _json_escapes())) is None:
        return None
    inside = "\n" + ROW_INDENT + "  "

    def build(chunk: pl.Series) -> pl.Expr:
        value = pl.col(chunk.name)
        items = value.list.eval(item(pl.element())).list.join("," + inside)
        return (
            pl.when(value.is_null())
            .then(pl.lit("null"))
            .when(value.list.len() == 0)
            .then(pl.lit("[]"))
            .otherwise(pl.concat_str(pl.lit("[" + inside), items, pl.lit("\n" + ROW_INDENT + "]")))
        )

    return build


def _json_struct(dtype: pl.Struct) -> Format | None:
    inside = "\n" + ROW_INDENT + "  "
    heads, items = [], []
    for i, field in enumerate(dtype.fields):
        if (item := _json_item(field.dtype, _json_escapes())) is None:
            return None
        key = json_safe(json.dumps(field.name, ensure_ascii=False))
        heads.append(("{" if i == 0 else ",") + inside + key + ": ")
        items.append(item)
    if not items:
        return None

    def build(chunk: pl.Series) -> pl.Expr:
        value = pl.col(chunk.name)
        pieces: list[pl.Expr] = []
        for head, item, field in zip(heads, items, dtype.fields, strict=True):
            pieces += [pl.lit(head), item(value.struct.field(field.name))]
        pieces.append(pl.lit("\n" + ROW_INDENT + "}"))
        return pl.when(value.is_null()).then(pl.lit("null")).otherwise(pl.concat_str(pieces))

    return build


def _json_value_by_value(series: pl.Series, parse: bool) -> pl.Series:
    """The definition itself, one value at a time (for types without a formatter)."""
    wanted = {series.name} if parse else set()

    def one(value: Any) -> str:
        plain = _plain(value, wanted, series.name)
        text = json.dumps(plain, indent=2, ensure_ascii=False).replace("\n", "\n" + ROW_INDENT)
        return json_safe(text)

    return pl.Series(series.name, [one(v) for v in series.to_list()], dtype=pl.String)


def write_json(
    frame: pl.DataFrame,
    write: Write,
    json_columns: Sequence[str] = (),
    extra: dict[str, Any] | None = None,
) -> None:
    """`output.to_json(frame, json_columns, extra)` and a newline, handed to `write` in
    pieces."""
    if frame.height == 0:
        write("[]\n")
        return
    parse = set(json_columns)
    values: dict[str, Format | str] = {}
    by_value: dict[str, pl.Series] = {}  # computed whole before a byte is written
    for name, dtype in frame.schema.items():
        fmt = None if name in parse and dtype == pl.String else _json_format(dtype)
        if fmt is None:
            by_value[name] = _json_value_by_value(frame[name], name in parse)
            fmt = _as_is
        values[name] = fmt
    for key, constant in (extra or {}).items():  # {**row, **extra}: a key of both keeps its place
        text = json.dumps(constant, indent=2, ensure_ascii=False).replace("\n", "\n" + ROW_INDENT)
        values[key] = json_safe(text)
    template: list[str | tuple[str, Format]] = []
    pending = "  {"
    for i, (key, value) in enumerate(values.items()):
        pending += ("" if i == 0 else ",") + "\n" + ROW_INDENT
        pending += json_safe(json.dumps(key, ensure_ascii=False)) + ": "
        if isinstance(value, str):
            pending += value
        else:
            template += [pending, (key, value)]
            pending = ""
    template.append(pending + "\n  }")
    if len(template) == 1:  # every column replaced by `extra`: nothing to format
        write(to_json(frame, json_columns, extra) + "\n")
        return
    _write_chunks(frame.with_columns(list(by_value.values())), template, ",\n", write,
                  "[\n", "\n]\n")  # fmt: skip


# --- CSV -----------------------------------------------------------------------


def _csv_text(text: pl.Expr, chunk: pl.Series) -> pl.Expr:
    """output._csv_cell's rule for text: control and bidi characters shown, a formula
    shown as text; then quoted as the csv module quotes; null: empty. `chunk` holds the
    values `text` computes, to look at."""
    if _any(chunk, _PLAIN_CSV):
        text = _visible_escapes().apply(text)
        formula = text.str.contains(r"^[=+@]") | (
            text.str.starts_with("-") & ~text.str.contains(_NUMBER)
        )
        text = pl.when(formula).then(pl.lit("'") + text).otherwise(text)
        text = pl.when(text.str.contains(_CSV_QUOTED)).then(
            _quoted(text.str.replace_all('"', '""', literal=True), "")
        ).otherwise(text)
    return text.fill_null("")


def _csv_format(dtype: Any) -> Format | None:
    """A formatter writing values as the definition writes its fields; None for a type
    written value by value."""
    if _is_text(dtype):
        return lambda s: _csv_text(pl.col(s.name).cast(pl.String), s)
    if dtype.is_float():  # the csv module writes numbers itself: never quoted
        return lambda s: _float_text(pl.col(s.name), json_style=False, chunk=s).fill_null("")
    if dtype.is_integer():
        return lambda s: pl.col(s.name).cast(pl.String).fill_null("")
    if dtype == pl.Boolean:
        return lambda s: _bool(pl.col(s.name), "true", "false").fill_null("")
    if dtype == pl.Null:
        return lambda s: pl.col(s.name).cast(pl.String).fill_null("")
    if _is_time(dtype):  # digits, '-', ':', 'T', '.', 'Z': nothing to show or quote
        return lambda s: _iso(pl.col(s.name), dtype).fill_null("")
    if dtype == pl.Date:
        return lambda s: pl.col(s.name).dt.strftime("%Y-%m-%d").fill_null("")
    if isinstance(dtype, pl.Decimal):  # digits, a point, a sign: no formula, no quotes
        return lambda s: _exact(pl.col(s.name), dtype).fill_null("")
    if isinstance(dtype, pl.List):
        return _csv_list(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return _csv_struct(dtype)
    return None


def _csv_list(inner: Any) -> Format | None:
    """";".join(map(str, items)), then as text."""
    if _is_text(inner):
        item: Callable[[pl.Expr], pl.Expr] = lambda v: v.cast(pl.String)  # noqa: E731
    elif (scalar := _scalar(inner, json_style=False)) is not None:
        item = scalar
    else:
        return None

    def build(chunk: pl.Series) -> pl.Expr:
        joined = chunk.to_frame("v").select(
            pl.col("v").list.eval(item(pl.element()).fill_null("None")).list.join(";")
        ).to_series()  # a null list stays null, then empty
        return _csv_text(pl.lit(joined), joined)

    return build


def _csv_struct(dtype: pl.Struct) -> Format | None:
    """json.dumps(the row's dict, ensure_ascii=False), then as text."""
    heads, items = [], []
    for i, field in enumerate(dtype.fields):  # no json_safe: the text is then shown
        if (item := _json_item(field.dtype, _dumps_escapes())) is None:
            return None
        heads.append(("{" if i == 0 else ", ") + json.dumps(field.name, ensure_ascii=False) + ": ")
        items.append(item)
    if not items:
        return None

    def text(value: pl.Expr) -> pl.Expr:
        pieces: list[pl.Expr] = []
        for head, item, field in zip(heads, items, dtype.fields, strict=True):
            pieces += [pl.lit(head), item(value.struct.field(field.name))]
        pieces.append(pl.lit("}"))
        return pl.when(value.is_null()).then(pl.lit(None, pl.String)).otherwise(
            pl.concat_str(pieces)
        )

    # numbers and flags only, under plain names: the text is quoted (its keys are) and
    # nothing in it is shown otherwise, so the quoting is written around it
    plain = all(
        not _is_text(f.dtype) and re.fullmatch(r"[ !#-+\--~]*", f.name) for f in dtype.fields
    )

    def build(chunk: pl.Series) -> pl.Expr:
        if plain:
            value = pl.col(chunk.name)
            pieces: list[pl.Expr] = [pl.lit('"')]
            for head, item, field in zip(heads, items, dtype.fields, strict=True):
                pieces += [pl.lit(head.replace('"', '""')), item(value.struct.field(field.name))]
            pieces.append(pl.lit('}"'))
            return pl.when(value.is_null()).then(pl.lit("")).otherwise(pl.concat_str(pieces))
        computed = chunk.to_frame("v").select(text(pl.col("v"))).to_series()
        return _csv_text(pl.lit(computed), computed)

    return build


def _csv_field(cell: Any) -> str:
    """One field as csv.writer(lineterminator="\\n") writes it."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cell, ""])
    return buffer.getvalue()[:-2]  # less the second, empty field and the line's end


def _csv_value_by_value(series: pl.Series, parse: bool) -> pl.Series:
    wanted = {series.name} if parse else set()
    return pl.Series(
        series.name,
        [_csv_field(_csv_cell(_plain(v, wanted, series.name))) for v in series.to_list()],
        dtype=pl.String,
    )


def write_csv(frame: pl.DataFrame, write: Write, json_columns: Sequence[str] = ()) -> None:
    """`output.to_csv(frame, json_columns)`, handed to `write` in pieces."""
    if frame.width < 2:  # one field alone is quoted when empty: the definition does it
        write(to_csv(frame, json_columns))
        return
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(frame.columns)
    write(header.getvalue())
    if frame.height == 0:
        return
    parse = set(json_columns)
    template: list[str | tuple[str, Format]] = []
    by_value: dict[str, pl.Series] = {}
    for i, (name, dtype) in enumerate(frame.schema.items()):
        fmt = None if name in parse and dtype == pl.String else _csv_format(dtype)
        if fmt is None:
            by_value[name] = _csv_value_by_value(frame[name], name in parse)
            fmt = _as_is
        template += [",", (name, fmt)] if i else [(name, fmt)]
    _write_chunks(frame.with_columns(list(by_value.values())), template, "\n", write, "", "\n")


# --- writing -------------------------------------------------------------------


def _as_is(chunk: pl.Series) -> pl.Expr:
    return pl.col(chunk.name)


def _write_chunks(
    frame: pl.DataFrame,
    template: list[str | tuple[str, Format]],
    between: str,
    write: Write,
    head: str,
    tail: str,
) -> None:
    """`head`, each row as `template` says (text, and columns with their formatters)
    with `between` them, and `tail`, formatted CHUNK_ROWS rows at a time (one polars
    expression per chunk: its columns are formatted on every core)."""
    write(head)
    for offset in range(0, frame.height, CHUNK_ROWS):
        chunk = frame.slice(offset, CHUNK_ROWS)
        pieces = [
            pl.lit(part) if isinstance(part, str) else part[1](chunk[part[0]])
            for part in template
        ]
        text = chunk.select(pl.concat_str(pieces).str.join(between)).item()
        if offset:
            write(between)
        write(text)
    write(tail)
