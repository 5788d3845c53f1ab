"""Connection strings without their secrets: what may appear in output, logs and the store."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_KEYS = {"password", "sslpassword", "passfile"}
_KV_SECRET = re.compile(r"""(\b(?:password|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)""", re.I)


def redact(dsn: str) -> str:
    """Return `dsn` with any password removed; URL and key=value forms both."""
    if "://" not in dsn:
        return _KV_SECRET.sub(r"\1***", dsn)
    try:
        parts = urlsplit(dsn)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}@{host}"
        query = urlencode(
            [(k, "***" if k.lower() in _SECRET_KEYS else v) for k, v in parse_qsl(parts.query)]
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<unparseable connection string>"


class Secret(str):
    """A DSN whose `str`/`repr` hide the password; `.reveal()` gives the real one."""

    def __new__(cls, value: str):
        obj = super().__new__(cls, redact(value))
        obj._value = value
        return obj

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({str(self)!r})"
