"""`forensics whatif` and `forensics guards`: a tool-output guard replayed on stored history.

The founding document's cases are the fixtures: 791 fat rows (the cap keeps 17, about
15,555 estimated tokens), a 5-row table (all kept), one row of about 20,000 tokens
against a 16,000 budget (kept anyway, over budget), a dict payload (sized whole; a row
guard reads it as empty), 150 fat rows under a 200-row guard (it does not fire), and
limit=1000000 clamped to a page of 200 before the token fit. They are ADK JSON sessions
ingested as any export is; the guard's arithmetic is checked against the rules written
out in Python here (`founding_guard`), and the stored sizes against Python's json.dumps.
The bundled incident (real ADK output) is the done-when check.
"""

from __future__ import annotations

import json
import math
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.columns import ANCHOR_COLUMNS
from forensics.errors import ForensicsError

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"
T0 = 1_790_000_000.0
MODEL = "gemini-2.5-flash"


def _fat_row(i: int, dumps_len: int) -> dict[str, Any]:
    """An order row whose json.dumps is exactly `dumps_len` characters."""
    row = {"order_id": f"O-{i:05d}", "status": "DELIVERED", "items": [{"sku": "S-1", "qty": 1}],
           "notes": ""}  # fmt: skip
    row["notes"] = "n" * (dumps_len - len(json.dumps(row)))
    assert len(json.dumps(row)) == dumps_len
    return row


def _flat_row(i: int) -> dict[str, Any]:
    return {"sku": f"S-{i}", "name": f"widget {i}", "qty": i, "price": 2.5 * i, "gift": False}


# the founding document's cases: tool name -> response
CASES: dict[str, dict[str, Any]] = {
    # 915 guard tokens a row (2,745 characters over 3.0): 17 rows are 15,555 tokens
    "get_order_history": {"status": "success", "data": [_fat_row(i, 2745) for i in range(791)]},
    "get_cart": {"status": "success", "data": [_flat_row(i) for i in range(1, 6)]},
    "get_ticket": {"status": "success", "data": [_fat_row(0, 60_000)]},  # 20,000 tokens
    "get_customer": {"status": "success", "customer": {
        "addresses": [f"street {i}, " + "a" * 200 for i in range(400)], "id": "C-1"}},
    "get_invoices": {"status": "success", "data": [_fat_row(i, 2700) for i in range(150)]},
}


def _event(n: int, author: str, invocation: str = "inv1", **fields: Any) -> dict[str, Any]:
    return {"id": f"e{n}", "invocation_id": invocation, "author": author,
            "timestamp": T0 + n, **fields}  # fmt: skip


def founding_session(failure_text: str | None = None) -> dict[str, Any]:
    """One turn calling each case's tool in order, each model call measured; with
    `failure_text`, a second turn whose one call the provider refused."""
    events = [_event(0, "user", content={"role": "user", "parts": [{"text": "my orders?"}]})]
    prompt, n = 500, 1
    for i, (tool, response) in enumerate(CASES.items()):
        events.append(_event(n, "agent", content={"role": "model", "parts": [
            {"function_call": {"id": f"c{i}", "name": tool, "args": {"limit": 1000000}}}]},
            usage_metadata={"prompt_token_count": prompt, "candidates_token_count": 20},
            model_version=MODEL))  # fmt: skip
        events.append(_event(n + 1, "agent", content={"role": "user", "parts": [
            {"function_response": {"id": f"c{i}", "name": tool, "response": response}}]}))
        prompt += len(json.dumps(response, separators=(",", ":"))) // 4
        n += 2
    events.append(_event(n, "agent", content={"role": "model", "parts": [{"text": "done"}]},
                         usage_metadata={"prompt_token_count": prompt,
                                         "candidates_token_count": 30},
                         model_version=MODEL))  # fmt: skip
    if failure_text is not None:
        events.append(_event(n + 1, "user", "inv2",
                             content={"role": "user", "parts": [{"text": "and returns?"}]}))
        events.append(_event(n + 2, "agent", "inv2", error_code="INVALID_ARGUMENT",
                             error_message=failure_text))  # fmt: skip
    return {"id": "founding", "app_name": "shop", "user_id": "u", "events": events}


