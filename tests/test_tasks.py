"""Outcomes, cost per successful task, paired arms and break-even, each figure checked
against a hand computation; ADK's eval results written by google-adk's own model."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.analysis.tasks import (
    MIN_PAIRS,
    RESAMPLES,
    arms,
    bootstrap_mean,
    breakeven_turns,
    compare,
)
from forensics.cli import app

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
PRICES = SAMPLE / "prices.toml"


def test_the_studys_shares_break_even_at_63_turns() -> None:
    # 80% of the bill is cache traffic, 3.3% tool output, cut by 38.4%
    assert breakeven_turns(80.0, 3.3, 0.384) == pytest.approx(0.8 / (0.384 * 0.033))
    assert round(breakeven_turns(80.0, 3.3, 0.384), 1) == 63.1  # type: ignore[arg-type]
    assert breakeven_turns(80.0, 0.0, 0.384) is None


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [1.0, 2.0, 4.0, 8.0, 16.0]
    first, again = bootstrap_mean(values), bootstrap_mean(values)
    assert first == again
    mean, low, high = first
    assert mean == pytest.approx(6.2) and low < mean < high
    assert bootstrap_mean([5.0] * 12) == (5.0, 5.0, 5.0)


def _executions(rows: list[tuple[str, str, bool | None, str, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"session_id": f"s{i}", "invocation_id": "", "task_id": t, "arm": a, "success": ok,
          "calls": calls, "turns": 1, "cost_usd_low": Decimal(c), "cost_usd_high": Decimal(c)}
         for i, (t, a, ok, c, calls) in enumerate(rows)],  # fmt: skip
        schema={"session_id": pl.String, "invocation_id": pl.String, "task_id": pl.String,
                "arm": pl.String, "success": pl.Boolean, "calls": pl.Int64, "turns": pl.Int64,
                "cost_usd_low": pl.Decimal(38, 18), "cost_usd_high": pl.Decimal(38, 18)},
    )  # fmt: skip


def test_paired_arms_by_hand() -> None:
    rows = []
    for n in range(MIN_PAIRS):  # each task: baseline 1.00, the arm 1.20 (+20%), or 0.90
        rows.append((f"t{n}", "base", True, "1.00", 10))
        rows.append((f"t{n}", "cut", n % 2 == 0, "1.20" if n < 5 else "0.90", 14))
    rows.append(("only-base", "base", True, "5.00", 3))  # unpaired: listed, not mixed in
    frame = compare(_executions(rows), "base", "cut")
    low = frame.row(0, named=True)
    # mean of five +20% and five -10%: +5%
    assert low["pairs"] == MIN_PAIRS and low["mean_cost_diff_pct"] == pytest.approx(5.0)
    assert low["ci_low_pct"] < 5.0 < low["ci_high_pct"] and low["note"] is not None
    assert json.loads(low["unpaired_tasks"]) == ["only-base"]
    # cost per success, on the paired tasks only: base 10.00/10 successes; cut 10.50/5
    assert low["cost_per_success_ratio"] == pytest.approx((10.5 / 5) / (10.0 / 10))
    assert (low["success_rate_baseline"], low["success_rate_arm"]) == (100.0, 50.0)
    assert json.loads(low["calls_arm"]) == {"14": 10}
    assert str(RESAMPLES).replace("0000", "0,000") in low["method"]
    few = compare(_executions(rows[:4]), "base", "cut").row(0, named=True)
    assert few["note"] == "2 pairs, fewer than 10: the interval is too wide to decide"


def test_cost_per_successful_task_counts_the_failures_cost() -> None:
    frame = arms(_executions([("t1", "a", True, "1.00", 3), ("t2", "a", False, "3.00", 9),
                              ("t3", "a", None, "2.00", 5)]))  # fmt: skip
    row = frame.row(0, named=True)
    assert (row["tasks"], row["executions"], row["successes"]) == (3, 3, 1)
    assert row["success_rate"] == 50.0  # one of the two evaluated
    assert row["cost_per_success_usd_low"] == Decimal("6.00")
    assert json.loads(row["calls_histogram"]) == {"3": 1, "5": 1, "9": 1}


@pytest.fixture
def sample_store(tmp_path: Path) -> Path:
    db = tmp_path / "t.duckdb"
    api.ingest_sqlite(db, SAMPLE / "adk_v1.db")
    return db


def test_outcomes_files_and_their_bad_rows(sample_store: Path, tmp_path: Path) -> None:
    rows = tmp_path / "outcomes.csv"
    rows.write_text(
        "session_id,task_id,arm,success,score\n"
        "incident,orders,a,false,\n"
        "parallel,shipping,a,,0.9\n"          # a score: needs the threshold
        "nosuch,shipping,a,true,\n"           # unknown session
        "incident,orders,a,true,\n"           # the same execution again
        "compaction,shipping,b,maybe,\n"      # not a boolean
    )  # fmt: skip
    result = api.load_outcomes(sample_store, [rows], threshold=0.8)
    assert result.rows_loaded == 2
    assert [(s.locator, s.reason) for s in result.skips] == [
        (f"{rows}:6", "success is not true or false: 'maybe'"),
        (f"{rows}:4", "session 'nosuch' is not in the store"),
        (f"{rows}:5", f"the same execution as {rows}:2"),
    ]
    same = api.load_outcomes(sample_store, [rows], threshold=0.8)  # the same: nothing written
    assert (same.rows_loaded, same.rows_already_stored, same.notes.get("replaced")) == (0, 2, None)
    # A new threshold makes parallel a failure: a skip naming what differs, until --replace.
    other = api.load_outcomes(sample_store, [rows], threshold=0.95)
    assert (other.rows_loaded, other.rows_already_stored) == (0, 1)
    assert [(s.locator, s.reason) for s in other.skips][-1] == (
        f"{rows}:3",
        "differs from the outcome ingest 2 stored: success True there, False here; "
        "--replace overwrites it",
    )
    assert api.tasks(sample_store, prices=PRICES).filter(
        pl.col("task_id") == "shipping")["successes"].to_list() == [1]  # kept as stored
    again = api.load_outcomes(sample_store, [rows], threshold=0.95, replace=True)
    assert again.notes["replaced"] == 1 and again.rows_loaded == 1
    shown = api.tasks(sample_store, prices=PRICES)
    assert shown.select("task_id", "arm", "successes").rows() == [("orders", "a", 0),
                                                                  ("shipping", "a", 0)]


def test_adk_eval_results_are_outcomes(sample_store: Path, tmp_path: Path) -> None:
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.eval_result import EvalCaseResult, EvalSetResult

    cases = [
        EvalCaseResult(eval_set_id="store-set", eval_id=eid, final_eval_status=status,
                       overall_eval_metric_results=[], eval_metric_result_per_invocation=[],
                       session_id=sid)
        for eid, status, sid in (("c1", EvalStatus.PASSED, "parallel"),
                                 ("c2", EvalStatus.FAILED, "incident"),
                                 ("c3", EvalStatus.NOT_EVALUATED, "compaction"))
    ]  # fmt: skip
    result = EvalSetResult(eval_set_result_id="r1", eval_set_id="store-set",
                           eval_case_results=cases)  # fmt: skip
    path = tmp_path / "store-set_r1.evalset_result.json"
    path.write_text(result.model_dump_json(indent=2))  # what adk eval writes
    legacy = tmp_path / "legacy.evalset_result.json"
    legacy.write_text(json.dumps(result.model_dump_json()))  # the double-encoded file
    loaded = api.load_outcomes(sample_store, [path], arm="cap-16k")
    assert (loaded.rows_loaded, loaded.rows_skipped) == (3, 0)
    frame = api.tasks(sample_store, prices=PRICES)
    assert frame.select("task_id", "arm", "executions", "successes").rows() == [
        ("store-set/c1", "cap-16k", 1, 1),
        ("store-set/c2", "cap-16k", 1, 0),
        ("store-set/c3", "cap-16k", 1, 0),
    ]
    assert frame.filter(pl.col("task_id") == "store-set/c3")["success_rate"].to_list() == [None]
    same = api.load_outcomes(sample_store, [legacy], arm="cap-16k")  # the same outcomes
    assert (same.rows_loaded, same.rows_already_stored, same.rows_skipped) == (0, 3, 0)
    replaced = api.load_outcomes(sample_store, [legacy], arm="cap-32k", replace=True)
    assert replaced.notes["replaced"] == 3
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"session_id": "incident", "task_id": "t", "success": True}]))
    strict = api.load_outcomes(sample_store, [rows, path], arm="cap-16k", eval_only=True)
    assert strict.skips[0].reason == (
        f"{rows}: not an ADK EvalSetResult (--adk-eval): no eval_case_results")
    assert strict.notes["executions"] == 3


def test_the_commands(sample_store: Path, tmp_path: Path) -> None:
    rows = tmp_path / "o.json"
    rows.write_text(json.dumps({"outcomes": [
        {"session_id": "incident", "task_id": "orders", "arm": "a", "success": False},
        {"session_id": "parallel", "task_id": "shipping", "arm": "a", "success": True},
        {"session_id": "compaction", "task_id": "shipping", "arm": "b", "success": True},
    ]}))  # fmt: skip
    runner = CliRunner()
    db = ["--db", str(sample_store)]
    loaded = runner.invoke(app, ["outcomes", "load", str(rows), *db])
    assert loaded.exit_code == 0 and "read 3 outcomes: loaded 3 new" in loaded.stdout
    # outcomes are of a store's sessions: a missing store is said, none is made
    nowhere = tmp_path / "missing.duckdb"
    refused = runner.invoke(app, ["outcomes", "load", str(rows), "--db", str(nowhere)])
    assert refused.exit_code == 1 and refused.stderr.splitlines()[0] == (
        f"Error: no store at {nowhere}: outcomes are of the sessions a store holds")
    assert not nowhere.exists()
    by_arm = runner.invoke(app, ["tasks", "--by", "arm", "--prices", str(PRICES), *db,
                                 "-f", "json"])  # fmt: skip
    arms_ = {r["arm"]: r for r in json.loads(by_arm.stdout)}
    assert arms_["a"]["cost_per_success_usd_low"] == str(
        Decimal(arms_["a"]["cost_usd_low"]) / 1)  # one success pays for both executions
    compared = runner.invoke(app, ["compare", "--baseline", "a", "--arm", "b",
                                   "--prices", str(PRICES), *db, "-f", "json"])  # fmt: skip
    assert json.loads(compared.stdout)[0]["pairs"] == 1
    missing = runner.invoke(app, ["compare", "--baseline", "a", "--arm", "zzz", *db])
    assert missing.exit_code == 1 and "no outcomes under arm 'zzz'" in missing.stderr
    even = runner.invoke(app, ["breakeven", "--prices", str(PRICES), *db, "-f", "json"])
    rows_ = {r["agent"]: r for r in json.loads(even.stdout)}
    orders = rows_["orders_specialist"]
    assert orders["breakeven_calls"] == pytest.approx(
        orders["cache_share_pct"] / (0.384 * orders["tool_output_share_pct"]), abs=0.06)
    assert Decimal(orders["saving_usd_low"]) > 0 and rows_["all"]["sessions"] == 3
    assert rows_["all"]["cost_usd_low"] == str(sum(
        Decimal(r["cost_usd_low"]) for r in json.loads(runner.invoke(
            app, ["cost", "--prices", str(PRICES), *db, "-f", "json"]).stdout)))


def test_unknown_costs_stay_unknown(sample_store: Path, tmp_path: Path) -> None:
    """Without prices the sample's scripted model has none: no figure becomes $0."""
    rows = tmp_path / "o.csv"
    rows.write_text("session_id,task_id,arm,success\nincident,orders,a,false\n"
                    "parallel,shipping,a,true\n")  # fmt: skip
    api.load_outcomes(sample_store, [rows])
    per_arm = api.tasks(sample_store, by="arm").row(0, named=True)
    assert per_arm["cost_usd_low"] is None and per_arm["cost_per_success_usd_low"] is None
    even = {r["agent"]: r for r in api.breakeven(sample_store).iter_rows(named=True)}
    assert even["all"]["unpriced_calls"] > 0
    assert even["all"]["cost_usd_low"] is None and even["all"]["breakeven_calls"] is None
    with pytest.raises(Exception, match=r"--reduction 38.4 is not a fraction"):
        api.breakeven(sample_store, reduction=38.4)


