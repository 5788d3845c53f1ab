#!/usr/bin/env python
"""Write Claude Code transcripts, laid out as ``~/.claude/projects``, for the toolkit's tests.

Claude Code cannot run here (no binary, no network), so this script writes what it would
have written: the same line types, keys in the same order, the same usage shapes and the
same parent links, for three releases (1.0.98, 2.0.28, 2.1.39). Real transcripts of those
releases were studied for the format; none of their text is reused. See
``sample_data/README.md``, section "Claude Code transcripts", for the files and the scenario.

    .venv/bin/python sample_data/generate_claude_code.py             # sample_data/claude_code
    .venv/bin/python sample_data/generate_claude_code.py --out /tmp/cc  # /tmp/cc/claude_code
    .venv/bin/python sample_data/generate_claude_code.py --scale 100 --out /tmp/big

Deterministic: every draw comes from ``random.Random(SEED + k)`` for copy ``k`` (the committed
sample is copy 0), and time is a simulated clock; a re-run writes the same bytes.

Token arithmetic (the toolkit checks it): a model call's prompt ``P`` is the hidden system
size plus ``tokens()`` of every piece its request carries (see ``Thread``); its usage is
split from ``P`` (see ``Thread.request``); the figures are also written to
``claude_code/expected.json``.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import json
import re
import shutil
import string
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

# ---------------------------------------------------------------------------------------------
# Constants of the scenario
# ---------------------------------------------------------------------------------------------

SEED = 42  # copy k of the scenario draws from Random(SEED + k); the committed sample is k = 0

# tokens(text) = ceil(len(text) / CHARS_PER_TOKEN) for every piece of visible content. It is
# computed in integers as ceil(5 * len / 18), so no float rounding can move a figure.
CHARS_PER_TOKEN = 3.6
# The hidden part of every request (system prompt + tool schemas), never written to a file.
SYSTEM_TOKENS_MAIN = 18_000
SYSTEM_TOKENS_SUBAGENT = 9_000
# The API's context window: a request over it is rejected ("prompt is too long").
CONTEXT_LIMIT = 200_000
# Prompt-cache lifetimes: a read needs the previous request of the thread to be this recent.
CACHE_TTL_MS = {"5m": 5 * 60 * 1000, "1h": 60 * 60 * 1000}

MODEL_OPUS_46 = "claude-opus-4-6"  # main thread of -home-dev-shop, session A
MODEL_SONNET_45 = "claude-sonnet-4-5-20250929"  # session B (the incident) and -home-dev-api
MODEL_HAIKU_45 = "claude-haiku-4-5-20251001"  # subagents of 2.x and session C
MODEL_SONNET_4 = "claude-sonnet-4-20250514"  # -home-dev-legacy (Claude Code 1.0.98)

# Session starts, UTC. Copy k of the scenario shifts every date by k days.
# -home-dev-shop (Claude Code 2.1.39): A "find why checkout is slow", B the incident, C short
START_A = datetime(2026, 11, 16, 9, 12, 0, tzinfo=UTC)
START_B = datetime(2026, 11, 17, 14, 3, 0, tzinfo=UTC)
START_C = datetime(2026, 11, 17, 23, 50, 0, tzinfo=UTC)  # crosses midnight into 11-18
START_LEGACY = datetime(2026, 11, 18, 10, 20, 0, tzinfo=UTC)  # -home-dev-legacy, 1.0.98
START_API = datetime(2026, 11, 18, 15, 40, 0, tzinfo=UTC)  # -home-dev-api, 2.0.28

# Session A is compacted by hand when its window is in this range (the scenario checks it).
SESSION_A_COMPACT_AT = (60_000, 70_000)
# Session B: the answer before the follow-up stays under the limit; the follow-up's request
# goes over it by a number of tokens drawn from this range (the third result is sized so).
SESSION_B_OVERSHOOT = (150, 450)
# Session B's MCP results: order and return rows of about 3,200 characters of JSON each.
ORDER_ROWS, RETURN_ROWS, ROW_CHARS = 120, 40, (2_950, 3_250)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def dumps(obj: Any) -> str:
    """One line as Claude Code writes it: compact JSON, UTF-8 left as is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def tokens_of_length(chars: int) -> int:
    """ceil(chars / 3.6), in integers."""
    return (5 * chars + 17) // 18


def tokens(text: str) -> int:
    return tokens_of_length(len(text))


def block_chars(block: dict[str, Any]) -> int:
    """Characters of one content block as a request carries it (the toolkit's definition)."""
    kind = block["type"]
    if kind == "text":
        return len(block["text"])
    if kind == "thinking":
        return len(block["thinking"])
    if kind == "tool_use":
        return len(block["name"]) + len(dumps(block["input"]))
    raise ValueError(f"no size for a {kind!r} block")


def result_chars(content: str | list[dict[str, Any]]) -> int:
    """A tool result is one piece: the characters of its text (all text blocks together)."""
    if isinstance(content, str):
        return len(content)
    return sum(len(part["text"]) for part in content)


def iso(ms: int) -> str:
    """YYYY-MM-DDTHH:MM:SS.mmmZ from epoch milliseconds."""
    moment = EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(milliseconds=1)


class Ids:
    """Ids in Claude Code's and the API's shapes, drawn from the copy's RNG."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def b62(self, n: int) -> str:
        return "".join(self.rng.choices(B62, k=n))

    def hex(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    def message(self) -> str:
        return "msg_01" + self.b62(22)

    def request(self) -> str:
        # Real 2.1.39 request ids are req_011C + 20 base62 characters.
        return "req_011C" + self.b62(20)

    def tool_use(self) -> str:
        return "toolu_01" + self.b62(22)

    def signature(self, thinking: str) -> str:
        # A thinking block's opaque signature: base64 of a protobuf-looking blob (starts "E").
        blob = bytes([0x12]) + self.rng.randbytes(200 + len(thinking) // 3)
        return base64.b64encode(blob).decode()


# ---------------------------------------------------------------------------------------------
# Token arithmetic of one conversation thread
# ---------------------------------------------------------------------------------------------


@dataclass
class Usage:
    window: int  # P: every token the request carried
    input_tokens: int
    cache_read: int
    cache_creation: int


@dataclass
class Thread:
    """What one agent's requests carry: the main agent, a subagent, or the compaction call.

    A request carries the hidden system part and, in order, every piece written so far:
    user prompts, assistant text and tool_use blocks, tool results; thinking blocks only
    since the thread's last user prompt. A compaction replaces all pieces by the summary.
    ``cache_read`` is the longest prefix shared with the thread's previous request if that
    request is younger than the cache lifetime (the previous request's whole window when
    nothing was dropped, only the system part after a compaction, 0 on a thread's first
    call or after the lifetime).
    """

    name: str  # "main", "agent-<id>" or "acompact-<id>"
    kind: str  # agent | subagent | compaction
    system_tokens: int
    cache: str  # "5m" or "1h": which ephemeral bucket its writes go to
    pieces: list[tuple[int, int, int | None]] = field(default_factory=list)  # id, tokens, seq
    prompt_seq: int = 0
    last_request_ms: int | None = None
    last_request_ids: list[int] = field(default_factory=list)
    last_window: int = 0
    next_piece: int = 0

    def _add(self, count: int, thinking: bool = False) -> None:
        self.pieces.append((self.next_piece, count, self.prompt_seq if thinking else None))
        self.next_piece += 1

    def add_prompt(self, text: str) -> None:
        self.prompt_seq += 1
        self._add(tokens(text))

    def add_user_text(self, text: str) -> None:
        """User-role text that is not a new prompt (queued input, local-command lines)."""
        self._add(tokens(text))

    def add_blocks(self, blocks: list[dict[str, Any]]) -> None:
        for block in blocks:
            self._add(tokens_of_length(block_chars(block)), thinking=block["type"] == "thinking")

    def add_result(self, content: str | list[dict[str, Any]]) -> None:
        self._add(tokens_of_length(result_chars(content)))

    def included(self) -> list[tuple[int, int, int | None]]:
        return [p for p in self.pieces if p[2] is None or p[2] == self.prompt_seq]

    def window(self) -> int:
        return self.system_tokens + sum(p[1] for p in self.included())

    def compact(self, summary_text: str) -> None:
        self.pieces = []
        self.add_prompt(summary_text)

    def fork(self, name: str, kind: str) -> Thread:
        """A thread that starts from this one's pieces and cache (the compaction request)."""
        return Thread(
            name=name,
            kind=kind,
            system_tokens=self.system_tokens,
            cache=self.cache,
            pieces=list(self.pieces),
            prompt_seq=self.prompt_seq,
            last_request_ms=self.last_request_ms,
            last_request_ids=list(self.last_request_ids),
            last_window=self.last_window,
            next_piece=self.next_piece,
        )

    def request(self, at_ms: int, rng: Random) -> Usage:
        """The usage of a request sent at ``at_ms`` carrying the current pieces."""
        included = self.included()
        window = self.system_tokens + sum(p[1] for p in included)
        fresh = (
            self.last_request_ms is None or at_ms - self.last_request_ms > CACHE_TTL_MS[self.cache]
        )
        if fresh:
            read = 0
        else:
            read = self.system_tokens
            for previous, piece in zip(self.last_request_ids, included, strict=False):
                if previous != piece[0]:
                    break
                read += piece[1]
        uncached = min(rng.randint(1, 10), window - read)
        self.last_request_ms = at_ms
        self.last_request_ids = [p[0] for p in included]
        self.last_window = window
        return Usage(window, uncached, read, window - read - uncached)


# ---------------------------------------------------------------------------------------------
# The ledger: every call as written, for expected.json
# ---------------------------------------------------------------------------------------------


@dataclass
class CallRecord:
    project: str
    session_id: str
    thread: str
    kind: str
    model: str
    day: str
    message_id: str
    request_id: str | None
    window: int
    input_tokens: int
    output_tokens: int  # as written on the message's last line
    output_tokens_final: int  # what the model produced (differs when only a placeholder is written)
    cache_creation: int
    cache_read: int
    failed: bool = False


@dataclass
class Ledger:
    calls: list[CallRecord] = field(default_factory=list)
    api_errors: list[tuple[str, str, str]] = field(default_factory=list)  # project, session, day


# ---------------------------------------------------------------------------------------------
# Lines of one session, per Claude Code release
# ---------------------------------------------------------------------------------------------


class Sinks:
    """Output files of one session, kept as lists of lines until the session is written."""

    def __init__(self) -> None:
        self.files: dict[Path, list[str]] = {}

    def get(self, path: Path) -> list[str]:
        return self.files.setdefault(path, [])

    def flush(self) -> int:
        written = 0
        for path, lines in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            data = ("\n".join(lines) + "\n").encode()
            path.write_bytes(data)
            written += len(data)
        self.files.clear()
        return written


@dataclass
class Chain:
    """One thread's lines in one file, and the uuid the next line there hangs from."""

    lines: list[str]
    sidechain: bool = False
    agent_id: str | None = None
    last: str | None = None
    mirror: Callable[[dict[str, Any]], None] | None = None  # 2.1 subagents: agent_progress


@dataclass
class Tool:
    """What running one tool_use gives back; ``run`` may write lines of its own (Task)."""

    content: str | list[dict[str, Any]]
    result: Any = None  # toolUseResult; None leaves the key out
    is_error: bool | None = None  # None leaves the key out of the tool_result block
    duration_ms: int = 60
    # Writes lines of its own from a start time, given the tool_use line's uuid; returns the end.
    run: Callable[[int, str], int] | None = None


@dataclass
class Hooks:
    """The hooks configured in a 2.1 project (.claude/settings.json), as commands."""

    session_start: str
    pre_bash: str
    post_tool: str
    stop: str


