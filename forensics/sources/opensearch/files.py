"""OpenSearch documents saved to files, read offline and streamed.

Three layouts are read, told apart by the file's first line:
- NDJSON of `_source` documents (one document per line), which is also what Data
  Prepper's and the collectors' file sinks write;
- elasticdump's lines and `_bulk` bodies: one hit per line (`{"_index", "_id",
  "_source"}`), or action lines (`{"index": {"_index", "_id"}}`) each followed by its
  document;
- a `_search` response body (`{"hits": {"hits": [...]}}`, pretty-printed or not), or a
  JSON list of documents or of hits; read whole, since JSON has no line to stop at.

A line that is not JSON is one skip with its file and line; the others are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...errors import NUMBER_TOO_LONG, SourceError
from ...json_text import after_space, depth_at, value_end
from ...model import Skip

_ACTIONS = ("index", "create", "update", "delete")


def _hit(value: Any) -> tuple[str | None, dict[str, Any]] | None:
    """(index/_id, _source) when the value is a hit, else None."""
    if isinstance(value, dict) and isinstance(value.get("_source"), dict):
        where = "/".join(str(value[k]) for k in ("_index", "_id") if value.get(k) is not None)
        return where or None, value["_source"]
    return None


def _action(value: Any) -> str | None:
    """A `_bulk` action line's index/_id, or None for a line that is not one."""
    if isinstance(value, dict) and len(value) == 1:
        (name,) = value
        body = value[name]
        if name in _ACTIONS and isinstance(body, dict) and set(body) <= {
            "_index",
            "_id",
            "_type",
            "routing",
            "pipeline",
        }:
            return "/".join(str(body[k]) for k in ("_index", "_id") if body.get(k) is not None)
    return None


def documents(path: Path) -> Iterator[tuple[str, Any] | Skip]:
    """(locator, document) for each document of one file, or a Skip for what cannot be
    read; SourceError when the file itself cannot be opened."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from e
    with handle:
        head = handle.readline(1 << 20)
        if not head.strip() and not handle.read(1):
            yield Skip(str(path), "empty file")
            return
        handle.seek(0)
        if _whole_document(head):
            try:
                text = handle.read().decode("utf-8-sig")
            except UnicodeDecodeError as e:
                yield Skip(str(path), f"not UTF-8 text: {e.reason} at byte {e.start}")
                return
            yield from _whole(path, text)
        else:
            yield from _lines(path, handle)


def _whole_document(head: bytes) -> bool:
    """Whether the file is one JSON value (a list, a `_search` body, a pretty-printed
    document) rather than one document per line: its first line is `[`-led, or not a
    complete JSON value, or a `_search` body (`hits.hits`)."""
    line = head.decode("utf-8-sig", errors="replace").strip()
    if line.startswith("["):
        return True
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # (a JSONDecodeError, or a number too long)
        return line.startswith("{") and not line.endswith("}")  # an object over lines
    return _search_hits(first) is not None


def _an_object(lines: list[bytes]) -> bool:
    try:
        return bool(lines) and isinstance(json.loads(lines[0]), dict)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError too)
        return False


def _search_hits(value: Any) -> list[Any] | None:
    """A `_search` response body's hits, or None for a value that is not one."""
    if isinstance(value, dict) and isinstance(value.get("hits"), dict):
        hits = value["hits"].get("hits")
        return hits if isinstance(hits, list) else None
    return None


def _lines(path: Path, handle: Any) -> Iterator[tuple[str, Any] | Skip]:
    pending: str | None = None  # the index/_id a `_bulk` action line named
    for number, raw in enumerate(handle, 1):
        if not raw.strip():
            continue
        locator = f"{path}:{number}"
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as e:
            yield Skip(locator, f"not UTF-8 text: {e.reason} at column {e.start + 1}")
            pending = None
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            yield Skip(f"{locator}:{e.colno}", f"not valid JSON: {e.msg}")
            pending = None
            continue
        except RecursionError:
            yield Skip(locator, "not read: JSON nested too deeply")
            pending = None
            continue
        except ValueError:
            yield Skip(locator, f"not read: {NUMBER_TOO_LONG}")
            pending = None
            continue
        action = _action(value)
        if action is not None:
            pending = action or f"line {number}"
            continue
        hits = _search_hits(value)
        if hits is not None:  # NDJSON of _search bodies: one per line
            for index, item in enumerate(hits):
                found = _hit(item)
                where, doc = found if found else (None, item)
                yield f"{locator}: hits.hits[{index}]" + (f" ({where})" if where else ""), doc
            pending = None
            continue
        hit = _hit(value)
        if hit is not None:
            where, value = hit
            locator = f"{locator} ({where})" if where else locator
        elif pending is not None:
            locator = f"{locator} ({pending})"
        pending = None
        yield locator, value


