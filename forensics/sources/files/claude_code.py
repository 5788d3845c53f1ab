"""Claude Code's folders of transcripts: which files, in which order, read line by line.

Where they are: the paths given (a config folder holding `projects/`, a `projects`
folder, one project's folder, or transcript files), else each folder of
`$CLAUDE_CONFIG_DIR` (comma-separated), else `~/.config/claude` and `~/.claude`: the
folders ccusage reads. In a project's folder (`projects/<project>/`):

- `<session>.jsonl`: a session's own file;
- `<session>/subagents/agent-<id>.jsonl` (2.1): its subagents;
- `agent-<id>.jsonl` (2.0): a subagent file beside the sessions, naming its parent in
  its lines' `sessionId`.

A session's own file is read first, then its subagents' (their authors come from the
Task calls its own file made). Files are read as bytes, a line at a time, so a 700 MB
transcript costs one line's memory (ccusage #873 and #1151 crashed on those); a line
that is not UTF-8 or not JSON is skipped with its file and line, the rest is read.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ...errors import ForensicsError
from ...families.claude_code.transcript import (
    FAMILY,
    SessionReader,
    TranscriptFile,
    agent_id_of,
)
from ...model import Batch
from ..base import EventBatcher

DEFAULT_USER = "claude-code"
PEEK_LINES = 20  # lines of a 2.0 agent file read to find the session it belongs to

# transcript_events, as queries/store/migrate_10.sql holds it (ingest_id added there)
DETAIL_SCHEMA = pa.schema(
    [
        ("app_name", pa.string()),
        ("user_id", pa.string()),
        ("session_id", pa.string()),
        ("event_id", pa.string()),
        ("kind", pa.string()),
        ("file", pa.string()),
        ("line", pa.int32()),
        ("timestamp", pa.string()),
        ("epoch", pa.float64()),
        ("version", pa.string()),
        ("message_id", pa.string()),
        ("request_id", pa.string()),
        ("model", pa.string()),
        ("is_sidechain", pa.bool_()),
        ("speed", pa.string()),
        ("cost_usd", pa.float64()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cache_read_tokens", pa.int64()),
        ("cache_creation_tokens", pa.int64()),
        ("cache_write_5m_tokens", pa.int64()),
        ("cache_write_1h_tokens", pa.int64()),
        ("trigger", pa.string()),
        ("pre_tokens", pa.int64()),
    ]
)


FILE_SCHEMA = pa.schema(
    [("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()), ("lines", pa.int64())]
)


def default_roots(environ: dict[str, str] | None = None) -> list[Path]:
    """`$CLAUDE_CONFIG_DIR` (comma-separated) if set, else ~/.config/claude and ~/.claude
    (`$XDG_CONFIG_HOME` in place of ~/.config when set)."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured is not None:
        return [Path(p.strip()).expanduser() for p in configured.split(",") if p.strip()]
    home = Path.home()
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return [config / "claude", home / ".claude"]


@dataclass
class SessionFiles:
    """One session's files, its own first."""

    app: str
    session_id: str
    files: list[tuple[Path, TranscriptFile]] = field(default_factory=list)


@dataclass
class Layout:
    """What was found under the paths: sessions in reading order, and what was passed over."""

    sessions: list[SessionFiles]
    roots: list[str]
    passed_over: list[tuple[str, str]]  # (path, why)


def _peek_session(path: Path) -> str | None:
    """The sessionId a 2.0 agent file's first lines name (its parent session)."""
    try:
        with path.open("rb") as handle:
            for _, raw in zip(range(PEEK_LINES), handle, strict=False):
                try:
                    line = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(line, dict) and isinstance(line.get("sessionId"), str):
                    return str(line["sessionId"]) or None
    except OSError:
        return None
    return None


