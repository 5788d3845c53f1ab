"""The selected sessions, read once, every call's window rebuilt once, the ratios fitted.

Occupancy is given twice: `measured` (the call's own usage_metadata.prompt_token_count)
and `estimated` (the window's characters over a chars-per-token ratio fitted per model
on the calls that have both). What the measured figure holds beyond the visible
window (system instruction, tool schemas) is `inferred`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ..families.adk.windows import calls
from ..model import ROLES, Call, Session
from ..selection import Selection
from ..store import Store
from ..store.reads import fit_keys, load_sessions, traced_windows
from .ratio import AgentKey, Ratio, TracedSample, fit_ratio, fit_traced

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


def use_traces(store: Store, found: list[tuple[Session, Call]], session: str | None) -> int:
    """Give every traced call the traced request's sizes (ADK's own record of what it
    sent) in place of the rebuilt ones; returns how many calls were traced."""
    traced = traced_windows(store, session)
    if not traced:
        return 0
    count = 0
    for owner, call in found:
        sizes = traced.get((owner.session_id, call.event.event_id))
        if sizes is None or call.kind == "summarizer":
            continue
        by_role, system_tools = sizes
        call.chars_by_role = {role: by_role.get(role, 0) for role in ROLES}
        call.window_source = "traced"
        call.system_tools_chars = system_tools
        count += 1
    return count


def _samples(owner: Session, found: list[Call], model: str) -> list[tuple[AgentKey, int, int]]:
    return [
        ((owner.app_name, c.event.author or ""), c.chars, c.event.prompt_tokens)
        for c in found
        if c.kind == "agent" and c.event.prompt_tokens and c.model == model
    ]


def _traced_samples(owner: Session, found: list[Call], model: str) -> list[TracedSample]:
    return [
        (
            (owner.app_name, c.event.author or ""),
            c.chars,
            c.system_tools_chars,
            c.event.prompt_tokens,
        )
        for c in found
        if c.kind == "agent"
        and c.event.prompt_tokens
        and c.model == model
        and c.system_tools_chars is not None
    ]


StageProgress = Callable[[str, int, int], None]  # (stage, done, total)


def reconstruct(
    store: Store, selection: Selection | None = None, progress: StageProgress | None = None
) -> Reconstruction:
    """Every call of the selected sessions, and per model a ratio fitted on the same sample
    whatever is selected: the FIT_SESSIONS sessions of the store with the most measured
    calls of that model (so `calls SESSION` and `calls` give a call the same estimate, and
    no estimate depends on which files were loaded in one run)."""
    if progress:
        progress("reading the store", 0, 0)
    sessions = load_sessions(store, selection)
    every = []
    for done, session in enumerate(sessions, 1):
        every += [(session, c) for c in session_calls(session)]
        if progress:
            progress("rebuilding windows", done, len(sessions))
    use_traces(store, every, (selection or Selection()).session)
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
    for fitted, model in enumerate(sorted(models), 1):
        if progress:
            progress("fitting chars per token", fitted, len(models))
        keys = fit_keys(store, model, FIT_SESSIONS)
        missing = sorted({k[2] for k in keys if k not in by_key})
        extra = {s.key: s for s in (load_sessions(store, session_ids=missing) if missing else [])}
        samples: list[tuple[AgentKey, int, int]] = []
        traced: list[TracedSample] = []
        for key in keys:
            if key in by_key:
                owner, owned = by_key[key], calls_by_session[id(by_key[key])]
            elif key in extra:
                owner = extra[key]
                found = [(owner, c) for c in session_calls(owner)]
                use_traces(store, found, key[2])
                owned = [c for _, c in found]
            else:
                continue
            samples += _samples(owner, owned, model)
            traced += _traced_samples(owner, owned, model)
        ratios[model] = fit_traced(traced, model) or fit_ratio(samples, model)
    return Reconstruction(sessions, every, ratios, calls_by_session, main_model)