class Transcript:
    """The lines of one Claude Code session: shapes, order and links per release."""

    def __init__(
        self,
        *,
        rng: Random,
        ids: Ids,
        ledger: Ledger,
        root: Path,
        project: str,
        cwd: str,
        version: str,
        branch: str,
        session_id: str,
        start_ms: int,
        hooks: Hooks | None = None,
        slug: str | None = None,
    ) -> None:
        self.rng, self.ids, self.ledger = rng, ids, ledger
        self.project, self.cwd, self.version, self.branch = project, cwd, version, branch
        self.family = version.rsplit(".", 1)[0]  # "1.0", "2.0" or "2.1"
        self.session_id = session_id
        self.now = start_ms
        self.hooks = hooks
        self.slug = slug
        self.slug_on = False  # 2.1 writes the slug only once it has been named, a few lines in
        self.sinks = Sinks()
        self.dir = root / project
        self.main = Chain(self.sinks.get(self.dir / f"{session_id}.jsonl"))
        self.tracked: dict[str, tuple[str, int]] = {}  # file-history: path -> (backup id, version)
        self.turn_prompt: str | None = None
        self.turn_snapshot_ms = 0
        self.turn_start_ms = 0
        self.message_id = ""
        self.startup_ms: int | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def tick(self, low_ms: int, high_ms: int) -> int:
        self.now += self.rng.randint(low_ms, high_ms)
        return self.now

    def head(self, chain: Chain, parent: str | None) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": chain.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.branch,
        }
        if chain.agent_id is not None and self.family != "1.0":
            line["agentId"] = chain.agent_id
        if self.family == "2.1" and (self.slug_on or chain.sidechain):
            line["slug"] = self.slug
        return line

    def emit(self, chain: Chain, line: dict[str, Any], *, link: bool = True) -> dict[str, Any]:
        chain.lines.append(dumps(line))
        if link:
            chain.last = line["uuid"]
        return line

    def raw(self, line: dict[str, Any]) -> None:
        """A line outside the uuid chain (file-history-snapshot, queue-operation, summary)."""
        self.main.lines.append(dumps(line))

    # -- user side --------------------------------------------------------------------------

    def snapshot(self, message_id: str, at_ms: int) -> None:
        backups = {}
        for path, (backup, version) in self.tracked.items():
            self.tracked[path] = (backup, version + 1)
            backups[path] = {
                "backupFileName": f"{backup}@v{version + 1}",
                "version": version + 1,
                "backupTime": iso(at_ms + 4),
            }
        self.raw(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": backups,
                    "timestamp": iso(at_ms),
                },
                "isSnapshotUpdate": False,
            }
        )

    def snapshot_update(self, message_id: str, path: str, at_ms: int) -> None:
        """An edited file joins the turn's snapshot (2.x)."""
        if path not in self.tracked:
            self.tracked[path] = (self.ids.hex(16), 1)
        backups = {
            name: {
                "backupFileName": f"{backup}@v{version}",
                "version": version,
                "backupTime": iso(at_ms),
            }
            for name, (backup, version) in self.tracked.items()
        }
        self.raw(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": self.turn_prompt,
                    "trackedFileBackups": backups,
                    "timestamp": iso(self.turn_snapshot_ms),
                },
                "isSnapshotUpdate": True,
            }
        )

    def session_start(self, source: str) -> None:
        """SessionStart hooks (2.1): on startup, and again after a compaction.

        On startup the lines carry the start time but are written after the first prompt's
        file-history snapshot, as 2.1 writes them."""
        if self.hooks is None:
            return
        if source == "startup":
            self.startup_ms = self.now
            return
        self._session_start_hook(source, self.now)

    def _session_start_hook(self, source: str, at_ms: int) -> None:
        assert self.hooks is not None
        command = self.hooks.session_start
        self.hook(
            self.main, "SessionStart", f"SessionStart:{source}", command, self.ids.uuid(), at_ms
        )

    def prompt(
        self, thread: Thread, text: str, *, typing_ms: tuple[int, int] = (4_000, 20_000)
    ) -> str:
        """A prompt the user typed, with the snapshot 2.x writes before it."""
        at = self.tick(*typing_ms)
        uid = self.ids.uuid()
        self.turn_prompt, self.turn_snapshot_ms, self.turn_start_ms = uid, at + 71, at
        if self.family != "1.0":
            self.snapshot(uid, at + 71)
        if self.startup_ms is not None:
            self._session_start_hook("startup", self.startup_ms)
            self.startup_ms = None
        line = self.head(self.main, self.main.last)
        line.update({"type": "user", "message": {"role": "user", "content": text}})
        line.update({"uuid": uid, "timestamp": iso(at)})
        if self.family == "2.1":
            line["thinkingMetadata"] = {"maxThinkingTokens": 31999}
            line["todos"] = []
            line["permissionMode"] = "default"
        elif self.family == "2.0":
            line["thinkingMetadata"] = {"level": "high", "disabled": False, "triggers": []}
        self.emit(self.main, line)
        thread.add_prompt(text)
        return uid

    def user_text(
        self, chain: Chain, text: str, at_ms: int, *, meta: bool = False
    ) -> dict[str, Any]:
        line = self.head(chain, chain.last)
        line.update({"type": "user", "message": {"role": "user", "content": text}})
        if meta:
            line["isMeta"] = True
        line.update({"uuid": self.ids.uuid(), "timestamp": iso(at_ms)})
        return self.emit(chain, line)

    def queue(self, operation: str, at_ms: int, content: str | None = None) -> None:
        line: dict[str, Any] = {
            "type": "queue-operation",
            "operation": operation,
            "timestamp": iso(at_ms),
            "sessionId": self.session_id,
        }
        if content is not None:
            line["content"] = content
        self.raw(line)

    # -- hooks and system lines (2.1) -------------------------------------------------------

    def hook(
        self, chain: Chain, event: str, name: str, command: str, tool_use_id: str, at_ms: int
    ) -> None:
        line = self.head(chain, chain.last)
        line["type"] = "progress"
        line["data"] = {
            "type": "hook_progress",
            "hookEvent": event,
            "hookName": name,
            "command": command,
        }
        uid = self.ids.uuid()
        if event == "PreToolUse":  # 2.1.39 writes these two groups of keys in different orders
            line.update({"toolUseID": tool_use_id, "parentToolUseID": tool_use_id})
            line.update({"uuid": uid, "timestamp": iso(at_ms)})
        else:
            line.update({"parentToolUseID": tool_use_id, "toolUseID": tool_use_id})
            line.update({"timestamp": iso(at_ms), "uuid": uid})
        self.emit(chain, line)

    def stop(self) -> None:
        """End of a turn in 2.1: the Stop hook, its summary, the turn's duration."""
        if self.family != "2.1":
            return
        assert self.hooks is not None
        hook_id = self.ids.uuid()
        at = self.tick(20, 60)
        self.hook(self.main, "Stop", "Stop", self.hooks.stop, hook_id, at)
        at = self.tick(60, 160)
        line = self.head(self.main, self.main.last)
        line.update(
            {
                "type": "system",
                "subtype": "stop_hook_summary",
                "hookCount": 1,
                "hookInfos": [{"command": self.hooks.stop}],
                "hookErrors": [],
                "preventedContinuation": False,
                "stopReason": "",
                "hasOutput": False,
                "level": "suggestion",
                "timestamp": iso(at),
                "uuid": self.ids.uuid(),
                "toolUseID": hook_id,
            }
        )
        self.emit(self.main, line)
        at = self.tick(20, 50)
        line = self.head(self.main, self.main.last)
        line.update(
            {
                "type": "system",
                "subtype": "turn_duration",
                "durationMs": at - self.turn_start_ms,
                "timestamp": iso(at),
                "uuid": self.ids.uuid(),
                "isMeta": False,
            }
        )
        self.emit(self.main, line)

    def api_error(self, at_ms: int) -> float:
        """An overloaded API (529) that Claude Code retries; the real files here hold none.

        Returns the delay before the retry, in milliseconds."""
        delay = 500 + self.rng.random() * 125
        line = self.head(self.main, self.main.last)
        line.update(
            {
                "type": "system",
                "subtype": "api_error",
                "level": "error",
                "error": {
                    "status": 529,
                    "headers": {},
                    "requestID": None,
                    "error": {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": "Overloaded"},
                    },
                    "type": "new_api_error",
                },
                "retryInMs": delay,
                "retryAttempt": 1,
                "maxRetries": 10,
                "timestamp": iso(at_ms),
                "uuid": self.ids.uuid(),
            }
        )
        self.emit(self.main, line)
        self.ledger.api_errors.append((self.project, self.session_id, iso(at_ms)[:10]))
        return delay

    # -- the assistant side -----------------------------------------------------------------

    def tool_use(self, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.ids.tool_use(), "name": name, "input": tool_input}

    def thinking(self, text: str) -> dict[str, Any]:
        return {"type": "thinking", "thinking": text, "signature": self.ids.signature(text)}

    def _block_as_written(self, block: dict[str, Any], model: str) -> dict[str, Any]:
        if block["type"] == "tool_use" and self.family == "2.1" and model != MODEL_HAIKU_45:
            return {**block, "caller": {"type": "direct"}}  # haiku's tool_use blocks lack it
        return block

    def _usage(self, usage: Usage, output: int, *, final: bool, cache: str) -> dict[str, Any]:
        five = usage.cache_creation if cache == "5m" else 0
        hour = usage.cache_creation if cache == "1h" else 0
        if self.family != "2.1":
            return {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": five,
                    "ephemeral_1h_input_tokens": hour,
                },
                "output_tokens": output,
                "service_tier": "standard",
            }
        if final:
            return {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation,
                "cache_read_input_tokens": usage.cache_read,
                "output_tokens": output,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {
                    "ephemeral_1h_input_tokens": hour,
                    "ephemeral_5m_input_tokens": five,
                },
                "inference_geo": "",
                "iterations": [],
            }
        return {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_creation,
            "cache_read_input_tokens": usage.cache_read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": five,
                "ephemeral_1h_input_tokens": hour,
            },
            "output_tokens": output,
            "service_tier": "standard",
            "inference_geo": "not_available",
        }

    def _message(
        self,
        model: str,
        message_id: str,
        block: dict[str, Any],
        usage: dict[str, Any],
        stop: str | None,
    ) -> dict[str, Any]:
        if self.family == "1.0":
            return {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
        return {
            "model": model,
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }

    def respond(
        self,
        chain: Chain,
        thread: Thread,
        model: str,
        blocks: list[dict[str, Any]],
        tools: dict[str, Tool] | None = None,
        *,
        latency_ms: tuple[int, int] = (1_400, 4_200),
        parallel: str = "interleaved",
        final_line: bool | None = None,
        same_output_on_all_lines: bool = False,
        request_at: int | None = None,
    ) -> CallRecord:
        """One model call: its lines (one per content block), its tools' lines, its usage.

        2.1 writes a block's line as soon as it has streamed, and runs a read-only tool right
        away, so a tool's result line can sit between two lines of the same message
        (``parallel="interleaved"``); tools that change things wait for the message to end
        (``"batched"``). 1.0 and 2.0 write every block, then every result.
        Every line keeps the placeholder output count in 2.1's subagent and compaction files
        (``final_line`` defaults to False there, True elsewhere), as 2.1 writes them.
        """
        tools = tools or {}
        if final_line is None:
            final_line = not (self.family == "2.1" and chain.sidechain)
        at = request_at if request_at is not None else self.tick(8, 60)
        usage = thread.request(at, self.rng)
        thread.add_blocks(blocks)
        output_final = max(1, sum(tokens_of_length(block_chars(b)) for b in blocks))
        placeholder = min(self.rng.randint(1, 30), output_final)
        if same_output_on_all_lines:
            placeholder = output_final
        message_id, request_id = self.ids.message(), self.ids.request()
        self.message_id = message_id  # a Task's agent_progress lines name the message
        self.now = at + self.rng.randint(*latency_ms)
        first_line_ms = self.now
        pending: list[tuple[dict[str, Any], str]] = []
        written_output = placeholder
        for index, block in enumerate(blocks):
            last_block = index == len(blocks) - 1
            final = last_block and final_line
            output = output_final if final else placeholder
            written_output = output
            stop = None
            if self.family == "1.0" and final and len(blocks) > 1:
                stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
            written = self._block_as_written(block, model)
            usage_line = self._usage(usage, output, final=final, cache=thread.cache)
            line = self.head(chain, chain.last)
            line.update(
                {
                    "message": self._message(model, message_id, written, usage_line, stop),
                    "requestId": request_id,
                    "type": "assistant",
                    "uuid": self.ids.uuid(),
                    "timestamp": iso(self.now),
                }
            )
            self.emit(chain, line)
            if chain.mirror is not None and block["type"] == "tool_use":
                chain.mirror(line)
            if block["type"] == "tool_use":
                if self.family == "2.1" and self.hooks is not None and block["name"] == "Bash":
                    if not chain.sidechain:
                        self.hook(
                            chain,
                            "PreToolUse",
                            "PreToolUse:Bash",
                            self.hooks.pre_bash,
                            block["id"],
                            self.now + 4,
                        )
                if self.family == "2.1" and parallel == "interleaved":
                    self._run_tool(chain, thread, block, line["uuid"], tools[block["id"]])
                else:
                    pending.append((block, line["uuid"]))
            if not last_block:
                self.now += self.rng.randint(180, 1_100)
        for block, line_uuid in pending:
            self._run_tool(chain, thread, block, line_uuid, tools[block["id"]])
        record = CallRecord(
            project=self.project,
            session_id=self.session_id,
            thread=thread.name,
            kind=thread.kind,
            model=model,
            day=iso(first_line_ms)[:10],
            message_id=message_id,
            request_id=request_id,
            window=usage.window,
            input_tokens=usage.input_tokens,
            output_tokens=written_output,
            output_tokens_final=output_final,
            cache_creation=usage.cache_creation,
            cache_read=usage.cache_read,
        )
        self.ledger.calls.append(record)
        return record

    def _run_tool(
        self, chain: Chain, thread: Thread, block: dict[str, Any], line_uuid: str, tool: Tool
    ) -> None:
        start = self.now + self.rng.randint(3, 12)
        end = tool.run(start, line_uuid) if tool.run is not None else start + tool.duration_ms
        self.now = end
        if self.family == "2.1" and self.hooks is not None:
            name = f"PostToolUse:{block['name']}"
            self.hook(chain, "PostToolUse", name, self.hooks.post_tool, block["id"], end + 3)
        part: dict[str, Any] = {
            "tool_use_id": block["id"],
            "type": "tool_result",
            "content": tool.content,
        }
        if tool.is_error is not None:
            part["is_error"] = tool.is_error
        parent = line_uuid if self.family == "2.1" else chain.last
        line = self.head(chain, parent)
        line.update({"type": "user", "message": {"role": "user", "content": [part]}})
        line.update({"uuid": self.ids.uuid(), "timestamp": iso(end)})
        if tool.result is not None and not (self.family == "2.1" and chain.sidechain):
            line["toolUseResult"] = tool.result
        if self.family == "2.1":
            line["sourceToolAssistantUUID"] = line_uuid
        self.emit(chain, line)
        if chain.mirror is not None:
            chain.mirror(line)
        thread.add_result(tool.content)
        self.now = end + self.rng.randint(2, 9)

    def api_rejection(self, thread: Thread, window: int, at_ms: int) -> None:
        """The line 2.x writes when the API refuses a request as too long (no requestId)."""
        text = "API Error: 400 " + dumps(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"prompt is too long: {window} tokens > {CONTEXT_LIMIT} maximum",
                },
                "request_id": self.ids.request(),
            }
        )
        message_id = self.ids.uuid()
        line = self.head(self.main, self.main.last)
        line.update(
            {
                "type": "assistant",
                "uuid": self.ids.uuid(),
                "timestamp": iso(at_ms),
                "message": {
                    "id": message_id,
                    "container": None,
                    "model": "<synthetic>",
                    "role": "assistant",
                    "stop_reason": "stop_sequence",
                    "stop_sequence": "",
                    "type": "message",
                    "usage": {
                        "input_tokens": 0,
                        "output_tokens": 0,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                        "service_tier": None,
                        "cache_creation": {
                            "ephemeral_1h_input_tokens": 0,
                            "ephemeral_5m_input_tokens": 0,
                        },
                    },
                    "content": [{"type": "text", "text": text}],
                    "context_management": None,
                },
                "isApiErrorMessage": True,
            }
        )
        self.emit(self.main, line)
        self.ledger.calls.append(
            CallRecord(
                project=self.project,
                session_id=self.session_id,
                thread=thread.name,
                kind=thread.kind,
                model="<synthetic>",
                day=iso(at_ms)[:10],
                message_id=message_id,
                request_id=None,
                window=window,
                input_tokens=0,
                output_tokens=0,
                output_tokens_final=0,
                cache_creation=0,
                cache_read=0,
                failed=True,
            )
        )

    def write(self) -> int:
        return self.sinks.flush()


# ---------------------------------------------------------------------------------------------
# Tool results in each release's shape
# ---------------------------------------------------------------------------------------------


def numbered(content: str) -> str:
    """The Read tool's view of a file: a right-aligned line number, an arrow, the line."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(content.split("\n"), start=1))


def read_tool(path: str, content: str, ms: int = 40) -> Tool:
    lines = len(content.split("\n"))
    file = {
        "filePath": path,
        "content": content,
        "numLines": lines,
        "startLine": 1,
        "totalLines": lines,
    }
    return Tool(numbered(content), {"type": "text", "file": file}, duration_ms=ms)


def bash_tool(stdout: str, family: str, ms: int) -> Tool:
    result: dict[str, Any] = {
        "stdout": stdout,
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }
    if family == "2.1":
        result["noOutputExpected"] = False
    return Tool(stdout, result, is_error=False, duration_ms=ms)


def grep_tool(files: dict[str, str], pattern: str, root: str, ms: int = 90) -> Tool:
    """``Grep`` in content mode with line numbers, run over the scenario's files."""
    regex = re.compile(pattern)
    hits = []
    for path in sorted(files):
        if not path.startswith(root):
            continue
        for number, line in enumerate(files[path].split("\n"), start=1):
            if regex.search(line):
                hits.append(f"{path}:{number}:{line}")
    out = "\n".join(hits) if hits else "No matches found"
    result = {
        "mode": "content",
        "numFiles": 0,
        "filenames": [],
        "content": out,
        "numLines": len(hits),
    }
    return Tool(out, result, duration_ms=ms)


def structured_patch(old: str, new: str) -> list[dict[str, Any]]:
    hunks = []
    diff = list(difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=3))
    for line in diff[2:]:
        if line.startswith("@@"):
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            assert m is not None
            hunks.append(
                {
                    "oldStart": int(m[1]),
                    "oldLines": int(m[2] or 1),
                    "newStart": int(m[3]),
                    "newLines": int(m[4] or 1),
                    "lines": [],
                }
            )
        else:
            hunks[-1]["lines"].append(line)
    return hunks


def edit_tool(path: str, original: str, old: str, new: str, family: str) -> Tool:
    assert original.count(old) == 1, f"edit of {path}: the old string must occur once"
    updated = original.replace(old, new)
    result = {
        "filePath": path,
        "oldString": old,
        "newString": new,
        "originalFile": original,
        "structuredPatch": structured_patch(original, updated),
        "userModified": False,
        "replaceAll": False,
    }
    if family == "2.1":
        text = f"The file {path} has been updated successfully."
    else:
        # 1.0 and 2.0 answer with the edited region, numbered like a Read.
        start = max(0, updated[: updated.index(new)].count("\n") - 2)
        region = updated.split("\n")[start : start + new.count("\n") + 6]
        snippet = "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(region, start=start + 1))
        text = (
            f"The file {path} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n{snippet}"
        )
    return Tool(text, result, duration_ms=120)


def write_tool(path: str, content: str) -> Tool:
    result = {
        "type": "create",
        "filePath": path,
        "content": content,
        "structuredPatch": [],
        "originalFile": None,
    }
    return Tool(f"File created successfully at: {path}", result, duration_ms=90)


def mcp_tool(text: str, ms: int) -> Tool:
    """An MCP tool's result: a list of text parts, kept twice (content and toolUseResult)."""
    parts = [{"type": "text", "text": text}]
    return Tool(parts, [dict(part) for part in parts], duration_ms=ms)


# ---------------------------------------------------------------------------------------------
# The shop's repository (a small Python web shop), as the agent reads it
# ---------------------------------------------------------------------------------------------

