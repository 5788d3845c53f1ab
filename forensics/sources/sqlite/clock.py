"""The clock an ADK schema V0 SQLite file's event times were written in.

ADK 1.x's DatabaseSessionService stores an event's time as
`datetime.fromtimestamp(event.timestamp)`: naive, in the writing machine's local time;
the sessions table's create_time/update_time come from SQLite's CURRENT_TIMESTAMP,
which is UTC. Read as UTC, such events are off by the writer's UTC offset (public
files: +1 h, +5:30, +1 h, -5 h). The offset is detected by comparing each session's
update_time (set when its last event was appended) with its last event's stored
time, rounded to a quarter hour; `--source-tz` states it instead.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...errors import ForensicsError

QUARTER_HOUR = 900.0
TOLERANCE_S = 300.0  # an append committed within 5 minutes of its event's time
_OFFSET = re.compile(r"(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?")


@dataclass(frozen=True)
class WriterClock:
    """How the file's naive event times relate to UTC: a fixed offset, or a named zone."""

    offset_s: float = 0.0
    zone: str | None = None  # an IANA name: its offset at each instant (daylight saving)
    how: str = "UTC"  # what the ledger records: "UTC", "+05:30 (detected ...)", ...

    def to_utc(self, naive_epoch: float) -> float:
        """A stored time read as if UTC, as the real UTC instant."""
        if self.zone is None:
            return naive_epoch - self.offset_s
        wall = datetime.fromtimestamp(naive_epoch, UTC).replace(tzinfo=ZoneInfo(self.zone))
        return wall.timestamp()

    def from_utc(self, epoch: float) -> float:
        """A UTC instant as the file stores it (read as if UTC): for filters pushed down."""
        if self.zone is None:
            return epoch + self.offset_s
        local = datetime.fromtimestamp(epoch, ZoneInfo(self.zone)).replace(tzinfo=UTC)
        return local.timestamp()


def shown(offset_s: float) -> str:
    sign = "-" if offset_s < 0 else "+"
    minutes = round(abs(offset_s) / 60)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def parse(text: str) -> WriterClock:
    """`UTC`, `+05:30`, `-0500`, `+1`, or an IANA zone name such as `Europe/Berlin`."""
    value = text.strip()
    if value.upper() in ("UTC", "Z", "GMT"):
        return WriterClock(0.0, how="UTC (--source-tz)")
    match = _OFFSET.fullmatch(value)
    if match:
        hours, minutes = int(match["h"]), int(match["m"] or 0)
        if hours > 14 or minutes >= 60:
            raise ForensicsError(f"--source-tz {text!r} is not a UTC offset")
        offset = (hours * 3600 + minutes * 60) * (-1 if match["sign"] == "-" else 1)
        return WriterClock(float(offset), how=f"{shown(offset)} (--source-tz)")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ForensicsError(
            f"--source-tz {text!r} is neither a UTC offset nor a time zone name",
            hint="e.g. --source-tz +05:30, --source-tz UTC or --source-tz Europe/Berlin",
        ) from None
    return WriterClock(zone=value, how=f"{value} (--source-tz)")


def stored_epoch(value: object) -> float | None:
    """A SQLite timestamp as epoch seconds: REAL as is, DATETIME text as UTC unless it says."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def detect(con: sqlite3.Connection, has_update_time: bool) -> WriterClock:
    """The writer's offset from the sessions' UTC update times against their last events;
    UTC (no correction) when the file cannot tell, saying why."""
    if not has_update_time:
        return WriterClock(how="UTC (assumed: the sessions table has no update_time)")
    rows = con.execute(
        "SELECT s.update_time, max(e.timestamp) FROM sessions AS s JOIN events AS e "
        "ON e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id "
        "GROUP BY s.app_name, s.user_id, s.id"
    ).fetchall()
    diffs = []
    for updated, last in rows:
        a, b = stored_epoch(updated), stored_epoch(last)
        if a is not None and b is not None:
            diffs.append(b - a)
    if not diffs:
        return WriterClock(how="UTC (assumed: no session to compare its events with)")
    rounded = {round(d / QUARTER_HOUR) * QUARTER_HOUR for d in diffs}
    close = all(abs(d - round(d / QUARTER_HOUR) * QUARTER_HOUR) <= TOLERANCE_S for d in diffs)
    if len(rounded) != 1 or not close:
        return WriterClock(
            how=f"UTC (assumed: {len(diffs)} sessions disagree on the writer's offset)"
        )
    (offset,) = rounded
    if offset == 0:
        return WriterClock(how=f"UTC (detected from {len(diffs)} sessions)")
    if abs(offset) > timedelta(hours=14).total_seconds():
        return WriterClock(how=f"UTC (assumed: an offset of {shown(offset)} is not a time zone)")
    return WriterClock(offset, how=f"{shown(offset)} (detected from {len(diffs)} sessions)")
