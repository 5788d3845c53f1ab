"""Counted nouns in the sentences the tool prints: "1 session", "2 sessions"; lists
joined."""

from __future__ import annotations

from collections.abc import Iterable


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` (digits grouped) and `noun`, plural unless the count is one."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def union_of(lists: Iterable[str | None], sep: str = ", ") -> str:
    """The distinct items of `sep`-joined lists (a column such as `rules_range`, empty
    ones passed over), sorted, joined again."""
    return sep.join(sorted({item for joined in lists if joined for item in joined.split(sep)}))
