"""`--query` files: one read-only SELECT each, refused otherwise, before anything connects.

A small tokenizer of PostgreSQL's lexical rules (comments, nested block comments,
quoted strings and identifiers, dollar quotes) so that a word inside a string or a
comment never counts, and a statement separator inside one never splits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import ForensicsError
from .lookups import Lookup

_REFUSED_WORDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "INTO", "TRUNCATE", "COPY"}


class QueryFileError(ForensicsError):
    """A --query file that cannot be explained safely."""


def read_query_file(path: Path) -> Lookup:
    """A --query file as a lookup, refused unless it is one read-only SELECT statement."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QueryFileError(f"query file {path}: cannot read it: {e}") from e
    statement = _single_select(text, path)
    return Lookup(f"query:{path.name}", "query", statement, path=path)


_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>--[^\n]*)
    | (?P<block>/\*)
    | (?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)
    | (?P<string>[EeBbXxNn]?'(?:[^'\\]|\\.|'')*'|[Uu]&'(?:[^']|'')*')
    | (?P<ident>[Uu]&"(?:[^"]|"")*"|"(?:[^"]|"")*")
    | (?P<semi>;)
    | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    | (?P<quote>['"])
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def _tokens(text: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """(kind, text, end offset) of each SQL token, comments and quoted text skipped over."""
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None  # `other` matches any character
        kind, value, pos = m.lastgroup or "other", m.group(), m.end()
        if kind == "block":  # block comments nest in PostgreSQL
            depth = 1
            while depth:
                nxt = re.compile(r"/\*|\*/").search(text, pos)
                if nxt is None:
                    raise QueryFileError(f"query file {path}: unterminated /* comment")
                depth += 1 if nxt.group() == "/*" else -1
                pos = nxt.end()
            continue
        if kind == "dollar":
            end = text.find(value, pos)
            if end < 0:
                raise QueryFileError(f"query file {path}: unterminated {value} quoted string")
            pos = end + len(value)
            kind = "string"
        if kind == "quote":
            line = text.count("\n", 0, pos) + 1
            raise QueryFileError(f"query file {path}, line {line}: unterminated {value} quote")
        if kind not in ("ws", "comment"):
            yield kind, value, pos


def _single_select(text: str, path: Path) -> str:
    """The one SELECT/WITH statement in `text`, without its `;`, or QueryFileError."""
    statements: list[list[tuple[str, str, int]]] = [[]]
    for token in _tokens(text, path):
        if token[0] == "semi":
            statements.append([])
        else:
            statements[-1].append(token)
    statements = [s for s in statements if s]
    hint = "a query file holds exactly one SELECT (or WITH ... SELECT), without parameters"
    if not statements:
        raise QueryFileError(f"query file {path}: holds no SQL statement", hint=hint)
    if len(statements) > 1:
        raise QueryFileError(
            f"query file {path}: refused: holds {len(statements)} statements, not one",
            hint=hint,
        )
    statement = statements[0]
    words = [value.upper() for kind, value, _ in statement if kind == "word"]
    first = words[0] if words and statement[0][0] == "word" else statement[0][1]
    if first not in ("SELECT", "WITH"):
        raise QueryFileError(
            f"query file {path}: refused: a {first} statement; only SELECT or WITH ... SELECT "
            "is explained",
            hint=hint,
        )
    bad = [w for w in words if w in _REFUSED_WORDS]
    bad += [
        f"FOR {b}" for a, b in zip(words, words[1:], strict=False) if a == "FOR" and b == "SHARE"
    ]
    if bad:
        raise QueryFileError(
            f"query file {path}: refused: it contains {bad[0]} (writes, creates or locks rows); "
            "only a read-only SELECT is explained",
            hint=hint,
        )
    return text[: statement[-1][2]].strip()
