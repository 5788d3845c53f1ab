"""The guard a what-if replays: a row cap, a token cap after a page size, or both.

The rules are the founding document's (docs/whatif.md): rows past the page size (and
the row cap) go first; then the token fit keeps rows while the guard's running estimate
(the rest of the response, then each row, each as its json.dumps length over
`chars_per_token`, rounded up) stays within the cap, and keeps at least one row however
large, so one row over budget still goes out. A response without a list of records is
sized as a whole (the founding guard read a dict as empty) and, having no rows to cut,
goes out whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ForensicsError

CHARS_PER_TOKEN = 3.0  # the founding guard's estimate: serialised length / 3.0
DEFAULT_CAP = 16_000  # the founding guard's budget (the incident report's what-if)
PLACEMENTS = ("boundary", "transcript")


@dataclass(frozen=True)
class Guard:
    row_cap: int | None = None
    token_cap: int | None = None
    page_size: int | None = None
    chars_per_token: float = CHARS_PER_TOKEN
    tool: str | None = None  # only this tool's results are guarded
    # where it cuts: at the tool boundary (before the result's first send), or in the
    # transcript afterwards (the first send whole; later requests carry the cut result
    # and the first of them re-sends its prefix from that result on: docs/whatif.md)
    placement: str = "boundary"

    def __post_init__(self) -> None:
        if self.row_cap is None and self.token_cap is None and self.page_size is None:
            raise ForensicsError(
                "no guard to replay",
                hint="give --token-cap N, --row-cap N or --page-size N (e.g. --token-cap 16000)",
            )
        for option, value in (("--row-cap", self.row_cap), ("--token-cap", self.token_cap),
                              ("--page-size", self.page_size)):  # fmt: skip
            if value is not None and value < 1:
                raise ForensicsError(f"{option} {value} is not a count of 1 or more")
        if self.placement not in PLACEMENTS:
            raise ForensicsError(f"--placement {self.placement!r} is not a placement",
                                 hint="boundary (the default) or transcript")  # fmt: skip
        # (under 0.01, a result's estimate overflows the queries' integers: no text holds
        # a hundred tokens a character)
        if not (math.isfinite(self.chars_per_token) and self.chars_per_token >= 0.01):
            raise ForensicsError(
                f"--chars-per-token {self.chars_per_token} is not a number of characters a "
                "token, 0.01 or more",
                hint="the founding guard used 3.0; `forensics calls` shows the fitted ratio",
            )

    def describe(self) -> str:
        """The guard in words, as every what-if row names it."""
        parts = []
        if self.page_size is not None:
            parts.append(f"page of {self.page_size:,} rows")
        if self.row_cap is not None:
            parts.append(f"row cap {self.row_cap:,}")
        if self.token_cap is not None:
            parts.append(f"token cap {self.token_cap:,} (at least one row)")
        where = f" on {self.tool}" if self.tool else ""
        ratio = f"{self.chars_per_token:.1f}" if float(self.chars_per_token).is_integer() \
            else f"{self.chars_per_token:g}"
        placed = "; in the transcript after the first send" if self.placement != "boundary" \
            else ""
        return (f"{', then '.join(parts)}{where}; estimate: json.dumps length / {ratio} chars "
                f"per token{placed}")  # fmt: skip

    def params(self) -> dict[str, object]:
        return {
            "row_cap": self.row_cap,
            "token_cap": self.token_cap,
            "page_size": self.page_size,
            "chars_per_token": float(self.chars_per_token),
            "tool": self.tool,
        }
