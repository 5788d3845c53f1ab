"""A second, harder generated scenario for the request-reconstruction oracle.

``generate_stress(out_dir)`` drives google.adk's real ``Runner`` (google-adk
2.13.0) with the scripted model of ``sample_data/generate.py`` (its
``ScriptedLlm``, fake clock, id provider and character definitions are reused)
and writes into ``out_dir``:

- ``stress.db``: ``DatabaseSessionService("sqlite+aiosqlite:///...")``, schema V1;
- ``calls.jsonl`` and ``result_ids.json``: the oracle sidecar, in the format of
  ``sample_data/oracle`` (one record per model call: what the request really
  held; ``event_id`` is the stored response event, or the compaction event for
  a summarizer call).

One session (``stress``, user ``u-2001``, app ``stress_store``), two agents:
``front_desk`` (root) and its sub-agent ``warehouse``, eight user turns:

0. front_desk transfers to warehouse (its response carries a *signed* thought);
   warehouse makes four parallel calls, one result holding 50 inbound-shipment
   records, then answers with a plain thought, text and a transfer back;
   front_desk answers with all of that relayed to it as ``For context:`` text.
   After the turn, token-threshold compaction fires (prompt >= threshold after
   a single invocation, so not the sliding window).
1. front_desk: three parallel calls (a plain thought beside them). After the
   turn, a sliding-window summary whose range contains the first one.
2. front_desk -> warehouse; warehouse calls ``reserve_item`` and
   ``start_recount`` in parallel; ``start_recount`` raises. ADK stores the
   finished sibling's response, then an error event (``error_code`` =
   the exception's class name, no content), and the invocation ends. The
   ``start_recount`` call never gets a response.
3. The user asks again; ADK routes to warehouse (it spoke last), whose request
   holds ``reserve_item`` but not the orphaned ``start_recount`` call part.
   warehouse -> front_desk, which issues a voucher. Sliding-window summary
   after it, overlapping the previous one partially.
4. front_desk -> warehouse (50 records again, then one more call) -> front_desk.
   Two token-threshold compactions run *before model calls, mid-turn* (ADK's
   compaction request processor): one for warehouse, one for front_desk; each
   rolls the previous summary up, so its range contains the previous range.
5. front_desk calls a ``LongRunningFunctionTool`` that returns nothing: the
   invocation ends with the call pending; ADK keeps that call in later requests
   (it is not dropped as an orphan), and compaction never passes it.
6. front_desk's response is one plain thought part, ``finish_reason``
   MAX_TOKENS (out of tokens while thinking): stored, never sent again.
7. front_desk answers with text.

Every compaction is followed by an agent call. Deterministic (seeded data, fake
clock, seeded ids): a re-run writes the same files. Runs in about two seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sys
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.models.llm_request import LlmRequest
from google.adk.platform import set_random_provider
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.platform._random import reset_random_provider
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.session import Session
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
GENERATE_PY = ROOT / "sample_data" / "generate.py"


gen: Any = load_script(GENERATE_PY, "_forensics_sample_generate")

SEED = 4242
APP_NAME = "stress_store"
SESSION_ID = "stress"
USER_ID = "u-2001"
CUSTOMER_ID = "C-2001"
START = datetime(2026, 10, 23, 14, 0, 0, tzinfo=UTC)
DB_FILE = "stress.db"
FRONT = "front_desk"
WAREHOUSE = "warehouse"
SWEATER = "SW-MRN-M"
JACKET = "JK-RNR-L"
CITY = "Leipzig"
INBOUND_RECORDS = 50
LEDGER_ENTRIES = 36

# Compaction: token-threshold (checked before every model call and after every
# invocation) and sliding-window (after an invocation, when the token trigger
# did not fire).
TOKEN_THRESHOLD = 5_000
EVENT_RETENTION_SIZE = 3
COMPACTION_INTERVAL = 2
OVERLAP_SIZE = 1

SIGNATURE = b"stress-thought-signature-v1"


CRASH_TURN = 2  # the turn whose parallel batch has a tool that raises


class ToolCrash(RuntimeError):
    """What the crashing tool raises; the driver expects it in CRASH_TURN only."""


# --------------------------------------------------------------------------
# Seeded data
# --------------------------------------------------------------------------


@dataclass
class StressData:
    inbound: list[dict[str, Any]]
    ledger: list[dict[str, Any]]
    profile: dict[str, Any]
    tickets: list[dict[str, Any]]
    bins: dict[str, list[dict[str, Any]]]
    stock: dict[str, dict[str, Any]]


def build_data(seed: int) -> StressData:
    rng = random.Random(seed)
    skus = [p[0] for p in gen.PRODUCTS]
    inbound = []
    eta = START + timedelta(hours=6)
    for _ in range(INBOUND_RECORDS):
        eta += timedelta(hours=rng.randint(1, 9), minutes=rng.randint(0, 59))
        inbound.append(
            {
                "asn": f"ASN-{rng.randint(100000, 999999)}",
                "supplier": f"{rng.choice(gen.LAST_NAMES)} Textiles",
                "sku": f"{rng.choice(skus)}-{rng.choice(['S', 'M', 'L'])}",
                "quantity": rng.randint(6, 240),
                "eta": eta.isoformat().replace("+00:00", "Z"),
                "carrier": rng.choice(gen.CARRIERS),
                "tracking_number": gen.tracking_number(rng),
                "dock": f"D{rng.randint(1, 12):02d}",
                "status": rng.choice(["booked", "in_transit", "at_gate", "delayed"]),
                "note": gen.sentence(rng, 8, 16),
            }
        )
    inbound[7]["sku"] = SWEATER  # the sweater is on its way
    ledger = []
    balance = 0
    when = START - timedelta(days=400)
    for _ in range(LEDGER_ENTRIES):
        when += timedelta(days=rng.randint(3, 15))
        points = rng.choice([120, 80, 45, -200, 60, 30, 150, -100])
        balance = max(0, balance + points)
        ledger.append(
            {
                "at": when.date().isoformat(),
                "points": points,
                "balance": balance,
                "order_id": f"ORD-{when:%y%m%d}-{rng.randint(10000, 99999)}",
                "memo": gen.sentence(rng, 6, 12),
            }
        )
    profile = {
        "customer_id": CUSTOMER_ID,
        "name": "Femi Lindqvist",
        "tier": "gold",
        "member_since": "2021-03-14",
        "address": gen.address(rng, "Femi Lindqvist"),
        "preferences": gen.paragraph(rng, 3),
    }
    tickets = [
        {
            "ticket_id": f"T-{rng.randint(10000, 99999)}",
            "opened": (START - timedelta(days=d)).date().isoformat(),
            "subject": subject,
            "history": gen.paragraph(rng, 4),
        }
        for d, subject in ((2, "Sweater out of stock in the app"), (9, "Late refund"))
    ]
    bins = {
        sku: [
            {
                "aisle": rng.randint(1, 40),
                "shelf": rng.choice("ABCDEF"),
                "bin": rng.randint(1, 30),
                "quantity": rng.randint(0, 12),
                "last_counted": (START - timedelta(days=rng.randint(1, 30))).date().isoformat(),
            }
            for _ in range(3)
        ]
        for sku in (SWEATER, JACKET)
    }
    stock = {
        sku: {
            "on_hand": sum(b["quantity"] for b in bins[sku]),
            "reserved": rng.randint(0, 3),
            "warehouse": CITY,
        }
        for sku in (SWEATER, JACKET)
    }
    return StressData(inbound, ledger, profile, tickets, bins, stock)


# --------------------------------------------------------------------------
# Run context and tools
# --------------------------------------------------------------------------


@dataclass
class StressContext(gen.RunContext):  # type: ignore[misc,name-defined]
    turn: int = 0
    turn_first_call: int = 0
    thoughts: dict[int, list[types.Part]] = field(default_factory=dict)
    finish_reasons: dict[int, types.FinishReason] = field(default_factory=dict)
    stress: StressData | None = None


LATENCIES = {
    "get_stock_level": 0.06,
    "get_bin_location": 0.11,
    "list_inbound_shipments": 0.42,
    "get_customer_profile": 0.05,
    "get_loyalty_ledger": 0.31,
    "get_open_tickets": 0.09,
    "reserve_item": 0.18,
    "issue_voucher": 0.07,
    "request_manager_approval": 0.03,
}


def build_tools(ctx: StressContext) -> dict[str, Any]:
    data = ctx.stress
    assert data is not None

    def finish(tool: str, payload: dict[str, Any]) -> dict[str, Any]:
        ctx.clock.tool_done(LATENCIES[tool])
        return {"status": "success", "result_id": ctx.next_result_id(tool), **payload}

    async def get_stock_level(sku: str) -> dict:
        """Returns on-hand and reserved units of one SKU.

        Args:
          sku: The SKU with its size, e.g. SW-MRN-M.
        """
        s = data.stock[sku]
        return finish(
            "get_stock_level",
            {"sku": sku, **s, "available": max(0, s["on_hand"] - s["reserved"])},
        )

    async def get_bin_location(sku: str) -> dict:
        """Returns the warehouse bins holding one SKU.

        Args:
          sku: The SKU with its size.
        """
        return finish("get_bin_location", {"sku": sku, "bins": data.bins[sku]})

    async def list_inbound_shipments(city: str) -> dict:
        """Lists the inbound supplier shipments of a warehouse, by ETA.

        Args:
          city: The warehouse city.
        """
        return finish(
            "list_inbound_shipments",
            {"city": city, "total": len(data.inbound), "shipments": data.inbound},
        )

    async def get_customer_profile(customer_id: str) -> dict:
        """Returns the customer's profile.

        Args:
          customer_id: The customer id.
        """
        return finish("get_customer_profile", {"profile": data.profile})

    async def get_loyalty_ledger(customer_id: str) -> dict:
        """Returns every loyalty-points movement of the customer.

        Args:
          customer_id: The customer id.
        """
        return finish(
            "get_loyalty_ledger",
            {
                "customer_id": customer_id,
                "balance": data.ledger[-1]["balance"],
                "entries": data.ledger,
            },
        )

    async def get_open_tickets(customer_id: str) -> dict:
        """Returns the customer's open support tickets.

        Args:
          customer_id: The customer id.
        """
        return finish("get_open_tickets", {"customer_id": customer_id, "tickets": data.tickets})

    async def reserve_item(sku: str, quantity: int) -> dict:
        """Reserves units of a SKU for a customer.

        Args:
          sku: The SKU with its size.
          quantity: How many units.
        """
        return finish(
            "reserve_item",
            {"sku": sku, "quantity": quantity, "reservation_id": f"RSV-{sku}-{quantity:02d}"},
        )

    async def start_recount(sku: str) -> dict:
        """Asks the warehouse floor to recount the bins of a SKU.

        Args:
          sku: The SKU with its size.
        """
        # Let the sibling calls of the batch finish first, then fail the way a
        # tool whose backend is down fails: with an exception, not a result.
        for _ in range(3):
            await asyncio.sleep(0)
        raise ToolCrash(f"handheld scanner service unavailable while recounting {sku}")

    async def issue_voucher(customer_id: str, amount_eur: float, reason: str) -> dict:
        """Issues a goodwill voucher.

        Args:
          customer_id: The customer id.
          amount_eur: The voucher value in EUR.
          reason: Why the voucher is issued.
        """
        return finish(
            "issue_voucher",
            {"customer_id": customer_id, "amount_eur": amount_eur, "code": "GW-7731-FEMI"},
        )

    def request_manager_approval(ticket_id: str, amount_eur: float) -> None:
        """Asks a manager to approve a refund; the answer comes back later.

        Args:
          ticket_id: The support ticket.
          amount_eur: The refund to approve.
        """
        ctx.clock.tool_done(LATENCIES["request_manager_approval"])
        return None  # pending: the result would be posted back by the client

    return {
        f.__name__: f
        for f in (
            get_stock_level,
            get_bin_location,
            list_inbound_shipments,
            get_customer_profile,
            get_loyalty_ledger,
            get_open_tickets,
            reserve_item,
            start_recount,
            issue_voucher,
            request_manager_approval,
        )
    }


# --------------------------------------------------------------------------
# The scripts
# --------------------------------------------------------------------------

TURNS = [
    # 0: front_desk -> warehouse (4 parallel calls) -> front_desk
    f"Hi, this is Femi ({CUSTOMER_ID}). Is the merino sweater {SWEATER} back in stock, "
    f"and when does the next delivery reach {CITY}?",
    # 1: front_desk, 3 parallel calls
    "And what is on my loyalty account? Do I still have open tickets?",
    # 2: front_desk -> warehouse; a parallel batch whose second tool crashes
    "Please reserve one sweater for me and have that shelf recounted, "
    "the app showed zero yesterday.",
    # 3: warehouse (it spoke last) -> front_desk
    "Hello? Did that go through?",
    # 4: front_desk -> warehouse -> front_desk again
    f"Could you send me the whole inbound schedule for {CITY} once more?",
    # 5: front_desk, a long-running call that stays pending
    "The late refund on my other ticket is still open, can a manager approve it?",
    # 6: front_desk, a response of one plain thought (out of tokens)
    "Thanks. Please recap everything we did today.",
    # 7: front_desk, text only
    "Hello? The recap, please.",
]


def _step_index(ctx: StressContext, agent: str) -> int:
    """How many calls this agent made earlier in the current turn."""
    return (
        sum(
            1
            for c in ctx.calls[ctx.turn_first_call :]
            if c["agent"] == agent and c["kind"] == "agent"
        )
        - 1
    )


def _responses(view: Any) -> dict[str, dict[str, Any]]:
    """Function responses in the request (own calls only), by tool name, last wins."""
    out: dict[str, dict[str, Any]] = {}
    for c in view.contents:
        for p in c.parts or []:
            if p.function_response:
                out[p.function_response.name or ""] = dict(p.function_response.response or {})
    return out


def _think(ctx: StressContext, text: str, *, signed: bool) -> None:
    part = types.Part(text=text, thought=True)
    if signed:
        part.thought_signature = SIGNATURE
    ctx.thoughts.setdefault(len(ctx.calls) - 1, []).append(part)


def _transfer(agent: str) -> tuple[str, dict[str, Any]]:
    return ("transfer_to_agent", {"agent_name": agent})


def front_desk_script(view: Any, ctx: StressContext) -> Any:
    step = _step_index(ctx, FRONT)
    turn = ctx.turn
    seen = _responses(view)
    if turn == 0:
        if step == 0:
            _think(ctx, "Stock and inbound questions belong to the warehouse.", signed=True)
            return gen.Step(calls=[_transfer(WAREHOUSE)])
        return gen.Step(
            text="The warehouse has checked the sweater and the inbound schedule for you; "
            "anything else I can do?"
        )
    if turn == 1:
        if step == 0:
            _think(ctx, "Profile, ledger and tickets are independent: ask at once.", signed=False)
            return gen.Step(
                calls=[
                    ("get_customer_profile", {"customer_id": CUSTOMER_ID}),
                    ("get_loyalty_ledger", {"customer_id": CUSTOMER_ID}),
                    ("get_open_tickets", {"customer_id": CUSTOMER_ID}),
                ]
            )
        ledger, tickets = seen["get_loyalty_ledger"], seen["get_open_tickets"]
        return gen.Step(
            text=f"You have {ledger['balance']} points from {len(ledger['entries'])} movements, "
            f"and {len(tickets['tickets'])} open tickets: "
            + "; ".join(f"{t['ticket_id']} ({t['subject']})" for t in tickets["tickets"])
            + "."
        )
    if turn == 2:
        return gen.Step(calls=[_transfer(WAREHOUSE)])
    if turn == 3:
        if step == 0:
            return gen.Step(
                calls=[
                    (
                        "issue_voucher",
                        {
                            "customer_id": CUSTOMER_ID,
                            "amount_eur": 10.0,
                            "reason": "recount could not be started",
                        },
                    )
                ]
            )
        return gen.Step(
            text=f"Your sweater is reserved. As the recount failed, here is a 10 EUR voucher: "
            f"{seen['issue_voucher']['code']}."
        )
    if turn == 4:
        if step == 0:
            return gen.Step(calls=[_transfer(WAREHOUSE)])
        return gen.Step(text="The warehouse has sent the full inbound schedule above.")
    if turn == 5:
        # A long-running tool that returns nothing ends the invocation: ADK does
        # not call the model again, so there is no second step here.
        if step:
            raise AssertionError("ADK called the model again after a pending long-running call")
        ticket = ctx.stress.tickets[1]["ticket_id"]
        return gen.Step(
            calls=[("request_manager_approval", {"ticket_id": ticket, "amount_eur": 49.0})]
        )
    if turn == 6:
        # The model runs out of output tokens while still thinking: a response
        # of one plain thought part, finish_reason MAX_TOKENS (a thought-only
        # STOP response would be turned into an error by ADK).
        _think(
            ctx,
            "Recap: stock check, loyalty, reservation, failed recount, voucher, refund "
            "approval. Order them by time and mention the pending items first...",
            signed=False,
        )
        ctx.finish_reasons[len(ctx.calls) - 1] = types.FinishReason.MAX_TOKENS
        return gen.Step()
    return gen.Step(
        text="Today: the sweater is reserved, the recount is pending, you got a 10 EUR voucher "
        "and a manager is reviewing your late refund."
    )


def warehouse_script(view: Any, ctx: StressContext) -> Any:
    step = _step_index(ctx, WAREHOUSE)
    turn = ctx.turn
    seen = _responses(view)
    if turn == 0:
        if step == 0:
            return gen.Step(
                calls=[
                    ("get_stock_level", {"sku": SWEATER}),
                    ("get_bin_location", {"sku": SWEATER}),
                    ("list_inbound_shipments", {"city": CITY}),
                    ("get_stock_level", {"sku": JACKET}),
                ]
            )
        _think(ctx, "The customer asked about one SKU; the jacket was a cross-check.", signed=False)
        inbound = seen["list_inbound_shipments"]
        nxt = next(s for s in inbound["shipments"] if s["sku"] == SWEATER)
        return gen.Step(
            text=f"{SWEATER}: {seen['get_stock_level']['available']} units free in {CITY} "
            f"(checked {inbound['total']} inbound shipments); the next delivery of it, "
            f"{nxt['asn']}, is due {nxt['eta']}.",
            calls=[_transfer(FRONT)],
        )
    if turn == CRASH_TURN:
        return gen.Step(
            calls=[
                ("reserve_item", {"sku": SWEATER, "quantity": 1}),
                ("start_recount", {"sku": SWEATER}),
            ]
        )
    if turn == 3:
        reservation = seen["reserve_item"]["reservation_id"]
        return gen.Step(
            text=f"The reservation {reservation} went through; the recount did not start, "
            "the front desk will follow up.",
            calls=[_transfer(FRONT)],
        )
    if turn == 4:
        if step == 0:
            return gen.Step(calls=[("list_inbound_shipments", {"city": CITY})])
        if step == 1:
            return gen.Step(calls=[("get_bin_location", {"sku": JACKET})])
        return gen.Step(
            text=f"{seen['list_inbound_shipments']['total']} inbound shipments are booked "
            f"for {CITY}.",
            calls=[_transfer(FRONT)],
        )
    raise AssertionError(f"warehouse has no step for turn {turn}")


SCRIPTS = {FRONT: front_desk_script, WAREHOUSE: warehouse_script}


class StressLlm(gen.ScriptedLlm):  # type: ignore[misc,name-defined]
    """generate.py's ScriptedLlm, plus thought parts a script asked for."""

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> Any:
        async for response in super().generate_content_async(llm_request, stream):
            index = (response.custom_metadata or {}).get("oracle_call")
            thoughts = self._ctx.thoughts.pop(index, None)
            if thoughts and response.content:
                response.content.parts = [*thoughts, *(response.content.parts or [])]
            if index in self._ctx.finish_reasons:
                response.finish_reason = self._ctx.finish_reasons.pop(index)
            yield response


