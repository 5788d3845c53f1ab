"""Analyses: pure functions of rebuilt sessions, and frames over their stored facts.

`facts.session_facts` rebuilds one session (every call's window, with the family's
rules) into fact rows, which the engines store once; `stored.Facts` turns the selected
sessions' facts into the calls, growth, turns and compaction frames with SQL, sizing
characters with the ratios fitted at query time (`ratio`). `reconstruct` rebuilds
sessions in memory for what the facts do not keep: one call's parts (`window_frame`)
and the rebuilt sizes of traced calls (`fidelity_frame`).
"""

from .fidelity import fidelity_frame
from .frames import window_frame
from .ratio import Ratio, fit_ratio
from .reconstruct import Reconstruction, reconstruct

__all__ = [
    "Ratio",
    "Reconstruction",
    "fidelity_frame",
    "fit_ratio",
    "reconstruct",
    "window_frame",
]