def test_pairs_with_unknown_cost_are_named_not_dropped_silently() -> None:
    rows = [("t1", "base", True, "1.00", 2), ("t1", "cut", True, "2.00", 2),
            ("t2", "base", True, "0", 2), ("t2", "cut", True, "1.00", 2)]  # fmt: skip
    low = compare(_executions(rows), "base", "cut").row(0, named=True)
    assert low["pairs"] == 1 and low["note"].startswith(
        "1 paired task(s) not compared, their cost unknown or 0 under the baseline: t2; ")


def test_csv_rows_are_named_by_their_line_and_a_header_is_required(
    sample_store: Path, tmp_path: Path
) -> None:
    rows = tmp_path / "o.csv"
    rows.write_text('session_id,task_id,success\n\nincident,"multi\nline",maybe\n')
    result = api.load_outcomes(sample_store, [rows])
    assert [(s.locator, s.reason) for s in result.skips] == [
        (f"{rows}:4", "success is not true or false: 'maybe'")]
    headless = tmp_path / "h.csv"
    headless.write_text("incident,orders,true\n")
    good = tmp_path / "g.csv"
    good.write_text("session_id,task_id,success\nparallel,shipping,true\n")
    both = api.load_outcomes(sample_store, [headless, good])
    assert both.rows_loaded == 1 and both.skips[0].locator == str(headless)
    assert "the header names no session_id and task_id columns" in both.skips[0].reason


