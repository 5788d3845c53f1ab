#!/usr/bin/env python
"""One multi-agent scenario, run by the real google.adk Runner of any release 1.16+.

Run by `build.py` inside a throwaway environment that has only the release under
test installed (and this repository on disk, for `sample_data/adk_chars.py`):

    python tests/adk_releases/scenario.py OUT_DIR

Writes into OUT_DIR:

- `sessions.db`: a `DatabaseSessionService` SQLite file as that release writes it
  (1.x: schema V0, pickled actions; 2.x: schema V1, JSON `event_data`);
- `calls.jsonl`: the oracle, one line per model request: what the scripted model
  really received (sizes by the project's character definition, the function
  responses by their `result_id` marker, the roles), keyed by the stored event;
- `trace.otlp.json`: ADK's own OpenTelemetry spans of the run, encoded as OTLP JSON
  (`ExportTraceServiceRequest`, hex ids, as a collector's file exporter writes them);
- `meta.json`: the release, the schema and what the run produced.

The scenario (app `shop`): an orchestrator with two specialists.

- `relay` session: turn 1 hands over to `orders_specialist`, which calls two tools
  and answers with a thought and a text; turn 2 calls a tool and then the provider
  refuses the next request (`RESOURCE_EXHAUSTED`, no usage: a failed call); turn 3
  hands back to the orchestrator, which then sees the specialist's work relayed.
- `parallel` session: `shipping_specialist` calls three tools in one response.
- `compaction` session: sliding-window compaction every 2 invocations, overlap 1,
  with a scripted summarizer; four turns with a tool call each.

Nothing goes over the network. Times and ids are the release's own (real clock,
random ids), so a re-run gives the same shape, not the same bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import sqlite3
import sys
import warnings
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

SPANS: list[ReadableSpan] = []


class _Collect(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        SPANS.extend(spans)
        return SpanExportResult.SUCCESS


_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_Collect()))
trace.set_tracer_provider(_provider)

import google.adk  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps.app import App, EventsCompactionConfig  # noqa: E402
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import DatabaseSessionService, InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_data"))
from adk_chars import (  # noqa: E402
    content_chars,
    dumps,
    system_instruction_chars,
    tools_chars,
)

try:  # the model capability API of newer releases
    from google.adk.models._capabilities import LlmCapabilities
except ImportError:
    LlmCapabilities = None

VERSION = google.adk.__version__
MAJOR = int(VERSION.split(".")[0])
APP = "shop"
MODEL = "scripted-shop-model"
CHARS_PER_TOKEN = 3.6
CALLS: list[dict[str, Any]] = []
RESULT_IDS: dict[str, dict[str, Any]] = {}  # result_id marker -> the stored response
CURRENT: dict[str, str | None] = {"session": None}
OUTPUTS = ("sessions.db", "calls.jsonl", "result_ids.json", "trace.otlp.json", "meta.json")


def tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


# --------------------------------------------------------------------------
# Tools: each result carries a `result_id` marker the oracle finds in requests
# --------------------------------------------------------------------------

_counter = {"n": 0}


def _marked(session: str, body: dict[str, Any]) -> dict[str, Any]:
    _counter["n"] += 1
    return {"result_id": f"res-{session}-{_counter['n']:03d}", **body}


def _rows(kind: str, n: int, width: int) -> list[dict[str, Any]]:
    filler = "lorem ipsum dolor sit amet consectetur " * (width // 39 + 1)
    return [{"id": f"{kind}-{i:04d}", "note": filler[: width - 20 - i % 7]} for i in range(n)]


def get_orders(customer_id: str) -> dict[str, Any]:
    """Lists the customer's orders, newest first."""
    return _marked("relay", {"customer_id": customer_id, "orders": _rows("ord", 24, 180)})


def get_order(order_id: str) -> dict[str, Any]:
    """One order in full."""
    return _marked("relay", {"order_id": order_id, "state": "shipped", "lines": _rows("ln", 4, 90)})


def get_returns(customer_id: str) -> dict[str, Any]:
    """The customer's returns."""
    return _marked("relay", {"customer_id": customer_id, "returns": _rows("ret", 12, 160)})


