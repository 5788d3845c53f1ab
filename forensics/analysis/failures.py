"""Context failures: every record that says a request did not fit the model's window,
from logs, spans and LiteLLM payloads (the `logged` table) and ADK's own stored
events, merged into failures, and, where the ADK session is loaded, the verdict the
founding investigation could not give: is the size figure logged at failure the
failing request's window, or the turn's cumulative input?

- One failure, many records: records of one session that name the same event, or lie
  within MERGE_SECONDS of each other, are one failure (a log line, the LiteLLM payload
  and ADK's error event of the same request).
- Turn, two ways: `responses_before`, the founding document's "completed responses
  logged before the failure" (logged/failures SQL), and ADK's turn index of the
  failing call when the session is loaded.
- The verdict compares the figure with the failing call's rebuilt window and with the
  turn's cumulative input through that call (both from `forensics calls`): within
  VERDICT_TOLERANCE of one and not the other names it.
- Size clusters: the figures sorted, a new cluster where the next figure is more than
  CLUSTER_STEP above the previous (1-D, deterministic, explainable).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ..columns import FAILURE_CLUSTERS, FAILURES, FAILURES_BY_AGENT
from ..families import context_limit

MERGE_SECONDS = 5.0
VERDICT_TOLERANCE = 0.05
CLUSTER_STEP = 1.25


@dataclass
class _Failure:
    failed_at: float | None
    session_id: str | None
    event_ids: set[str] = field(default_factory=set)
    trace_ids: set[str] = field(default_factory=set)
    evidence: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)  # logged rows, in time order
    adk: dict[str, Any] | None = None  # the failing ADK call (a row of `calls`)
    adk_figure: int | None = None
    adk_limit: int | None = None
    adk_error: tuple[str | None, str | None] = (None, None)

    def takes(
        self, session_id: str | None, event_id: str | None, at: float | None,
        trace_id: str | None = None,
    ) -> bool:
        """Whether a record is of this failure: the same event; else, in the same session
        (or, with no session, the same trace), within MERGE_SECONDS and naming no other
        event than this failure's."""
        if event_id is not None and event_id in self.event_ids:
            return None in (session_id, self.session_id) or session_id == self.session_id
        if event_id is not None and self.event_ids:
            return False  # two events: two requests that failed, however close
        if session_id is None and self.session_id is None:
            if trace_id is None or trace_id not in self.trace_ids:
                return False
        elif session_id != self.session_id:
            return False
        return at is not None and self.failed_at is not None and abs(at - self.failed_at) <= (
            MERGE_SECONDS
        )


def _merge(failures: list[_Failure], session_id: str | None, event_id: str | None,
           at: float | None, trace_id: str | None = None) -> _Failure:
    for failure in failures:
        if failure.takes(session_id, event_id, at, trace_id):
            if at is not None and (failure.failed_at is None or at < failure.failed_at):
                failure.failed_at = at
            failure.session_id = failure.session_id or session_id
            break
    else:
        failure = _Failure(at, session_id)
        failures.append(failure)
    if event_id is not None:
        failure.event_ids.add(event_id)
    if trace_id is not None:
        failure.trace_ids.add(trace_id)
    return failure


def _epoch(value: Any) -> float | None:
    return value.timestamp() if value is not None else None


def failures(
    logged: pl.DataFrame,
    calls: pl.DataFrame,
    adk_errors: pl.DataFrame,
    loaded: set[str] | None = None,
) -> pl.DataFrame:
    """The FAILURES frame: `logged` from queries/failures/logged.sql, `calls` the CALLS
    frame of the selected ADK sessions (their failed calls are enough when `loaded`
    names the sessions that have calls), `adk_errors` their failed events' texts."""
    failed_calls = calls.filter(pl.col("kind") == "failed")
    texts = {
        (r["session_id"], r["event_id"]): (r["error_code"], r["error_message"])
        for r in adk_errors.iter_rows(named=True)
    }
    families = {
        (r["session_id"], r["event_id"]): r["family"] or "adk"
        for r in adk_errors.iter_rows(named=True)
    }
    merged: list[_Failure] = []
    for row in logged.iter_rows(named=True):
        failure = _merge(
            merged, row["session_id"], row["event_id"], row["started_at"], row["trace_id"]
        )
        failure.rows.append(row)
        if row["family"] not in failure.evidence:
            failure.evidence.append(row["family"])
    by_event = {(c["session_id"], c["call_id"]): c for c in failed_calls.iter_rows(named=True)}
    for call in failed_calls.iter_rows(named=True):
        code, message = texts.get((call["session_id"], call["call_id"]), (None, None))
        found = context_limit.parse(code, message)
        at = _epoch(call["timestamp"])
        session, event = call["session_id"], call["call_id"]
        # the failure that names this event first; else one close in time, not yet matched
        open_ = [f for f in merged if f.adk is None]
        existing = next(
            (f for f in open_ if event in f.event_ids and f.session_id in (None, session)), None
        ) or next((f for f in open_ if not f.event_ids and f.takes(session, event, at)), None)
        if found is None and existing is None:
            continue  # a failed call, but not a context failure, and nothing logged it
        failure = existing or _merge(merged, session, event, at)
        failure.session_id = failure.session_id or session
        failure.event_ids.add(event)
        failure.adk = by_event[(session, event)]
        failure.adk_figure = found.requested if found else None
        failure.adk_limit = found.limit if found else None
        failure.adk_error = (code, message)
        failure.evidence.append(families.get((session, event), "adk"))  # the stored events
    merged.sort(key=lambda f: (f.failed_at is None, f.failed_at or 0.0, f.session_id or ""))
    if loaded is None:
        loaded = set(calls["session_id"].unique().to_list()) if calls.height else set()
    rows = [_row(number, f, loaded) for number, f in enumerate(merged, 1)]
    assign_clusters(rows)
    return FAILURES.frame(rows)


