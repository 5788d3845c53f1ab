"""Fill a PostgreSQL database with a realistic ADK V1 session store, fast.

    python tests/benchmarks/generate_pg_events.py --dsn postgresql://postgres@127.0.0.1:5432/bench \
        [--events 200000] [--sessions 5000] [--seed 42] [--big-fraction 0.03] [--replace]

Creates ADK's own V1 schema (tests/pg.py create_adk_schema: ADK's SQLAlchemy
metadata plus the adk_internal_metadata row) and COPYs rows into it. Each
session is a run of invocations: a user message (100-500 chars), 0-3 tool
rounds (a model function_call with small args, then its function_response),
and a model answer (200-2000 chars). Model events carry usage_metadata. About
`--big-fraction` of all events are function_responses with a 50-500 KB tool
result, `{"status": "success", "data": [...rows...]}`.

event_data is what ADK 2.13 stores (`StorageEvent.from_event`:
`Event.model_dump(exclude_none=True, mode="json")`): the dicts are built from
templates dumped from real google.adk Events, and one event of each kind is
checked to survive `Event.model_validate(d).model_dump(...) == d` unchanged.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import random
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.pg import create_adk_schema  # noqa: E402

APP_NAME = "bench_app"
AGENT = "analyst"
MODEL_VERSION = "gemini-2.5-flash"
BASE_TS = dt.datetime(2026, 9, 1, tzinfo=dt.UTC).timestamp()
# Tool name -> small args. (run_sql's query is payload text, never executed.)
TOOLS = {
    "run_sql": lambda r, w: {"query": f"select * from {w(r)} where {w(r)} = 1 limit 500"},  # noqa: S608
    "search_docs": lambda r, w: {"query": f"{w(r)} {w(r)} {w(r)}", "top_k": r.randint(3, 20)},
    "get_customer": lambda r, w: {"customer_id": f"C-{r.randint(1000, 99999)}"},
    "list_orders": lambda r, w: {"status": r.choice(["open", "shipped"]), "limit": 100},
    "fetch_metrics": lambda r, w: {"metric": w(r), "window": r.choice(["1h", "1d", "7d"])},
}
# Event kinds
USER_TEXT, MODEL_CALL, TOOL_RESULT, MODEL_TEXT = range(4)
KIND_NAMES = ("user text", "model function_call", "function_response", "model text")
BIG_PLACEHOLDER = "__BIG_TOOL_RESULT__"


def adk_templates() -> dict[int, dict]:
    """One real google.adk Event per kind, dumped the way ADK stores it."""
    from google.adk.events.event import Event, NodeInfo
    from google.genai import types

    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1, candidates_token_count=1, total_token_count=2,
        cached_content_token_count=0,
    )  # fmt: skip
    model = {
        "author": AGENT, "usage_metadata": usage, "model_version": MODEL_VERSION,
        "finish_reason": types.FinishReason.STOP, "node_info": NodeInfo(path=AGENT),
    }  # fmt: skip
    events = {
        USER_TEXT: Event(
            invocation_id="e-x", author="user",
            content=types.Content(role="user", parts=[types.Part(text="x")]),
        ),
        MODEL_CALL: Event(
            invocation_id="e-x", **model,
            content=types.Content(role="model", parts=[types.Part(
                function_call=types.FunctionCall(id="adk-x", name="run_sql", args={"q": 1}))]),
        ),
        TOOL_RESULT: Event(
            invocation_id="e-x", author=AGENT, node_info=NodeInfo(path=AGENT),
            content=types.Content(role="user", parts=[types.Part(
                function_response=types.FunctionResponse(
                    id="adk-x", name="run_sql", response={"status": "success", "data": []}))]),
        ),
        MODEL_TEXT: Event(
            invocation_id="e-x", **model,
            content=types.Content(role="model", parts=[types.Part(text="x")]),
        ),
    }  # fmt: skip
    return {k: e.model_dump(exclude_none=True, mode="json") for k, e in events.items()}


def check_adk_shape(event_data: dict) -> None:
    """The dict is a fixed point of ADK's load + dump, i.e. exactly what ADK writes."""
    from google.adk.events.event import Event

    again = Event.model_validate(event_data).model_dump(exclude_none=True, mode="json")
    if again != event_data:
        raise AssertionError(
            "generated event_data differs from ADK's own dump:\n"
            f"generated: {json.dumps(event_data)[:2000]}\nADK:       {json.dumps(again)[:2000]}"
        )


