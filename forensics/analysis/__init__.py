"""Analyses: pure functions of rebuilt sessions, and frames over their stored facts.

`facts.session_facts` rebuilds one session (every call's window, with the family's
rules) into fact rows, which the engines store once; `stored.Facts` turns the selected
sessions' facts into the calls, growth, turns and compaction frames with SQL, sizing
characters with the ratios fitted at query time (`ratio`). `reconstruct` rebuilds
sessions in memory for what the facts do not keep: one call's parts (`window_frame`)
and the rebuilt sizes of traced calls (`fidelity_frame`).

The names below are imported at their first use: `rules` (whether the facts are
current) is read without the analyses' modules, polars or Arrow. (`reconstruct` is
not among them: the submodule of that name would shadow the function.)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fidelity import fidelity_frame
    from .frames import window_frame
    from .ratio import Ratio, fit_ratio
    from .reconstruct import Reconstruction

_FROM = {
    "Ratio": ".ratio",
    "Reconstruction": ".reconstruct",
    "fidelity_frame": ".fidelity",
    "fit_ratio": ".ratio",
    "window_frame": ".frames",
}

__all__ = [
    "Ratio",
    "Reconstruction",
    "fidelity_frame",
    "fit_ratio",
    "window_frame",
]


def __getattr__(name: str) -> Any:
    if name in _FROM:
        return getattr(import_module(_FROM[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