def get_parcel(tracking: str) -> dict[str, Any]:
    """Where a parcel is."""
    session = "compaction" if tracking.startswith("C") else "parallel"
    return _marked(session, {"tracking": tracking, "scans": _rows("scan", 6, 120)})


# --------------------------------------------------------------------------
# The scripted model: decides from the request ADK really built, records it
# --------------------------------------------------------------------------


def _latest_user_text(contents: list[types.Content]) -> tuple[int, str]:
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        texts = [p.text for p in c.parts or [] if p.text and not p.thought]
        if (
            c.role == "user"
            and texts
            and not texts[0].startswith("For context:")
            and not any(p.function_response for p in c.parts or [])
        ):
            return i, " ".join(texts)
    return -1, ""


def _turn_responses(contents: list[types.Content], start: int) -> list[str]:
    return [
        p.function_response.name or ""
        for c in contents[start + 1 :]
        for p in c.parts or []
        if p.function_response and p.function_response.name != "transfer_to_agent"
    ]


def _step(agent: str, contents: list[types.Content]) -> tuple[list[types.Part], str | None]:
    """The parts the agent answers with, or an error code for a refused request."""
    at, text = _latest_user_text(contents)
    done = _turn_responses(contents, at)
    call = lambda name, **args: types.Part(  # noqa: E731
        function_call=types.FunctionCall(name=name, args=args)
    )
    if agent == "orchestrator":
        if "back to the front desk" in text:
            relayed = sum(
                1
                for c in contents
                if (c.parts or [None])[0]
                and c.parts[0].text
                and c.parts[0].text.startswith("For context:")
            )
            return [types.Part(text=f"Front desk here: I read {relayed} relayed messages.")], None
        target = "shipping_specialist" if "parcel" in text else "orders_specialist"
        return [call("transfer_to_agent", agent_name=target)], None
    if agent == "orders_specialist":
        if "back to the front desk" in text:
            return [call("transfer_to_agent", agent_name="orchestrator")], None
        if "returns" in text:
            if not done:
                return [call("get_returns", customer_id="c-77")], None
            return [], "RESOURCE_EXHAUSTED"
        if not done:
            return [call("get_orders", customer_id="c-77")], None
        if done == ["get_orders"]:
            return [call("get_order", order_id="ord-0000")], None
        return [
            types.Part(
                text="The customer wants the latest orders; ord-0000 shipped.", thought=True
            ),
            types.Part(text="Your latest order ord-0000 has shipped; 23 more are on file."),
        ], None
    # shipping_specialist
    if not done:
        found = [w.strip(",.?") for w in text.split() if w[:1] in "PC" and w[1:2].isdigit()]
        return [call("get_parcel", tracking=t) for t in found], None
    return [types.Part(text=f"I looked up {len(done)} parcel(s); all are on their way.")], None


def _record(agent: str, kind: str, req: LlmRequest) -> dict[str, Any]:
    by_role: dict[str, int] = {}
    result_ids: list[str] = []
    names: list[str] = []
    for c in req.contents:
        by_role[c.role or ""] = by_role.get(c.role or "", 0) + content_chars(c)
        for p in c.parts or []:
            if p.function_response:
                names.append(p.function_response.name or "")
                rid = (p.function_response.response or {}).get("result_id")
                if rid:
                    result_ids.append(rid)
    content = sum(by_role.values())
    record = {
        "call_index": len(CALLS),
        "session_id": CURRENT["session"],
        "agent": agent,
        "kind": kind,
        "roles": [c.role for c in req.contents],
        "function_response_result_ids": result_ids,
        "function_response_names": names,
        "chars_by_role": by_role,
        "content_chars": content,
        "system_instruction_chars": system_instruction_chars(req.config),
        "tools_chars": tools_chars(req.config),
    }
    record["prompt_token_count"] = tokens(
        content + record["system_instruction_chars"] + record["tools_chars"]
    )
    CALLS.append(record)
    return record