def build_app(ctx: StressContext) -> App:
    tools = build_tools(ctx)
    warehouse = LlmAgent(
        name=WAREHOUSE,
        description="Knows stock levels, bins and inbound shipments; reserves items.",
        model=StressLlm(model=gen.MODEL_NAME, agent_name=WAREHOUSE).bind(ctx),
        instruction="You are the warehouse agent. Answer stock questions with your tools and "
        "hand the customer back to the front desk when you are done.",
        tools=[
            tools["get_stock_level"],
            tools["get_bin_location"],
            tools["list_inbound_shipments"],
            tools["reserve_item"],
            tools["start_recount"],
        ],
    )
    front = LlmAgent(
        name=FRONT,
        description="Front desk of the store.",
        model=StressLlm(model=gen.MODEL_NAME, agent_name=FRONT).bind(ctx),
        instruction="You are the front desk of an online clothing store. Stock, bins and "
        f"deliveries belong to the {WAREHOUSE} agent; accounts, vouchers and refunds are yours.",
        tools=[
            tools["get_customer_profile"],
            tools["get_loyalty_ledger"],
            tools["get_open_tickets"],
            tools["issue_voucher"],
            LongRunningFunctionTool(tools["request_manager_approval"]),
        ],
        sub_agents=[warehouse],
    )
    config = EventsCompactionConfig(
        token_threshold=TOKEN_THRESHOLD,
        event_retention_size=EVENT_RETENTION_SIZE,
        compaction_interval=COMPACTION_INTERVAL,
        overlap_size=OVERLAP_SIZE,
        summarizer=LlmEventSummarizer(
            llm=StressLlm(model=gen.MODEL_NAME, agent_name="summarizer", kind="summarizer").bind(
                ctx
            )
        ),
    )
    return App(name=APP_NAME, root_agent=front, events_compaction_config=config)


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------


