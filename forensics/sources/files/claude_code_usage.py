"""The usage lines of Claude Code transcripts, read straight from the files: what
ccusage's question (usage and cost by day or session) needs, without an ingest.

An ingest reads every line of a conversation (prompts, tool results, the windows they
make). ccusage's totals need only the lines that record a model request's usage, so
this reads each file's bytes, finds the lines holding a `"usage"` key by a byte search,
and parses those alone; each is read by the ingest's own functions (transcript.py:
`read_line`, `call_detail`, `failure_detail`), so a line it reads gives the row the
ingest keeps of it in `transcript_events`. It differs from an ingest in what it does not
read:

- a response is its lines of one file, thread side (main or sidechain) and id, where
  the ingest's reader tells its responses apart by what comes between their lines: a
  response whose id comes again after another response, a prompt or a compaction is
  one entry here (its largest usage) and two there, of which the ingest keeps the
  first and drops the repeat;
- a line without a `"usage"` key is not parsed, so a malformed one is not a skip here.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import cache
from io import BufferedReader
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ...errors import stops_held, waited, worker_pool
from ...families.claude_code.transcript import (
    call_detail,
    failure_detail,
    plain_response,
    read_line,
    usage_counts,
    usage_total,
)
from ...sanitize import storable
from .claude_code_layout import DEFAULT_USER, Discovery, SessionFiles, no_sessions

if TYPE_CHECKING:
    import pyarrow as pa

MARKER = b'"usage"'
_MARKER = re.compile(re.escape(MARKER))  # a compiled search scans faster than bytes.find
# the columns of transcript_events that queries/cost/ccusage.sql reads, and their types
# (transcript_events', tests/test_ccusage_straight.py holds them so); `line` is the
# line's byte offset in its file here, which orders the lines as their numbers do
USAGE_COLUMNS = (
    ("app_name", "string"), ("user_id", "string"), ("session_id", "string"),
    ("event_id", "string"), ("kind", "string"), ("file", "string"), ("line", "int64"),
    ("epoch", "float64"), ("message_id", "string"), ("request_id", "string"),
    ("model", "string"), ("is_sidechain", "bool"), ("speed", "string"),
    ("cost_usd", "float64"), ("input_tokens", "int64"), ("output_tokens", "int64"),
    ("cache_read_tokens", "int64"), ("cache_creation_tokens", "int64"),
    ("cache_write_5m_tokens", "int64"), ("cache_write_1h_tokens", "int64"),
)  # fmt: skip
USAGE_NAMES = tuple(name for name, _ in USAGE_COLUMNS)


@cache
def usage_schema() -> pa.Schema:
    """USAGE_COLUMNS as an Arrow schema (pyarrow imported when the rows are made, not
    before workers are forked to read them)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "bool": pa.bool_()}  # fmt: skip
    return pa.schema([(name, types[kind]) for name, kind in USAGE_COLUMNS])


@dataclass
class UsageRead:
    """What was read: the rows (usage_schema()), and the counts an output says."""

    rows: pa.Table
    files: int = 0
    bytes_read: int = 0
    lines_parsed: int = 0
    skips: list[tuple[str, str]] = field(default_factory=list)  # (file:line, why)
    kinds: Counter[str] = field(default_factory=Counter)
    passed_over: list[tuple[str, str]] = field(default_factory=list)


_TEMPLATE = dict.fromkeys(USAGE_NAMES)
_VALUES = itemgetter(*USAGE_NAMES)
PIECE = 16 << 20  # bytes read at a time: a file's memory is a piece, not the file


class _Skips:
    """Skips by place; a line's number is counted only when it is skipped, by reading the
    file again up to it (counting every line as it is read would be another pass over
    every byte, for the few lines that are skipped)."""

    def __init__(self, into: list[tuple[str, str]]):
        self.into = into
        self.path: Path | None = None
        self.name = ""
        self.start = 0  # the offset of the line being read
        self.counted = (0, 1)  # (an offset in the file, the number of its line)

    def file(self, path: Path, name: str) -> None:
        self.path, self.name, self.counted = path, name, (0, 1)

    def skip(self, locator: str, reason: str) -> None:  # noqa: ARG002 - counted here
        offset, number = self.counted
        if self.path is not None and self.start > offset:
            with self.path.open("rb") as handle:
                handle.seek(offset)
                left = self.start - offset
                while left > 0:
                    block = handle.read(min(PIECE, left))
                    if not block:
                        break
                    number += block.count(b"\n")
                    left -= len(block)
        self.counted = (self.start, number)
        self.into.append((f"{self.name}:{number}", reason))

    def event(self, row: dict[str, Any]) -> None:  # the Sink protocol; never called here
        raise AssertionError("the usage reader emits no events")

    def detail(self, row: dict[str, Any]) -> None:
        raise AssertionError("the usage reader emits no details")

    def anchor(self, row: dict[str, Any]) -> None:
        raise AssertionError("the usage reader emits no anchors")