class ScriptedLlm(BaseLlm):
    agent_name: str
    kind: str = "agent"

    if LlmCapabilities is not None:

        @property
        def capabilities(self) -> Any:
            return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        record = _record(self.agent_name, self.kind, llm_request)
        meta = {"oracle_call": record["call_index"]}
        if self.kind == "summarizer":
            prompt = llm_request.contents[0].parts[0].text or ""
            parts = [types.Part(text=f"Summary of {prompt.count('user:')} user messages.")]
            error = None
        else:
            parts, error = _step(self.agent_name, llm_request.contents)
        if error:
            record.update(usage_reported=False, error_code=error)
            yield LlmResponse(
                error_code=error,
                error_message="Quota exceeded for requests per minute.",
                custom_metadata=meta,
            )
            return
        content = types.Content(role="model", parts=parts)
        out = tokens(content_chars(content))
        record.update(usage_reported=True, candidates_token_count=out)
        yield LlmResponse(
            content=content,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=record["prompt_token_count"],
                candidates_token_count=out,
                total_token_count=record["prompt_token_count"] + out,
            ),
            model_version=MODEL,
            custom_metadata=meta,
        )


def root_agent() -> LlmAgent:
    orders = LlmAgent(
        name="orders_specialist",
        description="Orders and returns.",
        model=ScriptedLlm(model=MODEL, agent_name="orders_specialist"),
        instruction="You answer questions about the customer's orders and returns.",
        tools=[get_orders, get_order, get_returns],
    )
    shipping = LlmAgent(
        name="shipping_specialist",
        description="Parcels and deliveries.",
        model=ScriptedLlm(model=MODEL, agent_name="shipping_specialist"),
        instruction="You track parcels. Look up several parcels at once.",
        tools=[get_parcel],
    )
    return LlmAgent(
        name="orchestrator",
        description="Front desk.",
        model=ScriptedLlm(model=MODEL, agent_name="orchestrator"),
        instruction="Hand the customer to the right specialist.",
        sub_agents=[orders, shipping],
    )


SESSIONS = [
    (
        "relay",
        "u-1",
        False,
        [
            "Can you show me my latest orders?",
            "And what about my returns?",
            "Please send me back to the front desk.",
        ],
    ),
    ("parallel", "u-2", False, ["Where is my parcel? P1001, P1002 and P1003."]),
    (
        "compaction",
        "u-3",
        True,
        [f"Where is my parcel C{n}00{n}?" for n in range(1, 5)],
    ),
]


async def run(out: Path) -> dict[str, Any]:
    db = out / "sessions.db"
    url = f"sqlite:///{db}" if MAJOR < 2 else f"sqlite+aiosqlite:///{db}"
    database = DatabaseSessionService(url)
    saved: list[str] = []
    for session_id, user, compaction, messages in SESSIONS:
        config, service = None, database
        if compaction and MAJOR < 2:
            # 1.x's DatabaseSessionService reads a stored compaction back as a dict
            # and the next request fails (`'dict' object has no attribute
            # 'start_timestamp'`): run it in memory and save it as `adk run
            # --save_session` does.
            service = InMemorySessionService()
        if compaction:
            config = EventsCompactionConfig(
                compaction_interval=2,
                overlap_size=1,
                summarizer=LlmEventSummarizer(
                    llm=ScriptedLlm(model=MODEL, agent_name="summarizer", kind="summarizer")
                ),
            )
        app = App(name=APP, root_agent=root_agent(), events_compaction_config=config)
        runner = Runner(app=app, session_service=service)
        await service.create_session(app_name=APP, user_id=user, session_id=session_id)
        first, CURRENT["session"] = len(CALLS), session_id
        for message in messages:
            async for _ in runner.run_async(
                user_id=user,
                session_id=session_id,
                new_message=types.Content(role="user", parts=[types.Part(text=message)]),
            ):
                pass
            await _settle()  # the user reads the answer: 1.x compacts in a background task
        if hasattr(runner, "close"):
            await runner.close()  # waits for a compaction still running
        stored = await service.get_session(app_name=APP, user_id=user, session_id=session_id)
        _link(stored.events, CALLS[first:])
        if service is not database:
            name = f"{session_id}.session.json"
            (out / name).write_text(stored.model_dump_json(indent=2, exclude_none=True))
            saved.append(name)
    if hasattr(database, "close"):
        await database.close()
    return {"schema": _schema(db), "saved_json": saved}


