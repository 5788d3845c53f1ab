"""ADK JSON files: a Session (web API camelCase or `model_dump` snake_case), event lists, NDJSON.

A whole file is parsed at once (these exports are written whole by ADK); rows
still leave in Arrow batches. A malformed file does not stop the others: what
can be read is loaded and the rest is skipped with the file, line and reason.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable, Iterator
from itertools import chain, islice
from pathlib import Path

import msgspec
import pyarrow as pa

from ...errors import NUMBER_TOO_LONG, TOO_DEEP
from ...families.fields import json_error
from ...json_text import after_space
from ...model import RAW_SESSION_SCHEMA, Batch
from ...sanitize import UTF16, looks_utf16, not_utf8, storable
from ...store.arrow import rows_table  # (pyarrow's builders import pandas)
from ..base import BATCH_ROWS, EventBatcher, not_unicode

_EVENT_KEYS = {"author", "content", "invocation_id", "invocationId", "actions", "timestamp"}


# (session id, some event ids) -> the stored (app, user, session) keys that hold the
# events (and True), else those of that session id (and False)
Resolver = Callable[[str, list[str]], "tuple[list[tuple[str, str, str]], bool]"]
SAMPLE_IDS = 50  # event ids looked up to key a file


class _HeldTwice(Exception):
    """A file naming no app or user whose events more than one stored session holds:
    keyed to neither, they would be stored a third time."""

    def __init__(self, keys: list[tuple[str, str, str]]):
        shown = "; ".join(f"app {a}, user {u}, session {s}" for a, u, s in keys[:3])
        more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
        super().__init__(f"its events are stored in {len(keys)} sessions ({shown}{more}), "
                         "and the file names no app or user: give --app and --user to say "
                         "whose they are")  # fmt: skip


def _shown(paths: list[str]) -> str:
    """The first three paths, and how many more."""
    more = len(paths) - 3
    return ", ".join(paths[:3]) + (f" and {more} more" if more > 0 else "")


def _ids(events: list[object]) -> list[str]:
    return [
        e["id"]
        for e in events[:SAMPLE_IDS]
        if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]
    ]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """An NDJSON text's lines and their numbers. Split at "\n" only (a "\r" before it
    dropped): a JSON string may hold U+2028, U+2029 or U+0085 raw, where
    `str.splitlines` splits too, losing the event and shifting every later line number."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        yield lineno, line.removesuffix("\r")


def _is_session(doc: object) -> bool:
    """An ADK Session object: one with an `events` list."""
    return isinstance(doc, dict) and isinstance(doc.get("events"), list)


def _first_ids(text: str) -> list[str]:
    """The event ids of an NDJSON text's first lines (those that parse, Sessions aside)."""
    found: list[object] = []
    for _, line in _lines(text):
        if len(found) >= SAMPLE_IDS:
            break
        if line.strip():
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
                continue
            if not _is_session(value):
                found.append(value)
    return _ids(found)




def json_kind(value: object) -> str:
    """The JSON name of a parsed value's type: object, array, string, number, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {dict: "object", list: "array", str: "string"}
    return names.get(type(value), type(value).__name__)


_ARRAY_VALUE = re.compile(r"\s*:\s*\[")


def _top_level_events(text: str) -> int | None:
    """Where the elements of a Session object's own `events` array start: the key at
    depth 1, outside strings (a `state` or a tool result may hold an "events" key too)."""
    depth, in_string, escaped, key_start = 0, False, False, -1
    for pos, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 1 and text[key_start:pos] == "events":
                    found = _ARRAY_VALUE.match(text, pos + 1)
                    if found:
                        return found.end()
            continue
        if ch == '"':
            in_string, key_start = True, pos + 1
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return None


def _elements(text: str, start: int) -> Iterator[str]:
    """The texts of the elements of the JSON array whose first element starts at `start`,
    found without parsing them (so without recursion): by brackets outside strings."""
    depth, in_string, escaped, begin = 0, False, False, None
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if begin is None and not ch.isspace() and ch not in ",]":
            begin = pos
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            if depth == 0:
                if begin is not None:
                    yield text[begin:pos]
                return
            depth -= 1
        elif ch == "," and depth == 0:
            if begin is not None:
                yield text[begin:pos]
            begin = None
    if begin is not None:
        yield text[begin:]


def _not_events(items: list[object]) -> str:
    """Why a file's JSON is not ADK events, said once for the file."""
    first = items[0]
    if isinstance(first, dict) and (
        "resourceSpans" in first or {"span_id", "trace_id"} <= first.keys()
    ):
        return "a trace export (spans), not ADK events: load it with `forensics ingest adk-trace`"
    return (
        f"not ADK events: none of its {len(items):,} items has author, content, "
        "invocation_id, actions or timestamp"
    )


