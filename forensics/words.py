"""Counted nouns in the sentences the tool prints: "1 session", "2 sessions"."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` (digits grouped) and `noun`, plural unless the count is one."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