def _line_start(handle: BinaryIO, offset: int) -> int:
    """Where the first line starting at or after `offset` starts (the file's end, when
    none does)."""
    if offset == 0:
        return 0
    handle.seek(offset - 1)
    handle.readline()
    return min(handle.tell(), os.fstat(handle.fileno()).st_size)


def _usage_lines(handle: BufferedReader, first: int = 0, last: int | None = None,
                 buffer: bytearray | None = None) -> Iterator[tuple[int, bytes]]:  # fmt: skip
    """(offset, bytes) of each line holding MARKER that starts in [first, last) of a
    file (last None: its end), read a piece at a time into `buffer` (one a batch's
    files share: the pages of a new one per file were a sixth of reading's system
    time)."""
    base, rest = _line_start(handle, first), b""
    handle.seek(base)
    data = bytearray() if buffer is None else buffer
    view = memoryview(data)
    # up to `last`, or the end the file has now, in pieces: a larger read sizes a
    # buffer it does not fill (read(PIECE) of each 237 KB file of the 199 MB set took
    # five times read()'s time); past them, the line across `last` (or what the file
    # grew by) in reads that double, so a long line is copied a few times, not once
    # a megabyte
    left = (os.fstat(handle.fileno()).st_size if last is None else last) - base
    try:
        while True:
            want = min(left, PIECE) if left > 0 else min(max(1 << 20, len(rest)), PIECE)
            if len(data) < len(rest) + want:  # grown, never shrunk: its pages stay
                view.release()
                data.extend(bytes(len(rest) + want - len(data)))
                view = memoryview(data)
            view[: len(rest)] = rest
            got = handle.readinto(view[len(rest) : len(rest) + want])
            left -= got
            size = len(rest) + got  # data[:size] is the text read
            # whole lines only, but at the end; a line longer than a piece is read whole
            cut = size if not got else data.rfind(b"\n", 0, size) + 1
            at = 0
            while at < cut:
                hit = _MARKER.search(data, at, cut)
                if hit is None:
                    break
                start = data.rfind(b"\n", 0, hit.start()) + 1
                if last is not None and base + start >= last:
                    return
                end = data.find(b"\n", hit.end(), cut)
                end = cut if end < 0 else end
                yield base + start, bytes(view[start:end])
                at = end + 1
            if not got:
                return
            base, rest = base + cut, bytes(view[cut:size])
            if last is not None and base >= last:
                return
    finally:
        view.release()


