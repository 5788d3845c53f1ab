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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import SourceError
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
        handle = path.open(encoding="utf-8-sig", errors="strict")
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from e
    with handle:
        try:
            head = handle.readline()
            try:
                first = json.loads(head) if head.strip() else None
                one_per_line = isinstance(first, dict) and "hits" not in first
            except json.JSONDecodeError:
                one_per_line = False
            if not one_per_line:
                handle.seek(0)
                yield from _whole(path, handle.read())
                return
            handle.seek(0)
            yield from _lines(path, handle)
        except UnicodeDecodeError as e:
            yield Skip(str(path), f"not UTF-8 text: {e.reason} at byte {e.start}")


def _lines(path: Path, handle: Any) -> Iterator[tuple[str, Any] | Skip]:
    pending: str | None = None  # the index/_id a `_bulk` action line named
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        locator = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            yield Skip(f"{locator}:{e.colno}", f"not valid JSON: {e.msg}")
            pending = None
            continue
        action = _action(value)
        if action is not None:
            pending = action or f"line {number}"
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
        yield Skip(f"{path}:{e.lineno}:{e.colno}", f"not valid JSON: {e.msg}")
        return
    if isinstance(value, dict) and isinstance(value.get("hits"), dict):
        hits = value["hits"].get("hits")
        if not isinstance(hits, list):
            yield Skip(str(path), "a _search response whose hits.hits is not a list")
            return
        items: list[Any] = hits
        label = "hits.hits"
    elif isinstance(value, list):
        items, label = value, ""
    else:
        items, label = [value], None  # one pretty-printed document
    for index, item in enumerate(items):
        locator = f"{path}: {label}[{index}]" if label is not None else str(path)
        hit = _hit(item)
        if hit is not None:
            where, item = hit
            locator = f"{locator} ({where})" if where else locator
        yield locator, item
