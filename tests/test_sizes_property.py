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


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.lists(parts, min_size=1, max_size=4), min_size=1, max_size=5),
       camel=st.booleans())
def test_stored_sizes_match_the_definition(tmp_path_factory, events, camel):
    tmp = Path(tmp_path_factory.mktemp("sizes"))
    dumped = []
    for i, event_parts in enumerate(events):
        if camel:
            event_parts = [{"functionCall" if k == "function_call" else
                            "functionResponse" if k == "function_response" else k: v
                            for k, v in p.items()} for p in event_parts]
        dumped.append({"id": f"e{i}", "author": "agent", "timestamp": 1.0 + i,
                       "content": {"role": "model", "parts": event_parts}})
    (tmp / "s.json").write_text(json.dumps(dumped, ensure_ascii=bool(camel)))
    result = api.ingest_json(tmp / "f.duckdb", [tmp / "s.json"])
    assert result.rows_loaded == len(events)
    with Store.open(tmp / "f.duckdb", read_only=True) as con:
        stored = con.run("SELECT event_id, part_index, chars FROM parts ORDER BY event_id, "
                          "part_index")
        totals = dict(con.run("SELECT event_id, chars FROM events"))
    want = [(f"e{i}", j, expected_chars(p)) for i, ps in enumerate(events)
            for j, p in enumerate(ps)]
    assert stored == want
    assert totals == {f"e{i}": sum(expected_chars(p) for p in ps) for i, ps in enumerate(events)}


plain = st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="'\\"),
                max_size=30)
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | plain,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain, inner, max_size=4),
    max_leaves=12)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.dictionaries(plain, plain_values, max_size=5))
def test_relay_size_is_the_length_of_pythons_str(tmp_path_factory, args):
    """What ADK puts between the quote markers when it relays another agent's call."""
    tmp = Path(tmp_path_factory.mktemp("relay"))
    event = {"id": "e", "author": "a", "timestamp": 1.0, "content": {"role": "model", "parts": [
        {"function_call": {"id": "c", "name": "t", "args": args}},
        {"function_response": {"id": "c", "name": "t", "response": args}}]}}
    (tmp / "r.json").write_text(json.dumps([event]))
    api.ingest_json(tmp / "f.duckdb", [tmp / "r.json"])
    with Store.open(tmp / "f.duckdb", read_only=True) as con:
        relayed = [r[0] for r in con.run("SELECT relay_chars FROM parts ORDER BY part_index")]
    assert relayed == [len(str(dict(sorted(args.items())))), len(str(args))]