@dataclass
class StressRun:
    ctx: StressContext
    session: Session
    crashed_turns: list[int]


async def run_stress(db: Path) -> StressRun:
    clock = gen.FakeClock(START)
    platform_time.set_time_provider(clock)
    platform_uuid.set_id_provider(gen.make_id_provider(SEED))
    adk_rng = random.Random(f"{SEED}:adk")
    set_random_provider(lambda: adk_rng)
    try:
        ctx = StressContext(
            data=None,
            clock=clock,
            durations=random.Random(f"{SEED}:durations"),
            session_id=SESSION_ID,
            stress=build_data(SEED),
        )
        gen.SCRIPTS.update(SCRIPTS)
        service = DatabaseSessionService(f"sqlite+aiosqlite:///{db}")
        runner = Runner(app=build_app(ctx), session_service=service)
        await service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
        clock.advance(1.0)
        think = random.Random(f"{SEED}:think")
        crashed: list[int] = []
        for turn, message in enumerate(TURNS):
            if turn:
                clock.advance(round(think.uniform(15, 75), 3))
            ctx.turn, ctx.turn_first_call = turn, len(ctx.calls)
            try:
                async for _ in runner.run_async(
                    user_id=USER_ID,
                    session_id=SESSION_ID,
                    new_message=types.Content(role="user", parts=[types.Part(text=message)]),
                ):
                    pass
            except ToolCrash:
                # ADK re-raises a tool's exception out of run_async (no
                # on_tool_error_callback is set); the turn is over.
                if turn != CRASH_TURN:
                    raise
                crashed.append(turn)
        if crashed != [CRASH_TURN]:
            raise AssertionError(f"the tool crash happened in turns {crashed}")
        await runner.close()
        session = await service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID
        )
        assert session is not None
        await service.close()
        return StressRun(ctx, session, crashed)
    finally:
        platform_time.reset_time_provider()
        platform_uuid.reset_id_provider()
        reset_random_provider()