def _project(folder: Path, projects_dir: Path, found: dict[tuple[str, str], SessionFiles],
             passed_over: list[tuple[str, str]]) -> None:  # fmt: skip
    app = folder.name

    def rel(path: Path) -> str:
        return path.relative_to(projects_dir).as_posix()

    def session(sid: str) -> SessionFiles:
        return found.setdefault((app, sid), SessionFiles(app, sid))

    agents: list[Path] = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.stem.startswith("agent-"):
            agents.append(path)
        else:
            session(path.stem).files.append(
                (path, TranscriptFile(rel(path), "main", path=str(path)))
            )
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        for path in sorted(sub.rglob("*.jsonl")):
            if path.parent.name == "subagents" and path.parent.parent == sub:
                file = TranscriptFile(rel(path), "subagent", agent_id_of(path.stem), str(path))
                session(sub.name).files.append((path, file))
            else:
                passed_over.append((str(path), "not where Claude Code writes transcripts"))
    for path in agents:
        parent = _peek_session(path) or path.stem
        file = TranscriptFile(rel(path), "agent", agent_id_of(path.stem), str(path))
        session(parent).files.append((path, file))


def discover(paths: list[Path]) -> Layout:
    """The sessions under `paths` (roots, projects folders, project folders or files)."""
    found: dict[tuple[str, str], SessionFiles] = {}
    passed_over: list[tuple[str, str]] = []
    roots: list[str] = []
    seen: set[Path] = set()
    for given in paths:
        path = given.expanduser()
        if not path.exists():
            raise ForensicsError(
                f"no such file or folder: {path}",
                hint="give a Claude Code config folder (holding projects/), a projects "
                "folder, a project's folder or .jsonl files",
            )
        real = path.resolve()
        if real in seen:
            continue  # the same folder twice (ccusage reads it once too)
        seen.add(real)
        roots.append(str(path))
        if path.is_file():
            project = path.parent
            projects_dir = project.parent
            if path.parent.name == "subagents":
                project = path.parent.parent.parent
                projects_dir = project.parent
                file = TranscriptFile(
                    path.relative_to(projects_dir).as_posix(),
                    "subagent",
                    agent_id_of(path.stem),
                    str(path),
                )
                sid = path.parent.parent.name
            elif path.stem.startswith("agent-"):
                file = TranscriptFile(
                    path.relative_to(projects_dir).as_posix(),
                    "agent",
                    agent_id_of(path.stem),
                    str(path),
                )
                sid = _peek_session(path) or path.stem
            else:
                file = TranscriptFile(
                    path.relative_to(projects_dir).as_posix(), "main", path=str(path)
                )
                sid = path.stem
            entry = found.setdefault((project.name, sid), SessionFiles(project.name, sid))
            entry.files.append((path, file))
            continue
        if (path / "projects").is_dir():
            projects_dir = path / "projects"
            folders = sorted(p for p in projects_dir.iterdir() if p.is_dir())
        elif any(path.glob("*.jsonl")):
            projects_dir, folders = path.parent, [path]
        else:
            projects_dir = path
            folders = sorted(p for p in path.iterdir() if p.is_dir())
        for folder in folders:
            _project(folder, projects_dir, found, passed_over)
    sessions = sorted(found.values(), key=lambda s: (s.app, s.session_id))
    for entry in sessions:  # own files first, then subagents (subagents/, then 2.0's)
        order = {"main": 0, "subagent": 1, "agent": 2}
        entry.files.sort(key=lambda item: (order[item[1].role], item[1].rel))
    return Layout(sessions, roots, passed_over)


def read_lines(path: Path, skip: Any) -> Iterator[tuple[int, str]]:
    """(line number, text) of a file, one line in memory at a time; a line that is not
    UTF-8 is skipped with its place."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                skip(f"{path}:{number}", f"not UTF-8 text (byte {e.start + 1} of the line)")
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            text = text.rstrip("\r\n")
            if text.strip():
                yield number, text


class _Sink:
    """The reader's output, batched: events through an EventBatcher, details beside them."""

    def __init__(self, batcher: EventBatcher):
        self.batcher = batcher
        self.details: list[dict[str, Any]] = []

    def event(self, row: dict[str, Any]) -> None:
        self.batcher.rows_read += 1
        self.batcher.add(**row)

    def detail(self, row: dict[str, Any]) -> None:
        self.details.append(row)

    def skip(self, locator: str, reason: str) -> None:
        self.batcher.rows_read += 1
        self.batcher.skip(locator, reason)

    def take(self) -> Batch:
        batch = self.batcher.take()
        names = DETAIL_SCHEMA.names
        table = pa.Table.from_pylist(
            [{n: row.get(n) for n in names} for row in self.details], schema=DETAIL_SCHEMA
        )
        self.details = []
        batch.side["transcript_events"] = table
        return batch