def test_a_long_field_a_long_number_or_deep_nesting_costs_only_what_it_holds(
    sample_store: Path, tmp_path: Path
) -> None:
    """A CSV field past csv's own limit (128 KB) is read; a JSON file nested too deeply
    or holding a number of over 4,300 digits (the legacy double-encoded EvalSetResult's
    inner text too) is one skip naming it, the other files loaded (each ended the load
    before, the good files with it)."""
    csv_file = tmp_path / "big.csv"
    long_note = '"' + "x" * 200_000 + '"'
    csv_file.write_text("session_id,task_id,arm,success\n"
                        f"incident,orders,{long_note},true\nparallel,shipping,,true\n")  # fmt: skip
    long = tmp_path / "long.json"
    long.write_text('[{"session_id": "incident", "task_id": "t", "score": ' + "9" * 5000 + "}]")
    deep = tmp_path / "deep.json"
    deep.write_text('[{"session_id": "incident", "task_id": "t", "success": true}, '
                    + "[" * 5000 + "]" * 5000 + "]")  # fmt: skip
    legacy = tmp_path / "legacy.evalset_result.json"
    legacy.write_text(json.dumps('{"eval_case_results": ' + "[" * 5000 + "]" * 5000 + "}"))
    result = api.load_outcomes(sample_store, [csv_file, long, deep, legacy])
    assert [(s.locator, s.reason) for s in result.skips] == [
        (str(long), f"{long}: not read: holds a number of over 4,300 digits, more than "
                    "Python's json reads"),
        (str(deep), f"{deep}: not read: JSON nested too deeply"),
        (str(legacy), f"{legacy}: not read: JSON nested too deeply"),
    ]
    assert result.rows_loaded == 2  # both of big.csv's rows