# A file msgspec reads is parsed and each event written back by it: the same values as
# Python's json (a key twice keeps the last; big integers exact), at a quarter of the
# time (json.loads and json.dumps were 27 s of 106 s over 200,000 events in 5,000
# files). What it refuses and Python's json may take (NaN, lone surrogates, numbers
# beyond a double, nesting past its depth, invalid text) takes the json path below.
# Both stop near Python's recursion limit, msgspec a few levels later (it is called
# from fewer frames): an event nested about 990 levels deep, which json skipped as too
# deep, is kept.
_decode = msgspec.json.decode
_BOM = b"\xef\xbb\xbf"
Encoder = Callable[[object], str]


def _compact(event: object) -> str:
    return msgspec.json.encode(event).decode()


def _python(event: object) -> str:
    return json.dumps(event, ensure_ascii=False)


_SLOW = object()


def _fast_read(data: bytes | memoryview | str) -> object:
    """The JSON as msgspec reads it, or `_SLOW` where it cannot."""
    try:
        return _decode(data)
    except (msgspec.MsgspecError, RecursionError):
        return _SLOW


def _session_key(name: str) -> str:
    """`incident.events.json` -> `incident`: the default session id of a bare event list
    (a byte of the name that no encoding decodes written as its escape: `storable`)."""
    return storable(name.split(".", 1)[0] or name)


def _complete(text: str, start: int) -> Iterator[object]:
    """The complete values of a JSON list from `start` (just inside its `[`), up to its end
    or the first that cannot be read."""
    decoder = json.JSONDecoder()
    pos = start
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return
        try:
            event, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            return
        yield event