def _figures(run: StressRun) -> dict[str, Any]:
    events = run.session.events
    answered = {fr.id for e in events for fr in e.get_function_responses()}
    long_running = {i for e in events for i in e.long_running_tool_ids or ()}
    unanswered = [fc for e in events for fc in e.get_function_calls() if fc.id not in answered]
    parts = [p for e in events if e.content for p in e.content.parts or []]
    agent_calls: dict[str, int] = {}
    for c in run.ctx.calls:
        if c["kind"] == "agent":
            agent_calls[c["agent"]] = agent_calls.get(c["agent"], 0) + 1
    return {
        "events": len(events),
        "agent_calls": agent_calls,
        "summarizer_calls": sum(1 for c in run.ctx.calls if c["kind"] == "summarizer"),
        "compaction_events": sum(1 for e in events if e.actions and e.actions.compaction),
        "transfers": [
            f"{e.author}->{fc.args['agent_name']}"
            for e in events
            for fc in e.get_function_calls()
            if fc.name == "transfer_to_agent"
        ],
        "parallel_call_events": sum(1 for e in events if len(e.get_function_calls()) >= 3),
        "orphaned_calls": [fc.name for fc in unanswered if fc.id not in long_running],
        "pending_long_running_calls": [fc.name for fc in unanswered if fc.id in long_running],
        "error_events": [e.error_code for e in events if e.error_code],
        "signed_thoughts": sum(1 for p in parts if p.thought and p.thought_signature),
        "plain_thoughts": sum(1 for p in parts if p.thought and not p.thought_signature),
        "crashed_turns": run.crashed_turns,
    }


