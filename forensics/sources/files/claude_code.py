"""Claude Code's folders of transcripts: which files, in which order, read line by line.

Where they are: the paths given (a config folder holding `projects/`, a `projects`
folder, one project's folder, or transcript files), else each folder of
`$CLAUDE_CONFIG_DIR` (comma-separated), else `~/.config/claude` and `~/.claude`: the
folders ccusage reads. In a project's folder (`projects/<project>/`):

- `<session>.jsonl`: a session's own file;
- `<session>/subagents/agent-<id>.jsonl` (2.1): its subagents;
- `agent-<id>.jsonl` (2.0): a subagent file beside the sessions, naming its parent in
  its lines' `sessionId`.

A session's own file is read first, then its subagents' (their authors come from the
Task calls its own file made). Files are read as bytes, a line at a time, so a 700 MB
transcript costs one line's memory (ccusage #873 and #1151 crashed on those); a line
that is not UTF-8 or not JSON is skipped with its file and line, the rest is read.
"""

from __future__ import annotations

import gc
import signal
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...errors import ForensicsError, cancelled, fork_context, stops_held, waited, worker_pool
from ...families.claude_code.files import TranscriptFile
from ...families.claude_code.transcript import FAMILY, SessionReader
from ...model import Batch
from ...sanitize import storable
from ...store.arrow import rows_table
from ..base import EventBatcher
from .claude_code_layout import (
    DEFAULT_USER,
    KIND,
    Layout,
    SessionFiles,
    Stats,
    layout_of,
    to_read,
)

# Event JSON per batch. A batch of fat tool results costs the normaliser about 25x its
# size at peak: on 200 MB of transcripts, batches of 32M characters peaked at 936 MB,
# 16M at 809 MB, 8M at 658 MB (6% slower than 32M), 2M at 413 MB (86% slower)
BATCH_CHARS = 8_000_000


