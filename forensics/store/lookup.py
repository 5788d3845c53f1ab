"""Finding a stored session a command names: the one key an id (with --app/--user) is,
the errors that say which ids exist, and a stored result's preview. Apart from
reads.py, whose rules the facts are built with (analysis/rules.py hashes it): a
change to what these say rebuilds no one's facts."""

from __future__ import annotations

from ..errors import ForensicsError
from ..sanitize import shell_word
from .handle import Store


def _no_session(store: Store, session_id: str, logged: bool = False) -> ForensicsError:
    """The error of a session id nothing names, with the first ten ids the store knows
    (and, `logged`, those its logged records and traced requests name)."""
    query = "store/named_sessions" if logged else "store/session_ids"
    known = [row[0] for row in store.query(query)]
    return ForensicsError(
        f"no session {session_id!r} in the store",
        hint=f"known sessions include: {', '.join(known)}"
        if known
        else "the store holds no sessions yet; run `forensics ingest ...`",
    )


def _not_of(store: Store, session_id: str, app: str | None, user: str | None) -> None:
    """The error of a session id whose stored sessions `--app`/`--user` leave out (the
    filter, not the id, is what is wrong), naming whose they are; nothing otherwise."""
    if app is None and user is None:
        return
    other = store.query("store/session_keys", session=session_id, app=None, user=None)
    if other:
        asked = " ".join(f"--{flag} {shell_word(value)}"
                         for flag, value in (("app", app), ("user", user))
                         if value is not None)  # fmt: skip
        found = "; ".join(f"--app {shell_word(a)} --user {shell_word(u)}" for a, u, _ in other)
        raise ForensicsError(f"session {session_id!r} is not of {asked}", hint=f"it is of {found}")


def resolve_session(
    store: Store, session_id: str, app: str | None = None, user: str | None = None
) -> tuple[str, str, str]:
    """The one (app, user, session) key a session id names; an error lists the choices."""
    keys = store.query("store/session_keys", session=session_id, app=app, user=user)
    if not keys:
        _not_of(store, session_id, app, user)
        raise _no_session(store, session_id)
    if len(keys) > 1:
        choices = "; ".join(f"--app {shell_word(a)} --user {shell_word(u)}" for a, u, _ in keys)
        raise ForensicsError(
            f"session id {session_id!r} exists in {len(keys)} apps/users",
            hint=f"add one of: {choices}",
        )
    app_name, user_id, sid = keys[0]
    return app_name, user_id, sid


def check_session_named(
    store: Store, session_id: str, app: str | None = None, user: str | None = None
) -> None:
    """An error, as resolve_session's, unless a stored session (of `app` and `user`), a
    logged record or a traced request names `session_id`: a session may be known from
    its logs or traces alone."""
    if not store.query("store/session_named", session=session_id, app=app, user=user)[0][0]:
        _not_of(store, session_id, app, user)
        raise _no_session(store, session_id, logged=True)


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


def stored_keys(
    store: Store, session_id: str, event_ids: list[str]
) -> tuple[list[tuple[str, str, str]], bool]:
    """The stored sessions that hold any of these events (and True), else those with
    this session id (and False)."""
    if event_ids:
        keys = store.query("store/keys_of_events", events=event_ids)
        if keys:
            return [(app, user, sid) for app, user, sid in keys], True
    keys = store.query("store/session_keys", session=session_id, app=None, user=None)
    return [(app, user, sid) for app, user, sid in keys], False
