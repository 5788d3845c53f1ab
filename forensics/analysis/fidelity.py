"""Rebuilt windows against ADK's own traces of the same requests: the ground truth.

For every traced call of the selected sessions: the function responses (by tool name:
ADK strips the call ids before sending), the characters by the role the request gave
them (another agent's content and its preamble are user text; a tool result is
`tool`), and how far apart the totals are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ..columns import FIDELITY
from ..families.adk.windows import label, window
from ..model import WindowPart
from .reconstruct import Reconstruction

WITHIN = 0.02  # a rebuilt window this close to the traced one counts as right


def request_role(part: WindowPart) -> str:
    """The role ADK's request gives a rebuilt part: relayed content is user text."""
    if part.relayed:
        return "user"
    if part.role == "summary":
        return "model"
    return part.role


def fidelity_frame(rec: Reconstruction, traced: pl.DataFrame) -> pl.DataFrame:
    """One row per traced call that the selected sessions store, rebuilt vs traced."""
    by_key: dict[tuple[str, str], Mapping[str, Any]] = {
        (r["session_id"], r["event_id"]): r for r in traced.iter_rows(named=True)
    }
    rows = []
    for session, call in rec.calls:
        t = by_key.get((session.session_id, call.event.event_id))
        if t is None or call.kind == "summarizer":
            continue
        parts = window(session, call.index)
        roles = dict.fromkeys(("user", "model", "tool"), 0)
        for part in parts:
            roles[request_role(part)] += part.chars
        rebuilt = sum(roles.values())
        responses = sorted(
            p.tool_name or "" for p in parts if p.part_kind == "function_response" and not p.relayed
        )
        traced_responses = [n or "" for n in (t["function_responses"] or [])]
        diff = rebuilt - t["chars"]
        differing = [
            f"{role} {roles[role] - t[f'chars_{role}']:+,}"
            for role in ("user", "model", "tool")
            if roles[role] != t[f"chars_{role}"]
        ]
        rows.append(
            {
                "session_id": session.session_id,
                "call_id": call.event.event_id,
                "turn": call.turn,
                "agent": call.event.author,
                "kind": call.kind,
                "rules": rec.labels.get(id(session)) or label(session),
                "traced_responses": traced_responses,
                "rebuilt_responses": responses,
                "responses_exact": responses == traced_responses,
                "traced_chars": t["chars"],
                "rebuilt_chars": rebuilt,
                "chars_diff": diff,
                "chars_diff_pct": round(100 * diff / t["chars"], 3) if t["chars"] else None,
                "within_2pct": abs(diff) <= WITHIN * t["chars"],
                "traced_user": t["chars_user"],
                "traced_model": t["chars_model"],
                "traced_tool": t["chars_tool"],
                "rebuilt_user": roles["user"],
                "rebuilt_model": roles["model"],
                "rebuilt_tool": roles["tool"],
                "differing": "; ".join(differing) or None,
                "system_chars": t["system_chars"],
                "tools_chars": t["tools_chars"],
                "input_tokens": t["input_tokens"],
                "adk_version": t["adk_version"],
            }
        )
    return FIDELITY.frame(rows)