@pytest.fixture(scope="module")
def founding_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("whatif")
    text = "The input token count (1439860) exceeds the maximum number of tokens allowed (1048576)."
    (folder / "founding.json").write_text(json.dumps(founding_session(text)))
    db = folder / "w.duckdb"
    api.ingest_json(db, [folder / "founding.json"])
    return db


def _estimate(payload: Any, cpt: float = 3.0) -> int:
    return math.ceil(len(json.dumps(payload)) / cpt)


def founding_guard(response: dict[str, Any], rows_key: str | None, *, token_cap: int | None = None,
                   row_cap: int | None = None, page_size: int | None = None,
                   cpt: float = 3.0) -> dict[str, Any]:  # fmt: skip
    """The founding document's guard, as docs/whatif.md states it: page, then the token
    fit over the rest of the response and each row, at least one row; a response
    without rows sized whole and kept whole."""
    if rows_key is None:
        tokens = _estimate(response, cpt)
        return {"rows_kept": 0, "fired": False, "kept_guard_tokens": tokens,
                "over_budget": token_cap is not None and tokens > token_cap}  # fmt: skip
    rows = response[rows_key]
    limits = [v for v in (page_size, row_cap) if v is not None]
    page = rows[: min(limits)] if limits else rows
    kept = page
    if token_cap is not None:
        used = _estimate({**response, rows_key: []}, cpt)
        kept = []
        for row in page:
            used += _estimate(row, cpt)
            if used > token_cap and kept:
                break
            kept.append(row)
    fired = len(kept) < len(rows)
    out = {**response, rows_key: kept}
    if fired:
        out |= {"total": len(rows), "truncated": True}
    tokens = _estimate(out, cpt)
    return {"rows_kept": len(kept), "fired": fired, "kept_guard_tokens": tokens,
            "over_budget": token_cap is not None and tokens > token_cap}  # fmt: skip


