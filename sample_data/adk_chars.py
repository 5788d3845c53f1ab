"""The project's character definition of a model request, shared by the generators.

It depends on `google.genai.types` only, so that it runs under every google-adk
release a generator drives (sample_data/generate.py with the pinned 2.13.0,
tests/adk_releases/scenario.py with older ones in throwaway environments). It is the
oracle's own definition, written independently of the loaders' code; the loaders
size stored parts the same way and the tests compare the two.
"""

from __future__ import annotations

import json
from typing import Any

from google.genai import types


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def part_chars(part: types.Part | dict[str, Any]) -> int:
    """Characters of one content part.

    text or thought part: len(text); function_call: len(name) + len(JSON of
    args); function_response: len(name) + len(JSON of response); any other
    part: len(JSON of the part dump). JSON is compact (separators "," and ":")
    with ensure_ascii=False. The part is dumped with
    ``model_dump(mode="json", exclude_none=True)``.
    """
    dump = part if isinstance(part, dict) else part.model_dump(mode="json", exclude_none=True)
    if dump.get("text") is not None:
        return len(dump["text"])
    if "function_call" in dump:
        fc = dump["function_call"]
        return len(fc.get("name") or "") + len(dumps(fc.get("args") or {}))
    if "function_response" in dump:
        fr = dump["function_response"]
        return len(fr.get("name") or "") + len(dumps(fr.get("response") or {}))
    return len(dumps(dump))


def content_chars(content: types.Content | None) -> int:
    if content is None or not content.parts:
        return 0
    return sum(part_chars(p) for p in content.parts)


def system_instruction_chars(config: types.GenerateContentConfig | None) -> int:
    si = config.system_instruction if config else None
    if si is None:
        return 0
    if isinstance(si, str):
        return len(si)
    if isinstance(si, types.Content):
        return sum(len(p.text or "") for p in si.parts or [])
    if isinstance(si, types.Part):
        return len(si.text or "")
    return len(str(si))


def tools_chars(config: types.GenerateContentConfig | None) -> int:
    """len of the compact JSON of the request's tool declarations."""
    tools = config.tools if config else None
    if not tools:
        return 0
    return len(dumps([t.model_dump(mode="json", exclude_none=True) for t in tools]))
