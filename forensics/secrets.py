"""Connection strings without their secrets: what may appear in output, logs and the store."""

from __future__ import annotations

import re
from urllib.parse import quote, urlencode

from psycopg import conninfo

_SECRET_KEYS = {"password", "sslpassword", "sslkey", "passfile"}
UNPARSEABLE = "<unparseable connection string>"


def _kv(value: str) -> str:
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def redact(dsn: str) -> str:
    """`dsn` rebuilt by libpq's own parser without password and key material.

    Parsing rather than pattern matching: libpq accepts a `#` or `?` inside a URL's
    password, which a URL parser takes for the fragment or the query.
    """
    if unusable(dsn):
        return UNPARSEABLE
    try:
        parsed = conninfo.conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - any parse failure: show nothing of it
        return UNPARSEABLE
    params = {k: str(v) for k, v in parsed.items() if k not in _SECRET_KEYS}
    if "://" not in dsn:
        return " ".join(f"{k}={_kv(v)}" for k, v in params.items())
    scheme = dsn.split("://", 1)[0]
    user, host = params.pop("user", None), params.pop("host", None)
    port, dbname = params.pop("port", None), params.pop("dbname", None)
    netloc = f"{quote(user, safe='')}@" if user else ""
    if host and "/" in host:  # a socket directory goes in the query, as libpq allows
        params = {"host": host, **params}
    elif host:
        netloc += host + (f":{port}" if port else "")
    path = f"/{quote(dbname, safe='')}" if dbname else ""
    query = f"?{urlencode(params)}" if params else ""
    return f"{scheme}://{netloc}{path}{query}"


def password(dsn: str) -> str | None:
    """The password in `dsn`, if any, so that messages quoting it can be scrubbed."""
    try:
        return conninfo.conninfo_to_dict(dsn).get("password")  # type: ignore[return-value]
    except Exception:  # noqa: BLE001
        return None


def unusable(dsn: str) -> str | None:
    """Why `dsn` must not be used or shown, or None: libpq cannot read it, or a raw `@`
    in its user or password part would make libpq read part of the password as the
    host (and print it in its error)."""
    try:
        conninfo.conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001
        return "the connection string cannot be read (it is not shown: it may hold a password)"
    if "://" in dsn:
        rest = dsn.split("://", 1)[1].split("?", 1)[0]
        authority, _, path = rest.partition("/")
        # a raw '@' twice before the host, or an '@' after the first '/', means libpq
        # reads part of the password as the host, port or database name
        if authority.count("@") > 1 or "@" in path:
            return (
                "the connection string has an '@' that libpq would not read as the end of "
                "the password: a password's '@', '/' or ':' must be written %40, %2F, %3A "
                "(it is not shown: it holds a password)"
            )
    return None


# userinfo of anything URL-shaped, one slash or two, any scheme: the text between the
# user's colon and the LAST `@` (a raw `@` in a password makes libpq split it)
_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/{0,2}[^:/@]*:(?P<secret>.*)@[^@]*$", re.S)
_KV_SECRET = re.compile(r"\b(?:password|sslpassword)\s*=\s*(?P<secret>'(?:[^'\\]|\\.)*'|\S+)", re.I)


def secret_candidates(dsn: str) -> list[str]:
    """Every string of `dsn` that may be (part of) a secret, longest first: what libpq
    parses as the password, a URL's whole userinfo password, its pieces around a raw
    `@` or `:`, and `password=` values of the key=value form."""
    found: set[str] = set()
    parsed = password(dsn)
    if parsed:
        found.add(parsed)
    for match in (_USERINFO.match(dsn.strip()), *_KV_SECRET.finditer(dsn)):
        if match is None:
            continue
        whole = match.group("secret").strip("'")
        found.add(whole)
        found |= {piece for piece in re.split(r"[@:]", whole) if len(piece) >= 2}
    return sorted((c for c in found if c), key=len, reverse=True)


class Secret(str):
    """A DSN whose `str`/`repr` hide the password; `.reveal()` gives the real one."""

    _value: str

    def __new__(cls, value: str) -> Secret:
        obj = super().__new__(cls, redact(value))
        obj._value = value
        return obj

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({str(self)!r})"


def scrub(message: str, dsn: Secret) -> str:
    """A driver message without the DSN's secrets, whatever the DSN's shape and whatever
    the message quotes: the whole DSN as given becomes its redacted form first."""
    raw = dsn.reveal()
    if raw and raw in message:
        message = message.replace(raw, str(dsn))
    for secret in secret_candidates(raw):
        if len(secret) <= 3:  # a short one only where it stands alone, or it garbles all
            message = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", message)
        else:
            message = message.replace(secret, "***")
    return message
