"""Where Claude Code's transcripts are, and which sessions changed since an ingest read
them: the files found and each one's `stat`, no line read.

Apart from the reader (claude_code.py) so that an ingest that finds nothing new
imports neither Arrow nor the reader's modules (forensics/quick.py). The places are
described in claude_code.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ...errors import ForensicsError
from ...families.claude_code.files import TranscriptFile, agent_id_of
from ...sanitize import storable

KIND = "claude-code"  # the ingest's source kind, as the ledger names it
DEFAULT_USER = "claude-code"
PEEK_LINES = 20  # lines of a 2.0 agent file read to find the session it belongs to


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


def found_roots(hint: str) -> list[Path]:
    """The default roots that hold a projects folder; a named error (with `hint`, how to
    give them) when none does."""
    found = [p for p in default_roots() if (p / "projects").is_dir()]
    if not found:
        tried = ", ".join(str(p) for p in default_roots())
        raise ForensicsError(
            f"no Claude Code transcripts found: none of {tried} has a projects folder", hint=hint
        )
    return found


@dataclass
class SessionFiles:
    """One session's files, its own first."""

    app: str
    session_id: str
    found: list[TranscriptFile] = field(default_factory=list)  # each file; `path` its text
    # (size, mtime_ns) of each file as discovery found it (its one stat), by path text
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)

    @cached_property
    def files(self) -> list[tuple[Path, TranscriptFile]]:
        """Each file with its Path, made when a reader first asks (a Path for each of
        8,400 files was a fifth of discovery, and a re-ingest that finds the files
        unchanged reads none)."""
        return [(Path(file.path), file) for file in self.found]


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


def _classify(text: str, projects_dir: str) -> tuple[str, str, TranscriptFile] | None:
    """(app, session, file) of a transcript (its path's text) by its place under the
    projects folder (its text); None where Claude Code writes none. The app, the session
    and an agent's id (its thread's name) are names the store keeps: a byte of a
    folder's or file's name that no encoding decodes is written as its escape
    (`sanitize.storable`), as the file's place is. (On text: a Path's relative_to,
    parts and stem were a third of discover.)"""
    base = projects_dir if projects_dir.endswith(os.sep) else projects_dir + os.sep
    if text.startswith(base) and os.sep == "/":
        parts: tuple[str, ...] = tuple(text[len(base) :].split("/"))
    else:
        parts = Path(text).relative_to(projects_dir).parts
    rel = "/".join(parts)
    name = parts[-1]
    stem = name[:-6] if name.endswith(".jsonl") and len(name) > 6 else Path(name).stem
    app, stem = storable(parts[0]), storable(stem)
    if len(parts) == 2 and not stem.startswith("agent-"):
        return app, stem, TranscriptFile(rel, "main", path=text)
    if len(parts) == 2:
        file = TranscriptFile(rel, "agent", agent_id_of(stem), text)
        peeked = _peek_session(Path(text))
        return app, storable(peeked) if peeked else stem, file
    if len(parts) == 4 and parts[2] == "subagents":
        file = TranscriptFile(rel, "subagent", agent_id_of(stem), text)
        return app, storable(parts[1]), file
    return None


