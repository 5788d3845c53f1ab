"""The chars-per-token ratio that turns stored characters into estimated tokens."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

DEFAULT_CHARS_PER_TOKEN = 3.0


@dataclass
class Ratio:
    """chars per token, fitted as prompt_tokens = chars / ratio + per-agent constant."""

    chars_per_token: float
    source: str  # fitted | default
    calls: int  # calls the fit used
    mean_abs_error: float | None  # of the fitted prompt tokens, as a fraction of measured
    constant_tokens: dict[str, float] = field(default_factory=dict)  # per agent: system+tools

    def tokens(self, chars: int) -> int:
        return round(chars / self.chars_per_token)


def fit_ratio(samples: list[tuple[str, int, int]]) -> Ratio:
    """Least squares with one slope and an intercept per agent (fixed effects).

    `samples`: (agent, window chars, measured prompt tokens). The intercept is the
    part of the prompt the stored events do not show: system instruction and tool
    schemas, which stay the same across one agent's calls.
    """
    by_agent: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for agent, chars, tokens in samples:
        by_agent[agent].append((chars, tokens))
    sxy = sxx = 0.0
    means: dict[str, tuple[float, float]] = {}
    for agent, pairs in by_agent.items():
        mx = sum(c for c, _ in pairs) / len(pairs)
        my = sum(t for _, t in pairs) / len(pairs)
        means[agent] = (mx, my)
        sxy += sum((c - mx) * (t - my) for c, t in pairs)
        sxx += sum((c - mx) ** 2 for c, _ in pairs)
    if len(samples) < 3 or sxx <= 0 or sxy <= 0:
        return Ratio(DEFAULT_CHARS_PER_TOKEN, "default", 0, None)
    slope = sxy / sxx
    constant = {agent: my - slope * mx for agent, (mx, my) in means.items()}
    errors = [
        abs(chars * slope + constant[agent] - tokens) / tokens
        for agent, chars, tokens in samples
        if tokens
    ]
    return Ratio(1 / slope, "fitted", len(samples), sum(errors) / len(errors), constant)
