"""What one session's reconstruction establishes, as rows: the facts the store keeps.

`session_facts` rebuilds one session (every call's window, with the traced sizes where
ADK traced the request) and returns the deterministic results: characters, counts,
which call carried which tool result, times. Nothing here depends on a chars-per-token
ratio or a price: token estimates, costs and rankings are computed over these rows at
query time (queries/facts/), so a refit ratio never needs a rebuild.

The same function runs in every engine: the local one (engines/local.py, at ingest and
`forensics analyze`) and Spark (engines/spark.py), one session per call.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import accumulate
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa

from .. import model as _model
from ..families.adk import releases as _releases
from ..families.adk import windows as _windows
from ..families.windows import rules_label, rules_of
from ..model import ROLES, Call, Event, Session
from ..store import facts as _store_facts
from .rules import RULES_VERSION  # (re-exported: the engines read it here)

Row = dict[str, Any]
TracedSizes = Mapping[str, tuple[dict[str, int], int]]  # event id -> (by role, system+tools)

_KEY = [("app_name", pa.string()), ("user_id", pa.string()), ("session_id", pa.string())]
_S, _I, _L, _F, _B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()
# Each fact table's columns as the engines write them (queries/store/migrate_5.sql; the
# store's fact_sessions adds the stamp of the inputs it was built from). fact_sessions'
# `error` (schema 6) is null unless the session's rebuild raised (failed_facts).
FACT_SCHEMAS: dict[str, pa.Schema] = {
    "fact_sessions": pa.schema(_KEY + [
        ("rules", _S), ("main_model", _S), ("events", _I), ("calls", _I), ("compactions", _I),
        ("first_compaction_index", _I), ("last_range_end", _F), ("retained_events_after", _I),
        ("retained_chars_after", _L), ("largest_retained_tool_result", _S),
        ("largest_retained_result_chars", _L), ("error", _S), ("rules_range", _S),
    ]),
    "fact_calls": pa.schema(_KEY + [
        ("call_id", _S), ("call_index", _I), ("kind", _S), ("turn", _I), ("invocation_id", _S),
        ("author", _S), ("epoch", _F), ("model", _S), ("model_version", _S),
        ("prompt_tokens", _L), ("cached_tokens", _L), ("error_code", _S),
        ("chars_user", _L), ("chars_model", _L), ("chars_tool", _L), ("chars_summary", _L),
        ("window_source", _S), ("system_tools_chars", _L),
        ("chars_low", _L), ("chars_high", _L),
    ]),
    "fact_carried": pa.schema(_KEY + [
        ("call_id", _S), ("function_call_id", _S), ("relayed", _B),
    ]),
    "fact_tool_calls": pa.schema(_KEY + [
        ("ordinal", _I), ("function_call_id", _S), ("tool_name", _S), ("source_call_id", _S),
        ("invocation_id", _S), ("turn", _I), ("agent", _S), ("latency", _F), ("latency_s", _F),
        ("result_event_index", _I), ("result_chars", _L), ("row_count", _I),
        ("parallel_results", _I), ("after_call_id", _S), ("resent_calls", _I),
        ("resent_calls_in_turn", _I), ("grown_chars_low", _L), ("grown_chars_high", _L),
    ]),
    "fact_turns": pa.schema(_KEY + [
        ("invocation_id", _S), ("turn", _I), ("tool_calls", _I), ("wall_s", _F),
        ("largest_tool_result", _S), ("largest_result_chars", _L), ("error_code", _S),
        ("error_message", _S), ("started_at", _F),
    ]),
    "fact_compactions": pa.schema(_KEY + [
        ("ordinal", _I), ("compaction_event_id", _S), ("event_index", _I), ("appended_at", _F),
        ("appended_after_turn", _I), ("start_timestamp", _F), ("end_timestamp", _F),
        ("invocations_in_range", _I), ("turns_in_range", pa.list_(_I)),
        ("raw_events_in_range", _I), ("raw_user_events", _I), ("raw_model_events", _I),
        ("raw_tool_result_events", _I), ("raw_other_events", _I), ("raw_chars_in_range", _L),
        ("tool_results_in_range", _I), ("tool_chars_in_range", _L), ("summary_chars", _L),
        ("summarizer_prompt_tokens", _L), ("summarizer_output_tokens", _L),
        ("overlap_with_previous", _I), ("overlap_seconds", _F), ("retained_events_after", _I),
        ("retained_chars_after", _L), ("next_call_id", _S), ("summary_in_next_request", _B),
        ("raw_in_range_sent_next", _I),
    ]),
}  # fmt: skip
FACT_TABLES = _store_facts.TABLES  # the store's list; FACT_SCHEMAS has one per table


def _kind(event: Event, rules: ModuleType) -> str:
    kinds = {p.kind for p in event.parts}
    if "function_response" in kinds:
        return "tool_result"
    if event.author == "user":
        return "user"
    if kinds & {"text", "function_call", "thought"} or rules.is_call(event) == "failed":
        return "model"
    return "other"


def _stored(event: Event, rules: ModuleType) -> bool:
    """A raw event the audit counts: it has content, or it is a failed call (a model's
    error response stores no content, but it is an event of the session all the same)."""
    return not event.is_compaction and (bool(event.parts) or rules.is_call(event) == "failed")


_KINDS = ("user", "model", "tool_result", "other")


class _Range:
    """The stored raw events of one thread that a time range covers, stored before an
    index: positions a..b of the thread's time order, less those stored later (`keep`,
    None when none are)."""

    def __init__(self, thread: _Thread | None, a: int = 0, b: int = 0, before: int = 0):
        self.thread, self.a, self.b, self.before = thread, a, b, before
        self.keep = None
        if thread is not None and b > a:
            keep = thread.at[a:b] < before
            self.keep = None if keep.all() else keep

    def column(self, name: str) -> np.ndarray:
        if self.thread is None or self.b <= self.a:
            return np.zeros(0, dtype=np.int64)
        values = getattr(self.thread, name)[self.a : self.b]
        return values if self.keep is None else values[self.keep]

    def __len__(self) -> int:
        if self.keep is not None:
            return int(np.count_nonzero(self.keep))
        return max(self.b - self.a, 0) if self.thread is not None else 0

    def total(self, name: str) -> int:
        return int(self.column(name).sum())

    def distinct(self, name: str) -> np.ndarray:
        """The distinct codes of column `name` (small non-negative ints), ascending."""
        values = self.column(name)
        return np.flatnonzero(np.bincount(values)) if len(values) else values

    def holds(self, index: int) -> bool:
        """Whether the event stored at `index` is one of the range's."""
        if self.thread is None:
            return False
        p = self.thread.position.get(index, -1)
        return self.a <= p < self.b and int(self.thread.at[p]) < self.before