def _by_tool(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {r["tool_name"]: r for r in frame.iter_rows(named=True)}


# --- scope 1: the replay's rules, case by case ----------------------------------------


def test_the_token_cap_keeps_17_of_791_fat_rows_and_one_oversized_row(founding_db):
    results = _by_tool(api.whatif(founding_db, token_cap=16_000, by="result"))
    fat = results["get_order_history"]
    assert (fat["rows"], fat["rows_kept"], fat["fired"], fat["over_budget"]) == (791, 17, True,
                                                                                  False)
    # the founding re-run: "returned the first 17, about 15,555 estimated tokens"
    assert 15_555 < fat["kept_guard_tokens"] <= 16_000
    table = results["get_cart"]  # a 5-row table: all 5 come back, no paging
    assert (table["rows"], table["rows_kept"], table["fired"]) == (5, 5, False)
    assert table["counterfactual_tokens"] == table["result_tokens_estimated"]
    one = results["get_ticket"]  # one row of about 20,000 tokens against 16,000
    assert (one["rows"], one["rows_kept"], one["fired"], one["over_budget"]) == (1, 1, False,
                                                                                  True)
    assert one["kept_guard_tokens"] > 20_000
    whole = results["get_customer"]  # a dict: sized whole, kept whole, over budget
    assert (whole["payload"], whole["rows"], whole["fired"], whole["over_budget"]) == (
        "dict", None, False, True)  # fmt: skip
    assert whole["guard_tokens"] == _estimate(CASES["get_customer"])


def test_every_case_matches_the_founding_rules_written_out(founding_db):
    keys = {"get_customer": None}
    for options in ({"token_cap": 16_000}, {"row_cap": 200},
                    {"token_cap": 16_000, "page_size": 200}, {"token_cap": 5_000, "row_cap": 10},
                    {"token_cap": 16_000, "cpt": 4.0}):  # fmt: skip
        cpt = options.get("cpt", 3.0)
        asked = {k: v for k, v in options.items() if k != "cpt"}
        got = _by_tool(api.whatif(founding_db, **asked, chars_per_token=cpt, by="result"))
        for tool, response in CASES.items():
            want = founding_guard(response, keys.get(tool, "data"), **asked, cpt=cpt)
            row = got[tool]
            assert {k: row[k] for k in ("rows_kept", "fired", "kept_guard_tokens",
                                        "over_budget")} == {
                k: want[k] for k in ("rows_kept", "fired", "kept_guard_tokens", "over_budget")
            }, (tool, options)  # fmt: skip


def test_the_row_guard_lets_150_fat_rows_through_and_clamps_791_to_200(founding_db):
    results = _by_tool(api.whatif(founding_db, row_cap=200, by="result"))
    assert results["get_invoices"]["fired"] is False  # 150 rows: under the row threshold
    assert results["get_invoices"]["guard_tokens"] > 130_000
    assert (results["get_order_history"]["rows_kept"], results["get_order_history"]["fired"]) \
        == (200, True)
    assert results["get_customer"]["fired"] is False  # the dict: the row guard sees no rows
    # limit=1000000: clamped to 200 first, then the token fit trims it to 17
    paged = _by_tool(api.whatif(founding_db, token_cap=16_000, page_size=200, by="result"))
    assert paged["get_order_history"]["rows_kept"] == 17


def test_the_stored_sizes_are_what_json_dumps_writes(tmp_path):
    """Random payloads (unicode beyond the BMP, escapes, separators in strings, nesting):
    each row's compact length and its json.dumps extra, and the rest of the response, as
    the guard would size them in Python."""
    rng = random.Random(20261201)
    alphabet = ['a', ',', ':', '"', '\\', ' ', 'é', '中', '😀', '\n', '\t', '{', ']', '\u2028']

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))

    def value(depth: int = 0) -> Any:
        kind = rng.choice(["s", "i", "b", "n", "l", "d"] if depth < 2 else ["s", "i", "b", "n"])
        makers = {
            "s": text,
            "i": lambda: rng.randint(-10**6, 10**6),
            "b": lambda: rng.random() < .5,
            "n": lambda: None,
            "l": lambda: [value(depth + 1) for _ in range(rng.randint(0, 3))],
            "d": lambda: {text(): value(depth + 1) for _ in range(rng.randint(0, 3))},
        }
        return makers[kind]()

    responses = []
    for _ in range(40):
        rows = [{text() or "k": value() for _ in range(rng.randint(1, 5))}
                for _ in range(rng.randint(1, 12))]  # fmt: skip
        responses.append({"status": text(), "meta": {"v": value()}, "rows": rows})
    events = [_event(0, "user", content={"role": "user", "parts": [{"text": "go"}]})]
    for i, response in enumerate(responses):
        events.append(_event(2 * i + 1, "agent", content={"role": "model", "parts": [
            {"function_call": {"id": f"c{i}", "name": "t", "args": {}}}]},
            usage_metadata={"prompt_token_count": 100}, model_version=MODEL))  # fmt: skip
        events.append(_event(2 * i + 2, "agent", content={"role": "user", "parts": [
            {"function_response": {"id": f"c{i}", "name": "t", "response": response}}]}))
    (tmp_path / "r.json").write_text(json.dumps({"id": "r", "app_name": "a", "user_id": "u",
                                                 "events": events}))  # fmt: skip
    db = tmp_path / "r.duckdb"
    api.ingest_json(db, [tmp_path / "r.json"])
    con = duckdb.connect(str(db), read_only=True)
    stored = {r[0]: r[1:] for r in con.execute(
        "SELECT function_call_id, rows_key, row_chars, row_extra, envelope_chars, envelope_extra "
        "FROM parts WHERE kind = 'function_response'").fetchall()}  # fmt: skip
    con.close()
    for i, response in enumerate(responses):
        key, chars, extra, env_chars, env_extra = stored[f"c{i}"]
        assert key == "rows"
        compact = [len(json.dumps(r, separators=(",", ":"), ensure_ascii=False))
                   for r in response["rows"]]  # fmt: skip
        assert chars == compact, i
        assert [c + x for c, x in zip(chars, extra, strict=True)] == [
            len(json.dumps(r)) for r in response["rows"]], i  # fmt: skip
        envelope = {**response, "rows": []}
        assert env_chars + env_extra == len(json.dumps(envelope)), i


