"""What a tool-output guard sizes of each function_response, read from its payload text.

The figures are those of queries/families/adk/stage_results.sql (the definition, and
what sizes every payload this module does not take): where the rows are (the longest
list of records among the response, its top-level values and the values of `result`;
the first on ties), each row's compact JSON length and what Python's json.dumps adds to
it, the same for the rest of the response (the envelope), and the rows as a markdown
table. The SQL parses each payload three times and turns every row into a string of its
own; this costs one pass over the bytes, which dominated ingest (34 s of 48 s of
normalising 200,000 events, 1.65 GB of them tool results):

- msgspec splits a payload into its members and a list into its rows without decoding
  them (`msgspec.Raw`), so a row is a span of the payload's bytes;
- one numpy pass over a batch's payload bytes finds the ':' and ',' outside strings and
  the non-ASCII characters, so each row's figures are counts of positions in its span.

A payload is compact JSON as DuckDB writes it (no whitespace, one spelling of each
value). One whose members this cannot line up exactly with its bytes (a key twice in
an object, or anything unexpected) is declined, and the SQL sizes it.
"""

from __future__ import annotations

import math
import queue
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

import msgspec
import numpy as np
import pyarrow as pa

from ...errors import waited
from ...store.arrow import column, numeric

KEY = ("app_name", "user_id", "session_id", "event_id", "origin", "part_index")
RESULT_SCHEMA = pa.schema(
    [
        ("app_name", pa.string()),
        ("user_id", pa.string()),
        ("session_id", pa.string()),
        ("event_id", pa.string()),
        ("origin", pa.string()),
        ("part_index", pa.int32()),
        ("row_count", pa.int32()),
        ("rows_key", pa.string()),
        ("row_chars", pa.list_(pa.int32())),
        ("row_extra", pa.list_(pa.int32())),
        ("envelope_chars", pa.int64()),
        ("envelope_extra", pa.int64()),
        ("markdown_chars", pa.int64()),
    ]
)
MARKDOWN_ROWS = 50  # stage_results.sql: the markdown estimate reads the first 50 rows
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_encode = msgspec.json.encode
_RECORDS = (b"[{", b"[[")  # a list of records: its first item an object or a list


class Declined(Exception):
    """A payload whose members this module cannot line up exactly with its bytes."""


@dataclass
class _Sized:
    """Where one payload's rows are (its bytes' offsets), before the counts over them."""

    row: int  # the input row
    rows_key: str | None  # None: no rows
    row_starts: np.ndarray  # each row's span
    row_ends: np.ndarray
    span: tuple[int, int]  # the rows list's own span


def _members(text: bytes, start: int, end: int) -> list[tuple[str, int, int]]:
    """The members of the object text[start:end]: each key and its value's span; raises
    Declined unless they line up with the bytes (a repeated key does not)."""
    try:
        found = _OBJECT.decode(memoryview(text)[start:end])
    except msgspec.DecodeError as e:
        raise Declined(str(e)) from None
    members = []
    at = start + 1
    for key, value in found.items():
        name = _encode(key)
        if text[at : at + len(name)] != name or text[at + len(name) : at + len(name) + 1] != b":":
            raise Declined("a key is not where its object puts it")
        at += len(name) + 1
        members.append((key, at, at + len(value)))
        at += len(value) + 1  # the ',' or the closing '}'
    if at != end or (members and text[end - 1 : end] != b"}"):
        raise Declined("the members do not fill their object")
    if not members and end - start != 2:
        raise Declined("an empty object that is not {}")
    return members


