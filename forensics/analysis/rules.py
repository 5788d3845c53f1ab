"""The rules version the stored facts are built by (store_meta `facts_rules`): the
facts' own definition and a digest of the code that decides what a window held.

Apart from facts.py so that whether the facts are current is known without importing
the analyses (forensics/quick.py: an ingest that finds nothing new).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

FACTS_VERSION = 1  # the facts' own definition; the rules' source is hashed in below

# The code that decides what a window held, by its path in the package: the window and
# release rules, the records and how stored rows become them, the facts' rows. A change
# to any of it makes every stored session's facts stale, whatever FACTS_VERSION says.
# (What a command says of a session it cannot find is in store/lookup.py, not here.)
RULES_SOURCES = (
    "families/adk/windows.py",
    "families/claude_code/windows.py",
    "families/adk/releases.py",
    "model.py",
    "store/reads.py",
    "analysis/facts.py",
)


def _rules_digest() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(str(FACTS_VERSION).encode())
    for source in RULES_SOURCES:
        digest.update((package / source).read_bytes())
    return digest.hexdigest()[:12]


RULES_VERSION = f"{FACTS_VERSION}-{_rules_digest()}"
