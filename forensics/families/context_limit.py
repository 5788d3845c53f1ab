"""Is an error a context failure (the request did not fit the model's window), and which
sizes does its text give?

Providers word it differently; each pattern below is copied from a real error text:

- Gemini: "The input token count (1439860) exceeds the maximum number of tokens allowed
  (1048576)."
- Anthropic: "prompt is too long: 216230 tokens > 200000 maximum"
- OpenAI: "This model's maximum context length is 128000 tokens. However, you requested
  130512 tokens ..." (code `context_length_exceeded`)
- LiteLLM: its exception class `ContextWindowExceededError`, in `error_str` as
  "litellm.ContextWindowExceededError: ..." and in `error_information.error_class`
- Bedrock: "Input is too long for requested model."

`requested` is the request's own size as the text gives it (the figure a log carries at
failure); `limit` the model's maximum. Either may be missing: a match with no figure is
still a context failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# a count as providers print it (216230, 216,230, 1 439 860): groups of three, bounded,
# so a long run of digits cannot make the search quadratic
_NUMBER = r"(\d{1,3}(?:[,_ ]\d{3})+|\d{1,19})"

# (pattern, which group is the requested size, which the limit): first match wins
_SIZED = (
    (
        re.compile(
            rf"input token count \(?{_NUMBER}\)? exceeds the maximum[^(\d]*\(?{_NUMBER}", re.I
        ),
        1,
        2,
    ),
    (re.compile(rf"prompt is too long:?\s*{_NUMBER}\s*tokens?\s*>\s*{_NUMBER}", re.I), 1, 2),
    (
        re.compile(
            rf"maximum context length is {_NUMBER} tokens.*?(?:requested|resulted in) {_NUMBER}",
            re.I | re.S,
        ),
        2,
        1,
    ),
    (re.compile(rf"{_NUMBER}\s*tokens?\s*>\s*{_NUMBER}\s*(?:tokens?\s*)?maximum", re.I), 1, 2),
)
_MARKERS = re.compile(
    r"ContextWindowExceeded|context[_ ]length[_ ]exceeded|"
    r"context (?:window|length)[^.\n]{0,40}(?:exceed|too long|too large|maximum|limit)|"
    r"(?:exceed|too long|too large)[^.\n]{0,40}context (?:window|length)|"
    r"prompt is too long|exceeds the maximum number of tokens|input is too long|"
    r"maximum context length|too many (?:input )?tokens|token limit exceeded",
    re.I,
)
_LONGEST = 4000  # characters of error text searched: the sizes come first in every one


@dataclass(frozen=True)
class ContextError:
    requested: int | None  # the request's size in tokens, as the error text gives it
    limit: int | None  # the model's maximum, as the error text gives it


def _int(text: str) -> int:
    return int(re.sub(r"[,_ ]", "", text))


def parse(*texts: str | None) -> ContextError | None:
    """The context failure the texts (error code, class, message) describe, or None."""
    joined = "\n".join(t[:_LONGEST] for t in texts if t)
    if not joined:
        return None
    for pattern, requested, limit in _SIZED:
        found = pattern.search(joined)
        if found:
            return ContextError(_int(found.group(requested)), _int(found.group(limit)))
    if _MARKERS.search(joined):
        return ContextError(None, None)
    return None


def figure(logged: int | None, found: ContextError | None) -> int | None:
    """The size figure of a failure: the one a field logged, else the error text's."""
    if logged is not None:
        return logged
    return found.requested if found else None