class _Thread:
    """One thread's stored raw events in time order (ties in stored order), with what a
    compaction's row sums over them, as arrays: a range is two bisections and a slice,
    so a compaction covering the session from its start costs a pass in compiled code,
    not a walk in Python (2,000 such compactions over 100,000 events took minutes)."""

    def __init__(self, events: list[Event], stored: list[int], rules: ModuleType,
                 turn_of: Mapping[str, int], invocations: dict[str | None, int]):  # fmt: skip
        order = sorted(stored, key=lambda i: (events[i].epoch, i))
        self.position = {i: p for p, i in enumerate(order)}
        self.at = np.array(order, dtype=np.int64)
        self.epoch = np.array([events[i].epoch for i in order], dtype=np.float64)
        self.stored_at = stored  # in stored order, and the latest time stored up to each
        self.latest = list(accumulate((events[i].epoch for i in stored), max))
        kinds, chars, results, result_chars, invocation, turn = [], [], [], [], [], []
        for i in order:
            e = events[i]
            kinds.append(_KINDS.index(_kind(e, rules)))
            chars.append(sum(p.chars for p in e.parts))
            responses = [p.chars for p in e.parts if p.kind == "function_response"]
            results.append(len(responses))
            result_chars.append(sum(responses))
            invocation.append(invocations.setdefault(e.invocation_id, len(invocations)))
            turn.append(turn_of.get(e.invocation_id or "", 0))
        self.kind = np.array(kinds, dtype=np.int64)
        self.chars = np.array(chars, dtype=np.int64)
        self.results = np.array(results, dtype=np.int64)
        self.result_chars = np.array(result_chars, dtype=np.int64)
        self.invocation = np.array(invocation, dtype=np.int64)
        self.turn = np.array(turn, dtype=np.int64)  # turns count from 1; 0: none

    def between(self, lo: float, hi: float, before: int, *, above: bool = False) -> _Range:
        """The events with lo <= epoch <= hi (lo < epoch with `above`) stored before
        `before`."""
        k = bisect_left(self.stored_at, before) - 1
        if k < 0 or not lo <= hi:  # (a time that is no number is in no range)
            return _Range(None)
        hi = min(hi, self.latest[k])  # nothing stored before is later than this
        a = int(np.searchsorted(self.epoch, lo, side="right" if above else "left"))
        b = int(np.searchsorted(self.epoch, hi, side="right"))
        return _Range(self, a, b, before)