class AdkJsonSource:
    kind = "adk-json"

    def __init__(
        self,
        paths: list[Path],
        *,
        app: str | None = None,
        user: str | None = None,
        session: str | None = None,
        batch_size: int = BATCH_ROWS,
        resolve: Resolver | None = None,
    ):
        self.paths = [Path(p) for p in paths]
        self.app, self.user, self.session = app, user, session
        self.batch_size = batch_size
        self.location = _shown([str(p) for p in self.paths])
        self.notes: dict[str, object] = {}
        self.resolve = resolve
        self.keyed: dict[str, str] = {}
        self._files: dict[tuple[str, str, str], set[str]] = {}
        self._event_keys: dict[str, tuple[str, str, str]] = {}  # this run's, by event id
        self._path = ""
        self._session_rows: list[dict[str, object]] = []  # noted since the last batch

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        # Files carry no watermark: re-reading one is cheap and idempotent.
        # files share batches: a batch per file cost a normalising pass each (500 files
        # of 20,000 events: 69 s), most of it the same for a file of 40 events as of 20,000
        out = EventBatcher(self.batch_size)
        for path in self.paths:
            out.new_file()
            for _ in self._keyed_file(path, out):
                yield out.take(self._taken_sessions())
        if out.pending() or self._session_rows:
            yield out.take(self._taken_sessions())

    def _keyed_file(self, path: Path, out: EventBatcher) -> Iterator[None]:
        """_read_file, or the file skipped where it cannot say whose its events are."""
        try:
            yield from self._read_file(path, out)
        except _HeldTwice as e:
            out.rows_read += 1
            out.skip(str(path), str(e))

    def _read_file(self, path: Path, out: EventBatcher) -> Iterator[None]:
        """Add the file's events to `out`; yields whenever `out` is full."""
        self._path = str(path)
        try:
            mode = path.stat().st_mode
        except OSError:
            mode = stat.S_IFREG  # missing or unreadable: said below, where it is read
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            # reading a FIFO no one writes to waits for ever
            out.rows_read += 1
            out.skip(str(path), "not a regular file (a FIFO, socket or device): "
                     "save its content to a file and give that")
            return
        ndjson = path.suffix.lower() in (".ndjson", ".jsonl")
        try:
            data = b"" if ndjson else path.read_bytes()
        except OSError:
            data = b""  # said below, where the file is read as text
        if data:
            doc = _fast_read(memoryview(data)[len(_BOM) if data.startswith(_BOM) else 0 :])
            data = b""  # not held while a file msgspec refused is read again as text
            if doc is not _SLOW:
                yield from self._document(path, doc, out, _compact)
                return
        try:
            text = path.read_text(encoding="utf-8-sig")  # a BOM is not part of the JSON
        except FileNotFoundError:
            out.rows_read += 1
            out.skip(str(path), "no such file")
            return
        except IsADirectoryError:
            out.rows_read += 1
            out.skip(str(path), "a directory, not a JSON file (give the files in it)")
            return
        except UnicodeDecodeError as e:
            out.rows_read += 1
            out.skip(str(path), not_utf8(e))
            return
        except OSError as e:
            out.rows_read += 1
            out.skip(str(path), f"cannot read file: {e.strerror or e}")
            return
        if "\x00" in text[:64] and looks_utf16(text[:64].encode("utf-8", "surrogatepass")):
            out.rows_read += 1
            out.skip(str(path), UTF16)  # (read as UTF-8, NUL bytes are: JSON is not)
            return
        if not text.strip():
            out.rows_read += 1
            out.skip(str(path), "empty file")
            return
        if ndjson:
            yield from self._ndjson(path, text, out)
            return
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            if e.msg == "Extra data" and text.lstrip().startswith("{"):
                yield from self._after_extra_data(path, text, e.pos, out)
            else:
                yield from self._salvage(path, text, e, out)
            return
        except (RecursionError, ValueError):
            # one event nested deeper than the parser's stack, or holding a number too
            # long for it: read the events one by one, so that only that one is lost
            yield from self._one_by_one(path, text, out)
            return
        yield from self._document(path, doc, out)

    def _document(
        self,
        path: Path,
        doc: object,
        out: EventBatcher,
        encode: Encoder = _python,
        where: str | None = None,
    ) -> Iterator[None]:
        """Add the events of a parsed file (or of a Session on line `where` of one)."""
        if isinstance(doc, dict) and _is_session(doc):
            app = doc.get("app_name") or doc.get("appName") or self.app or "unknown"
            user = doc.get("user_id") or doc.get("userId") or self.user or "unknown"
            session = doc.get("id") or self.session or _session_key(path.name)
            updated = doc.get("last_update_time", doc.get("lastUpdateTime"))
            self._note_session(app, user, session, updated)
            events = doc["events"]
        elif isinstance(doc, list):
            events = doc
            app, user, session = self._defaults(path, _ids(events))
            if events and not any(isinstance(e, dict) and _EVENT_KEYS & e.keys() for e in events):
                out.rows_read += 1
                out.skip(str(path), _not_events(events))
                return
        elif isinstance(doc, dict) and _EVENT_KEYS & doc.keys():
            events = [doc]
            app, user, session = self._defaults(path, _ids(events))
        elif isinstance(doc, dict) and "resourceSpans" in doc:
            out.rows_read += 1
            out.skip(str(path), _not_events([doc]))
            return
        else:
            out.rows_read += 1
            found = (
                f"an object with keys {sorted(doc)[:8]}"
                if isinstance(doc, dict)
                else f"a JSON {json_kind(doc)}"
            )
            out.skip(
                str(path),
                "wrong shape: expected an ADK Session (an object with 'events'), "
                f"a list of events, or NDJSON; found {found}",
            )
            return
        for index, event in enumerate(events):
            self._add(out, event, app, user, session, f"{where or path}: event {index}", encode)
            if out.full():
                yield

    def _after_extra_data(
        self, path: Path, text: str, end: int, out: EventBatcher
    ) -> Iterator[None]:
        """A .json file holding more JSON after its first value (which ends at `end`):
        NDJSON, or Sessions one after another (`cat a.json b.json`, pretty-printed or
        not), each read whole however many lines it spans; from the first value that is
        no Session or does not parse, the rest is read line by line (a stray line)."""
        first = json.loads(text[:end])  # it parsed: the error came after it
        if not _is_session(first):
            yield from self._ndjson(path, text, out)
            return
        decoder = json.JSONDecoder()
        at, session = after_space(text, 0), first
        while True:
            line = text.count("\n", 0, at) + 1
            yield from self._document(path, session, out, where=f"{path}:{line}")
            at = after_space(text, end)
            if at >= len(text):
                return
            try:
                session, next_end = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):  # (JSONDecodeError is a ValueError)
                break
            if not _is_session(session):
                break
            end = next_end
        yield from self._ndjson(path, text[at:], out, text.count("\n", 0, at) + 1)

    def _ndjson(
        self, path: Path, text: str, out: EventBatcher, first_line: int = 1
    ) -> Iterator[None]:
        """Add the events of NDJSON text whose first line is line `first_line` of the file.
        A line that is a whole Session (`jq -c . *.json`) is read as its own file would be."""
        key: tuple[str, str, str] | None = None
        held: str | None = None  # why the file's own events are skipped (_HeldTwice)
        for lineno, line in _lines(text):
            lineno += first_line - 1
            if not line.strip():
                continue
            encode = _compact
            event = _fast_read(line)
            if event is _SLOW:
                encode = _python
                try:
                    event = json.loads(line)
                except json.JSONDecodeError as e:
                    out.rows_read += 1
                    out.skip(f"{path}:{lineno}", f"not valid JSON: {json_error(e)}")
                    continue
                except RecursionError:
                    out.rows_read += 1
                    out.skip(f"{path}:{lineno}", TOO_DEEP)
                    continue
                except ValueError:
                    out.rows_read += 1
                    out.skip(f"{path}:{lineno}", NUMBER_TOO_LONG)
                    continue
            if _is_session(event):
                yield from self._document(path, event, out, encode, f"{path}:{lineno}")
                continue
            if key is None and held is None:
                try:
                    key = self._defaults(path, _first_ids(text))
                except _HeldTwice as e:  # each of its lines one skip; a Session line is read
                    held = str(e)
            if key is None:
                out.rows_read += 1
                out.skip(f"{path}:{lineno}", held or "")
                continue
            self._add(out, event, *key, f"{path}:{lineno}", encode)
            if out.full():
                yield

    def _one_by_one(self, path: Path, text: str, out: EventBatcher) -> Iterator[None]:
        """The events of a list or a Session's `events`, each parsed alone: one nested
        too deeply for the parser is skipped, the others are read."""
        head = text.lstrip()
        found = None if head.startswith("[") else _top_level_events(text)
        if not head.startswith("[") and found is None:
            if head.startswith("{") and sum(1 for _, x in _lines(text) if x.strip()) > 1:
                yield from self._ndjson(path, text, out)  # NDJSON saved as .json
                return
            out.rows_read += 1
            out.skip(str(path), TOO_DEEP)
            return
        start = text.index("[") + 1 if found is None else found
        if found is None:
            app, user, session = self._defaults(path)
        else:
            app, user, session = self._salvage_identity(path, text[:found])
            self._note_session(app, user, session, None)
        for index, element in enumerate(_elements(text, start)):
            locator = f"{path}: event {index}"
            try:
                event = json.loads(element)
            except RecursionError:
                out.rows_read += 1
                out.skip(locator, TOO_DEEP)
                continue
            except json.JSONDecodeError as e:
                out.rows_read += 1
                out.skip(locator, f"not valid JSON: {e.msg}")
                continue
            except ValueError:
                out.rows_read += 1
                out.skip(locator, NUMBER_TOO_LONG)
                continue
            self._add(out, event, app, user, session, locator)
            if out.full():
                yield

    def _salvage(
        self, path: Path, text: str, error: json.JSONDecodeError, out: EventBatcher
    ) -> Iterator[None]:
        """Keep the complete events before the point where a truncated/malformed file breaks."""
        listed = text.lstrip().startswith("[")
        start = text.index("[") + 1 if listed else _top_level_events(text)
        kept = 0
        if start is not None:
            events = _complete(text, start)
            first = list(islice(events, SAMPLE_IDS))
            # a list is keyed as the whole file would be (by its first events' ids): its
            # events may hold an "events" key (a tool's result) whose neighbours are no
            # Session's id, app or user
            app, user, session = (
                self._defaults(path, _ids(first))
                if listed
                else self._salvage_identity(path, text[:start])
            )
            for event in chain(first, events):  # (the rest as it is parsed: one at a time)
                self._add(out, event, app, user, session, f"{path}: event {kept}")
                kept += 1
                if out.full():
                    yield
        out.rows_read += 1
        out.skip(
            f"{path}:{error.lineno}:{error.colno}",
            f"truncated or malformed JSON ({json_error(error, 'byte')}); "
            f"{kept} complete events before it were read",
        )

    def _salvage_identity(self, path: Path, head: str) -> tuple[str, str, str]:
        """The app, user and session id of a Session object that does not parse, from
        `head`, its text before its own `events`; a value that is no valid JSON string
        (an invalid escape, a raw control character) is not taken."""

        def grab(*keys: str) -> str | None:
            for key in keys:
                m = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', head)
                if m:
                    try:
                        return json.loads(f'"{m.group(1)}"')
                    except ValueError:  # JSONDecodeError: the file's own error says where
                        continue
            return None

        app, user = grab("app_name", "appName"), grab("user_id", "userId")
        session = grab("id")
        if app and user:
            return app, user, session or self.session or _session_key(path.name)
        d_app, d_user, d_session = self._defaults(path)
        return app or d_app, user or d_user, session or d_session

    def _defaults(self, path: Path, event_ids: list[str] | None = None) -> tuple[str, str, str]:
        """The key of a file that names no app or user (an event list, NDJSON): the
        stored session that already holds its events, else the one stored session with
        its id (--session or the file name), else app and user `unknown`."""
        session = self.session or _session_key(path.name)
        if not (self.app or self.user):
            found = self._this_run(session, event_ids or [])
            if found is None and self.resolve is not None:
                keys, holding = self.resolve(session, event_ids or [])
                if holding and len(keys) > 1:
                    raise _HeldTwice(keys)
                found = keys[0] if len(keys) == 1 else None
            if found is not None:
                self.keyed[str(path)] = "/".join(found)
                self.notes["keyed_by_store"] = (
                    f"{len(self.keyed):,} file(s) without app or user keyed to the session "
                    "(stored, or read earlier in this run) that holds their events or id"
                )
                return found
        return (self.app or "unknown", self.user or "unknown", session)

    def _this_run(self, session: str, event_ids: list[str]) -> tuple[str, str, str] | None:
        """The key a file read earlier in this run gave these events or this session id
        (the store does not see this run's rows until it commits)."""
        keys = {self._event_keys[i] for i in event_ids if i in self._event_keys}
        if len(keys) == 1:
            return keys.pop()
        named = {k for k in self._files if k[2] == session and k[:2] != ("unknown", "unknown")}
        return named.pop() if len(named) == 1 else None

    def _note_session(self, app: str, user: str, session: str, updated: object) -> None:
        if not all(isinstance(v, str) and not not_unicode("", v) for v in (app, user, session)):
            return  # its events are skipped by name (EventBatcher.add or _add says why)
        try:
            update_time = float(updated) if isinstance(updated, int | float) else None
        except OverflowError:  # an integer beyond any date: unknown
            update_time = None
        self._session_rows.append({"app_name": app, "user_id": user, "session_id": session,
                                   "create_time": None, "update_time": update_time})  # fmt: skip

    def _taken_sessions(self) -> pa.Table | None:
        """The sessions noted since the last batch, as one table (None: none)."""
        rows, self._session_rows = self._session_rows, []
        return rows_table(rows, RAW_SESSION_SCHEMA) if rows else None

    def session_sources(self) -> dict[tuple[str, str, str], str]:
        """Per session: the file(s) its events came from, as the session's source. Asked
        by the pipeline while the reader thread adds files: the map is copied first, each
        copy made in one step (a loop over the live map saw it change: 5,000 files)."""
        found = [(key, tuple(files)) for key, files in list(self._files.items())]
        return {key: f"{self.kind}:{_shown(sorted(files))}" for key, files in found}

    def _add(
        self,
        out: EventBatcher,
        event: object,
        app: str,
        user: str,
        session: str,
        locator: str,
        encode: Encoder = _python,
    ) -> None:
        out.rows_read += 1
        if not isinstance(event, dict):
            out.skip(locator, f"event is a JSON {json_kind(event)}, not an object")
            return
        event_id = event.get("id")
        if not isinstance(event_id, str) or not event_id:
            out.skip(locator, "event has no 'id'")
            return
        for name, value in (("app_name", app), ("user_id", user), ("session_id", session),
                            ("event_id", event_id)):  # fmt: skip
            if why := not_unicode(name, value):  # before a reason names the id
                out.skip(locator, why)
                return
        timestamp = event.get("timestamp")
        if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
            out.skip(locator, f"event {event_id} has no numeric 'timestamp'")
            return
        try:
            epoch = float(timestamp)
        except OverflowError:
            out.skip(locator, f"event {event_id} has a 'timestamp' beyond any date")
            return
        try:
            text = encode(event)
        except RecursionError:
            out.skip(locator, TOO_DEEP)
            return
        if all(isinstance(v, str) for v in (app, user, session)):
            self._files.setdefault((app, user, session), set()).add(self._path)
            self._event_keys.setdefault(event_id, (app, user, session))
        out.add(
            app_name=app,
            user_id=user,
            session_id=session,
            event_id=event_id,
            invocation_id=event.get("invocation_id") or event.get("invocationId"),
            timestamp=epoch,
            event_json=text,
            locator=locator,
        )
