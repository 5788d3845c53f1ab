#!/usr/bin/env python
"""Generate the bundled sample data by driving the real google.adk Runner.

Run from the repository root with the dev environment (google-adk pinned):

    .venv/bin/python sample_data/generate.py [--out sample_data]

Nothing here talks to a network. Every agent's model is a ``ScriptedLlm``: a
``BaseLlm`` subclass that reads the request ADK really built (its contents,
system instruction and tool declarations), decides the next step from it, and
reports token usage derived from the size of that request. The same scenario is
written through each ADK storage path (``DatabaseSessionService`` on the V1 and
the legacy V0 schema, ``SqliteSessionService``) and exported the way ADK's web
API and ``adk run --save_session`` serialise a session.

Determinism: every random draw comes from ``random.Random`` seeded with
``SEED``; ADK's clock and id generation are replaced through
``google.adk.platform.time.set_time_provider`` and
``google.adk.platform.uuid.set_id_provider``. Each storage path replays the
scenario from the same seed, clock and ids, so all outputs hold the same events
(ids, timestamps, content), and a re-run reproduces them.

The sidecar ``oracle/calls.jsonl`` records, for every model call, what the
model really received. Later tests compare reconstructions made from the stored
sessions against it.

``opensearch/`` holds the scenario as OpenSearch documents: the OpenTelemetry
spans ADK really emitted during the V1 run (captured with the SDK's in-memory
exporter, converted as Data Prepper's ``otel_traces`` processor indexes them),
and, written in the shape of those tools, the app's OTel log records and
LiteLLM's StandardLoggingPayload per agent model call. See README.md in this
directory.

A second app, ``support``, runs after the store's storage runs on its own clock,
ids and RNGs (so the store's files do not change with it): 12 tasks, each under
two tool-output guards (arms ``conservative`` and ``aggressive``), into
``tasks.db``, with their outcomes in ``outcomes.csv`` and the conservative arm's
as ADK eval results in ``tasks.evalset_result.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import pickle
import random
import re
import shutil
import sqlite3
import sys
import time
import uuid
import warnings
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pydantic_core
from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.platform import set_random_provider
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types
from opentelemetry import trace
from opentelemetry.sdk import trace as otel_sdk_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Sampler
from opentelemetry.sdk.version import __version__ as OTEL_SDK_VERSION
from pydantic import PrivateAttr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from adk_chars import (  # noqa: E402
    content_chars,
    part_chars,
    system_instruction_chars,
    tools_chars,
)
from adk_chars import dumps as _dumps  # noqa: E402

try:  # The model capability API; absent in older ADK releases.
    from google.adk.models._capabilities import LlmCapabilities
except ImportError:  # pragma: no cover
    LlmCapabilities = None  # type: ignore[assignment,misc]

SEED = 42
APP_NAME = "store"
START = datetime(2026, 10, 22, 9, 0, 0, tzinfo=UTC)
CHARS_PER_TOKEN = 3.6
CONTEXT_LIMIT_TOKENS = 200_000
# Every read of the fake clock costs one millisecond, so that no two events
# share a timestamp (ADK orders stored events by timestamp, and compaction
# ranges are timestamp ranges). Everything else moves the clock explicitly.
CLOCK_TICK_US = 1_000
MODEL_NAME = "scripted-store-model"

DB_FILES = ("adk_v1.db", "adk_sqlite_service.db", "adk_v0.db", "tasks.db")
OUTPUT_DIRS = ("exports", "oracle", "opensearch")

# --------------------------------------------------------------------------
# Characters and tokens: one definition (adk_chars.py), shared with the release
# scenario; the loaders size stored parts the same way.
# --------------------------------------------------------------------------


def tokens_for(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


# --------------------------------------------------------------------------
# Deterministic clock and ids
# --------------------------------------------------------------------------


class FakeClock:
    """ADK's time provider: integer microseconds, explicit advances."""

    def __init__(self, start: datetime) -> None:
        self.us = int(start.timestamp()) * 1_000_000
        self.model_done_us = self.us

    def __call__(self) -> float:
        now = self.us
        self.us += CLOCK_TICK_US
        return now / 1_000_000

    def peek(self) -> float:
        return self.us / 1_000_000

    def advance(self, seconds: float) -> None:
        self.us += round(seconds * 1_000_000)

    def jump_to(self, when: datetime) -> None:
        target = int(when.timestamp() * 1_000_000)
        if target < self.us:
            raise RuntimeError(f"clock would go backwards to {when.isoformat()}")
        self.us = target

    def model_call(self, seconds: float) -> None:
        self.advance(seconds)
        self.model_done_us = self.us

    def tool_done(self, latency: float) -> None:
        """A tool that started when the model call ended and took `latency`.

        Tools of one batch run concurrently, so the batch ends after the
        slowest of them, not after the sum.
        """
        self.us = max(self.us, self.model_done_us + round(latency * 1_000_000))


def make_id_provider(seed: int, stream: str = "ids") -> Callable[[], str]:
    rng = random.Random(f"{seed}:{stream}")

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    return new_id


# --------------------------------------------------------------------------
# Seeded data set (built once from random.Random(SEED))
# --------------------------------------------------------------------------

WORDS = (
    "parcel order delivery courier warehouse customer refund replacement size colour "
    "fabric cotton linen wool leather stitching seam zipper button collar sleeve hem "
    "box label scanner depot hub route driver van doorstep neighbour locker signature "
    "invoice receipt voucher discount promotion loyalty points bundle gift wrap note "
    "damaged delayed missing wrong swapped returned exchanged inspected approved "
    "pending escalated resolved reopened confirmed cancelled shipped packed picked "
    "morning afternoon evening weekend holiday storm backlog customs clearance "
    "address postcode apartment floor buzzer gate reception concierge office "
    "quality check fold crease stain tag sticker barcode batch lot supplier "
    "premium standard express economy tracked untracked insured fragile heavy light "
    "small medium large extra slim regular relaxed tailored classic modern "
    "blue green red black white grey navy olive beige cream charcoal burgundy "
    "the a and with for from to of on in at by after before during while because "
    "customer said asked requested mentioned reported noticed preferred agreed "
    "agent checked updated logged flagged forwarded contacted promised offered"
).split()