def _whole(path: Path, text: str) -> Iterator[tuple[str, Any] | Skip]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        lines = text.encode("utf-8").splitlines(keepends=True)
        if e.msg == "Extra data" or _an_object(lines[1:2]):
            # one value per line after all (_search bodies; NDJSON whose first line is bad)
            yield from _lines(path, iter(lines))
            return
        problem = Skip(f"{path}:{e.lineno}:{e.colno}", f"not valid JSON: {e.msg}")
    except RecursionError:
        problem = Skip(str(path), "not read: JSON nested too deeply")
    except ValueError:
        problem = Skip(str(path), f"not read: {NUMBER_TOO_LONG}")
    else:
        hits = _search_hits(value)
        if isinstance(value, dict) and isinstance(value.get("hits"), dict) and hits is None:
            yield Skip(str(path), "a _search response whose hits.hits is not a list")
            return
        if hits is not None:
            yield from _items(path, hits, "hits.hits")
        elif isinstance(value, list):
            yield from _items(path, value, "")
        else:
            yield from _items(path, [value], None)  # one pretty-printed document
        return
    yield from _salvaged(path, text, problem)


def _items(path: Path, items: Iterable[Any], label: str | None,
           first: int = 0) -> Iterator[tuple[str, Any]]:  # fmt: skip
    """The documents (or hits) of a list, each with its place: `label` and its index."""
    for index, item in enumerate(items, first):
        locator = f"{path}: {label}[{index}]" if label is not None else str(path)
        hit = _hit(item)
        if hit is not None:
            where, item = hit
            locator = f"{locator} ({where})" if where else locator
        yield locator, item


# a _search body's hits.hits: the outer "hits" object, its total and max_score, its list
_HITS = re.compile(r'"hits"\s*:\s*\{[^\[\]]*?"hits"\s*:\s*\[')


def _salvaged(path: Path, text: str, problem: Skip) -> Iterator[tuple[str, Any] | Skip]:
    """A list of documents or a _search body that cannot be read whole: a document nested
    too deeply or holding a number too long is skipped by its index, the others read; where
    the list breaks (cut short), the documents before it are kept and the rest skipped,
    saying where. `problem`, the whole file's, when it holds no such list."""
    at, label = after_space(text, 0), ""
    if not text.startswith("[", at):
        found = _HITS.search(text)
        if found is None or depth_at(text, found.start()) != 1:  # (a top-level "hits" only)
            yield problem
            return
        at, label = found.end() - 1, "hits.hits"
    decoder = json.JSONDecoder()
    read = index = 0
    at = after_space(text, at + 1)
    skipped, broken, ended = False, None, text.startswith("]", at)
    while not ended:
        where = f"{path}: {label}[{index}]"
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            broken = Skip(f"{path}:{e.lineno}:{e.colno}", f"not valid JSON: {e.msg}")
            break
        except (RecursionError, ValueError) as e:  # (ValueError: a number too long)
            why = "JSON nested too deeply" if isinstance(e, RecursionError) else NUMBER_TOO_LONG
            found_end = value_end(text, at)
            if found_end is None:  # the text ends inside it: cut short there
                broken = Skip(where, f"not read: {why}")
                break
            yield Skip(where, f"not read: {why}")
            skipped, end = True, found_end
        else:
            yield from _items(path, [value], label, index)
            read += 1
        index += 1
        at = after_space(text, end)
        ended = text.startswith("]", at)
        if not ended and not text.startswith(",", at):
            missing = json.JSONDecodeError("Expecting ',' delimiter", text, at)  # (line, column)
            broken = Skip(f"{path}:{missing.lineno}:{missing.colno}",
                          f"not valid JSON: {missing.msg}")  # fmt: skip
            break
        at = after_space(text, at + 1)
    if broken is not None:
        kept = f"the {read:,} documents before it read, none after" if read else "none read"
        yield Skip(broken.locator, f"{broken.reason} ({kept})")
    elif not skipped:  # every document read: what json refused is after the list
        yield Skip(problem.locator, f"{problem.reason} (after the documents, all read)")