class Text:
    """Random prose cut from one pre-built pool (fast: slicing, no per-word work)."""

    def __init__(self, rng: random.Random, size: int = 1 << 21):
        syllables = ["ka", "to", "ri", "an", "el", "mo", "su", "ne", "la", "vi", "or", "den"]
        common = (
            "the of and to in is that for it as with was on be by this are or from at "
            "order customer revenue table query result week month total region product "
            "shipped refund invoice account metric error latency report"
        ).split()
        coined = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(600)]
        self.words = common * 8 + coined
        chunks, n = [], 0
        while n < size:
            sentence = " ".join(rng.choices(self.words, k=rng.randint(6, 18)))
            chunk = sentence[:1].upper() + sentence[1:] + rng.choice([". ", ". ", "? ", ".\n"])
            chunks.append(chunk)
            n += len(chunk)
        self.pool = "".join(chunks)
        self.rng = rng

    def word(self, rng: random.Random | None = None) -> str:
        return (rng or self.rng).choice(self.words)

    def __call__(self, lo: int, hi: int) -> str:
        length = self.rng.randint(lo, hi)
        start = self.rng.randrange(0, len(self.pool) - length)
        return self.pool[start : start + length].strip() or "ok"


class Rows:
    """JSON rows for tool results: a pool of serialized rows, joined per result."""

    def __init__(self, rng: random.Random, text: Text, n: int = 4000):
        rows = []
        for i in range(n):
            row = {
                "order_id": 100000 + i,
                "customer": f"C-{rng.randint(1000, 99999)}",
                "sku": f"SKU-{rng.randint(0, 0xFFFFF):05X}",
                "quantity": rng.randint(1, 12),
                "unit_price": round(rng.uniform(1, 500), 2),
                "currency": rng.choice(["EUR", "USD", "GBP"]),
                "status": rng.choice(["open", "shipped", "refunded", "cancelled"]),
                "created_at": dt.datetime.fromtimestamp(
                    BASE_TS - rng.randint(0, 90 * 86400), dt.UTC
                ).isoformat(),
                "note": text(10, 90),
            }
            rows.append(json.dumps(row))
        self.rows = rows
        self.avg = sum(map(len, rows)) / len(rows) + 1
        self.rng = rng

    def small(self) -> list[dict]:
        return [json.loads(r) for r in self.rng.sample(self.rows, self.rng.randint(1, 5))]

    def big_json(self, lo: int = 50_000, hi: int = 500_000) -> str:
        """'{"status": "success", "data": [...]}' of lo..hi bytes."""
        count = max(1, int(self.rng.randint(lo, hi) / self.avg))
        start = self.rng.randrange(len(self.rows))
        picked = (self.rows * (count // len(self.rows) + 2))[start : start + count]
        return '{"status": "success", "data": [' + ", ".join(picked) + "]}"


@dataclass
class Stats:
    events: int = 0
    sessions: int = 0
    users: int = 0
    by_kind: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    big: int = 0
    json_bytes: int = 0
    big_bytes: int = 0
    seconds: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _ts_text(ts: float) -> str:
    # ADK's timestamp_to_utc_datetime: naive UTC, microseconds.
    return dt.datetime.fromtimestamp(ts, dt.UTC).replace(tzinfo=None).isoformat(sep=" ")


def plan_sessions(rng: random.Random, n_events: int, n_sessions: int) -> list[int]:
    """Events per session: skewed (lognormal), at least 1 each, summing to n_events."""
    if n_sessions < 1 or n_events < n_sessions:
        raise SystemExit("need --events >= --sessions >= 1")
    weights = [rng.lognormvariate(0, 0.8) for _ in range(n_sessions)]
    spare = n_events - n_sessions
    total = sum(weights)
    counts = [1 + math.floor(spare * w / total) for w in weights]
    for i in rng.sample(range(n_sessions), n_events - sum(counts)):
        counts[i] += 1
    return counts


def plan_kinds(rng: random.Random, count: int) -> list[int]:
    """Invocations (user, 0-3 tool rounds, answer) cut to `count` events."""
    kinds: list[int] = []
    while len(kinds) < count:
        kinds.append(USER_TEXT)
        for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
            kinds += (MODEL_CALL, TOOL_RESULT)
        kinds.append(MODEL_TEXT)
    return kinds[:count]


def drop_adk_tables(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "DROP TABLE IF EXISTS events, sessions, app_states, user_states,"
            " adk_internal_metadata CASCADE"
        )


def generate(
    dsn: str,
    *,
    events: int = 200_000,
    sessions: int = 5_000,
    seed: int = 42,
    big_fraction: float = 0.03,
    replace: bool = False,
    verbose: bool = True,
) -> Stats:
    say = print if verbose else (lambda *a, **k: None)
    started = time.perf_counter()
    rng = random.Random(seed)
    if replace:
        drop_adk_tables(dsn)
    create_adk_schema(dsn, "1")
    with psycopg.connect(dsn) as conn:
        existing = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    if existing:
        raise SystemExit(f"events already holds {existing} rows; use --replace to start over")

    templates = adk_templates()
    text = Text(rng)
    rows = Rows(rng, text)
    counts = plan_sessions(rng, events, sessions)
    plans = [plan_kinds(rng, c) for c in counts]
    tool_results = [(s, i) for s, kinds in enumerate(plans) for i, k in enumerate(kinds)
                    if k == TOOL_RESULT]  # fmt: skip
    n_big = min(len(tool_results), round(big_fraction * events))
    big = set(rng.sample(tool_results, n_big))
    n_users = max(1, sessions // 5)
    users = [f"user-{i:05d}" for i in range(n_users)]
    keys = [(users[rng.randrange(n_users)], _uuid(rng)) for _ in range(sessions)]
    starts = [BASE_TS + rng.uniform(0, 30 * 86400) for _ in range(sessions)]
    stats = Stats(events=events, sessions=sessions, users=len({u for u, _ in keys}))
    say(f"generating {events} events in {sessions} sessions ({n_big} big tool results)...")

    finals: list[tuple[str, str, str, str]] = []  # user, session, update_time, state json
    checked: set[object] = set()  # kinds whose first event was checked against ADK
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY app_states (app_name, state, update_time) FROM STDIN"
        ) as copy:
            copy.write_row((APP_NAME, json.dumps({"model": MODEL_VERSION}), _ts_text(BASE_TS)))
        with cur.copy(
            "COPY user_states (app_name, user_id, state, update_time) FROM STDIN"
        ) as copy:
            for user in sorted({u for u, _ in keys}):
                copy.write_row((APP_NAME, user, json.dumps({"locale": "en"}), _ts_text(BASE_TS)))
        with cur.copy(
            "COPY sessions (app_name, user_id, id, state, create_time, update_time) FROM STDIN"
        ) as copy:
            for (user, sid), start in zip(keys, starts, strict=True):
                copy.write_row((APP_NAME, user, sid, "{}", _ts_text(start), _ts_text(start)))

        with cur.copy(
            "COPY events (id, app_name, user_id, session_id, invocation_id, timestamp,"
            " event_data) FROM STDIN"
        ) as copy:
            for s, kinds in enumerate(plans):
                user, sid = keys[s]
                ts = starts[s]
                context_tokens = 400  # system prompt + tool declarations
                invocation = ""
                call: tuple[str, str] = ("", "")
                state: dict[str, int | str] = {"turns": 0}
                for i, kind in enumerate(kinds):
                    d = dict(templates[kind])
                    is_big = False
                    if kind == USER_TEXT:
                        invocation = "e-" + _uuid(rng)
                        ts += rng.uniform(5, 600)
                        body = text(100, 500)
                        d["content"] = {"parts": [{"text": body}], "role": "user"}
                        context_tokens += len(body) // 4
                        state["turns"] = int(state["turns"]) + 1
                    elif kind == MODEL_CALL:
                        ts += rng.uniform(0.5, 4)
                        name = rng.choice(list(TOOLS))
                        call = ("adk-" + _uuid(rng), name)
                        args = TOOLS[name](rng, text.word)
                        d["content"] = {
                            "parts": [{"function_call": {"id": call[0], "args": args,
                                                         "name": name}}],
                            "role": "model",
                        }  # fmt: skip
                        out = 15 + len(json.dumps(args)) // 4
                        d["usage_metadata"] = _usage(rng, context_tokens, out)
                        context_tokens += out
                    elif kind == TOOL_RESULT:
                        ts += rng.uniform(0.05, 8)
                        response: object = {"status": "success", "data": rows.small()}
                        if (s, i) in big:
                            response, is_big = BIG_PLACEHOLDER, True
                        d["content"] = {
                            "parts": [{"function_response": {"id": call[0], "name": call[1],
                                                             "response": response}}],
                            "role": "user",
                        }  # fmt: skip
                    else:
                        ts += rng.uniform(0.5, 20)
                        body = text(200, 2000)
                        d["content"] = {"parts": [{"text": body}], "role": "model"}
                        out = len(body) // 4
                        d["usage_metadata"] = _usage(rng, context_tokens, out)
                        context_tokens += out
                        if rng.random() < 0.1:
                            delta = {"last_topic": text.word()}
                            d["actions"] = {**d["actions"], "state_delta": delta}
                            state.update(delta)
                    event_id = _uuid(rng)
                    d["invocation_id"] = invocation
                    d["id"] = event_id
                    d["timestamp"] = ts
                    doc = json.dumps(d)
                    if is_big:
                        payload = rows.big_json()
                        doc = doc.replace(json.dumps(BIG_PLACEHOLDER), payload, 1)
                        context_tokens += len(payload) // 4
                        stats.big += 1
                        stats.big_bytes += len(payload)
                        if "big" not in checked:
                            check_adk_shape(json.loads(doc))
                            checked.add("big")
                    elif kind == TOOL_RESULT:
                        context_tokens += len(doc) // 4
                    if kind not in checked and not is_big:
                        check_adk_shape(d)
                        checked.add(kind)
                    stats.by_kind[kind] += 1
                    stats.json_bytes += len(doc)
                    copy.write_row(
                        (event_id, APP_NAME, user, sid, invocation, _ts_text(ts), doc)
                    )
                finals.append((user, sid, _ts_text(ts), json.dumps(state)))
                if verbose and (s + 1) % max(1, sessions // 10) == 0:
                    say(f"  {s + 1}/{sessions} sessions, {sum(stats.by_kind)} events")

        # update_time = the last event's timestamp (as append_event sets it), plus state.
        cur.execute(
            "CREATE TEMP TABLE session_final (user_id text, id text, update_time timestamp,"
            " state jsonb) ON COMMIT DROP"
        )
        with cur.copy("COPY session_final FROM STDIN") as copy:
            for row in finals:
                copy.write_row(row)
        cur.execute(
            "UPDATE sessions s SET update_time = f.update_time, state = f.state"
            " FROM session_final f WHERE s.app_name = %s AND s.user_id = f.user_id"
            " AND s.id = f.id",
            (APP_NAME,),
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE events")
        conn.execute("VACUUM ANALYZE sessions")
        for rel in ("events", "sessions"):
            stats.sizes[rel] = conn.execute(
                "SELECT pg_total_relation_size(%s)", (rel,)
            ).fetchone()[0]
        stats.sizes["events heap"] = conn.execute(
            "SELECT pg_relation_size('events')"
        ).fetchone()[0]
        stats.sizes["events toast"] = conn.execute(
            "SELECT pg_total_relation_size(reltoastrelid) FROM pg_class"
            " WHERE oid = 'events'::regclass"
        ).fetchone()[0]
        stats.sizes["database"] = conn.execute(
            "SELECT pg_database_size(current_database())"
        ).fetchone()[0]
        db_counts = conn.execute(
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM sessions)"
        ).fetchone()
    assert db_counts == (events, sessions), db_counts
    stats.seconds = time.perf_counter() - started
    return stats


def _usage(rng: random.Random, prompt: int, out: int) -> dict[str, int]:
    cached = 0 if rng.random() < 0.4 else int(prompt * rng.uniform(0.3, 0.9))
    # Keys as ADK dumps GenerateContentResponseUsageMetadata (exclude_none).
    return {
        "cached_content_token_count": cached,
        "candidates_token_count": out,
        "prompt_token_count": prompt,
        "total_token_count": prompt + out,
    }


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def print_stats(stats: Stats) -> None:
    print(f"events:   {stats.events:,} in {stats.sessions:,} sessions, {stats.users:,} users")
    for name, n in zip(KIND_NAMES, stats.by_kind, strict=True):
        print(f"  {name:<20} {n:>9,}  ({100 * n / max(1, stats.events):.1f}%)")
    print(
        f"  big tool results     {stats.big:>9,}  ({100 * stats.big / max(1, stats.events):.1f}%,"
        f" {mb(stats.big_bytes)} of JSON)"
    )
    print(f"event_data JSON generated: {mb(stats.json_bytes)}")
    for rel, size in stats.sizes.items():
        label = rel if rel != "database" else "whole database"
        print(f"pg size {label:<14} {mb(size):>12}")
    print(f"took {stats.seconds:.1f}s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True, help="postgresql://... of the database to fill")
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--sessions", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--big-fraction", type=float, default=0.03,
                    help="share of all events that are 50-500 KB tool results (default 0.03)")
    ap.add_argument("--replace", action="store_true",
                    help="drop ADK's tables in this database first")  # fmt: skip
    args = ap.parse_args(argv)
    stats = generate(
        args.dsn, events=args.events, sessions=args.sessions, seed=args.seed,
        big_fraction=args.big_fraction, replace=args.replace,
    )  # fmt: skip
    print_stats(stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
