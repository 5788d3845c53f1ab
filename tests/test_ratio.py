"""The chars-per-token fit on real-looking data: per model, constants never negative,
implausible or poor fits replaced by the default with the reason, and a visible
estimate larger than the whole measured prompt flagged."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics import api
from forensics.analysis import fit_ratio
from forensics.analysis.ratio import DEFAULT_CHARS_PER_TOKEN, fit_traced
from forensics.analysis.stored import facts_of
from forensics.model import Event, Part, Session

ROOT = Path(__file__).resolve().parents[1]
A, B = ("app", "a"), ("app", "b")


def test_a_negative_intercept_is_held_at_zero_and_the_slope_refitted():
    # agent b's free line would cross zero at -200 tokens: b shows more than the prompt
    samples = [(A, c, round(c / 4) + 500) for c in (1000, 2000, 4000, 8000)]
    samples += [(B, c, round(c / 4) - 200) for c in (2000, 4000, 8000, 16000)]
    ratio = fit_ratio(samples, "m")
    assert ratio.source == "fitted" and ratio.model == "m"
    assert ratio.constant_tokens[B] == 0.0
    assert ratio.constant_tokens[A] > 0
    assert 3.5 < ratio.chars_per_token < 4.5


def test_too_few_implausible_or_poor_fits_fall_back_to_the_default():
    few = fit_ratio([(A, 100, 30)] * 3)
    assert (few.source, few.chars_per_token) == ("default", DEFAULT_CHARS_PER_TOKEN)
    assert few.note == "3 measured calls, fewer than 5 to fit"
    # 20 chars per token: the fit found something else than a tokenizer
    wide = fit_ratio([(A, c, c // 20 + 100) for c in range(1000, 9000, 1000)])
    assert wide.source == "default"
    assert wide.note == "the fit gave 20.00 chars per token, outside 1 to 8"
    noisy = [(A, c, t) for c, t in ((1000, 900), (2000, 200), (3000, 1500), (4000, 300),
                                     (5000, 2600), (6000, 600))]
    poor = fit_ratio(noisy)
    assert poor.source == "default" and poor.note.startswith("the fit's mean error is ")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([A, B, ("other", "a")]),
                          st.integers(1, 200_000), st.integers(1, 100_000)),
                min_size=0, max_size=40))
def test_a_fit_never_yields_a_negative_system_share(samples):
    ratio = fit_ratio(samples)
    assert all(value >= 0 for value in ratio.constant_tokens.values())
    assert ratio.chars_per_token > 0
    if ratio.source == "fitted":
        assert 1.0 <= ratio.chars_per_token <= 8.0 and ratio.mean_abs_error <= 0.25


def test_traced_calls_give_the_ratio_with_known_system_characters():
    # 4 chars per token over everything the request held, system and tools included
    samples = [(A, w, 2000, round((w + 2000) / 4)) for w in (500, 3000, 9000, 20000, 40000)]
    samples += [(B, w, 600, round((w + 600) / 4)) for w in (800, 5000)]
    ratio = fit_traced(samples, "m")
    assert ratio is not None and ratio.source == "traced" and ratio.calls == 7
    assert abs(ratio.chars_per_token - 4.0) < 0.01
    assert abs(ratio.constant_tokens[A] - 500) < 2 and abs(ratio.constant_tokens[B] - 150) < 1
    assert fit_traced(samples[:4], "m") is None  # too few: the untraced fit decides
    # half a character per token is no tokenizer
    assert fit_traced([(A, w, 0, 2 * w) for w in range(100, 600, 100)]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([A, B]), st.integers(0, 200_000),
                          st.integers(0, 50_000), st.integers(1, 100_000)),
                min_size=0, max_size=30))
def test_a_traced_fit_never_yields_a_negative_share(samples):
    ratio = fit_traced(samples)
    if ratio is not None:
        assert all(value >= 0 for value in ratio.constant_tokens.values())
        assert 1.0 <= ratio.chars_per_token <= 8.0 and ratio.mean_abs_error <= 0.25


def _call_session(measured: int, chars: int) -> Session:
    """A user message of `chars` characters and the model call that read it."""
    user = Event("u", "inv", "user", None, None, 1.0, False, None, None, False, None, None,
                 None, None, frozenset(), None,
                 [Part("content", 0, "text", None, None, False, chars, chars, None)])
    model = Event("m", "inv", "agent", None, None, 2.0, False, None, None, False, None,
                  measured, None, None, frozenset(), "gemini", [
                      Part("content", 0, "text", None, None, False, 10, 10, None)])
    return Session("app", "u1", "s", [user, model], "test")


def test_a_visible_estimate_above_the_measured_prompt_is_blind_and_never_a_negative_share():
    # the real case: measured 29,934 tokens, the visible window estimated at 49,262
    ratio = fit_ratio([(("app", "agent"), c, c // 4 + 300) for c in range(1000, 9000, 1000)])
    session = _call_session(29_934, round(49_262 * ratio.chars_per_token))
    row = facts_of([session], {"gemini": ratio, "": ratio}).calls().row(0, named=True)
    assert row["occupancy_estimated"] == 49_262
    assert row["system_residual"] == 29_934 - 49_262
    assert row["by_role"]["inferred_system"] is None  # not drawn as a share
    assert row["gauge_blind"] is True
    # an estimate below the measured prompt is the system share, not blindness
    session = _call_session(29_934, round(20_000 * ratio.chars_per_token))
    row = facts_of([session], {"gemini": ratio, "": ratio}).calls().row(0, named=True)
    assert row["gauge_blind"] is False and row["by_role"]["inferred_system"] == 9_934


def test_an_estimate_does_not_depend_on_the_files_loaded_with_it(tmp_path):
    exports = ROOT / "sample_data" / "exports"
    files = [exports / "incident.snake.json", exports / "compaction.snake.json"]
    together, apart = tmp_path / "together.duckdb", tmp_path / "apart.duckdb"
    api.ingest_json(together, files)
    for path in files:
        api.ingest_json(apart, [path])
    one = api.calls(together).drop("source").sort("call_id")
    other = api.calls(apart).drop("source").sort("call_id")
    assert one.height > 20 and one.equals(other)
    assert set(one["ratio_source"]) == {"fitted"}


def test_real_sessions_fit_per_model_with_no_negative_share(tmp_path):
    real = ROOT.parent / "shared" / "real_data"
    if not real.is_dir():
        import pytest

        pytest.skip("shared/real_data is absent")
    db = tmp_path / "real.duckdb"
    for path in sorted((real / "adk").glob("*.db")):
        api.ingest_sqlite(db, path)
    api.ingest_json(db, sorted((real / "adk").glob("*.json")))
    api.ingest_json(db, sorted((real / "adk_traces").glob("*__session_*.json")))
    calls = api.calls(db).filter(pl.col("kind") != "summarizer")
    assert calls.height > 50
    shares = calls.unnest("by_role")["inferred_system"].drop_nulls()
    assert shares.min() >= 0
    ratios = api.ratios(db)
    assert {"gemini-2.5-flash", "gemini-2.5-pro"} <= set(ratios)
    for ratio in ratios.values():
        assert all(value >= 0 for value in ratio.constant_tokens.values())
        assert ratio.source == "default" or 1.0 <= ratio.chars_per_token <= 8.0