def test_a_field_past_the_limit_stops_the_file_there_and_makes_no_rows_of_its_lines(
    sample_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the field limit the rest of the file is not read: read on, csv starts inside
    the field, and its lines became rows (an outcome of a session named in a note)."""
    from forensics.sources.files import outcomes

    monkeypatch.setattr(outcomes, "FIELD_LIMIT", 1_000)
    note = "x" * 2_000 + "\nincident,bogus,,true\n" + "y" * 10
    rows = tmp_path / "o.csv"
    rows.write_text("session_id,task_id,arm,success\nparallel,shipping,,true\n"
                    f'incident,orders,"{note}",true\nparallel,later,,true\n')  # fmt: skip
    result = api.load_outcomes(sample_store, [rows])
    assert [(s.locator, s.reason) for s in result.skips] == [
        (f"{rows}:3", "not read from here on: field larger than field limit (1000)")]
    assert result.rows_loaded == 1  # the first row; never "bogus"


def test_a_repeated_column_or_eval_cases_of_another_shape_are_named(
    sample_store: Path, tmp_path: Path
) -> None:
    """A CSV that names a column twice (csv kept the last) and an EvalSetResult whose
    eval_case_results is no list (read as nothing, exit 0) are each one skip naming the
    file; the other files load."""
    twice = tmp_path / "twice.csv"
    twice.write_text("session_id,task_id,success,Success\nincident,orders,true,false\n")
    shaped = tmp_path / "shaped.evalset_result.json"
    shaped.write_text(json.dumps({"eval_set_id": "s", "eval_case_results": {"a": 1}}))
    good = tmp_path / "g.csv"
    good.write_text("session_id,task_id,success\nparallel,shipping,true\n")
    result = api.load_outcomes(sample_store, [twice, shaped, good])
    assert [(s.locator, s.reason) for s in result.skips] == [
        (str(twice), f"{twice}:1: the header names success more than once"),
        (str(shaped), f"{shaped}: eval_case_results is dict, not a list of eval case results"),
    ]
    assert result.rows_loaded == 1


def test_eval_results_with_odd_statuses_are_skips(sample_store: Path, tmp_path: Path) -> None:
    path = tmp_path / "odd.evalset_result.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_case_results": [
        {"eval_id": "a", "final_eval_status": [1], "session_id": "incident"},
        {"eval_id": "b", "final_eval_status": True, "session_id": "incident"},
        {"eval_id": "", "final_eval_status": 1, "session_id": "incident"},
        {"eval_id": "d", "final_eval_status": 2, "session_id": "parallel"},
    ]}))  # fmt: skip
    result = api.load_outcomes(sample_store, [path])
    assert result.rows_loaded == 1
    assert [s.reason for s in result.skips] == [
        "final_eval_status is not an EvalStatus: [1]",
        "final_eval_status is not an EvalStatus: True",
        "no eval_id: the task cannot be named",
    ]


def test_the_readme_loads_the_eval_then_the_csv_without_rewriting_either(tmp_path: Path) -> None:
    """The README's order: the eval result (the conservative arm), then the CSV of both
    arms. The CSV says the same of the conservative sessions, so they are already
    stored (not rewritten: they keep the eval's provenance), and the aggressive arm is
    new; a CSV that says otherwise is a skip per row, until --replace."""
    db = str(tmp_path / "s.duckdb")
    api.ingest_sqlite(db, SAMPLE / "tasks.db")
    runner = CliRunner()
    evals = SAMPLE / "tasks.evalset_result.json"
    first = runner.invoke(app, ["outcomes", "load", "--adk-eval", str(evals), "--arm",
                                "conservative", "--db", db])  # fmt: skip
    assert first.exit_code == 0, first.output
    assert "read 12 outcomes: loaded 12 new, 0 already stored, skipped 0" in first.output
    rows = SAMPLE / "outcomes.csv"
    second = runner.invoke(app, ["outcomes", "load", str(rows), "--db", db])
    assert second.exit_code == 0, second.output
    assert "read 24 outcomes: loaded 12 new, 12 already stored, skipped 0" in second.output
    assert "replaced" not in second.output
    stored = _rows(db, "SELECT arm, min(source), min(task_id), count(*) FROM outcomes"
                       " GROUP BY arm ORDER BY arm")  # fmt: skip
    assert stored == [("aggressive", "csv", "support-tasks/t01", 12),
                             ("conservative", "adk-eval", "support-tasks/t01", 12)]  # fmt: skip
    flipped = tmp_path / "flipped.csv"
    flipped.write_text(rows.read_text("utf-8").replace("t01-conservative,support-tasks/t01",
                                                       "t01-conservative,t01"))  # fmt: skip
    third = runner.invoke(app, ["outcomes", "load", str(flipped), "--db", db])
    assert third.exit_code == 0, third.output
    assert "read 24 outcomes: loaded 0 new, 23 already stored, skipped 1" in third.output
    assert ("skipped 1: differs from the outcome ingest 2 stored: task_id 'support-tasks/t01' "
            "there, 't01' here; --replace overwrites it") in third.output  # fmt: skip
    fourth = runner.invoke(app, ["outcomes", "load", str(flipped), "--replace", "--db", db])
    assert "loaded 0 new, replaced 1 stored that differed, 23 already stored" in fourth.output
    assert _rows(db, "SELECT task_id FROM outcomes WHERE session_id = 't01-conservative'"
                 ) == [("t01",)]  # fmt: skip


def _rows(db: str, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_breakeven_under_a_memory_cap_it_meets_is_read_again_above_it(
    sample_store: Path, monkeypatch: pytest.MonkeyPatch, caps_met: list[int]
) -> None:
    """breakeven reads every call with DuckDB's buffers capped (Store.capped): a cap the
    query meets is doubled and the query run again, the same rows as uncapped."""
    uncapped = api.breakeven(sample_store, prices=PRICES)
    assert not caps_met
    monkeypatch.setattr(api, "BREAKEVEN_MEMORY_LIMIT", "1MB")
    assert api.breakeven(sample_store, prices=PRICES).equals(uncapped) and caps_met