# --- scope 2 and 3: counterfactual windows, failures, both halves of the arithmetic ---


def test_windows_shrink_by_what_each_request_carried_and_the_failure_is_judged(founding_db):
    calls = api.whatif(founding_db, token_cap=16_000, by="call")
    results = api.whatif(founding_db, token_cap=16_000, by="result")
    agent = calls.filter(pl.col("kind") == "agent")
    # the first call carried nothing; each later one the results before it
    assert agent["occupancy_counterfactual"][0] == agent["occupancy"][0]
    saved = (results["result_tokens_estimated"] - results["counterfactual_tokens"]).to_list()
    last = agent.row(-1, named=True)
    assert last["occupancy"] - last["occupancy_counterfactual"] == pytest.approx(sum(saved), abs=3)
    # the refused call: Gemini's text named 1,048,576; its window under the guard fits it
    failed = calls.filter(pl.col("kind") == "failed").row(0, named=True)
    assert failed["context_limit"] == 1_048_576 and failed["failure"] == "prevented"
    # an explicit limit is used instead, and can leave it over
    tight = api.whatif(founding_db, token_cap=16_000, by="call", context_limit=10_000)
    assert tight.filter(pl.col("kind") == "failed")["failure"].to_list() == ["still over"]


def test_the_saving_always_comes_with_the_extra_turns_it_pays_for(founding_db):
    session = api.whatif(founding_db, token_cap=16_000, by="session").row(0, named=True)
    calls = api.whatif(founding_db, token_cap=16_000, by="call")
    assert session["saving_usd_low"] == sum(calls["saving_usd_low"].to_list(), Decimal(0))
    assert session["saving_usd_low"] > 0
    assert session["cost_usd_low"] - session["counterfactual_usd_low"] == session["saving_usd_low"]
    last = calls.filter(pl.col("kind") == "agent").row(-1, named=True)
    assert session["extra_call_usd_low"] < last["cost_usd_low"]  # its input is cut
    assert session["extra_turns_paid_for"] == pytest.approx(
        float(session["saving_usd_low"]) / float(session["extra_call_usd_low"]))
    # the prevented call is billed in the guarded world: its counterfactual input
    failed = calls.filter(pl.col("kind") == "failed").row(0, named=True)
    assert failed["cost_usd_low"] == 0 and failed["counterfactual_usd_low"] > 0


# --- done when: the bundled incident ---------------------------------------------------


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("sample") / "s.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    return db