SERVICE_PY = '''"""Checkout: turn a cart into a priced, paid order."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from shop.inventory.reservations import ReservationError, release_stock, reserve_stock
from shop.models.order import Cart, Order, OrderLine, OrderStatus
from shop.payments.gateway import PaymentDeclined, PaymentGateway
from shop.pricing.discounts import apply_discounts
from shop.pricing.tax import tax_for

log = logging.getLogger("shop.checkout")

MAX_LINES = 200


class CheckoutError(Exception):
    """A checkout that cannot go on; the message is shown to the customer."""


@dataclass
class Timings:
    """Milliseconds spent in each stage, logged once per checkout."""

    stages: dict[str, float] = field(default_factory=dict)

    def measure(self, stage: str, started: float) -> None:
        self.stages[stage] = round((time.perf_counter() - started) * 1000, 1)

    def as_log_fields(self) -> str:
        return " ".join(f"{name}_ms={ms}" for name, ms in self.stages.items())


@dataclass(frozen=True)
class CheckoutResult:
    order_id: str
    total_gbp: Decimal
    status: OrderStatus


class CheckoutService:
    """One checkout per call; safe to retry with the same idempotency key."""

    def __init__(self, session: Session, gateway: PaymentGateway) -> None:
        self.session = session
        self.gateway = gateway

    def checkout(self, cart: Cart, *, idempotency_key: str, request_id: str) -> CheckoutResult:
        timings = Timings()
        existing = self._order_for_key(idempotency_key)
        if existing is not None:
            log.info("replayed checkout request_id=%s order=%s", request_id, existing.id)
            return CheckoutResult(existing.id, existing.total_gbp, existing.status)
        if not cart.items:
            raise CheckoutError("Your basket is empty.")
        if len(cart.items) > MAX_LINES:
            raise CheckoutError(f"A basket can hold at most {MAX_LINES} lines.")

        started = time.perf_counter()
        order = self._build_order(cart, idempotency_key)
        timings.measure("build", started)

        started = time.perf_counter()
        try:
            reserve_stock(self.session, order)
        except ReservationError as exc:
            raise CheckoutError(str(exc)) from exc
        timings.measure("reserve", started)

        started = time.perf_counter()
        apply_discounts(self.session, order)
        order.tax_gbp = tax_for(order)
        order.total_gbp = order.subtotal_gbp - order.discount_gbp + order.tax_gbp
        timings.measure("price", started)

        started = time.perf_counter()
        try:
            charge = self.gateway.charge(
                amount_gbp=order.total_gbp,
                customer_id=cart.customer_id,
                reference=order.id,
                idempotency_key=idempotency_key,
            )
        except PaymentDeclined as exc:
            release_stock(self.session, order)
            order.status = OrderStatus.PAYMENT_FAILED
            self.session.commit()
            raise CheckoutError("Your payment was declined.") from exc
        timings.measure("pay", started)

        order.payment_reference = charge.reference
        order.status = OrderStatus.PAID
        started = time.perf_counter()
        self.session.commit()
        timings.measure("commit", started)

        log.info(
            "checkout done request_id=%s order=%s lines=%d %s",
            request_id,
            order.id,
            len(order.lines),
            timings.as_log_fields(),
        )
        return CheckoutResult(order.id, order.total_gbp, order.status)

    def _order_for_key(self, idempotency_key: str) -> Order | None:
        query = select(Order).where(Order.idempotency_key == idempotency_key)
        return self.session.scalars(query).first()

    def _build_order(self, cart: Cart, idempotency_key: str) -> Order:
        order = Order(
            id=f"o-{uuid.uuid4().hex[:10]}",
            customer_id=cart.customer_id,
            idempotency_key=idempotency_key,
            status=OrderStatus.PENDING,
            currency="GBP",
        )
        for item in cart.items:
            order.lines.append(
                OrderLine(
                    sku=item.sku,
                    quantity=item.quantity,
                    unit_price_gbp=item.unit_price_gbp,
                    line_total_gbp=item.unit_price_gbp * item.quantity,
                )
            )
        order.subtotal_gbp = sum((line.line_total_gbp for line in order.lines), Decimal("0"))
        order.discount_gbp = Decimal("0")
        self.session.add(order)
        self.session.flush()
        return order
'''

DISCOUNTS_HEAD = '''"""Discounts: percentage and fixed-amount rules keyed by SKU."""

from __future__ import annotations

from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from shop.models.order import Customer, DiscountRule, Order, OrderLine

PENNY = Decimal("0.01")


def _line_discount(line: OrderLine, rules: list[DiscountRule]) -> Decimal:
    """The best single rule for a line; rules never stack."""
    best = Decimal("0")
    for rule in rules:
        if rule.min_quantity and line.quantity < rule.min_quantity:
            continue
        if rule.kind == "percent":
            amount = line.line_total_gbp * rule.value / Decimal("100")
        else:
            amount = min(rule.value * line.quantity, line.line_total_gbp)
        best = max(best, amount)
    return best.quantize(PENNY, rounding=ROUND_HALF_UP)
'''

# Before commit "pricing: customer-segment discount rules": one query for the whole order.
DISCOUNTS_BEFORE = (
    DISCOUNTS_HEAD
    + '''

def _rules_by_sku(session: Session, skus: set[str]) -> dict[str, list[DiscountRule]]:
    query = select(DiscountRule).where(DiscountRule.sku.in_(skus), DiscountRule.active.is_(True))
    rules: dict[str, list[DiscountRule]] = defaultdict(list)
    for rule in session.scalars(query):
        rules[rule.sku].append(rule)
    return rules


def apply_discounts(session: Session, order: Order) -> None:
    """Set each line's discount and the order's total discount."""
    rules = _rules_by_sku(session, {line.sku for line in order.lines})
    total = Decimal("0")
    for line in order.lines:
        line.discount_gbp = _line_discount(line, rules.get(line.sku, []))
        total += line.discount_gbp
    order.discount_gbp = total
'''
)

DISCOUNTS_SLOW_TAIL = '''

def _segment_for(session: Session, customer_id: str) -> str | None:
    query = select(Customer.segment).where(Customer.id == customer_id)
    return session.scalars(query).first()


def _rules_for_line(session: Session, line: OrderLine, segment: str | None) -> list[DiscountRule]:
    query = (
        select(DiscountRule)
        .where(DiscountRule.sku == line.sku, DiscountRule.active.is_(True))
        .where(or_(DiscountRule.segment == segment, DiscountRule.segment.is_(None)))
        .order_by(DiscountRule.priority.desc())
    )
    return list(session.scalars(query))


def apply_discounts(session: Session, order: Order) -> None:
    """Set each line's discount and the order's total discount."""
    total = Decimal("0")
    for line in order.lines:
        segment = _segment_for(session, order.customer_id)
        rules = _rules_for_line(session, line, segment)
        line.discount_gbp = _line_discount(line, rules)
        total += line.discount_gbp
    order.discount_gbp = total
'''

DISCOUNTS_NOW = DISCOUNTS_HEAD + DISCOUNTS_SLOW_TAIL

DISCOUNTS_FIX_OLD = '''\
def _rules_for_line(session: Session, line: OrderLine, segment: str | None) -> list[DiscountRule]:
    query = (
        select(DiscountRule)
        .where(DiscountRule.sku == line.sku, DiscountRule.active.is_(True))
        .where(or_(DiscountRule.segment == segment, DiscountRule.segment.is_(None)))
        .order_by(DiscountRule.priority.desc())
    )
    return list(session.scalars(query))


def apply_discounts(session: Session, order: Order) -> None:
    """Set each line's discount and the order's total discount."""
    total = Decimal("0")
    for line in order.lines:
        segment = _segment_for(session, order.customer_id)
        rules = _rules_for_line(session, line, segment)
        line.discount_gbp = _line_discount(line, rules)
        total += line.discount_gbp
    order.discount_gbp = total'''

DISCOUNTS_FIX_NEW = '''def _rules_by_sku(
    session: Session, skus: set[str], segment: str | None
) -> dict[str, list[DiscountRule]]:
    """Every active rule for these SKUs and this segment, in one query."""
    query = (
        select(DiscountRule)
        .where(DiscountRule.sku.in_(skus), DiscountRule.active.is_(True))
        .where(or_(DiscountRule.segment == segment, DiscountRule.segment.is_(None)))
        .order_by(DiscountRule.priority.desc())
    )
    rules: dict[str, list[DiscountRule]] = defaultdict(list)
    for rule in session.scalars(query):
        rules[rule.sku].append(rule)
    return rules


def apply_discounts(session: Session, order: Order) -> None:
    """Set each line's discount and the order's total discount (two queries per order)."""
    segment = _segment_for(session, order.customer_id)
    rules = _rules_by_sku(session, {line.sku for line in order.lines}, segment)
    total = Decimal("0")
    for line in order.lines:
        line.discount_gbp = _line_discount(line, rules.get(line.sku, []))
        total += line.discount_gbp
    order.discount_gbp = total'''

ORDER_PY = '''"""Orders, their lines, carts and discount rules."""

from __future__ import annotations

import enum
from datetime import datetime
from decimal import Decimal

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, Numeric, String, func
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

MONEY = Numeric(12, 2)


class Base(DeclarativeBase):
    pass


class OrderStatus(enum.StrEnum):
    PENDING = "pending"
    PAID = "paid"
    PAYMENT_FAILED = "payment_failed"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"
    REFUNDED = "refunded"


class Customer(Base):
    __tablename__ = "customers"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    segment: Mapped[str | None] = mapped_column(String(32), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Order(Base):
    __tablename__ = "orders"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    idempotency_key: Mapped[str] = mapped_column(String(64), unique=True)
    status: Mapped[OrderStatus] = mapped_column(String(24), index=True)
    currency: Mapped[str] = mapped_column(String(3))
    subtotal_gbp: Mapped[Decimal] = mapped_column(MONEY, default=Decimal("0"))
    discount_gbp: Mapped[Decimal] = mapped_column(MONEY, default=Decimal("0"))
    tax_gbp: Mapped[Decimal] = mapped_column(MONEY, default=Decimal("0"))
    total_gbp: Mapped[Decimal] = mapped_column(MONEY, default=Decimal("0"))
    payment_reference: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    lines: Mapped[list[OrderLine]] = relationship(back_populates="order", lazy="selectin")


class OrderLine(Base):
    __tablename__ = "order_lines"
    # ix_order_lines_order_id_sku was dropped by migration 0057 (see migrations/versions).

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    order_id: Mapped[str] = mapped_column(ForeignKey("orders.id"))
    sku: Mapped[str] = mapped_column(String(32))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price_gbp: Mapped[Decimal] = mapped_column(MONEY)
    line_total_gbp: Mapped[Decimal] = mapped_column(MONEY)
    discount_gbp: Mapped[Decimal] = mapped_column(MONEY, default=Decimal("0"))

    order: Mapped[Order] = relationship(back_populates="lines")


class Cart(Base):
    __tablename__ = "carts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), onupdate=func.now())

    items: Mapped[list[CartItem]] = relationship(lazy="selectin")


class CartItem(Base):
    __tablename__ = "cart_items"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cart_id: Mapped[str] = mapped_column(ForeignKey("carts.id"), index=True)
    sku: Mapped[str] = mapped_column(String(32))
    quantity: Mapped[int] = mapped_column(Integer)
    unit_price_gbp: Mapped[Decimal] = mapped_column(MONEY)


class DiscountRule(Base):
    __tablename__ = "discount_rules"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sku: Mapped[str] = mapped_column(String(32), index=True)
    segment: Mapped[str | None] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))  # "percent" or "fixed"
    value: Mapped[Decimal] = mapped_column(MONEY)
    min_quantity: Mapped[int | None] = mapped_column(Integer)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
'''

RESERVATIONS_PY = '''"""Stock reservations held while a checkout is paid."""

from __future__ import annotations

from sqlalchemy.orm import Session

from shop.models.order import Order
from shop.models.stock import Stock


class ReservationError(Exception):
    pass


def reserve_stock(session: Session, order: Order) -> None:
    for line in order.lines:
        stock = session.get(Stock, line.sku, with_for_update=True)
        if stock is None or stock.available < line.quantity:
            raise ReservationError(f"{line.sku} is out of stock.")
        stock.available -= line.quantity
        stock.reserved += line.quantity


def release_stock(session: Session, order: Order) -> None:
    for line in order.lines:
        stock = session.get(Stock, line.sku, with_for_update=True)
        if stock is not None:
            stock.available += line.quantity
            stock.reserved -= line.quantity
'''

MIGRATION_0057 = '''"""Drop indexes the old reporting jobs needed.

Revision ID: 0057
Revises: 0056
"""

from alembic import op

revision = "0057"
down_revision = "0056"


def upgrade() -> None:
    op.drop_index("ix_orders_legacy_export", table_name="orders")
    op.drop_index("ix_order_lines_created_at", table_name="order_lines")
    op.drop_index("ix_order_lines_order_id_sku", table_name="order_lines")


def downgrade() -> None:
    op.create_index("ix_order_lines_order_id_sku", "order_lines", ["order_id", "sku"])
    op.create_index("ix_order_lines_created_at", "order_lines", ["created_at"])
    op.create_index("ix_orders_legacy_export", "orders", ["status", "created_at"])
'''

MIGRATION_0061 = '''"""Restore the order_lines (order_id, sku) index dropped by 0057.

Revision ID: 0061
Revises: 0060
"""

from alembic import op

revision = "0061"
down_revision = "0060"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_order_lines_order_id_sku",
            "order_lines",
            ["order_id", "sku"],
            postgresql_concurrently=True,
        )


def downgrade() -> None:
    op.drop_index("ix_order_lines_order_id_sku", table_name="order_lines")
'''

TEST_SERVICE_PY = """from decimal import Decimal

from shop.checkout.service import CheckoutError, CheckoutService
from shop.pricing.discounts import apply_discounts


def test_empty_cart_is_refused(session, gateway, cart_factory):
    service = CheckoutService(session, gateway)
    cart = cart_factory(lines=0)
    try:
        service.checkout(cart, idempotency_key="k-1", request_id="r-1")
    except CheckoutError as exc:
        assert "empty" in str(exc)


def test_discounts_pick_the_best_rule(session, order_factory, rule_factory):
    order = order_factory(skus=["SKU-1", "SKU-2"], quantity=2, unit_price=Decimal("10"))
    rule_factory(sku="SKU-1", kind="percent", value=Decimal("10"))
    rule_factory(sku="SKU-1", kind="fixed", value=Decimal("3"))
    apply_discounts(session, order)
    assert order.discount_gbp == Decimal("6.00")
"""

SHOP_FILES = {
    "/home/dev/shop/src/shop/checkout/service.py": SERVICE_PY,
    "/home/dev/shop/src/shop/pricing/discounts.py": DISCOUNTS_NOW,
    "/home/dev/shop/src/shop/models/order.py": ORDER_PY,
    "/home/dev/shop/src/shop/inventory/reservations.py": RESERVATIONS_PY,
    "/home/dev/shop/migrations/versions/0057_drop_legacy_indexes.py": MIGRATION_0057,
    "/home/dev/shop/tests/checkout/test_service.py": TEST_SERVICE_PY,
}


def rebase(files: dict[str, str], base: str, cwd: str) -> dict[str, str]:
    """The scenario's files under another checkout (copy k >= 1 works in ``<base>-k``)."""
    return {cwd + path.removeprefix(base): text for path, text in files.items()}


def app_log(rng: Random, day: datetime, lines: int, *, before_deploy: bool = False) -> str:
    """The shop's application log: the morning after the slow deploy, or (only the checkout
    lines) the day before it."""
    moment = day.replace(hour=8, minute=2, second=0) - timedelta(days=1 if before_deploy else 0)
    out = []
    for _ in range(lines):
        moment += timedelta(milliseconds=rng.randint(400, 4_000))
        stamp = moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"
        kind = 0.0 if before_deploy else rng.random()
        if kind < 0.45:
            n = rng.randint(1, 14)
            per_line = (1.2, 3.5) if before_deploy else (190, 260)
            price = round(n * rng.uniform(*per_line) + rng.uniform(0, 40), 1)
            out.append(
                f"{stamp} INFO shop.checkout checkout done request_id=r-{rng.getrandbits(24):06x} "
                f"order=o-{rng.getrandbits(40):010x} lines={n} build_ms={rng.uniform(3, 9):.1f} "
                f"reserve_ms={rng.uniform(8, 30):.1f} price_ms={price} "
                f"pay_ms={rng.uniform(150, 420):.1f} "
                f"commit_ms={rng.uniform(4, 15):.1f}"
            )
        elif kind < 0.8:
            ip = f"10.4.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
            path, method = rng.choice(
                [
                    ("/api/checkout", "POST"),
                    ("/api/cart", "GET"),
                    ("/api/cart/items", "POST"),
                    ("/api/orders", "GET"),
                    ("/healthz", "GET"),
                ]
            )
            ms = rng.uniform(900, 3_600) if path == "/api/checkout" else rng.uniform(4, 60)
            out.append(
                f'{stamp} INFO uvicorn.access {ip}:{rng.randint(30_000, 60_000)} - "{method} '
                f"{path} "
                f'HTTP/1.1" 200 duration_ms={ms:.1f}'
            )
        elif kind < 0.93:
            out.append(
                f"{stamp} WARNING shop.db pool checked_out={rng.randint(17, 20)}/20 "
                f"overflow={rng.randint(0, 5)} waited_ms={rng.uniform(80, 900):.1f}"
            )
        else:
            out.append(
                f"{stamp} WARNING shop.checkout slow checkout "
                f"request_id=r-{rng.getrandbits(24):06x} "
                f"total_ms={rng.uniform(3_000, 6_500):.1f} threshold_ms=2000"
            )
    return "\n".join(out)


DISCOUNT_QUERY = (
    "SELECT discount_rules.id, discount_rules.sku, discount_rules.segment, discount_rules.kind, "
    "discount_rules.value, discount_rules.min_quantity, discount_rules.priority, "
    "discount_rules.active FROM discount_rules WHERE discount_rules.sku = $1 AND "
    "discount_rules.active IS true AND (discount_rules.segment = $2 OR discount_rules.segment "
    "IS NULL) ORDER BY discount_rules.priority DESC"
)
SEGMENT_QUERY = "SELECT customers.segment FROM customers WHERE customers.id = $1"
LINES_QUERY = (
    "SELECT order_lines.order_id AS order_lines_order_id, order_lines.id AS order_lines_id, "
    "order_lines.sku AS order_lines_sku, order_lines.quantity AS order_lines_quantity, "
    "order_lines.unit_price_gbp AS order_lines_unit_price_gbp, order_lines.line_total_gbp AS "
    "order_lines_line_total_gbp, order_lines.discount_gbp AS order_lines_discount_gbp FROM "
    "order_lines WHERE order_lines.order_id IN ($1)"
)


