"""Which family's request-assembly rules rebuild a session's windows: ADK's (per
release, adk/windows.py) or Claude Code's (claude_code/windows.py). Both offer
`is_call`, `calls`, `window`, `windows`, `sent` and `turns` with the same signatures."""

from __future__ import annotations

from collections.abc import Collection
from types import ModuleType

from ..model import Session
from .adk import windows as adk
from .claude_code import windows as claude_code
from .claude_code.transcript import FAMILY as CLAUDE_CODE


def rules_of(session: Session) -> ModuleType:
    """The window rules of the family that wrote `session`."""
    return claude_code if session.family == CLAUDE_CODE else adk


def rules_label(session: Session, changed: Collection[str] | None = None) -> str:
    """The rules that rebuilt `session`, in words (fact_sessions.rules, the report);
    `changed`: of an ADK release not known, the rules that rebuild one of its calls
    apart, named as assumed (adk.label)."""
    if session.family == CLAUDE_CODE:
        return claude_code.RULES_LABEL
    return adk.label(session, changed)