FIRST_NAMES = ["Ana", "Ben", "Chiara", "Dario", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas"]
LAST_NAMES = ["Moreau", "Okafor", "Lindqvist", "Rossi", "Yilmaz", "Novak", "Schmidt", "Costa"]
CITIES = [
    ("Lyon", "69003", "FR"),
    ("Torino", "10121", "IT"),
    ("Gent", "9000", "BE"),
    ("Porto", "4050-262", "PT"),
    ("Leipzig", "04109", "DE"),
]
PRODUCTS = [
    ("TS-CRW", "Crew-neck T-shirt", 19.0),
    ("JN-SLM", "Slim jeans", 69.0),
    ("SW-MRN", "Merino sweater", 89.0),
    ("JK-RNR", "Rain jacket", 129.0),
    ("SN-CNV", "Canvas sneakers", 59.0),
    ("SH-OXF", "Oxford shirt", 49.0),
    ("DR-LIN", "Linen dress", 79.0),
    ("BG-TOT", "Tote bag", 29.0),
    ("SC-WOL", "Wool scarf", 35.0),
    ("BT-CHL", "Chelsea boots", 149.0),
]
CARRIERS = ["UPS", "DHL", "GLS", "DPD", "PostNL"]
ORDER_STATUSES = ["delivered", "delivered", "delivered", "shipped", "returned", "cancelled"]
SHIPMENT_CODES = [
    ("LABEL_CREATED", "Shipping label created"),
    ("PICKED_UP", "Picked up by carrier"),
    ("ARRIVED_HUB", "Arrived at sorting hub"),
    ("DEPARTED_HUB", "Departed sorting hub"),
    ("OUT_FOR_DELIVERY", "Out for delivery"),
    ("DELIVERED", "Delivered"),
]


def sentence(rng: random.Random, lo: int = 8, hi: int = 18) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def pad_to(row: dict[str, Any], key: str, rng: random.Random, target: int) -> None:
    """Grow row[key] with seeded sentences until the row's JSON reaches target."""
    while len(_dumps(row)) < target:
        row[key] = (row[key] + " " + sentence(rng)).strip()


def address(rng: random.Random, name: str) -> dict[str, Any]:
    city, postcode, country = rng.choice(CITIES)
    return {
        "name": name,
        "line1": f"{rng.randint(1, 180)} {rng.choice(['Rue', 'Via', 'Straat', 'Rua', 'Strasse'])} "
        f"{rng.choice(LAST_NAMES)}",
        "line2": rng.choice(["", f"Apt {rng.randint(1, 40)}", f"Floor {rng.randint(1, 9)}"]),
        "city": city,
        "postcode": postcode,
        "country": country,
        "delivery_instructions": sentence(rng, 6, 12),
    }


def tracking_number(rng: random.Random) -> str:
    return "1Z" + "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(16))


def shipment_events(rng: random.Random, start: datetime, n: int) -> list[dict[str, Any]]:
    events = []
    at = start
    for code, description in SHIPMENT_CODES[:n]:
        at = at + timedelta(hours=rng.randint(2, 20), minutes=rng.randint(0, 59))
        events.append(
            {
                "at": at.isoformat().replace("+00:00", "Z"),
                "code": code,
                "location": f"{rng.choice(CITIES)[0]} {rng.choice(['hub', 'depot', 'centre'])}",
                "description": description,
                "scan_note": sentence(rng, 5, 10),
            }
        )
    return events


def make_order(rng: random.Random, customer: dict[str, Any], placed: datetime) -> dict[str, Any]:
    items = []
    for _ in range(rng.randint(2, 5)):
        sku, name, price = rng.choice(PRODUCTS)
        items.append(
            {
                "sku": f"{sku}-{rng.choice(['XS', 'S', 'M', 'L', 'XL'])}-{rng.randint(1, 9)}",
                "name": name,
                "quantity": rng.randint(1, 3),
                "unit_price": price,
                "colour": rng.choice(WORDS[120:132]),
                "notes": sentence(rng, 6, 14),
            }
        )
    subtotal = round(sum(i["unit_price"] * i["quantity"] for i in items), 2)
    shipping_fee = rng.choice([0.0, 4.95, 7.5])
    status = rng.choice(ORDER_STATUSES)
    row: dict[str, Any] = {
        "order_id": f"ORD-{placed:%y%m%d}-{rng.randint(10000, 99999)}",
        "customer_id": customer["customer_id"],
        "placed_at": placed.isoformat().replace("+00:00", "Z"),
        "status": status,
        "channel": rng.choice(["web", "ios", "android", "store"]),
        "items": items,
        "totals": {
            "subtotal": subtotal,
            "shipping": shipping_fee,
            "tax": round(subtotal * 0.2, 2),
            "total": round(subtotal * 1.2 + shipping_fee, 2),
            "currency": "EUR",
        },
        "payment": {
            "method": rng.choice(["card", "paypal", "klarna", "gift_card"]),
            "last4": f"{rng.randint(0, 9999):04d}",
            "captured": status != "cancelled",
        },
        "shipping": {
            "carrier": rng.choice(CARRIERS),
            "service": rng.choice(["standard", "express", "economy"]),
            "tracking_number": tracking_number(rng),
            "address": address(rng, customer["name"]),
            "events": shipment_events(rng, placed, rng.randint(3, 6)),
        },
        "customer_notes": paragraph(rng, rng.randint(1, 3)),
        "internal_notes": paragraph(rng, 2),
    }
    pad_to(row, "internal_notes", rng, rng.randint(3050, 3350))
    return row


def make_return(rng: random.Random, order: dict[str, Any], requested: datetime) -> dict[str, Any]:
    items = rng.sample(order["items"], k=min(len(order["items"]), rng.randint(1, 3)))
    row: dict[str, Any] = {
        "return_id": f"RMA-{rng.randint(100000, 999999)}",
        "order_id": order["order_id"],
        "requested_at": requested.isoformat().replace("+00:00", "Z"),
        "state": rng.choice(["requested", "in_transit", "received", "refunded", "rejected"]),
        "reason": rng.choice(["too small", "too large", "damaged", "not as described", "late"]),
        "items": [
            {
                "sku": i["sku"],
                "quantity": 1,
                "condition": rng.choice(["unworn", "worn", "damaged"]),
                "inspection": sentence(rng, 8, 16),
            }
            for i in items
        ],
        "refund": {
            "amount": round(sum(i["unit_price"] for i in items), 2),
            "currency": "EUR",
            "method": order["payment"]["method"],
        },
        "label": {
            "carrier": rng.choice(CARRIERS),
            "tracking_number": tracking_number(rng),
            "drop_off": rng.choice(["locker", "post office", "pickup"]),
        },
        "customer_comment": paragraph(rng, rng.randint(1, 3)),
        "warehouse_report": paragraph(rng, 2),
    }
    pad_to(row, "warehouse_report", rng, rng.randint(2900, 3300))
    return row


def make_parcel(rng: random.Random, customer: dict[str, Any]) -> dict[str, Any]:
    n = rng.randint(3, 6)
    return {
        "tracking_number": tracking_number(rng),
        "carrier": rng.choice(CARRIERS),
        "latency_s": round(rng.uniform(0.15, 0.9), 3),
        "status": SHIPMENT_CODES[n - 1][0],
        "estimated_delivery": (START + timedelta(days=rng.randint(0, 4))).date().isoformat(),
        "weight_kg": round(rng.uniform(0.2, 6.0), 2),
        "address": address(rng, customer["name"]),
        "events": shipment_events(rng, START - timedelta(days=4), n),
        "carrier_note": paragraph(rng, rng.randint(3, 6)),
    }


@dataclass
class DataSet:
    customers: dict[str, dict[str, Any]]
    orders: list[dict[str, Any]]
    returns: list[dict[str, Any]]
    parcels: list[dict[str, Any]]
    compaction_parcel: dict[str, Any]
    policy_text: str
    latencies: dict[str, float]


def build_dataset(seed: int) -> DataSet:
    rng = random.Random(seed)
    customers = {}
    for user_id, customer_id in (("u-1001", "C-1001"), ("u-1002", "C-1002"), ("u-1003", "C-1003")):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        customers[user_id] = {"customer_id": customer_id, "name": name}
    c1 = customers["u-1001"]
    orders = []
    placed = START - timedelta(days=3)
    for _ in range(200):
        orders.append(make_order(rng, c1, placed))
        placed = placed - timedelta(days=rng.randint(1, 6), hours=rng.randint(0, 23))
    returns = []
    for order in rng.sample(orders[:120], k=40):
        requested = datetime.fromisoformat(order["placed_at"]) + timedelta(days=rng.randint(3, 20))
        returns.append(make_return(rng, order, requested))
    returns.sort(key=lambda r: r["requested_at"], reverse=True)
    parcels = [make_parcel(rng, customers["u-1002"]) for _ in range(6)]
    compaction_parcel = make_parcel(rng, customers["u-1003"])
    policy_text = paragraph(rng, 14)
    latencies = {
        "get_order_history": 0.10,
        "get_order_details": 0.04,
        "get_return_history": 0.35,
        "update_delivery_address": 0.21,
        "get_delivery_options": 0.12,
        "get_insurance_policy": 0.08,
        "schedule_redelivery": 0.27,
    }
    return DataSet(customers, orders, returns, parcels, compaction_parcel, policy_text, latencies)


# --------------------------------------------------------------------------
# Run context: the recorder, the clock and the tools
# --------------------------------------------------------------------------


@dataclass
class RunContext:
    data: DataSet
    clock: FakeClock
    durations: random.Random
    calls: list[dict[str, Any]] = field(default_factory=list)
    session_id: str = ""
    result_counter: dict[str, int] = field(default_factory=dict)
    result_ids: dict[str, dict[str, Any]] = field(default_factory=dict)
    # event id -> fake-clock epoch seconds at which the Runner yielded it to
    # the caller (read with peek(), so recording it does not move the clock).
    yielded_at: dict[str, float] = field(default_factory=dict)
    # session id -> whether the scripted model answered the task (the support run).
    outcomes: dict[str, bool] = field(default_factory=dict)

    def next_result_id(self, tool: str) -> str:
        n = self.result_counter.get(self.session_id, 0) + 1
        self.result_counter[self.session_id] = n
        result_id = f"res-{self.session_id}-{n:03d}"
        self.result_ids[result_id] = {"session_id": self.session_id, "tool": tool}
        return result_id


def build_tools(ctx: RunContext) -> dict[str, Callable[..., Any]]:
    data = ctx.data

    def finish(tool: str, payload: dict[str, Any]) -> dict[str, Any]:
        ctx.clock.tool_done(data.latencies[tool])
        return {"status": "success", "result_id": ctx.next_result_id(tool), **payload}

    async def get_order_history(customer_id: str) -> dict:
        """Returns the customer's order history, newest first, with full order rows.

        Args:
          customer_id: The store's customer id, e.g. C-1001.
        """
        rows = [o for o in data.orders if o["customer_id"] == customer_id]
        summary = {
            "customer_id": customer_id,
            "first_order_at": rows[-1]["placed_at"],
            "last_order_at": rows[0]["placed_at"],
            "total_spent": round(sum(o["totals"]["total"] for o in rows), 2),
            "currency": "EUR",
            "total": len(rows),
        }
        return finish("get_order_history", {"summary": summary, "data": rows})

    async def get_order_details(order_id: str) -> dict:
        """Returns the current fulfilment state of one order.

        Args:
          order_id: The order id, e.g. ORD-261019-12345.
        """
        order = next(o for o in data.orders if o["order_id"] == order_id)
        last = order["shipping"]["events"][-1]
        return finish(
            "get_order_details",
            {
                "order_id": order_id,
                "state": order["status"],
                "carrier": order["shipping"]["carrier"],
                "tracking_number": order["shipping"]["tracking_number"],
                "last_scan": {"at": last["at"], "code": last["code"], "location": last["location"]},
                "total": order["totals"]["total"],
            },
        )

    async def get_return_history(customer_id: str) -> dict:
        """Returns the customer's returns (RMAs), newest first, with inspection reports.

        Args:
          customer_id: The store's customer id, e.g. C-1001.
        """
        order_ids = {o["order_id"] for o in data.orders if o["customer_id"] == customer_id}
        rows = [r for r in data.returns if r["order_id"] in order_ids]
        summary = {
            "customer_id": customer_id,
            "refunded": round(
                sum(r["refund"]["amount"] for r in rows if r["state"] == "refunded"), 2
            ),
            "currency": "EUR",
            "total": len(rows),
        }
        return finish("get_return_history", {"summary": summary, "data": rows})

    async def get_shipment_status(tracking_number: str) -> dict:
        """Returns the carrier's tracking history for one parcel.

        Args:
          tracking_number: The carrier tracking number.
        """
        parcels = data.parcels + [data.compaction_parcel]
        parcel = next(p for p in parcels if p["tracking_number"] == tracking_number)
        ctx.clock.tool_done(parcel["latency_s"])
        payload = {k: v for k, v in parcel.items() if k != "latency_s"}
        return {
            "status": "success",
            "result_id": ctx.next_result_id("get_shipment_status"),
            "shipment": payload,
        }

    async def update_delivery_address(tracking_number: str, new_address: str) -> dict:
        """Redirects a parcel that has not been delivered yet to a new address.

        Args:
          tracking_number: The carrier tracking number.
          new_address: The new delivery address, one line.
        """
        return finish(
            "update_delivery_address",
            {
                "tracking_number": tracking_number,
                "new_address": new_address,
                "fee": 0.0,
                "carrier_reference": f"RDR-{tracking_number[-6:]}",
                "confirmation": paragraph(random.Random(f"{SEED}:{tracking_number}:addr"), 8),
            },
        )

    async def get_delivery_options(postcode: str) -> dict:
        """Lists delivery services and prices available for a postcode.

        Args:
          postcode: The delivery postcode.
        """
        rng = random.Random(f"{SEED}:{postcode}:options")
        options = [
            {
                "service": service,
                "carrier": rng.choice(CARRIERS),
                "price": price,
                "days": days,
                "conditions": paragraph(rng, 3),
            }
            for service, price, days in (
                ("economy", 0.0, "4-6"),
                ("standard", 4.95, "2-3"),
                ("express", 9.95, "1"),
                ("locker", 2.95, "2-3"),
            )
        ]
        return finish("get_delivery_options", {"postcode": postcode, "options": options})

    async def get_insurance_policy(tracking_number: str) -> dict:
        """Returns the insurance cover of a parcel.

        Args:
          tracking_number: The carrier tracking number.
        """
        return finish(
            "get_insurance_policy",
            {
                "tracking_number": tracking_number,
                "insured": True,
                "cover_eur": 500.0,
                "policy": data.policy_text,
            },
        )

    async def schedule_redelivery(tracking_number: str, day: str) -> dict:
        """Books a redelivery slot for a parcel.

        Args:
          tracking_number: The carrier tracking number.
          day: The weekday or ISO date of the redelivery.
        """
        return finish(
            "schedule_redelivery",
            {
                "tracking_number": tracking_number,
                "day": day,
                "slot": "08:00-12:00",
                "confirmation": paragraph(random.Random(f"{SEED}:{tracking_number}:redeliver"), 6),
            },
        )

    return {
        f.__name__: f
        for f in (
            get_order_history,
            get_order_details,
            get_return_history,
            get_shipment_status,
            update_delivery_address,
            get_delivery_options,
            get_insurance_policy,
            schedule_redelivery,
        )
    }


# --------------------------------------------------------------------------
# The scripted model
# --------------------------------------------------------------------------


@dataclass
class Step:
    """What the model answers: function calls and/or text."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str | None = None


@dataclass
class RequestView:
    """The parts of a request a script decides on."""

    contents: list[types.Content]
    user_text: str  # the latest user-typed message (not relayed agent context)
    turn_responses: list[types.FunctionResponse]  # responses after that message


def _is_relayed_context(text: str) -> bool:
    return text.startswith("For context:")


def view_of(req: LlmRequest) -> RequestView:
    contents = req.contents
    user_idx, user_text = -1, ""
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        if c.role != "user" or not c.parts:
            continue
        texts = [p.text for p in c.parts if p.text]
        if (
            texts
            and not any(p.function_response for p in c.parts)
            and not _is_relayed_context(texts[0])
        ):
            user_idx, user_text = i, "".join(texts)
            break
    responses = [
        p.function_response
        for c in contents[user_idx + 1 :]
        for p in c.parts or []
        if p.function_response and p.function_response.name != "transfer_to_agent"
    ]
    return RequestView(contents, user_text, responses)


TRACKING_RE = re.compile(r"\b1Z[0-9A-Z]{16}\b")


def orchestrator_script(view: RequestView, ctx: RunContext) -> Step:
    text = view.user_text.lower()
    target = (
        "shipping_specialist"
        if ("parcel" in text or TRACKING_RE.search(view.user_text))
        else "orders_specialist"
    )
    return Step(calls=[("transfer_to_agent", {"agent_name": target})])


def orders_script(view: RequestView, ctx: RunContext) -> Step:
    customer_id = ctx.data.customers["u-1001"]["customer_id"]
    done = [r.name for r in view.turn_responses]
    if not done:
        if "return" in view.user_text.lower():
            return Step(calls=[("get_return_history", {"customer_id": customer_id})])
        return Step(calls=[("get_order_history", {"customer_id": customer_id})])
    history = next((r.response for r in view.turn_responses if r.name == "get_order_history"), None)
    if history is not None:
        recent = history["data"][:2]
        details = [r.response for r in view.turn_responses if r.name == "get_order_details"]
        if len(details) < len(recent):
            return Step(
                calls=[("get_order_details", {"order_id": recent[len(details)]["order_id"]})]
            )
        summary = history["summary"]
        lines = [
            f"You have {summary['total']} orders with us since "
            f"{summary['first_order_at'][:10]}, {summary['total_spent']:.2f} EUR in total.",
            "Your two most recent orders:",
        ]
        for row, det in zip(recent, details, strict=True):
            lines.append(
                f"- {row['order_id']} placed {row['placed_at'][:10]}: {det['state']}, "
                f"{det['carrier']} {det['tracking_number']}, last scan {det['last_scan']['code']} "
                f"in {det['last_scan']['location']} ({det['total']:.2f} EUR)."
            )
        return Step(text="\n".join(lines))
    returns = next(r.response for r in view.turn_responses if r.name == "get_return_history")
    return Step(
        text=f"You have {returns['summary']['total']} returns on file; "
        f"{returns['summary']['refunded']:.2f} EUR has been refunded so far."
    )


# The compaction session: what the user types, and what the agent does about it.
def compaction_turns(data: DataSet) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    parcel = data.compaction_parcel
    tn = parcel["tracking_number"]
    return [
        (
            f"Hi, my parcel {tn} has not arrived yet. Where is it?",
            [("get_shipment_status", {"tracking_number": tn})],
        ),
        (
            "Can you send it to my office instead? 14 Elm Street, 69003 Lyon.",
            [
                (
                    "update_delivery_address",
                    {"tracking_number": tn, "new_address": "14 Elm Street, 69003 Lyon"},
                )
            ],
        ),
        (
            "Which delivery options do you offer for that postcode?",
            [("get_delivery_options", {"postcode": "69003"})],
        ),
        (
            "Is the parcel insured, in case it gets lost?",
            [("get_insurance_policy", {"tracking_number": tn})],
        ),
        (
            "Please schedule the redelivery for Friday.",
            [("schedule_redelivery", {"tracking_number": tn, "day": "Friday"})],
        ),
        ("Thanks! Can you recap what we changed today?", []),
    ]


def shipping_script(view: RequestView, ctx: RunContext) -> Step:
    plans = {text: calls for text, calls in compaction_turns(ctx.data)}
    if not view.turn_responses:
        if view.user_text in plans:
            calls = plans[view.user_text]
        else:
            calls = [
                ("get_shipment_status", {"tracking_number": t})
                for t in TRACKING_RE.findall(view.user_text)
            ]
        if calls:
            return Step(calls=calls)
        return Step(
            text="Today we redirected your parcel to 14 Elm Street, checked the delivery options "
            "and the insurance cover, and booked a redelivery for Friday morning."
        )
    lines = []
    for r in view.turn_responses:
        resp = r.response or {}
        if r.name == "get_shipment_status":
            s = resp["shipment"]
            last = s["events"][-1]
            lines.append(
                f"- {s['tracking_number']} ({s['carrier']}): {last['description']} "
                f"in {last['location']}, expected {s['estimated_delivery']}."
            )
        elif r.name == "update_delivery_address":
            lines.append(
                f"Done: the parcel now goes to {resp['new_address']} "
                f"(reference {resp['carrier_reference']})."
            )
        elif r.name == "get_delivery_options":
            opts = ", ".join(
                f"{o['service']} {o['price']:.2f} EUR ({o['days']} days)" for o in resp["options"]
            )
            lines.append(f"For {resp['postcode']} we offer: {opts}.")
        elif r.name == "get_insurance_policy":
            lines.append(f"Yes, the parcel is insured up to {resp['cover_eur']:.0f} EUR.")
        elif r.name == "schedule_redelivery":
            lines.append(f"Redelivery booked for {resp['day']}, {resp['slot']}.")
    return Step(text="\n".join(lines))


SCRIPTS: dict[str, Callable[[RequestView, RunContext], Step]] = {
    "orchestrator": orchestrator_script,
    "orders_specialist": orders_script,
    "shipping_specialist": shipping_script,
}


class ScriptedLlm(BaseLlm):
    """A BaseLlm that answers from a script and reports usage from the request."""

    agent_name: str
    kind: str = "agent"
    _ctx: RunContext = PrivateAttr()
    _previous: tuple[int, list[dict[str, Any]]] | None = PrivateAttr(default=None)

    def bind(self, ctx: RunContext) -> ScriptedLlm:
        self._ctx = ctx
        return self

    if LlmCapabilities is not None:

        @property
        def capabilities(self) -> LlmCapabilities:  # type: ignore[override]
            return LlmCapabilities(output_schema_and_tools=False)

    def _cached_tokens(self, fixed_chars: int, dumps: list[dict[str, Any]]) -> int:
        """Tokens of the prefix this model instance saw on its previous call."""
        if self._previous is None:
            return 0
        prev_fixed, prev_dumps = self._previous
        if prev_fixed != fixed_chars:
            return 0
        prefix = fixed_chars
        for a, b in zip(dumps, prev_dumps, strict=False):
            if a != b:
                break
            prefix += sum(part_chars(p) for p in a.get("parts", []))
        return tokens_for(prefix)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        ctx = self._ctx
        clock = ctx.clock
        started = clock.peek()
        contents = llm_request.contents
        dumps = [c.model_dump(mode="json", exclude_none=True) for c in contents]
        chars_by_role: dict[str, int] = {}
        fr_ids: list[str] = []
        fr_names: list[str] = []
        for c in contents:
            chars_by_role[c.role or ""] = chars_by_role.get(c.role or "", 0) + content_chars(c)
            for p in c.parts or []:
                if p.function_response:
                    fr_names.append(p.function_response.name or "")
                    rid = (p.function_response.response or {}).get("result_id")
                    if rid is not None:
                        fr_ids.append(rid)
        total_content = sum(chars_by_role.values())
        si_chars = system_instruction_chars(llm_request.config)
        t_chars = tools_chars(llm_request.config)
        prompt_tokens = tokens_for(total_content + si_chars + t_chars)
        cached = self._cached_tokens(si_chars + t_chars, dumps) if self.kind == "agent" else 0
        self._previous = (si_chars + t_chars, dumps)

        call_index = len(ctx.calls)
        record: dict[str, Any] = {
            "call_index": call_index,
            "session_id": ctx.session_id,
            "invocation_id": None,  # filled from the stored event after the run
            "agent": self.agent_name,
            "kind": self.kind,
            "contents": len(contents),
            "roles": [c.role for c in contents],
            "function_response_result_ids": fr_ids,
            "function_response_names": fr_names,
            "chars_by_role": chars_by_role,
            "content_chars": total_content,
            "system_instruction_chars": si_chars,
            "tools_chars": t_chars,
            "prompt_token_count": prompt_tokens,
        }
        ctx.calls.append(record)

        if prompt_tokens > CONTEXT_LIMIT_TOKENS:
            clock.model_call(round(ctx.durations.uniform(0.25, 0.45), 3))
            message = (
                f"prompt is too long: {prompt_tokens:,} tokens > {CONTEXT_LIMIT_TOKENS:,} maximum"
            )
            record.update(
                error_code="CONTEXT_LENGTH_EXCEEDED",
                error_message=message,
                usage_reported=False,
                started_at=started,
                finished_at=clock.peek(),
            )
            yield LlmResponse(
                error_code="CONTEXT_LENGTH_EXCEEDED",
                error_message=message,
                model_version=MODEL_NAME,
                custom_metadata={"oracle_call": call_index},
            )
            return

        if self.kind == "summarizer":
            step = Step(text=summarize(contents[0].parts[0].text or "", ctx))
        else:
            step = SCRIPTS[self.agent_name](view_of(llm_request), ctx)
        parts: list[types.Part] = []
        if step.text:
            parts.append(types.Part(text=step.text))
        for name, args in step.calls:
            parts.append(types.Part(function_call=types.FunctionCall(name=name, args=args)))
        content = types.Content(role="model", parts=parts)
        candidates = tokens_for(content_chars(content))
        duration = ctx.durations.uniform(0.9, 2.2) + prompt_tokens / 250_000 + candidates / 400
        clock.model_call(round(duration, 3))
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=prompt_tokens,
            candidates_token_count=candidates,
            total_token_count=prompt_tokens + candidates,
            cached_content_token_count=cached or None,
        )
        record.update(
            usage_reported=True,
            candidates_token_count=candidates,
            cached_content_token_count=cached,
            total_token_count=prompt_tokens + candidates,
            response_function_calls=[name for name, _ in step.calls],
            response_text_chars=len(step.text or ""),
            started_at=started,
            finished_at=clock.peek(),
        )
        yield LlmResponse(
            content=content,
            usage_metadata=usage,
            finish_reason=types.FinishReason.STOP,
            model_version=MODEL_NAME,
            custom_metadata={"oracle_call": call_index},
        )


def summarize(prompt: str, ctx: RunContext) -> str:
    """The summarizer's script: restate the requests and name the tools used."""
    n = sum(1 for c in ctx.calls if c["kind"] == "summarizer" and c["session_id"] == ctx.session_id)
    requests = re.findall(r"^user: (.+)$", prompt, flags=re.M)
    tools = sorted(set(re.findall(r"called tool: (\w+)\(", prompt)) - {"transfer_to_agent"})
    lines = [
        "Conversation Language: English",
        f"Summary #{n} of the conversation with the customer.",
        "User requests: " + " | ".join(r[:90] for r in requests),
        "Tools used: " + (", ".join(tools) if tools else "none"),
        "Open items: none; the agent answered every request.",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------

ORCHESTRATOR_INSTRUCTION = (
    "You are the front desk of an online clothing store. Greet the customer, work out what they "
    "need and hand the conversation to the right specialist: orders_specialist for orders, "
    "payments and returns; shipping_specialist for parcels, tracking and delivery changes. "
    "Never guess order data yourself."
)
ORDERS_INSTRUCTION = (
    "You are the orders specialist of an online clothing store. Use get_order_history, "
    "get_order_details and get_return_history to answer questions about the customer's orders "
    "and returns. Quote order ids, dates and amounts exactly as the tools return them. "
    "The customer you are serving has customer id {customer_id}."
)
SHIPPING_INSTRUCTION = (
    "You are the shipping specialist of an online clothing store. Use the shipment tools to "
    "track parcels, change delivery addresses, list delivery options and book redeliveries. "
    "When the customer lists several parcels, look them all up at once."
)


def build_root_agent(ctx: RunContext, customer_id: str) -> LlmAgent:
    tools = build_tools(ctx)
    orders = LlmAgent(
        name="orders_specialist",
        description="Answers questions about orders, payments and returns.",
        model=ScriptedLlm(model=MODEL_NAME, agent_name="orders_specialist").bind(ctx),
        instruction=ORDERS_INSTRUCTION.replace("{customer_id}", customer_id),
        tools=[tools["get_order_history"], tools["get_order_details"], tools["get_return_history"]],
    )
    shipping = LlmAgent(
        name="shipping_specialist",
        description="Tracks parcels and changes deliveries.",
        model=ScriptedLlm(model=MODEL_NAME, agent_name="shipping_specialist").bind(ctx),
        instruction=SHIPPING_INSTRUCTION,
        tools=[
            tools["get_shipment_status"],
            tools["update_delivery_address"],
            tools["get_delivery_options"],
            tools["get_insurance_policy"],
            tools["schedule_redelivery"],
        ],
    )
    return LlmAgent(
        name="orchestrator",
        description="Front desk of the store.",
        model=ScriptedLlm(model=MODEL_NAME, agent_name="orchestrator").bind(ctx),
        instruction=ORCHESTRATOR_INSTRUCTION,
        sub_agents=[orders, shipping],
    )


@dataclass
class SessionPlan:
    session_id: str
    user_id: str
    starts_at: datetime
    messages: list[str]
    compaction: bool = False


def session_plans(data: DataSet) -> list[SessionPlan]:
    parcels = ", ".join(p["tracking_number"] for p in data.parcels)
    return [
        SessionPlan(
            "incident",
            "u-1001",
            START,
            [
                "Hi, can you show me my last orders? I want to check what is still on its way.",
                "Thanks. And what about my returns, have all my refunds gone through?",
            ],
        ),
        SessionPlan(
            "parallel",
            "u-1002",
            START + timedelta(minutes=30),
            [f"I am waiting for six parcels, where are they? {parcels}"],
        ),
        SessionPlan(
            "compaction",
            "u-1003",
            START + timedelta(hours=1),
            [text for text, _ in compaction_turns(data)],
            compaction=True,
        ),
    ]


async def run_scenario(
    service: BaseSessionService, data: DataSet, clock: FakeClock | None = None
) -> RunContext:
    """Runs every session of the scenario through `service` and returns the record."""
    clock = clock or FakeClock(START)
    platform_time.set_time_provider(clock)
    platform_uuid.set_id_provider(make_id_provider(SEED))
    adk_rng = random.Random(f"{SEED}:adk")
    set_random_provider(lambda: adk_rng)
    ctx = RunContext(data=data, clock=clock, durations=random.Random(f"{SEED}:durations"))
    think = random.Random(f"{SEED}:think")

    for plan in session_plans(data):
        ctx.session_id = plan.session_id
        customer = data.customers[plan.user_id]
        root = build_root_agent(ctx, customer["customer_id"])
        compaction_config = None
        if plan.compaction:
            compaction_config = EventsCompactionConfig(
                compaction_interval=2,
                overlap_size=1,
                summarizer=LlmEventSummarizer(
                    llm=ScriptedLlm(
                        model=MODEL_NAME, agent_name="summarizer", kind="summarizer"
                    ).bind(ctx)
                ),
            )
        app = App(name=APP_NAME, root_agent=root, events_compaction_config=compaction_config)
        runner = Runner(app=app, session_service=service)
        clock.jump_to(plan.starts_at)
        await service.create_session(
            app_name=APP_NAME, user_id=plan.user_id, session_id=plan.session_id
        )
        clock.jump_to(plan.starts_at + timedelta(seconds=1))
        for i, message in enumerate(plan.messages):
            if i:
                clock.advance(round(think.uniform(15, 75), 3))  # the user reads and types
            async for event in runner.run_async(
                user_id=plan.user_id,
                session_id=plan.session_id,
                new_message=types.Content(role="user", parts=[types.Part(text=message)]),
            ):
                ctx.yielded_at[event.id] = clock.peek()
        await runner.close()
    return ctx


# --------------------------------------------------------------------------
# Tracing: capture the OpenTelemetry spans ADK emits during the V1 run
# --------------------------------------------------------------------------

SERVICE_NAME = "agent-api"
# The resource of the app's tracer and logger provider. Set explicitly: the
# SDK's default resource adds a random service.instance.id.
OTEL_RESOURCE_ATTRIBUTES = {
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.version": OTEL_SDK_VERSION,
    "service.name": SERVICE_NAME,
}


class SeededIdGenerator(IdGenerator):
    """Trace and span ids from a seeded RNG; reset() starts the sequence again."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self.rng = random.Random(f"{self.seed}:otel-ids")

    def generate_span_id(self) -> int:
        span_id = self.rng.getrandbits(64)
        while span_id == trace.INVALID_SPAN_ID:
            span_id = self.rng.getrandbits(64)
        return span_id

    def generate_trace_id(self) -> int:
        trace_id = self.rng.getrandbits(128)
        while trace_id == trace.INVALID_TRACE_ID:
            trace_id = self.rng.getrandbits(128)
        return trace_id


class SwitchSampler(Sampler):
    """Records every span while `on`, none otherwise.

    The global tracer provider cannot be unset, and ADK's module-level proxy
    tracers keep the SDK tracer once they have used it. Outside a capture the
    provider therefore drops every span: ADK then gets non-recording spans,
    as it does with no provider at all.
    """

    on = False

    def should_sample(self, *args: Any, **kwargs: Any) -> Any:
        return (ALWAYS_ON if self.on else ALWAYS_OFF).should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return "SwitchSampler"


@dataclass
class Tracing:
    provider: TracerProvider
    sampler: SwitchSampler
    ids: SeededIdGenerator
    exporter: InMemorySpanExporter


_TRACING: Tracing | None = None


def _tracing() -> Tracing:
    """The process's global tracer provider, installed once."""
    global _TRACING
    if _TRACING is None:
        sampler = SwitchSampler()
        ids = SeededIdGenerator(SEED)
        provider = TracerProvider(
            sampler=sampler,
            resource=Resource(OTEL_RESOURCE_ATTRIBUTES),
            shutdown_on_exit=False,
            id_generator=ids,
        )
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            raise RuntimeError("another OpenTelemetry TracerProvider is installed")
        _TRACING = Tracing(provider, sampler, ids, exporter)
    return _TRACING


@contextmanager
def capture_spans(clock: FakeClock) -> Iterator[list[ReadableSpan]]:
    """Records the spans ended inside the block into the yielded list.

    Span ids come from a seeded generator, and span times from the fake clock
    in nanoseconds: the SDK reads `time_ns` from its own module namespace, and
    the patch reads the clock without the tick a read by ADK costs, so the
    events' timestamps are the same as in an untraced run.
    """
    tracing = _tracing()
    tracing.exporter.clear()
    tracing.ids.reset()
    spans: list[ReadableSpan] = []
    real_time_ns = otel_sdk_trace.time_ns
    otel_sdk_trace.time_ns = lambda: clock.us * 1_000
    tracing.sampler.on = True
    try:
        yield spans
        spans.extend(tracing.exporter.get_finished_spans())
    finally:
        tracing.sampler.on = False
        otel_sdk_trace.time_ns = real_time_ns
        tracing.exporter.clear()
    if not spans:
        raise AssertionError("no OpenTelemetry spans were captured from ADK")


# --------------------------------------------------------------------------
# Storage paths
# --------------------------------------------------------------------------


def create_v0_tables(path: Path) -> None:
    from google.adk.sessions.schemas.v0 import Base as BaseV0
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{path}")
    BaseV0.metadata.create_all(engine)
    engine.dispose()


async def run_storage(
    kind: str, path: Path, data: DataSet, clock: FakeClock | None = None
) -> tuple[RunContext, dict[str, Session]]:
    if kind == "sqlite_service":
        service: Any = SqliteSessionService(str(path))
    else:
        if kind == "v0":
            create_v0_tables(path)
        service = DatabaseSessionService(f"sqlite+aiosqlite:///{path}")
    ctx = await run_scenario(service, data, clock)
    sessions = {}
    for plan in session_plans(data):
        session = await service.get_session(
            app_name=APP_NAME, user_id=plan.user_id, session_id=plan.session_id
        )
        assert session is not None
        sessions[plan.session_id] = session
    if hasattr(service, "close"):
        await service.close()
    return ctx, sessions


def normalise_state_clocks(path: Path, when: float) -> None:
    """The V0/V1 app_states and user_states rows get update_time from the
    database's own clock (SQLAlchemy func.now()); pin it so the file is stable."""
    stamp = datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    con = sqlite3.connect(path)
    with con:
        for table in ("app_states", "user_states"):
            con.execute(f"UPDATE {table} SET update_time = ?", (stamp,))  # noqa: S608
    con.execute("VACUUM")
    con.close()


def vacuum(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("VACUUM")
    con.close()


def event_fingerprint(e: Event) -> dict[str, Any]:
    """The fields every storage path must agree on."""
    return {
        "id": e.id,
        "invocation_id": e.invocation_id,
        "author": e.author,
        "timestamp": round(e.timestamp, 6),
        "content": e.content.model_dump(mode="json", exclude_none=True) if e.content else None,
        "error_code": e.error_code,
        "error_message": e.error_message,
        "custom_metadata": e.custom_metadata,
        "usage_metadata": e.usage_metadata.model_dump(mode="json", exclude_none=True)
        if e.usage_metadata
        else None,
        "compaction": e.actions.compaction.model_dump(mode="json", exclude_none=True)
        if e.actions and e.actions.compaction
        else None,
        "transfer_to_agent": e.actions.transfer_to_agent if e.actions else None,
    }


def check_v0_pickles(path: Path) -> int:
    con = sqlite3.connect(path)
    rows = con.execute("SELECT actions FROM events").fetchall()
    con.close()
    for (blob,) in rows:
        if not isinstance(blob, bytes) or not blob.startswith(b"\x80"):
            raise AssertionError("adk_v0.db: the actions column does not hold pickle bytes")
        pickle.loads(blob)  # our own freshly written file  # noqa: S301
    return len(rows)


# --------------------------------------------------------------------------
# Sidecar and exports
# --------------------------------------------------------------------------


def fill_event_ids(ctx: RunContext, sessions: dict[str, Session]) -> dict[str, dict[str, Any]]:
    by_call: dict[int, Event] = {}
    compactions: dict[str, list[Event]] = {}
    after_invocation: dict[str, str] = {}  # compaction event id -> invocation it followed
    result_ids: dict[str, dict[str, Any]] = {}
    for sid, session in sessions.items():
        last_invocation = ""
        for e in session.events:
            meta = e.custom_metadata or {}
            if "oracle_call" in meta:
                by_call[meta["oracle_call"]] = e
            if e.actions and e.actions.compaction:
                compactions.setdefault(sid, []).append(e)
                after_invocation[e.id] = last_invocation
            else:
                last_invocation = e.invocation_id
            for p in (e.content.parts if e.content else None) or []:
                fr = p.function_response
                rid = (fr.response or {}).get("result_id") if fr else None
                if rid:
                    result_ids[rid] = {
                        "function_call_id": fr.id,
                        "tool": fr.name,
                        "session_id": sid,
                        "event_id": e.id,
                    }
    summarizer_seen: dict[str, int] = {}
    for call in ctx.calls:
        if call["kind"] == "summarizer":
            k = summarizer_seen.get(call["session_id"], 0)
            summarizer_seen[call["session_id"]] = k + 1
            event = compactions[call["session_id"]][k]
            compaction = event.actions.compaction
            summary = content_chars(compaction.compacted_content)
            if summary != call["response_text_chars"]:
                raise AssertionError(f"compaction event {event.id} is not summarizer call {k}")
            call["compacted_range"] = {
                "start_timestamp": compaction.start_timestamp,
                "end_timestamp": compaction.end_timestamp,
            }
            call["after_invocation_id"] = after_invocation[event.id]
        else:
            event = by_call[call["call_index"]]
        call["event_id"] = event.id
        call["invocation_id"] = event.invocation_id
    missing = set(ctx.result_ids) - set(result_ids)
    if missing:
        raise AssertionError(f"result ids not found in stored events: {sorted(missing)}")
    return dict(sorted(result_ids.items()))


def write_exports(out: Path, sessions: dict[str, Session]) -> None:
    from google.adk.events._internal_metadata import public_session

    try:
        from google.adk.cli.api_server import _redacted_session_response
    except ImportError:  # pragma: no cover - the web extras are not installed
        _redacted_session_response = None

    exports = out / "exports"
    exports.mkdir(parents=True, exist_ok=True)
    for sid, session in sessions.items():
        # GET /apps/{app}/users/{user}/sessions/{id} in `adk web` / `adk api_server`.
        if _redacted_session_response is not None:
            body = _redacted_session_response(session).body
        else:  # pragma: no cover
            body = _dumps(
                public_session(session).model_dump(exclude_none=True, by_alias=True, mode="json")
            ).encode()
        (exports / f"{sid}.camel.json").write_bytes(body)
        # `adk run --save_session` before it switched to by_alias=True
        # (google/adk-python#3558): snake_case, indent=2.
        (exports / f"{sid}.snake.json").write_text(
            public_session(session).model_dump_json(indent=2, exclude_none=True), encoding="utf-8"
        )
    incident = public_session(sessions["incident"])
    events = [e.model_dump(mode="json", exclude_none=True) for e in incident.events]
    (exports / "incident.events.json").write_text(
        json.dumps(events, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    with (exports / "incident.ndjson").open("w", encoding="utf-8") as f:
        for e in incident.events:
            # One event per line, serialised the way /run_sse serialises each
            # `data:` payload: camelCase, pydantic_core.to_json.
            dump = e.model_dump(exclude_none=True, by_alias=True, mode="json")
            f.write(pydantic_core.to_json(dump).decode("utf-8") + "\n")


# --------------------------------------------------------------------------
# OpenSearch documents: spans (real ADK output), app logs and LiteLLM payloads
# --------------------------------------------------------------------------

OPENSEARCH_DIR = "opensearch"
SPAN_FILE = "otel-v1-apm-span.ndjson"
LOG_FILE = "logs-otel-v1.ndjson"
LITELLM_FILE = "litellm.ndjson"
APP_LOGGER = "agent_api"  # the app's logger, the instrumentation scope of its log records
LITELLM_MODEL = f"gemini/{MODEL_NAME}"
LITELLM_UNMAPPED = (
    f"This model isn't mapped yet. model={LITELLM_MODEL}, custom_llm_provider=gemini. "
    "Add it here - https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json."
)


def seconds_to_ns(seconds: float) -> int:
    """Fake-clock epoch seconds (whole microseconds) to integer nanoseconds."""
    return round(seconds * 1_000_000) * 1_000


def iso_ns(ns: int) -> str:
    """ISO-8601 UTC with nine fractional digits and a Z."""
    sec, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(sec, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def litellm_time(seconds: float) -> str:
    """LiteLLM's str(datetime): "YYYY-MM-DD HH:MM:SS.ffffff" (UTC here)."""
    us = round(seconds * 1_000_000)
    return (datetime(1970, 1, 1) + timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S.%f")


def data_prepper_value(value: Any) -> Any:
    """Data Prepper keeps scalar attribute values and writes arrays as JSON strings."""
    if isinstance(value, (tuple, list)):
        return _dumps([data_prepper_value(v) for v in value])
    return value


def _at_keys(attributes: Any) -> dict[str, Any]:
    return {k.replace(".", "@"): data_prepper_value(v) for k, v in (attributes or {}).items()}


def _trace_roots(spans: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    roots: dict[int, ReadableSpan] = {}
    for s in spans:
        if s.parent is None:
            if s.context.trace_id in roots:
                raise AssertionError(f"trace {s.context.trace_id:032x} has two root spans")
            roots[s.context.trace_id] = s
    missing = {s.context.trace_id for s in spans} - set(roots)
    if missing:
        raise AssertionError(f"{len(missing)} traces have no root span")
    return roots


def span_document(span: ReadableSpan, root: ReadableSpan) -> dict[str, Any]:
    """One span as Data Prepper's otel_traces processor indexes it (default shape)."""
    ctx = span.context
    resource = dict(span.resource.attributes)
    doc: dict[str, Any] = {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "traceState": ctx.trace_state.to_header(),
        "parentSpanId": f"{span.parent.span_id:016x}" if span.parent else "",
        "name": span.name,
        "kind": f"SPAN_KIND_{span.kind.name}",
        "startTime": iso_ns(span.start_time),
        "endTime": iso_ns(span.end_time),
        "durationInNanos": span.end_time - span.start_time,
        "serviceName": resource.get("service.name"),
        "events": [
            {
                "time": iso_ns(e.timestamp),
                "name": e.name,
                "attributes": _at_keys(e.attributes),
                "droppedAttributesCount": e.dropped_attributes,
            }
            for e in span.events
        ],
        "links": [
            {
                "traceId": f"{link.context.trace_id:032x}",
                "spanId": f"{link.context.span_id:016x}",
                "traceState": link.context.trace_state.to_header(),
                "attributes": _at_keys(link.attributes),
                "droppedAttributesCount": link.dropped_attributes,
            }
            for link in span.links
        ],
        "droppedAttributesCount": span.dropped_attributes,
        "droppedEventsCount": span.dropped_events,
        "droppedLinksCount": span.dropped_links,
        "traceGroup": root.name,
        "traceGroupFields.endTime": iso_ns(root.end_time),
        "traceGroupFields.statusCode": root.status.status_code.value,
        "traceGroupFields.durationInNanos": root.end_time - root.start_time,
    }
    for key, value in (span.attributes or {}).items():
        doc["span.attributes." + key.replace(".", "@")] = data_prepper_value(value)
    for key, value in resource.items():
        doc["resource.attributes." + key.replace(".", "@")] = data_prepper_value(value)
    doc["status.code"] = span.status.status_code.value
    if span.status.description:
        doc["status.message"] = span.status.description
    scope = span.instrumentation_scope
    if scope is not None and scope.name:
        doc["instrumentationScope.name"] = scope.name
    if scope is not None and scope.version:
        doc["instrumentationScope.version"] = scope.version
    return doc


def check_spans(spans: list[ReadableSpan], calls: list[dict[str, Any]]) -> None:
    """The captured spans nest, and their times agree with the scripted model's."""
    by_id = {s.context.span_id: s for s in spans}
    _trace_roots(spans)
    for s in spans:
        if not (s.start_time and s.end_time and s.start_time <= s.end_time):
            raise AssertionError(f"span {s.name}: bad start/end")
        if s.parent is not None:
            parent = by_id[s.parent.span_id]
            if not parent.start_time <= s.start_time <= s.end_time <= parent.end_time:
                raise AssertionError(f"span {s.name} is not inside its parent {parent.name}")
    model_spans = {
        s.attributes["gcp.vertex.agent.event_id"]: s
        for s in spans
        if s.attributes and s.attributes.get("gen_ai.operation.name") == "generate_content"
    }
    agent_calls = [c for c in calls if c["kind"] == "agent"]
    if len(model_spans) != len(agent_calls):
        raise AssertionError("generate_content spans do not match the agent model calls")
    for c in agent_calls:
        s = model_spans[c["event_id"]]
        started, finished = seconds_to_ns(c["started_at"]), seconds_to_ns(c["finished_at"])
        if not s.start_time <= started <= finished <= s.end_time:
            raise AssertionError(f"call {c['call_index']} is not inside its generate_content span")
        if (s.end_time - s.start_time) - (finished - started) > 5_000_000:
            raise AssertionError(f"call {c['call_index']}: span much longer than the model call")
        attrs = s.attributes
        if (attrs["gen_ai.conversation.id"], attrs["gcp.vertex.agent.invocation_id"]) != (
            c["session_id"],
            c["invocation_id"],
        ):
            raise AssertionError(f"call {c['call_index']}: span ids differ from the stored event")
        if c["usage_reported"] and attrs["gen_ai.usage.input_tokens"] != c["prompt_token_count"]:
            raise AssertionError(f"call {c['call_index']}: span input tokens differ")


def span_documents(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    roots = _trace_roots(spans)
    ordered = sorted(spans, key=lambda s: (s.start_time, f"{s.context.span_id:016x}"))
    return [span_document(s, roots[s.context.trace_id]) for s in ordered]


def _log_document(
    span: ReadableSpan,
    severity: tuple[int, str],
    body: str,
    attributes: dict[str, Any],
    at: float,
    observed: float,
) -> dict[str, Any]:
    """An OTel log record as Data Prepper writes it into logs-otel-v1-* (the
    shape of dashboards-observability's logs_otel_v1 sample)."""
    return {
        "traceId": f"{span.context.trace_id:032x}",
        "spanId": f"{span.context.span_id:016x}",
        "instrumentationScope": {"name": APP_LOGGER, "droppedAttributesCount": 0},
        "resource": {
            "attributes": dict(OTEL_RESOURCE_ATTRIBUTES),
            "droppedAttributesCount": 0,
            "schemaUrl": "",
        },
        "flags": int(span.context.trace_flags),
        "severityNumber": severity[0],
        "severityText": severity[1],
        "body": body,
        "attributes": attributes,
        "time": iso_ns(seconds_to_ns(at)),
        "droppedAttributesCount": 0,
        "observedTimestamp": iso_ns(seconds_to_ns(observed)),
        "schemaUrl": "",
    }


def log_documents(
    ctx: RunContext, sessions: dict[str, Session], spans: list[ReadableSpan]
) -> list[dict[str, Any]]:
    """What the app around the agent logs: a line per answered turn, one per failed call."""
    roots = _trace_roots(spans)
    model_span: dict[str, ReadableSpan] = {}
    invocation_root: dict[str, ReadableSpan] = {}
    for s in spans:
        attrs = s.attributes or {}
        if attrs.get("gen_ai.operation.name") == "generate_content":
            model_span[attrs["gcp.vertex.agent.event_id"]] = s
            invocation_root[attrs["gcp.vertex.agent.invocation_id"]] = roots[s.context.trace_id]
    calls = {c["event_id"]: c for c in ctx.calls}
    users = {plan.session_id: plan.user_id for plan in session_plans(ctx.data)}
    docs = []
    for sid, session in sessions.items():
        answered: set[str] = set()
        for e in session.events:
            context = {"session.id": sid, "user.id": users[sid], "app.name": APP_NAME}
            if e.error_code:
                call = calls[e.id]
                docs.append(
                    _log_document(
                        model_span[e.id],
                        (17, "ERROR"),
                        f"model call failed: {e.error_code}: {e.error_message}",
                        {
                            **context,
                            "invocation.id": e.invocation_id,
                            "event.id": e.id,
                            "gen_ai.agent.name": e.author,
                            "error.code": e.error_code,
                            "gen_ai.request.context_tokens": call["prompt_token_count"],
                        },
                        e.timestamp,
                        ctx.yielded_at[e.id],
                    )
                )
            elif (
                e.author != "user"
                and e.is_final_response()
                and e.content
                and any(p.text for p in e.content.parts or [])
            ):
                if e.invocation_id in answered:
                    raise AssertionError(f"invocation {e.invocation_id} answered twice")
                answered.add(e.invocation_id)
                docs.append(
                    _log_document(
                        invocation_root[e.invocation_id],
                        (9, "INFO"),
                        "agent response completed",
                        {
                            **context,
                            "gen_ai.agent.name": e.author,
                            "invocation.id": e.invocation_id,
                            "event.id": e.id,
                        },
                        e.timestamp,
                        ctx.yielded_at[e.id],
                    )
                )
    docs.sort(key=lambda d: (d["time"], d["attributes"]["event.id"]))
    return docs


def litellm_documents(ctx: RunContext) -> list[dict[str, Any]]:
    """One LiteLLM StandardLoggingPayload per agent model call, content not logged."""
    rng = random.Random(f"{SEED}:litellm")

    def new_uuid() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    docs = []
    for c in ctx.calls:
        if c["kind"] != "agent":
            continue
        call_id, trace_id = new_uuid(), new_uuid()
        ok = c["usage_reported"]
        started_us = round(c["started_at"] * 1_000_000)
        finished_us = round(c["finished_at"] * 1_000_000)
        prompt = c["prompt_token_count"] if ok else 0
        completion = c["candidates_token_count"] if ok else 0
        error_str = None if ok else f"litellm.ContextWindowExceededError: {c['error_message']}"
        docs.append(
            {
                "id": f"chatcmpl-{call_id}" if ok else call_id,
                "trace_id": trace_id,
                "call_type": "acompletion",
                "cache_hit": None,
                "stream": False,
                "status": "success" if ok else "failure",
                "custom_llm_provider": "gemini",
                "saved_cache_cost": 0.0,
                "startTime": litellm_time(c["started_at"]),
                "endTime": litellm_time(c["finished_at"]),
                "completionStartTime": litellm_time(c["finished_at"]),
                "response_time": (finished_us - started_us) / 1_000_000,
                "model": LITELLM_MODEL,
                "metadata": {
                    "user_api_key_hash": None,
                    "user_api_key_alias": None,
                    "user_api_key_team_id": None,
                    "user_api_key_org_id": None,
                    "user_api_key_user_id": None,
                    "user_api_key_team_alias": None,
                    "user_api_key_user_email": None,
                    "spend_logs_metadata": None,
                    "requester_ip_address": None,
                    "requester_metadata": {
                        "session_id": c["session_id"],
                        "invocation_id": c["invocation_id"],
                        "agent_name": c["agent"],
                        "event_id": c["event_id"],
                    },
                    "user_api_key_end_user_id": None,
                    "prompt_management_metadata": None,
                    "applied_guardrails": [],
                    "mcp_tool_call_metadata": None,
                    "vector_store_request_metadata": None,
                    "guardrail_information": None,
                    "usage_object": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                        "cache_read_input_tokens": c["cached_content_token_count"],
                        "cache_creation_input_tokens": 0,
                    }
                    if ok
                    else None,
                },
                "cache_key": None,
                # LiteLLM has no price for this model: it logs no cost and says why.
                # A failed call costs nothing.
                "response_cost": None if ok else 0.0,
                "total_tokens": prompt + completion,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "request_tags": [],
                "end_user": "",
                "api_base": "https://generativelanguage.googleapis.com",
                "model_group": MODEL_NAME,
                "model_id": "",
                "requester_ip_address": None,
                "messages": [],
                "response": {},
                "model_parameters": {},
                "hidden_params": {
                    "model_id": None,
                    "cache_key": None,
                    "api_base": "https://generativelanguage.googleapis.com",
                    "response_cost": None,
                    "additional_headers": {},
                    "litellm_overhead_time_ms": None,
                    "batch_models": None,
                    "litellm_model_name": LITELLM_MODEL,
                },
                "model_map_information": {"model_map_key": LITELLM_MODEL, "model_map_value": None},
                "error_str": error_str,
                "error_information": {
                    "error_code": "" if ok else "400",
                    "error_class": "" if ok else "ContextWindowExceededError",
                    "llm_provider": "" if ok else "gemini",
                    "traceback": "",
                    "error_message": "" if ok else error_str,
                },
                "response_cost_failure_debug_info": {
                    "error_str": LITELLM_UNMAPPED,
                    "traceback_str": "",
                    "model": LITELLM_MODEL,
                    "cache_hit": None,
                    "custom_llm_provider": "gemini",
                    "base_model": None,
                    "call_type": "acompletion",
                    "custom_pricing": False,
                }
                if ok
                else None,
                "guardrail_information": None,
                "standard_built_in_tools_params": {"web_search_options": None, "file_search": None},
            }
        )
    docs.sort(key=lambda d: (d["startTime"], d["id"]))
    return docs


def write_ndjson(path: Path, docs: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for doc in docs:
            f.write(_dumps(doc) + "\n")


def write_opensearch(
    out: Path, ctx: RunContext, sessions: dict[str, Session], spans: list[ReadableSpan]
) -> dict[str, int]:
    check_spans(spans, ctx.calls)
    folder = out / OPENSEARCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        SPAN_FILE: span_documents(spans),
        LOG_FILE: log_documents(ctx, sessions, spans),
        LITELLM_FILE: litellm_documents(ctx),
    }
    for name, docs in files.items():
        write_ndjson(folder / name, docs)
    return {name: len(docs) for name, docs in files.items()}


# --------------------------------------------------------------------------
# The support app: paired arms for task outcomes (tasks.db, outcomes.csv,
# tasks.evalset_result.json)
# --------------------------------------------------------------------------
#
# The founding cost study compared two tool-output guards on the same tasks: a
# conservative row cap (few, large results) and an aggressive one (small
# results, but the agent must page). Each of SUPPORT_TASKS runs once under each
# arm. The scripted model pages through search_tickets until a result holds the
# ticket of the order the task names, and answers; it stops when the results
# run out or when its budget of SUPPORT_MAX_MODEL_CALLS model calls is spent.

SUPPORT_APP = "support"
SUPPORT_AGENT = "support_agent"
SUPPORT_DB = "tasks.db"
OUTCOMES_FILE = "outcomes.csv"
EVAL_RESULT_FILE = "tasks.evalset_result.json"
EVAL_SET_ID = "support-tasks"
# ISO week 2026-W43 runs from Monday 2026-10-19 to Sunday 2026-10-25 (UTC).
SUPPORT_START = datetime(2026, 10, 19, 0, 0, 0, tzinfo=UTC)
# Rows per search_tickets page under each arm's guard, in run order.
ARMS = {"conservative": 40, "aggressive": 8}
SUPPORT_MAX_MODEL_CALLS = 8  # per task: at most seven searches, then an answer
# Rough list rates of Gemini 2.5 Flash (USD per token), what prices.toml prices the
# scripted model as; used for the stats the generator prints, nothing is written.
ROUGH_RATES = {"input": 0.30e-6, "cached": 0.03e-6, "output": 2.50e-6}


@dataclass(frozen=True)
class SupportTask:
    task_id: str
    topic: str  # what the task says the ticket is about: the search query
    matches: int  # tickets that match the query
    rank: int | None  # 0-based position of the task's ticket in them (newest first)
    day: int  # days after SUPPORT_START
    slot: int  # the task's place in that day's schedule


# Conservative pages 40 rows: every ticket ranked below 40 is on page 1, 40-79 on
# page 2. Aggressive pages 8 rows: rank r is on page r // 8 + 1, and from rank 56
# on it lies past the seventh page, beyond the budget. t11's ticket was filed
# under another topic, so neither arm finds it.
SUPPORT_TASKS = (
    SupportTask("t01", "damaged parcel", 14, 3, 0, 0),
    SupportTask("t02", "refund not received", 18, 9, 0, 1),
    SupportTask("t03", "wrong size", 34, 12, 0, 2),
    SupportTask("t04", "courier no-show", 60, 5, 1, 0),
    SupportTask("t05", "promo code rejected", 25, 10, 1, 1),
    SupportTask("t06", "missing item", 38, 15, 2, 0),
    SupportTask("t07", "duplicate charge", 22, 1, 2, 1),
    SupportTask("t08", "late delivery", 96, 61, 2, 2),
    SupportTask("t09", "return label", 30, 11, 3, 0),
    SupportTask("t10", "address change", 75, 58, 3, 1),
    SupportTask("t11", "gift card balance", 7, None, 4, 0),
    SupportTask("t12", "loyalty points", 27, 6, 4, 1),
)
MISFILED_TOPIC = "voucher expired"  # where t11's ticket really is

SUPPORT_ASSIGNEES = ["Ana M.", "Ben O.", "Chiara L.", "Dario R.", "Elif Y.", "Femi N."]
RESOLUTIONS = [
    "Refund of {amount:.2f} EUR issued to the original payment method",
    "Replacement shipped with express delivery at no charge",
    "Voucher of {amount:.2f} EUR sent to the customer's account",
    "Carrier claim opened, customer compensated {amount:.2f} EUR",
    "Prepaid return label emailed, refund on receipt",
    "Charge reversed by payments team, confirmed to the customer",
]


@dataclass
class SupportData:
    tickets: list[dict[str, Any]]  # every ticket, newest first
    targets: dict[str, dict[str, Any]]  # task id -> the ticket the task asks about
    playbook: str


def make_ticket(rng: random.Random, topic: str, opened: datetime, ticket_no: int) -> dict[str, Any]:
    order_day = opened - timedelta(days=rng.randint(2, 20))
    row: dict[str, Any] = {
        "ticket_id": f"TCK-{ticket_no}",
        "opened_at": opened.isoformat().replace("+00:00", "Z"),
        "customer_id": f"C-{rng.randint(2000, 9999)}",
        "order_id": f"ORD-{order_day:%y%m%d}-{rng.randint(10000, 99999)}",
        "topic": topic,
        "channel": rng.choice(["email", "chat", "phone", "web form"]),
        "status": rng.choice(["resolved", "resolved", "closed", "pending customer"]),
        "priority": rng.choice(["low", "normal", "normal", "high"]),
        "assignee": rng.choice(SUPPORT_ASSIGNEES),
        "resolution": rng.choice(RESOLUTIONS).format(amount=rng.choice([9.5, 19.0, 34.0, 59.0]))
        + ". "
        + sentence(rng, 6, 12),
        "summary": sentence(rng, 8, 14),
    }
    pad_to(row, "summary", rng, rng.randint(380, 480))
    return row


def build_support_data(seed: int) -> SupportData:
    rng = random.Random(f"{seed}:support")
    tickets: list[dict[str, Any]] = []
    targets: dict[str, dict[str, Any]] = {}
    numbers = iter(rng.sample(range(100000, 999999), k=sum(t.matches for t in SUPPORT_TASKS) + 1))
    for task in SUPPORT_TASKS:
        opened = SUPPORT_START - timedelta(days=1, hours=rng.randint(0, 12))
        for rank in range(task.matches):
            opened -= timedelta(hours=rng.randint(3, 40), minutes=rng.randint(0, 59))
            ticket = make_ticket(rng, task.topic, opened, next(numbers))
            tickets.append(ticket)
            if rank == task.rank:
                targets[task.task_id] = ticket
        if task.rank is None:
            opened = SUPPORT_START - timedelta(days=rng.randint(10, 30), hours=rng.randint(0, 23))
            ticket = make_ticket(rng, MISFILED_TOPIC, opened, next(numbers))
            tickets.append(ticket)
            targets[task.task_id] = ticket
    order_ids = [t["order_id"] for t in tickets]
    if len(set(order_ids)) != len(order_ids):
        raise AssertionError("two support tickets share an order id")
    tickets.sort(key=lambda t: t["opened_at"], reverse=True)
    return SupportData(tickets, targets, paragraph(rng, 72))


SUPPORT_INSTRUCTION = (
    "You are a support analyst of an online clothing store. Staff ask you what happened "
    "on a customer's support ticket. Find the ticket with search_tickets: search for the "
    "topic the question names, and page through the results (newest first) until a row "
    "has the order id the question gives. Then answer with the ticket id, when it was "
    "opened, its status and its resolution, quoted exactly. You have at most "
    f"{SUPPORT_MAX_MODEL_CALLS} model calls per question: after {SUPPORT_MAX_MODEL_CALLS - 1} "
    "searches, answer with what you found. Never guess a resolution.\n\nSupport playbook:\n"
)


def support_question(task: SupportTask, order_id: str) -> str:
    return (
        f"A customer with order {order_id} says they opened a ticket about "
        f'"{task.topic}". What did we decide on it?'
    )


def build_search_tool(ctx: RunContext, data: SupportData, rows_per_page: int) -> Callable:
    async def search_tickets(query: str, page: int = 1) -> dict:
        """Searches the support tickets by topic, newest first, one page at a time.

        Args:
          query: Words of the ticket topic, e.g. "damaged parcel".
          page: The page of results, from 1.
        """
        q = query.strip().lower()
        hits = [t for t in data.tickets if q and q in t["topic"]]
        start = (max(page, 1) - 1) * rows_per_page
        rows = hits[start : start + rows_per_page]
        ctx.clock.tool_done(round(0.18 + 0.006 * len(rows), 3))
        return {
            "status": "success",
            "result_id": ctx.next_result_id("search_tickets"),
            "query": query,
            "page": page,
            "rows_per_page": rows_per_page,
            "total_matches": len(hits),
            "has_more": start + rows_per_page < len(hits),
            "rows": rows,
        }

    return search_tickets


ORDER_RE = re.compile(r"\bORD-\d{6}-\d{5}\b")
TOPIC_RE = re.compile(r'about "([^"]+)"')


def support_script(view: RequestView, ctx: RunContext) -> Step:
    order_id = ORDER_RE.search(view.user_text).group(0)  # type: ignore[union-attr]
    topic = TOPIC_RE.search(view.user_text).group(1)  # type: ignore[union-attr]
    pages = [r.response or {} for r in view.turn_responses if r.name == "search_tickets"]
    if not pages:
        return Step(
            calls=[("search_tickets", {"query": topic, "page": 1})],
            text=f'Searching the tickets about "{topic}" for order {order_id}.',
        )
    seen = [row for p in pages for row in p["rows"]]
    ticket = next((row for row in seen if row["order_id"] == order_id), None)
    last = pages[-1]
    if ticket is not None:
        ctx.outcomes[ctx.session_id] = True
        return Step(
            text=f"Found it: ticket {ticket['ticket_id']} on order {order_id}, opened "
            f"{ticket['opened_at'][:10]} by {ticket['channel']}, {ticket['status']} "
            f"(handled by {ticket['assignee']}). Resolution: {ticket['resolution']}"
        )
    if not last["has_more"] or len(pages) >= SUPPORT_MAX_MODEL_CALLS - 1:
        ctx.outcomes[ctx.session_id] = False
        why = (
            f"I have used my {SUPPORT_MAX_MODEL_CALLS} model calls for this question"
            if last["has_more"]
            else "there are no more results"
        )
        return Step(
            text=f"I could not find a ticket for order {order_id}: it is not among the "
            f'{len(seen)} of {last["total_matches"]} tickets about "{topic}" I looked at, '
            f"and {why}. Please search by ticket id or check the topic."
        )
    rows = last["rows"]
    first = (last["page"] - 1) * last["rows_per_page"] + 1
    return Step(
        calls=[("search_tickets", {"query": topic, "page": last["page"] + 1})],
        text=f'Page {last["page"]} of "{topic}" (tickets {first}-{first + len(rows) - 1} of '
        f"{last['total_matches']}, opened {rows[0]['opened_at'][:10]} back to "
        f"{rows[-1]['opened_at'][:10]}) has no ticket for order {order_id}; the ticket is "
        f"older, so I fetch page {last['page'] + 1}.",
    )


SCRIPTS[SUPPORT_AGENT] = support_script


@dataclass
class SupportPlan:
    task: SupportTask
    arm: str
    starts_at: datetime

    @property
    def session_id(self) -> str:
        return f"{self.task.task_id}-{self.arm}"

    @property
    def user_id(self) -> str:
        return f"eval-{self.arm}"


def support_plans() -> list[SupportPlan]:
    """Each task under each arm, the arms 15 minutes apart, in time order."""
    rng = random.Random(f"{SEED}:support-schedule")
    plans = []
    for task in SUPPORT_TASKS:
        at = SUPPORT_START + timedelta(
            days=task.day, hours=13, minutes=40 * task.slot + rng.randint(0, 9)
        )
        for k, arm in enumerate(ARMS):
            plans.append(SupportPlan(task, arm, at + timedelta(minutes=15 * k)))
    plans.sort(key=lambda p: p.starts_at)
    return plans


async def run_support(
    path: Path, data: SupportData, store_data: DataSet
) -> tuple[RunContext, dict[str, Session], list[SupportPlan]]:
    """Runs every (task, arm) session into a V1 DatabaseSessionService at `path`."""
    clock = FakeClock(SUPPORT_START)
    platform_time.set_time_provider(clock)
    platform_uuid.set_id_provider(make_id_provider(SEED, "support-ids"))
    adk_rng = random.Random(f"{SEED}:support-adk")
    set_random_provider(lambda: adk_rng)
    # The RunContext type is the store's; the support tool reads `data`, not ctx.data.
    ctx = RunContext(
        data=store_data, clock=clock, durations=random.Random(f"{SEED}:support-durations")
    )
    service = DatabaseSessionService(f"sqlite+aiosqlite:///{path}")
    plans = support_plans()
    for plan in plans:
        ctx.session_id = plan.session_id
        agent = LlmAgent(
            name=SUPPORT_AGENT,
            description="Looks up what happened on support tickets.",
            model=ScriptedLlm(model=MODEL_NAME, agent_name=SUPPORT_AGENT).bind(ctx),
            instruction=SUPPORT_INSTRUCTION + data.playbook,
            tools=[build_search_tool(ctx, data, ARMS[plan.arm])],
        )
        runner = Runner(app=App(name=SUPPORT_APP, root_agent=agent), session_service=service)
        clock.jump_to(plan.starts_at)
        await service.create_session(
            app_name=SUPPORT_APP, user_id=plan.user_id, session_id=plan.session_id
        )
        clock.jump_to(plan.starts_at + timedelta(seconds=1))
        question = support_question(plan.task, data.targets[plan.task.task_id]["order_id"])
        async for event in runner.run_async(
            user_id=plan.user_id,
            session_id=plan.session_id,
            new_message=types.Content(role="user", parts=[types.Part(text=question)]),
        ):
            ctx.yielded_at[event.id] = clock.peek()
        await runner.close()
    sessions = {}
    for plan in plans:
        session = await service.get_session(
            app_name=SUPPORT_APP, user_id=plan.user_id, session_id=plan.session_id
        )
        assert session is not None
        sessions[plan.session_id] = session
    await service.close()
    return ctx, sessions, plans


def check_support(
    ctx: RunContext, sessions: dict[str, Session], plans: list[SupportPlan], data: SupportData
) -> None:
    """Every session ends on a text answer, which names the ticket exactly when the
    script counted the task a success; no session goes over the call budget."""
    for plan in plans:
        sid = plan.session_id
        if sid not in ctx.outcomes:
            raise AssertionError(f"{sid}: the script decided no outcome")
        last = sessions[sid].events[-1]
        text = "".join(p.text or "" for p in (last.content.parts if last.content else []))
        if last.author != SUPPORT_AGENT or not text or not last.is_final_response():
            raise AssertionError(f"{sid}: the session does not end on the agent's answer")
        named = data.targets[plan.task.task_id]["ticket_id"] in text
        if named != ctx.outcomes[sid]:
            raise AssertionError(f"{sid}: the answer and the recorded outcome disagree")
        calls = sum(1 for c in ctx.calls if c["session_id"] == sid)
        if calls > SUPPORT_MAX_MODEL_CALLS:
            raise AssertionError(f"{sid}: {calls} model calls, over the budget")


def write_outcomes(path: Path, plans: list[SupportPlan], outcomes: dict[str, bool]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        f.write("session_id,task_id,arm,success\n")
        for plan in plans:
            success = "true" if outcomes[plan.session_id] else "false"
            # the task as the eval result names it (<eval_set_id>/<eval_id>), so both
            # files of the sample load into one store without a conflict
            task = f"{EVAL_SET_ID}/{plan.task.task_id}"
            f.write(f"{plan.session_id},{task},{plan.arm},{success}\n")


def write_eval_result(
    path: Path, plans: list[SupportPlan], outcomes: dict[str, bool], sessions: dict[str, Session]
) -> None:
    """The conservative arm as `adk eval` writes `<name>.evalset_result.json`."""
    from google.adk.evaluation.eval_result import EvalCaseResult, EvalSetResult
    from google.adk.evaluation.evaluator import EvalStatus

    arm = next(iter(ARMS))
    chosen = [p for p in plans if p.arm == arm]
    cases = [
        EvalCaseResult(
            eval_set_file=EVAL_SET_ID,  # ADK's eval service still fills the deprecated field
            eval_set_id=EVAL_SET_ID,
            eval_id=p.task.task_id,
            final_eval_status=EvalStatus.PASSED if outcomes[p.session_id] else EvalStatus.FAILED,
            overall_eval_metric_results=[],
            eval_metric_result_per_invocation=[],
            session_id=p.session_id,
            user_id=p.user_id,
        )
        for p in sorted(chosen, key=lambda p: p.task.task_id)
    ]
    # As google.adk.evaluation._eval_set_results_manager_utils.create_eval_set_result
    # names it, at the fake-clock time the arm's last session ended.
    timestamp = round(max(sessions[p.session_id].events[-1].timestamp for p in chosen) + 2.5, 6)
    result_id = f"{SUPPORT_APP}_{EVAL_SET_ID}_{timestamp}"
    result = EvalSetResult(
        eval_set_result_id=result_id,
        eval_set_result_name=result_id.replace("/", "_"),
        eval_set_id=EVAL_SET_ID,
        eval_case_results=cases,
        creation_timestamp=timestamp,
    )
    # LocalEvalSetResultsManager writes model_dump_json(indent=2), no final newline.
    path.write_text(result.model_dump_json(indent=2), encoding="utf-8")


def rough_cost(call: dict[str, Any]) -> float:
    cached = call["cached_content_token_count"]
    return (
        (call["prompt_token_count"] - cached) * ROUGH_RATES["input"]
        + cached * ROUGH_RATES["cached"]
        + call["candidates_token_count"] * ROUGH_RATES["output"]
    )


def support_stats(ctx: RunContext, plans: list[SupportPlan]) -> dict[str, Any]:
    arm_of = {p.session_id: p.arm for p in plans}
    stats: dict[str, Any] = {}
    for arm in ARMS:
        sids = [p.session_id for p in plans if p.arm == arm]
        calls = [c for c in ctx.calls if arm_of[c["session_id"]] == arm]
        successes = sum(ctx.outcomes[s] for s in sids)
        cost = sum(rough_cost(c) for c in calls)
        stats[arm] = {
            "sessions": len(sids),
            "model_calls": len(calls),
            "calls_per_task": round(len(calls) / len(sids), 2),
            "successes": successes,
            "prompt_tokens": sum(c["prompt_token_count"] for c in calls),
            "cached_tokens": sum(c["cached_content_token_count"] for c in calls),
            "output_tokens": sum(c["candidates_token_count"] for c in calls),
            "rough_cost_usd": round(cost, 5),
            "rough_cost_per_success_usd": round(cost / successes, 5) if successes else None,
        }
    return stats


def write_support(out: Path, store_data: DataSet) -> dict[str, Any]:
    data = build_support_data(SEED)
    ctx, sessions, plans = asyncio.run(run_support(out / SUPPORT_DB, data, store_data))
    fill_event_ids(ctx, sessions)
    check_support(ctx, sessions, plans, data)
    end_time = max(e.timestamp for s in sessions.values() for e in s.events)
    normalise_state_clocks(out / SUPPORT_DB, end_time)
    write_outcomes(out / OUTCOMES_FILE, plans, ctx.outcomes)
    write_eval_result(out / EVAL_RESULT_FILE, plans, ctx.outcomes, sessions)
    return {
        "sessions": len(sessions),
        "events": sum(len(s.events) for s in sessions.values()),
        "arms": support_stats(ctx, plans),
    }


def clean(out: Path) -> None:
    for name in DB_FILES:
        for suffix in ("", "-wal", "-shm", "-journal"):
            p = out / f"{name}{suffix}"
            if p.exists():
                p.unlink()
    for d in OUTPUT_DIRS:
        if (out / d).exists():
            shutil.rmtree(out / d)
    for name in (OUTCOMES_FILE, EVAL_RESULT_FILE):
        if (out / name).exists():
            (out / name).unlink()


def generate(out: Path, quiet: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    clean(out)
    data = build_dataset(SEED)

    runs: dict[str, tuple[RunContext, dict[str, Session]]] = {}
    # The V1 run is traced: ADK's spans become the OpenSearch span documents.
    clock = FakeClock(START)
    with capture_spans(clock) as spans:
        runs["v1"] = asyncio.run(run_storage("v1", out / "adk_v1.db", data, clock))
    for kind, filename in (
        ("sqlite_service", "adk_sqlite_service.db"),
        ("v0", "adk_v0.db"),
    ):
        runs[kind] = asyncio.run(run_storage(kind, out / filename, data))

    # Every storage path must hold the same events and the same model calls.
    ref_ctx, ref_sessions = runs["v1"]
    for kind, (ctx, sessions) in runs.items():
        for sid, session in ref_sessions.items():
            a = [event_fingerprint(e) for e in session.events]
            b = [event_fingerprint(e) for e in sessions[sid].events]
            if a != b:
                raise AssertionError(f"{kind}: session {sid} differs from the V1 run")
        if ctx.calls != ref_ctx.calls:
            raise AssertionError(f"{kind}: the model calls differ from the V1 run")

    result_ids = fill_event_ids(ref_ctx, ref_sessions)
    end_time = max(e.timestamp for s in ref_sessions.values() for e in s.events)
    normalise_state_clocks(out / "adk_v1.db", end_time)
    normalise_state_clocks(out / "adk_v0.db", end_time)
    vacuum(out / "adk_sqlite_service.db")
    pickles = check_v0_pickles(out / "adk_v0.db")

    oracle = out / "oracle"
    oracle.mkdir(parents=True, exist_ok=True)
    with (oracle / "calls.jsonl").open("w", encoding="utf-8") as f:
        for call in ref_ctx.calls:
            f.write(_dumps(call) + "\n")
    (oracle / "result_ids.json").write_text(
        json.dumps(result_ids, indent=2) + "\n", encoding="utf-8"
    )
    write_exports(out, ref_sessions)
    opensearch = write_opensearch(out, ref_ctx, ref_sessions, spans)
    # The support app runs last, on its own clock, ids and RNGs: the store's files
    # above are the same with or without it.
    support = write_support(out, data)

    stats = {
        "sessions": len(ref_sessions),
        "events": {sid: len(s.events) for sid, s in ref_sessions.items()},
        "model_calls": {
            kind: sum(1 for c in ref_ctx.calls if c["kind"] == kind)
            for kind in ("agent", "summarizer")
        },
        "compaction_events": sum(
            1 for s in ref_sessions.values() for e in s.events if e.actions and e.actions.compaction
        ),
        "error_events": sum(1 for s in ref_sessions.values() for e in s.events if e.error_code),
        "v0_pickled_actions": pickles,
        "opensearch_documents": opensearch,
        "spans": dict(sorted(Counter(s.name for s in spans).items())),
        "support": support,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if not quiet:
        print(json.dumps(stats, indent=2))
    return stats


def main(argv: list[str] | None = None) -> int:
    if argv is None and os.environ.get("PYTHONHASHSEED") != "0":
        # V0 pickles EventActions, whose __pydantic_fields_set__ is a set of
        # strings: its pickled order follows the string hash seed. Re-run
        # with a fixed seed so adk_v0.db is byte-for-byte reproducible too.
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    generate(args.out, quiet=args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