def test_on_the_bundled_incident_the_cap_prevents_turn_2_and_cuts_turn_1(sample_db):
    prices = SAMPLE / "prices.toml"
    turns = api.whatif(sample_db, "incident", token_cap=16_000, prices=prices)
    one, two = turns.row(0, named=True), turns.row(1, named=True)
    results = api.whatif(sample_db, "incident", token_cap=16_000, by="result")
    big = results.filter(pl.col("tool_name") == "get_order_history").row(0, named=True)
    assert (big["rows"], big["fired"]) == (200, True)
    cut = big["result_tokens_estimated"] - big["counterfactual_tokens"]
    growth = api.growth(sample_db, "incident").filter(
        pl.col("function_call_id") == big["function_call_id"]).row(0, named=True)
    # turn 1's cumulative input falls by the result's cut once for each call that carried it
    sends_in_turn_1 = growth["resent_calls_in_turn"]  # the first send included
    assert sends_in_turn_1 == 3
    assert one["cumulative_input"] - one["cumulative_input_counterfactual"] == pytest.approx(
        cut * sends_in_turn_1, abs=sends_in_turn_1)
    # turn 2's failed call fits under the limit its error named (200,000)
    calls = api.whatif(sample_db, "incident", token_cap=16_000, by="call", prices=prices)
    failed = calls.filter(pl.col("kind") == "failed").row(0, named=True)
    assert failed["context_limit"] == 200_000
    assert failed["occupancy"] > 200_000 >= failed["occupancy_counterfactual"]
    assert (two["context_failures"], two["prevented"]) == (1, 1)
    # and the break-even beside it
    assert one["saving_usd_low"] > 0 and one["extra_turns_paid_for"] > 1


def test_a_200_row_guard_does_not_fire_on_the_200_row_result(sample_db):
    results = api.whatif(sample_db, "incident", row_cap=200, by="result")
    big = results.filter(pl.col("tool_name") == "get_order_history").row(0, named=True)
    assert (big["rows"], big["rows_kept"], big["fired"]) == (200, 200, False)
    assert big["guard_tokens"] > 180_000
    turns = api.whatif(sample_db, "incident", row_cap=200)
    assert (turns["cumulative_input"] == turns["cumulative_input_counterfactual"]).all()
    assert turns["prevented"].sum() == 0


# --- scope 4 and 5: the audit --------------------------------------------------------------


def test_guards_shows_the_row_guards_blind_spots_and_the_markdown_estimate(founding_db):
    audit = _by_tool(api.guards(founding_db, budget=16_000))
    fat = audit["get_order_history"]
    assert (fat["over_budget"], fat["row_guard_silent"], fat["dict_payloads"]) == (1, 0, 0)
    assert fat["tokens_per_row"] == 915
    assert audit["get_invoices"]["row_guard_silent"] == 1  # 150 fat rows pass 200 rows
    assert audit["get_ticket"]["rows_over_budget"] == 1
    customer = audit["get_customer"]
    assert (customer["dict_payloads"], customer["dict_over_budget"],
            customer["row_guard_silent"]) == (1, 1, 1)  # fmt: skip
    # the flat 5-row table: markdown against json.dumps, as written out here
    rows = CASES["get_cart"]["data"]
    cells = [[str(v).lower() if isinstance(v, bool) else str(v) for v in r.values()]
             for r in rows]  # fmt: skip
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0]),
             *("| " + " | ".join(c) + " |" for c in cells)]  # fmt: skip
    markdown = len("\n".join(lines) + "\n")
    cart = audit["get_cart"]
    assert cart["flat_results"] == 1
    assert cart["markdown_tokens_per_row"] == round(math.ceil(markdown / 3.0) / 5)
    json_tokens = math.ceil(sum(len(json.dumps(r)) for r in rows) / 3.0)
    assert cart["markdown_ratio"] == round(json_tokens / math.ceil(markdown / 3.0), 2)
    assert cart["markdown_ratio"] > 1
    assert fat["markdown_ratio"] is None  # nested fields: not flat


def test_results_stored_before_schema_9_are_unsized_not_zero(tmp_path, founding_db):
    db = tmp_path / "old.duckdb"
    db.write_bytes(founding_db.read_bytes())
    con = duckdb.connect(str(db))
    con.execute("UPDATE parts SET rows_key = NULL, row_chars = NULL, row_extra = NULL, "
                "envelope_chars = NULL, envelope_extra = NULL, markdown_chars = NULL")  # fmt: skip
    con.close()
    results = api.whatif(db, token_cap=16_000, by="result")
    assert set(results["payload"]) == {"unsized"}
    assert results["fired"].null_count() == results.height
    turns = api.whatif(db, token_cap=16_000)
    assert (turns["cumulative_input"] == turns["cumulative_input_counterfactual"]).all()
    assert api.guards(db)["unsized"].sum() == results.height


