"""Round trips: whatever an event holds, the store's sizes equal the documented definition."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics import api
from forensics.store import Store

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(text, inner, max_size=4), max_leaves=12)
parts = st.one_of(
    st.builds(lambda t: {"text": t}, text),
    st.builds(lambda t: {"text": t, "thought": True}, text),
    st.builds(lambda n, a: {"function_call": {"id": "c", "name": n, "args": a}},
              text, st.dictionaries(text, values, max_size=4)),
    st.builds(lambda n, r: {"function_response": {"id": "c", "name": n, "response": r}},
              text, st.dictionaries(text, values, max_size=4)),
)


def expected_chars(part: dict) -> int:
    """The README's definition, computed independently of the SQL."""
    def compact(value: object) -> int:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    if "text" in part:
        return len(part["text"])
    if "function_call" in part:
        call = part["function_call"]
        return len(call["name"]) + compact(call["args"])
    response = part["function_response"]
    return len(response["name"]) + compact(response["response"])


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.lists(parts, min_size=1, max_size=4), min_size=1, max_size=16),
       camel=st.booleans())
def test_stored_sizes_match_the_definition(tmp_path_factory, events, camel):
    """(Many events to a store: each example's ingest costs 0.6 s, its events little.)"""
    tmp = Path(tmp_path_factory.mktemp("sizes"))
    dumped = []
    for i, event_parts in enumerate(events):
        if camel:
            event_parts = [{"functionCall" if k == "function_call" else
                            "functionResponse" if k == "function_response" else k: v
                            for k, v in p.items()} for p in event_parts]
        dumped.append({"id": f"e{i:02d}", "author": "agent", "timestamp": 1.0 + i,
                       "content": {"role": "model", "parts": event_parts}})
    (tmp / "s.json").write_text(json.dumps(dumped, ensure_ascii=bool(camel)))
    result = api.ingest_json(tmp / "f.duckdb", [tmp / "s.json"])
    assert result.rows_loaded == len(events)
    with Store.open(tmp / "f.duckdb", read_only=True) as con:
        stored = con.run("SELECT event_id, part_index, chars FROM parts ORDER BY event_id, "
                          "part_index")
        totals = dict(con.run("SELECT event_id, chars FROM events"))
    want = [(f"e{i:02d}", j, expected_chars(p)) for i, ps in enumerate(events)
            for j, p in enumerate(ps)]
    assert stored == want
    assert totals == {f"e{i:02d}": sum(expected_chars(p) for p in ps)
                      for i, ps in enumerate(events)}  # fmt: skip


plain = st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="'\\"),
                max_size=30)
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | plain,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain, inner, max_size=4),
    max_leaves=12)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=st.lists(st.dictionaries(plain, plain_values, max_size=5), min_size=1, max_size=8))
def test_relay_size_is_the_length_of_pythons_str(tmp_path_factory, drawn):
    """What ADK puts between the quote markers when it relays another agent's call
    (an event per drawn args, to one store: each example's ingest costs 0.6 s)."""
    tmp = Path(tmp_path_factory.mktemp("relay"))
    events = [{"id": f"e{i:02d}", "author": "a", "timestamp": 1.0 + i, "content": {
        "role": "model", "parts": [
            {"function_call": {"id": f"c{i}", "name": "t", "args": args}},
            {"function_response": {"id": f"c{i}", "name": "t", "response": args}}]}}
        for i, args in enumerate(drawn)]  # fmt: skip
    (tmp / "r.json").write_text(json.dumps(events))
    api.ingest_json(tmp / "f.duckdb", [tmp / "r.json"])
    with Store.open(tmp / "f.duckdb", read_only=True) as con:
        relayed = con.run("SELECT relay_chars FROM parts ORDER BY event_id, part_index")
    assert [r[0] for r in relayed] == [
        size for args in drawn for size in (len(str(dict(sorted(args.items())))),
                                            len(str(args)))]  # fmt: skip


tricky = st.text(st.sampled_from('ab:,"\\/{}[]\n\t\x01é😀 '), max_size=12)
tricky_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky, inner, max_size=3),
    max_leaves=10)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(tricky_values, min_size=1, max_size=5))
def test_relay_separators_of_a_cut_head_are_the_regular_expressions(values):
    """stage_parts counts the ':' and ',' outside strings in a payload's first 8 KB
    (relay_chars) from its quote-split pieces (the macros head_pieces and
    head_separators); the definition takes every whole string out with a regular
    expression. Equal on every prefix of DuckDB's compact JSON of
    values full of quotes, backslashes and separators: a cut inside a string, or inside
    an escape, keeps that string's rest as the expression does."""
    from forensics import sql
    from forensics.store.handle import connect

    con = connect()
    con.execute(sql.load("families/adk/macros").sql)
    texts = [con.execute("SELECT json(?)::VARCHAR", [json.dumps(v)]).fetchone()[0]
             for v in values]  # fmt: skip
    heads = [[t[:n]] for t in texts for n in range(len(t) + 1)]
    con.execute("CREATE TABLE heads (head VARCHAR)")
    con.executemany("INSERT INTO heads VALUES (?)", heads)
    differing = con.execute(r"""
        SELECT head, by_expression, by_pieces FROM (
            SELECT head,
                   length(bare) - length(replace(replace(bare, ':', ''), ',', ''))
                       AS by_expression,
                   head_separators(pieces) AS by_pieces
            FROM (SELECT head, regexp_replace(head, '"(?:[^"\\]|\\.)*"', '', 'g') AS bare,
                         head_pieces(head) AS pieces
                  FROM heads))
        WHERE by_expression IS DISTINCT FROM by_pieces""").fetchall()
    assert not differing and len(heads) > len(values)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(tricky_values, min_size=1, max_size=6), pad=st.integers(0, 64))
def test_relay_size_of_a_long_payload_follows_its_definition(tmp_path_factory, values, pad):
    """Beyond 8 KB, relay_chars scales what the first 8,192 characters of the compact
    JSON add (':' and ',' outside whole strings, less the escaped quotes) to the whole:
    the stored figure equals that definition computed here, wherever the cut falls."""
    import re
    from fractions import Fraction

    from forensics.store.handle import connect

    rows = list(values)
    while len(json.dumps(rows, ensure_ascii=False, separators=(",", ":"))) < 8300:
        rows += rows
    args = {"pad": "x" * pad, "rows": rows}
    tmp = Path(tmp_path_factory.mktemp("relay_long"))
    event = {"id": "e", "author": "a", "timestamp": 1.0, "content": {"role": "model", "parts": [
        {"function_call": {"id": "c", "name": "t", "args": args}}]}}
    (tmp / "r.json").write_text(json.dumps([event]))
    api.ingest_json(tmp / "f.duckdb", [tmp / "r.json"])
    with Store.open(tmp / "f.duckdb", read_only=True) as con:
        (relayed,) = con.run("SELECT relay_chars FROM parts")[0]
    payload = connect().execute("SELECT json(?)::VARCHAR", [json.dumps(args)]).fetchone()[0]
    head = payload[:8192]
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', "", head)
    extra = bare.count(":") + bare.count(",") - head.count('\\"')
    scaled = Fraction(extra * len(payload), 8192)  # (exact in a double: a power of 2)
    rounded = int(scaled + Fraction(1, 2)) if scaled >= 0 else -int(-scaled + Fraction(1, 2))
    assert len(payload) > 8192 and relayed == len(payload) + rounded