@dataclass
class _FileRead:
    """One file's part of a UsageRead: each failed request's row (a tuple in
    USAGE_NAMES' order), how many responses it put in its batch's columns (each the
    first of its largest usage in the file), with their sides and keys and those
    usages' totals where another task reads the same file (`_Task`'s `shared`), and
    what was counted on the way."""

    failed: list[tuple[Any, ...]] = field(default_factory=list)
    responses: int = 0
    sides: list[tuple[bool, str]] | None = None  # where shared
    totals: list[int] | None = None
    skips: list[tuple[str, str]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    lines_parsed: int = 0
    bytes_read: int = 0
    read: bool = True  # False: the file could not be read (its skip says why)


@dataclass
class _BatchRead:
    """A batch's files read: each file's _FileRead, and their responses' rows by column
    (USAGE_NAMES' order), the files' in turn: a worker's result, sent as columns (a
    list of values each is unpickled in a tenth of the time of as many row tuples)."""

    files: list[_FileRead]
    columns: list[list[Any]]


# (app, session id, user, path, the file's name in the session, the name skips give,
#  the part of the file: the lines that start in [first, last), last None: its end,
#  and whether another task reads a file of that session and name: another part of it,
#  or a file of the same name under another root, whose responses are one file's)
_Task = tuple[str, str, str, Path, str, str, int, int | None, bool]

WORKER_BYTES = 64 << 20  # below this much in all, the files are read in this process
BATCH_BYTES = 32 << 20  # files handed to a worker at once, and a larger file's parts


def _read_file(task: _Task, into: list[list[Any]], buffer: bytearray | None = None
               ) -> _FileRead:  # fmt: skip
    """The usage rows of one transcript file, or of a part of one: its responses' put in
    `into` (columns), the rest in what it returns."""
    app, session_id, user, path, rel, name, first, last, shared = task
    found = _FileRead()
    sink = _Skips(found.skips)
    sink.file(path, name)
    ids = {"app_name": app, "user_id": user, "session_id": session_id}
    # a response: one row per (side, key) of the file, the first of its largest usage
    # (its total and its values), as SessionReader keeps a response's usage
    responses: dict[tuple[bool, str], tuple[int, tuple[Any, ...]]] = {}
    try:
        with path.open("rb") as handle:
            for offset, raw in _usage_lines(handle, first, last, buffer):
                sink.start = offset
                text = _text(raw, offset, name, sink, found)
                if text is None:
                    continue
                plain = plain_response(text)
                if plain is not None:  # most lines: read by a typed decode
                    (when, message_id, request_id, model, sidechain, speed, cost,
                     fresh, output, reads, writes, five, hour, uuid) = plain  # fmt: skip
                    side = (sidechain, f"{message_id or uuid or f'{name}@{offset}'}\x1f"
                                       f"{request_id or ''}")  # fmt: skip
                    total = (fresh or 0) + (output or 0) + (reads or 0) + (writes or 0)
                    values = (app, user, session_id, f"{rel}@{offset}", "call", rel, offset,
                              when, message_id, request_id, model, sidechain, speed, cost,
                              fresh, output, reads, writes, five, hour)  # fmt: skip
                else:
                    row = _parsed(text, offset, name, sink, found)
                    if row is None:
                        continue
                    row.update(ids, file=rel, event_id=f"{rel}@{offset}")
                    if row["kind"] == "failed":
                        found.failed.append(_VALUES(row))
                        continue
                    side, total = (row["is_sidechain"], row["key"]), row["total"]
                    values = _VALUES(row)
                held = responses.get(side)
                if held is None or total > held[0]:
                    responses[side] = (total, values)
            # the bytes of the lines read: a file's parts sum to the file
            end = handle.seek(0, os.SEEK_END) if last is None else _line_start(handle, last)
            found.bytes_read = end - _line_start(handle, first)
    except OSError as e:
        found.skips.append((str(path), f"cannot read the file: {e}"))
        found.read = False
    found.responses = len(responses)
    if responses:
        rows = zip(*(values for _, values in responses.values()), strict=True)
        for column, values in zip(into, rows, strict=True):
            column.extend(values)
    if shared:
        found.sides = list(responses)
        found.totals = [total for total, _ in responses.values()]
    return found


def _read_batch(tasks: list[_Task]) -> _BatchRead:
    columns: list[list[Any]] = [[] for _ in USAGE_NAMES]
    buffer = bytearray()
    return _BatchRead([_read_file(task, columns, buffer) for task in tasks], columns)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _tasks(entry: SessionFiles, user: str, parted: bool) -> tuple[list[_Task], list[int]]:
    """Each file of a session to read, in order, and its size where `parted` (workers
    read them): a file larger than BATCH_BYTES then in parts of that size, which two
    workers read at once (the one-file set's 704 MB; each part's responses merged as one
    file's). (Files of one name are one session's: their name holds their project.)"""
    found: list[tuple[str, str, str, Path, str, str, int, int | None]] = []
    sizes: list[int] = []
    for path, file in entry.files:
        # (the names rows and skips give, as the ingest stores them: escaped where no
        # encoding decodes a byte of them)
        task = (entry.app, entry.session_id, user, path, storable(file.rel),
                storable(file.path or file.rel))
        # (the size discovery's one stat found; a file it could not stat, stat here)
        known = entry.stats.get(file.path) if parted else None
        size = known[0] if known is not None else _size(path) if parted else 0
        cuts = list(range(0, size, BATCH_BYTES))[1:] if size > BATCH_BYTES else []
        for first, last in zip([0, *cuts], [*cuts, None], strict=True):
            found.append((*task, first, last))
            sizes.append((last if last is not None else size) - first)
    read = Counter(task[4] for task in found)
    return [(*task, read[task[4]] > 1) for task in found], sizes


class Reading:
    """A read of the usage lines begun: the files found, and where `workers` processes
    read them (enough to read), their batches handed out as the files are found (a
    project's once its folder is walked), so that the workers read while the rest are
    looked for, and this process can do other work (import what the rows go to) while
    they read. `result()` waits for them; `close()` stops them (a Reading left unread)."""

    def __init__(self, paths: list[Path], user: str = DEFAULT_USER, workers: int = 1):
        self.tasks: list[_Task] = []
        self._pool: ProcessPoolExecutor | None = None
        self._reads: Iterator[_BatchRead]
        discovery = Discovery(paths)
        # the files in order, in runs of about BATCH_BYTES, where workers read them:
        # the first `sent` handed out, the last growing
        batches: list[list[_Task]] = [[]]
        sent = size = total = 0
        futures: list[Future[_BatchRead]] = []
        try:  # a stop while the files are found or handed out stops the workers (else
            # the process waits for them at its exit, for ever)
            for entry in discovery:  # each session as soon as it is found whole: its
                tasks, sizes = _tasks(entry, user, workers > 1)  # files read while the
                self.tasks += tasks  # rest are looked for
                if workers < 2:
                    continue
                for task, bytes_ in zip(tasks, sizes, strict=True):  # runs of BATCH_BYTES
                    if size >= BATCH_BYTES:
                        batches.append([])
                        size = 0
                    batches[-1].append(task)
                    size += bytes_
                total += sum(sizes)
                if total >= WORKER_BYTES and len(batches) - 1 > sent:  # (the last grows)
                    futures += self._hand_out(workers, batches[sent:-1])
                    sent = len(batches) - 1
            if not discovery.sessions:
                raise no_sessions(paths)
            self.layout = discovery.layout()
            if workers < 2 or total < WORKER_BYTES:  # read here, in result()
                self._reads = map(_read_batch, [self.tasks])
                return
            futures += self._hand_out(workers, batches[sent:])
            self._reads = (waited(future) for future in futures)  # (a Ctrl-C seen)
        except BaseException:
            self.close()
            raise

    def _hand_out(self, workers: int, batches: list[list[_Task]]) -> list[Future[_BatchRead]]:
        """`batches` handed to the workers, started at the first."""
        if self._pool is None:
            # forked before anything starts a thread here (polars, DuckDB: imported after)
            self._pool = worker_pool(workers)  # (a worker runs msgspec and re only)
        with stops_held():  # (a stop raised inside submit hung the pool's shutdown)
            return [self._pool.submit(_read_batch, batch) for batch in batches]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def result(self) -> UsageRead:
        """Every file's rows, in the files' order, as one process reads them."""
        try:  # (the pool closed whatever stops this, an import as well)
            from ...store.arrow import columns_table

            read = self._merged()
        except BrokenProcessPool:
            from .claude_code import killed

            raise killed() from None
        finally:
            self.close()
        columns = read.pop("columns")
        return UsageRead(columns_table(dict(zip(USAGE_NAMES, columns, strict=True)),
                                       usage_schema()),
                         passed_over=self.layout.passed_over, **read)  # fmt: skip

    def _merged(self) -> dict[str, Any]:
        read: dict[str, Any] = {"files": 0, "bytes_read": 0, "lines_parsed": 0, "skips": [],
                                "kinds": Counter()}  # fmt: skip
        failed: list[tuple[Any, ...]] = []
        columns: list[list[Any]] = [[] for _ in USAGE_NAMES]
        # a response: one row per (session, file, side, key), the first of its largest
        # usage, as SessionReader keeps a response's usage (two files of one name, from
        # two roots, are one file here as there; a file's parts are one file): a shared
        # file's responses by key, their row in `columns` and its total (another file's
        # are its own, and come in as they are)
        responses: dict[tuple[str, str, bool, str], tuple[int, int]] = {}
        # each file: whether every part of it was read (a file is read when all are,
        # as one process reads it whole; what its parts read is kept either way)
        whole: dict[Path, bool] = {}
        tasks = iter(self.tasks)
        told = 0  # files the batches told of: one per task, in order
        for batch in self._reads:
            told += len(batch.files)
            mixed = any(found.sides is not None for found in batch.files)
            if not mixed:  # most batches: their rows as they are
                for column, values in zip(columns, batch.columns, strict=True):
                    column.extend(values)
            at = 0  # the file's first row in the batch's columns
            for found, task in zip(batch.files, tasks, strict=False):  # the batch's tasks
                failed += found.failed
                if found.sides is not None and found.totals is not None:
                    for row, side, total in zip(range(at, at + found.responses), found.sides,
                                                found.totals, strict=True):  # fmt: skip
                        key = (task[1], task[4], *side)
                        held = responses.get(key)
                        if held is None:
                            responses[key] = (len(columns[0]), total)
                            for column, values in zip(columns, batch.columns, strict=True):
                                column.append(values[row])
                        elif total > held[1]:
                            responses[key] = (held[0], total)
                            for column, values in zip(columns, batch.columns, strict=True):
                                column[held[0]] = values[row]
                elif mixed:
                    for column, values in zip(columns, batch.columns, strict=True):
                        column.extend(values[at : at + found.responses])
                at += found.responses
                if not found.read and not whole.get(task[3], True):
                    found.skips = [s for s in found.skips if s[0] != str(task[3])]  # once
                whole[task[3]] = whole.get(task[3], True) and found.read
                read["skips"] += found.skips
                read["kinds"].update(found.kinds)
                read["lines_parsed"] += found.lines_parsed
                read["bytes_read"] += found.bytes_read
        if told != len(self.tasks):  # (zip above stops at the shorter, silently)
            raise RuntimeError(f"the usage readers told of {told} files, not {len(self.tasks)}")
        read["files"] = sum(whole.values())
        # the failed requests' rows first, as a row per line read
        failed_columns = list(zip(*failed, strict=True)) or [()] * len(USAGE_NAMES)
        read["columns"] = [[*before, *after] for before, after
                           in zip(failed_columns, columns, strict=True)]  # fmt: skip
        return read


def read_usage(paths: list[Path], user: str = DEFAULT_USER, workers: int = 1) -> UsageRead:
    """The usage rows of every transcript under `paths` (as `ingest claude-code` finds
    them), each as `transcript_events` would hold it; read by `workers` processes."""
    return Reading(paths, user, workers).result()


def _text(raw: bytes, offset: int, name: str, sink: _Skips, read: _FileRead) -> str | None:
    """A line holding MARKER as text, as read_lines reads it; None (a skip) when it is
    not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        sink.skip(name, f"not UTF-8 text (byte {e.start + 1} of the line)")
        return None
    if offset == 0:
        text = text.removeprefix("\ufeff")
    read.lines_parsed += 1
    return text.rstrip("\r\n")


def _parsed(
    text: str, offset: int, name: str, sink: _Skips, read: _FileRead
) -> dict[str, Any] | None:
    """The row of one line holding MARKER, as SessionReader reads it."""
    found = read_line(text, name, sink, read.kinds)
    if found is None:
        return None
    line, kind, when = found
    return _row(line, kind, when, offset, f"{name}@{offset}", sink)


def _row(
    line: dict[str, Any], kind: str, when: float, offset: int, locator: str, sink: _Skips
) -> dict[str, Any] | None:
    """The row an ingest keeps of a line with usage (SessionReader._assistant, _failed),
    its `line` the line's offset; None for a line that records none. `locator` stands for
    the line where it has no id."""
    if kind == "assistant" and not isinstance(line.get("message"), dict):
        sink.skip(locator, "an assistant line without a message object")
        return None
    failed = (kind == "system" and line.get("subtype") == "api_error") or (
        kind == "assistant" and line.get("isApiErrorMessage") is True)  # fmt: skip
    if failed:
        details, usage, refused = failure_detail(line, offset, when)
        if refused:
            sink.skip(locator, f"{refused}: the failure is kept without it")
        return {**_TEMPLATE, **details, **usage, "kind": "failed"} if usage else None
    if kind != "assistant":
        return None
    message = line["message"]
    usage, refused = usage_counts(message.get("usage"))
    if refused:
        sink.skip(locator, f"{refused}: the response is kept without this line's usage")
    if usage is None:
        return None
    detail = call_detail(line, message, offset, when)
    uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
    key = f"{detail['message_id'] or uuid or locator}\x1f{detail['request_id'] or ''}"
    return {**_TEMPLATE, **detail, **usage, "kind": "call", "key": key,
            "total": usage_total(usage)}  # fmt: skip