def slow_query_log(rng: Random, day: datetime, entries: int) -> str:
    """PostgreSQL's log_min_duration_statement lines (threshold 100 ms) for the checkout."""
    moment = day.replace(hour=8, minute=11, second=0)
    out = []
    for _ in range(entries):
        moment += timedelta(milliseconds=rng.randint(300, 9_000))
        stamp = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"
        pid = rng.randint(40_000, 49_999)
        which = rng.random()
        if which < 0.6:
            query, params = (
                DISCOUNT_QUERY,
                f"$1 = 'SKU-{rng.randint(10_000, 99_999)}', $2 = 'retail'",
            )
            ms = rng.uniform(100, 180)
        elif which < 0.75:
            query, params = SEGMENT_QUERY, f"$1 = 'c-{rng.randint(1_000, 9_999)}'"
            ms = rng.uniform(100, 130)
        else:
            query, params = LINES_QUERY, f"$1 = 'o-{rng.getrandbits(40):010x}'"
            ms = rng.uniform(220, 480)
        out.append(
            f"{stamp} [{pid}] shop@shop LOG:  duration: {ms:.3f} ms  execute <unnamed>: {query}"
        )
        out.append(f"{stamp} [{pid}] shop@shop DETAIL:  parameters: {params}")
    return "\n".join(out)


GIT_SUBJECTS = [
    "checkout: log stage timings",
    "cart: keep quantities as integers",
    "payments: retry gateway timeouts once",
    "inventory: lock stock rows in sku order",
    "deps: bump sqlalchemy to 2.0.36",
    "ci: cache the uv environment",
    "orders: add payment_reference",
    "pricing: tax for zero-rated items",
    "api: return 409 on a replayed idempotency key",
    "docs: checkout sequence diagram",
    "tests: factories for discount rules",
    "pricing: round discounts half up",
]


def git_show(rng: Random, culprit: str, path: str, day: datetime) -> str:
    diff = difflib.unified_diff(
        DISCOUNTS_BEFORE.split("\n"),
        DISCOUNTS_NOW.split("\n"),
        fromfile="a/src/shop/pricing/discounts.py",
        tofile="b/src/shop/pricing/discounts.py",
        lineterm="",
    )
    when = (day - timedelta(days=1, hours=2)).strftime("%a %b %d %H:%M:%S %Y +0000")
    header = (
        f"commit {culprit}{rng.getrandbits(132):033x}\n"
        "Author: Priya Raman <priya@shop.example>\n"
        f"Date:   {when}\n\n"
        "    pricing: customer-segment discount rules (#812)\n\n"
        "    Rules can now target a customer segment. Lines look their rules up with the\n"
        "    customer's segment; rules without a segment still apply to everyone.\n\n"
        f"diff --git a/{path} b/{path}\n"
        f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644\n"
    )
    return header + "\n".join(diff)


def psql_report(rng: Random, order_id: str) -> str:
    """``\\d order_lines`` and an EXPLAIN ANALYZE of the lines query, on staging."""
    rows = rng.randint(1_700_000, 1_900_000)
    read = rng.randint(18_000, 21_000)
    hit = rng.randint(1_800, 2_600)
    ms = rng.uniform(300, 420)
    return f"""                              Table "public.order_lines"
     Column     |     Type      | Collation | Nullable |                 Default
----------------+---------------+-----------+----------+-----------------------------------------
 id             | integer       |           | not null | nextval('order_lines_id_seq'::regclass)
 order_id       | character varying(32) |   | not null |
 sku            | character varying(32) |   | not null |
 quantity       | integer       |           | not null |
 unit_price_gbp | numeric(12,2) |           | not null |
 line_total_gbp | numeric(12,2) |           | not null |
 discount_gbp   | numeric(12,2) |           |          | 0
 created_at     | timestamp with time zone | | not null | now()
Indexes:
    "order_lines_pkey" PRIMARY KEY, btree (id)
Foreign-key constraints:
    "order_lines_order_id_fkey" FOREIGN KEY (order_id) REFERENCES orders(id)

                                                   QUERY PLAN
-------------------------------------------------------------------------------------------------------------------
 Gather  (cost=1000.00..41873.52 rows=7 width=61) \
(actual time={ms - 40:.3f}..{ms:.3f} rows=7 loops=1)
   Workers Planned: 2
   Workers Launched: 2
   Buffers: shared hit={hit} read={read}
   ->  Parallel Seq Scan on order_lines  (cost=0.00..40872.82 rows=3 width=61) \
(actual time={ms - 120:.3f}..{ms - 42:.3f} rows=2 loops=3)
         Filter: ((order_id)::text = '{order_id}'::text)
         Rows Removed by Filter: {rows // 3}
         Buffers: shared hit={hit} read={read}
 Planning:
   Buffers: shared hit=4
 Planning Time: 0.{rng.randint(100, 400)} ms
 Execution Time: {ms + 0.2:.3f} ms
(13 rows)"""


PROFILED = [
    ("shop/checkout/service.py", "checkout"),
    ("shop/pricing/discounts.py", "apply_discounts"),
    ("shop/pricing/discounts.py", "_rules_for_line"),
    ("shop/pricing/discounts.py", "_segment_for"),
    ("sqlalchemy/orm/session.py", "scalars"),
    ("sqlalchemy/orm/session.py", "execute"),
    ("sqlalchemy/orm/session.py", "_execute_internal"),
    ("sqlalchemy/orm/context.py", "orm_execute_statement"),
    ("sqlalchemy/engine/base.py", "_execute_context"),
    ("sqlalchemy/engine/base.py", "_exec_single_context"),
    ("sqlalchemy/engine/default.py", "do_execute"),
    ("psycopg/cursor.py", "execute"),
    ("psycopg/connection.py", "wait"),
    ("psycopg/waiting.py", "wait_epoll"),
    ("{method 'poll' of 'select.epoll' objects}", ""),
    ("shop/inventory/reservations.py", "reserve_stock"),
    ("sqlalchemy/orm/session.py", "get"),
    ("sqlalchemy/orm/loading.py", "load_on_pk_identity"),
    ("shop/payments/gateway.py", "charge"),
    ("httpx/_client.py", "post"),
    ("sqlalchemy/sql/compiler.py", "process"),
    ("sqlalchemy/sql/compiler.py", "visit_select"),
    ("sqlalchemy/orm/strategies.py", "_load_for_path"),
    ("sqlalchemy/engine/cursor.py", "fetchall"),
    ("sqlalchemy/orm/loading.py", "instances"),
    ("decimal.py", "quantize"),
    ("shop/pricing/discounts.py", "_line_discount"),
    ("shop/pricing/tax.py", "tax_for"),
]


def profile_output(rng: Random, rows: int, venv: str) -> str:
    """cProfile of twenty 12-line checkouts against staging, by cumulative time."""
    seconds = rng.uniform(58, 64)
    out = [
        f"         {rng.randint(1_700_000, 1_900_000)} function calls "
        f"({rng.randint(1_600_000, 1_699_999)} "
        f"primitive calls) in {seconds:.3f} seconds",
        "",
        "   Ordered by: cumulative time",
        "",
        "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
    ]
    cumulative = seconds
    for index in range(rows):
        path, function = PROFILED[index % len(PROFILED)]
        if index >= len(PROFILED):
            path = (
                path.replace(".py", f"_{index // len(PROFILED)}.py")
                if path.endswith(".py")
                else path
            )
        calls = rng.choice([20, 240, 480, 960, 4_800, 11_520, 23_040])
        tottime = cumulative * rng.uniform(0.001, 0.05)
        where = (
            path
            if path.startswith("{")
            else (
                f"{venv}/lib/python3.12/site-packages/{path}"
                if not path.startswith("shop/")
                else f"src/{path}"
            )
        )
        name = where if path.startswith("{") else f"{where}:{rng.randint(20, 2_400)}({function})"
        out.append(
            f"{calls:>9}  {tottime:7.3f}  {tottime / calls:7.3f}  {cumulative:7.3f}  "
            f"{cumulative / calls:7.3f} {name}"
        )
        cumulative *= rng.uniform(0.90, 0.99)
    return "\n".join(out)


def pytest_output(rng: Random) -> str:
    passed = rng.randint(38, 46)
    return (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0\n"
        "rootdir: /home/dev/shop\n"
        "configfile: pyproject.toml\n"
        "plugins: anyio-4.6.2\n"
        f"collected {passed} items\n\n"
        f"tests/checkout/test_service.py {'.' * 14}{' ' * 32}[ 33%]\n"
        f"tests/checkout/test_discounts.py {'.' * (passed - 24)}{' ' * 20}[ 80%]\n"
        f"tests/checkout/test_queries.py {'.' * 10}{' ' * 34}[100%]\n\n"
        f"============================== {passed} passed in {rng.uniform(3, 6):.2f}s "
        "=============================="
    )


# ---------------------------------------------------------------------------------------------
# The store's MCP data (session B): fat order rows with free-text notes
# ---------------------------------------------------------------------------------------------

PRODUCTS = [
    "Enamel camping mug, 350 ml",
    "Merino hiking socks (pair)",
    "Cast-iron skillet, 26 cm",
    "Bamboo chopping board",
    "Linen tea towel set of 3",
    "Stainless steel bottle, 750 ml",
    "Wool throw, herringbone",
    "Ceramic pour-over dripper",
    "Beeswax food wraps",
    "Oak salad servers",
    "Hand-thrown stoneware bowl",
    "Waxed canvas tote",
    "Copper measuring cups",
    "Recycled glass tumblers (4)",
    "Cotton apron, indigo",
    "Walnut spice rack",
    "Pocket knife with ash handle",
    "Loose-leaf breakfast tea, 250 g",
    "Cold-brew coffee jug",
    "Rattan storage basket",
]
COURIERS = [
    ("Parcelforce", "PF"),
    ("DPD", "15"),
    ("Evri", "H0"),
    ("Royal Mail", "RM"),
    ("Yodel", "JD"),
]
DEPOTS = [
    "Daventry",
    "Coventry",
    "Warrington",
    "Bristol North",
    "Leeds South",
    "Croydon",
    "Motherwell",
]
STREETS = [
    "Mill Lane",
    "Station Road",
    "Church Street",
    "Victoria Terrace",
    "Orchard Close",
    "High Street",
]
TOWNS = [
    ("Leeds", "LS6"),
    ("York", "YO31"),
    ("Harrogate", "HG1"),
    ("Wakefield", "WF1"),
    ("Otley", "LS21"),
]
AGENTS = ["Maya", "Tom", "Ifeoma", "Greg", "Sana", "Lukas", "Beth"]
COLOURS = ["sage", "charcoal", "rust", "navy", "oat", "forest"]
NOTE_SENTENCES = [
    "Customer called on {date} asking whether the parcel could go to a neighbour; {agent} added "
    "the "
    "instruction to the courier record.",
    "Courier scan at the {depot} depot on {date} shows the parcel as received; no movement was "
    "recorded after that scan.",
    "Item {sku} was swapped for the {colour} variant after a stock check, and the customer agreed "
    "by email.",
    "Delivery attempted on {date} but nobody was in; a card was left and the parcel went back to "
    "the "
    "{depot} depot.",
    "The customer reported the box arrived damaged, with one corner crushed; photos are attached "
    "to "
    "ticket T-{ticket}.",
    "Gift message printed on the packing slip at the customer's request; no prices shown.",
    "Payment captured in full on {date}; no partial refunds recorded against this order.",
    "Address line two was missing at checkout; {agent} confirmed the flat number by phone on "
    "{date}.",
    "The courier's proof of delivery shows a signature that the customer says is not theirs.",
    "Order held for fraud review for six hours on {date}, then released by {agent}.",
    "Split into two parcels because the {product} ships from the second warehouse.",
    "Customer asked for the invoice to show the company name; a corrected invoice went out on "
    "{date}.",
    "Tracking stalled for {n} days between the hub and the {depot} depot; the courier opened an "
    "investigation.",
    "Loyalty discount of ten percent applied at checkout; the voucher code was valid until {date}.",
    "The parcel was left in the safe place named at checkout (the side gate), according to the "
    "driver's note.",
    "A replacement {product} was sent free of charge after the first one arrived chipped.",
    "Customer changed the delivery day online on {date}; the courier accepted the new slot.",
    "{agent} escalated to the courier's claims team after two failed delivery attempts.",
]
RETURN_REASONS = [
    "arrived damaged",
    "wrong colour sent",
    "no longer needed",
    "item not as described",
    "parcel never arrived",
    "duplicate order",
]


def _note(rng: Random, at_least: int, today: datetime) -> str:
    parts: list[str] = []
    size = 0
    while size < at_least:
        when = today - timedelta(days=rng.randint(1, 120))
        sentence = rng.choice(NOTE_SENTENCES).format(
            date=when.strftime("%d %b"),
            agent=rng.choice(AGENTS),
            depot=rng.choice(DEPOTS),
            sku=f"SKU-{rng.randint(10_000, 99_999)}",
            colour=rng.choice(COLOURS),
            product=rng.choice(PRODUCTS).split(",")[0].lower(),
            n=rng.randint(2, 9),
            ticket=rng.randint(10_000, 99_999),
        )
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)


def _items(rng: Random) -> list[dict[str, Any]]:
    items = []
    for _ in range(rng.randint(4, 8)):
        quantity = rng.randint(1, 4)
        price = round(rng.uniform(3.5, 89.0), 2)
        items.append(
            {
                "sku": f"SKU-{rng.randint(10_000, 99_999)}",
                "name": rng.choice(PRODUCTS),
                "qty": quantity,
                "unit_price_gbp": price,
                "line_total_gbp": round(price * quantity, 2),
            }
        )
    return items


def _sized(row: dict[str, Any], rng: Random, today: datetime, target: int) -> dict[str, Any]:
    """Fill the row's free-text notes until the row's JSON is about ``target`` characters."""
    row["notes"] = ""
    row["notes"] = _note(rng, max(80, target - len(json.dumps(row, ensure_ascii=False))), today)
    return row


def inward(rng: Random) -> str:
    """The two letters that end a UK postcode."""
    letters = "ABDEFGHJLNPQRSTUWXYZ"
    return rng.choice(letters) + rng.choice(letters)


def order_rows(rng: Random, count: int, today: datetime) -> list[dict[str, Any]]:
    rows = []
    moment = today - timedelta(days=2)
    for _ in range(count):
        moment -= timedelta(hours=rng.randint(6, 30), minutes=rng.randint(0, 59))
        items = _items(rng)
        carrier, prefix = rng.choice(COURIERS)
        town, postcode = rng.choice(TOWNS)
        status = rng.choices(
            ["delivered", "in_transit", "lost_in_transit", "returned", "refunded", "cancelled"],
            weights=[70, 6, 3, 8, 8, 5],
        )[0]
        row = {
            "order_id": f"o-2026-{rng.randint(10_000, 99_999)}",
            "status": status,
            "created_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "total_gbp": round(sum(item["line_total_gbp"] for item in items) + 4.95, 2),
            "currency": "GBP",
            "items": items,
            "shipping": {
                "carrier": carrier,
                "service": rng.choice(["standard", "next_day", "named_day"]),
                "tracking": f"{prefix}{rng.randint(10**9, 10**10 - 1)}GB",
                "address": {
                    "line1": f"{rng.randint(1, 180)} {rng.choice(STREETS)}",
                    "town": town,
                    "postcode": f"{postcode} {rng.randint(1, 9)}{inward(rng)}",
                },
            },
        }
        rows.append(_sized(row, rng, today, rng.randint(*ROW_CHARS)))
    return rows


def return_rows(
    rng: Random, orders: list[dict[str, Any]], count: int, today: datetime
) -> list[dict[str, Any]]:
    rows = []
    for order in rng.sample(orders, count):
        items = [dict(item) for item in order["items"][: rng.randint(1, 3)]]
        refund = round(sum(item["line_total_gbp"] for item in items), 2)
        row = {
            "return_id": f"r-{rng.randint(100_000, 999_999)}",
            "order_id": order["order_id"],
            "status": rng.choice(
                ["refunded", "received", "awaiting_inspection", "rejected", "label_sent"]
            ),
            "requested_at": order["created_at"],
            "reason": rng.choice(RETURN_REASONS),
            "items": items,
            "refund_gbp": refund,
            "refund_method": rng.choice(["original_payment", "store_credit"]),
        }
        rows.append(_sized(row, rng, today, rng.randint(*ROW_CHARS)))
    return rows


