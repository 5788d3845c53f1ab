"""The chars-per-token ratio that turns stored characters into estimated tokens.

Fitted per model (each tokenizer has its own) as

    prompt_tokens = chars / ratio + constant[app, agent]

over the calls that have both: `chars` is the rebuilt window's visible content, the
constant what the stored events do not show (system instruction and tool schemas,
the same on every call of one agent). A constant is a count of tokens, so it is
kept at zero or above; a ratio outside a plausible range, a fit over too few calls,
or one whose mean error is large is not used: the default ratio is, and the note
says why.

Where ADK traced enough of a model's measured calls, the ratio comes from those alone
(`traced`): their system instruction and tools are known characters, so

    prompt_tokens = (window chars + system and tool chars) / ratio

has no unknown constant, and each agent's constant for its untraced calls is the
mean of its traced system and tool characters over that ratio.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_CHARS_PER_TOKEN = 3.0
MIN_CALLS = 5  # a slope and one constant per agent need a few more points than unknowns
# Tokenizers in use put 1 (CJK, code) to about 6 (plain English) characters in a token;
# a fit outside this range has found something else (a constant it cannot separate).
PLAUSIBLE = (1.0, 8.0)
MAX_MEAN_ERROR = 0.25  # of the fitted prompt tokens, as a fraction of measured

AgentKey = tuple[str, str]  # (app_name, agent)


@dataclass
class Ratio:
    """chars per token, and per (app, agent) the tokens the stored events do not show."""

    chars_per_token: float
    source: str  # traced | fitted | default
    calls: int  # calls the fit used
    mean_abs_error: float | None  # of the fitted prompt tokens, as a fraction of measured
    constant_tokens: dict[AgentKey, float] = field(default_factory=dict)
    note: str = ""  # why the default is used, when it is
    model: str = ""  # the model_version it was fitted for ("" when calls name none)

    def tokens(self, chars: int) -> int:
        return round(chars / self.chars_per_token)

    def constant(self, app: str, agent: str | None) -> float | None:
        return self.constant_tokens.get((app, agent or ""))


def fit_ratio(samples: Sequence[tuple[AgentKey, int, int]], model: str = "") -> Ratio:
    """Least squares with one slope and an intercept per agent, intercepts kept >= 0.

    `samples`: ((app, agent), window chars, measured prompt tokens). An agent whose
    free intercept would be negative gets intercept 0 (its line through the origin),
    and the slope is fitted again; at most one pass per agent.
    """
    by_agent: dict[AgentKey, list[tuple[int, int]]] = defaultdict(list)
    for agent, chars, tokens in samples:
        by_agent[agent].append((chars, tokens))

    def default(note: str) -> Ratio:
        return Ratio(DEFAULT_CHARS_PER_TOKEN, "default", 0, None, note=note, model=model)

    if len(samples) < MIN_CALLS:
        return default(f"{len(samples)} measured calls, fewer than {MIN_CALLS} to fit")
    means: dict[AgentKey, tuple[float, float]] = {}
    for agent, pairs in by_agent.items():
        mx = sum(c for c, _ in pairs) / len(pairs)
        my = sum(t for _, t in pairs) / len(pairs)
        means[agent] = (mx, my)
    at_zero: set[AgentKey] = set()
    for _ in range(len(by_agent) + 1):
        sxy = sxx = 0.0
        for agent, pairs in by_agent.items():
            mx, my = (0.0, 0.0) if agent in at_zero else means[agent]
            sxy += sum((c - mx) * (t - my) for c, t in pairs)
            sxx += sum((c - mx) ** 2 for c, _ in pairs)
        if sxx <= 0 or sxy <= 0:
            return default("measured tokens do not grow with the window's characters")
        slope = sxy / sxx
        constant = {
            agent: 0.0 if agent in at_zero else my - slope * mx for agent, (mx, my) in means.items()
        }
        negative = {agent for agent, value in constant.items() if value < 0}
        if not negative:
            break
        at_zero |= negative
    ratio = 1 / slope
    if not PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
        return default(
            f"the fit gave {ratio:.2f} chars per token, outside "
            f"{PLAUSIBLE[0]:g} to {PLAUSIBLE[1]:g}"
        )
    errors = [
        abs(chars * slope + constant[agent] - tokens) / tokens
        for agent, chars, tokens in samples
        if tokens
    ]
    error = sum(errors) / len(errors)
    if error > MAX_MEAN_ERROR:
        return default(f"the fit's mean error is {error:.1%} (over {MAX_MEAN_ERROR:.0%})")
    return Ratio(ratio, "fitted", len(samples), error, constant, model=model)


TracedSample = tuple[AgentKey, int, int, int]  # agent, window chars, system+tools chars, tokens


def fit_traced(samples: Sequence[TracedSample], model: str = "") -> Ratio | None:
    """The ratio of a model's traced, measured calls (least squares through the origin
    over all their characters), or None when they are too few or do not fit."""
    if len(samples) < MIN_CALLS:
        return None
    sxy = sum((w + st) * t for _, w, st, t in samples)
    sxx = sum((w + st) ** 2 for _, w, st, _ in samples)
    if sxx <= 0 or sxy <= 0:
        return None
    slope = sxy / sxx
    ratio = 1 / slope
    if not PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
        return None
    errors = [abs((w + st) * slope - t) / t for _, w, st, t in samples if t]
    error = sum(errors) / len(errors) if errors else 0.0
    if error > MAX_MEAN_ERROR:
        return None
    by_agent: dict[AgentKey, list[int]] = defaultdict(list)
    for agent, _, system_tools, _ in samples:
        by_agent[agent].append(system_tools)
    constants = {agent: sum(v) / len(v) * slope for agent, v in by_agent.items()}
    return Ratio(ratio, "traced", len(samples), error, constants, model=model)
