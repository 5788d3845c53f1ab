"""The guard's sizes read from payload bytes (families/adk/results.py) against their
definition (queries/families/adk/stage_results.sql), on generated tool results.

Each generated response goes through the normaliser twice: as ingest runs it (results.py
sizes what it can read, the SQL what it declines) and with every response declined (the
SQL sizes all); the part rows must be equal. The payloads are built to reach every rule:
rows at the top, under a key or under `result`, ties between lists, lists of lists,
non-ASCII and beyond-BMP text, escapes and control characters, '|' in keys and cells,
nested rows (no markdown), keys repeated in an object, keys that read as a path.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.families.adk import normalize, results
from forensics.model import RAW_EVENT_SCHEMA, Batch
from tests.examples import examples

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12) | \
    st.sampled_from(["a|b", "||", 'q"uote', "back\\slash", "\n\t\x01", "é", "😀", "a:b,c",
                     "{[", ""])
numbers = st.integers(-10**15, 10**15) | st.floats(allow_nan=False, allow_infinity=False) | \
    st.sampled_from([0, -0.0, 1e300, 2**70, 123456789012345678901234567890])
scalars = st.none() | st.booleans() | numbers | text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(text, inner, max_size=3), max_leaves=8)
flat_rows = st.dictionaries(text, scalars, max_size=5)
rows = st.lists(flat_rows, min_size=1, max_size=70) | \
    st.lists(st.dictionaries(text, values, max_size=3), min_size=1, max_size=8) | \
    st.lists(st.lists(scalars, max_size=3), min_size=1, max_size=5)


@st.composite
def responses(draw) -> str:
    """A response's JSON text (as a tool's dict would be stored, or written by hand)."""
    shape = draw(st.sampled_from(["top", "key", "result", "tie", "plain", "dup", "path"]))
    found: object
    if shape == "top":
        found = draw(rows)
    elif shape == "key":
        key = draw(st.sampled_from(["data", "", "a|b", "é"]))  # ("" once slipped through)
        found = {draw(text): draw(values), key: draw(rows), "n": draw(scalars)}
    elif shape == "result":
        found = {"result": {"rows": draw(rows), "total": draw(scalars), "more": draw(rows)}}
    elif shape == "tie":
        same = draw(rows)
        found = {"a": same, "b": list(same), "c": draw(values)}
    elif shape == "plain":
        found = draw(values)
    elif shape == "dup":  # a key twice: only written by hand
        a, b = json.dumps(draw(rows)), json.dumps(draw(rows))
        return f'{{"data":{a},"x":1,"data":{b}}}'
    else:
        found = {draw(st.sampled_from(["$", "result.rows", "result"])): draw(rows)}
    return json.dumps(found, ensure_ascii=draw(st.booleans()))


def _event(i: int, response: str) -> str:
    return (f'{{"id":"e{i}","author":"root","timestamp":{1_700_000_000 + i},'
            '"invocation_id":"i","content":{"role":"user","parts":[{"text":"x"},'
            f'{{"function_response":{{"id":"c{i}","name":"t","response":{response}}}}}]}}}}')


def _part_rows(raw: list[str], decline_all: bool) -> list[dict]:
    table = pa.table(
        {
            "app_name": ["a"] * len(raw), "user_id": ["u"] * len(raw),
            "session_id": ["s"] * len(raw), "event_id": [f"e{i}" for i in range(len(raw))],
            "invocation_id": ["i"] * len(raw),
            "timestamp": [1_700_000_000.0 + i for i in range(len(raw))],
            "event_json": [_event(i, r) for i, r in enumerate(raw)],
            "locator": [f"row {i}" for i in range(len(raw))],
        },
        schema=RAW_EVENT_SCHEMA,
    )  # fmt: skip
    normalizer = normalize.Normalizer()
    real = results.size_results

    def declined(payloads: pa.Table, *_: object) -> tuple[pa.Table, pa.Table]:
        none, _ = real(payloads.slice(0, 0))
        return none, payloads.select(list(results.KEY))

    try:
        if decline_all:
            normalize.size_results = declined  # type: ignore[assignment]
        out = normalizer(Batch(table, None, [], len(raw)))
    finally:
        normalize.size_results = real
        normalizer.close()
    found = out.parts.sort_by([("event_id", "ascending"), ("part_index", "ascending")])
    return found.to_pylist()


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(responses(), min_size=1, max_size=8))
def test_read_from_the_bytes_as_the_sql_defines(raw):
    assert _part_rows(raw, False) == _part_rows(raw, True)


@pytest.mark.parametrize("response, declined", [
    ('{"data":[{"a":1}],"data":[{"b":2},{"c":3}]}', True),  # a key twice
    ('{"$":[{"a":1}]}', True),  # a key the SQL reads as a path
    ('{"result.rows":[{"a":1}]}', True),
    ('{"data":[{"a":1},{"b":"x|y"}]}', False),
    ('[{"a":1}]', False),
    # the first 50 rows' lines (325) scaled to 51 rows: 331.5, rounded half away from zero
    (json.dumps({"data": [{"a": 1}] * 49 + [{"a": "x" * 26}, {"a": 1}]}, separators=(",", ":")),
     False),
])  # fmt: skip
def test_what_the_bytes_cannot_tell_is_left_to_the_sql(response, declined):
    payloads = pa.table({**{k: ["x"] for k in results.KEY[:-1]}, "part_index": [1],
                         "payload": [response]})  # fmt: skip
    payloads = payloads.cast(pa.schema([*(pa.field(k, pa.string()) for k in results.KEY[:-1]),
                                        pa.field("part_index", pa.int32()),
                                        pa.field("payload", pa.string())]))  # fmt: skip
    sized, left = results.size_results(payloads)
    assert (left.num_rows, sized.num_rows) == ((1, 0) if declined else (0, 1))
    assert _part_rows([response], False) == _part_rows([response], True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(responses(), min_size=2, max_size=12), st.integers(1, 400))
def test_chunks_sized_in_threads_come_back_in_order(raw, chunk_bytes):
    """The normaliser sizes a batch's chunks two at a time (an executor's submit): the
    same figures, in the same order, as one after another, whatever the chunk size."""
    from concurrent.futures import ThreadPoolExecutor

    # as DuckDB writes them (compact, which this module sizes), and as written by hand
    raw = [json.dumps(json.loads(r), separators=(",", ":"), ensure_ascii=False) for r in raw] + raw
    n = len(raw)
    payloads = pa.table(
        {**{k: [f"{k}{i}" for i in range(n)] for k in results.KEY[:-1]},
         "part_index": pa.array(range(n), pa.int32()), "payload": raw},
    )  # fmt: skip
    real = results.CHUNK_BYTES
    results.CHUNK_BYTES = chunk_bytes  # (a module constant: several chunks of a few)
    try:
        alone = results.size_results(payloads)
        with ThreadPoolExecutor(2) as pool:
            apart = results.size_results(payloads, pool.submit)
    finally:
        results.CHUNK_BYTES = real
    assert apart[0].equals(alone[0]) and apart[1].equals(alone[1])
    assert alone[0].num_rows + alone[1].num_rows == n
