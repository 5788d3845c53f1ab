"""Which sessions and events a command is about: app, user, session, a time range.

One value for every layer: a loader pushes it into the source's SQL, the store into
its own queries, so nothing is filtered in Python after everything was read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime

from .errors import ForensicsError

FAMILIES = ("adk", "claude-code")  # sessions.family


@dataclass(frozen=True)
class Selection:
    """Equality on (app, user, session), the columns of ADK's index in its order, a time
    range [since, until) in epoch seconds (UTC), and the family that wrote the sessions."""

    app: str | None = None
    user: str | None = None
    session: str | None = None
    since: float | None = None  # inclusive
    until: float | None = None  # exclusive
    family: str | None = None  # the agent software that wrote the sessions: adk, claude-code

    @classmethod
    def parse(
        cls,
        app: str | None = None,
        user: str | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        family: str | None = None,
    ) -> Selection:
        """From the command line's text: times in ISO 8601, an empty range refused."""
        if family is not None and family not in FAMILIES:
            raise ForensicsError(
                f"--source {family!r} is not a family of agent software this reads",
                hint="choose one of: " + ", ".join(FAMILIES),
            )
        selection = cls(
            app,
            user,
            session,
            parse_time(since, "--since"),
            parse_time(until, "--until"),
            family,
        )
        if (
            selection.since is not None
            and selection.until is not None
            and selection.since >= selection.until
        ):
            raise ForensicsError(f"--since {since} is not before --until {until}")
        return selection

    def as_dict(self) -> dict[str, object]:
        """The filters that are set, as the ledger records them."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def narrowed(self, app: str, user: str, session: str) -> Selection:
        """This selection for exactly one session key."""
        return Selection(app, user, session, self.since, self.until, self.family)


def parse_time(value: str | None, option: str) -> float | None:
    """ISO 8601 (UTC unless it says otherwise) as epoch seconds; `option` names it in errors."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ForensicsError(
            f"{option} {value!r} is not a date or time",
            hint="use ISO 8601 in UTC, e.g. 2026-10-01 or 2026-10-01T12:30:00",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