def generate_stress(out_dir: Path) -> dict[str, Any]:
    """Writes stress.db, calls.jsonl and result_ids.json into out_dir; returns figures."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in (DB_FILE, "calls.jsonl", "result_ids.json"):
        for suffix in ("", "-wal", "-shm", "-journal"):
            (out_dir / f"{name}{suffix}").unlink(missing_ok=True)
    # The crashing tool makes ADK log a traceback, and dropping the orphaned
    # call logs a warning: both are expected here.
    adk_logger = logging.getLogger("google_adk")
    level = adk_logger.level
    adk_logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = asyncio.run(run_stress(out_dir / DB_FILE))
    finally:
        adk_logger.setLevel(level)
    session = run.session
    result_ids = gen.fill_event_ids(run.ctx, {SESSION_ID: session})
    gen.normalise_state_clocks(out_dir / DB_FILE, max(e.timestamp for e in session.events))
    with (out_dir / "calls.jsonl").open("w", encoding="utf-8") as f:
        for call in run.ctx.calls:
            f.write(gen._dumps(call) + "\n")
    (out_dir / "result_ids.json").write_text(
        json.dumps(result_ids, indent=2) + "\n", encoding="utf-8"
    )
    return _figures(run)


def load_oracle(out_dir: Path) -> list[dict[str, Any]]:
    """The call records of calls.jsonl, in call order."""
    with (Path(out_dir) / "calls.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(generate_stress(Path(sys.argv[1] if len(sys.argv) > 1 else "stress_out"))))
