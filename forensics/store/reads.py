"""The stored sessions as `model` records, for the analyses: selection pushed into SQL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..model import (
    CompactionRange,
    Event,
    Part,
    Release,
    Session,
    is_time,
    pair_unidentified_calls,
    parse_version,
)
from ..selection import Selection
from .handle import Store

Row = Mapping[str, Any]


def load_sessions(
    store: Store,
    selection: Selection | None = None,
    *,
    session_ids: list[str] | None = None,
    source: str | None = None,
) -> list[Session]:
    """The selected sessions with their events and parts, in stored order.

    `session_ids` and `source` narrow further (the ratio fit's sample)."""
    selection = selection or Selection()
    params = {
        "app": selection.app,
        "user": selection.user,
        "session": selection.session,
        "since": selection.since,
        "until": selection.until,
        "sessions": session_ids,
        "source": source,
    }
    events = store.arrow("store/session_events", **params).to_pylist()
    parts = store.arrow("store/session_parts", **params).to_pylist()
    sessions = build_sessions(events, parts)
    evidence = session_release_evidence(store, selection)
    for session in sessions:
        session.release = evidence.get(session.key)
    return sessions


BASIS_ORDER = ("given", "traced", "inferred")  # the first found wins


def session_release_evidence(
    store: Store, selection: Selection | None = None
) -> dict[tuple[str, str, str], Release]:
    """Per session key, the best evidence of its google-adk release: given at ingest,
    else traced (the newest release its traced requests name), else inferred."""
    selection = selection or Selection()
    found: dict[tuple[str, str, str], dict[str, Release]] = {}
    for app, user, sid, basis, version, since, until, detail in store.query(
        "store/session_release_evidence",
        app=selection.app,
        user=selection.user,
        session=selection.session,
    ):
        found.setdefault((app, user, sid), {})[basis] = Release(
            version, basis, detail, since, until
        )
    # traces name the session id alone: a release counts for the stored session whose
    # event the traced request answered, not for every session with that id
    traced: dict[tuple[str, str, str], list[str]] = {}
    for app, user, sid, version in store.query("store/session_releases"):
        traced.setdefault((app, user, sid), []).append(version)
    chosen = {
        key: choose_release(found.get(key, {}), traced.get(key, [])) for key in {*found, *traced}
    }
    return {key: release for key, release in chosen.items() if release is not None}


def choose_release(by_basis: Mapping[str, Release], traced: Iterable[str]) -> Release | None:
    """The best evidence of one session's release: given at ingest, else traced (the
    newest X.Y.Z release its traced requests name), else inferred; None without any."""
    newest: str | None = None
    for version in traced:
        try:
            if newest is None or parse_version(version) > parse_version(newest):
                newest = version
        except ValueError:
            continue  # a header that names no X.Y.Z release
    found = dict(by_basis)
    if newest is not None:
        found["traced"] = Release(
            newest, "traced", "named by ADK's trace of the session's requests"
        )
    return next((found[b] for b in BASIS_ORDER if b in found), None)


# the columns of queries/store/session_events.sql and session_parts.sql an Event and a
# Part are built from, in the order `_session` reads them
EVENT_COLUMNS = ("event_id", "invocation_id", "author", "branch", "isolation_scope", "epoch",
                 "partial", "error_code", "error_message", "is_compaction", "compaction_start",
                 "compaction_end", "prompt_tokens", "cached_tokens", "candidates_tokens",
                 "long_running_tool_ids", "model_version")  # fmt: skip
PART_COLUMNS = ("event_id", "origin", "part_index", "kind", "tool_name", "function_call_id",
                "has_thought_signature", "chars", "relay_chars", "row_count")  # fmt: skip
_KEY = ("app_name", "user_id", "session_id")
Key = tuple[str, str, str]


def build_sessions(events: Iterable[Row], parts: Iterable[Row]) -> list[Session]:
    """Group rows of queries/store/session_events.sql and session_parts.sql into sessions
    (a session per run of event rows of one key, as they come)."""
    parts_of: dict[Key, list[tuple[Any, ...]]] = {}
    for r in parts:
        key = (r["app_name"], r["user_id"], r["session_id"])
        parts_of.setdefault(key, []).append(tuple(r[c] for c in PART_COLUMNS))
    runs: list[tuple[Key, list[tuple[Any, ...]], str, str]] = []
    for r in events:
        key = (r["app_name"], r["user_id"], r["session_id"])
        if not runs or runs[-1][0] != key:
            runs.append((key, [], r.get("source") or "", r.get("family") or "adk"))
        runs[-1][1].append(tuple(r[c] for c in EVENT_COLUMNS))
    return [
        session_of(key, rows, parts_of.get(key, []), source, family)
        for key, rows, source, family in runs
    ]


def session_tables(
    events: pa.Table, parts: pa.Table
) -> Iterator[tuple[Key, list[tuple[Any, ...]], list[tuple[Any, ...]], str]]:
    """Per session of tables of those rows, sorted by session (store/facts.py's stale
    runs): its key, event tuples (EVENT_COLUMNS), part tuples (PART_COLUMNS) and family;
    columns zipped into tuples, never a dict per row."""
    event_keys = zip(*(events.column(c).to_pylist() for c in _KEY), strict=True)
    event_rows = zip(*(events.column(c).to_pylist() for c in EVENT_COLUMNS), strict=True)
    families = events.column("family").to_pylist()
    part_keys = zip(*(parts.column(c).to_pylist() for c in _KEY), strict=True)
    part_rows = zip(*(parts.column(c).to_pylist() for c in PART_COLUMNS), strict=True)
    parts_of: dict[Key, list[tuple[Any, ...]]] = {}
    for key, row in zip(part_keys, part_rows, strict=True):
        parts_of.setdefault(key, []).append(row)
    current: Key | None = None
    rows: list[tuple[Any, ...]] = []
    family = ""
    for key, row, fam in zip(event_keys, event_rows, families, strict=True):
        if key != current:
            if current is not None:
                yield current, rows, parts_of.pop(current, []), family
            current, rows, family = key, [], fam or "adk"
        rows.append(row)
    if current is not None:
        yield current, rows, parts_of.pop(current, []), family


def session_of(
    key: Key,
    events: list[tuple[Any, ...]],
    parts: list[tuple[Any, ...]],
    source: str = "",
    family: str = "adk",
) -> Session:
    """One session from its event tuples (EVENT_COLUMNS, in stored order) and part
    tuples (PART_COLUMNS, in key order)."""
    by_event: dict[str, tuple[list[Part], list[Part]]] = {}
    for event_id, origin, index, kind, tool, call_id, signed, chars, relay, rows in parts:
        content, summary = by_event.setdefault(event_id, ([], []))
        part = Part(origin, index, kind, tool, call_id, bool(signed), chars, relay, rows)
        (summary if origin == "compaction" else content).append(part)
    session = Session(*key, [], source, family=family)
    for row in events:
        (event_id, invocation, author, branch, scope, epoch, partial, code, message,
         compaction, start, end, prompt, cached, candidates, long_running, model) = row  # fmt: skip
        content, summary = by_event.get(event_id) or ([], [])
        session.events.append(
            Event(
                event_id, invocation, author, branch, scope, epoch, bool(partial), code,
                message, bool(compaction),
                # (a range that is no time, NaN or past 3000, is as none: unknown)
                CompactionRange(start, end) if is_time(start) and is_time(end) else None,
                prompt, cached, candidates, frozenset(long_running or ()), model,
                content, summary,
            )  # fmt: skip
        )
    pair_unidentified_calls(session.events)
    return session


def traced_windows(
    store: Store, session: str | None = None
) -> dict[tuple[str, str], tuple[dict[str, int], int]]:
    """(session id, event id) -> the traced request's characters by role (user, model,
    tool) and its system instruction plus tool declarations, for every traced call."""
    rows = store.arrow("store/traced_calls", session=session).to_pylist()
    return {
        (r["session_id"], r["event_id"]): (
            {"user": r["chars_user"], "model": r["chars_model"], "tool": r["chars_tool"]},
            r["system_chars"] + r["tools_chars"],
        )
        for r in rows
    }
