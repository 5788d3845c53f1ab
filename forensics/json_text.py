"""JSON text walked by its brackets, without parsing it: where a value ends and how deep a
place is, for readers that keep what they can of a list json cannot read whole (cut
short, or one element nested too deeply or holding a number too long). Python's json
parses recursively, so a walk is the way past an element it refuses."""

from __future__ import annotations

from collections.abc import Iterator


def after_space(text: str, pos: int) -> int:
    """The first position from `pos` that is not JSON's whitespace."""
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def outside_strings(
    text: str, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, str]]:
    """Each character of text[start:stop] outside JSON strings, with each string's opening
    and closing quote (its contents passed over)."""
    in_string = escaped = False
    for pos in range(start, len(text) if stop is None else stop):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                yield pos, ch
            continue
        in_string = ch == '"'
        yield pos, ch


def value_end(text: str, start: int) -> int | None:
    """Where the JSON value at `start` ends, found by its brackets outside strings;
    None when the text ends first."""
    depth = quotes = 0
    for pos, ch in outside_strings(text, start):
        if ch == '"':
            quotes += 1
            if depth == 0 and quotes == 2:  # a string's own closing quote
                return pos + 1
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            if depth == 0:  # the list's own end, after a bare number
                return pos
            depth -= 1
            if depth == 0:
                return pos + 1
        elif depth == 0 and (ch == "," or ch.isspace()):
            return pos
    return None


def depth_at(text: str, end: int) -> int:
    """How many objects and lists are open at `end` (outside strings), from the text's
    start: 1 inside a top-level object's own members."""
    depth = 0
    for _, ch in outside_strings(text, 0, end):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth
