"""The column-at-a-time writers (cli/writers.py) give the bytes of the definition
(output.to_json, output.to_csv: a dict per row, json.dumps, the csv module) on frames
of every column type, hostile text included, chunk boundaries anywhere."""

from __future__ import annotations

import json
import random
import struct
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.cli import writers
from forensics.cli.output import to_csv, to_json, to_table
from forensics.sanitize import BIDI_CONTROLS
from tests.examples import examples

# what a hostile or unlucky value holds: controls, bidi and invisible characters,
# quotes, separators, formula starts, non-ASCII digits, astral characters
NASTY = (
    "\x00\x07\x08\t\n\r\x1b\x1f\x7f\x85\x9b\u2028\u2029\u200b\ufeff\U000e0041"
    + BIDI_CONTROLS
    + '",;\'\\/=+-@{}[]: .eE0123456789٣߀é中😀'
)
text = st.text(st.sampled_from(NASTY) | st.characters(codec="utf-8", exclude_categories=("Cs",)),
               max_size=12)  # fmt: skip
numbery = st.from_regex(r"-?[0-9٣]{1,4}(,[0-9]{3})?(\.[0-9]+)?([eE][-+]?[0-9]+)?\n?",
                        fullmatch=True)  # fmt: skip
floats = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(min_value=1e-6, max_value=2e-4)
    | st.floats(min_value=1e15, max_value=1e17)
    | st.sampled_from([0.0, -0.0, 1e-5, 1e16, 5e-324, 3.6])
)
moments = st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 30))
ints = st.integers(-(2**63), 2**63 - 1)
money = st.decimals(min_value=-(10**19), max_value=10**19, places=18, allow_nan=False)
plain_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
ROLE = pl.Struct({"user": pl.Int64, "tool": pl.Int64, "share": pl.Float64, "ok": pl.Boolean})
MIXED = pl.Struct({"name": pl.String, "n": pl.Int32, "none": pl.Null})

# kind -> (dtype, values); datetimes are naive in the rows and given their zone by dtype
KINDS: dict[str, tuple[Any, st.SearchStrategy[Any]]] = {
    "text": (pl.String, text | numbery),
    "int": (pl.Int64, ints),
    "int32": (pl.Int32, st.integers(-(2**31), 2**31 - 1)),
    "uint8": (pl.UInt8, st.integers(0, 255)),
    "float": (pl.Float64, floats),
    "float32": (pl.Float32, st.floats(width=32)),
    "bool": (pl.Boolean, st.booleans()),
    "null": (pl.Null, st.none()),
    "naive": (pl.Datetime("us"), moments),
    "utc": (pl.Datetime("us", "UTC"), moments),
    "paris": (pl.Datetime("ms", "Europe/Paris"), st.datetimes(datetime(1900, 1, 1),
                                                               datetime(2100, 1, 1))),
    "ns": (pl.Datetime("ns", "UTC"), st.datetimes(datetime(1800, 1, 1), datetime(2200, 1, 1))),
    "date": (pl.Date, st.dates()),
    "usd": (pl.Decimal(38, 18), money),
    "whole": (pl.Decimal(20, 0), st.decimals(-(10**19), 10**19, places=0)),
    "category": (pl.Categorical, st.sampled_from(["a", "b,c", "=x", "\u202e"])),
    "texts": (pl.List(pl.String), st.lists(st.none() | text, max_size=3)),
    "ints": (pl.List(pl.Int64), st.lists(st.none() | st.integers(-99, 99), max_size=3)),
    "floats": (pl.List(pl.Float64), st.lists(floats, max_size=3)),
    "flags": (pl.List(pl.Boolean), st.lists(st.booleans(), max_size=3)),
    "by_role": (ROLE, st.fixed_dictionaries({"user": ints, "tool": st.none() | ints,
                                             "share": floats, "ok": st.booleans()})),
    "mixed": (MIXED, st.fixed_dictionaries({"name": st.none() | text,
                                            "n": st.integers(-5, 5), "none": st.none()})),
    "json": (pl.String, plain_json.map(lambda v: json.dumps(v, ensure_ascii=False))),
    "moments": (pl.List(pl.Datetime("us")), st.lists(moments, max_size=2)),
}
CSV_ONLY = {  # the definition refuses these in JSON (json.dumps of a time)
    "time": (pl.Time, st.times()),
    "duration": (pl.Duration("us"), st.timedeltas(timedelta(-9), timedelta(9))),
}


@st.composite
def frames(draw: st.DrawFn, kinds: dict[str, tuple[Any, st.SearchStrategy[Any]]],
           ) -> tuple[pl.DataFrame, list[str]]:  # fmt: skip
    chosen = draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=6))
    height = draw(st.integers(0, 7))
    columns, schema, json_columns = {}, {}, []
    for i, kind in enumerate(chosen):
        dtype, values = kinds[kind]
        name = f"{kind}_{i}"
        nullable = kind != "null" and draw(st.booleans())
        cell = st.none() | values if nullable else values
        columns[name] = draw(st.lists(cell, min_size=height, max_size=height))
        schema[name] = dtype
        if kind == "json":
            json_columns.append(name)
    frame = pl.DataFrame(
        {n: columns[n] for n in schema},
        schema={n: _row_type(d) for n, d in schema.items()},
    )
    return frame.with_columns(pl.col(n).cast(d) for n, d in schema.items()), json_columns


def _row_type(dtype: Any) -> Any:
    """The type the drawn values are built as before their cast (zones come by cast)."""
    if isinstance(dtype, pl.Datetime):
        return pl.Datetime(dtype.time_unit)
    return pl.String if dtype == pl.Categorical else dtype


def _zoned(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(n).dt.replace_time_zone("UTC").dt.convert_time_zone(d.time_zone)
        for n, d in frame.schema.items()
        if isinstance(d, pl.Datetime) and d.time_zone
    )


def _written(write: Any, *args: Any) -> str:
    pieces: list[bytes] = []
    write(*args[:1], pieces.append, *args[1:])
    return b"".join(pieces).decode()


def _definition_json(frame: pl.DataFrame, json_columns: list[str],
                     extra: dict[str, Any] | None) -> str | type[Exception]:  # fmt: skip
    try:
        return to_json(frame, json_columns, extra) + "\n"
    except (TypeError, ValueError) as e:
        return type(e)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(writers, "CHUNK_ROWS", 3)  # chunk boundaries inside the frames


EXTRAS = st.none() | st.just({"provenance": {"occupancy": "measured", "x\u202e": "y"}})


def _runs(frame: pl.DataFrame, cuts: list[int]) -> list[pl.DataFrame]:
    """The frame as runs of rows (as api.calls_in_runs gives a run of sessions at a
    time), empty runs included."""
    bounds = [0, *sorted(min(c, frame.height) for c in cuts), frame.height]
    return [frame.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]


CUTS = st.lists(st.integers(0, 7), max_size=3)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=frames(KINDS), extra=EXTRAS, cuts=CUTS)
def test_json_is_the_definitions(drawn, extra, cuts):
    frame, json_columns = drawn
    frame = _zoned(frame)
    expected = _definition_json(frame, json_columns, extra)
    if isinstance(expected, type):
        with pytest.raises(expected):
            _written(writers.write_json, frame, json_columns, extra)
        return
    assert _written(writers.write_json, frame, json_columns, extra) == expected
    runs = iter(_runs(frame, cuts))
    assert _written(writers.write_json, runs, json_columns, extra) == expected


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=frames({**KINDS, **CSV_ONLY}), cuts=CUTS)
def test_csv_is_the_definitions(drawn, cuts):
    frame, json_columns = drawn
    frame = _zoned(frame)
    expected = to_csv(frame, json_columns)
    assert _written(writers.write_csv, frame, json_columns) == expected
    assert _written(writers.write_csv, iter(_runs(frame, cuts)), json_columns) == expected


TABLE_KINDS = {**KINDS, **CSV_ONLY, "old": (pl.Datetime("us"), st.datetimes(datetime(1, 1, 1),
                                                                        datetime(1200, 1, 1))),
               "long": (pl.String, st.text(st.sampled_from("ab \t\n\u3000\x1c\u202e"),
                                           min_size=50, max_size=90)),
               "wide": (pl.String, st.text(st.sampled_from("ab \u3000\x1b\U000e0041é中"),
                                           min_size=55, max_size=90)),  # cut in the middle
               # instants within one second: the table shows their milliseconds
               "close": (pl.Datetime("us", "UTC"), st.integers(0, 999_999).map(
                   lambda us: datetime(2026, 10, 22, 9, 0, 1, us)))}  # fmt: skip


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=frames(TABLE_KINDS), data=st.data())
def test_tables_are_the_definitions(drawn, data):
    frame, json_columns = drawn
    long = [n for n in frame.columns if n.startswith("long_")]
    frame = _zoned(frame).rename({long[0]: "locator"} if long else {})  # shown whole
    columns = data.draw(st.none() | st.permutations(frame.columns))
    summable = [c for c, d in frame.schema.items()
                if d.is_integer() or d.is_float() or isinstance(d, pl.Decimal)]  # fmt: skip
    totals = data.draw(st.lists(st.sampled_from(summable), unique=True) if summable
                       else st.just([]))  # fmt: skip
    footnote = data.draw(st.none() | text)
    args = (columns, totals, footnote, json_columns)
    try:
        expected = to_table(frame, *args)
    except (TypeError, ValueError, OverflowError) as e:
        with pytest.raises(type(e)):
            _written(writers.write_table, frame, *args)
        return
    assert _written(writers.write_table, frame, *args) == expected


def test_whitespace_is_what_str_split_splits_on():
    assert writers.WHITESPACE == "".join(c for c in map(chr, range(0x110000)) if c.isspace())


def test_an_extra_key_that_is_a_column_keeps_the_columns_place():
    frame = pl.DataFrame({"a": [1, 2], "provenance": ["x", "y"], "b": [True, None]})
    extra = {"provenance": {"a": "measured"}}
    assert _written(writers.write_json, frame, [], extra) == to_json(frame, [], extra) + "\n"
    alone = frame.select("provenance")  # nothing left to format
    runs = iter(_runs(alone, [1, 1]))
    assert _written(writers.write_json, runs, [], extra) == to_json(alone, [], extra) + "\n"


def test_floats_are_written_as_repr_writes_them(monkeypatch):
    monkeypatch.setattr(writers, "CHUNK_ROWS", 7_919)  # (the others cut at 3 rows: 20 s here)
    rng = random.Random(26)
    values = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(50_000)]
    values += [rng.random() * 10.0 ** rng.randint(-25, 25) for _ in range(50_000)]
    values += [round(rng.random(), rng.randint(0, 8)) for _ in range(20_000)]
    frame = pl.DataFrame({"x": values, "y": [-v for v in values]})
    assert _written(writers.write_csv, frame) == to_csv(frame)
    assert writers._polars_floats_agree()


def test_a_frame_of_hostile_text_in_both_formats():
    evil = ["\x1b]0;pwned\x07", "shop\u202e009", "=HYPERLINK(1)", "-5", "-x", "a\tb\rc",
            "+1", 'say "hi", then\nleave', "", None, "-1,234.5e-7", "-٣"]
    frame = pl.DataFrame({"text": evil, "n": range(len(evil)),
                          "at": [datetime(2026, 1, 1, tzinfo=UTC)] * len(evil),
                          "day": [date(2026, 1, 1)] * len(evil),
                          "cost": [Decimal("0.000123")] * len(evil),
                          "t": [time(1, 2)] * len(evil)})
    csv_text = _written(writers.write_csv, frame)
    assert csv_text == to_csv(frame)
    assert "\x1b" not in csv_text and "\u202e" not in csv_text
    json_text = _written(writers.write_json, frame.drop("t"), [], None)
    assert json_text == to_json(frame.drop("t")) + "\n"
    assert "\x1b" not in json_text and "\u202e" not in json_text


# -- whole-store frames, a run of sessions at a time ----------------------------------


@pytest.fixture(scope="module")
def golden_db(tmp_path_factory):
    from tests import golden

    return golden.build_store(tmp_path_factory.mktemp("runs") / "golden.duckdb")