def _listed(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError:  # (os.walk passes over a folder it cannot list)
        return []


def _walked(entry: os.DirEntry[str]) -> list[str]:
    """The .jsonl entries at and under one entry of a folder, in path order; folders
    that are links are not followed (a link back up would loop), a file that is a link
    is read."""
    found: list[str] = []
    todo = [entry]
    while todo:  # os.walk's choices, on strings (a Path per entry was half of discover)
        at = todo.pop()
        try:
            is_dir = at.is_dir()
        except OSError:
            is_dir = False
        if at.name.endswith(".jsonl") and (not is_dir or not at.is_symlink()):
            found.append(at.path)
        if is_dir and not at.is_symlink():
            todo += _listed(at.path)
    return sorted(found, key=lambda p: p.split(os.sep))  # in Path order


def _transcripts(folder: Path) -> Iterator[list[str]]:
    """The .jsonl entries under `folder`, by the entry of `folder` they are at or under
    (a project's folder, when it is a projects folder), in path order."""
    for entry in _listed(os.fspath(folder)):
        found = _walked(entry)
        if found:
            yield found


def _projects_dir(file: Path) -> Path:
    """The projects folder a transcript given alone is in."""
    return file.parents[3] if file.parent.name == "subagents" else file.parents[1]


class Discovery:
    """discover(paths) as it goes: the sessions, in its order, each as soon as it is
    found whole (a project's sessions once its folder is walked, where one projects
    folder or root is given; else all at the end), so that their files are read while
    the rest are looked for. `layout()`, after, is discover's."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.sessions: list[SessionFiles] = []
        self.roots: list[str] = []
        self.passed_over: list[tuple[str, str]] = []

    def layout(self) -> Layout:
        return Layout(self.sessions, self.roots, self.passed_over)

    def __iter__(self) -> Iterator[SessionFiles]:
        """Each session found; a file reached twice (two paths, two roots) is read once.
        (Looked for again, from the start.)"""
        self.sessions, self.roots, self.passed_over = [], [], []
        found: dict[tuple[str, str], SessionFiles] = {}
        files_seen: set[object] = set()  # each file's (device, inode): one file, however reached

        def add(text: str, projects_dir: str) -> None:  # (a path's text: str(Path))
            placed = _classify(text, projects_dir)
            if placed is None:
                self.passed_over.append((text, "not where Claude Code writes transcripts"))
                return
            stat = None
            try:  # (one stat: Path.resolve walked every folder of every path, in Python)
                stat = os.stat(text)
                real: object = (stat.st_dev, stat.st_ino)
                if not stat.st_ino:  # a file system without inode numbers: the path itself
                    real = Path(text).resolve()
            except (OSError, RuntimeError):  # a link loop: reading it says why
                real = Path(text)
            if real in files_seen:
                return
            files_seen.add(real)
            app, sid, file = placed
            entry = found.get((app, sid))
            if entry is None:
                entry = found[app, sid] = SessionFiles(app, sid)
            entry.found.append(file)
            if stat is not None:  # whether it changed since an ingest read it, without a
                entry.stats[text] = (stat.st_size, stat.st_mtime_ns)  # second stat

        for given in self.paths:
            path = Path(os.path.abspath(given.expanduser()))  # a project is its folder's name
            if not path.exists():
                raise ForensicsError(
                    f"no such file or folder: {path}",
                    hint="give a Claude Code config folder (holding projects/), a projects "
                    "folder, a project's folder or .jsonl files",
                )
            self.roots.append(str(given))
            if path.is_file():
                add(str(path), str(_projects_dir(path)))
                continue
            if (path / "projects").is_dir():
                path = projects_dir = path / "projects"
            elif any(p.is_file() for p in path.glob("*.jsonl")):
                projects_dir = path.parent  # one project's folder
            else:
                projects_dir = path
            # each entry of a projects folder is a project: its sessions are whole once
            # it is walked, and they come before the next project's (sorted by app)
            whole = len(self.paths) == 1 and path == projects_dir
            for texts in _transcripts(path):
                for text in texts:
                    add(text, str(projects_dir))
                if whole:
                    yield from self._whole(found)
        yield from self._whole(found)

    def _whole(self, found: dict[tuple[str, str], SessionFiles]) -> list[SessionFiles]:
        """The sessions found whole, in order, their own files first, then subagents
        (subagents/, then 2.0's); `found` emptied."""
        sessions = sorted(found.values(), key=lambda s: (s.app, s.session_id))
        found.clear()
        order = {"main": 0, "subagent": 1, "agent": 2}
        for entry in sessions:
            entry.found.sort(key=lambda file: (order[file.role], file.rel))
        self.sessions += sessions
        return sessions


def discover(paths: list[Path]) -> Layout:
    """The sessions under `paths` (roots, projects folders, project folders or files);
    a file reached twice (two paths, two roots) is read once."""
    discovery = Discovery(paths)
    for _ in discovery:
        pass
    return discovery.layout()


def no_sessions(paths: list[Path]) -> ForensicsError:
    """The error of paths that hold no session's transcript."""
    return ForensicsError(
        f"no Claude Code transcripts (.jsonl files of a project) under "
        f"{', '.join(str(p) for p in paths)}",
        hint="Claude Code writes them to <config>/projects/<project>/<session>.jsonl",
    )


def sessions_under(paths: list[Path]) -> Layout:
    """discover(paths), or a named error when they hold no session's transcript."""
    layout = discover(paths)
    if not layout.sessions:
        raise no_sessions(paths)
    return layout


def _stat(path: Path) -> tuple[int, int]:
    """(size, mtime_ns) of a file: whether it changed since it was read."""
    try:
        found = path.stat()
    except OSError:
        return (-1, -1)
    return (found.st_size, found.st_mtime_ns)


def layout_of(paths: list[Path]) -> Layout:
    """The sessions under `paths`, or under the default roots when none is given."""
    given = list(paths) or found_roots(
        "give the folder: forensics ingest claude-code ~/.claude/projects, or set "
        "CLAUDE_CONFIG_DIR"
    )
    return sessions_under(given)


Stats = dict[str, tuple[int, int]]  # path text -> (size, mtime_ns)


def to_read(
    layout: Layout, known: Mapping[str, tuple[int, int]]
) -> tuple[list[tuple[SessionFiles, Stats]], int]:
    """The sessions of `layout` to read, in order, each with its files' (size, mtime_ns),
    and how many are not: those none of whose files changed since an ingest read them
    (`known`: path -> (size, mtime_ns) as it read them; empty: every session is read)."""
    todo: list[tuple[SessionFiles, Stats]] = []
    unchanged = 0
    for entry in layout.sessions:
        stats = {f.path: entry.stats.get(f.path) or _stat(Path(f.path)) for f in entry.found}
        # (a path is kept as `storable` writes it: a name no encoding decodes, escaped)
        if known and all(known.get(storable(p)) == st for p, st in stats.items()):
            unchanged += 1
            continue
        todo.append((entry, stats))
    return todo, unchanged