def shipment_rows(
    rng: Random, orders: list[dict[str, Any]], chars: int, today: datetime
) -> list[dict[str, Any]]:
    """One tracking row per order, sized so the JSON holds exactly ``chars`` characters."""
    rows: list[dict[str, Any]] = []
    envelope = len(json.dumps({"customer_id": "c-1001", "shipments": [], "total": 999}))
    used = envelope
    share = (chars - envelope) // len(orders) - 150  # notes overshoot by up to one sentence
    for order in orders:
        events = []
        moment = datetime.strptime(order["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        for code, label in [
            ("MANIFESTED", "Label created; waiting for the parcel"),
            ("COLLECTED", "Collected from the sender"),
            ("HUB", "At the national hub"),
            ("DEPOT", f"At the {rng.choice(DEPOTS)} depot"),
            ("OUT_FOR_DELIVERY", "Out for delivery"),
        ]:
            moment += timedelta(hours=rng.randint(2, 20))
            events.append(
                {"at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"), "code": code, "text": label}
            )
        row = {
            "order_id": order["order_id"],
            "carrier": order["shipping"]["carrier"],
            "tracking": order["shipping"]["tracking"],
            "events": events,
        }
        row = _sized(row, rng, today, rng.randint(int(share * 0.85), int(share * 1.15)))
        size = len(json.dumps(row, ensure_ascii=False)) + (2 if rows else 0)
        if used + size > chars:
            break
        rows.append(row)
        used += size
    # The last row's notes absorb the difference, so the result has exactly ``chars`` characters.
    short = chars - len(
        json.dumps({"customer_id": "c-1001", "shipments": rows, "total": len(rows)})
    )
    assert short > 1, short
    rows[-1]["notes"] += " " + _note(rng, short, today)[: short - 1]
    return rows


COURIER_EMAIL = """Hello,

Thank you for contacting us about the parcels for your customer c-1001.

We have checked both tracking numbers you gave us. The first parcel was scanned at our {depot} \
depot on the {date1} and then loaded onto a van the next morning. The driver's handheld shows a \
delivery to a safe place, but the photo attached to the record shows a door that the customer \
says is not theirs. We have opened a lost-parcel claim for it (reference {claim}).

The second parcel never left the hub. It was held because the label could not be read after \
it was damaged in a sorting machine on the {date2}. Parcels in that state are normally relabelled \
within two working days; this one was not, and we are sorry for that. It is now being returned \
to you, the sender, and should arrive back at your warehouse within five working days.

For the claim we need the value of the goods and a copy of the invoice. If you can send those \
to this address, we aim to settle claims within ten working days of receiving them.

Kind regards,
Courier customer care"""


# ---------------------------------------------------------------------------------------------
# The other projects' files
# ---------------------------------------------------------------------------------------------

SEED_CATALOG_PY = '''"""Load the product catalogue from data/catalog.csv into the database."""

from __future__ import annotations

import argparse
import csv
from decimal import Decimal
from pathlib import Path

from shop.db import session_scope
from shop.models.product import Product

CATALOG = Path(__file__).resolve().parents[1] / "data" / "catalog.csv"


def rows(path: Path, limit: int | None) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return [row for index, row in enumerate(reader) if limit is None or index < limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="load only the first N rows")
    args = parser.parse_args()
    loaded = 0
    with session_scope() as session:
        for row in rows(CATALOG, args.limit):
            session.add(
                Product(
                    sku=row["sku"],
                    name=row["name"],
                    price_gbp=Decimal(row["price_gbp"]),
                    weight_g=int(row["weight_g"]),
                )
            )
            loaded += 1
    print(f"loaded {loaded} products")


if __name__ == "__main__":
    main()
'''

SEED_EDIT_OLD = """\
    parser.add_argument("--limit", type=int, default=None, help="load only the first N rows")
    args = parser.parse_args()
    loaded = 0
    with session_scope() as session:
        for row in rows(CATALOG, args.limit):
            session.add("""

SEED_EDIT_NEW = """\
    parser.add_argument("--limit", type=int, default=None, help="load only the first N rows")
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be inserted, write nothing"
    )
    args = parser.parse_args()
    loaded = 0
    if args.dry_run:
        for row in rows(CATALOG, args.limit):
            print(f"would insert {row['sku']} {row['name']!r} at {row['price_gbp']} GBP")
            loaded += 1
        print(f"dry run: {loaded} products, nothing written")
        return
    with session_scope() as session:
        for row in rows(CATALOG, args.limit):
            session.add("""

EXPORT_PY = '''"""Monthly invoice export for the finance team (CSV, one row per invoice)."""

import csv
import datetime

from legacy.db import connect

QUERY = """
    SELECT invoice_no, customer_id, issued_at, net_amount, vat_amount, currency
    FROM invoices
    WHERE issued_at >= %(start)s AND issued_at < %(end)s
    ORDER BY issued_at
"""


def month_bounds(year, month):
    start = datetime.datetime(year, month, 1)
    if month == 12:
        last = datetime.datetime(year, 12, 31)
    else:
        last = datetime.datetime(year, month + 1, 1) - datetime.timedelta(days=1)
    return start, last


def export_month(year, month, out_path):
    start, end = month_bounds(year, month)
    with connect() as conn, open(out_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["invoice_no", "customer_id", "issued_at", "net", "vat", "currency"])
        cursor = conn.cursor()
        cursor.execute(QUERY, {"start": start, "end": end})
        for row in cursor:
            writer.writerow(row)
    return out_path
'''

EXPORT_OLD = """def month_bounds(year, month):
    start = datetime.datetime(year, month, 1)
    if month == 12:
        last = datetime.datetime(year, 12, 31)
    else:
        last = datetime.datetime(year, month + 1, 1) - datetime.timedelta(days=1)
    return start, last"""

EXPORT_NEW = '''def month_bounds(year, month):
    """[first instant of the month, first instant of the next month)."""
    start = datetime.datetime(year, month, 1)
    if month == 12:
        end = datetime.datetime(year + 1, 1, 1)
    else:
        end = datetime.datetime(year, month + 1, 1)
    return start, end'''

LEGACY_FILES = {
    "/home/dev/legacy/legacy/invoices/export.py": EXPORT_PY,
    "/home/dev/legacy/legacy/invoices/cli.py": """import sys

from legacy.invoices.export import export_month


def main():
    year, month = int(sys.argv[1]), int(sys.argv[2])
    print(export_month(year, month, f"invoices-{year}-{month:02d}.csv"))
""",
    "/home/dev/legacy/legacy/reports/daily.py": """import datetime

from legacy.db import connect


def invoices_for_day(day):
    start = datetime.datetime(day.year, day.month, day.day)
    end = start + datetime.timedelta(days=1)
    with connect() as conn:
        cursor = conn.cursor()
        cursor.execute(
            "SELECT count(*) FROM invoices WHERE issued_at >= %s AND issued_at < %s", (start, end)
        )
        return cursor.fetchone()[0]
""",
}

ROUTES_PY = """from fastapi import APIRouter, Depends

from api.auth.v1 import require_token as require_token_v1
from api.auth.v2 import require_scopes
from api.handlers import invoices, orders, reports, users

router = APIRouter(prefix="/api")

ORDERS_READ = [Depends(require_scopes("orders:read"))]
V1 = [Depends(require_token_v1)]

router.add_api_route("/orders", orders.list_orders, dependencies=ORDERS_READ)
router.add_api_route("/orders/{order_id}", orders.get_order, dependencies=ORDERS_READ)
router.add_api_route("/invoices", invoices.list_invoices, dependencies=V1)
router.add_api_route("/invoices/{invoice_id}/pdf", invoices.invoice_pdf, dependencies=V1)
router.add_api_route("/reports/daily", reports.daily, dependencies=V1)
router.add_api_route("/users/me", users.me, dependencies=[Depends(require_scopes("profile"))])
"""


def route_line(path: str) -> int:
    """The line of api/routes.py that registers ``path``."""
    return (
        ROUTES_PY.split("\n").index(next(x for x in ROUTES_PY.split("\n") if f'"{path}"' in x)) + 1
    )


API_FILES = {
    "/home/dev/api/api/routes.py": ROUTES_PY,
    "/home/dev/api/api/auth/v1.py": '''\
"""Deprecated: static bearer tokens from the API_TOKENS setting."""

from fastapi import Header, HTTPException

from api.settings import settings


def require_token(authorization: str = Header(default="")) -> None:
    token = authorization.removeprefix("Bearer ")
    if token not in settings.api_tokens:
        raise HTTPException(status_code=401, detail="invalid token")
''',
    "/home/dev/api/api/handlers/webhooks.py": """from fastapi import Depends, Request

from api.auth.v1 import require_token


async def courier_webhook(request: Request, _: None = Depends(require_token)) -> dict:
    payload = await request.json()
    return {"received": payload.get("event_id")}
""",
}