class _Stored:
    """The session's stored raw events (see `_stored`) per thread (a Claude Code
    session's branch; one thread in ADK's), so a compaction finds the events of a time
    range stored before it without walking the session."""

    def __init__(self, session: Session, rules: ModuleType, turn_of: Mapping[str, int]):
        self.threaded = rules.THREADED
        stored: dict[object, list[int]] = defaultdict(list)
        for i, e in enumerate(session.events):
            if _stored(e, rules) and not math.isnan(e.epoch):
                stored[e.branch if self.threaded else None].append(i)
        self.ids: dict[str, list[int]] = defaultdict(list)  # event id -> where it is stored
        for indices in stored.values():
            for i in indices:
                self.ids[session.events[i].event_id].append(i)
        invocations: dict[str | None, int] = {}
        self.threads = {
            thread: _Thread(session.events, indices, rules, turn_of, invocations)
            for thread, indices in stored.items()
        }

    def between(
        self, lo: float, hi: float, before: int, thread: object = None, *, above: bool = False
    ) -> _Range:
        """Stored raw events, lo <= epoch <= hi, stored before `before`; in a Claude Code
        session, of the compaction's own thread (`thread`: its branch)."""
        found = self.threads.get(thread if self.threaded else None)
        return found.between(lo, hi, before, above=above) if found else _Range(None)

    def holding(self, ids: set[str], inside: _Range) -> int:
        """How many of the event ids `ids` name an event of the range `inside`."""
        return sum(any(inside.holds(i) for i in self.ids.get(x, ())) for x in ids)


@dataclass
class SessionFacts:
    """One session's fact rows, per table (FACT_TABLES). fact_carried, a row per call and
    tool result it carried (most of the rows), is kept as tuples without the session's
    key: a dict per row was a third of a rebuild; `tables` writes its rows out."""

    key: Row = field(default_factory=dict)
    rows: dict[str, list[Row]] = field(
        default_factory=lambda: {t: [] for t in FACT_TABLES if t != "fact_carried"}
    )
    carried: list[tuple[str, str, bool]] = field(default_factory=list)  # call, result, relayed

    @property
    def tables(self) -> dict[str, list[Row]]:
        """Every table's rows, fact_carried's made from `carried`."""
        carried = [
            {**self.key, "call_id": call, "function_call_id": result, "relayed": relayed}
            for call, result, relayed in self.carried
        ]
        return {t: carried if t == "fact_carried" else self.rows[t] for t in FACT_TABLES}


# A call keeps the ids of the tool results its window carried: a session that never
# compacts carries calls x results of them (100,000 events of tool calls: 600 million,
# and a worker killed for memory at 23 GB). Past this many in one session it is not
# rebuilt: it is listed as a session whose facts could not be built, with this reason.
MAX_CARRIED = 10_000_000


class SessionTooLarge(Exception):
    """A session whose calls carry more tool results in all than MAX_CARRIED."""


def session_calls(session: Session) -> list[Call]:
    """The session's calls, each with the model whose tokenizer read its window."""
    found: list[Call] = []
    carried = 0
    for call in rules_of(session).calls(session):
        carried += len(call.response_ids) + len(call.relayed_ids)
        if carried > MAX_CARRIED:
            raise SessionTooLarge(
                f"its first {len(found) + 1:,} model calls of {len(session.events):,} events"
                f" carry more than {MAX_CARRIED:,} tool results in all (each call re-sends"
                " every earlier result: it never compacts); too large to rebuild"
            )
        found.append(call)
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


def apply_traces(found: list[Call], traced: TracedSizes) -> int:
    """Give every traced agent call the traced request's sizes (ADK's own record of
    what it sent) in place of the rebuilt ones; returns how many calls were traced."""
    count = 0
    for call in found:
        sizes = traced.get(call.event.event_id)
        if sizes is None or call.kind == "summarizer":
            continue
        by_role, system_tools = sizes
        call.chars_by_role = {role: by_role.get(role, 0) for role in ROLES}
        call.window_source = "traced"
        call.system_tools_chars = system_tools
        count += 1
    return count


