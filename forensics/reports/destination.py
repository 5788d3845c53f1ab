"""Where an HTML report goes, and writing it there whole or not at all.

`--out` names a file (`-`: standard output) or a folder: a folder (one that exists, or
a name ending in `/`, made when the report is written) gets the report's own name in
it. A report replaces only a file that is an HTML page (a report written before), never
a store, a price file or anything else it might be pointed at by mistake; and it is
written to a file beside the target and renamed over it, so a full disk or a stop
leaves the earlier report as it was and no part of a page.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from ..errors import ForensicsError
from ..settings import home_expanded

__all__ = ["file_name_part", "report_destination", "write_page"]

_HTML_STARTS = (b"<!doctype html", b"<html")
_NOT_IN_A_NAME = re.compile(r"[^\w.\-]+")  # path separators, spaces, controls, quotes
MAX_NAME_PART = 100  # characters of a session id kept in a report's default name


def file_name_part(text: str) -> str:
    """`text` (a session id) as a piece of a file name: every run of characters other than
    letters, digits, `.`, `-` and `_` one `_` (an id `team/a` or `../x` names no
    folder), at most MAX_NAME_PART characters."""
    return _NOT_IN_A_NAME.sub("_", text)[:MAX_NAME_PART] or "_"


def report_destination(given: str, default_name: str) -> Path:
    """The file a report is written to, from `--out` as typed (`given`), checked before
    the report is built: its folder there (or to be made: a name ending in `/` whose
    parent is), and no file there but an HTML page."""
    if not given.strip():
        raise ForensicsError("--out names no file",
                             hint="give the report's file, or a folder for it")  # fmt: skip
    folder = given.endswith(("/", os.sep))
    out = home_expanded(given)
    if folder and out.exists() and not out.is_dir():
        raise ForensicsError(f"cannot write into {given}: it is a file, not a folder",
                             hint="give --out a folder, or a file name without the /")  # fmt: skip
    if folder or out.is_dir():
        out = out / default_name
    parent = out.parent
    if not parent.is_dir() and not (folder and parent.parent.is_dir()):
        missing = parent if not folder else parent.parent
        what = "is a file, not a folder" if missing.exists() else "does not exist"
        raise ForensicsError(
            f"cannot write {out}: the folder {missing} {what}",
            hint="create it first, or give --out an existing folder or file path",
        )
    if out.is_dir():
        raise ForensicsError(f"cannot write {out}: it is a folder",
                             hint="give --out a file name, or a folder for the report")  # fmt: skip
    if out.exists() and not _an_html_page(out):
        raise ForensicsError(
            f"{out} exists and is not an HTML page: a report does not replace it",
            hint="give --out a new file name (or the folder to write it in), or remove that file",
        )
    return out


def _an_html_page(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return False  # (unreadable: the write says why)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith(_HTML_STARTS)


def write_page(page: str, out: Path | None) -> Path | None:
    """`page` written to `out` (through a link, to its file) whole: to a file beside it,
    then renamed over it; on any failure that file is removed and `out` is as it was.
    None (`--out -`): to standard output."""
    if out is None:
        sys.stdout.write(page)
        sys.stdout.flush()
        return None
    target = out.resolve() if out.is_symlink() else out
    through = f" (a link to {target})" if target != out else ""
    try:
        target.parent.mkdir(exist_ok=True)
        fd, part = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as e:
        raise ForensicsError(f"cannot write {out}{through}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(part, _mode_for(target))
        os.replace(part, target)
    except BaseException as e:
        try:
            os.unlink(part)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ForensicsError(f"cannot write {out}{through}: {e.strerror or e} (it was left "
                                 "as it was)") from e  # fmt: skip
        raise
    return out


def _mode_for(target: Path) -> int:
    """The replaced file's permissions, or a new file's (0666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
