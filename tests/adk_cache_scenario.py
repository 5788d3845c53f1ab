#!/usr/bin/env python
"""One session the real google.adk Runner (the installed release) writes with four
prompt-cache breaks planted, for tests/test_cache.py:

    python tests/adk_cache_scenario.py OUT_DIR

Writes OUT_DIR/sessions.db (`DatabaseSessionService` SQLite) and OUT_DIR/trace.otlp.json
(ADK's own spans, `call_llm` with each request as sent). App `cafe`, user `u`, session
`s-cache`; one agent, one model call a turn, seven turns:

1. and 2. the same system instruction and tools: the second call reads the first's
   prompt from the cache;
3. the instruction holds the time, which moved on (a `system` break);
4. a tool is added to the agent (a `tools` break);
5. after a pause of ten minutes, longer than the cache lives (a `ttl` break);
6. soon after: read whole again;
7. a callback rewrites the session's first message in the request (a `history` break).

The scripted model reports the usage a provider with an implicit prefix cache would:
each call's cached tokens are the previous prompt, but where the plan breaks it. Times
are ADK's own clock (its time provider), moved two seconds a call and ten minutes for
the pause. Nothing goes over the network.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# the tracer provider is set before ADK is imported, as scenario.py does
# isort: off
from tests.adk_releases.scenario import SPANS, otlp_json  # noqa: E402

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.platform.time import set_time_provider  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import DatabaseSessionService  # noqa: E402
from google.genai import types  # noqa: E402

# isort: on

MODEL = "gemini-2.5-flash"
CLOCK = {"now": 1_794_823_200.0}  # 2026-11-16 10:00:00 UTC
STAMP = {"text": "10:00"}
# per call: (prompt tokens, cached tokens): the planted breaks read nothing
PLAN = [(20_000, 0), (20_100, 20_000), (20_200, 0), (20_400, 0), (20_500, 0), (20_600, 20_500),
        (20_700, 1_000)]
CALLS: list[dict[str, Any]] = []


def lookup(item: str) -> dict[str, Any]:
    """Looks an item up on the menu."""
    return {"item": item, "price": 4}


def order(item: str) -> dict[str, Any]:
    """Orders an item."""
    return {"item": item, "ordered": True}


def rewrite_first_message(callback_context: Any, llm_request: LlmRequest) -> None:
    """Edits the session's first message in the request (a guard rewriting history)."""
    llm_request.contents[0].parts[0].text = "hello, edited"


def instruction(_context: Any) -> str:
    return f"You take orders at a cafe. The time is {STAMP['text']} UTC. Be brief."


class Scripted(BaseLlm):
    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        prompt, cached = PLAN[len(CALLS)]
        CALLS.append({"tools": sorted(llm_request.tools_dict)})
        CLOCK["now"] += 2
        text = f"answer {len(CALLS)}"
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=text)]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=prompt, cached_content_token_count=cached,
                candidates_token_count=5, total_token_count=prompt + 5,
            ),
            model_version=MODEL,
        )  # fmt: skip


def now() -> float:
    """ADK's clock: a millisecond on at every reading, so that no two events tie."""
    CLOCK["now"] += 0.001
    return CLOCK["now"]


async def run(out: Path) -> None:
    set_time_provider(now)
    service = DatabaseSessionService(f"sqlite+aiosqlite:///{out / 'sessions.db'}")
    agent = LlmAgent(name="barista", model=Scripted(model=MODEL), instruction=instruction,
                     tools=[lookup])  # fmt: skip
    runner = Runner(app_name="cafe", agent=agent, session_service=service)
    await service.create_session(app_name="cafe", user_id="u", session_id="s-cache")
    for n, text in enumerate(["hi", "a coffee", "and a tea", "order it", "still there?",
                              "thanks", "bye"], start=1):  # fmt: skip
        if n == 3:
            STAMP["text"] = "10:07"  # the time in the instruction moved on
        if n == 4:
            agent.tools = [lookup, order]  # a tool added mid-session
        if n == 5:
            CLOCK["now"] += 600  # a pause longer than the cache lives
        if n == 7:
            agent.before_model_callback = rewrite_first_message  # history rewritten
        CLOCK["now"] += 1
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in runner.run_async(user_id="u", session_id="s-cache",
                                        new_message=message):  # fmt: skip
            pass
    await service.close() if hasattr(service, "close") else None


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(out))
    (out / "trace.otlp.json").write_text(json.dumps(otlp_json(SPANS)))
    (out / "calls.json").write_text(json.dumps(CALLS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
