"""Analyses: pure functions of the reconstructed sessions, one frame each.

`reconstruct` reads the selected sessions from the store once and rebuilds every
call's window with the family's rules; `calls_frame`, `turns_frame`, `growth_frame`,
`window_frame` and the compaction audit are built from that one reconstruction.
"""

from .compaction import audit_ranges, audit_sessions
from .fidelity import fidelity_frame
from .frames import calls_frame, growth_frame, turns_frame, window_frame
from .ratio import Ratio, fit_ratio
from .reconstruct import Reconstruction, reconstruct

__all__ = [
    "Ratio",
    "Reconstruction",
    "audit_ranges",
    "audit_sessions",
    "calls_frame",
    "fidelity_frame",
    "fit_ratio",
    "growth_frame",
    "reconstruct",
    "turns_frame",
    "window_frame",
]