def _first(rows: list[dict[str, Any]], key: str) -> Any:
    return next((r[key] for r in rows if r[key] is not None), None)


def _gap(figure: int | None, against: int | None) -> float | None:
    if figure is None or not against:
        return None
    return round((figure - against) / against * 100, 2)


def _row(number: int, f: _Failure, loaded: set[str]) -> dict[str, Any]:
    logged_figure = _first(f.rows, "context_tokens")
    figure = logged_figure if logged_figure is not None else f.adk_figure
    source = "logged" if logged_figure is not None else ("measured" if figure is not None else None)
    call = f.adk or {}
    window, cumulative = call.get("occupancy"), call.get("cumulative_input")
    gap_window, gap_cumulative = _gap(figure, window), _gap(figure, cumulative)
    if figure is None:
        verdict = "no figure"
    elif not call:
        verdict = "no call" if f.session_id in loaded else "no session"
    else:
        near_window = gap_window is not None and abs(gap_window) <= VERDICT_TOLERANCE * 100
        near_cumulative = (
            gap_cumulative is not None and abs(gap_cumulative) <= VERDICT_TOLERANCE * 100
        )
        verdict = (
            "both" if near_window and near_cumulative
            else "window" if near_window
            else "cumulative" if near_cumulative
            else "neither"
        )
    code, message = f.adk_error
    return {
        "failure": number,
        "failed_at": f.failed_at,
        "session_id": f.session_id,
        "app_name": call.get("app_name"),
        "user_id": call.get("user_id"),
        "agent": _first(f.rows, "agent") or call.get("agent"),
        "model": _first(f.rows, "model") or call.get("model_version"),
        "evidence": ", ".join(f.evidence),
        "error_code": _first(f.rows, "error_code") or code,
        "error_text": _first(f.rows, "error_text") or message,
        "logged_tokens": figure,
        "logged_tokens_source": source,
        "context_limit": _first(f.rows, "context_limit") or f.adk_limit,
        "responses_before": _first(f.rows, "responses_before"),
        "turn": call.get("turn"),
        "call_id": call.get("call_id"),
        "window_tokens": window,
        "window_tokens_source": call.get("occupancy_source"),
        "cumulative_input": cumulative,
        "cumulative_input_source": call.get("cumulative_input_source"),
        "verdict": verdict,
        "gap_window_pct": gap_window,
        "gap_cumulative_pct": gap_cumulative,
        "cluster": None,
        "locator": f.rows[0]["locator"] if f.rows else None,
    }


def assign_clusters(rows: list[dict[str, Any]]) -> None:
    """Number the size clusters of FAILURES rows in place (CLUSTER_STEP apart)."""
    sized = sorted((r for r in rows if r["logged_tokens"]), key=lambda r: r["logged_tokens"])
    cluster, previous = 0, None
    for row in sized:
        if previous is None or row["logged_tokens"] > previous * CLUSTER_STEP:
            cluster += 1
        row["cluster"] = cluster
        previous = row["logged_tokens"]


def _histogram(values: list[Any]) -> str:
    counted = Counter(v for v in values if v is not None)
    return json.dumps({str(k): counted[k] for k in sorted(counted)})


def by_agent(frame: pl.DataFrame) -> pl.DataFrame:
    """Per agent: failures, sessions, each session's first-failure turn (both ways)."""
    rows = []
    for (agent,), group in sorted(
        frame.group_by(["agent"]), key=lambda g: (g[0][0] is None, g[0][0] or "")
    ):
        firsts = group.sort("failure").unique("session_id", keep="first", maintain_order=True)
        rows.append(
            {
                "agent": agent,
                "failures": group.height,
                "sessions": group["session_id"].drop_nulls().n_unique(),
                "first_failure_responses_before": _histogram(firsts["responses_before"].to_list()),
                "first_failure_turn": _histogram(firsts["turn"].to_list()),
                "verdicts": json.dumps(dict(Counter(group["verdict"].to_list()).most_common())),
            }
        )
    return FAILURES_BY_AGENT.frame(rows)


def clusters(frame: pl.DataFrame) -> pl.DataFrame:
    """Each size cluster: its members, their range and median, their verdicts."""
    rows = []
    sized = frame.filter(pl.col("cluster").is_not_null())
    for (cluster,), group in sorted(sized.group_by(["cluster"]), key=lambda g: g[0][0]):
        figures = group["logged_tokens"]
        rows.append(
            {
                "cluster": cluster,
                "failures": group.height,
                "sessions": group["session_id"].drop_nulls().n_unique(),
                "low_tokens": figures.min(),
                "median_tokens": int(figures.median()),  # type: ignore[arg-type]
                "high_tokens": figures.max(),
                "members": json.dumps(sorted(group["failure"].to_list())),
                "verdicts": json.dumps(dict(Counter(group["verdict"].to_list()).most_common())),
            }
        )
    return FAILURE_CLUSTERS.frame(rows)
