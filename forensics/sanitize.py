"""Text that came from data, made safe to show: one rule for every output.

Agent text, tool names, ids and error messages are data: they may hold terminal
escape sequences (ESC ] 0; sets a window title, OSC 52 writes the clipboard), NUL or
BEL bytes, or bidirectional controls (U+202E turns "900" into "009" in whatever
sentence they are put in). Every control character and every bidi control is shown
as an escape (`\\x1b`, `\\u202e`), so it can be seen and can do nothing. Tables, CSV,
hints and the HTML report use `visible`; the HTML report also isolates each value in
`<bdi>` so that right-to-left text stays right-to-left without turning the report's
own sentences around. JSON keeps the exact text, with these characters escaped by
the encoder.
"""

from __future__ import annotations

import re

# embedding, override and isolate controls, and the marks (UAX #9)
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")
_UNSAFE_KEEP_NL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with control and bidi characters shown as escapes (`\\x1b`, `\\u202e`)."""
    pattern = _UNSAFE_KEEP_NL if keep_newlines else _UNSAFE
    return pattern.sub(_escape, text)


# what json.dumps(ensure_ascii=False) leaves raw (it escapes C0 itself; the rest of
# the document's raw newlines are its own layout)
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")


def json_safe(encoded: str) -> str:
    """JSON text whose strings hold the exact data, with the characters a terminal would
    act on written as `\\uXXXX` escapes (json.dumps with ensure_ascii=False leaves bidi
    controls and C1 controls raw)."""
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def is_unsafe(text: str) -> bool:
    return _UNSAFE.search(text) is not None
