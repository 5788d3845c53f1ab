"""Connection strings without their secrets: what may appear in output, logs and the store."""

from __future__ import annotations

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
    """A driver message without the DSN's password, whatever the message quotes."""
    secret = password(dsn.reveal())
    return message.replace(secret, "***") if secret else message