def main_model(found: list[Call]) -> str:
    """The model most of the session's agent calls used: whose ratio sizes what belongs
    to no call (a tool result, a compaction summary)."""
    used = Counter(c.model for c in found if c.kind != "summarizer")
    return used.most_common(1)[0][0] if used else ""


def settled_calls(
    session: Session, traced: TracedSizes | None = None
) -> tuple[Session, list[Call], _Spread]:
    """The session's calls as its facts hold them (traced sizes applied): where its ADK
    release is not known, under the rule set the measured prompts choose (the session
    returned with that narrower release) or else the newest its range allows, with the
    range the rule sets leave (`_settled`); every view of a call (`window`) rebuilds it so."""
    found = session_calls(session)
    apply_traces(found, traced or {})
    alternatives = _windows.readings(session) if rules_of(session) is _windows else []
    if alternatives:
        return _settled(session, found, alternatives, traced or {})
    return session, found, _Spread()


def session_facts(session: Session, traced: TracedSizes | None = None) -> SessionFacts:
    """Every fact of one session (its calls rebuilt, traced sizes applied)."""
    session, found, spread = settled_calls(session, traced)
    key = {"app_name": session.app_name, "user_id": session.user_id,
           "session_id": session.session_id}  # fmt: skip
    facts = SessionFacts(key)
    facts.rows["fact_calls"] = [_call_row(key, c, spread.chars.get(c.index)) for c in found]
    facts.carried = [
        (c.event.event_id, fcid, relayed)
        for c in found
        if c.kind != "summarizer"
        for fcid, relayed in _carried(c)
    ]
    facts.rows["fact_tool_calls"] = _tool_calls(key, session, found, spread.grown)
    facts.rows["fact_turns"] = _turns(key, session)
    compactions = _compactions(key, session, found)
    facts.rows["fact_compactions"] = compactions
    facts.rows["fact_sessions"] = [
        _session_row(key, session, found, len(compactions), spread.changed)]
    facts.rows["fact_sessions"][0]["rules_range"] = spread.rules
    if spread.too_large:  # a range that leaves a release out says which
        facts.rows["fact_sessions"][0]["rules"] += (
            f" (not rebuilt under the rules of {', '.join(spread.too_large)}: too large;"
            " no range holds them)")  # fmt: skip
    return facts


@dataclass
class _Spread:
    """What the releases a session's range allows leave open: per call index whose
    window they rebuild differently, its lowest and highest characters; and the rule
    boundaries inside the range, in words (releases.boundaries)."""

    chars: dict[int, tuple[int, int]] = field(default_factory=dict)
    rules: str | None = None
    readings: list[list[int]] = field(default_factory=list)  # per rule set left: per call
    too_large: list[str] = field(default_factory=list)  # rule sets not rebuilt, in words
    changed: set[str] = field(default_factory=set)  # the rules that rebuild a call apart
    position: dict[str, int] = field(default_factory=dict)  # call id -> its place in them

    def grown(self, before: str, after: str | None) -> tuple[int, int] | None:
        """How many characters the window grew from call `before` to call `after`, lowest
        and highest over the rule sets left; None where they agree (or `after` is none)."""
        if after is None or not self.chars:
            return None
        b, a = self.position[before], self.position[after]
        grown = [reading[a] - reading[b] for reading in self.readings]
        return (min(grown), max(grown)) if min(grown) != max(grown) else None


# A reading fits the measured prompts when they are a linear function of its windows'
# characters (a ratio per model, a constant per agent: its instruction and tools) to
# within this share of each prompt; judged only with this many more measured calls than
# the fit has unknowns. It is ruled out only when a prompt is off its line by more than
# FIT_OUT: a reading between the two leaves the range as it is (a true rule set a little
# over 2% is not traded for a wrong one a little under).
FIT_WITHIN = 0.02
FIT_OUT = 0.04
FIT_SPARE = 2


