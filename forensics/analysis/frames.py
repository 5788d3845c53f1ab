"""One call's window, part by part: the one frame still built from a rebuilt session
(the facts keep sizes, not parts)."""

from __future__ import annotations

import polars as pl

from ..columns import WINDOW
from ..families.windows import rules_of
from .reconstruct import Reconstruction


def window_frame(rec: Reconstruction, call_id: str) -> pl.DataFrame:
    """The parts of one call's request, in request order, with their sizes."""
    for session, call in rec.calls:
        if call.event.event_id == call_id:
            if call.kind == "summarizer":
                break
            parts = rules_of(session).window(session, call.index)
            ratio = rec.ratio(session, call)
            return WINDOW.frame(
                {
                    "event_id": p.event_id,
                    "part_index": p.part_index,
                    "part_kind": p.part_kind,
                    "author": p.author,
                    "role": p.role,
                    "relayed": p.relayed,
                    "tool_name": p.tool_name,
                    "function_call_id": p.function_call_id,
                    "chars": p.chars,
                    "tokens_estimated": ratio.tokens(p.chars),
                }
                for p in parts
            )
    raise LookupError(call_id)
