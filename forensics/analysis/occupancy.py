"""A call's window in tokens: measured, estimated, and the best of the two."""

from __future__ import annotations

from ..model import Call
from .ratio import Ratio


def occupancy(call: Call, ratio: Ratio) -> tuple[int | None, int | None]:
    """(measured, estimated) tokens in the call's window; a summarizer call has no estimate."""
    if call.kind == "summarizer":
        return call.event.prompt_tokens, None
    return call.event.prompt_tokens, ratio.tokens(call.chars)


def best_occupancy(call: Call, ratio: Ratio, app: str) -> tuple[int | None, str | None]:
    """The call's window as well as it is known: measured, else estimated content plus
    the traced system instruction and tools (estimated from their characters), else plus
    the agent's fitted system+tools constant (inferred), else the estimate alone."""
    measured, estimated = occupancy(call, ratio)
    if measured is not None:
        return measured, "measured"
    if estimated is None:
        return None, None
    if call.system_tools_chars is not None:
        return estimated + ratio.tokens(call.system_tools_chars), "estimated"
    constant = ratio.constant(app, call.event.author)
    if constant is None:
        return estimated, "estimated"
    return estimated + round(constant), "estimated+inferred"


def source_of(kinds: set[str | None]) -> str | None:
    """How a sum of windows is known, from how each of its terms is."""
    if not kinds:
        return None
    if kinds == {"measured"}:
        return "measured"
    return "estimated" if "measured" not in kinds else "mixed"
