"""JSON text walked by its brackets, without parsing it: where a value ends and how deep a
place is, for readers that keep what they can of a list json cannot read whole (cut
short, or one element nested too deeply or holding a number too long). Python's json
parses recursively, so a walk is the way past an element it refuses."""

from __future__ import annotations


def after_space(text: str, pos: int) -> int:
    """The first position from `pos` that is not JSON's whitespace."""
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


def value_end(text: str, start: int) -> int | None:
    """Where the JSON value at `start` ends, found by its brackets outside strings;
    None when the text ends first."""
    depth, in_string, escaped = 0, False, False
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 0:
                    return pos + 1
        elif ch == '"':
            in_string = True
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
    depth, in_string, escaped = 0, False, False
    for ch in text[:end]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth
