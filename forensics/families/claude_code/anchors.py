"""Anchors: the verbatim strings a later call reproduced from a tool result.

An agent that edits a file sends back text it read, verbatim: Claude Code's Edit and
MultiEdit `old_string` must match the file exactly, so a guard that cut the result the
agent copied it from makes the edit fail (the second founding study: patch application
fell from 27/40 to 15/40 with those strings cut). While a session is read, this module
finds, for each tool result, the strings of at least MIN_CHARS characters that a later
tool call's arguments or the model's later text reproduced from it (docs/whatif.md,
"Anchors"):

- a result is indexed by its lines (trimmed of white space and of the line number
  Claude Code's Read puts before each: `    12→`, or digits and a tab) and by its words
  (runs without white space, quotes, brackets, commas or semicolons);
- a later string (each string in a tool call's arguments, each text block of a model
  response) is looked up by its lines, its words and its `backticked` spans, trimmed
  the same way;
- a hit belongs to the most recent result of the same thread (the conversation the
  model saw) that holds it, read before the response that reproduced it began, and
  since the thread's last compaction (a result compacted away is no longer there to
  copy from); a string the thread had sent itself before (a prompt, the model's own
  earlier output) is not reproduced from a result and is not counted;
- one later string's hits in one result are one anchor, placed by where its keys are in
  the result and by the lines that hold them (byte offsets in its UTF-8 text).

So a string is found when it is a whole line or a whole word of the result, not a
fragment of a line that is neither. The index keeps hashes, not text: the last
GENERATION_KEYS to 2 x GENERATION_KEYS keys (two generations; the older goes when the
newer fills), some tens of context windows of results, so a session of any length is
read in bounded memory (a result adds MAX_RESULT_KEYS keys at most: its first). Results
are scanned as bytes (one regular expression for the lines, numpy for the words, a
megabyte at a time), the keys hashed and inserted by C loops: on generated transcripts
that is about half again the reader's own CPU (docs/claude-code.md).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

MIN_CHARS = 20  # characters of a reproduced string, at least (15 or more: _words)
GENERATION_KEYS = 1 << 18  # keys of one generation of the index (and of the thread's own)

# a line of at least MIN_CHARS bytes, trimmed of white space and of a Read line number
# (once taken, a number is not given back to make the rest long enough): group 1
_LINE = re.compile(
    rb"^(?>[^\S\n]*(?:\d+(?:\xe2\x86\x92|\t))?)[^\S\n]*(\S[^\n]{%d,}\S)[^\S\n]*$"
    % (MIN_CHARS - 2),
    re.M,
)
_DELIMITERS = b" \t\n\r\x0b\x0c\"'`()[]{}<>,;"
_WORD = re.compile(rb"[^\s\"'`()\[\]{}<>,;]{%d,}" % MIN_CHARS)  # the same words, for short text
_DELIMITER_AT = re.compile(rb"[\s\"'`()\[\]{}<>,;]")
# each byte as 1 (a delimiter) or 0, for bytes.translate
_MARKS = bytes(int(code in _DELIMITERS) for code in range(256))
WORD_CHUNK = 1 << 20  # bytes of a result whose words numpy finds at once (8 bytes a word edge)
# keys of one result, at most (its lines' first, then its words'): a result of many
# megabytes of words is indexed by its first GENERATION_KEYS, so memory stays bounded
MAX_RESULT_KEYS = GENERATION_KEYS


def _long(key: bytes) -> bool:
    """At least MIN_CHARS characters (a key of MIN_CHARS bytes may be fewer)."""
    return key.isascii() or len(key.decode("utf-8", "replace")) >= MIN_CHARS


@dataclass
class _Keys:
    """A result's keys, in order, and for each its own [start, end) and its line's."""

    keys: list[bytes] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    line_starts: list[int] = field(default_factory=list)
    line_ends: list[int] = field(default_factory=list)


def _result_keys(data: bytes) -> _Keys:
    """A result's keys: its lines', then its words' (MAX_RESULT_KEYS at most)."""
    found = _Keys()
    # (the spans taken at once, not five appends a line: 0.4 s of the 199 MB set's 2 s)
    spans = [(m.span(1), m.span()) for m in islice(_LINE.finditer(data), MAX_RESULT_KEYS)]
    if spans:
        keys, lines = zip(*spans, strict=True)
        found.starts, found.ends = (list(c) for c in zip(*keys, strict=True))
        found.line_starts, found.line_ends = (list(c) for c in zip(*lines, strict=True))
        found.keys = [data[a:b] for a, b in keys]
    at, size = 0, len(data)
    while at < size and size >= MIN_CHARS and len(found.keys) < MAX_RESULT_KEYS:
        end = min(at + WORD_CHUNK, size)
        if end < size:  # to the next delimiter: no word is split between two pieces
            hit = _DELIMITER_AT.search(data, end)
            end = size if hit is None else hit.start()
        first, last = _words(data[at:end])
        long = (last - first) >= MIN_CHARS
        if long.any():
            first, last = first[long] + at, last[long] + at
            codes = np.frombuffer(data, dtype=np.uint8, count=end - at, offset=at)
            room = MAX_RESULT_KEYS - len(found.keys)
            first, last = first[:room], last[:room]
            # the line around each: from the newline before it (or the start) to the next
            bounds = np.concatenate((
                [data.rfind(b"\n", 0, at)], np.flatnonzero(codes == 10) + at,
                [size if (n := data.find(b"\n", end)) < 0 else n],
            ))  # fmt: skip
            line = np.searchsorted(bounds, first, side="right")
            found.keys += [data[a:b] for a, b in zip(first.tolist(), last.tolist(), strict=True)]
            found.starts += first.tolist()
            found.ends += last.tolist()
            found.line_starts += (bounds[line - 1] + 1).tolist()
            found.line_ends += bounds[line].tolist()
        at = end
    if not data.isascii():  # a key of MIN_CHARS bytes may be fewer characters
        chosen = [i for i, key in enumerate(found.keys) if _long(key)]
        if len(chosen) < len(found.keys):
            found = _Keys(
                [found.keys[i] for i in chosen],
                [found.starts[i] for i in chosen],
                [found.ends[i] for i in chosen],
                [found.line_starts[i] for i in chosen],
                [found.line_ends[i] for i in chosen],
            )
    return found


