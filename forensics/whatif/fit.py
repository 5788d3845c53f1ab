"""What a guard keeps of each tool result's rows, from the rows' sizes as lists.

queries/whatif/fits_unnested.sql is the definition: a row per result row, a running
sum over them, sums per result. At 1,000,000 events that is 34 million rows (288,648
results) unnested, sorted and grouped: 48 s and 15 GB for `forensics guards`. Here the
same figures come from the lists' flat values and offsets, in a few numpy passes
(prefix sums per result), and queries/whatif/results.sql does the rest; the tests hold
the two equal.

Per result with n rows (row i's json.dumps length d_i = chars_i + extra_i, its tokens
t_i = ceil(d_i / chars_per_token)):

- the page: min(n, page_size, row_cap), the caps that are set;
- k, the rows kept: the page; with a token cap, the rows of the page while
  envelope tokens + t_1 + ... + t_i stays within it, at least one;
- kept_dumps = d_1 + ... + d_k, gone_chars = chars_(k+1) + ... + chars_n,
  dumps_rows = d_1 + ... + d_n, largest_row = max t_i, row_tokens = sum t_i,
  rows_over = how many t_i exceed the token cap.

A result without rows (n null or 0) keeps 0, and its sums are unknown (null) where the
definition's are; rows_over and the characters are 0.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

LISTS = ("row_chars", "row_extra")
FITS = pa.schema(
    [
        ("k", pa.int64()),
        ("kept_dumps", pa.int64()),
        ("gone_chars", pa.int64()),
        ("dumps_rows", pa.int64()),
        ("largest_row", pa.int64()),
        ("row_tokens", pa.int64()),
        ("rows_over", pa.int64()),
    ]
)


CHUNK_ROWS = 1 << 18  # rows fitted at once: numpy's temporaries stay a few MB each


def _flat(column: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A list column's values (as stored, int32) and each list's [start, end) offsets."""
    array = column.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    # the lists' own values (whatever the array's slice; a null list's none, even where
    # Arrow lets it own some) and offsets made from their lengths, a null list empty
    values = array.flatten()
    lengths = column.list.len().fill_null(0).to_numpy()  # pc.fill_null would import pandas
    offsets = np.zeros(len(array) + 1, dtype=np.int64)
    np.cumsum(lengths.astype(np.int64), out=offsets[1:])
    if values.null_count:
        raise ValueError(f"{column.name}: a row size is null")
    # the values' own buffer (np.asarray of an Arrow array would import pandas)
    data = np.frombuffer(values.buffers()[1], dtype=np.int32)
    return data[values.offset : values.offset + len(values)], offsets


def _prefix(values: np.ndarray) -> np.ndarray:
    """Sums of values[:j] for every j (exact: integers)."""
    out = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=out[1:])
    return out


def _chunks(offsets: np.ndarray) -> list[tuple[int, int]]:
    """Runs of results [first, last) holding about CHUNK_ROWS rows (one result at least)."""
    found, first = [], 0
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + CHUNK_ROWS, side="right")) - 1
        last = min(max(last, first + 1), len(offsets) - 1)
        found.append((first, last))
        first = last
    return found


def fit(
    rows: pl.DataFrame,
    *,
    row_cap: int | None,
    token_cap: int | None,
    page_size: int | None,
    chars_per_token: float,
) -> pl.DataFrame:
    """`rows` (result_rows.sql's) without its lists, with FITS's columns beside."""
    chars, offsets = _flat(rows["row_chars"])
    extra, extra_offsets = _flat(rows["row_extra"])
    if not np.array_equal(offsets, extra_offsets):
        raise ValueError("row_chars and row_extra differ in length for a result")
    envelope = None
    if token_cap is not None:
        envelope = np.ceil(
            rows.select((pl.col("envelope_chars") + pl.col("envelope_extra")).cast(pl.Float64))
            .to_series()
            .to_numpy()
            / chars_per_token
        )  # nan where unknown
    columns: dict[str, list[np.ndarray]] = {name: [] for name in FITS.names}
    for first, last in _chunks(offsets):
        local = offsets[first : last + 1]
        base = int(local[0])
        found = _fit(
            chars[base : int(local[-1])].astype(np.int64),
            extra[base : int(local[-1])].astype(np.int64),
            local - base,
            None if envelope is None else envelope[first:last],
            row_cap=row_cap,
            token_cap=token_cap,
            page_size=page_size,
            chars_per_token=chars_per_token,
        )
        for name, values in found.items():
            columns[name].append(values)
    has = np.diff(offsets) > 0
    unknown = {"dumps_rows", "largest_row", "row_tokens"}  # null without rows
    fits = pl.DataFrame(
        {
            name: np.concatenate(parts) if parts else np.empty(0, np.int64)
            for name, parts in columns.items()
        },
        schema=dict.fromkeys(FITS.names, pl.Int64),
    ).with_columns(
        pl.when(pl.Series(has)).then(pl.col(name)).otherwise(None).alias(name)
        for name in unknown
    )
    return rows.drop(list(LISTS)).hstack(fits.select(FITS.names))


def _fit(
    chars: np.ndarray,
    extra: np.ndarray,
    offsets: np.ndarray,
    envelope_tokens: np.ndarray | None,
    *,
    row_cap: int | None,
    token_cap: int | None,
    page_size: int | None,
    chars_per_token: float,
) -> dict[str, np.ndarray]:
    """FITS's columns for the results of one chunk (their rows' sizes, offsets from 0)."""
    starts, ends = offsets[:-1], offsets[1:]
    n = ends - starts
    has = n > 0
    dumps = chars + extra
    tokens = np.ceil(dumps / chars_per_token).astype(np.int64)
    dumps_at, chars_at, tokens_at = _prefix(dumps), _prefix(chars), _prefix(tokens)

    page = n.copy()
    for cap in (page_size, row_cap):
        if cap is not None:
            np.minimum(page, cap, out=page)
    if token_cap is None or envelope_tokens is None:
        k = page
        over = np.zeros(len(n), dtype=np.int64)
    else:
        owner = np.repeat(np.arange(len(n)), n)
        position = np.arange(len(tokens)) - starts[owner]  # 0-based within its result
        # the running sum over the page, from the result's first row
        used = envelope_tokens[owner] + (tokens_at[1:] - tokens_at[starts[owner]])
        fits = (position < page[owner]) & (used <= token_cap)  # nan <= cap is False
        k = np.maximum(np.bincount(owner[fits], minlength=len(n)), 1)
        over = np.bincount(owner[tokens > token_cap], minlength=len(n))
    k = np.where(has, k, 0)
    kept = starts + k
    largest = np.zeros(len(n), dtype=np.int64)
    if has.any():
        largest[has] = np.maximum.reduceat(tokens, starts[has])
    return {
        "k": k,
        "kept_dumps": dumps_at[kept] - dumps_at[starts],
        "gone_chars": chars_at[ends] - chars_at[kept],
        "dumps_rows": dumps_at[ends] - dumps_at[starts],
        "largest_row": largest,
        "row_tokens": tokens_at[ends] - tokens_at[starts],
        "rows_over": over.astype(np.int64),
    }
