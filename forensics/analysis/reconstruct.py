"""The selected sessions, read once, every call's window rebuilt once, the ratios fitted.

Occupancy is given twice: `measured` (the call's own usage_metadata.prompt_token_count)
and `estimated` (the window's characters over a chars-per-token ratio fitted per model
on the calls that have both). What the measured figure holds beyond the visible
window (system instruction, tool schemas) is `inferred`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ..families.windows import rules_label
from ..model import Call, Session
from ..selection import Selection
from ..store import Store
from ..store.reads import load_sessions, traced_windows
from .facts import main_model, settled_calls
from .ratio import Ratio
from .stored import fit_ratios


@dataclass
class Reconstruction:
    """Every call of the selected sessions, with the ratios that size them."""

    sessions: list[Session]
    calls: list[tuple[Session, Call]]
    ratios: dict[str, Ratio]  # per model: each tokenizer has its own
    _by_session: dict[int, list[Call]] | None = field(default=None, repr=False)
    _main_model: dict[int, str] = field(default_factory=dict, repr=False)
    labels: dict[int, str] = field(default_factory=dict, repr=False)  # the facts' rules

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


StageProgress = Callable[[str, int, int], None]  # (stage, done, total)


def reconstruct(
    store: Store,
    selection: Selection | None = None,
    progress: StageProgress | None = None,
    session_ids: list[str] | None = None,
) -> Reconstruction:
    """Every call of the selected sessions (of those `session_ids` only, where given)
    rebuilt, with the traced sizes where ADK traced the request, and per model the ratio
    fitted on the stored facts' fixed sample (so a call's estimate here is the one
    `forensics calls` shows)."""
    if progress:
        progress("reading the store", 0, 0)
    sessions = load_sessions(store, selection, session_ids=session_ids)
    traced: dict[str, dict[str, tuple[dict[str, int], int]]] = defaultdict(dict)
    for (session_id, event_id), sizes in traced_windows(
        store, (selection or Selection()).session
    ).items():
        traced[session_id][event_id] = sizes
    every: list[tuple[Session, Call]] = []
    calls_by_session: dict[int, list[Call]] = {}
    main: dict[int, str] = {}
    settled, labels = [], {}
    for done, stored in enumerate(sessions, 1):
        # as the facts rebuild it: under the rules the measured prompts chose, if they did
        session, found, spread = settled_calls(stored, traced.get(stored.session_id, {}))
        labels[id(session)] = rules_label(session, spread.changed)
        settled.append(session)
        every += [(session, c) for c in found]
        calls_by_session[id(session)] = found
        main[id(session)] = main_model(found)
        if progress:
            progress("rebuilding windows", done, len(sessions))
    models = {c.model for _, c in every} | set(main.values())
    return Reconstruction(settled, every, fit_ratios(store, models), calls_by_session, main,
                          labels)  # fmt: skip