# --- the CLI -------------------------------------------------------------------------------


def test_cli_errors_name_the_option(founding_db):
    runner = CliRunner()
    for args, words in (
        (["whatif"], "no guard to replay"),
        (["whatif", "--token-cap", "0"], "--token-cap 0"),
        (["whatif", "--row-cap", "5", "--chars-per-token", "0"], "--chars-per-token"),
        (["whatif", "--token-cap", "5", "--context-limit", "-1"], "--context-limit"),
        (["guards", "--budget", "0"], "--budget 0"),
    ):
        result = runner.invoke(app, [*args, "--db", str(founding_db)])
        assert result.exit_code != 0, args
        assert words in result.output, (args, result.output)
    with pytest.raises(ForensicsError, match="--by 'tool'"):
        api.whatif(founding_db, token_cap=5, by="tool")


def test_cli_json_carries_the_guard_and_provenance(founding_db):
    result = CliRunner().invoke(app, ["whatif", "--token-cap", "16000", "--session", "founding",
                                      "--format", "json", "--db", str(founding_db)])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert rows[0]["guard"].startswith("token cap 16,000")
    assert rows[0]["provenance"]["saving_usd_low"] == "estimated"
    assert rows[0]["provenance"]["extra_turns_paid_for"] == "estimated"
    table = CliRunner().invoke(app, ["whatif", "--token-cap", "16000", "--db", str(founding_db)])
    assert "held fixed" in table.output and "extra_turns_paid_for" in table.output


# --- the fit from lists equals the definition row by row ------------------------------


