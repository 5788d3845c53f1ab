"""Which google-adk release wrote a session, and which of its window rules follow.

The release is known from the user (`--adk-version` at ingest), from ADK's own trace
(the request's `google-adk/X.Y.Z` header, or the OTLP scope's version), or inferred
from the data where that is conclusive: a schema V0 row pickles every EventActions
field of the release that wrote it, so the field names bound the release (a field
it lacks was added later; one it has was there already); an event stored as JSON
(schema V1, SQLite, the web API's and `adk run`'s exports) writes the keys whose
default is not None in every event, and the others only when set, so the first bound
it on both sides at 1.14.0 and 2.0.0, the others from below. Otherwise the newest
modelled release is assumed, and every output that depends on it says so.

The boundaries are from docs/adk-window-rules-by-release.md (each read from the
release's own wheel).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ...model import Release, parse_version

NEWEST = "2.13.0"

Version = tuple[int, int, int]


parse = parse_version


def show(version: Version) -> str:
    return ".".join(map(str, version))


# The first release whose EventActions has each field (events/event_actions.py).
ACTIONS_FIELD_SINCE: dict[str, Version] = {
    "skip_summarization": (1, 5, 0),
    "state_delta": (1, 5, 0),
    "artifact_delta": (1, 5, 0),
    "transfer_to_agent": (1, 5, 0),
    "escalate": (1, 5, 0),
    "requested_auth_configs": (1, 5, 0),
    "requested_tool_confirmations": (1, 14, 0),
    "compaction": (1, 15, 0),
    "end_of_agent": (1, 16, 0),
    "agent_state": (1, 16, 0),
    "rewind_before_invocation_id": (1, 17, 0),
    "render_ui_widgets": (1, 27, 0),
    "route": (2, 0, 0),
    "set_model_response": (2, 0, 0),
    "transfer_reason": (2, 9, 0),
}
FIRST_MODELLED: Version = (1, 5, 0)
_BASE_FIELDS = {k for k, v in ACTIONS_FIELD_SINCE.items() if v == (1, 5, 0)}
# the release after the newest one modelled, so an open range reads "2.9.0 or later"
_OPEN = (99, 0, 0)


def from_pickled_actions(field_sets: Iterable[frozenset[str]]) -> Release | None:
    """The release range a session's V0 pickled actions allow, or None when they do
    not bound it (no pickle, a partial field set, or events of incompatible releases)."""
    since: Version = (1, 5, 0)
    until: Version = _OPEN
    seen = False
    for fields in field_sets:
        if not _BASE_FIELDS <= fields:
            continue  # not a whole EventActions (another writer, or a hand-made row)
        seen = True
        for name, first in ACTIONS_FIELD_SINCE.items():
            if name in fields:
                since = max(since, first)
            else:
                until = min(until, first)
    if not seen or since >= until:
        return None
    return _ranged(since, until, "from the EventActions fields of its schema V0 pickles")


def _ranged(since: Version, until: Version, evidence: str) -> Release:
    """The inferred release [since, until): the rules of its newest release apply."""
    if until == _OPEN:
        span = f"{show(since)} or later"
        representative = NEWEST if parse(NEWEST) >= since else show(since)
    else:
        span = f"{show(since)} to before {show(until)}"
        representative = _newest_below(until)
    return Release(representative, "inferred", f"{span}, {evidence}", show(since),
                   None if until == _OPEN else show(until))  # fmt: skip


def narrowed(stored: Release, new: Release) -> Release | None:
    """Two inferred ranges of one session (an earlier ingest's, this one's: each from the
    events it read) as what both allow; None when nothing does (two releases wrote it)."""
    since = max(parse(stored.since or "0.0.0"), parse(new.since or "0.0.0"))
    until = min(parse(stored.until) if stored.until else _OPEN,
                parse(new.until) if new.until else _OPEN)  # fmt: skip
    if since >= until:
        return None
    evidence = [r.detail.split(", ", 1)[-1] for r in (stored, new)]
    return _ranged(since, until, " and ".join(dict.fromkeys(evidence)))


def _newest_below(until: Version) -> str:
    """The newest release whose rules are the same as every release before `until`
    back to the previous rule boundary: the boundary's predecessor."""
    major, minor, _ = until
    if minor > 0:
        return f"{major}.{minor - 1}.99"
    return "1.39.99" if major == 2 else f"{major - 1}.99.99"


def given(text: str) -> Release:
    """The release a user named at ingest; ValueError when it is not X.Y.Z."""
    version = parse(text)
    return Release(show(version), "given", "--adk-version at ingest", None, None)


# Window rules and the first release each holds for (docs/adk-window-rules-by-release.md).
RULE_SINCE: dict[str, Version] = {
    # another agent's thought is copied as it is (before: relayed as `[a] said: ...`)
    "relay_thought_raw": (1, 10, 0),
    # another agent's thought is not relayed at all (before: see relay_thought_raw)
    "relay_skips_thoughts": (1, 14, 0),
    # an event is left out when all its parts are invisible, thoughts included (before:
    # only when its first part is empty text, so thought-only events are sent)
    "all_parts_visibility": (1, 22, 0),
    # compaction summaries replace the raw events they cover (before: ignored)
    "compaction_applied": (1, 16, 0),
    # a range contained in another is superseded; summaries sit at their range's
    # end, everything re-sorted (before: every summary at its list position)
    "compaction_superseded": (1, 25, 0),
    # the summary speaks in the agent's voice (before: authored `model`, relayed as
    # another agent's `For context:` text)
    "agent_voiced_summary": (2, 7, 0),
    # another agent's content quoted between markers after a preamble
    "fenced_relay": (2, 8, 0),
}
RULE_NAMES = {
    "relay_thought_raw": "relayed thoughts",
    "relay_skips_thoughts": "relayed thoughts",
    "all_parts_visibility": "empty-event test",
    "compaction_applied": "compaction applied",
    "compaction_superseded": "compaction superseding",
    "agent_voiced_summary": "summary voice",
    "fenced_relay": "relay format",
}