def git_log_patch(rng: Random, culprit: str, day: datetime, packages: int) -> str:
    """``git log -p`` over the last two days: the discount change, the migration, a lock bump."""
    when = day - timedelta(days=1, hours=2)
    stamp = when.strftime("%a %b %d %H:%M:%S %Y +0000")
    out = [git_show(rng, culprit, "src/shop/pricing/discounts.py", day), ""]
    out.append(f"commit {rng.getrandbits(160):040x}")
    out.append("Author: Dan Okafor <dan@shop.example>")
    out.append(f"Date:   {stamp}")
    out.append("")
    out.append("    migrations: drop legacy indexes (0057)")
    out.append("")
    path = "migrations/versions/0057_drop_legacy_indexes.py"
    out.append(f"diff --git a/{path} b/{path}")
    out.append("new file mode 100644")
    out.append(f"index 0000000..{rng.getrandbits(28):07x}")
    out.append("--- /dev/null")
    out.append(f"+++ b/{path}")
    lines = MIGRATION_0057.split("\n")[:-1]
    out.append(f"@@ -0,0 +1,{len(lines)} @@")
    out.extend("+" + line for line in lines)
    out.append("")
    out.append(f"commit {rng.getrandbits(160):040x}")
    out.append("Author: Renovate Bot <bot@renovateapp.com>")
    out.append(f"Date:   {(when - timedelta(hours=7)).strftime('%a %b %d %H:%M:%S %Y +0000')}")
    out.append("")
    out.append("    deps: bump sqlalchemy to 2.0.36")
    out.append("")
    out.append("diff --git a/uv.lock b/uv.lock")
    out.append(f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644")
    out.append("--- a/uv.lock")
    out.append("+++ b/uv.lock")
    names = [
        "sqlalchemy",
        "greenlet",
        "typing-extensions",
        "alembic",
        "mako",
        "psycopg",
        "psycopg-binary",
    ]
    line_no = 900
    for index in range(packages):
        name = names[index % len(names)]
        old, new = f"2.0.{30 + index % 5}", f"2.0.{31 + index % 5}"
        line_no += rng.randint(30, 90)
        out.append(
            f'@@ -{line_no},9 +{line_no},9 @@ source = {{ registry = "https://pypi.org/simple" }}'
        )
        out.append(" [[package]]")
        out.append(f' name = "{name}"')
        out.append(f'-version = "{old}"')
        out.append(f'+version = "{new}"')
        for wheel in ("cp312-cp312-manylinux_2_17_x86_64", "cp312-cp312-macosx_11_0_arm64"):
            for sign, version in (("-", old), ("+", new)):
                digest = f"{rng.getrandbits(256):064x}"
                out.append(
                    f"{sign}    "
                    f'{{ url = "https://files.pythonhosted.org/packages/{digest[:2]}/{digest[2:4]}/'
                    f'{digest[4:]}/{name.replace("-", "_")}-{version}-{wheel}.whl", hash = '
                    f'"sha256:{digest}" }},'
                )
    return "\n".join(out)


def pg_stat_statements(rng: Random, rows: int) -> str:
    """The top statements by total time, as psql prints them (wide, unaligned columns)."""
    queries = [
        (DISCOUNT_QUERY, (100, 170), (90_000, 140_000)),
        (SEGMENT_QUERY, (95, 125), (80_000, 120_000)),
        (LINES_QUERY, (220, 460), (6_000, 9_000)),
        (
            "SELECT stock.sku, stock.available, stock.reserved FROM stock WHERE stock.sku = $1 FOR "
            "UPDATE",
            (0.4, 2.0),
            (90_000, 140_000),
        ),
        (
            "INSERT INTO order_lines (order_id, sku, quantity, unit_price_gbp, line_total_gbp, "
            "discount_gbp) VALUES ($1, $2, $3, $4, $5, $6) RETURNING order_lines.id",
            (0.2, 0.9),
            (80_000, 130_000),
        ),
        (
            "UPDATE orders SET status=$1, payment_reference=$2, tax_gbp=$3, total_gbp=$4 WHERE "
            "orders.id = $5",
            (0.3, 1.1),
            (6_000, 9_000),
        ),
        (
            "SELECT orders.id, orders.customer_id, orders.status, orders.total_gbp FROM orders "
            "WHERE orders.idempotency_key = $1",
            (0.1, 0.6),
            (6_000, 9_000),
        ),
        (
            "SELECT carts.id, carts.customer_id, carts.updated_at FROM carts WHERE "
            "carts.customer_id = $1",
            (0.1, 0.5),
            (20_000, 40_000),
        ),
    ]
    header = " queryid | calls | total_exec_time | mean_exec_time | rows | query"
    out = [
        header,
        "-" * 9 + "+" + "-" * 7 + "+" + "-" * 17 + "+" + "-" * 16 + "+" + "-" * 6 + "+" + "-" * 60,
    ]
    stats = []
    for index in range(rows):
        query, (low, high), (few, many) = queries[index % len(queries)]
        calls = rng.randint(few, many) // (1 + index // len(queries))
        mean = rng.uniform(low, high)
        stats.append((calls * mean, calls, mean, query))
    stats.sort(reverse=True)
    for total, calls, mean, query in stats:
        out.append(
            f" {rng.getrandbits(62) - 2**61:d} | {calls} | {total:.2f} | {mean:.4f} | "
            f"{calls * rng.randint(1, 3)} | {query}"
        )
    out.append(f"({rows} rows)")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# The scenario, one function per session
# ---------------------------------------------------------------------------------------------

SHOP_HOOKS = Hooks(
    session_start="$CLAUDE_PROJECT_DIR/.claude/hooks/load-context.sh",
    pre_bash="$CLAUDE_PROJECT_DIR/.claude/hooks/guard-prod-db.sh",
    post_tool="$CLAUDE_PROJECT_DIR/.claude/hooks/audit-tool.sh",
    stop="$CLAUDE_PROJECT_DIR/.claude/hooks/notify-done.sh",
)
SLUG_WORDS = (
    ["amber", "brisk", "gentle", "hollow", "lucid", "mellow", "nimble", "plucky", "rustic", "tidy"],
    ["baking", "drifting", "folding", "humming", "knitting", "mapping", "pacing", "sifting"],
    ["lantern", "harbor", "meadow", "pebble", "quarry", "saddle", "thimble", "beacon", "orchard"],
)
COMPACT_PROMPT = (
    "Summarise this conversation so that work can go on from the summary alone. Cover, in "
    "order: what the user asked for, in their words where it matters; what was found, with "
    "file paths, function names, commands and figures; what was decided and why; what is still "
    "open; and the next step the user expects. Quote exact code only where the next step needs "
    "it. Write the summary inside <summary></summary> tags."
)
COMPACT_PREAMBLE = (
    "This session continues an earlier conversation that was compacted to save context. "
    "The summary of the earlier part follows.\n\n"
)
COMPACT_CAVEAT = (
    "<local-command-caveat>The user ran the local commands below. Do not answer them or act on "
    "them unless the user asks about them.</local-command-caveat>"
)
COMPACT_COMMAND = (
    "<command-name>/compact</command-name>\n            "
    "<command-message>compact</command-message>\n"
    "            <command-args></command-args>"
)
COMPACT_STDOUT = (
    "<local-command-stdout>\u001b[2mConversation compacted; the summary now stands in for the "
    "earlier messages.\u001b[22m</local-command-stdout>"
)


@dataclass
class Copy:
    """One copy of the whole scenario: its RNG, ids, date shift and folder suffix."""

    k: int
    root: Path  # .../claude_code/projects
    ledger: Ledger

    def __post_init__(self) -> None:
        self.rng = Random(SEED + self.k)
        self.ids = Ids(self.rng)

    def at(self, moment: datetime) -> int:
        return epoch_ms(moment + timedelta(days=self.k))

    def day(self, moment: datetime) -> datetime:
        return moment + timedelta(days=self.k)

    def cwd(self, base: str) -> str:
        return base if self.k == 0 else f"{base}-{self.k}"

    def transcript(
        self, cwd: str, version: str, branch: str, start: datetime, *, hooks: Hooks | None
    ) -> Transcript:
        slug = (
            "-".join(self.rng.choice(words) for words in SLUG_WORDS)
            if version.startswith("2.1")
            else None
        )
        return Transcript(
            rng=self.rng,
            ids=self.ids,
            ledger=self.ledger,
            root=self.root,
            project=cwd.replace("/", "-"),
            cwd=cwd,
            version=version,
            branch=branch,
            session_id=self.ids.uuid(),
            start_ms=self.at(start),
            hooks=hooks,
            slug=slug,
        )


def text(body: str) -> dict[str, Any]:
    return {"type": "text", "text": body}


def run_subagent_21(
    t: Transcript, task: dict[str, Any], tool: Tool, script: Callable[[Chain, Thread], str]
) -> Callable[[int, str], int]:
    """A Task in 2.1: the subagent's own file, mirrored into the main file as agent_progress."""

    def run(start: int, line_uuid: str) -> int:
        agent_id = "a" + t.ids.hex(6)
        path = t.dir / t.session_id / "subagents" / f"agent-{agent_id}.jsonl"
        chain = Chain(t.sinks.get(path), sidechain=True, agent_id=agent_id)
        prompt = task["input"]["prompt"]
        tool_id, message_id = task["id"], t.message_id

        def mirror(line: dict[str, Any]) -> None:
            if line["type"] == "user":
                message = line["message"]
                if isinstance(message["content"], str):
                    message = {"role": "user", "content": [text(message["content"])]}
                shown = {
                    "type": "user",
                    "message": message,
                    "uuid": line["uuid"],
                    "timestamp": line["timestamp"],
                }
            else:
                shown = {
                    "type": "assistant",
                    "timestamp": line["timestamp"],
                    "message": {**line["message"], "context_management": None},
                    "requestId": line["requestId"],
                    "uuid": line["uuid"],
                }
            progress = t.head(t.main, t.main.last)
            progress.update(
                {
                    "type": "progress",
                    "data": {
                        "message": shown,
                        "normalizedMessages": [],
                        "type": "agent_progress",
                        "prompt": prompt,
                        "agentId": agent_id,
                    },
                    "toolUseID": f"agent_{message_id}",
                    "parentToolUseID": tool_id,
                    "uuid": t.ids.uuid(),
                    "timestamp": line["timestamp"],
                }
            )
            t.emit(t.main, progress)

        chain.mirror = mirror
        thread = Thread(f"agent-{agent_id}", "subagent", SYSTEM_TOKENS_SUBAGENT, "5m")
        t.now = start
        mirror(t.user_text(chain, prompt, start))
        thread.add_prompt(prompt)
        answer = script(chain, thread)  # returns the subagent's final answer
        last = t.ledger.calls[-1]
        end = t.now + t.rng.randint(20, 80)
        uses = sum(1 for line in chain.lines if '"type":"tool_result"' in line)
        total = last.input_tokens + last.cache_creation + last.cache_read + last.output_tokens_final
        usage = t._usage(
            Usage(last.window, last.input_tokens, last.cache_read, last.cache_creation),
            last.output_tokens_final,
            final=True,
            cache=thread.cache,
        )
        trailer = (
            f"agentId: {agent_id} (use this id to resume the agent later)\n"
            f"<usage>total_tokens: {total}\ntool_uses: {uses}\nduration_ms: {end - start}</usage>"
        )
        tool.content = [text(answer), text(trailer)]
        tool.result = {
            "status": "completed",
            "prompt": prompt,
            "agentId": agent_id,
            "content": [text(answer)],
            "totalDurationMs": end - start,
            "totalTokens": total,
            "totalToolUseCount": uses,
            "usage": usage,
        }
        return end

    return run


# Sizes of session A's bulkier results, chosen so the manual /compact comes at 60-70k tokens.
APP_LOG_LINES, OLD_LOG_LINES, SLOW_LOG_ENTRIES, LOCK_PACKAGES, PG_STAT_ROWS, PROFILE_ROWS = (
    185,
    135,
    48,
    19,
    72,
    185,
)


def session_a(copy: Copy) -> dict[str, Any]:
    """The debugging session: tools, a subagent, a retry, a parallel call, a manual /compact."""
    rng, ids = copy.rng, copy.ids
    cwd = copy.cwd("/home/dev/shop")
    files = rebase(SHOP_FILES, "/home/dev/shop", cwd)
    service, discounts, order_py = (
        f"{cwd}/src/shop/checkout/service.py",
        f"{cwd}/src/shop/pricing/discounts.py",
        f"{cwd}/src/shop/models/order.py",
    )
    today = copy.day(START_A)
    culprit = f"{rng.getrandbits(28):07x}"
    t = copy.transcript(cwd, "2.1.39", "main", START_A, hooks=SHOP_HOOKS)
    main = Thread("main", "agent", SYSTEM_TOKENS_MAIN, "1h")
    opus = MODEL_OPUS_46

    # Turn 1 -----------------------------------------------------------------------------------
    t.session_start("startup")
    t.prompt(
        main,
        "checkout got slow after yesterday's deploy: p95 went from about 400 ms to over 3 s. "
        "find why checkout is slow",
        typing_ms=(20_000, 40_000),
    )
    grep = t.tool_use(
        "Grep",
        {
            "pattern": "def checkout|apply_discounts|reserve_stock",
            "path": f"{cwd}/src",
            "output_mode": "content",
            "-n": True,
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "I'll start from the checkout entry point and follow what it does per order line."
            ),
            grep,
        ],
        {grep["id"]: grep_tool(files, grep["input"]["pattern"], f"{cwd}/src")},
    )
    t.slug_on = True
    read = t.tool_use("Read", {"file_path": service})
    t.respond(t.main, main, opus, [read], {read["id"]: read_tool(service, files[service])})

    tail = t.tool_use(
        "Bash",
        {
            "command": "tail -n 150 logs/app.log",
            "description": "Show the latest application log lines",
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "Checkout logs the time of each stage (build, reserve, price, pay, commit). "
                "This morning's log will say which stage got slow."
            ),
            tail,
        ],
        {tail["id"]: bash_tool(app_log(rng, today, APP_LOG_LINES), "2.1", 240)},
    )
    yesterday = t.tool_use(
        "Bash",
        {
            "command": f"zgrep 'checkout done' logs/app.log.1.gz | tail -n {OLD_LOG_LINES}",
            "description": "Show checkout timings from before the deploy",
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            text("Today price_ms is in the seconds. For comparison, yesterday before the deploy:"),
            yesterday,
        ],
        {
            yesterday["id"]: bash_tool(
                app_log(rng, today, OLD_LOG_LINES, before_deploy=True), "2.1", 420
            )
        },
    )

    explore_prompt = (
        "In the Python shop under src/shop, find database queries that run once per order line "
        "or once per cart item during checkout (N+1 patterns). Follow "
        "CheckoutService.checkout in src/shop/checkout/service.py into pricing, inventory and "
        "models. For each one give the file, the function, the query and whether it runs inside "
        "a loop over order.lines. Do not change any file."
    )
    task = t.tool_use(
        "Task",
        {
            "description": "Find per-line queries in checkout",
            "prompt": explore_prompt,
            "subagent_type": "Explore",
        },
    )
    task_tool = Tool(content="")

    def explore(chain: Chain, thread: Thread) -> str:
        haiku = MODEL_HAIKU_45
        g1 = t.tool_use(
            "Grep",
            {
                "pattern": r"session\.(scalars|get|execute|query)\(",
                "path": f"{cwd}/src/shop",
                "output_mode": "content",
                "-n": True,
            },
        )
        t.respond(
            chain,
            thread,
            haiku,
            [
                text(
                    "I'll list every query call under src/shop first, then check which ones sit "
                    "inside loops."
                ),
                g1,
            ],
            {g1["id"]: grep_tool(files, g1["input"]["pattern"], f"{cwd}/src/shop")},
            latency_ms=(700, 1_800),
        )
        r1 = t.tool_use("Read", {"file_path": discounts})
        t.respond(
            chain,
            thread,
            haiku,
            [r1],
            {r1["id"]: read_tool(discounts, files[discounts])},
            latency_ms=(600, 1_500),
        )
        r2 = t.tool_use("Read", {"file_path": f"{cwd}/src/shop/inventory/reservations.py"})
        path = f"{cwd}/src/shop/inventory/reservations.py"
        t.respond(
            chain,
            thread,
            haiku,
            [
                text(
                    "apply_discounts queries inside its loop. Checking the stock reservation too."
                ),
                r2,
            ],
            {r2["id"]: read_tool(path, files[path])},
            latency_ms=(600, 1_500),
        )
        answer = (
            "Found three places where checkout queries the database once per order line.\n\n"
            "1. src/shop/pricing/discounts.py, apply_discounts (loop over order.lines)\n"
            "   - _segment_for(session, order.customer_id): SELECT customers.segment ... WHERE "
            "customers.id = $1. Same customer every time; it runs once per line for no reason.\n"
            "   - _rules_for_line(session, line, segment): SELECT ... FROM discount_rules WHERE "
            "sku = $1 "
            "AND active AND (segment = $2 OR segment IS NULL) ORDER BY priority DESC. One query "
            "per line.\n"
            "   So an order with n lines costs 2n queries in pricing alone.\n\n"
            "2. src/shop/inventory/reservations.py, reserve_stock and release_stock (loop over "
            "order.lines)\n"
            "   - session.get(Stock, line.sku, with_for_update=True): one locked primary-key "
            "lookup per "
            "line. Cheap per query (primary key), but it is per line.\n\n"
            "3. src/shop/checkout/service.py, _order_for_key: one query per checkout, not per "
            "line; "
            "fine.\n\n"
            'Order.lines is loaded with lazy="selectin", so loading the lines is a single query '
            "per "
            "order (by order_id).\n\n"
            "The per-line queries in discounts.py are the likely regression: they replace what "
            "looks "
            "like a batched lookup (a dict of rules by SKU would be the usual shape). I did not "
            "check "
            "git history."
        )
        t.respond(chain, thread, haiku, [text(answer)], latency_ms=(3_000, 6_000))
        return answer

    task_tool.run = run_subagent_21(t, task, task_tool, explore)
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "price_ms grows with the number of lines (about 200 ms per line), while the other "
                "stages stay flat. I'll have an Explore agent look for per-line queries while I "
                "read "
                "the pricing code."
            ),
            task,
        ],
        {task["id"]: task_tool},
    )
    read = t.tool_use("Read", {"file_path": discounts})
    t.respond(
        t.main,
        main,
        opus,
        [text("The agent points at apply_discounts. Reading it myself:"), read],
        {read["id"]: read_tool(discounts, files[discounts])},
    )
    log = t.tool_use(
        "Bash",
        {
            "command": "git log -p --since='3 days ago' -- src/shop/pricing migrations uv.lock",
            "description": "Show recent changes to pricing, migrations and the lock file",
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [text("Two queries per line, inside the loop. Let me see when that came in."), log],
        {log["id"]: bash_tool(git_log_patch(rng, culprit, today, LOCK_PACKAGES), "2.1", 310)},
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            t.thinking(
                "The per-line lookups arrived with the segment change in "
                f"{culprit}. At ~100-170 ms per query (slow log will confirm), 2 queries per line "
                "explains ~200 ms per line in price_ms. Migration 0057 also dropped an order_lines "
                "index, which could slow the lines query, but the timings point at pricing first."
            ),
            text(
                "**Why checkout is slow**\n\n"
                f'Commit `{culprit}` ("pricing: customer-segment discount rules", deployed '
                "yesterday) rewrote `apply_discounts` in `src/shop/pricing/discounts.py`. Before, "
                "it loaded every rule for the order's SKUs in one query (`_rules_by_sku`). Now, "
                "for every order line, it runs two queries:\n\n"
                "- `_segment_for()`: the customer's segment (the same answer every time), and\n"
                "- `_rules_for_line()`: that line's rules.\n\n"
                "So pricing an order with n lines costs 2n round trips. The log shows it: "
                "`price_ms` is about 200 ms per line while build, reserve, pay and commit stay "
                "flat, and a 12-line checkout spends 2.5-3 s in pricing.\n\n"
                "A second, smaller suspect: migration 0057 (same deploy) dropped "
                "`ix_order_lines_order_id_sku`. Loading an order's lines filters on `order_id`, so "
                "that query may now scan the table.\n\n"
                "Fix: look the segment up once, and load the rules for all SKUs in one query with "
                "the segment filter. I can do that, and check the index question against the "
                "slow-query log, if you want."
            ),
        ],
    )
    t.stop()

    # Turn 2 -----------------------------------------------------------------------------------
    t.prompt(
        main,
        "makes sense. before changing anything, confirm it with the postgres slow query log, and "
        "check whether order_lines still has an index on order_id",
        typing_ms=(90_000, 200_000),
    )
    slow = t.tool_use(
        "Bash",
        {
            "command": "grep -A1 'duration:' /var/log/postgresql/postgresql-16-main.log | tail -n "
            "80",
            "description": "Show the latest slow statements",
        },
    )
    slow_tool = bash_tool(slow_query_log(rng, today, SLOW_LOG_ENTRIES), "2.1", 2_600)
    queued = (
        "the staging db is a copy of prod from last night, you can query it with $STAGING_DB_URL"
    )

    def while_grep_runs(start: int, line_uuid: str) -> int:
        t.queue("enqueue", start + 1_200, queued)  # typed while the agent was busy
        return start + slow_tool.duration_ms

    slow_tool.run = while_grep_runs
    t.respond(
        t.main,
        main,
        opus,
        [text("Checking the slow statements first."), slow],
        {slow["id"]: slow_tool},
    )
    # The queued text rides along with the next request; 2.1 writes no user line for it.
    first_try = t.tick(15, 40)
    t.queue("remove", first_try + 2)
    main.add_user_text(queued)
    failed_at = first_try + rng.randint(1_200, 2_400)
    delay = t.api_error(failed_at)
    retry_at = failed_at + int(delay) + rng.randint(5, 40)
    read = t.tool_use("Read", {"file_path": order_py})
    mig = t.tool_use(
        "Grep",
        {
            "pattern": "order_lines",
            "path": f"{cwd}/migrations",
            "output_mode": "content",
            "-n": True,
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "The slow log is dominated by the discount_rules lookup and the customers.segment "
                "lookup, one pair per line, each 100-170 ms. The order_lines query is rarer but "
                "takes 220-480 ms. Checking the model and the migrations for that index:"
            ),
            read,
            mig,
        ],
        {
            read["id"]: read_tool(order_py, files[order_py]),
            mig["id"]: grep_tool(files, "order_lines", f"{cwd}/migrations"),
        },
        request_at=retry_at,
    )
    psql = t.tool_use(
        "Bash",
        {
            "command": (
                'psql "$STAGING_DB_URL" -c \'\\d order_lines\' -c "EXPLAIN (ANALYZE, BUFFERS) '
                "SELECT * "
                'FROM order_lines WHERE order_id = \'o-5f1c0a9e2b\'" && psql "$STAGING_DB_URL" -c '
                '"SELECT queryid, calls, total_exec_time, mean_exec_time, rows, query FROM '
                'pg_stat_statements ORDER BY total_exec_time DESC LIMIT 72"'
            ),
            "description": "Inspect order_lines and the top statements on staging",
        },
    )
    report = psql_report(rng, "o-5f1c0a9e2b") + "\n" + pg_stat_statements(rng, PG_STAT_ROWS)
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "Migration 0057 dropped it. Confirming on the staging copy, with the statement "
                "totals:"
            ),
            psql,
        ],
        {psql["id"]: bash_tool(report, "2.1", 1_900)},
    )
    profile = t.tool_use(
        "Bash",
        {
            "command": "uv run python scripts/profile_checkout.py --lines 12 --repeat 20 --sort "
            "cumulative",
            "description": "Profile twelve-line checkouts against staging",
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [text("And where the time goes inside one checkout, with the profiler:"), profile],
        {
            profile["id"]: bash_tool(
                profile_output(rng, PROFILE_ROWS, f"{cwd}/.venv"), "2.1", 63_000
            )
        },
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            t.thinking(
                "pg_stat_statements ranks the discount_rules and customers.segment queries first "
                "by total time; the lines query is third with a parallel seq scan. Both findings "
                "hold; the N+1 is the bigger one."
            ),
            text(
                "Confirmed, on both counts.\n\n"
                "1. **Per-line discount queries (main cause).** In pg_stat_statements the "
                "`discount_rules` lookup and the `customers.segment` lookup are the top two "
                "statements by total time, with call counts about 6x the number of checkouts. "
                "Each costs 100-170 ms on its own, and they run once per order line.\n"
                "2. **Missing index (secondary).** `\\d order_lines` shows only the primary key. "
                "Migration `0057_drop_legacy_indexes.py` dropped `ix_order_lines_order_id_sku` "
                "together with two indexes that really were unused. `EXPLAIN ANALYZE` of the lines "
                "query is a parallel sequential scan over about 1.8M rows, 300-420 ms per "
                "order.\n\n"
                "Proposed fix:\n"
                "- `apply_discounts`: one segment lookup and one rules query per order "
                "(`sku IN (...)`), keeping the segment filter and the priority order.\n"
                "- New migration `0061` that recreates `ix_order_lines_order_id_sku` "
                "(`CREATE INDEX CONCURRENTLY`, so no table lock).\n"
                "- Run `tests/checkout`.\n\n"
                "Shall I go ahead?"
            ),
        ],
    )
    t.stop()

    # /compact ---------------------------------------------------------------------------------
    summary = (
        "<summary>\n"
        "1. Request: checkout p95 rose from ~400 ms to over 3 s after yesterday's deploy; the user "
        "asked why, then asked for confirmation from the Postgres slow-query log and for a check "
        "of "
        "the order_lines index on order_id before any change.\n\n"
        "2. Findings:\n"
        f'- Commit {culprit} ("pricing: customer-segment discount rules") rewrote '
        "apply_discounts in src/shop/pricing/discounts.py. For every order line it now calls "
        "_segment_for() (SELECT customers.segment WHERE id = $1) and _rules_for_line() (SELECT "
        "discount_rules WHERE sku = $1 AND active AND (segment = $2 OR segment IS NULL) ORDER BY "
        "priority DESC). Before, _rules_by_sku() loaded all rules for the order's SKUs in one "
        "query.\n"
        "- logs/app.log: price_ms is about 200 ms per line; build, reserve, pay and commit are "
        "flat.\n"
        "- Slow log and pg_stat_statements on staging: the discount_rules and segment lookups are "
        "the top two statements by total time (100-170 ms each).\n"
        "- Migration migrations/versions/0057_drop_legacy_indexes.py dropped "
        "ix_order_lines_order_id_sku; \\d order_lines shows only order_lines_pkey, and EXPLAIN "
        "ANALYZE of SELECT ... WHERE order_id = ... is a parallel seq scan over ~1.8M rows "
        "(300-420 ms).\n"
        "- reserve_stock/release_stock in src/shop/inventory/reservations.py also query per line, "
        "but by primary key; not part of the regression.\n\n"
        "3. Plan the user has not yet approved: one segment lookup and one rules query per order "
        "in "
        "apply_discounts (keep the segment filter and priority order); a migration 0061 recreating "
        "ix_order_lines_order_id_sku with CREATE INDEX CONCURRENTLY; run tests/checkout.\n\n"
        "4. Next step: wait for the user's go-ahead, then make the change.\n"
        "</summary>"
    )
    compaction = compact_manually(t, main, opus, summary)

    # Turn 3 -----------------------------------------------------------------------------------
    t.prompt(
        main,
        "go ahead: fix the N+1 in apply_discounts and add the migration for the index. run the "
        "checkout tests after",
        typing_ms=(40_000, 90_000),
    )
    read = t.tool_use("Read", {"file_path": discounts})
    t.respond(
        t.main,
        main,
        opus,
        [
            t.thinking(
                "Keep _line_discount as it is. Replace _rules_for_line and the loop: fetch the "
                "segment "
                "once, then all rules for the order's SKUs with the same segment filter and "
                "priority "
                "order, grouped by SKU."
            ),
            text("Reading the current file before editing it."),
            read,
        ],
        {read["id"]: read_tool(discounts, files[discounts])},
    )
    edit = t.tool_use(
        "Edit",
        {
            "file_path": discounts,
            "old_string": DISCOUNTS_FIX_OLD,
            "new_string": DISCOUNTS_FIX_NEW,
            "replace_all": False,
        },
    )
    migration = f"{cwd}/migrations/versions/0061_restore_order_lines_index.py"
    write = t.tool_use("Write", {"file_path": migration, "content": MIGRATION_0061})
    edit_result = edit_tool(
        discounts, files[discounts], DISCOUNTS_FIX_OLD, DISCOUNTS_FIX_NEW, "2.1"
    )
    write_result = write_tool(migration, MIGRATION_0061)

    def snapshotting(tool: Tool, path: str) -> Callable[[int, str], int]:
        def run(start: int, line_uuid: str) -> int:
            t.snapshot_update(line_uuid, path.removeprefix(cwd + "/"), start + 8)
            return start + tool.duration_ms

        return run

    edit_result.run = snapshotting(edit_result, discounts)
    write_result.run = snapshotting(write_result, migration)
    t.respond(
        t.main,
        main,
        opus,
        [text("Making both changes: the batched lookup, and the index migration."), edit, write],
        {edit["id"]: edit_result, write["id"]: write_result},
        parallel="batched",
    )
    tests = t.tool_use(
        "Bash",
        {"command": "uv run pytest tests/checkout -q", "description": "Run the checkout tests"},
    )
    output = pytest_output(rng)
    tests_tool = bash_tool(output, "2.1", 5_200)

    def with_progress(start: int, line_uuid: str) -> int:
        shown = output.split("\n")
        for index, seconds in enumerate((3, 4)):
            partial = "\n".join(shown[: 6 + index])
            line = t.head(t.main, t.main.last)
            line.update(
                {
                    "type": "progress",
                    "data": {
                        "type": "bash_progress",
                        "output": partial,
                        "fullOutput": partial,
                        "elapsedTimeSeconds": seconds,
                        "totalLines": 6 + index,
                        "timeoutMs": 120000,
                    },
                    "toolUseID": f"bash-progress-{index}",
                    "parentToolUseID": tests["id"],
                    "uuid": ids.uuid(),
                    "timestamp": iso(start + seconds * 1000 + rng.randint(0, 40)),
                }
            )
            t.emit(t.main, line)
        return start + tests_tool.duration_ms

    tests_tool.run = with_progress
    t.respond(
        t.main, main, opus, [text("Running the checkout tests."), tests], {tests["id"]: tests_tool}
    )
    t.respond(
        t.main,
        main,
        opus,
        [
            text(
                "Done.\n\n"
                "- `src/shop/pricing/discounts.py`: `apply_discounts` now looks the segment up "
                "once and "
                "loads all rules for the order's SKUs in one query (`_rules_by_sku`, same segment "
                "filter and priority order). Pricing costs two queries per order instead of two "
                "per "
                "line.\n"
                "- `migrations/versions/0061_restore_order_lines_index.py`: recreates "
                "`ix_order_lines_order_id_sku` with `CREATE INDEX CONCURRENTLY` (outside a "
                "transaction, so it does not lock the table).\n"
                "- `tests/checkout`: all passing.\n\n"
                "After deploying, `price_ms` in logs/app.log should drop to a few milliseconds, "
                "and "
                "the lines query should use the index again (`EXPLAIN` on staging after running "
                "the "
                "migration will show an Index Scan)."
            )
        ],
    )
    t.stop()
    written = t.write()
    return {"bytes": written, "compaction": compaction}