# transcript_events, as queries/store/migrate_10.sql holds it (ingest_id added there)
DETAIL_SCHEMA = pa.schema(
    [
        ("app_name", pa.string()),
        ("user_id", pa.string()),
        ("session_id", pa.string()),
        ("event_id", pa.string()),
        ("kind", pa.string()),
        ("file", pa.string()),
        ("line", pa.int32()),
        ("timestamp", pa.string()),
        ("epoch", pa.float64()),
        ("version", pa.string()),
        ("message_id", pa.string()),
        ("request_id", pa.string()),
        ("model", pa.string()),
        ("is_sidechain", pa.bool_()),
        ("speed", pa.string()),
        ("cost_usd", pa.float64()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cache_read_tokens", pa.int64()),
        ("cache_creation_tokens", pa.int64()),
        ("cache_write_5m_tokens", pa.int64()),
        ("cache_write_1h_tokens", pa.int64()),
        ("output_placeholder", pa.bool_()),
        ("trigger", pa.string()),
        ("pre_tokens", pa.int64()),
    ]
)


# anchors and the sessions searched for them, as queries/store/migrate_12.sql holds them
ANCHOR_SCHEMA = pa.schema(
    [
        ("app_name", pa.string()),
        ("user_id", pa.string()),
        ("session_id", pa.string()),
        ("function_call_id", pa.string()),
        ("tool_name", pa.string()),
        ("anchor_index", pa.int32()),
        ("event_id", pa.string()),
        ("by_call_id", pa.string()),
        ("by_tool", pa.string()),
        ("field", pa.string()),
        ("result_bytes", pa.int64()),
        ("anchor_bytes", pa.int64()),
        ("key_starts", pa.list_(pa.int64())),
        ("key_ends", pa.list_(pa.int64())),
        ("line_starts", pa.list_(pa.int64())),
        ("line_ends", pa.list_(pa.int64())),
    ]
)
SEARCHED_SCHEMA = pa.schema(
    [("app_name", pa.string()), ("user_id", pa.string()), ("session_id", pa.string())]
)
# the files of the sessions a batch reads whole again, their earlier ingest's rows deleted
# with the session's first events (store/forget_transcript_files.sql)
FORGOTTEN_SCHEMA = pa.schema([("path", pa.string()), ("user_id", pa.string())])


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows as a table, by name, each row's missing keys null (Table.from_pylist reads the
    first row's); built through polars (store/arrow.py), not pyarrow's builders, which
    import pandas (0.13 s and 43 MB of every ingest)."""
    known = set(schema.names)
    for row in rows:  # a key the table lacks is a bug, not a null
        if not known.issuperset(row):
            raise ValueError(f"no column {sorted(set(row) - known)} in {schema.names}")
    try:
        return rows_table(rows, schema)
    except UnicodeEncodeError:  # a file's name (or an id json read) UTF-8 cannot hold: its
        # events are skipped, saying so (EventBatcher); their details keep its escapes
        return rows_table([{k: storable(v) if isinstance(v, str) else v
                            for k, v in row.items()} for row in rows], schema)  # fmt: skip


FILE_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("user_id", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("lines", pa.int64()),
    ]
)


def read_lines(path: Path, skip: Any) -> Iterator[tuple[int, str]]:
    """(line number, text) of a file, one line in memory at a time; a line that is not
    UTF-8 is skipped with its place."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                skip(f"{path}:{number}", f"not UTF-8 text (byte {e.start + 1} of the line)")
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            text = text.rstrip("\r\n")
            if text.strip():
                yield number, text


class _Sink:
    """The reader's output, batched: events through an EventBatcher, details beside them."""

    def __init__(self, batcher: EventBatcher):
        self.batcher = batcher
        self.details: list[dict[str, Any]] = []
        self.anchors: list[dict[str, Any]] = []
        self.searched: list[tuple[str, str, str]] = []  # sessions whose files were all read
        self.replaces: list[tuple[str, str, str]] = []
        self.forgotten: list[dict[str, str]] = []  # the files of `replaces`' sessions

    def event(self, row: dict[str, Any]) -> None:
        self.batcher.rows_read += 1
        self.batcher.add(**row)

    def detail(self, row: dict[str, Any]) -> None:
        self.details.append(row)

    def anchor(self, row: dict[str, Any]) -> None:
        self.anchors.append(row)

    def skip(self, locator: str, reason: str) -> None:
        self.batcher.rows_read += 1
        self.batcher.skip(locator, reason)

    def take(self) -> Batch:
        batch = self.batcher.take()
        batch.side["transcript_events"] = _table(self.details, DETAIL_SCHEMA)
        batch.side["anchors"] = _table(self.anchors, ANCHOR_SCHEMA)
        # a session is searched for anchors once every file of it is read (a file that
        # could not be read leaves its anchors unknown, not none)
        batch.side["anchor_sessions"] = _table(
            [dict(zip(SEARCHED_SCHEMA.names, key, strict=True)) for key in self.searched],
            SEARCHED_SCHEMA,
        )
        self.details, self.anchors, self.searched = [], [], []
        batch.replaces, self.replaces = self.replaces, []
        if self.forgotten:
            batch.side["forgotten_files"] = _table(self.forgotten, FORGOTTEN_SCHEMA)
            self.forgotten = []
        return batch


# A session up to this many bytes is read by a worker process (when there are workers);
# a larger one by a process of its own that sends what it reads as it reads it (_Stream),
# or here, a line at a time: its memory is a batch, not the session
SESSION_WORKER_BYTES = 16 << 20
WORKER_MIN_BYTES = 32 << 20  # less than this to read in all: no workers (their start costs)
# sessions read ahead of the one being replayed, in bytes of their files: what a worker
# read waits in this process's memory until it is replayed, whatever the core count
AHEAD_BYTES = 64 << 20


def killed() -> ForensicsError:
    """What a reading worker the system killed (out of memory, most often) is said as."""
    return ForensicsError(
        "a process reading transcripts was killed before it finished (the system stops"
        " one that runs out of memory)",
        hint="FORENSICS_WORKERS=1 (or --workers 1) reads them in this process",
    )


class _Recorder:
    """A reader's sink in a worker: what the reader told it, in order, for the ingest's
    process to tell its own sink (`_replay`); `tick` marks where that process would
    have looked whether its batch is full: after a line, where anything was told since
    the last look (a file's first line always: what came before it is another list's)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.told = True  # anything told since the last tick
        self.chars = 0  # of the events' JSON in `calls`

    def event(self, row: dict[str, Any]) -> None:
        self.calls.append(("event", row))
        self.chars += row.get("json_chars") or len(row.get("event_json") or "")
        self.told = True

    def detail(self, row: dict[str, Any]) -> None:
        self.calls.append(("detail", row))
        self.told = True

    def anchor(self, row: dict[str, Any]) -> None:
        self.calls.append(("anchor", row))
        self.told = True

    def skip(self, locator: str, reason: str) -> None:
        self.calls.append(("skip", locator, reason))
        self.told = True

    def tick(self) -> None:
        if self.told:
            self.calls.append(("tick",))
            self.told = False


# a session to read: app, user, session id, its files in order
_Task = tuple[str, str, str, list[tuple[Path, TranscriptFile]]]
# what a worker read of each file: the reader's calls, the lines read, why it stopped
_FileCalls = tuple[list[tuple[Any, ...]], int, str | None]


# what a worker read of a session: its files' calls, and the lines it counted by kind
_SessionCalls = tuple[list[_FileCalls], Counter[str]]


def _read_session(task: _Task) -> _SessionCalls:
    """One session read in a worker as the ingest's process reads it (batches()),
    its sink's calls recorded per file."""
    app, user, session_id, files = task
    recorder = _Recorder()
    reader = SessionReader(app, user, session_id, recorder)
    found: list[_FileCalls] = []
    for path, file in files:
        count, error = _recorded(reader, recorder, path, file)
        found.append((recorder.calls, count, error))
        recorder.calls, recorder.told = [], True
    return found, reader.kinds


def _recorded(reader: SessionReader, recorder: _Recorder, path: Path, file: TranscriptFile,
              flush: Callable[[], None] | None = None) -> tuple[int, str | None]:  # fmt: skip
    """One file read into `recorder`, a tick after each line (`flush`, given, is called
    whenever it holds STREAM_CALLS calls or STREAM_CHARS of event JSON): its lines, and
    why it could not be read (None: it was)."""
    count = 0
    try:
        for _ in reader.read(file, read_lines(path, recorder.skip)):
            count += 1
            recorder.tick()
            if flush is not None and (len(recorder.calls) >= STREAM_CALLS
                                      or recorder.chars >= STREAM_CHARS):  # fmt: skip
                flush()
    except OSError as e:
        return count, f"cannot read the file: {e}"
    return count, None


# what a session read in a process of its own sends at once: calls, or event JSON
STREAM_CALLS = 4096
STREAM_CHARS = 2_000_000


def _streaming(task: _Task, conn: Connection, other: Connection) -> None:
    """A stream's process: it closes its copy of the ingest's end of the pipe (so that,
    should the ingest's process die, its next send fails and it ends, not waits for
    ever), keeps the objects it was forked with out of the collector's passes (a pass
    would copy their pages), takes Ctrl-C as the ingest's (which then ends it) and dies
    of a SIGTERM with no traceback (what ends it at the ingest process's exit, if that
    is how it ends); then it reads (_stream_session)."""
    other.close()
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        _stream_session(task, conn)
    except _Gone:  # the ingest is gone: nobody to tell
        pass


class _Gone(Exception):
    """A stream's ingest is gone (its end of the pipe closed): not an OSError, which
    says a file could not be read."""


def _send(conn: Connection, message: tuple[Any, ...]) -> None:
    try:
        conn.send(message)
    except OSError:  # (BrokenPipeError, most often)
        raise _Gone from None


def _send_calls(conn: Connection, calls: list[tuple[Any, ...]]) -> None:
    """`calls` in messages of STREAM_CALLS at most (a file's end flushes its anchors and
    events at once; batches are cut at ticks, not at messages)."""
    for at in range(0, max(len(calls), 1), STREAM_CALLS):
        _send(conn, ("calls", calls[at : at + STREAM_CALLS]))


def _stream_session(task: _Task, conn: Connection) -> None:
    """A session larger than SESSION_WORKER_BYTES read in a process of its own, as the
    ingest's process reads it (batches()), its sink's calls sent to `conn` while it
    reads, STREAM_CALLS at a time at most: ("calls", calls) and, at each file's end,
    ("file", lines, error); then ("kinds", kinds). ("raised", error): it failed (what it
    had read sent before). What it holds is its reader and a message: sending waits for
    the ingest to read."""
    recorder = _Recorder()

    def flush() -> None:
        _send_calls(conn, recorder.calls)
        recorder.calls, recorder.chars = [], 0

    try:
        app, user, session_id, files = task
        reader = SessionReader(app, user, session_id, recorder)
        for path, file in files:
            count, error = _recorded(reader, recorder, path, file, flush)
            _send_calls(conn, recorder.calls)
            _send(conn, ("file", count, error))
            recorder.calls, recorder.told, recorder.chars = [], True, 0
        _send(conn, ("kinds", reader.kinds))
    except _Gone:
        raise
    except BaseException as e:  # said where the ingest reads it, as a worker's would be
        _send_calls(conn, recorder.calls)  # (what one process would have told first)
        try:
            _send(conn, ("raised", e))
        except Exception:  # (an error that does not pickle; _Gone again, if gone)
            _send(conn, ("raised", RuntimeError(f"reading {task[2]}: {e!r}")))
    finally:
        conn.close()


class _Stream:
    """A session being read by a process of its own (_stream_session), forked when its
    turn comes; this process replays what it sends as it comes (`file`), so that the
    largest sessions are read on another core while this one stores them."""

    def __init__(self, task: _Task):
        context = fork_context()  # (the process runs the reader only, as a worker does)
        self.conn, sending = context.Pipe(duplex=False)
        self.process = context.Process(target=_streaming, args=(task, sending, self.conn),
                                       daemon=True)  # fmt: skip
        self.ended = False  # it sent all it read
        try:
            self.process.start()
        except BaseException:
            self.conn.close()
            raise
        finally:
            sending.close()  # (this process's copy: the reader's end closes at its exit)

    def file(self, sink: _Sink) -> Generator[Batch, None, tuple[int, str | None]]:
        """The next file's calls told to `sink`, a batch taken where the reader would
        take it; its lines read, and why it could not be read (None: it was)."""
        while True:
            message = self._received()
            if message[0] != "calls":
                return message[1], message[2]
            yield from _replay(message[1], sink)

    def kinds(self) -> Counter[str]:
        kinds: Counter[str] = self._received()[1]
        self.ended = True
        return kinds

    def _received(self) -> tuple[Any, ...]:
        try:
            message: tuple[Any, ...] = self.conn.recv()
        except EOFError:  # it ended without a word: the system stopped it
            raise killed() from None
        if message[0] == "raised":
            raise message[1]
        return message

    def close(self) -> None:
        if not self.ended:  # stopped before it finished (it ignores Ctrl-C)
            self.process.kill()
        self.process.join()
        self.process.close()
        self.conn.close()


class ClaudeCodeSource:
    """Claude Code transcripts under some folders, as batches of the store's events."""

    kind = KIND
    family = FAMILY

    def __init__(
        self,
        paths: list[Path] | None = None,
        user: str = DEFAULT_USER,
        known: dict[str, tuple[int, int]] | None = None,
        workers: int = 1,
        layout: Layout | None = None,
    ):
        """`known`: path -> (size, mtime_ns) of the files an earlier ingest read; a session
        none of whose files changed since is not read again (None: read everything).
        `workers`: processes that read sessions (of up to SESSION_WORKER_BYTES) ahead.
        `layout`: what `layout_of(paths)` found just before, not looked for again."""
        self.known = known or {}
        self.workers = workers
        self.layout = layout or layout_of(list(paths or []))
        self.user = user
        self.location = ", ".join(self.layout.roots)
        self.notes: dict[str, object] = {}
        self._sources: dict[tuple[str, str, str], str] = {}

    def session_sources(self) -> dict[tuple[str, str, str], str]:
        return dict(self._sources)

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        """Every session's events, in batches, but those of sessions whose files are all
        as `known` (an earlier ingest read them); a changed session is read whole (the
        store keeps an event once), so `since_watermark` is not used."""
        sink = _Sink(EventBatcher(max_chars=BATCH_CHARS))
        for where, why in self.layout.passed_over:
            sink.skip(where, why)
        kinds: Counter[str] = Counter()
        lines = files = 0
        read: list[dict[str, object]] = []
        todo, unchanged = to_read(self.layout, self.known)
        for entry, stats, recorded in self._read_ahead(todo):
            reader = SessionReader(entry.app, self.user, entry.session_id, sink)
            # read whole, it replaces what an earlier ingest stored of it (which may have
            # been read while Claude Code was still writing: a response's first lines, a
            # boundary before its summary)
            sink.replaces.append((entry.app, self.user, entry.session_id))
            # and its files are no longer as read, until this run records them at its end:
            # a run stopped in between (a session cut between two batches) leaves the
            # session to be read again, not passed over as unchanged (a --full run
            # stopped so, then a plain one, had left a session with 3 of its 10 events)
            sink.forgotten += [{"path": str(p), "user_id": self.user} for p, _ in entry.files]
            own = next((p for p, f in entry.files if f.role == "main"), entry.files[0][0])
            self._sources[(entry.app, self.user, entry.session_id)] = storable(f"{self.kind}:{own}")
            # a session too large for a worker: read by a process of its own while this
            # one stores it (with workers), else here, a line at a time
            stream = None
            if recorded is None and self.workers > 1 and _bytes(stats) > SESSION_WORKER_BYTES:
                try:
                    stream = _Stream((entry.app, self.user, entry.session_id, entry.files))
                except OSError:  # no process to be had (memory, process limits): here
                    pass
            try:
                unread, counted = yield from self._session(entry, stats, sink, reader,
                                                           recorded, stream, read)  # fmt: skip
                if stream is not None:
                    kinds.update(stream.kinds())
                else:
                    kinds.update(reader.kinds if recorded is None else recorded[1])
            finally:
                if stream is not None:
                    stream.close()
            files += len(entry.files)
            lines += counted
            if not unread:
                sink.searched.append((entry.app, self.user, entry.session_id))
        self.notes["files"] = files
        self.notes["lines"] = lines
        if unchanged:
            self.notes["sessions_unchanged"] = unchanged
        if kinds:
            self.notes["lines_not_events"] = dict(kinds.most_common())
        batch = sink.take()
        batch.side["transcript_files"] = _table(read, FILE_SCHEMA)
        yield batch

    def _session(
        self, entry: SessionFiles, stats: Stats, sink: _Sink, reader: SessionReader,
        recorded: _SessionCalls | None, stream: _Stream | None, read: list[dict[str, object]],
    ) -> Generator[Batch, None, tuple[bool, int]]:  # fmt: skip
        """One session's files told to `sink` (from a worker's calls, from a stream, or
        read here), each file read added to `read`; whether a file could not be read,
        and the lines of those that could."""
        unread = False
        lines = 0
        for i, (path, file) in enumerate(entry.files):
            count = 0
            error = None
            if recorded is not None:  # read by a worker: its sink's calls told to ours
                calls, count, error = recorded[0][i]
                yield from _replay(calls, sink)
            elif stream is not None:
                count, error = yield from stream.file(sink)
            else:

                def counted(path: Path = path) -> Iterator[tuple[int, str]]:
                    nonlocal count
                    for item in read_lines(path, sink.skip):
                        count += 1
                        yield item

                try:
                    for _ in reader.read(file, counted()):
                        if sink.batcher.full():
                            yield sink.take()
                except OSError as e:
                    error = f"cannot read the file: {e}"
            if error is not None:
                sink.skip(str(path), error)
                unread = True
                continue
            lines += count
            size, mtime = stats[str(path)]
            read.append(
                {
                    "path": str(path),
                    "user_id": self.user,
                    "size": size,
                    "mtime_ns": mtime,
                    "lines": count,
                }
            )
        return unread, lines

    def _read_ahead(
        self, todo: list[tuple[SessionFiles, Stats]]
    ) -> Iterator[tuple[SessionFiles, Stats, _SessionCalls | None]]:
        """Each session to read, in order, with what a worker read of it (None: to read
        by a stream of its own, or here, a line at a time): a session of up to
        SESSION_WORKER_BYTES goes to one of `workers` forked processes, a few sessions
        ahead of the one being replayed."""
        sizes = [_bytes(stats) for _, stats in todo]
        small = sum(size for size in sizes if size <= SESSION_WORKER_BYTES)
        if self.workers < 2 or small < WORKER_MIN_BYTES:
            for entry, stats in todo:
                yield entry, stats, None
            return
        with worker_pool(self.workers) as pool:
            ahead: deque[tuple[Future[_SessionCalls] | None, int]] = deque()
            at = held = 0  # held: bytes of the sessions in `ahead` a worker reads
            try:
                for entry, stats in todo:
                    with stops_held():  # (a stop raised inside submit hangs the pool)
                        while at < len(todo) and (not ahead or (
                                len(ahead) < 4 * self.workers and held < AHEAD_BYTES)):
                            later, _ = todo[at]
                            task = (later.app, self.user, later.session_id, later.files)
                            if sizes[at] <= SESSION_WORKER_BYTES:
                                ahead.append((pool.submit(_read_session, task), sizes[at]))
                                held += sizes[at]
                            else:
                                ahead.append((None, 0))
                            at += 1
                    future, size = ahead.popleft()
                    held -= size
                    try:
                        recorded = None if future is None else waited(future)
                    except BrokenProcessPool:
                        raise killed() from None
                    yield entry, stats, recorded
            finally:
                cancelled(future for future, _ in ahead)


def _bytes(stats: Stats) -> int:
    """A session's bytes, as its files' discovery found them."""
    return sum(max(size, 0) for size, _ in stats.values())


def _replay(calls: list[tuple[Any, ...]], sink: _Sink) -> Iterator[Batch]:
    """A worker's recorded calls told to `sink` in order, a batch taken where the reader
    would have taken it."""
    for call in calls:
        what = call[0]
        if what == "event":
            sink.event(call[1])
        elif what == "detail":
            sink.detail(call[1])
        elif what == "anchor":
            sink.anchor(call[1])
        elif what == "skip":
            sink.skip(call[1], call[2])
        elif sink.batcher.full():  # a tick
            yield sink.take()