def span(release: Release | None) -> tuple[Version, Version] | None:
    """The releases a session's may be, [since, until): an inferred range, or every
    modelled release when nothing is known; None when it is known (given, traced)."""
    if release is None:
        return FIRST_MODELLED, _OPEN
    if release.basis != "inferred" or release.since is None:
        return None
    return parse(release.since), parse(release.until) if release.until else _OPEN


def sub_range(release: Release | None, since: Version, until: Version,
              how: str | None = None) -> Release:  # fmt: skip
    """The part [since, until) of `release`'s span as an inferred release of its own,
    with `release`'s evidence (`how` first where given)."""
    evidence = release.detail.split(", ", 1)[-1] if release is not None else ""
    said = "; ".join(x for x in (how, evidence) if x) or "from no evidence: any release"
    return _ranged(since, until, said)


def boundaries(since: Version, until: Version, names: Collection[str]) -> str:
    """The rules of `names` whose first release lies inside [since, until), in words
    with that release: 'summary voice (2.7.0), relay format (2.8.0)'."""
    found = [f"{RULE_NAMES[k]} ({show(first)})" for k, first in sorted(RULE_SINCE.items(),
             key=lambda item: item[1]) if k in names and since < first < until]  # fmt: skip
    return ", ".join(found)


def uncertain_rules(release: Release, among: Collection[str] | None = None) -> list[str]:
    """Rules whose first release lies inside an inferred range: the range cannot say.
    `among`: only those of these rules (RULE_SINCE's keys)."""
    if release.since is None:
        return []
    low = parse(release.since)
    high = parse(release.until) if release.until else _OPEN
    names = [RULE_NAMES[k] for k, first in RULE_SINCE.items()
             if low < first < high and (among is None or k in among)]  # fmt: skip
    return list(dict.fromkeys(names))


# What a stored event's keys say (docs/adk-window-rules-by-release.md, "What a stored
# event says of its release"): queries/families/adk/release_keys.sql's flags, each the
# first release that writes that key; a key written only when set bounds from below.
KEY_SINCE: dict[str, Version] = {
    "finish_reason": (1, 12, 0),
    "compaction": (1, 15, 0),
    "since_1_16": (1, 16, 0),  # end_of_agent
    "rewind": (1, 17, 0),
    "model_version": (1, 18, 0),
    "interaction_id": (1, 21, 0),
    "node_info": (2, 0, 0),
    "since_2_0": (2, 0, 0),  # isolation_scope, route
    "environment_id": (2, 4, 0),
    "interaction_status": (2, 8, 0),
    "transfer_reason": (2, 9, 0),
    "turn_complete_reason": (1, 34, 2),  # and not 2.0.x-2.1.x: see from_event_keys
}
# keys every whole event has from a release on: one without them is from before it
ALWAYS_SINCE = {"without_confirmations": (1, 14, 0), "without_node_info": (2, 0, 0)}
# the tables a source read its events from, and the first release that writes them
# (sources' `layout`): DatabaseSessionService's schema V1, ADK's SqliteSessionService
LAYOUT_SINCE: dict[str, tuple[Version, str]] = {
    "v1": ((1, 22, 0), "a schema V1 database"),
    "sqlite-service": ((1, 19, 0), "a SqliteSessionService file"),
}


def from_event_keys(found: dict[str, object], layout: str | None = None) -> Release | None:
    """The release range a session's stored event keys allow (release_keys.sql's row,
    its batches merged), narrowed by the tables that hold them (`layout`, LAYOUT_SINCE)
    where the two agree, or None when the keys do not bound it or contradict each other
    (a session written by two releases: resumed, or migrated; `contradicted` says
    which). Keys older than their tables (a migrated history) keep the keys' range."""
    bounds = _key_bounds(found)
    if bounds is None or bounds[0] >= bounds[1]:
        return None
    since, until = bounds
    evidence = "from the keys of its stored events"
    floor = LAYOUT_SINCE.get(layout or "")
    if floor is not None and since < floor[0] < until:
        since, evidence = floor[0], f"{evidence} and {floor[1]}"
    return _ranged(since, until, evidence)


def contradicted(found: dict[str, object]) -> bool:
    """Whether a session's event keys allow no release at all (two releases wrote it)."""
    bounds = _key_bounds(found)
    return bounds is not None and bounds[0] >= bounds[1]


def _key_bounds(found: dict[str, object]) -> tuple[Version, Version] | None:
    """[since, until) from the keys, or None without a whole event."""
    whole = int(found.get("whole_events") or 0)  # type: ignore[call-overload]
    if not whole:
        return None
    # a whole event with `requested_tool_confirmations`: written from 1.14.0 on
    without = int(found.get("without_confirmations") or 0)  # type: ignore[call-overload]
    since: Version = (1, 14, 0) if without < whole else (1, 5, 0)
    until: Version = _OPEN
    for name, first in ALWAYS_SINCE.items():
        if found.get(name):
            until = min(until, first)
    for name, first in KEY_SINCE.items():
        if found.get(name):
            since = max(since, first)
    if found.get("turn_complete_reason") and since >= (2, 0, 0):
        since = max(since, (2, 2, 0))  # (removed in 2.0.0, back in 2.2.0)
    return since, until
