"""A Claude Code event's store rows made by the reader (families/claude_code/rows.py)
against their definition, the normaliser's SQL over the event's JSON: the same rows
for every body the reader makes rows of, on generated bodies of every shape the reader
writes and values at their worst; and the same store, table for table, whether the
reader makes the rows or writes every event as JSON, on the bundled sample, the real
transcripts (when present) and generated sessions."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from forensics import api
from forensics.families.adk.normalize import Normalizer
from forensics.families.claude_code import rows, transcript
from forensics.sources.base import EventBatcher
from tests.test_claude_code import REAL, Transcript, _tables, tool_result, tool_use, usage

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code" / "projects"

# strings at their worst: control characters (escaped as \u00XX by both writers, in
# other hex cases), the five short escapes, quotes, backslashes (a backslash and a u),
# separators, non-ASCII and astral characters, and long runs past the preview and the
# relay's 8 KB head
_PIECES = ["a", "Z", " ", ":", ",", '"', "\\", "\\u", "\n", "\t", "\r", "\b", "\f", "\x01",
           "\x1f", "\x7f", "é", "字", "𝄞", "\u2028", "{", "}", "[", "]", '\\"', "|"]  # fmt: skip


def _text(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(["x", ":,", '"q"']) * rng.choice([3000, 5000, 9000])
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 30)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return _text(rng)
    if roll < 0.4:
        return rng.choice([0, 7, -3, 2**31, 2**63 - 1, -(2**63), 2**64 + 5, True, False, None])
    if roll < 0.43:
        return rng.choice([1.5, 1e16, 1e-7, 3e-6, 0.1, 2.0, -0.0, 1e21, 1.2345e19, 6.02e23,
                           123456.789, 9999999999999998.0, 1e-5])
    if roll < 0.45:
        deep: Any = "end"
        for _ in range(rng.randint(60, 70)):
            deep = [deep]
        return deep
    if roll < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _part(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return {"text": _text(rng)}
    if kind == 1:
        part: dict[str, Any] = {"text": _text(rng), "thought": True}
        if rng.random() < 0.5:
            part["thought_signature"] = "1"
        return part
    if kind == 2:
        args = _value(rng) if rng.random() < 0.3 else {"command": _text(rng), "n": 3}
        return {"function_call": {"id": f"tu_{rng.randrange(99)}", "name": _text(rng),
                                  "args": args}}  # fmt: skip
    if kind == 3:
        result = _value(rng) if rng.random() < 0.5 else _text(rng)
        records = [{"id": i, "name": _text(rng)} for i in range(rng.randint(0, 5))]
        response = rng.choice([{"result": result}, {"result": records},
                               {"result": result, "is_error": True}])  # fmt: skip
        return {"function_response": {"id": "tu_1", "name": "Read", "response": response,
                                      "chars": rng.randrange(10_000)}}  # fmt: skip
    if kind == 4:
        return {"inline_data": rng.choice([{"mime_type": "image/png", "data_chars": 12},
                                           _value(rng), None])}  # fmt: skip
    if kind == 5:
        return {"unknown_key": 1}  # declined
    if kind == 6:
        return {"text": 5}  # declined: not text
    return {"function_call": {"id": None, "name": "Bash", "args": {}}}


def _body(rng: random.Random, at: float) -> dict[str, Any]:
    body: dict[str, Any] = {"author": rng.choice(["user", "main", "Explore" + _text(rng)]),
                            "timestamp": at, "id": "e", "invocation_id": "i"}  # fmt: skip
    if rng.random() < 0.8:
        body["content"] = {"role": "model", "parts": [_part(rng) for _ in range(rng.randint(0, 4))]}
    if rng.random() < 0.3:
        body["usage_metadata"] = {"prompt_token_count": rng.randrange(10**6),
                                  "cached_content_token_count": 5,
                                  "candidates_token_count": rng.choice([0, 7, 2**64]),
                                  "total_token_count": 9}  # fmt: skip
    if rng.random() < 0.2:
        body["model_version"] = rng.choice(["claude-opus-4-1", None, 4])
    if rng.random() < 0.1:
        body["error_code"], body["error_message"] = "429", _text(rng)
    if rng.random() < 0.15:
        compaction: dict[str, Any] = {"start_timestamp": at - 60, "end_timestamp": at - 1}
        if rng.random() < 0.7:
            compaction["compacted_content"] = {"role": "user", "parts": [{"text": _text(rng)}]}
        body["actions"] = {"compaction": compaction}
    if rng.random() < 0.03:
        body["branch"] = rng.choice(["agent-1", 3])
    if rng.random() < 0.02:
        body["timestamp"] = rng.choice([-5.0, 4e10, float("nan")])
    if rng.random() < 0.02:
        body["turn_complete"] = True  # a key the reader never writes: declined
    return body


def _normalised(
    made: bool | None, bodies: list[dict[str, Any]], normalizer: Normalizer | None = None
) -> tuple[list[tuple[Any, ...]], ...]:
    """The bodies' events and parts as the normaliser gives them: parsed from their JSON
    (`made` False), as rows.py made them (True), or made where rows.py does (None)."""
    batcher = EventBatcher()
    for i, body in enumerate(bodies):
        row: dict[str, Any] = {"app_name": "app", "user_id": "u", "session_id": "s",
                               "event_id": f"e{i}", "invocation_id": f"i{i // 3}",
                               "timestamp": body["timestamp"], "locator": f"f:{i}",
                               "event_json": transcript.dumps(body, True)}  # fmt: skip
        found = rows.made(body) if made is not False else None
        assert found is not None or made is not True
        if found is not None:
            row["event_json"], row["json_chars"], row["made"] = None, 1, found
        batcher.add(**row)
    own = normalizer is None
    normalizer = normalizer or Normalizer()
    try:
        out = normalizer(batcher.take())
    finally:
        if own:
            normalizer.close()
    assert not out.skipped
    return tuple(_sorted(t) for t in (out.events, out.parts, out.sessions))


def _sorted(table: pa.Table) -> list[tuple[Any, ...]]:
    names = table.column_names
    return sorted((tuple(row[n] for n in names) for row in table.to_pylist()), key=repr)


@pytest.mark.parametrize("seed", range(12))
def test_made_rows_are_the_ones_the_sql_reads_from_the_json(seed: int) -> None:
    rng = random.Random(seed)
    bodies = [_body(rng, 1_763_300_000.0 + i) for i in range(60)]
    kept = [b for b in bodies if rows.made(b) is not None]
    declined = len(bodies) - len(kept)
    assert kept and declined  # both kinds drawn
    assert _normalised(True, kept) == _normalised(False, kept)


def test_a_payload_is_declined_where_duckdb_writes_it_otherwise() -> None:
    def made(args: Any) -> bool:
        body = {"author": "a", "timestamp": 1.0, "content": {"parts": [
            {"function_call": {"id": "t", "name": "n", "args": args}}]}}  # fmt: skip
        return rows.made(body) is not None

    assert made({"a": "b", "n": 2**70, "ok": [True, None], "f": [1.5, 1e-7, 1e21, -0.0]})
    assert not made({"x": 1e16})  # DuckDB: 10000000000000000.0
    assert not made({"x": [3e-6]})  # DuckDB: 0.000003
    assert not made({"x": "\x01"})  # DuckDB: \u0001 in upper case hex
    assert not made({"x": "C:\\users"})  # a backslash and a u: declined alike
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    assert made(deep)  # DuckDB reads and writes it
    for _ in range(2000):
        deep = [deep]
    assert not made(deep)  # msgspec cannot write it (nor read it: a line json read)


def _sessions(root: Path) -> Path:
    """Sessions of every kind of line the reader makes rows of or declines: prompts, tool
    calls and results (text, MCP JSON with floats and control characters), thinking,
    images, a compaction with its summary, an API error."""
    for n, extra in enumerate(["plain", "float 1e16 and \x01 control", "C:\\users\\me"]):
        t = Transcript(f"s-{n}")
        t.prompt("go " + extra)
        t.response(f"m{n}", [{"type": "thinking", "thinking": "hmm", "signature": "x"},
                             tool_use("tu_1", "mcp__db__query", sql=extra, limit=3)],
                   usage(10, 0, 100, 5))  # fmt: skip
        awkward = ["1e-07", "3e-06", "2e+17"][n]  # DuckDB writes the last two otherwise
        t.results([tool_result("tu_1", '{"rows": [{"id": 1, "v": 2.5, "w": ' + awkward
                               + '}, {"id": 2, "v": "'
                               + extra.replace("\\", "\\\\").replace("\x01", "\\u0001")
                               + '"}]}')])  # fmt: skip
        t.response(f"m{n}b", [{"type": "text", "text": "done " + extra},
                              {"type": "image", "source": {"data": "AAAA"}}],
                   usage(20, 100, 0, 5))  # fmt: skip
        t.add(t._line("system", subtype="compact_boundary", content="Conversation compacted",
                      compactMetadata={"trigger": "auto", "preTokens": 9_102}))  # fmt: skip
        t.add(t._line("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                      message={"role": "user", "content": "continued: " + extra}))  # fmt: skip
        t.prompt("next")
        t.write(root)
    # a value only json reads (NaN in a tool result's JSON): no rows made after it
    t = Transcript("s-nan")
    t.prompt("go")
    t.response("mn", [tool_use("tu_1", "mcp__db__query", limit=3)], usage(10, 0, 100, 5))
    t.results([tool_result("tu_1", '{"rows": [NaN]}')])
    t.response("mn2", [{"type": "text", "text": "ok"}], usage(20, 100, 0, 5))
    t.write(root)
    # a failed request whose error's type is a lone surrogate escape (read by json)
    t = Transcript("s-err")
    t.prompt("go")
    text = 'API Error: 400 {"error":{"type":"\\ud800","message":"bad"}}'
    t.add(t._line("assistant", isApiErrorMessage=True, message={
        "id": "a1", "model": "<synthetic>", "role": "assistant", "type": "message",
        "usage": usage(0, 0, 0, 0), "content": [{"type": "text", "text": text}]}))  # fmt: skip
    t.prompt("again")
    t.write(root)
    # a subagent's file whose name is not UTF-8 (its thread is named with the escape)
    sub = Transcript("s-0", start=30)
    sub.prompt("look")
    sub.response("ms", [{"type": "text", "text": "seen"}], usage(3, 0, 50, 2))
    folder = root / "projects" / "-home-dev-p" / "s-0" / "subagents"
    folder.mkdir(parents=True)
    with open(os.fsencode(folder) + b"/agent-a\xffb.jsonl", "w", encoding="utf-8") as out:
        out.write("\n".join(sub.lines) + "\n")
    return root


@pytest.mark.parametrize("where", ["sample", "real", "generated", "undecodable root"])
def test_a_store_is_the_same_with_rows_made_or_parsed(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if where == "real" and not REAL.is_dir():
        pytest.skip("shared/real_data is absent")
    root = {"sample": SAMPLE, "real": REAL}.get(where, tmp_path / "claude")
    if where == "undecodable root":  # (every event's place is not valid Unicode)
        root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/claude\xff"))
    if where in ("generated", "undecodable root"):
        _sessions(root)
    counted = {True: 0, False: 0}  # events made, and declined

    def counting(body: dict[str, Any], floats: bool = True) -> Any:
        found = rows.made(body, floats=floats)
        counted[found is not None] += 1
        return found

    monkeypatch.setattr(transcript, "made", counting)
    made = tmp_path / "made.duckdb"
    skips = [api.ingest_claude_code(made, [root]).skips]
    monkeypatch.setattr(transcript, "MAKE_ROWS", False)
    parsed = tmp_path / "parsed.duckdb"
    skips.append(api.ingest_claude_code(parsed, [root]).skips)
    assert skips[0] == skips[1]
    one, two = _tables(made), _tables(parsed)
    assert one.keys() == two.keys()
    for table in one:
        assert one[table] == two[table], table
    if where == "undecodable root":  # (events whose place only is not valid Unicode:
        # stored; the one skip, a lone surrogate in a line's text, places it with escapes)
        assert counted[True] > 10 and [s.reason[:37] for s in skips[0]] == [
            "the event's text is not valid Unicode"]
        assert all("claude\\udcff" in s.locator for s in skips[0])
    else:
        assert counted[True] > 10 and (counted[False] > 0 or where == "sample")


def test_the_edges_of_relay_rounding_and_compaction_are_the_sql_s() -> None:
    # payloads of 12,288 characters (1.5 x the relay's 8 KB head): its extra scaled lands
    # on a half, which DuckDB rounds away from zero (Python's round to even); a
    # compaction with one of its bounds; an empty response, an empty text
    bodies = []
    for keys in range(1, 8):
        for quoted in (0, 1, 3, 4):  # (4: an extra of -3, scaled to -4.5)
            args = {f"k{i}": "v" for i in range(keys - 1)}
            args["z"] = '"' * quoted
            args["z"] += "x" * (12288 - len(transcript.dumps(args, True)))
            bodies.append({"author": "a", "timestamp": 1.0 + len(bodies), "content": {"parts": [
                {"function_call": {"id": "t", "name": "n", "args": args}}]}})  # fmt: skip
    for bounds in ({"start_timestamp": 5.0}, {"end_timestamp": 6.0}, {}):
        bodies.append({"author": "user", "timestamp": 9.0 + len(bodies),
                       "actions": {"compaction": bounds}})  # fmt: skip
    bodies.append({"author": "u", "timestamp": 50.0, "content": {"parts": [
        {"function_response": {"id": "t", "name": "n", "response": {}}}, {"text": ""},
        {"thought": False, "text": "x"}, {"thought_signature": "1"}]}})  # fmt: skip
    # responses results.py declines (keys the SQL reads as paths): sized by the SQL, from
    # the made payloads (made_responses.sql), beside a parsed one's in the same batch
    for key in ("$", "result.rows"):
        bodies.append({"author": "u", "timestamp": 60.0 + len(bodies), "content": {"parts": [
            {"function_response": {"id": "t", "name": "n", "response": {
                key: [{"a": 1, "b": "x|y"}, {"a": 2, "b": None}], "n": 2}}}]}})  # fmt: skip
    assert all(rows.made(b) is not None for b in bodies)
    relays = {len(transcript.dumps(b["content"]["parts"][0]["function_call"]["args"], True))
              for b in bodies if "content" in b and "function_call" in b["content"]["parts"][0]}
    assert relays == {12288}
    assert _normalised(True, bodies) == _normalised(False, bodies)
    # and in one batch with events parsed from their JSON (a float rows.py declines)
    mixed = [*bodies, {"author": "u", "timestamp": 99.0, "content": {"parts": [
        {"function_response": {"id": "t", "name": "n", "response": {"$": [{"v": 1e16}]}}}]}}]
    assert rows.made(mixed[-1]) is None
    assert _normalised(None, mixed) == _normalised(False, mixed)


def test_batches_of_parsed_made_and_mixed_events_in_turn_are_each_the_sql_s() -> None:
    # one normaliser through batches of each kind (a made batch after a parsed one drops
    # the parsed one's staged events; views over them are made again per batch)
    rng = random.Random(5)
    bodies = [_body(rng, 1_763_300_000.0 + i) for i in range(120)]
    made = [b for b in bodies if rows.made(b) is not None]
    declined = [b for b in bodies if rows.made(b) is None and _normalisable(b)]
    fifth = len(made) // 5
    assert fifth > 5 and declined
    groups = [made[i * fifth:(i + 1) * fifth] for i in range(5)]
    turns = [(False, groups[0]), (True, groups[1]), (None, groups[2] + declined),
             (True, groups[3]), (False, groups[4])]  # fmt: skip
    normalizers = [Normalizer(), Normalizer()]
    try:
        for how, group in turns:
            got = [_normalised(mode, group, normalizer)
                   for mode, normalizer in zip((how, False), normalizers, strict=True)]  # fmt: skip
            assert got[0] == got[1], how
    finally:
        for normalizer in normalizers:
            normalizer.close()


def _normalisable(body: dict[str, Any]) -> bool:
    """A body the SQL reads without a skip (a time it stores)."""
    return 0 <= body["timestamp"] <= rows.LATEST
