"""What a token cap would do to a result's anchors (store schema 12): the strings a later
call reproduced from it (forensics/families/claude_code/anchors.py), cut or kept by two
ways of bringing a result over the cap down to it, with the same budget:

- **head/tail truncation**: the result's first and last halves of the budget are kept
  (the budget is the cap's share of the result: its UTF-8 bytes times the cap over the
  guard's estimate of the whole result); an anchor survives when every line or word of
  it found in the result lies inside one of them;
- **anchor-preserving elision**: the lines that hold anchors are kept whole, the anchor
  whose lines take fewest bytes first (then by place), while they and a marker for each
  run of lines elided (ELISION_MARKER, naming the bytes and how to get them back) fit the
  budget; the rest is elided. An anchor that does not fit is cut with its lines.

The elision knows which lines later calls reproduced: hindsight a live guard does not
have. It keeps whole lines and pays for its markers, so it is not always better: an
anchor word on a long line (a result of one line of JSON), or anchors far apart in a
small budget, can survive head/tail and not the elision. A result within the cap is
kept whole both ways.
A result of a session not searched for anchors (any family but Claude Code, or read
before store schema 12) has its anchors unknown (null), never none.
"""

from __future__ import annotations

import polars as pl

ELISION_MARKER = "[... {gone} bytes elided ({start}-{end}): ask for them again ...]"
_KEY = ["app_name", "user_id", "session_id", "function_call_id"]


def _marker(start: int, end: int) -> int:
    """Bytes of the marker that stands for [start, end) (ASCII: bytes are characters)."""
    return len(ELISION_MARKER.format(gone=end - start, start=start, end=end)) + 1


def elided_size(lines: list[tuple[int, int]], size: int) -> int:
    """Bytes of a result of `size` bytes cut to `lines` ([start, end), sorted, disjoint):
    each line and its newline, and a marker (with its newline) for each run elided."""
    total, at = 0, 0
    for start, end in lines:
        if start > at:
            total += _marker(at, start)
        total += end - start + 1
        at = end + 1
    if at < size:
        total += _marker(at, size)
    return total


Piece = tuple[int, int, int, int]  # a key's [start, end) in the result, and its line's


def cut_anchors(
    anchors: list[list[Piece]], size: int, guard_tokens: int, token_cap: int
) -> tuple[int, int]:
    """How many of one result's anchors (each its pieces: where each key is, and its
    line) head/tail truncation and the anchor-preserving elision cut, at `token_cap`."""
    if guard_tokens <= token_cap:
        return 0, 0
    budget = size * token_cap // guard_tokens
    tail = budget // 2
    head, tail_from = budget - tail, size - tail
    truncated = sum(
        1 for pieces in anchors
        if not all(e <= head or s >= tail_from for s, e, _, _ in pieces)
    )  # fmt: skip
    lines = [sorted({(ls, le) for _, _, ls, le in pieces}) for pieces in anchors]
    kept: set[tuple[int, int]] = set()
    elided = 0
    for spans in sorted(lines, key=lambda spans: (sum(e - s + 1 for s, e in spans), spans)):
        trial = kept.union(spans)
        if elided_size(sorted(trial), size) <= budget:
            kept = trial
        else:
            elided += 1
    return truncated, elided


def anchor_figures(
    results: pl.DataFrame,
    anchors: pl.DataFrame,
    searched: pl.DataFrame,
    token_cap: int | None,
) -> pl.DataFrame:
    """Per result of `results` (its key and guard_tokens): ANCHOR_COLUMNS. `anchors` are
    the stored rows of its sessions, `searched` those sessions searched for them."""
    found: dict[tuple[str, ...], list[list[Piece]]] = {}
    sizes: dict[tuple[str, ...], int] = {}
    for row in anchors.iter_rows(named=True):
        key = tuple(row[k] for k in _KEY)
        found.setdefault(key, []).append(list(zip(
            row["key_starts"], row["key_ends"], row["line_starts"], row["line_ends"],
            strict=True)))  # fmt: skip
        sizes[key] = row["result_bytes"]
    tokens = {
        tuple(r[:4]): r[4]
        for r in results.select(*_KEY, "guard_tokens").iter_rows()
        if tuple(r[:4]) in found
    } if found else {}  # fmt: skip
    rows = []
    for key, spans in found.items():
        guard_tokens = tokens.get(key)
        cut = None if token_cap is None or guard_tokens is None \
            else cut_anchors(spans, sizes[key], guard_tokens, token_cap)  # fmt: skip
        rows.append((*key, len(spans), *(cut or (None, None))))
    schema: dict[str, pl.DataType] = {k: pl.String() for k in _KEY}
    schema |= {"n": pl.Int64(), "truncated": pl.Int64(), "elided": pl.Int64()}
    figures = pl.DataFrame(rows, schema=schema, orient="row")
    frame = (
        results.select(*_KEY, "guard_tokens")
        .join(searched.select(_KEY[:3]).unique().with_columns(pl.lit(True).alias("searched")),
              on=_KEY[:3], how="left")
        .join(figures, on=_KEY, how="left")
    )  # fmt: skip
    searched_ = pl.col("searched").fill_null(False)
    sized = searched_ & pl.lit(token_cap is not None) & pl.col("guard_tokens").is_not_null()
    n = pl.col("n").fill_null(0)
    return frame.select(
        *_KEY,
        pl.when(searched_).then(n).alias("anchors"),
        pl.when(sized).then(pl.col("truncated").fill_null(0)).alias("anchors_cut_head_tail"),
        pl.when(sized).then(n - pl.col("truncated").fill_null(0))
        .alias("anchors_preserved_head_tail"),
        pl.when(sized).then(pl.col("elided").fill_null(0)).alias("anchors_cut_elision"),
        pl.when(sized).then(n - pl.col("elided").fill_null(0))
        .alias("anchors_preserved_elision"),
    ).unique(subset=_KEY, keep="first", maintain_order=True)  # fmt: skip