async def _settle() -> None:
    current = asyncio.current_task()
    while pending := [t for t in asyncio.all_tasks() if t is not current and not t.done()]:
        await asyncio.wait(pending, timeout=5)


def _link(events: list[Any], records: list[dict[str, Any]]) -> None:
    """Each record gets the id of the stored event its response became."""
    by_call = {
        (e.custom_metadata or {}).get("oracle_call"): e
        for e in events
        if "oracle_call" in (e.custom_metadata or {})
    }
    for e in events:
        for p in (e.content.parts if e.content else None) or []:
            fr = p.function_response
            rid = (fr.response or {}).get("result_id") if fr else None
            if rid:
                RESULT_IDS[rid] = {"function_call_id": fr.id, "tool": fr.name, "event_id": e.id}
    compactions = [e for e in events if e.actions and e.actions.compaction]
    summaries = iter(compactions)
    for record in records:
        if record["kind"] == "summarizer":
            event = next(summaries, None)  # compaction events keep no custom_metadata
        else:
            event = by_call.get(record["call_index"])
        record["event_id"] = event.id if event is not None else None
        record["invocation_id"] = event.invocation_id if event is not None else None


def _schema(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        columns = {row[1] for row in con.execute("PRAGMA table_info(events)")}
    finally:
        con.close()
    return "V1" if "event_data" in columns else "V0"


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list | tuple):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _attributes(attrs: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()]


def otlp_json(spans: list[ReadableSpan]) -> dict[str, Any]:
    """ExportTraceServiceRequest in the OTLP/JSON encoding: lowerCamelCase fields, hex
    trace and span ids, 64-bit integers as strings, enums as integers."""
    scopes: dict[tuple[str, str], list[dict[str, Any]]] = {}
    resource = spans[0].resource.attributes if spans else {}
    for s in spans:
        ctx = s.get_span_context()
        body: dict[str, Any] = {
            "traceId": f"{ctx.trace_id:032x}",
            "spanId": f"{ctx.span_id:016x}",
            "name": s.name,
            "kind": s.kind.value + 1,  # SDK INTERNAL=0; OTLP SPAN_KIND_INTERNAL=1
            "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time),
            "attributes": _attributes(s.attributes),
            "status": {"code": s.status.status_code.value} if s.status.status_code.value else {},
        }
        if s.parent is not None:
            body["parentSpanId"] = f"{s.parent.span_id:016x}"
        scope = s.instrumentation_scope
        key = (scope.name if scope else "", (scope.version or "") if scope else "")
        scopes.setdefault(key, []).append(body)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [
                    {"scope": {"name": n, **({"version": v} if v else {})}, "spans": found}
                    for (n, v), found in scopes.items()
                ],
            }
        ]
    }


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.session.json"), *(out / n for n in OUTPUTS)]:
        old.unlink(missing_ok=True)
    logging.basicConfig(level=logging.ERROR)
    warnings.simplefilter("ignore")
    facts = asyncio.run(run(out))
    _provider.force_flush()
    with (out / "calls.jsonl").open("w", encoding="utf-8") as f:
        for record in CALLS:
            f.write(dumps(record) + "\n")
    (out / "result_ids.json").write_text(json.dumps(RESULT_IDS, indent=1, sort_keys=True) + "\n")
    (out / "trace.otlp.json").write_text(dumps(otlp_json(SPANS)) + "\n", encoding="utf-8")
    con = sqlite3.connect(out / "sessions.db")
    con.execute("VACUUM")
    con.close()
    meta = {
        "adk_version": VERSION,
        "schema": facts["schema"],
        "saved_json": facts["saved_json"],
        "calls": len(CALLS),
        "failed_calls": sum(1 for c in CALLS if c.get("error_code")),
        "summarizer_calls": sum(1 for c in CALLS if c["kind"] == "summarizer"),
        "call_llm_spans": sum(1 for s in SPANS if s.name == "call_llm"),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
