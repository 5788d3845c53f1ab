"""A folder a command fills (a Parquet export, the facts of one): new or empty before,
and on any failure (a full disk, a bad row, a stop) emptied again, or removed when the
command made it, so that nothing half-written is left to be read as whole.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ForensicsError

__all__ = ["written_whole"]


@contextmanager
def written_whole(folder: Path, never: str, layout: Collection[str] = ()) -> Iterator[None]:
    """The block writes into `folder`, new (made here) or empty; `never` says what the
    folder is never mixed with, for the refusal; `layout`: the folders such a write
    makes in it (its tables), to tell one a killed write left. When the block raises,
    what it wrote is removed (the folder too when this made it), and the error goes on."""
    if folder.exists() and not folder.is_dir():
        raise ForensicsError(f"{folder} is a file, not a folder: {never}",
                             hint="give a new folder (it is created), or an empty one")  # fmt: skip
    if folder.is_dir() and any(folder.iterdir()):
        if _cut_short(folder, layout):
            # a write whose process was killed: nothing here could empty it (`made` below)
            raise ForensicsError(
                f"{folder} holds only the folders such a write makes, and no manifest.json: "
                f"a write into it was stopped before it finished (its process killed?), and "
                f"{never}",
                hint="if a stopped run of this command made the folder, remove it and run "
                "the command again; else give a new folder",
            )
        raise ForensicsError(
            f"{folder} is not an empty folder: {never}",
            hint="give a new folder (it is created), or empty this one",
        )
    made = not folder.exists()
    _made(folder)
    try:
        yield
    except BaseException:
        if made:
            shutil.rmtree(folder, ignore_errors=True)
        else:  # emptied again, so that the same command can run into it once more
            for written in folder.iterdir():
                if written.is_dir() and not written.is_symlink():
                    shutil.rmtree(written, ignore_errors=True)
                else:
                    written.unlink(missing_ok=True)
        raise


def _cut_short(folder: Path, layout: Collection[str]) -> bool:
    """`folder` holds folders of `layout` only, and no manifest (the last file a write
    makes): what a write killed before its end leaves."""
    entries = list(folder.iterdir())
    return bool(layout) and all(e.is_dir() and e.name in layout for e in entries)


def _made(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if folder.is_symlink():
            why = f"it is a link to {os.readlink(folder)}, which is no folder"
        elif isinstance(e, NotADirectoryError | FileExistsError):
            why = "a folder above it is a file"
        else:
            why = e.strerror or str(e)
        raise ForensicsError(f"cannot make the folder {folder}: {why}") from e