def _settled(session: Session, found: list[Call], alternatives: list[_model.Release],
             traced: TracedSizes) -> tuple[Session, list[Call], _Spread]:  # fmt: skip
    """The session under the rule set the measured prompts choose, where they fit one
    and clearly not another (`_kept`; its release then says `inferred from usage`); else
    the newest rule set the range allows (as rules_for), with each call's range over the
    rule sets left."""
    # each rule set's per-call totals and fit, its calls dropped (one rule set's are
    # kept: the chosen one's); a rule set whose windows are too large to rebuild (before
    # 1.16.0 compactions are ignored) is left out of the range, as the session would be
    readings: list[tuple[_model.Release, list[int], float | None]] = []
    too_large = []
    for release in alternatives[:-1]:
        try:
            calls = session_calls(replace(session, release=release))
        except SessionTooLarge:
            too_large.append(release.detail.split(",")[0])
            continue
        apply_traces(calls, traced)
        readings.append((release, [sum(c.chars_by_role.values()) for c in calls],
                         _misfit(calls)))  # fmt: skip
    readings.append((alternatives[-1], [sum(c.chars_by_role.values()) for c in found],
                     _misfit(found)))  # the rules rules_for applies already  # fmt: skip
    totals = [t for _, t, _ in readings]
    if all(t == totals[-1] for t in totals):
        return session, found, _Spread(too_large=too_large)
    left = _kept([off for _, _, off in readings])
    release = readings[left[-1]][0]
    calls = found
    if left[-1] != len(readings) - 1:
        calls = session_calls(replace(session, release=release))
        apply_traces(calls, traced)
    since = _releases.span(readings[left[0]][0])
    until = _releases.span(release)
    assert since is not None and until is not None  # (readings are inferred ranges)
    if len(left) < len(readings):  # the prompts ruled some out: what is left, said so
        session = replace(session, release=_releases.sub_range(
            session.release, since[0], until[1],
            f"{_windows.USAGE_CHOSE} (the measured prompts fit these rules' windows"
            " and not the others')",
        ))  # fmt: skip
    spread = _Spread(readings=[totals[i] for i in left],
                     position={c.event.event_id: k for k, c in enumerate(calls)},
                     too_large=too_large)
    for k, call in enumerate(calls):
        if call.kind == "summarizer" or call.window_source == "traced":
            continue
        sizes = [totals[i][k] for i in left]
        if min(sizes) != max(sizes):
            spread.chars[call.index] = (min(sizes), max(sizes))
    if spread.chars:  # the boundaries between kept rule sets that rebuild a call apart
        shown = [k for k, c in enumerate(calls)
                 if c.kind != "summarizer" and c.window_source != "traced"]  # fmt: skip
        apart = []  # (start of one, start of the next): a skipped one's boundary inside
        for a, b in zip(left, left[1:], strict=False):
            if any(totals[a][k] != totals[b][k] for k in shown):
                apart.append((_releases.span(readings[a][0]), _releases.span(readings[b][0])))
        at = {k for k, first in _releases.RULE_SINCE.items()
              if any(x and y and x[0] < first <= y[0] for x, y in apart)}  # fmt: skip
        spread.changed = _windows.triggered(session, at)
        spread.rules = _releases.boundaries(since[0], until[1], spread.changed) or None
    return session, calls, spread


def _kept(misfits: list[float | None]) -> list[int]:
    """Which readings (oldest first, by their `_misfit`) the prompts leave: those within
    FIT_WITHIN where every other is past FIT_OUT and those left are one run of releases;
    else every one (a reading it cannot tell, or one between the two, settles nothing)."""
    left = [i for i, off in enumerate(misfits) if off is not None and off <= FIT_WITHIN]
    out = [i for i, off in enumerate(misfits) if off is not None and off > FIT_OUT]
    if left and len(left) + len(out) == len(misfits) and left == list(
            range(left[0], left[-1] + 1)):  # fmt: skip
        return left
    return list(range(len(misfits)))


def _fits(calls: list[Call]) -> bool | None:
    """Whether the calls' measured prompts are, within FIT_WITHIN of each, a ratio (per
    model) times their windows' characters plus a constant per agent and model; None
    when too few calls are measured to tell (FIT_SPARE more than the unknowns)."""
    off = _misfit(calls)
    return None if off is None else off <= FIT_WITHIN