def _rows(text: bytes, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """Each item's span of the list text[start:end]."""
    try:
        items = _LIST.decode(memoryview(text)[start:end])
    except msgspec.DecodeError as e:
        raise Declined(str(e)) from None
    sizes = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    starts = start + 1 + np.concatenate(([0], np.cumsum(sizes + 1)[:-1]))
    if len(items) and int(starts[-1] + sizes[-1]) + 1 != end:
        raise Declined("the items do not fill their list")
    return starts, starts + sizes


def _size(text: bytes, row: int) -> _Sized:
    """Where one payload's rows are (raises Declined)."""
    candidates: list[tuple[str, int, int]] = []
    if text[:2] in _RECORDS:
        candidates = [("$", 0, len(text))]
    elif text[:1] == b"{":
        candidates = _members(text, 0, len(text))
        if any(k == "$" or k.startswith("result.") for k, _, _ in candidates):
            raise Declined("a key that stage_results.sql would read as a path")
        if text.startswith(b'{"result":{'):
            _, start, end = candidates[0]
            candidates += [(f"result.{k}", a, b) for k, a, b in _members(text, start, end)]
    best: tuple[str, int, int, np.ndarray, np.ndarray] | None = None
    for key, start, end in candidates:
        if text[start : start + 2] not in _RECORDS:
            continue
        starts, ends = _rows(text, start, end)
        if best is None or len(starts) > len(best[3]):
            best = (key, start, end, starts, ends)
    if best is None:
        return _Sized(row, None, np.empty(0, np.int64), np.empty(0, np.int64), (0, 0))
    key, start, end, starts, ends = best
    return _Sized(row, key, starts, ends, (start, end))


class _Counts:
    """Positions in a chunk of payload bytes, for counts over any span of it: the ':'
    and ',' outside strings, the UTF-8 bytes that make characters longer (continuation
    bytes) and json.dumps's escapes longer (lead bytes of non-ASCII characters, of those
    beyond the BMP), and what each escape sequence saves when a string is read (`\\n`
    is one character, `\\u0001` one too). What only the markdown estimate reads (the
    quotes, the ':' and ',' apart, the opening brackets, the '|') is picked out of the
    spans of the rows it reads (`_Marks`), a small part of a chunk's bytes."""

    def __init__(self, data: np.ndarray, scratch: np.ndarray):
        self.data = data
        # the bytes of interest (a fifth of a tool result's) in one sweep that writes
        # into `scratch` (two bool rows, reused: a fresh 8 MB temporary per comparison
        # cost more in page faults than the comparison); the rest works on positions
        hit, seen = scratch[0, : len(data)], scratch[1, : len(data)]
        np.greater_equal(data, 0x80, out=seen)
        for byte in (34, 92, 58, 44, 123, 91, 124):
            np.equal(data, byte, out=hit)
            np.logical_or(seen, hit, out=seen)
        found = np.flatnonzero(seen)
        kinds = data[found]
        quote = kinds == 34
        slashes = found[kinds == 92]
        empty = np.empty(0, np.int64)
        self.escapes, self.saved, self.surrogates = empty, np.zeros(1, np.int64), empty
        if len(slashes):
            breaks = np.flatnonzero(np.diff(slashes) != 1)
            run_starts = slashes[np.concatenate(([0], breaks + 1))]
            run_ends = slashes[np.concatenate((breaks, [len(slashes) - 1]))] + 1
            odd = (run_ends - run_starts) % 2 == 1
            follows = data[np.minimum(run_ends, len(data) - 1)]
            unicode = odd & (follows == 117)  # \\uXXXX
            saved = (run_ends - run_starts) // 2 + np.where(odd, np.where(unicode, 5, 1), 0)
            self.escapes = run_starts
            self.saved = np.concatenate(([0], np.cumsum(saved)))
            # a quote after an odd run of backslashes is escaped
            quote[np.searchsorted(found, run_ends[odd & (follows == 34)])] = False
            # \\uD800-\\uDFFF: a surrogate, which reads as part of one character with
            # the next; DuckDB never writes one, and this module leaves it to the SQL
            at = run_ends[unicode]
            at = at[at + 3 < len(data)]
            hi, lo = data[at + 1] | 0x20, data[at + 2] | 0x20
            self.surrogates = at[(hi == ord("d")) & np.isin(lo, np.frombuffer(b"89ab", np.uint8))]
        # outside a string where an even number of quotes comes before (strings never
        # span two payloads, and each payload's quotes pair up): the parity, accumulated
        outside = np.bitwise_xor.accumulate(quote.view(np.uint8)) == 0
        self.separators = found[outside & ((kinds == 58) | (kinds == 44))]
        self.found, self.kinds, self.quote, self.outside = found, kinds, quote, outside
        high = kinds >= 0x80
        if high.any():
            self.continuation = found[high & ((kinds & 0xC0) == 0x80)]
            self.lead = found[kinds >= 0xC0]
            self.lead4 = found[kinds >= 0xF0]
        else:
            self.continuation = self.lead = self.lead4 = empty

    @staticmethod
    def between(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """How many of `positions` lie in each span [start, end)."""
        return np.searchsorted(positions, ends) - np.searchsorted(positions, starts)

    def chars(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Characters in each span."""
        return ends - starts - self.between(self.continuation, starts, ends)

    def extra(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """What json.dumps adds to each span (dumps_extra in macros.sql): a space after
        each separator outside strings, \\uXXXX for each non-ASCII character, a pair
        of them beyond the BMP."""
        return (
            self.between(self.separators, starts, ends)
            + 5 * self.between(self.lead, starts, ends)
            + 6 * self.between(self.lead4, starts, ends)
        )

    def read(self, marks: _Marks, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Characters of the strings [start, end) (their quotes included) once read, each
        '|' counted twice (markdown_line's escape)."""
        saved = self.saved[np.searchsorted(self.escapes, ends)]
        saved -= self.saved[np.searchsorted(self.escapes, starts)]
        return self.chars(starts, ends) - 2 - saved + self.between(marks.pipes, starts, ends)

    def markdown(self, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 totals: np.ndarray, owners: int) -> list[int | None]:  # fmt: skip
        """stage_results.sql's markdown_chars per owner (0..owners-1) of the rows at
        [starts, ends) (each owner's first rows, up to MARKDOWN_ROWS; `rows`: each one's
        owner; `totals`: each owner's rows in all): rows of objects of scalars as a table
        (a header from the first row's keys, a line per row, '|' escaped), their lines
        scaled to all rows; None for an owner whose rows are not all flat objects."""
        if not owners:
            return []
        marks = _Marks(self, starts, ends)
        flat = (self.data[starts] == 123) & (self.between(marks.opens, starts + 1, ends) == 0)
        lo = np.searchsorted(marks.colons, starts)
        keys = np.searchsorted(marks.colons, ends) - lo  # a member per ':' (flat rows)
        member_row = np.repeat(np.arange(len(starts)), keys)
        first = np.repeat(np.cumsum(keys) - keys, keys)
        colons = marks.colons[np.arange(len(member_row)) - first + np.repeat(lo, keys)]
        # a value runs from its ':' to the next ',' of its row (the next one marked is
        # past the row's end when the row has none), or to the row's '}'
        row_end = ends[member_row] - 1
        commas = marks.commas
        j = np.minimum(np.searchsorted(commas, colons), max(len(commas) - 1, 0))
        nxt = commas[j] if len(commas) else row_end
        value_end = np.where((nxt > colons) & (nxt < row_end), nxt, row_end)
        value_start = colons + 1
        head = self.data[value_start]
        cells = np.where(
            head == 34,  # a string: its text read; null: empty; else as written
            self.read(marks, value_start, value_end),
            np.where(head == 110, 0, value_end - value_start),
        )
        lines = np.bincount(member_row, weights=cells, minlength=len(starts)) + 3 * keys + 2
        # the header: the first row's keys, each the string before its ':'
        key_end = colons
        key_start = marks.quotes[np.searchsorted(marks.quotes, key_end - 1) - 1]
        key_cells = self.read(marks, key_start, key_end)
        firsts = np.r_[True, rows[1:] != rows[:-1]]
        in_first = firsts[member_row]
        header = np.bincount(member_row[in_first], weights=key_cells[in_first],
                             minlength=len(starts))[firsts] + 7 * keys[firsts] + 4  # fmt: skip
        owned = np.bincount(rows, weights=lines, minlength=owners)
        counted = np.bincount(rows, minlength=owners)
        all_flat = np.bincount(rows, weights=~flat, minlength=owners) == 0
        found: list[int | None] = []
        for owner in range(owners):
            if not all_flat[owner] or not counted[owner]:
                found.append(None)
                continue
            scaled = float(int(owned[owner]) * int(totals[owner])) / int(counted[owner])
            whole = math.floor(scaled)  # DuckDB divides in doubles; its round: half away
            found.append(int(header[owner]) + whole + (scaled - whole >= 0.5))
        return found


class _Marks:
    """The quotes, the ':' and ',' and opening brackets outside strings, and the '|'
    inside the spans [starts, ends) of a chunk's `_Counts` (ascending, disjoint)."""

    def __init__(self, counts: _Counts, starts: np.ndarray, ends: np.ndarray):
        lo = np.searchsorted(counts.found, starts)
        n = np.searchsorted(counts.found, ends) - lo
        pick = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
        found, kinds = counts.found[pick], counts.kinds[pick]
        outside = counts.outside[pick]
        self.quotes = found[counts.quote[pick]]
        self.colons = found[outside & (kinds == 58)]
        self.commas = found[outside & (kinds == 44)]
        self.opens = found[outside & ((kinds == 123) | (kinds == 91))]
        self.pipes = found[kinds == 124]


def _chunks(offsets: np.ndarray, size: int) -> Iterator[tuple[int, int]]:
    """Runs of payloads [first, last) holding about `size` bytes."""
    first = 0
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + size, side="right"))
        last = min(max(last - 1, first + 1), len(offsets) - 1)
        yield first, last
        first = last


CHUNK_BYTES = 8 << 20  # numpy's passes over at most this much at once (its temporaries)


@dataclass
class _Chunk:
    """The figures of one chunk's sized payloads, in order."""

    rows_key: list[str | None]
    markdown: list[int | None]
    has_rows: np.ndarray  # bool per payload
    row_count: np.ndarray  # per payload with rows
    row_chars: np.ndarray  # per row of those, in order
    row_extra: np.ndarray
    envelope_chars: np.ndarray  # per payload
    envelope_extra: np.ndarray


def size_results(
    payloads: pa.Table, submit: Callable[..., Future[_Part]] | None = None
) -> tuple[pa.Table, pa.Table]:
    """Per function_response of `payloads` (KEY columns and `payload`, its response as
    JSON text): the guard's figures (RESULT_SCHEMA) of those this module reads, and the
    KEY of those it declines, for stage_results.sql to size. `submit` (an executor's):
    the chunks are sized apart, in its threads (numpy's sweeps let go of the GIL), and
    put back in order."""
    if not payloads.num_rows:  # (no pyarrow builder: they import pandas, 0.25 s)
        return pa.Table.from_batches([], RESULT_SCHEMA), payloads.select(list(KEY))
    column = payloads.column("payload").combine_chunks()
    if pa.types.is_large_string(column.type):
        column = column.cast(pa.string())
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[
        column.offset : column.offset + len(column) + 1
    ].astype(np.int64)
    data = np.frombuffer(column.buffers()[2] or b"", dtype=np.uint8)
    # two bool rows at least a chunk long (a chunk holds one payload at least), one per
    # thread at a time, handed on to the chunks sized after it when wide enough
    scratch: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()

    def sized(first: int, last: int) -> _Part:
        need = int(offsets[last] - offsets[first])
        try:
            rows = scratch.get_nowait()
        except queue.Empty:
            rows = None
        if rows is None or rows.shape[1] < need:  # (a payload over CHUNK_BYTES: its own)
            rows = np.empty((2, max(need, min(CHUNK_BYTES, len(data)))), dtype=bool)
        try:
            return _size_chunk(offsets, data, first, last, rows)
        finally:
            scratch.put(rows)

    spans = list(_chunks(offsets, CHUNK_BYTES))
    if submit is None or len(spans) < 2:
        parts = [sized(first, last) for first, last in spans]
    else:
        parts = [waited(f) for f in [submit(sized, first, last) for first, last in spans]]
    taken = [row for part in parts for row in part.taken]
    declined = [row for part in parts for row in part.declined]
    chunks = [part.chunk for part in parts if part.chunk is not None]
    keys = payloads.select(list(KEY))
    sized_rows = _table(keys.take(numeric(np.array(taken, np.int64), pa.int64())), chunks)
    return sized_rows, keys.take(numeric(np.array(declined, np.int64), pa.int64()))


@dataclass
class _Part:
    """One chunk's payloads: the rows it sized (their figures) and those it declined."""

    taken: list[int]
    declined: list[int]
    chunk: _Chunk | None


def _size_chunk(offsets: np.ndarray, data: np.ndarray, first: int, last: int,
                scratch: np.ndarray) -> _Part:  # fmt: skip
    """The payloads [first, last) of `data` (at `offsets`), sized."""
    base = int(offsets[first])
    chunk = data[base : int(offsets[last])]
    counts = _Counts(chunk, scratch)
    local = offsets[first : last + 1] - base
    surrogates = counts.between(counts.surrogates, local[:-1], local[1:])
    raw = chunk.tobytes()
    found: list[_Sized] = []
    declined: list[int] = []
    for i in range(first, last):
        try:
            if surrogates[i - first]:
                raise Declined("a surrogate escape")
            found.append(_size(raw[local[i - first] : local[i - first + 1]], i))
        except Declined:
            declined.append(i)
    if not found:
        return _Part([], declined, None)
    index = np.array([s.row - first for s in found], dtype=np.int64)
    figures = _figures(counts, found, local[index], local[index + 1])
    return _Part([s.row for s in found], declined, figures)


def _figures(counts: _Counts, found: list[_Sized], starts: np.ndarray, ends: np.ndarray) -> _Chunk:
    """One chunk's figures (its payloads `found` at [starts, ends) in it), counted at once."""
    has_rows = np.array([s.rows_key is not None for s in found], dtype=bool)
    listed = [(int(at), s) for at, s in zip(starts, found, strict=True) if s.rows_key is not None]
    empty = np.empty(0, np.int64)
    row_count = np.array([len(s.row_starts) for _, s in listed], dtype=np.int64)
    row_starts = np.concatenate([s.row_starts + at for at, s in listed] or [empty])
    row_ends = np.concatenate([s.row_ends + at for at, s in listed] or [empty])
    lists = np.array([(s.span[0] + at, s.span[1] + at) for at, s in listed], np.int64)
    lists = lists.reshape(-1, 2)
    envelope_chars, envelope_extra = counts.chars(starts, ends), counts.extra(starts, ends)
    # the rows list emptied: its text out, '[]' in (a response that is the list: '[]')
    envelope_chars[has_rows] += 2 - counts.chars(lists[:, 0], lists[:, 1])
    envelope_extra[has_rows] -= counts.extra(lists[:, 0], lists[:, 1])
    whole = np.array([s.rows_key == "$" for s in found], dtype=bool)
    envelope_chars[whole], envelope_extra[whole] = 2, 0
    # the markdown estimate reads each list's first rows
    read = np.minimum(row_count, MARKDOWN_ROWS)
    owner = np.repeat(np.arange(len(listed)), read)
    first_row = np.cumsum(row_count) - row_count
    pick = np.arange(len(owner)) - np.repeat(np.cumsum(read) - read, read) + first_row[owner]
    markdown = counts.markdown(owner, row_starts[pick], row_ends[pick], row_count, len(listed))
    by_payload: list[int | None] = [None] * len(found)
    for k, index in enumerate(np.flatnonzero(has_rows).tolist()):
        by_payload[index] = markdown[k]
    return _Chunk(
        [s.rows_key for s in found],
        by_payload,
        has_rows,
        row_count,
        counts.chars(row_starts, row_ends),
        counts.extra(row_starts, row_ends),
        envelope_chars,
        envelope_extra,
    )


def _table(keys: pa.Table, chunks: list[_Chunk]) -> pa.Table:
    """The sized payloads' rows of RESULT_SCHEMA."""

    def joined(name: str, kind: type = np.int64) -> np.ndarray:
        return np.concatenate([getattr(c, name) for c in chunks] or [np.empty(0, kind)])

    has_rows = joined("has_rows", bool)
    row_count = np.zeros(len(has_rows), np.int64)
    row_count[has_rows] = joined("row_count")
    offsets = np.concatenate(([0], np.cumsum(row_count))).astype(np.int32)
    # (store/arrow.py's builders: pyarrow's import pandas, 43 MB of every ingest)
    nulls = numeric(~has_rows, pa.bool_())

    def lists(values: np.ndarray) -> pa.Array:
        return pa.ListArray.from_arrays(
            numeric(offsets, pa.int32()), numeric(values, pa.int32()), mask=nulls
        )

    markdown = [m for c in chunks for m in c.markdown]
    columns = {
        "row_count": numeric(row_count, pa.int32(), valid=has_rows),
        "rows_key": column([k for c in chunks for k in c.rows_key], pa.string()),
        "row_chars": lists(joined("row_chars")),
        "row_extra": lists(joined("row_extra")),
        "envelope_chars": numeric(joined("envelope_chars"), pa.int64()),
        "envelope_extra": numeric(joined("envelope_extra"), pa.int64()),
        "markdown_chars": numeric(np.array([m or 0 for m in markdown], np.int64), pa.int64(),
                                  valid=np.array([m is not None for m in markdown], bool)),
    }
    for name, array in columns.items():
        keys = keys.append_column(name, array)
    return keys.cast(RESULT_SCHEMA)