def compact_manually(t: Transcript, main: Thread, model: str, summary: str) -> dict[str, Any]:
    """``/compact`` in 2.1: the summary call in its own file, then boundary and summary lines."""
    pre_tokens = main.last_window
    logical_parent = t.main.last
    typed_at = t.tick(25_000, 70_000)
    agent_id = "acompact-" + t.ids.hex(6)
    chain = Chain(
        t.sinks.get(t.dir / t.session_id / "subagents" / f"agent-{agent_id}.jsonl"),
        sidechain=True,
        agent_id=agent_id,
        last=logical_parent,
    )
    worker = main.fork(agent_id, "compaction")
    t.now = typed_at + t.rng.randint(300, 700)
    t.user_text(chain, COMPACT_PROMPT, t.now)
    worker.add_prompt(COMPACT_PROMPT)
    record = t.respond(
        chain,
        worker,
        model,
        [text(summary)],
        final_line=False,
        latency_ms=(40_000, 80_000),
        request_at=t.now + 5,
    )
    done = t.now + t.rng.randint(250, 600)
    summary_uuid, command_uuid = t.ids.uuid(), t.ids.uuid()
    t.snapshot(summary_uuid, done + 11)
    t.snapshot(command_uuid, done + 12)
    boundary = t.head(t.main, None)
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": logical_parent,
        **{k: v for k, v in boundary.items() if k != "parentUuid"},
    }
    boundary.update(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": iso(done),
            "uuid": t.ids.uuid(),
            "level": "info",
            "compactMetadata": {"trigger": "manual", "preTokens": pre_tokens},
        }
    )
    t.emit(t.main, boundary)
    carried = COMPACT_PREAMBLE + summary
    line = t.head(t.main, t.main.last)
    line.update({"type": "user", "message": {"role": "user", "content": carried}})
    line.update({"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
    line.update({"uuid": summary_uuid, "timestamp": iso(done)})
    t.emit(t.main, line)
    t.user_text(t.main, COMPACT_CAVEAT, typed_at, meta=True)
    line = t.head(t.main, t.main.last)
    line.update({"type": "user", "message": {"role": "user", "content": COMPACT_COMMAND}})
    line.update({"uuid": command_uuid, "timestamp": iso(typed_at)})
    t.emit(t.main, line)
    t.user_text(t.main, COMPACT_STDOUT, done + 100)
    t.now = done - 80
    t.session_start("compact")
    t.now = done + 100
    main.compact(carried)
    for carried_text in (COMPACT_CAVEAT, COMPACT_COMMAND, COMPACT_STDOUT):
        main.add_user_text(carried_text)
    return {
        "project": t.project,
        "session_id": t.session_id,
        "trigger": "manual",
        "pre_tokens": pre_tokens,
        "summary_message_id": record.message_id,
        "window_after_compaction": main.window(),
    }


def session_b(copy: Copy) -> dict[str, Any]:
    """The founding incident: fat MCP results fill the window until a request is refused."""
    rng = copy.rng
    cwd = copy.cwd("/home/dev/shop")
    today = copy.day(START_B)
    t = copy.transcript(cwd, "2.1.39", "main", START_B, hooks=SHOP_HOOKS)
    main = Thread("main", "agent", SYSTEM_TOKENS_MAIN, "1h")
    sonnet = MODEL_SONNET_45

    t.session_start("startup")
    t.prompt(main, "what happened to my last orders?", typing_ms=(6_000, 15_000))
    orders = order_rows(rng, ORDER_ROWS, today)
    history = t.tool_use("mcp__store__get_order_history", {"customer_id": "c-1001", "limit": 200})
    history_text = json.dumps(
        {"customer_id": "c-1001", "orders": orders, "total": len(orders)}, ensure_ascii=False
    )
    before = t.respond(
        t.main,
        main,
        sonnet,
        [text("I'll look up your recent orders in the store."), history],
        {history["id"]: mcp_tool(history_text, 2_300)},
    )
    t.slug_on = True
    returns = return_rows(rng, orders, RETURN_ROWS, today)
    returned = t.tool_use("mcp__store__get_return_history", {"customer_id": "c-1001", "limit": 100})
    returns_text = json.dumps(
        {"customer_id": "c-1001", "returns": returns, "total": len(returns)}, ensure_ascii=False
    )
    after = t.respond(
        t.main,
        main,
        sonnet,
        [
            text(
                "You have 120 orders on file. Several were returned or refunded and a few show "
                "problems in transit, so I'll check the returns as well."
            ),
            returned,
        ],
        {returned["id"]: mcp_tool(returns_text, 1_100)},
    )
    lost = [order for order in orders if order["status"] == "lost_in_transit"]
    shipments = t.tool_use(
        "mcp__store__get_shipment_events", {"customer_id": "c-1001", "days": 120}
    )
    lead_in = text(
        f"{len(lost)} of the orders are marked lost in transit. The tracking events will show "
        "where they stopped."
    )
    # The answer and the follow-up are drawn first, so the third result can be sized to make
    # the follow-up's request go over the limit by a drawn margin while the answer's stays under.
    answer = (
        f"Here is what happened to your recent orders (120 on file, newest first).\n\n"
        f"- **Lost in transit ({len(lost)}):** "
        + ", ".join(f"`{order['order_id']}`" for order in lost[:6])
        + ". Tracking stops at a courier depot for each of them, with no delivery scan after. The "
        "courier has opened investigations on some; none has been refunded yet.\n"
        "- **Returned or refunded "
        f"({sum(order['status'] in ('returned', 'refunded') for order in orders)}):** "
        "the returns history shows 40 return requests; most are refunded to the original payment, "
        "a "
        "few are still awaiting inspection.\n"
        f"- **In transit ({sum(order['status'] == 'in_transit' for order in orders)}):** moving "
        "normally, last scan within the past two days.\n"
        "- Everything else was delivered.\n\n"
        "If you tell me which order you are worried about, I can look at its notes and tracking in "
        "detail."
    )
    thinking = t.thinking(
        "Group by status; the lost ones matter most. Returns mostly refunded. Keep it short and "
        "offer to go into one order."
    )
    email = COURIER_EMAIL.format(
        depot=rng.choice(DEPOTS),
        date1=(today - timedelta(days=9)).strftime("%d %B"),
        date2=(today - timedelta(days=8)).strftime("%d %B"),
        claim=f"LC-{rng.randint(100_000, 999_999)}",
    )
    followup = (
        "the courier just emailed me about the two parcels that never arrived, does this match "
        f"what you found? what should I tell the customer?\n\n{email}"
    )
    window_with_lead = (
        main.window()
        + tokens_of_length(block_chars(lead_in))
        + tokens_of_length(block_chars(shipments))
    )
    refused = CONTEXT_LIMIT + rng.randint(*SESSION_B_OVERSHOOT)
    result_tokens = refused - tokens(answer) - tokens(followup) - window_with_lead
    events = shipment_rows(rng, orders, (18 * result_tokens) // 5, today)
    events_text = json.dumps(
        {"customer_id": "c-1001", "shipments": events, "total": len(events)}, ensure_ascii=False
    )
    assert tokens(events_text) == result_tokens, (tokens(events_text), result_tokens)
    third = t.respond(
        t.main, main, sonnet, [lead_in, shipments], {shipments["id"]: mcp_tool(events_text, 1_700)}
    )
    answered = t.respond(t.main, main, sonnet, [thinking, text(answer)], latency_ms=(5_000, 9_000))
    assert answered.window < CONTEXT_LIMIT, answered.window
    t.stop()
    t.prompt(main, followup, typing_ms=(120_000, 300_000))
    window = main.window()
    assert window == refused, (window, refused)
    t.api_rejection(main, window, t.tick(900, 1_600))
    written = t.write()
    results = [
        (history, before.window, after.window, tokens(history_text)),
        (returned, after.window, third.window, tokens(returns_text)),
        (shipments, third.window, answered.window, tokens(events_text)),
    ]
    block, window_before, window_after, result = max(results, key=lambda item: item[2] - item[1])
    return {
        "bytes": written,
        "incident": {
            "project": t.project,
            "session_id": t.session_id,
            "largest_growth": {
                "tool_use_id": block["id"],
                "tool_name": block["name"],
                "window_before": window_before,
                "window_after": window_after,
                "growth": window_after - window_before,
                "result_tokens": result,
            },
            "tool_results": [
                {
                    "tool_use_id": b["id"],
                    "tool_name": b["name"],
                    "result_tokens": r,
                    "window_before": wb,
                    "window_after": wa,
                }
                for b, wb, wa, r in results
            ],
            "context_failure": {"window": window, "limit": CONTEXT_LIMIT},
        },
    }


def session_c(copy: Copy) -> dict[str, Any]:
    """A short haiku session that starts before midnight and ends after it."""
    cwd = copy.cwd("/home/dev/shop")
    path = f"{cwd}/scripts/seed_catalog.py"
    t = copy.transcript(cwd, "2.1.39", "main", START_C, hooks=SHOP_HOOKS)
    main = Thread("main", "agent", SYSTEM_TOKENS_MAIN, "1h")
    haiku = MODEL_HAIKU_45
    t.session_start("startup")
    t.prompt(
        main, "add a --dry-run flag to scripts/seed_catalog.py that prints what it would insert"
    )
    read = t.tool_use("Read", {"file_path": path})
    t.respond(
        t.main,
        main,
        haiku,
        [text("I'll read the script first."), read],
        {read["id"]: read_tool(path, SEED_CATALOG_PY)},
    )
    t.slug_on = True
    edit = t.tool_use(
        "Edit",
        {
            "file_path": path,
            "old_string": SEED_EDIT_OLD,
            "new_string": SEED_EDIT_NEW,
            "replace_all": False,
        },
    )
    edit_result = edit_tool(path, SEED_CATALOG_PY, SEED_EDIT_OLD, SEED_EDIT_NEW, "2.1")

    def snapshot(start: int, line_uuid: str) -> int:
        t.snapshot_update(line_uuid, "scripts/seed_catalog.py", start + 6)
        return start + edit_result.duration_ms

    edit_result.run = snapshot
    t.respond(t.main, main, haiku, [edit], {edit["id"]: edit_result}, latency_ms=(900, 2_000))
    run = t.tool_use(
        "Bash",
        {
            "command": "uv run python scripts/seed_catalog.py --dry-run --limit 3",
            "description": "Try the dry run",
        },
    )
    out = (
        "would insert SKU-10021 'Enamel camping mug, 350 ml' at 12.50 GBP\n"
        "would insert SKU-10022 'Merino hiking socks (pair)' at 16.00 GBP\n"
        "would insert SKU-10023 'Cast-iron skillet, 26 cm' at 39.95 GBP\n"
        "dry run: 3 products, nothing written"
    )
    t.respond(
        t.main,
        main,
        haiku,
        [text("Trying it on three rows:"), run],
        {run["id"]: bash_tool(out, "2.1", 1_400)},
    )
    t.respond(
        t.main,
        main,
        haiku,
        [
            text(
                "Added `--dry-run` to `scripts/seed_catalog.py`. With it, the script prints one "
                "`would insert ...` line per row and a count, and writes nothing. It combines with "
                "`--limit`."
            )
        ],
    )
    t.stop()
    t.prompt(
        main, "does the dry run still open a database connection?", typing_ms=(600_000, 780_000)
    )
    t.respond(
        t.main,
        main,
        haiku,
        [
            text(
                "No. The dry-run branch returns before `session_scope()` is entered, so no "
                "connection "
                "is opened; it only reads data/catalog.csv."
            )
        ],
    )
    t.stop()
    return {"bytes": t.write()}


def session_legacy(copy: Copy) -> dict[str, Any]:
    """Claude Code 1.0.98: a summary line, and the subagent written inline as sidechain lines."""
    cwd = copy.cwd("/home/dev/legacy")
    files = rebase(LEGACY_FILES, "/home/dev/legacy", cwd)
    export = f"{cwd}/legacy/invoices/export.py"
    t = copy.transcript(cwd, "1.0.98", "master", START_LEGACY, hooks=None)
    main = Thread("main", "agent", SYSTEM_TOKENS_MAIN, "5m")
    sonnet = MODEL_SONNET_4
    t.prompt(
        main, "the monthly invoice export drops the last day of the month. can you find out why?"
    )
    prompt = (
        "In this repository, find the code that exports monthly invoices and the date range it "
        "queries. Report the function that computes the range, how the end of the month is "
        "computed, and whether the comparison with issued_at can miss invoices issued on the last "
        "day of the month. Read only; do not edit."
    )
    task = t.tool_use(
        "Task",
        {
            "subagent_type": "general-purpose",
            "description": "Trace the invoice date range",
            "prompt": prompt,
        },
    )
    task_tool = Tool(content="")

    def run(start: int, line_uuid: str) -> int:
        chain = Chain(t.main.lines, sidechain=True)  # 1.0 writes the subagent into the same file
        thread = Thread("sidechain-" + task["id"][-6:], "subagent", SYSTEM_TOKENS_SUBAGENT, "5m")
        t.now = start
        t.user_text(chain, prompt, start)
        thread.add_prompt(prompt)
        grep = t.tool_use(
            "Grep", {"pattern": "issued_at", "path": cwd, "output_mode": "content", "-n": True}
        )
        t.respond(
            chain,
            thread,
            sonnet,
            [text("I'll find where invoices are filtered by issued_at."), grep],
            {grep["id"]: grep_tool(files, "issued_at", cwd)},
            same_output_on_all_lines=True,
        )
        read = t.tool_use("Read", {"file_path": export})
        t.respond(
            chain,
            thread,
            sonnet,
            [read],
            {read["id"]: read_tool(export, files[export])},
            same_output_on_all_lines=True,
        )
        answer = (
            "The export is legacy/invoices/export.py, export_month(year, month, out_path).\n\n"
            "month_bounds(year, month) returns (start, last) where start is the first day of the "
            "month at 00:00 and last is the LAST day of the month at 00:00 (first day of the next "
            "month minus one day). export_month passes them as %(start)s and %(end)s to\n"
            "    WHERE issued_at >= %(start)s AND issued_at < %(end)s\n\n"
            "So the upper bound is midnight at the start of the last day, and the condition is "
            "strict: every invoice issued on the last day of the month (00:00 onwards) is left "
            "out. "
            "December has the same problem (end = 31 Dec 00:00).\n\n"
            "legacy/reports/daily.py uses the right pattern (start of day, start of next day, "
            "half-open), which is why the daily counts look complete."
        )
        t.respond(chain, thread, sonnet, [text(answer)], same_output_on_all_lines=True)
        end = t.now + t.rng.randint(30, 90)
        last = t.ledger.calls[-1]
        total = last.input_tokens + last.cache_creation + last.cache_read + last.output_tokens_final
        usage = t._usage(
            Usage(last.window, last.input_tokens, last.cache_read, last.cache_creation),
            last.output_tokens_final,
            final=True,
            cache="5m",
        )
        task_tool.content = [text(answer)]
        task_tool.result = {
            "content": [text(answer)],
            "totalDurationMs": end - start,
            "totalTokens": total,
            "totalToolUseCount": 2,
            "usage": usage,
        }
        return end

    task_tool.run = run
    t.respond(
        t.main,
        main,
        sonnet,
        [text("I'll have an agent trace where the export's date range comes from."), task],
        {task["id"]: task_tool},
    )
    read = t.tool_use("Read", {"file_path": export})
    t.respond(
        t.main,
        main,
        sonnet,
        [text("The agent found an off-by-one-day upper bound. Let me look at the function:"), read],
        {read["id"]: read_tool(export, files[export])},
    )
    edit = t.tool_use(
        "Edit", {"file_path": export, "old_string": EXPORT_OLD, "new_string": EXPORT_NEW}
    )
    edit_result = edit_tool(export, files[export], EXPORT_OLD, EXPORT_NEW, "1.0")
    edit_result.duration_ms = t.rng.randint(
        365_000, 420_000
    )  # the user took six minutes to approve
    t.respond(
        t.main,
        main,
        sonnet,
        [
            text(
                "Fixing the bound so the range is half-open: the first instant of the next month."
            ),
            edit,
        ],
        {edit["id"]: edit_result},
    )
    t.respond(
        t.main,
        main,
        sonnet,
        [
            text(
                "Fixed. `month_bounds` now returns the first instant of the month and the first "
                "instant of the next month, and `export_month` keeps its half-open "
                "`issued_at >= start AND issued_at < end`, so invoices from the whole last day are "
                "exported, December included. The earlier exports each missed their month's last "
                "day; re-run them for the affected months if finance needs complete files."
            )
        ],
    )
    leaf = json.loads(t.main.lines[-1])["uuid"]  # 1.0 names the conversation's last line
    t.main.lines.insert(
        0,
        dumps(
            {
                "type": "summary",
                "summary": "Invoice export misses the month's last day",
                "leafUuid": leaf,
            }
        ),
    )
    return {"bytes": t.write()}


def session_api(copy: Copy) -> dict[str, Any]:
    """Claude Code 2.0.28: the subagent in a top-level agent-<8 hex>.jsonl file."""
    cwd = copy.cwd("/home/dev/api")
    files = rebase(API_FILES, "/home/dev/api", cwd)
    routes, webhooks = f"{cwd}/api/routes.py", f"{cwd}/api/handlers/webhooks.py"
    t = copy.transcript(cwd, "2.0.28", "main", START_API, hooks=None)
    main = Thread("main", "agent", SYSTEM_TOKENS_MAIN, "5m")
    sonnet, haiku = MODEL_SONNET_45, MODEL_HAIKU_45
    t.prompt(
        main, "which endpoints still use the v1 auth dependency? I want to remove api/auth/v1.py"
    )
    prompt = (
        "Find every use of the v1 auth dependency (api/auth/v1.py, require_token) in this FastAPI "
        "service: route registrations and handler signatures. List each endpoint path with the "
        "file "
        "and line. Read only."
    )
    task = t.tool_use(
        "Task", {"description": "Find v1 auth usage", "prompt": prompt, "subagent_type": "Explore"}
    )
    task_tool = Tool(content="")

    def run(start: int, line_uuid: str) -> int:
        agent_id = t.ids.hex(8)
        chain = Chain(
            t.sinks.get(t.dir / f"agent-{agent_id}.jsonl"), sidechain=True, agent_id=agent_id
        )
        thread = Thread(f"agent-{agent_id}", "subagent", SYSTEM_TOKENS_SUBAGENT, "5m")
        t.now = start
        t.user_text(chain, prompt, start)
        thread.add_prompt(prompt)
        grep = t.tool_use(
            "Grep",
            {
                "pattern": r"auth\.v1|require_token_v1",
                "path": cwd,
                "output_mode": "content",
                "-n": True,
            },
        )
        t.respond(
            chain,
            thread,
            haiku,
            [text("Searching for imports and uses of the v1 dependency."), grep],
            {grep["id"]: grep_tool(files, grep["input"]["pattern"], cwd)},
            latency_ms=(700, 1_600),
        )
        read = t.tool_use("Read", {"file_path": routes})
        t.respond(
            chain,
            thread,
            haiku,
            [read],
            {read["id"]: read_tool(routes, files[routes])},
            latency_ms=(600, 1_400),
        )
        answer = (
            "v1 auth (api.auth.v1.require_token) is used in two files.\n\n"
            "api/routes.py, imported as require_token_v1:\n"
            f"- line {route_line('/invoices')}: GET /api/invoices\n"
            f"- line {route_line('/invoices/{invoice_id}/pdf')}: "
            "GET /api/invoices/{invoice_id}/pdf\n"
            f"- line {route_line('/reports/daily')}: GET /api/reports/daily\n\n"
            "api/handlers/webhooks.py imports require_token directly (line 3) and uses it in the "
            "courier_webhook signature; that handler is not registered in api/routes.py, so it is "
            "mounted somewhere else or not at all.\n\n"
            "All other routes use api.auth.v2.require_scopes."
        )
        t.respond(chain, thread, haiku, [text(answer)], latency_ms=(2_000, 4_000))
        end = t.now + t.rng.randint(30, 90)
        last = t.ledger.calls[-1]
        total = last.input_tokens + last.cache_creation + last.cache_read + last.output_tokens_final
        usage = t._usage(
            Usage(last.window, last.input_tokens, last.cache_read, last.cache_creation),
            last.output_tokens_final,
            final=True,
            cache="5m",
        )
        task_tool.content = [text(answer)]
        task_tool.result = {
            "status": "completed",
            "prompt": prompt,
            "agentId": agent_id,
            "content": [text(answer)],
            "totalDurationMs": end - start,
            "totalTokens": total,
            "totalToolUseCount": 2,
            "usage": usage,
        }
        return end

    task_tool.run = run
    t.respond(
        t.main,
        main,
        sonnet,
        [text("I'll have an Explore agent map the v1 auth usage."), task],
        {task["id"]: task_tool},
    )
    read = t.tool_use("Read", {"file_path": webhooks})
    t.respond(
        t.main,
        main,
        sonnet,
        [text("Checking the webhook handler the agent flagged:"), read],
        {read["id"]: read_tool(webhooks, files[webhooks])},
    )
    t.respond(
        t.main,
        main,
        sonnet,
        [
            text(
                "Four places still depend on v1 auth:\n\n"
                "| endpoint | where |\n|---|---|\n"
                f"| GET /api/invoices | api/routes.py:{route_line('/invoices')} |\n"
                "| GET /api/invoices/{invoice_id}/pdf | "
                f"api/routes.py:{route_line('/invoices/{invoice_id}/pdf')} |\n"
                f"| GET /api/reports/daily | api/routes.py:{route_line('/reports/daily')} |\n"
                "| courier webhook | api/handlers/webhooks.py:6 (not registered in routes.py) |\n\n"
                "Before deleting api/auth/v1.py, move the three routes to `require_scopes(...)` "
                "with the right scopes, and find out where the courier webhook is mounted: "
                "couriers "
                "call it with a static token, so it may need its own scheme (an HMAC signature) "
                "rather than user scopes."
            )
        ],
    )
    return {"bytes": t.write()}


# ---------------------------------------------------------------------------------------------
# expected.json and the command line
# ---------------------------------------------------------------------------------------------

SUMS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _zero() -> dict[str, int]:
    return {
        "calls": 0,
        "failed_calls": 0,
        "api_errors": 0,
        **dict.fromkeys(SUMS, 0),
        "output_tokens_final": 0,
    }


def _add(totals: dict[str, int], call: CallRecord) -> None:
    totals["calls"] += 1
    totals["failed_calls"] += int(call.failed)
    totals["input_tokens"] += call.input_tokens
    totals["output_tokens"] += call.output_tokens
    totals["cache_creation_input_tokens"] += call.cache_creation
    totals["cache_read_input_tokens"] += call.cache_read
    totals["output_tokens_final"] += call.output_tokens_final


def expected_sessions(ledger: Ledger) -> list[dict[str, Any]]:
    """Per session: per UTC day and per thread, the calls and their usage as written."""
    sessions: dict[tuple[str, str], dict[str, Any]] = {}
    for call in ledger.calls:
        entry = sessions.setdefault(
            (call.project, call.session_id),
            {"project": call.project, "session_id": call.session_id, "days": {}, "threads": {}},
        )
        _add(entry["days"].setdefault(call.day, _zero()), call)
        thread = entry["threads"].setdefault(
            call.thread, {"thread": call.thread, "kind": call.kind, **_zero()}
        )
        thread.setdefault("models", [])
        if call.model not in thread["models"]:
            thread["models"].append(call.model)
        _add(thread, call)
    for project, session_id, day in ledger.api_errors:
        days = sessions[(project, session_id)]["days"]
        days.setdefault(day, _zero())["api_errors"] += 1
    out = []
    for entry in sessions.values():
        for thread in entry["threads"].values():
            del thread["api_errors"]
        entry["days"] = dict(sorted(entry["days"].items()))
        entry["threads"] = list(entry["threads"].values())
        out.append(entry)
    return out


def write_copy(copy: Copy) -> tuple[int, dict[str, Any]]:
    """Every session of one copy of the scenario; returns the bytes written and its facts."""
    written = 0
    a = session_a(copy)
    b = session_b(copy)
    written += a["bytes"] + b["bytes"]
    written += session_c(copy)["bytes"]
    written += session_legacy(copy)["bytes"]
    written += session_api(copy)["bytes"]
    return written, {"compaction": a["compaction"], "incident": b["incident"]}


def generate(out: Path, scale: int = 1, quiet: bool = False) -> int:
    """Write out/claude_code (deleted first): `scale` copies of the scenario and expected.json."""
    target = out / "claude_code"
    if target.exists():
        shutil.rmtree(target)
    root = target / "projects"
    root.mkdir(parents=True)
    written = 0
    expected: dict[str, Any] = {
        "generator": "sample_data/generate_claude_code.py",
        "scale": scale,
        "chars_per_token": CHARS_PER_TOKEN,
        "system_tokens": {"main": SYSTEM_TOKENS_MAIN, "subagent": SYSTEM_TOKENS_SUBAGENT},
        "context_limit": CONTEXT_LIMIT,
        "sessions": [],
        "compactions": [],
        "incidents": [],
    }
    for k in range(scale):
        ledger = Ledger()
        copy = Copy(k, root, ledger)
        copy_bytes, facts = write_copy(copy)
        written += copy_bytes
        expected["sessions"].extend(expected_sessions(ledger))
        expected["compactions"].append(facts["compaction"])
        expected["incidents"].append(facts["incident"])
        if k == 0:
            check_scenario(ledger, facts)
        if not quiet and scale > 1 and (k + 1) % 50 == 0:
            print(f"  {k + 1}/{scale} copies, {written:,} bytes", file=sys.stderr)
    data = (json.dumps(expected, indent=1, ensure_ascii=False) + "\n").encode()
    (target / "expected.json").write_bytes(data)
    written += len(data)
    if not quiet:
        print(f"wrote {written:,} bytes to {target}")
        if scale == 1:
            print_summary(expected)
    return written


def check_scenario(ledger: Ledger, facts: dict[str, Any]) -> None:
    """The scenario's promises, checked on every run (copy 0)."""
    low, high = SESSION_A_COMPACT_AT
    pre = facts["compaction"]["pre_tokens"]
    if not low <= pre <= high:
        raise SystemExit(f"session A compacts at {pre} tokens, outside {SESSION_A_COMPACT_AT}")
    failure = facts["incident"]["context_failure"]["window"]
    over = [c for c in ledger.calls if c.window > CONTEXT_LIMIT]
    if failure <= CONTEXT_LIMIT or [c.failed for c in over] != [True]:
        raise SystemExit("session B must have exactly one request over the limit, the refused one")
    for call in ledger.calls:
        if min(call.input_tokens, call.cache_creation, call.cache_read) < 0:
            raise SystemExit(f"negative usage in {call}")


def print_summary(expected: dict[str, Any]) -> None:
    for session in expected["sessions"]:
        for day, totals in session["days"].items():
            figures = " ".join(f"{key}={value}" for key, value in totals.items())
            print(f"  {session['project']} {session['session_id'][:8]} {day} {figures}")
    incident = expected["incidents"][0]
    growth = incident["largest_growth"]
    print(
        f"  incident: {growth['tool_name']} grew the window {growth['window_before']} -> "
        f"{growth['window_after']}; refused at {incident['context_failure']['window']} tokens"
    )
    print(f"  compaction: preTokens {expected['compactions'][0]['pre_tokens']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="write DIR/claude_code (default: sample_data/)",
    )
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="copies of the scenario, for benchmarks (1 = the committed sample)",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    if args.scale < 1:
        parser.error(f"--scale must be at least 1, not {args.scale}")
    generate(args.out, args.scale, args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