def _misfit(calls: list[Call]) -> float | None:
    """How far, as a share of itself, the measured prompt furthest off the least-squares
    line (`_fits`) is; None when too few calls are measured to tell."""
    rows = [(c.model or "", c.event.author or "", sum(c.chars_by_role.values()),
             c.event.prompt_tokens) for c in calls
            if c.kind != "summarizer" and c.event.prompt_tokens]  # fmt: skip
    models = sorted({m for m, _, _, _ in rows})
    groups = sorted({(m, a) for m, a, _, _ in rows})
    unknowns = len(models) + len(groups)
    if len(rows) < unknowns + FIT_SPARE:
        return None
    design = np.zeros((len(rows), unknowns))
    for i, (m, a, chars, _) in enumerate(rows):
        design[i, models.index(m)] = chars
        design[i, len(models) + groups.index((m, a))] = 1.0
    measured = np.array([float(t) for _, _, _, t in rows])
    solution = np.linalg.lstsq(design, measured, rcond=None)[0]
    return float((np.abs(design @ solution - measured) / measured).max())


def failed_facts(key: _store_facts.Key, events: int, error: Exception) -> SessionFacts:
    """The facts of a session whose rebuild raised: its fact_sessions row alone, with its
    key and events (the store keeps its stamp, so it is not rebuilt until its inputs or
    the rules change) and the error, its type and message in at most 500 characters.
    No query reads it (queries/facts/scope_sessions.sql); every engine lists it."""
    facts = SessionFacts({"app_name": key[0], "user_id": key[1], "session_id": key[2]})
    facts.rows["fact_sessions"] = [{
        "app_name": key[0], "user_id": key[1], "session_id": key[2],
        "rules": f"{RULES_VERSION} (not built)", "main_model": "", "events": events,
        "calls": 0, "compactions": 0, "first_compaction_index": None, "last_range_end": None,
        "retained_events_after": 0, "retained_chars_after": 0,
        "largest_retained_tool_result": None, "largest_retained_result_chars": None,
        "error": f"{type(error).__name__}: {error}"[:500], "rules_range": None,
    }]  # fmt: skip
    return facts


def _call_row(key: Row, call: Call, spread: tuple[int, int] | None = None) -> Row:
    e = call.event
    return {
        **key,
        "call_id": e.event_id,
        "call_index": call.index,
        "kind": call.kind,
        "turn": call.turn,
        "invocation_id": e.invocation_id,
        "author": e.author,
        "epoch": e.epoch,
        "model": call.model,
        "model_version": e.model_version,
        "prompt_tokens": e.prompt_tokens,
        "cached_tokens": e.cached_tokens,
        "error_code": e.error_code,
        **{f"chars_{role}": call.chars_by_role.get(role, 0) for role in ROLES},
        "window_source": call.window_source,
        "system_tools_chars": call.system_tools_chars,
        "chars_low": spread[0] if spread else None,
        "chars_high": spread[1] if spread else None,
    }


def _carried(call: Call) -> list[tuple[str, bool]]:
    own = set(call.response_ids)
    seen: dict[str, bool] = {}
    for fcid in (*call.response_ids, *call.relayed_ids):
        seen.setdefault(fcid, fcid not in own)
    return list(seen.items())


Grown = Callable[[str, str | None], tuple[int, int] | None]  # (issuing, after) -> range


