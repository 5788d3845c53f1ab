"""The stored sessions as `model` records, for the analyses: selection pushed into SQL."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ForensicsError
from ..model import CompactionRange, Event, Part, Release, Session, parse_version
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


def resolve_session(
    store: Store, session_id: str, app: str | None = None, user: str | None = None
) -> tuple[str, str, str]:
    """The one (app, user, session) key a session id names; an error lists the choices."""
    keys = store.query("store/session_keys", session=session_id, app=app, user=user)
    if not keys:
        known = [
            r[0] for r in store.run("SELECT session_id FROM sessions ORDER BY session_id LIMIT 10")
        ]
        raise ForensicsError(
            f"no session {session_id!r} in the store",
            hint=f"known sessions include: {', '.join(known)}"
            if known
            else "the store holds no sessions yet; run `forensics ingest ...`",
        )
    if len(keys) > 1:
        choices = "; ".join(f"--app {a} --user {u}" for a, u, _ in keys)
        raise ForensicsError(
            f"session id {session_id!r} exists in {len(keys)} apps/users",
            hint=f"add one of: {choices}",
        )
    app_name, user_id, sid = keys[0]
    return app_name, user_id, sid


def result_preview(store: Store, key: tuple[str, str, str], function_call_id: str) -> str | None:
    """The stored preview (first 2,000 characters) of one tool call's result."""
    rows = store.query(
        "store/result_preview",
        app=key[0],
        user=key[1],
        session=key[2],
        function_call_id=function_call_id,
    )
    return rows[0][0] if rows else None


def build_sessions(events: Iterable[Row], parts: Iterable[Row]) -> list[Session]:
    """Group rows of queries/store/session_events.sql and session_parts.sql into sessions."""
    by_event: dict[tuple[str, str, str, str], tuple[list[Part], list[Part]]] = {}
    for r in parts:
        key = (r["app_name"], r["user_id"], r["session_id"], r["event_id"])
        content, summary = by_event.setdefault(key, ([], []))
        part = Part(
            r["origin"],
            r["part_index"],
            r["kind"],
            r["tool_name"],
            r["function_call_id"],
            bool(r["has_thought_signature"]),
            r["chars"],
            r["relay_chars"],
            r["row_count"],
        )
        (summary if r["origin"] == "compaction" else content).append(part)
    sessions: list[Session] = []
    current: Session | None = None
    for r in events:
        key3 = (r["app_name"], r["user_id"], r["session_id"])
        if current is None or current.key != key3:
            current = Session(*key3, [], r.get("source") or "", family=r.get("family") or "adk")
            sessions.append(current)
        content, summary = by_event.get((*key3, r["event_id"]), ([], []))
        start, end = r["compaction_start"], r["compaction_end"]
        current.events.append(
            Event(
                r["event_id"],
                r["invocation_id"],
                r["author"],
                r["branch"],
                r["isolation_scope"],
                r["epoch"],
                bool(r["partial"]),
                r["error_code"],
                r["error_message"],
                bool(r["is_compaction"]),
                CompactionRange(start, end) if start is not None and end is not None else None,
                r["prompt_tokens"],
                r["cached_tokens"],
                r["candidates_tokens"],
                frozenset(r["long_running_tool_ids"] or ()),
                r["model_version"],
                content,
                summary,
            )
        )
    return sessions


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


def stored_key(store: Store, session_id: str, event_ids: list[str]) -> tuple[str, str, str] | None:
    """The one stored session that holds these events, else the one stored session with
    this id; None when there is none or more than one."""
    if event_ids:
        keys = store.query("store/keys_of_events", events=event_ids)
        if len(keys) == 1:
            app, user, sid = keys[0]
            return (app, user, sid)
    keys = store.query("store/session_keys", session=session_id, app=None, user=None)
    if len(keys) == 1:
        app, user, sid = keys[0]
        return (app, user, sid)
    return None
