"""Where a Claude Code session's lines come from: its files, by their place in a project's
folder. Apart from the reader (transcript.py) so that finding the files, and whether
they changed, imports nothing that reads a line (numpy, Arrow)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TranscriptFile:
    """One file of a session: its path relative to the projects folder (`app/...`), and
    whose thread it holds: `main` (the session's own file), `subagent` (2.1's
    `<session>/subagents/agent-<id>.jsonl`) or `agent` (2.0's top-level file)."""

    rel: str
    role: str
    agent_id: str | None = None
    path: str = ""  # where it is, as messages name it (default: `rel`)

    @property
    def branch(self) -> str | None:
        return f"agent-{self.agent_id}" if self.agent_id else None


def agent_id_of(stem: str) -> str:
    """`agent-a881341` -> `a881341`."""
    return stem[len("agent-") :] if stem.startswith("agent-") else stem
