"""How many examples the heaviest property tests draw (each costs a normaliser run, a
reconstruction or a whole frame written): half their thorough count in the suite, which
must stay within CI's 15 minutes on two cores, and all of it with FORENSICS_THOROUGH=1
(by hand: before a release, after a change to what the test holds)."""

from __future__ import annotations

import os


def examples(thorough: int) -> int:
    """`thorough` with FORENSICS_THOROUGH=1, else half of it."""
    return thorough if os.environ.get("FORENSICS_THOROUGH") == "1" else max(1, thorough // 2)