def _words(piece: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The [first, last) of each run of non-delimiters of `piece` 15 bytes or longer
    (MIN_CHARS is more), and of some shorter ones, in order. Looked for 8 bytes at a
    time: the bytes marked 1 (a delimiter) or 0 and read as 64-bit words, a run of zero
    words is the middle of one run of non-delimiters, which begins after the last
    delimiter of the word before and ends at the first of the word after (a run of 15
    bytes holds a whole word however it falls). A byte at a time, the edges were 15
    million on the 87 MB of tool results of the 199 MB benchmark set: three times the
    time (0.46 s to 0.155 s)."""
    marks = piece.translate(_MARKS)
    # a word of delimiters before and after, and the last one filled with them
    padded = b"\x01" * 8 + marks + b"\x01" * (8 + -len(marks) % 8)
    words = np.frombuffer(padded, dtype="<u8")
    zero = words == 0
    edges = np.flatnonzero(zero[1:] != zero[:-1]) + 1
    runs_from, runs_to = edges[0::2], edges[1::2]
    before, after = words[runs_from - 1], words[runs_to]
    # a word's highest (lowest) byte marked 1: the last (first) delimiter in it. Its bit
    # by log2: a sum of powers of 256 rounds to a float below the next power of two.
    last_before = np.log2(before.astype(np.float64)).astype(np.int64) >> 3
    lowest = after & (~after + np.uint64(1))  # (its lowest bit alone)
    first_after = np.log2(lowest.astype(np.float64)).astype(np.int64) >> 3
    # (less the word of delimiters put before)
    return 8 * runs_from - 16 + last_before + 1, 8 * runs_to - 8 + first_after


def later_keys(text: str) -> set[bytes]:
    """The keys a later string is looked up by: its lines, its words, and the pieces of its
    lines between backticks (`quoted code` in a model's text), trimmed."""
    data = text.encode("utf-8", "surrogatepass")
    found = {m.group(1) for m in _LINE.finditer(data)}
    found.update(_WORD.findall(data))
    if b"`" in data:
        for line in data.split(b"\n"):
            found.update(piece.strip() for piece in line.split(b"`")[1:])
    return {k for k in found if len(k) >= MIN_CHARS and _long(k)}


_Piece = tuple[int, int, int, int]  # a key's [start, end) in the result, and its line's


@dataclass
class _Result:
    number: int  # in its thread, from 0
    call_id: str
    tool: str
    size: int  # bytes of its UTF-8 text
    serial: int  # its first key's serial
    # each key's place (8 bytes a figure, not a Python int's 32)
    starts: array[int]
    ends: array[int]
    line_starts: array[int]
    line_ends: array[int]


@dataclass
class _Generation:
    keys: dict[int, int] = field(default_factory=dict)  # hash -> serial
    serials: list[int] = field(default_factory=list)  # each result's first serial
    results: list[_Result] = field(default_factory=list)

    def find(self, serial: int) -> tuple[_Result, _Piece]:
        result = self.results[bisect_right(self.serials, serial) - 1]
        at = serial - result.serial
        return result, (result.starts[at], result.ends[at], result.line_starts[at],
                        result.line_ends[at])  # fmt: skip


@dataclass
class _Anchor:
    result: _Result
    event_id: str
    by_call_id: str | None
    by_tool: str | None
    argument: str  # its name, or `text`
    pieces: dict[_Piece, None] = field(default_factory=dict)
    size: int = 0  # bytes of the keys that hit


class AnchorIndex:
    """One thread's tool results, indexed as they are read, and the anchors found."""

    def __init__(self) -> None:
        self.generations = [_Generation(), _Generation()]  # the newer first
        self.own: list[set[int]] = [set(), set()]  # hashes of what the thread sent itself
        self.results = 0  # results read
        self.serial = 0
        self.pending: set[int] = set()  # what the response being read sent
        self.strings = 0  # strings of the response being read, looked up
        self.open = False  # a response is being read
        self.queued: list[tuple[str, str, str]] = []  # results read while it was
        self.anchors: dict[tuple[int, str, int], _Anchor] = {}

    def result(self, call_id: str | None, tool: str, text: str) -> None:
        """A tool result, read: its lines and words become keys of the newer generation,
        once the response being read (if any) is complete: the response was written
        before a result its tools returned while it streamed."""
        if call_id is None:
            return
        if self.open:
            self.queued.append((call_id, tool, text))
        else:
            self._index(call_id, tool, text)

    def _index(self, call_id: str, tool: str, text: str) -> None:
        newer = self.generations[0]
        if len(newer.keys) >= GENERATION_KEYS:
            newer = _Generation()
            self.generations = [newer, self.generations[0]]
        data = text.encode("utf-8", "surrogatepass")
        found = _result_keys(data)
        result = _Result(self.results, call_id, tool, len(data), self.serial,
                         *(array("q", c) for c in (found.starts, found.ends, found.line_starts,
                                                   found.line_ends)))  # fmt: skip
        self.results += 1
        newer.serials.append(self.serial)
        newer.results.append(result)
        keys = found.keys
        n = len(keys)
        if n:
            keys.reverse()  # a key's first place in the result is the one kept
            newer.keys.update(zip(map(hash, keys), range(self.serial + n - 1, self.serial - 1, -1),
                                  strict=True))  # fmt: skip
        self.serial += n

    def began(self) -> None:
        """A response begins: results read from now on are indexed once it is complete."""
        self.open = True
        self.strings = 0

    def compacted(self) -> None:
        """A compaction: the results before it are no longer in the thread's window."""
        self.responded()
        self.generations = [_Generation(), _Generation()]

    def sent(self, text: str) -> None:
        """Text the thread sent itself (a prompt, a summary): its strings are not anchors."""
        self._own({hash(k) for k in later_keys(text)})

    def _own(self, hashes: set[int]) -> None:
        if len(self.own[0]) >= GENERATION_KEYS:
            self.own = [set(), self.own[0]]
        self.own[0].update(hashes)

    def reproduced(
        self,
        values: list[tuple[str, str]],
        event_id: str,
        by_call_id: str | None,
        by_tool: str | None,
    ) -> None:
        """Look up the (field, string) `values` of one block of the response being read (a
        tool call's arguments, or a text), each string an anchor of each result it hits;
        what the response sent becomes the thread's own when it is complete
        (`responded`)."""
        newer, older = self.generations
        for name, text in values:
            self.strings += 1
            for key in later_keys(text):
                h = hash(key)
                self.pending.add(h)
                if h in self.own[0] or h in self.own[1]:
                    continue
                serial = newer.keys.get(h)
                generation = newer
                if serial is None:
                    serial, generation = older.keys.get(h), older
                    if serial is None:
                        continue
                result, piece = generation.find(serial)
                slot = (result.number, event_id, self.strings)
                anchor = self.anchors.get(slot)
                if anchor is None:
                    anchor = _Anchor(result, event_id, by_call_id, by_tool, name)
                    self.anchors[slot] = anchor
                if piece not in anchor.pieces:
                    anchor.pieces[piece] = None
                    anchor.size += len(key)

    def responded(self) -> None:
        """The response being read is complete: what it sent is the thread's own now, and
        the results read while it was are indexed."""
        self._own(self.pending)
        self.pending = set()
        self.open = False
        queued, self.queued = self.queued, []
        for call_id, tool, text in queued:
            self._index(call_id, tool, text)

    def rows(self) -> list[dict[str, Any]]:
        """The anchors found, per result in order of reading (the store's `anchors` rows
        without the session's key and the anchor's index), and forget them."""
        found = sorted(self.anchors.values(), key=lambda a: a.result.number)
        self.anchors = {}
        rows = []
        for anchor in found:
            pieces = sorted(anchor.pieces)
            rows.append(
                {
                    "function_call_id": anchor.result.call_id,
                    "tool_name": anchor.result.tool,
                    "event_id": anchor.event_id,
                    "by_call_id": anchor.by_call_id,
                    "by_tool": anchor.by_tool,
                    "field": anchor.argument,
                    "result_bytes": anchor.result.size,
                    "anchor_bytes": anchor.size,
                    "key_starts": [p[0] for p in pieces],
                    "key_ends": [p[1] for p in pieces],
                    "line_starts": [p[2] for p in pieces],
                    "line_ends": [p[3] for p in pieces],
                }
            )
        return rows


def strings(value: Any, name: str) -> list[tuple[str, str]]:
    """The strings of a tool call's arguments, each with the name of the argument that holds
    it (the innermost key: MultiEdit's `edits[i].old_string` is `old_string`)."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(value, name)]
    while stack:
        item, key = stack.pop()
        if isinstance(item, str):
            if len(item) >= MIN_CHARS:
                found.append((key, item))
        elif isinstance(item, dict):
            stack.extend((v, str(k)) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, key) for v in reversed(item))
    return found