def _tool_calls(key: Row, session: Session, found: list[Call], grown: Grown) -> list[Row]:
    """Each tool result answered by a call of the session, with what its growth and
    re-sending need: the call that issued it, the first call that carried it, how many
    calls carried it (in all, and in the issuing turn), and where the session's rule sets
    rebuild the two calls' windows apart differently, the growth's range (`grown`)."""
    issued: dict[str, tuple[Call, str]] = {}  # call id -> (the model call, tool name)
    for call in found:
        for part in call.event.parts:
            if part.kind == "function_call" and part.call_id:
                issued[part.call_id] = (call, part.tool_name or "")
    carried_by: dict[str, list[Call]] = defaultdict(list)
    for call in found:
        if call.kind != "summarizer":
            for call_id in {*call.response_ids, *call.relayed_ids}:
                carried_by[call_id].append(call)
    # results grouped by the event that carried them (parallel calls share one)
    results: dict[int, list] = defaultdict(list)
    for index, event in enumerate(session.events):
        for part in event.parts:
            if part.kind == "function_response" and part.call_id in issued:
                results[index].append(part)
    rows: list[Row] = []
    for index, items in results.items():
        event = session.events[index]
        firsts = [carried_by[p.call_id][0] for p in items if carried_by[p.call_id]]
        after_call = min(firsts, key=lambda c: c.index, default=None)
        for part in items:
            source_call, tool = issued[part.call_id]
            resent = carried_by[part.call_id]
            same_turn = [
                c for c in resent if c.event.invocation_id == source_call.event.invocation_id
            ]
            latency = event.epoch - source_call.event.epoch
            after_id = after_call.event.event_id if after_call else None
            spread = grown(source_call.event.event_id, after_id)
            rows.append(
                {
                    **key,
                    "ordinal": len(rows),
                    "function_call_id": part.call_id,
                    "tool_name": tool,
                    "source_call_id": source_call.event.event_id,
                    "invocation_id": source_call.event.invocation_id,
                    "turn": source_call.turn,
                    "agent": source_call.event.author,
                    "latency": latency,
                    "latency_s": round(latency, 3),
                    "result_event_index": index,
                    "result_chars": part.chars,
                    "row_count": part.row_count,
                    "parallel_results": len(items),
                    "after_call_id": after_id,
                    "resent_calls": len(resent),
                    "resent_calls_in_turn": len(same_turn),
                    "grown_chars_low": spread[0] if spread else None,
                    "grown_chars_high": spread[1] if spread else None,
                }
            )
    return rows


def _turns(key: Row, session: Session) -> list[Row]:
    events_by_turn: dict[str, list[Event]] = defaultdict(list)
    for event in session.events:
        if event.invocation_id and not event.is_compaction:
            events_by_turn[event.invocation_id].append(event)
    rows = []
    for number, (invocation, events) in enumerate(events_by_turn.items(), start=1):
        results = [p for e in events for p in e.parts if p.kind == "function_response"]
        largest = max(results, key=lambda p: p.chars, default=None)
        errors = [e for e in events if e.error_code]
        rows.append(
            {
                **key,
                "invocation_id": invocation,
                "turn": number,
                "tool_calls": sum(1 for e in events for p in e.parts if p.kind == "function_call"),
                "wall_s": round(events[-1].epoch - events[0].epoch, 3),
                "largest_tool_result": largest.tool_name if largest else None,
                "largest_result_chars": largest.chars if largest else None,
                "error_code": errors[-1].error_code if errors else None,
                "error_message": errors[-1].error_message if errors else None,
                "started_at": events[0].epoch,
            }
        )
    return rows