@pytest.mark.parametrize("run_events", [1, 40, 10**9])  # a run per session, a few, one
def test_frames_read_by_runs_are_the_frames_read_whole(golden_db, monkeypatch, run_events):
    from typer.testing import CliRunner

    from forensics import api
    from forensics.analysis import stored
    from forensics.cli import app
    from forensics.columns import CALLS, TURNS
    from forensics.selection import Selection

    monkeypatch.setattr(stored, "RUN_EVENTS", dict.fromkeys(stored.RUN_EVENTS, run_events))
    runner = CliRunner()
    cases = [
        (["calls", "--all"], api.calls(golden_db), CALLS, api.calls_in_runs(golden_db)),
        (["turns"], api.turns(golden_db), TURNS, api.turns_in_runs(golden_db)),
        (["calls", "--all", "--app", "store"], api.calls(golden_db, Selection(app="store")), CALLS,
         api.calls_in_runs(golden_db, Selection(app="store"))),
        (["turns", "--app", "nowhere"], api.turns(golden_db, Selection(app="nowhere")), TURNS,
         api.turns_in_runs(golden_db, Selection(app="nowhere"))),
    ]
    for args, whole, spec, runs in cases:
        frames = list(runs)
        assert frames and pl.concat(frames).equals(whole), args
        provenance = {"provenance": spec.provenance}
        for fmt, expected in (("csv", to_csv(whole)),
                              ("json", to_json(whole, (), provenance) + "\n")):  # fmt: skip
            result = runner.invoke(app, [*args, "--db", str(golden_db), "-f", fmt])
            assert result.exit_code == 0, result.output
            assert result.stdout == expected, (args, fmt)


def test_a_table_wider_than_the_terminal_leaves_columns_out_and_says_which():
    """Issue 33, item 9: tables of 200-250 characters wrapped in an 80-column terminal.
    In a terminal (only: a pipe gets every column) the columns that do not fit are left
    out from the right, the first always kept; the footnote names them."""
    frame = pl.DataFrame({"id": ["a", "b"], "count": [1, 22], "path": ["x" * 60, "y"],
                          "note": ["n", "m"]})  # fmt: skip
    out: list[bytes] = []
    writers.write_table(frame, out.append, totals=["count"], footnote="the footnote",
                        width=30)  # fmt: skip
    lines = b"".join(out).decode().splitlines()
    assert lines[0] == "id              count"
    assert lines[-2:] == [
        "the footnote",
        "left out to fit 30 columns: path, note (-f csv, -f json or a wider terminal "
        "shows them)",
    ]
    assert max(len(line) for line in lines[:-2]) <= 30
    whole: list[bytes] = []
    writers.write_table(frame, whole.append, totals=["count"], footnote="the footnote")
    assert b"".join(whole).decode() == to_table(frame, None, ["count"], "the footnote")
    assert writers.fitting([10, 5, 60], 17) == 2 and writers.fitting([90], 40) == 1


def test_a_table_aligns_wide_characters_by_the_columns_they_take():
    """CJK and most emoji take two terminal columns and a combining mark none: a table
    pads and cuts cells by the columns they take (output.display_width), so each row's
    right-aligned last column ends where the header's does, in both writers."""
    from forensics.cli.output import MAX_CELL, display_width

    names = ["read_file", "検索ツール", "emoji😀x", "cafe\u0301", "長" * 40, "ｱｲｳ" * 30, "a" * 70]
    frame = pl.DataFrame({"tool": names, "who": ["é", "東京", "x", "", "z", "w", "v"],
                          "n": range(len(names))})  # fmt: skip
    table = to_table(frame, totals=["n"])
    assert _written(writers.write_table, frame, None, ["n"]) == table
    lines = [line for line in table.splitlines() if not line.startswith("---")]
    assert len({display_width(line) for line in lines}) == 1, table
    cells = [line.split("  ")[0].rstrip() for line in lines[1:-1]]
    assert "長" * 14 + "…" + "長" * 15 in cells  # 28 + 1 + 30 columns
    assert all(display_width(cell) <= MAX_CELL for cell in cells)
    assert display_width("cafe\u0301") == 4 and display_width("😀") == 2


def test_what_the_writers_take_for_one_column_a_character_is():
    """cli/writers.py looks for the characters of other widths only where its pattern
    says they may be: every character it leaves out (and shown as itself) is one column,
    and the pattern finds the wide ones and the marks."""
    from forensics.cli.output import display_width
    from forensics.sanitize import visible

    chars = [c for c in map(chr, [*range(0x20, 0x300), 0x2026]) if visible(c) == c]
    found = pl.Series(chars).str.contains(writers._NOT_ONE_COLUMN)
    assert not found.any() and all(display_width(c) == 1 for c in chars)
    others = ["\u0301", "\u20d0", "中", "😀", "\uff21", "\u231a"]
    assert pl.Series(others).str.contains(writers._NOT_ONE_COLUMN).all()
    assert all(display_width(c) != 1 for c in others)
