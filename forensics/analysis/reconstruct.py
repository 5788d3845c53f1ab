"""The selected sessions, read once, every call's window rebuilt once, the ratios fitted.

Occupancy is given twice: `measured` (the call's own usage_metadata.prompt_token_count)
and `estimated` (the window's characters over a chars-per-token ratio fitted per model
on the calls that have both). What the measured figure holds beyond the visible
window (system instruction, tool schemas) is `inferred`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..families.adk.windows import calls
from ..model import Call, Session
from ..selection import Selection
from ..store import Store
from ..store.reads import fit_keys, load_sessions
from .ratio import AgentKey, Ratio, fit_ratio

FIT_SESSIONS = 50  # per model: hundreds of calls for a steady fit, cheap to rebuild


@dataclass
class Reconstruction:
    """Every call of the selected sessions, with the ratios that size them."""

    sessions: list[Session]
    calls: list[tuple[Session, Call]]
    ratios: dict[str, Ratio]  # per model: each tokenizer has its own
    _by_session: dict[int, list[Call]] | None = field(default=None, repr=False)
    _main_model: dict[int, str] = field(default_factory=dict, repr=False)

    def ratio(self, session: Session, call: Call | None = None) -> Ratio:
        """The ratio of `call`'s model; without a call (a tool result's size, a compaction
        summary's), that of the model most of the session's calls used."""
        model = call.model if call is not None else self._main_model.get(id(session), "")
        return self.ratios[model]

    def calls_of(self, session: Session) -> list[Call]:
        """The session's calls in order (the grouping is built once)."""
        if self._by_session is None:
            self._by_session = defaultdict(list)
            for owner, call in self.calls:
                self._by_session[id(owner)].append(call)
        return self._by_session.get(id(session), [])


def session_calls(session: Session) -> list[Call]:
    """The session's calls, each with the model whose tokenizer read its window."""
    found = list(calls(session))
    by_agent: dict[str, Counter[str]] = defaultdict(Counter)
    for call in found:
        if call.kind != "summarizer" and call.event.model_version:
            by_agent[call.event.author or ""][call.event.model_version] += 1
    anywhere = sum(by_agent.values(), Counter())
    for call in found:
        if call.event.model_version:
            call.model = call.event.model_version
        elif by_agent.get(call.event.author or ""):
            call.model = by_agent[call.event.author or ""].most_common(1)[0][0]
        elif anywhere:
            call.model = anywhere.most_common(1)[0][0]
    return found


def _samples(owner: Session, found: list[Call], model: str) -> list[tuple[AgentKey, int, int]]:
    return [
        ((owner.app_name, c.event.author or ""), c.chars, c.event.prompt_tokens)
        for c in found
        if c.kind == "agent" and c.event.prompt_tokens and c.model == model
    ]


def reconstruct(store: Store, selection: Selection | None = None) -> Reconstruction:
    """Every call of the selected sessions, and per model a ratio fitted on the same sample
    whatever is selected: the FIT_SESSIONS sessions of the store with the most measured
    calls of that model (so `calls SESSION` and `calls` give a call the same estimate, and
    no estimate depends on which files were loaded in one run)."""
    sessions = load_sessions(store, selection)
    every = [(s, c) for s in sessions for c in session_calls(s)]
    by_key = {s.key: s for s in sessions}
    calls_by_session: dict[int, list[Call]] = defaultdict(list)
    for owner, call in every:
        calls_by_session[id(owner)].append(call)
    main_model: dict[int, str] = {}
    for session in sessions:
        used = Counter(c.model for c in calls_by_session[id(session)] if c.kind != "summarizer")
        main_model[id(session)] = used.most_common(1)[0][0] if used else ""
    models = {c.model for _, c in every} | set(main_model.values())
    ratios: dict[str, Ratio] = {}
    for model in sorted(models):
        keys = fit_keys(store, model, FIT_SESSIONS)
        missing = sorted({k[2] for k in keys if k not in by_key})
        extra = {s.key: s for s in (load_sessions(store, session_ids=missing) if missing else [])}
        samples = []
        for key in keys:
            if key in by_key:
                owner = by_key[key]
                samples += _samples(owner, calls_by_session[id(owner)], model)
            elif key in extra:
                samples += _samples(extra[key], session_calls(extra[key]), model)
        ratios[model] = fit_ratio(samples, model)
    return Reconstruction(sessions, every, ratios, calls_by_session, main_model)