def test_the_fit_from_lists_is_the_unnested_definition(tmp_path, founding_db, monkeypatch):
    """whatif/fit.py (numpy over each result's list of row sizes) and its definition,
    queries/whatif/fits_unnested.sql (a row per result row), give the same figures over
    random row sizes written into the founding store: empty lists, unknown sizes,
    unknown envelopes, rows over every cap, several sessions, and every guard shape
    (page, row cap, token cap, each alone and together, fractional ratios, a tool
    filter); and the replay, a run of sessions at a time, is the cut of those figures."""
    from forensics.api import Scope, price_book, using
    from forensics.whatif import fit, replay
    from forensics.whatif.guard import Guard

    db = tmp_path / "random.duckdb"
    db.write_bytes(Path(founding_db).read_bytes())
    rng = random.Random(7)
    con = duckdb.connect(str(db))
    # more sessions: the founding one copied under other ids, so that runs hold several
    for copy in range(1, 4):
        for table in ("sessions", "events", "parts", "fact_sessions", "fact_tool_calls"):
            columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            chosen = ", ".join(
                f"session_id || '-{copy}' AS session_id" if c == "session_id" else c
                for c in columns
            )
            con.execute(f"INSERT INTO {table} SELECT {chosen} FROM {table}"  # noqa: S608
                        " WHERE session_id NOT LIKE '%-%'")  # fmt: skip
    keys = con.execute(  # in a set order: the sizes drawn must not hang on the rows' order
        "SELECT session_id, event_id, part_index FROM parts"
        " WHERE kind = 'function_response' AND origin = 'content' ORDER BY ALL"
    ).fetchall()
    assert len(keys) >= 20
    for session, event, index in keys:
        shape = rng.random()
        n = 0 if shape < 0.1 else rng.choice([1, 2, 3, 7, 40, 250, 900])
        chars = [rng.choice([0, 1, 5, 60, 3000, 50_000]) + rng.randrange(40) for _ in range(n)]
        extra = [rng.randrange(30) for _ in range(n)]
        envelope = None if rng.random() < 0.15 else rng.randrange(5_000)
        unknown = shape > 0.95  # no sizes stored
        con.execute(
            "UPDATE parts SET row_chars = CAST(? AS INTEGER[]), row_extra = CAST(? AS INTEGER[]),"
            " envelope_chars = ?, envelope_extra = ? WHERE session_id = ? AND event_id = ?"
            " AND part_index = ? AND origin = 'content'",
            [None if unknown else chars, None if unknown else extra, envelope,
             None if envelope is None else rng.randrange(50), session, event, index],
        )
    con.close()
    guards = [
        Guard(token_cap=16_000),
        Guard(token_cap=500, chars_per_token=2.7),
        Guard(token_cap=1),
        Guard(row_cap=200),
        Guard(row_cap=3, token_cap=2_000, chars_per_token=0.9),
        Guard(page_size=5),
        Guard(page_size=40, row_cap=20, token_cap=9_000),
        Guard(token_cap=4_000, tool="get_order_history"),
    ]
    original = replay.RESULT_RUN_EVENTS
    with using(db) as store:
        costing = Scope(store, None).costing(price_book(None, store))
        for guard in guards:
            params = {k: v for k, v in guard.params().items() if k != "tool"}
            rows = costing.query("whatif/result_rows", tool=guard.tool)
            definition = costing.query("whatif/fits_unnested", {"result_rows": rows.to_arrow()},
                                       **params)  # fmt: skip
            for chunk in (fit.CHUNK_ROWS, 300):  # numpy chunks of many results and of few
                monkeypatch.setattr(fit, "CHUNK_ROWS", chunk)
                mine = fit.fit(rows, row_cap=guard.row_cap, token_cap=guard.token_cap,
                               page_size=guard.page_size, chars_per_token=guard.chars_per_token)
                assert mine.columns == definition.columns, guard.describe()
                assert mine.equals(definition.cast(mine.schema)), guard.describe()  # type: ignore[arg-type]
            # the whole replay, a run of sessions at a time or one run, against the cut of
            # the definition's figures
            expected = costing.query(
                "whatif/results", {"result_fits": definition.to_arrow()},
                token_cap=guard.token_cap, chars_per_token=float(guard.chars_per_token),
            )  # fmt: skip
            for events in (original, 1):
                replay.RESULT_RUN_EVENTS = events
                try:
                    found = replay.results(costing, guard)
                finally:
                    replay.RESULT_RUN_EVENTS = original
                assert found.height > 0 and found["fired"].any()
                expected = expected.with_columns(
                    ((pl.col("result_tokens_estimated") - pl.col("counterfactual_tokens"))
                     * pl.col("sends")).alias("saved_input_tokens"),
                    pl.lit(guard.describe()).alias("guard"),
                )  # fmt: skip
                found = found.drop(ANCHOR_COLUMNS)  # (none stored: an ADK store's are unknown)
                assert found.schema == expected.schema, guard.describe()
                assert found.equals(expected), guard.describe()
            # the guards audit reduces the lists in SQL (whatif/guard_sizes.sql): the same
            # figures as the replay's for a guard of that token cap, row for row
            if guard.token_cap is not None and guard.tool is None:
                audited = costing.facts.query("whatif/guard_sizes", budget=guard.token_cap,
                                              chars_per_token=float(guard.chars_per_token))
                assert audited.height == found.height
                assert audited.equals(found.select(audited.columns)), guard.describe()
    # the figures kept for the audit at 3.0 characters per token (whatif/kept.py) are
    # those it reduces from the rows, but a count over a budget no kept row can answer
    from forensics.store import Store
    from forensics.whatif import kept

    with Store.open(db) as store:
        kept.keep(store)
        assert kept.current(store)
        facts = Scope(store, None).facts
        for budget in (1, 500, 16_000, 10**9):
            mine = facts.query("whatif/guard_sizes_kept", budget=budget)
            live = facts.query("whatif/guard_sizes", budget=budget, chars_per_token=3.0)
            expected = live.select(mine.columns).with_columns(
                pl.when(pl.col("largest_row_guard_tokens") > budget).then(None)
                .otherwise(pl.col("rows_over_budget")).alias("rows_over_budget"))  # fmt: skip
            order = mine.columns
            assert mine.sort(order, nulls_last=True).equals(
                expected.sort(order, nulls_last=True)), budget  # fmt: skip
    audits = [api.guards(db, budget=10**9), api.guards(db, budget=700)]
    with duckdb.connect(str(db)) as con:
        con.execute(f"DROP TABLE {kept.TABLE}")  # the audit reduces the rows again
    again = [api.guards(db, budget=10**9), api.guards(db, budget=700)]
    assert all(a.equals(b) for a, b in zip(again, audits, strict=True))


