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

import functools
import json
import re
import shlex
from collections.abc import Callable

from .errors import ForensicsError

# embedding, override and isolate controls, and the marks (UAX #9)
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# every other format character too (Unicode's category Cf: tests/test_hardening.py holds
# the list whole for this Python): zero-width spaces and joiners, word joiners, U+FEFF,
# and the tag characters U+E0000-E007F that hide text from a reader ("ASCII smuggling"
# of instructions): a forensics tool shows what was there. The ranges are taken whole,
# code points not yet assigned in them too (a newer Unicode's are as invisible).
_FORMAT = "".join(
    chr(c)
    for c in (
        0x00AD, *range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x180E,
        *range(0x200B, 0x2010), *range(0x2060, 0x2070), 0xFEFF, *range(0xFFF0, 0xFFFC),
        0x110BD, 0x110CD, *range(0x13430, 0x13440), *range(0x1BCA0, 0x1BCA4),
        *range(0x1D173, 0x1D17B), *range(0xE0000, 0xE1000),
    )
)  # fmt: skip
# and the characters that show nothing and are no format character: the combining
# grapheme joiner, Hangul's fillers, Mongolian's and Khmer's invisible signs (and, in
# U+E0000-E0FFF above, the variation selectors past the sixteenth, which carry bytes
# hidden behind an emoji; VS1-16 are left, as emoji's own presentation selectors)
_INVISIBLE = "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
_HIDDEN = "\u2028\u2029" + BIDI_CONTROLS + _FORMAT + _INVISIBLE
# and lone surrogates (a range of the patterns, never in a column: Arrow holds none): a
# byte of a name given that no encoding decodes, which no terminal can be sent as text
_SURROGATES = "".join(map(chr, range(0xD800, 0xE000)))


def _char_class(chars: str) -> str:
    """A regular expression's class of `chars`, as ranges of code points: Python's `re`
    tests a character against a list of single characters one by one (the class of the
    4,000 hidden ones took 70 µs a line of 35 characters), against ranges at once."""
    codes = sorted(set(map(ord, chars)))
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "[" + "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    ) + "]"


_C0_C1 = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)]))
_UNSAFE = re.compile(_char_class(_C0_C1 + _HIDDEN + _SURROGATES))
_UNSAFE_KEEP_NL = re.compile(_char_class(_C0_C1.replace("\n", "") + _HIDDEN + _SURROGATES))
_UNSAFE_KEEP_WS = re.compile(
    _char_class(_C0_C1.replace("\n", "").replace("\t", "") + _HIDDEN + _SURROGATES)
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, *, keep_newlines: bool = False, keep_tabs: bool = False) -> str:
    """`text` with control, bidi and invisible format characters shown as escapes
    (`\\x1b`, `\\u202e`, `\\U000e0041`); newlines (and tabs) kept when asked."""
    if keep_tabs:
        pattern = _UNSAFE_KEEP_WS
    else:
        pattern = _UNSAFE_KEEP_NL if keep_newlines else _UNSAFE
    return pattern.sub(_escape, text)


# what json.dumps(ensure_ascii=False) leaves raw (it escapes C0 itself; the rest of
# the document's raw newlines are its own layout)
_UNSAFE_IN_JSON = re.compile(
    _char_class(_C0_C1[0x20:] + "\u2028\u2029" + BIDI_CONTROLS + _FORMAT + _INVISIBLE
                + _SURROGATES)
)  # fmt: skip


def json_safe(encoded: str) -> str:
    """JSON text whose strings hold the exact data, with the characters a terminal would
    act on written as `\\uXXXX` escapes (json.dumps with ensure_ascii=False leaves bidi
    controls and C1 controls raw)."""
    if encoded.isascii() and "\x7f" not in encoded:  # the common case, checked in C
        return encoded
    return _UNSAFE_IN_JSON.sub(_json_escape, encoded)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes an astral character as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _changed(escape: Callable[[str], str]) -> dict[str, str]:
    # every character either rule can touch is in C0, DEL, C1 or _HIDDEN, or is one of
    # JSON's own two (`"`, `\`)
    candidates = [chr(c) for c in range(0xA0)] + sorted(set(_HIDDEN))
    return {c: e for c in candidates if (e := escape(c)) != c}


