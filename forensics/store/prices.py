"""A prices file kept in the store (`forensics prices --keep FILE`): its text, its name
and when it was kept, in `store_meta`; every later cost uses it unless given another."""

from __future__ import annotations

from datetime import UTC, datetime

from .handle import Store

_KEYS = ("prices_toml", "prices_name", "prices_kept_at")


def kept(store: Store) -> tuple[str, str, str] | None:
    """(text, file name, when kept) of the kept prices file, if any."""
    rows = dict(
        store.run("SELECT key, value FROM store_meta WHERE key IN (?, ?, ?)", list(_KEYS))
    )
    if "prices_toml" not in rows:
        return None
    return rows["prices_toml"], rows.get("prices_name", ""), rows.get("prices_kept_at", "")


def keep(store: Store, text: str, name: str) -> str:
    """Keep a (checked) prices file's text; returns when."""
    when = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    with store.transaction():
        for key, value in zip(_KEYS, (text, name, when), strict=True):
            store.run("INSERT OR REPLACE INTO store_meta VALUES (?, ?)", [key, value])
    return when


def forget(store: Store) -> bool:
    """Drop the kept prices file; False when none was kept."""
    had = kept(store) is not None
    store.run("DELETE FROM store_meta WHERE key IN (?, ?, ?)", list(_KEYS))
    return had