def test_a_listed_result_without_rows_is_no_flat_result_of_the_guards_audit(
    tmp_path, founding_db
):
    """A result stored with its rows' key, a markdown estimate and no rows (row sizes of
    an empty list; the random sizes above drew one, and the audit divided a null): it
    has no rows to write as JSON or as a table, so it is not one of the flat results
    whose two sizes the audit compares, and every other figure stands."""
    db = tmp_path / "empty.duckdb"
    db.write_bytes(Path(founding_db).read_bytes())
    before = _by_tool(api.guards(db, budget=16_000))
    with duckdb.connect(str(db)) as con:
        emptied = con.execute(
            "UPDATE parts SET row_chars = [], row_extra = [] WHERE event_id = ("
            " SELECT min(event_id) FROM parts WHERE kind = 'function_response'"
            " AND markdown_chars IS NOT NULL AND len(row_chars) > 0)"
            " AND kind = 'function_response' RETURNING tool_name"
        ).fetchall()
    assert len(emptied) == 1
    after = _by_tool(api.guards(db, budget=16_000))
    tool = emptied[0][0]
    assert after[tool]["flat_results"] == before[tool]["flat_results"] - 1
    assert after[tool]["results"] == before[tool]["results"]


def test_the_guards_audit_refuses_row_sizes_the_fit_refuses(tmp_path, founding_db):
    """A result whose two lists differ in length, or hold an unknown size, is an error in
    the audit as in the replay's fit: never a figure summed over what is there."""
    for change, words in (
        ("row_extra = list_resize(row_chars, len(row_chars) + 1, 0)", "differ in length"),
        ("row_chars = list_prepend(NULL::INTEGER, list_slice(row_chars, 2, len(row_chars)))",
         "null"),
    ):
        db = tmp_path / f"{len(words)}.duckdb"
        db.write_bytes(Path(founding_db).read_bytes())
        with duckdb.connect(str(db)) as con:
            con.execute(f"UPDATE parts SET {change} WHERE len(row_chars) > 1")  # noqa: S608
        with pytest.raises(duckdb.Error, match=words):
            api.guards(db)


def test_the_fit_reads_a_null_list_as_no_rows_whatever_arrow_holds_behind_it():
    """Arrow lets a null list own values; polars keeps them. The fit counts none."""
    import pyarrow as pa

    from forensics.whatif import fit

    lists = pa.LargeListArray.from_arrays(pa.array([0, 2, 4, 6], pa.int64()),
                                          pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
                                          mask=pa.array([False, True, False]))  # fmt: skip
    rows = pl.DataFrame({"row_chars": pl.Series(lists), "row_extra": pl.Series(lists),
                         "envelope_chars": [1, 2, 3], "envelope_extra": [0, 0, 0]})  # fmt: skip
    found = fit.fit(rows, row_cap=None, token_cap=100, page_size=5, chars_per_token=3.0)
    assert found["k"].to_list() == [2, 0, 2]
    assert found["dumps_rows"].to_list() == [6, None, 22]  # (1+1)+(2+2); (5+5)+(6+6)
    assert found["row_tokens"].to_list() == [3, None, 8]
