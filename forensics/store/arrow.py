"""Python rows as an Arrow table of a given schema, without pandas.

pyarrow's own builders (`Table.from_pylist`, `pa.table`, `pa.array` of a list) ask
pandas first whether a value is one of its objects, importing it where it is
installed: 0.17-0.4 s and about 60 MB of a command that never needs it. polars
builds the columns instead, and the table is cast to the exact schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

if TYPE_CHECKING:
    import numpy as np


def rows_table(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """`rows` (a key missing from a row is null) as a table of `schema`, built by column."""
    return columns_table({name: [row.get(name) for row in rows] for name in schema.names}, schema)


def columns_table(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.Table:
    """Columns of Python values (one per field of `schema`) as a table of `schema`."""
    types = {field.name: _polars(field.type) for field in schema}
    return pl.DataFrame(dict(columns), schema=types).to_arrow().cast(schema)


def column(values: Sequence[Any], kind: pa.DataType) -> pa.Array:
    """Python values as one Arrow array of `kind` (through polars, as columns_table)."""
    return pl.Series(values, dtype=_polars(kind)).to_arrow().cast(kind)


_WIDTHS = {pa.int32(): "int32", pa.int64(): "int64", pa.float64(): "float64"}


def numeric(values: np.ndarray, kind: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array as an Arrow one of `kind` (int32, int64, float64 or bool), null where
    `valid` is False, from its buffers: no builder that asks pandas, and no polars (this
    also runs in forked workers, where polars' threads hang)."""
    import numpy as np

    size = len(values)
    if kind == pa.bool_():
        data = pa.py_buffer(np.packbits(np.asarray(values, dtype=bool), bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values, dtype=_WIDTHS[kind]))
    if valid is None:
        return pa.Array.from_buffers(kind, size, [None, data], null_count=0)
    valid = np.asarray(valid, dtype=bool)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, size, [bitmap, data], null_count=size - int(valid.sum()))


_TYPES: dict[pa.DataType, pl.DataType] = {
    pa.string(): pl.String(),
    pa.large_string(): pl.String(),
    pa.bool_(): pl.Boolean(),
    pa.int32(): pl.Int32(),
    pa.int64(): pl.Int64(),
    pa.float64(): pl.Float64(),
    pa.date32(): pl.Date(),
}


def _polars(kind: pa.DataType) -> pl.DataType:
    """The polars type of an Arrow one (those the store's tables use; even asking
    pyarrow for an empty table of a schema imports pandas)."""
    if kind in _TYPES:
        return _TYPES[kind]
    if pa.types.is_decimal(kind):
        return pl.Decimal(kind.precision, kind.scale)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pl.List(_polars(kind.value_type))
    raise TypeError(f"no polars type for {kind}")


SESSION_KEYS = pa.schema([("app_name", pa.string()), ("user_id", pa.string()),
                          ("session_id", pa.string())])  # fmt: skip


def session_keys_table(keys: Sequence[tuple[str, str, str]]) -> pa.Table:
    """(app, user, session) keys as a table of SESSION_KEYS, for a query to join."""
    return columns_table(
        {name: [k[i] for k in keys] for i, name in enumerate(SESSION_KEYS.names)}, SESSION_KEYS
    )