class ClaudeCodeSource:
    """Claude Code transcripts under some folders, as batches of the store's events."""

    kind = "claude-code"
    family = FAMILY

    def __init__(
        self,
        paths: list[Path] | None = None,
        user: str = DEFAULT_USER,
        known: dict[str, tuple[int, int]] | None = None,
    ):
        """`known`: path -> (size, mtime_ns) of the files an earlier ingest read; a session
        none of whose files changed since is not read again (None: read everything)."""
        self.known = known or {}
        given = list(paths or [])
        self.defaulted = not given
        if not given:
            given = [p for p in default_roots() if (p / "projects").is_dir()]
            if not given:
                tried = ", ".join(str(p) for p in default_roots())
                raise ForensicsError(
                    f"no Claude Code transcripts found: none of {tried} has a projects folder",
                    hint="give the folder: forensics ingest claude-code ~/.claude/projects, or "
                    "set CLAUDE_CONFIG_DIR",
                )
        self.layout = discover(given)
        self.user = user
        self.location = ", ".join(self.layout.roots)
        self.notes: dict[str, object] = {}
        self._sources: dict[tuple[str, str, str], str] = {}

    def session_sources(self) -> dict[tuple[str, str, str], str]:
        return dict(self._sources)

    def batches(self, since_watermark: float | None) -> Iterator[Batch]:
        """Every session's events, in batches, but those of sessions whose files are all
        as `known` (an earlier ingest read them); a changed session is read whole (the
        store keeps an event once), so `since_watermark` is not used."""
        sink = _Sink(EventBatcher())
        kinds: Counter[str] = Counter()
        lines = files = unchanged = 0
        read: list[dict[str, object]] = []
        for entry in self.layout.sessions:
            stats = {str(p): _stat(p) for p, _ in entry.files}
            if self.known and all(self.known.get(p) == st for p, st in stats.items()):
                unchanged += 1
                continue
            reader = SessionReader(entry.app, self.user, entry.session_id, sink)
            own = next((p for p, f in entry.files if f.role == "main"), entry.files[0][0])
            self._sources[(entry.app, self.user, entry.session_id)] = f"{self.kind}:{own}"
            for path, file in entry.files:
                files += 1
                count = 0

                def counted(path: Path = path) -> Iterator[tuple[int, str]]:
                    nonlocal count
                    for item in read_lines(path, sink.skip):
                        count += 1
                        yield item

                try:
                    for _ in reader.read(file, counted()):
                        if sink.batcher.full():
                            yield sink.take()
                except OSError as e:
                    sink.skip(str(path), f"cannot read the file: {e}")
                    continue
                lines += count
                size, mtime = stats[str(path)]
                read.append({"path": str(path), "size": size, "mtime_ns": mtime, "lines": count})
            kinds.update(reader.kinds)
        self.notes["files"] = files
        self.notes["lines"] = lines
        if unchanged:
            self.notes["sessions_unchanged"] = unchanged
        if kinds:
            self.notes["lines_not_events"] = dict(kinds.most_common())
        if self.layout.passed_over:
            self.notes["files_passed_over"] = len(self.layout.passed_over)
        batch = sink.take()
        batch.side["transcript_files"] = pa.Table.from_pylist(read, schema=FILE_SCHEMA)
        yield batch


def _stat(path: Path) -> tuple[int, int]:
    """(size, mtime_ns) of a file: whether it changed since it was read."""
    try:
        found = path.stat()
    except OSError:
        return (-1, -1)
    return (found.st_size, found.st_mtime_ns)
