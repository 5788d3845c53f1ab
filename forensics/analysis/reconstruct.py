"""The selected sessions, read once, every call's window rebuilt once, the ratio fitted.

Occupancy is given twice: `measured` (the call's own usage_metadata.prompt_token_count)
and `estimated` (the window's characters over a chars-per-token ratio fitted on
the calls that have both). What the measured figure holds beyond the visible
window (system instruction, tool schemas) is `inferred`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..families.adk.windows import calls
from ..model import Call, Session
from ..selection import Selection
from ..store import Store
from ..store.reads import fit_keys, load_sessions
from .ratio import Ratio, fit_ratio

FIT_SESSIONS = 50  # per source: hundreds of calls for a steady fit, cheap to rebuild


@dataclass
class Reconstruction:
    """Every call of the selected sessions, with the ratio that sizes them."""

    sessions: list[Session]
    calls: list[tuple[Session, Call]]
    ratios: dict[str, Ratio]  # per source: each provider and tokenizer has its own
    _by_session: dict[int, list[Call]] | None = field(default=None, repr=False)

    def ratio(self, session: Session) -> Ratio:
        return self.ratios[session.source]

    def calls_of(self, session: Session) -> list[Call]:
        """The session's calls in order (the grouping is built once)."""
        if self._by_session is None:
            self._by_session = defaultdict(list)
            for owner, call in self.calls:
                self._by_session[id(owner)].append(call)
        return self._by_session.get(id(session), [])


def reconstruct(store: Store, selection: Selection | None = None) -> Reconstruction:
    """Every call of the selected sessions, and per source a ratio fitted on the same sample
    whatever is selected: the source's FIT_SESSIONS sessions with the most measured calls
    (so `calls SESSION` and `calls` give a call the same estimate)."""
    sessions = load_sessions(store, selection)
    every = [(s, c) for s in sessions for c in calls(s)]
    by_key = {s.key: s for s in sessions}
    calls_by_session: dict[int, list[Call]] = defaultdict(list)
    for owner, call in every:
        calls_by_session[id(owner)].append(call)
    ratios: dict[str, Ratio] = {}
    for source in dict.fromkeys(s.source for s in sessions):
        keys = fit_keys(store, source, FIT_SESSIONS)
        missing = sorted({k[2] for k in keys if k not in by_key})
        extra = {
            s.key: s
            for s in (
                load_sessions(store, session_ids=missing, source=source) if missing else []
            )
        }
        samples = []
        for key in keys:
            found_owner = by_key.get(key) or extra.get(key)
            if found_owner is None:
                continue
            owner = found_owner
            found = calls_by_session[id(owner)] if key in by_key else list(calls(owner))
            samples += [
                (c.event.author or "", c.chars, c.event.prompt_tokens)
                for c in found
                if c.kind == "agent" and c.event.prompt_tokens
            ]
        ratios[source] = fit_ratio(samples)
    return Reconstruction(sessions, every, ratios, calls_by_session)