def _compactions(key: Row, session: Session, found: list[Call]) -> list[Row]:
    """Per compaction event: its range, what it covers (stored), what the next call sent.

    Two facts are kept apart, as the founding investigation insists: stored
    (compaction never deletes; the raw events inside a range stay in the session
    table) and sent (what the next model call's request held, from its window)."""
    compacted = [
        (index, event)
        for index, event in enumerate(session.events)
        if event.is_compaction and event.compaction is not None
    ]
    if not compacted:
        return []
    rules = rules_of(session)
    threaded = rules.THREADED  # a compaction is its own thread's (Claude Code)
    turn_of = rules.turns(session)
    stored = _Stored(session, rules, turn_of)
    # the agent calls of each thread (all of them, in ADK's), and the summarizers, by index
    agent_calls: dict[object, list[Call]] = defaultdict(list)
    for c in found:
        if c.kind != "summarizer":
            agent_calls[c.event.branch if threaded else None].append(c)
    call_at = {t: [c.index for c in cs] for t, cs in agent_calls.items()}
    summarizers = [c for c in found if c.kind == "summarizer"]
    summarizer_at = [c.index for c in summarizers]
    followers: dict[int, Call] = {}  # compaction index -> the next call of its thread
    for index, event in compacted:
        thread = event.branch if threaded else None
        k = bisect_right(call_at.get(thread, []), index)
        if k < len(call_at.get(thread, [])):
            followers[index] = agent_calls[thread][k]
    # what each next call's window held: (raw event ids, summary ids)
    sent = rules.sent(session, sorted({c.index for c in followers.values()}))
    # the last raw event stored before each compaction
    last_plain: dict[int, Event | None] = {i: None for i, _ in compacted}
    plain: Event | None = None
    for index, event in enumerate(session.events):
        if index in last_plain:
            last_plain[index] = plain
        if not event.is_compaction:
            plain = event
    rows: list[Row] = []
    previous: dict[str | None, Any] = {}  # thread -> the range before
    last_index = -1
    for index, event in compacted:
        assert event.compaction is not None
        thread = event.branch if threaded else None
        start, end = event.compaction.start, event.compaction.end
        inside = stored.between(start, end, index, thread)  # the stored raw events it covers
        by_kind = np.bincount(inside.column("kind"), minlength=len(_KINDS))
        turns = inside.distinct("turn")
        earlier = last_plain[index]
        after_turn = turn_of.get(earlier.invocation_id or "") if earlier else None
        overlap_events, overlap_s = 0, 0.0
        before = previous.get(thread)
        if before is not None:
            lo, hi = max(start, before.start), min(end, before.end)
            if lo <= hi:
                overlap_s = hi - lo
                overlap_events = len(stored.between(lo, hi, index, thread))
        retained = stored.between(end, float("inf"), index, thread, above=True)
        following = followers.get(index)
        # ADK keeps the summarizer's usage on the compaction event; Claude Code writes the
        # summarizer's response in its own thread, just before the boundary
        summarizer: Event | None = event
        if threaded:
            k = bisect_left(summarizer_at, index) - 1
            summarizer = summarizers[k].event if k >= 0 and summarizer_at[k] > last_index else None
        last_index = index
        in_next = sent_raw = None
        if following is not None:
            raw_sent, summaries_sent = sent[following.index]
            in_next = event.event_id in summaries_sent
            sent_raw = stored.holding(raw_sent, inside)
        rows.append(
            {
                **key,
                "ordinal": len(rows),
                "compaction_event_id": event.event_id,
                "event_index": index,
                "appended_at": event.epoch,
                "appended_after_turn": after_turn,
                "start_timestamp": start,
                "end_timestamp": end,
                "invocations_in_range": len(inside.distinct("invocation")),
                "turns_in_range": turns[turns > 0].astype(np.int32),  # (an array: compact)
                "raw_events_in_range": len(inside),
                **{f"raw_{k}_events": int(n) for k, n in zip(_KINDS, by_kind, strict=True)},
                "raw_chars_in_range": inside.total("chars"),
                "tool_results_in_range": inside.total("results"),
                "tool_chars_in_range": inside.total("result_chars"),
                "summary_chars": sum(p.chars for p in event.summary),
                "summarizer_prompt_tokens": summarizer.prompt_tokens if summarizer else None,
                "summarizer_output_tokens": summarizer.candidates_tokens if summarizer else None,
                "overlap_with_previous": overlap_events,
                "overlap_seconds": round(overlap_s, 3),
                "retained_events_after": len(retained),
                "retained_chars_after": retained.total("chars"),
                "next_call_id": following.event.event_id if following else None,
                "summary_in_next_request": in_next,
                "raw_in_range_sent_next": sent_raw,
            }
        )
        previous[thread] = event.compaction
    return rows


def _session_row(key: Row, session: Session, found: list[Call], compactions: int,
                 changed: set[str]) -> Row:  # fmt: skip
    """The session's own facts: what built them (the rules that rebuild a call apart,
    `changed`, named as assumed), and what stays after its last range (in a Claude Code
    session, of its main thread: each thread compacts on its own)."""
    rules = rules_of(session)
    threaded = rules.THREADED
    indexed = [
        (i, e.compaction)
        for i, e in enumerate(session.events)
        if e.is_compaction and e.compaction is not None and not (threaded and e.branch)
    ]
    last_end = max((span.end for _, span in indexed), default=None)
    retained = [
        e
        for e in session.events
        if _stored(e, rules)
        and (last_end is None or e.epoch > last_end)
        and not (threaded and e.branch)
    ]
    results = [p for e in retained for p in e.parts if p.kind == "function_response"]
    largest = max(results, key=lambda p: p.chars, default=None)
    return {
        **key,
        "rules": f"{RULES_VERSION} {rules_label(session, changed)}",
        "main_model": main_model(found),
        "events": len(session.events),
        "calls": len(found),
        "compactions": compactions,
        "first_compaction_index": indexed[0][0] if indexed else None,
        "last_range_end": last_end,
        "retained_events_after": len(retained),
        "retained_chars_after": sum(p.chars for e in retained for p in e.parts),
        "largest_retained_tool_result": largest.tool_name if largest else None,
        "largest_retained_result_chars": largest.chars if largest else None,
        "error": None,
    }
