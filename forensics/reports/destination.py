"""Where an HTML report goes, and writing it there whole or not at all.

`--out` names a file (`-`: standard output) or a folder: a folder (one that exists, or
a name ending in `/`, made when the report is written) gets the report's own name in
it. A report replaces only a file that is empty or an HTML page (a report written
before) and that this user may write, never a store, a price file or anything else it
might be pointed at by mistake; it is written to a file beside the target and renamed
over it, so a full disk or a stop leaves the earlier report as it was and no part of a
page. What is no regular file (a pipe, a device, /dev/stdout) is written to as it is.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
import sys
from pathlib import Path

from ..errors import ForensicsError
from ..settings import home_expanded

__all__ = ["file_name_part", "report_destination", "standard_stream", "write_page"]

_HTML_STARTS = (b"<!doctype html", b"<html")
_NOT_IN_A_NAME = re.compile(r"[^\w.\-]+")  # path separators, spaces, controls, quotes
MAX_NAME_PART = 120  # bytes of a session id kept in a report's default name (UTF-8)
_PART = ".{}.{}.part"  # the file a page is written to (beside its place) before the rename


def file_name_part(text: str) -> str:
    """`text` (a session id) as a piece of a file name: every run of characters other than
    letters, digits, `.`, `-` and `_` one `_` (an id `team/a` or `../x` names no
    folder), at most MAX_NAME_PART bytes of UTF-8 (a name holds 255)."""
    part = _NOT_IN_A_NAME.sub("_", text).encode("utf-8", "replace")[:MAX_NAME_PART]
    return part.decode("utf-8", "ignore") or "_"


def report_destination(given: str, default_name: str) -> Path:
    """The file a report is written to, from `--out` as typed (`given`), checked before
    the report is built: its folder there (or to be made: a name ending in `/` whose
    parent is), and nothing there that a report may not replace (`_replaceable`)."""
    if not given.strip() or given == "-":
        raise ForensicsError(f"--out {given!r} names no file",
                             hint="give the report's file, or a folder for it")  # fmt: skip
    folder = given.endswith(("/", os.sep))
    out = home_expanded(given)
    if folder and out.is_symlink() and not out.exists():
        raise ForensicsError(f"cannot write into {given}: it is a link to {os.readlink(out)}, "
                             "which is no folder", hint="give --out a folder")  # fmt: skip
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
    _replaceable(out)
    return out


def _replaceable(out: Path) -> None:
    """Refused unless a report may take `out`'s place: nothing there, an empty file or an
    HTML page this user may write, or a stream (`_stream`: a pipe, /dev/stdout)."""
    try:
        found = out.stat()
    except OSError:
        return  # (nothing there, or a link to nowhere: the write says which)
    if _stream(out, found):
        return
    if stat.S_ISBLK(found.st_mode):
        raise ForensicsError(f"{out} is a block device (a disk): a report is not written to it",
                             hint="give --out a file")  # fmt: skip
    if not stat.S_ISREG(found.st_mode):
        raise ForensicsError(f"{out} is no file a report can replace", hint="give --out a file")
    if not os.access(out, os.W_OK):
        raise ForensicsError(f"{out} is read-only: a report does not replace it",
                             hint="give --out another file, or make that one writable")  # fmt: skip
    if found.st_size == 0:
        return
    try:
        with out.open("rb") as f:
            head = f.read(512)
    except OSError as e:
        raise ForensicsError(f"cannot read {out} to see whether it is a report: "
                             f"{e.strerror or e}") from e  # fmt: skip
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith(_HTML_STARTS):
        raise ForensicsError(
            f"{out} exists and is not an HTML page: a report does not replace it",
            hint="give --out a new file name (or the folder to write it in), or remove that file",
        )


# a process's own descriptors by path: what they lead to is written to as it is (a
# rename would take the page from the shell's `>` or the reader of the pipe)
_DESCRIPTOR = re.compile(r"/dev/(?:stdout|stderr|fd/\d+)|/proc/(?:self|thread-self|\d+)/fd/\d+")


def standard_stream(out: Path) -> bool:
    """Whether `out` names one of this process's descriptors (/dev/stdout, /dev/fd/1)."""
    return _DESCRIPTOR.fullmatch(str(out.absolute())) is not None


def _stream(out: Path, found: os.stat_result | None) -> bool:
    """Written to as it is, never replaced: a descriptor's path, a pipe, a character
    device (a terminal) or a socket."""
    if standard_stream(out):
        return True
    mode = found.st_mode if found is not None else 0
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def write_page(page: str, out: Path | None) -> Path | None:
    """`page` written to `out` (through a link, to its file) whole: to a file beside it,
    then renamed over it; on any failure that file is removed and `out` is as it was.
    A stream (a pipe, /dev/stdout) is written to as it is, appended as the shell's `>>`
    would. None (`--out -`): standard output, as UTF-8 whatever its encoding (the page
    says it is UTF-8). A reader that left (EPIPE) is the caller's, as for any output."""
    data = page.encode("utf-8")
    if out is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return None
    try:
        found = out.stat()
    except OSError:
        found = None
    if _stream(out, found):
        try:
            with out.open("ab") as f:
                f.write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise ForensicsError(f"cannot write {out}: {e.strerror or e}") from e
        return out
    _replaceable(out)  # again: the page took a while to build
    target = _followed(out)
    through = f" (a link to {target})" if target != out else ""
    try:
        _replaced(data, target, found, may_make_folder=not through)
    except OSError as e:
        raise ForensicsError(f"cannot write {out}{through}: {e.strerror or e} (it was left "
                             "as it was)") from e  # fmt: skip
    return out


def _followed(out: Path) -> Path:
    """Where `out` leads: itself, or the end of its links (a loop said as one)."""
    if not out.is_symlink():
        return out
    try:
        return out.resolve()
    except (RuntimeError, OSError) as e:  # (a loop: RuntimeError before Python 3.13)
        raise ForensicsError(f"cannot write {out}: it is a link that leads back to itself",
                             hint="give --out a file") from e  # fmt: skip


def _replaced(
    data: bytes, target: Path, found: os.stat_result | None, may_make_folder: bool
) -> None:
    """`data` in a new file beside `target` (0666 less the umask, or the replaced file's
    permissions), renamed over it; the file, and a folder this made for it, removed on
    any failure. A folder is made only for a report's own name (`--out newdir/`), never
    at the end of a link."""
    made = None
    part = None
    try:
        if may_make_folder and not target.parent.is_dir():
            try:
                target.parent.mkdir()
                made = target.parent
            except FileExistsError:  # (another report made it meanwhile, or a link there)
                if not target.parent.is_dir():
                    raise
        for _ in range(100):
            name = target.parent / _PART.format(target.name[:40], secrets.token_hex(6))
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:  # (another's: never removed here)
                continue
            part = name
            break
        else:  # pragma: no cover (a hundred random names taken)
            raise FileExistsError(f"no free name for a file beside {target}")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if found is not None:
            os.chmod(part, found.st_mode & 0o777)
        os.replace(part, target)
    except BaseException:
        if part is not None:
            part.unlink(missing_ok=True)
        if made is not None:
            try:
                made.rmdir()
            except OSError:
                pass
        raise