def shell_word(text: str) -> str:
    """`text` as one word of a command a user can copy into a shell: quoted as shlex
    quotes it, or, when it holds a character `visible` shows as an escape (a control,
    newline, bidi or invisible one), in the $'...' form of bash and zsh with each such
    character escaped: printable, and read back by the shell as the text itself (a lone
    surrogate, a file name's byte no encoding decodes, as that byte)."""
    if visible(text) == text:
        return shlex.quote(text)
    out = []
    for char in text:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif visible(char) == char:
            out.append(char)
        elif code < 0x80 or 0xDC80 <= code <= 0xDCFF:  # (a byte: \xHH is the byte itself)
            out.append(f"\\x{code & 0xFF:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "$'" + "".join(out) + "'"


def one_line(text: str) -> str:
    """A message of several lines (a driver's, a server's: `DETAIL:`, `LINE 1:`) as one,
    as every error is printed: its lines, stripped, joined by "; "."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def visible_escapes(*, keep_newlines: bool = False, keep_tabs: bool = False) -> dict[str, str]:
    """What `visible` writes for each character it escapes, for writers that replace them
    all at once (a column at a time) instead of a string at a time."""
    return _changed(
        functools.partial(visible, keep_newlines=keep_newlines, keep_tabs=keep_tabs)
    )


def json_escapes() -> dict[str, str]:
    """Each character a JSON string of this project's output escapes, and its escape:
    json.dumps(ensure_ascii=False)'s (quote, backslash, C0) and json_safe's."""
    return _changed(lambda c: json_safe(json.dumps(c, ensure_ascii=False)[1:-1]))


def encodable(text: str | None) -> bool:
    """Text UTF-8 can hold: no lone surrogate (a byte of a file's name that no encoding
    decodes, which Python keeps as U+DC80-U+DCFF, or an escape json read)."""
    if text is None or text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


UTF16 = "UTF-16 text, not UTF-8: save it as UTF-8"


def looks_utf16(data: bytes) -> bool:
    """A file's bytes are UTF-16's, as Windows tools write it: a byte order mark, or every
    other byte of its head NUL (valid UTF-8 then, which JSON is not)."""
    head = data[:64]
    return head.startswith((b"\xff\xfe", b"\xfe\xff")) or (
        len(head) >= 8 and head.count(0) * 3 >= len(head)
    )


def not_utf8(error: UnicodeDecodeError) -> str:
    """Why a file's bytes are not UTF-8 text, as a skip or an error says it (UTF-16 named,
    with what to do)."""
    data = bytes(error.object)
    if looks_utf16(data):
        return UTF16
    return f"not UTF-8 text (a binary file?): byte {error.start:,} is {data[error.start]:#04x}"


def storable(text: str) -> str:
    """Text UTF-8 can hold, for the store: each lone surrogate (`encodable`) written as
    its escape, `\\udcff`, so that the name can still be found."""
    if encodable(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def require_utf8_name(
    path: object, doing: str, by: str, hint: str, error: type[ForensicsError] = ForensicsError
) -> None:
    """`error` when `path`, a file or folder that DuckDB or Arrow must open by its name,
    holds a byte that no encoding decodes (`encodable`): they take UTF-8 names only.
    `doing`: what could not be done, `{}` where the path (escaped) goes; `by`: who opens
    it ("DuckDB opens a store")."""
    text = str(path)
    if not encodable(text):
        raise error(
            f"cannot {doing.format(storable(text))}: {by} by a UTF-8 name only, and this one "
            "holds a byte that no encoding decodes",
            hint=hint,
        )
