"""Anchors: the verbatim strings a later call reproduced from a tool result (Claude Code's
Edit old_string the canonical case), found while a session is read, and what a token cap
does to them: head/tail truncation against an anchor-preserving elision.

The oracles are independent of forensics/families/claude_code/anchors.py: a transcript
written here with each case planted, a brute-force reading of real transcripts (plain
loops over every earlier result's lines and words, no hashing, no generations), and the
cut texts built byte by byte.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from forensics.families.claude_code import anchors as index
from forensics.whatif.anchors import ELISION_MARKER, cut_anchors, elided_size
from tests.test_claude_code import Transcript, tool_result, tool_use, usage

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "real_data" / "claude_code" / "projects"
SAMPLE = ROOT / "sample_data" / "claude_code" / "projects"
runner = CliRunner()

# a file of 300 distinct lines, each over 20 characters
SOURCE = [f"    value_{i:03d} = compute_total(order_{i:03d}, rate={i})" for i in range(300)]


def read_output(lines: list[str]) -> str:
    """Claude Code's Read: each line after its number and an arrow."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, 1))


def _rows(db: Path) -> list[dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * EXCLUDE (ingest_id) FROM anchors ORDER BY ALL")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def _planted(tmp_path: Path) -> Path:
    """One session with each case planted; the store it is ingested into."""
    t = Transcript("s-anchor")
    t.prompt("fix the rate in `value_007 = compute_total(order_007, rate=7)` please")
    used = usage(3, 0, 1_000, 5)
    t.response("m1", [tool_use("read1", "Read", file_path="/home/dev/p/src/orders.py")], used)
    t.results([tool_result("read1", read_output(SOURCE))])
    # the canonical case: three lines from the middle of the Read, as Edit sends them
    t.response("m2", [tool_use("edit1", "Edit", file_path="/home/dev/p/src/orders.py",
                               old_string="\n".join(SOURCE[149:152]),
                               new_string="\n".join(SOURCE[149:151]))], used)  # fmt: skip
    t.results([tool_result("edit1", "The file /home/dev/p/src/orders.py has been updated.")])
    # the model's text quoting a line near the head, and a line the prompt quoted first
    t.response("m3", [{"type": "text", "text": f"Line 3 reads `{SOURCE[2].strip()}` and line"
                       f" 8 `{SOURCE[7].strip()}`."}], used)  # fmt: skip
    # a path, a word of an ls listing, inside a Bash command; a 19-character line and a
    # line of 20 bytes but 10 characters are no anchors
    listing = ("total 8\n-rw-r--r-- 1 dev dev 100 /home/dev/p/src/package/module_name.py\n"
               "nineteen characters\n" + "\u00e9" * 10)  # fmt: skip
    t.response("m4", [tool_use("ls1", "Bash", command="ls -l src/package")], used)
    t.results([tool_result("ls1", listing)])
    t.response("m5", [tool_use("test1", "Bash", command="python -m pytest "
                               "/home/dev/p/src/package/module_name.py -q; echo nineteen "
                               "characters; echo " + "\u00e9" * 10)], used)  # fmt: skip
    t.results([tool_result("test1", "1 passed")])
    # the model writes a line itself, reads it back and edits it: its own, no anchor
    own = "    total_with_discount = apply_discount(total, code)"
    t.response("m6", [tool_use("write1", "Write", file_path="/home/dev/p/src/d.py",
                               content=own)], used)  # fmt: skip
    t.results([tool_result("write1", "File created")])
    t.response("m7", [tool_use("read2", "Read", file_path="/home/dev/p/src/d.py")], used)
    t.results([tool_result("read2", read_output([own]))])
    t.response("m8", [tool_use("edit2", "Edit", file_path="/home/dev/p/src/d.py",
                               old_string=own, new_string="")], used)  # fmt: skip
    t.results([tool_result("edit2", "ok")])
    # a result that arrives while its response streams: the response's own later text
    # was written before it, so it reproduces nothing from it
    late = "    streamed_result_line = fetch_rows(cursor, 500)"
    t.response("m9", [tool_use("grep1", "Grep", pattern="fetch_rows"),
                      {"type": "text", "text": late}], used,
               between={0: [tool_result("grep1", late)]})  # fmt: skip
    # after a compaction the results before it are gone from the window
    t.add(t._line("system", subtype="compact_boundary", content="Conversation compacted",
                  compactMetadata={"trigger": "auto", "preTokens": 9_000}))  # fmt: skip
    t.add(t._line("user", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                  message={"role": "user", "content": "Summary: the rate was fixed."}))
    t.response("m10", [tool_use("edit3", "Edit", file_path="/home/dev/p/src/orders.py",
                                old_string=SOURCE[200], new_string="")], used)  # fmt: skip
    t.results([tool_result("edit3", "ok")])
    t.write(tmp_path)
    db = tmp_path / "a.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    return db


def test_each_planted_case_is_found_or_left_as_the_definition_says(tmp_path: Path) -> None:
    rows = _rows(_planted(tmp_path))
    found = {(r["function_call_id"], r["by_call_id"], r["field"]): r for r in rows}
    assert set(found) == {
        ("read1", "edit1", "old_string"),  # three lines of the Read
        ("read1", "edit1", "new_string"),  # two of them kept in the new text
        ("read1", None, "text"),  # line 3 quoted (line 8 the prompt had quoted first)
        ("ls1", "test1", "command"),  # the path, a word of the listing
    }
    edit = found[("read1", "edit1", "old_string")]
    text = read_output(SOURCE).encode()
    lines = [text[s:e].decode() for s, e in zip(edit["line_starts"], edit["line_ends"],
                                               strict=True)]  # fmt: skip
    assert lines == [f"{n:>6}\u2192{SOURCE[n - 1]}" for n in (150, 151, 152)]
    assert edit["result_bytes"] == len(text) and edit["tool_name"] == "Read"
    assert edit["by_tool"] == "Edit" and edit["anchor_bytes"] == sum(
        len(line.strip()) for line in SOURCE[149:152])
    quoted = found[("read1", None, "text")]
    assert len(quoted["line_starts"]) == 1
    word = found[("ls1", "test1", "command")]
    listing = "total 8\n-rw-r--r-- 1 dev dev 100 /home/dev/p/src/package/module_name.py"
    assert (word["line_starts"], word["line_ends"]) == ([8], [len(listing.encode())])
    with duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True) as con:
        assert con.execute("SELECT session_id FROM anchor_sessions").fetchall() == [("s-anchor",)]


def test_a_cap_cuts_the_middle_anchor_by_head_and_tail_and_not_by_elision(tmp_path):
    db = _planted(tmp_path)
    frame = api.whatif(db, token_cap=1_000, by="result")
    read = frame.filter(frame["function_call_id"] == "read1").row(0, named=True)
    assert read["anchors"] == 3 and read["guard_tokens"] > 1_000
    # the Edit's lines are in the middle (cut by head/tail); the quoted line is in the head
    assert (read["anchors_cut_head_tail"], read["anchors_preserved_head_tail"]) == (2, 1)
    assert (read["anchors_cut_elision"], read["anchors_preserved_elision"]) == (0, 3)
    within = frame.filter(frame["function_call_id"] == "ls1").row(0, named=True)
    assert (within["anchors"], within["anchors_cut_head_tail"], within["anchors_cut_elision"]) \
        == (1, 0, 0)  # fmt: skip
    # every result of a searched session says how many it has: 0 where none
    assert frame["anchors"].null_count() == 0 and frame["anchors"].sum() == 4
    turns = api.whatif(db, token_cap=1_000, by="turn")
    assert turns["anchors"].sum() == 4 and turns["anchors_cut_head_tail"].sum() == 2
    session = api.whatif(db, token_cap=1_000, by="session").row(0, named=True)
    assert (session["anchors"], session["anchors_cut_head_tail"],
            session["anchors_cut_elision"]) == (4, 2, 0)  # fmt: skip
    # without a token cap there is no budget: the anchors, and no cut figures
    rows = api.whatif(db, row_cap=5, by="result")
    assert rows["anchors"].sum() == 4 and rows["anchors_cut_head_tail"].null_count() == rows.height
    out = runner.invoke(app, ["whatif", "--db", str(db), "--token-cap", "1000", "--by", "result"])
    assert out.exit_code == 0, out.output
    assert "anchors: 4 strings later calls reproduced" in out.output
    assert "head/tail truncation would cut 2, an anchor-preserving elision 0" in out.output
    guards = runner.invoke(app, ["guards", "--db", str(db), "-f", "json"])
    tools = {r["tool_name"]: r for r in json.loads(guards.output)}
    assert (tools["Read"]["anchored_results"], tools["Read"]["anchors"]) == (1, 3)
    assert (tools["Bash"]["anchored_results"], tools["Edit"]["anchors"]) == (1, 0)
    table = runner.invoke(app, ["guards", "--db", str(db)])
    assert "results that carry anchors (strings later calls reproduced): Read: 3 in 1 result, " \
        "Bash: 1 in 1 result" in table.output  # fmt: skip


def test_an_adk_store_has_its_anchors_unknown_not_none(tmp_path: Path) -> None:
    db = tmp_path / "adk.duckdb"
    api.ingest_sqlite(db, ROOT / "sample_data" / "adk_v1.db")
    frame = api.whatif(db, token_cap=16_000, by="result")
    assert frame.height and frame["anchors"].null_count() == frame.height
    assert api.whatif(db, token_cap=16_000, by="session")["anchors"].null_count() > 0
    assert api.guards(db, budget=16_000)["anchors"].null_count() > 0


def test_a_session_read_again_replaces_its_anchors(tmp_path: Path) -> None:
    db = _planted(tmp_path)
    before = _rows(db)
    api.ingest_claude_code(db, [tmp_path], full=True)
    assert _rows(db) == before


def test_the_index_forgets_its_oldest_generation_and_stays_bounded(monkeypatch) -> None:
    monkeypatch.setattr(index, "GENERATION_KEYS", 50)
    found = index.AnchorIndex()
    for n in range(40):
        found.result(f"r{n}", "Read", "\n".join(f"result {n} line {i} is long enough"
                                                  for i in range(20)))  # fmt: skip
        assert sum(len(g.keys) for g in found.generations) <= 2 * 50 + 20
    found.reproduced([("old_string", "result 0 line 3 is long enough\n"
                                     "result 39 line 3 is long enough")], "e1", "c1", "Edit")
    rows = found.rows()
    assert [r["function_call_id"] for r in rows] == ["r39"]  # r0 is forgotten


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_figures_are_those_of_the_cut_texts(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(5, 80)
    lines = [f"line {i} " + "x" * rng.randint(20, 90) for i in range(n)]
    data = "\n".join(lines).encode()
    spans, at = [], 0
    for line in lines:
        spans.append((at, at + len(line)))
        at += len(line) + 1
    anchors = [sorted(rng.sample(spans, rng.randint(1, 3))) for _ in range(rng.randint(1, 8))]
    guard_tokens = len(data) // 3 + 1
    cap = rng.randint(1, guard_tokens + 50)
    # each anchor's keys are whole lines here: a key's place is its line's
    pieces = [[(s, e, s, e) for s, e in a] for a in anchors]
    truncated, elided = cut_anchors(pieces, len(data), guard_tokens, cap)
    if guard_tokens <= cap:
        assert (truncated, elided) == (0, 0)
        return
    budget = len(data) * cap // guard_tokens
    kept = data[: budget - budget // 2] + b"\0" + data[len(data) - budget // 2 :]
    # a line survives head/tail when the text kept holds it, newline to newline
    holds = [any(re.search(rb"(^|\n|\0)" + re.escape(data[s:e]) + rb"($|\n|\0)", kept)
                 for _ in (0,)) for s, e in spans]  # fmt: skip
    alive = dict(zip(spans, holds, strict=True))
    assert truncated == sum(1 for a in anchors if not all(alive[s] for s in a))
    # the elision: built byte by byte from the anchors it keeps, within the budget, and
    # no anchor it cut would have fitted beside them
    chosen: set[tuple[int, int]] = set()
    cut = 0
    for a in sorted(anchors, key=lambda a: (sum(e - s + 1 for s, e in a), a)):
        text = _elided(data, sorted(chosen | set(a)))
        if len(text) <= budget:
            chosen |= set(a)
        else:
            cut += 1
    assert elided == cut
    text = _elided(data, sorted(chosen))
    assert len(text) == elided_size(sorted(chosen), len(data))
    if chosen:  # (nothing kept: the one marker, which may be over a budget that small)
        assert len(text) <= budget


def test_a_word_is_cut_where_its_bytes_go_and_an_elision_keeps_whole_lines() -> None:
    # one line of 50,000 bytes (a result of one line of JSON), a word of it at bytes 5-30
    # and one at 49,000-49,030: head/tail keeps both, an elision has no line that fits
    word = [[(5, 30, 0, 50_000)], [(49_000, 49_030, 0, 50_000)]]
    assert cut_anchors(word, 50_000, 12_500, 2_500) == (0, 2)
    # the middle goes with head and tail, and stays with an elision of its short line
    middle = [[(25_000, 25_040, 24_990, 25_050)]]
    assert cut_anchors(middle, 50_000, 12_500, 2_500) == (1, 0)


def _elided(data: bytes, lines: list[tuple[int, int]]) -> bytes:
    """The result with only `lines` kept, each run elided replaced by its marker."""
    out, at = [], 0
    for start, end in lines:
        if start > at:
            out.append(ELISION_MARKER.format(gone=start - at, start=at, end=start).encode())
        out.append(data[start:end])
        at = end + 1
    if at < len(data):
        out.append(ELISION_MARKER.format(gone=len(data) - at, start=at, end=len(data)).encode())
    return b"".join(part + b"\n" for part in out)


# ---------------------------------------------------------------------------
# The bundled sample and real transcripts, against a brute-force reading
# ---------------------------------------------------------------------------

_PREFIX = re.compile(rb"^[^\S\n]*\d+(?:\xe2\x86\x92|\t)")
_CUT = re.compile(rb"[\s\"'`()\[\]{}<>,;]+")


def _chars(piece: bytes) -> bool:
    return len(piece) >= 20 and len(piece.decode("utf-8", "replace")) >= 20


def _line_keys(data: bytes) -> set[bytes]:
    found = set()
    for line in data.split(b"\n"):
        stripped = _PREFIX.sub(b"", line, count=1).strip()
        if _chars(stripped):
            found.add(stripped)
        elif _chars(line.strip()) and not _PREFIX.match(line):
            found.add(line.strip())
    return found


def _word_keys(data: bytes) -> set[bytes]:
    return {w for w in _CUT.split(data) if _chars(w)}


def _later(text: str) -> set[bytes]:
    data = text.encode("utf-8", "surrogatepass")
    found = _line_keys(data) | _word_keys(data)
    for line in data.split(b"\n"):
        found |= {p.strip() for p in line.split(b"`")[1:] if _chars(p.strip())}
    return found


def _strings(value: Any, name: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(name, value)] if len(value) >= 20 else []
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, str(k))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, name)]
    return []


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict)
                         and b.get("type") == "text" and isinstance(b.get("text"), str))
    if isinstance(content, str):
        return content
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def brute_force(path: Path) -> Counter[tuple[str, str, str | None, str]]:
    """The anchors of a session file's main thread, by the definition, the slow way:
    how many of (result's call id, the reproducing response's id, its call's id or None
    for text, the field)."""
    results: list[tuple[int, str, bytes]] = []  # since the last compaction
    own: set[bytes] = set()
    pending: set[bytes] = set()
    seen: set[tuple[str, str]] = set()
    current: tuple[str, str] | None = None
    before = count = 0
    boundary = False  # a compaction waiting for its summary line
    found: Counter[tuple[str, str, str | None, str]] = Counter()

    def close() -> None:
        nonlocal current, pending
        if current is not None:
            seen.add(current)
        current = None
        own.update(pending)
        pending = set()

    for raw in path.read_bytes().split(b"\n"):
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or line.get("isSidechain") is True:
            continue
        message = line.get("message") if isinstance(line.get("message"), dict) else {}
        content = message.get("content")
        kind = line.get("type")
        if kind == "assistant":
            boundary = False
            if line.get("isApiErrorMessage") is True:
                close()
                continue
            key = (message.get("id") or line.get("uuid"), line.get("requestId") or "")
            if key != current:
                close()
                if key in seen:
                    continue
                current, before = key, count
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) \
                else content if isinstance(content, list) else []  # fmt: skip
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    values, by = [("text", block["text"])], None
                elif block.get("type") in ("tool_use", "server_tool_use"):
                    values = _strings(block.get("input"), "input")
                    by = block.get("id") if isinstance(block.get("id"), str) else None
                else:
                    continue
                for field, text in values:
                    hit = set()  # one string is one anchor of each result it reproduces
                    for key_ in _later(text):
                        pending.add(key_)
                        if key_ in own:
                            continue
                        for number, _, data in reversed(results):
                            if number < before and (key_ in _line_keys(data)
                                                    or key_ in _word_keys(data)):
                                hit.add(number)
                                break
                    for number in hit:
                        call_id = next(c for n, c, _ in results if n == number)
                        found[(call_id, current[0], by, field)] += 1
        elif kind == "user":
            if line.get("isCompactSummary") is True and boundary:
                own |= _later(_result_text({"content": content}))
                boundary = False
                continue
            boundary = False
            if line.get("isVisibleInTranscriptOnly") is True:
                continue
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "tool_result" \
                            and isinstance(b.get("tool_use_id"), str):  # fmt: skip
                        results.append((count, b["tool_use_id"],
                                        _result_text(b).encode("utf-8", "surrogatepass")))
                        count += 1
                continue
            close()
            own |= _later(_result_text({"content": content}))
        elif kind == "system" and line.get("subtype") in ("compact_boundary", "api_error"):
            close()
            if line.get("subtype") == "compact_boundary":
                results, boundary = [], True
    return found


def _main_thread_anchors(db: Path) -> dict[str, Counter[tuple[str, str, str | None, str]]]:
    """Per session, the stored anchors whose reproducing event is of its main thread."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT a.session_id, a.function_call_id, a.event_id, a.by_call_id, a.field "
            "FROM anchors a JOIN events e USING (app_name, user_id, session_id, event_id) "
            "WHERE e.branch IS NULL").fetchall()  # fmt: skip
    out: dict[str, Counter[tuple[str, str, str | None, str]]] = {}
    for session, *anchor in rows:
        out.setdefault(session, Counter())[tuple(anchor)] += 1  # type: ignore[index]
    return out


def _check_against_brute_force(projects: Path, tmp_path: Path) -> int:
    db = tmp_path / "real.duckdb"
    api.ingest_claude_code(db, [projects])
    stored = _main_thread_anchors(db)
    total = 0
    for path in sorted(projects.rglob("*.jsonl")):
        if path.parent.name == "subagents" or path.name.startswith("agent-"):
            continue
        expected = brute_force(path)
        assert stored.get(path.stem, Counter()) == expected, path.name
        total += expected.total()
    return total


def test_the_bundled_sample_s_anchors_are_the_brute_force_ones(tmp_path: Path) -> None:
    assert _check_against_brute_force(SAMPLE, tmp_path) > 0
    db = tmp_path / "real.duckdb"
    rows = _rows(db)
    # every Edit of the sample edits lines its session read first: each is an anchor
    edits = {r["by_call_id"] for r in rows if r["by_tool"] == "Edit" and r["field"] == "old_string"}
    calls = set()
    for path in SAMPLE.rglob("*.jsonl"):
        for raw in path.read_text().splitlines():
            line = json.loads(raw)
            for b in (line.get("message") or {}).get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_use" and b["name"] == "Edit":
                    calls.add(b["id"])
    assert calls and edits == calls


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
def test_real_transcripts_anchors_are_the_brute_force_ones(tmp_path: Path) -> None:
    # two sessions of 2.1.x with compactions, 1.0.x sessions, the agentlogs fixtures
    assert _check_against_brute_force(REAL, tmp_path) > 100
    rows = _rows(tmp_path / "real.duckdb")
    old = [r for r in rows if r["field"] == "old_string" and r["by_tool"] in ("Edit", "MultiEdit")]
    assert len(old) > 50 and {r["tool_name"] for r in old} >= {"Read"}


def test_anchors_travel_in_a_parquet_export(tmp_path: Path) -> None:
    db = _planted(tmp_path)
    api.export_parquet(db, tmp_path / "out")
    copy = tmp_path / "copy.duckdb"
    api.ingest_parquet(copy, tmp_path / "out")
    assert _rows(copy) == _rows(db) and len(_rows(db)) == 4
    assert api.whatif(copy, token_cap=1_000, by="session")["anchors_cut_head_tail"].to_list() \
        == [2]  # fmt: skip


def test_one_call_id_twice_and_two_strings_of_one_call_are_each_kept(tmp_path: Path) -> None:
    t = Transcript("s-twice")
    t.prompt("go")
    used = usage(3, 0, 1_000, 5)
    t.response("m1", [tool_use("dup", "Read", file_path="/a.py")], used)
    t.results([tool_result("dup", read_output(SOURCE[:100]))])
    t.response("m2", [tool_use("e1", "Edit", file_path="/a.py", old_string=SOURCE[10],
                               new_string="")], used)  # fmt: skip
    t.results([tool_result("e1", "ok")])
    t.response("m3", [tool_use("dup", "Read", file_path="/b.py")], used)  # the id again
    t.results([tool_result("dup", read_output(SOURCE[100:200]))])
    # one MultiEdit, two old_strings of the same result: two anchors
    t.response("m4", [tool_use("me", "MultiEdit", file_path="/b.py", edits=[
        {"old_string": SOURCE[110], "new_string": ""},
        {"old_string": SOURCE[190], "new_string": ""}])], used)  # fmt: skip
    t.results([tool_result("me", "ok")])
    t.write(tmp_path)
    db = tmp_path / "t.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    rows = _rows(db)
    assert [(r["function_call_id"], r["anchor_index"], r["by_call_id"], r["field"])
            for r in rows] == [("dup", 0, "e1", "old_string"), ("dup", 1, "me", "old_string"),
                               ("dup", 2, "me", "old_string")]  # fmt: skip
    assert len({tuple(r["line_starts"]) for r in rows}) == 3


def test_a_huge_result_adds_a_bounded_number_of_keys_and_chunks_split_no_word(monkeypatch):
    words = " ".join(f"identifier_number_{i:08d}" for i in range(5_000))
    whole = index._result_keys(words.encode())
    monkeypatch.setattr(index, "WORD_CHUNK", 1_000)  # a piece ends mid-word: extended
    chunked = index._result_keys(words.encode())
    assert chunked == whole and len(whole.keys) == 5_001  # the one line, and its words
    monkeypatch.setattr(index, "MAX_RESULT_KEYS", 300)
    capped = index._result_keys(words.encode())
    assert capped.keys == whole.keys[:300] and capped.starts == whole.starts[:300]


def test_a_session_with_a_file_that_cannot_be_read_has_its_anchors_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from forensics.sources.files import claude_code

    _planted(tmp_path)
    agent = tmp_path / "projects" / "-home-dev-p" / "s-anchor" / "subagents"
    agent.mkdir(parents=True)
    (agent / "agent-a1.jsonl").write_text('{"type":"user","sessionId":"s-anchor"}\n')
    reading = claude_code.read_lines

    def failing(path: Path, skip: Any):  # the subagent's file fails as it is read
        if path.name == "agent-a1.jsonl":
            raise OSError("input/output error")
        return reading(path, skip)

    monkeypatch.setattr(claude_code, "read_lines", failing)
    db = tmp_path / "u.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    assert api.whatif(db, token_cap=1_000, by="session")["anchors"].to_list() == [None]


def test_a_tool_name_from_data_stays_on_its_line_in_the_guards_note(tmp_path: Path) -> None:
    t = Transcript("s-name")
    t.prompt("go")
    used = usage(3, 0, 1_000, 5)
    t.response("m1", [tool_use("r1", "Read\nFAKE LINE: all clear", file_path="/a.py")], used)
    t.results([tool_result("r1", read_output(SOURCE[:20]))])
    t.response("m2", [tool_use("e1", "Edit", file_path="/a.py", old_string=SOURCE[3],
                               new_string="")], used)  # fmt: skip
    t.write(tmp_path)
    db = tmp_path / "n.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    out = runner.invoke(app, ["guards", "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "\nFAKE LINE" not in out.output
    assert "Read\\x0aFAKE LINE: all clear: 1 in 1" in out.output


def _keys_by_definition(data: bytes) -> index._Keys:
    """A result's keys read by the module's two patterns one match at a time: its lines,
    then its words (the bytes between delimiters, MIN_CHARS or more), each word with the
    line around it; capped, and those of fewer characters than bytes left out."""
    found: list[tuple[bytes, int, int, int, int]] = [
        (m.group(1), m.start(1), m.end(1), m.start(), m.end()) for m in index._LINE.finditer(data)
    ]
    for m in index._WORD.finditer(data):
        a, b = m.span()
        after = data.find(b"\n", b)
        found.append((m.group(), a, b, data.rfind(b"\n", 0, a) + 1,
                      len(data) if after < 0 else after))  # fmt: skip
    kept = [k for k in found[: index.MAX_RESULT_KEYS] if index._long(k[0])]
    return index._Keys(*(list(c) for c in zip(*kept, strict=True))) if kept else index._Keys()


@pytest.mark.parametrize("seed", range(30))
def test_a_result_s_words_are_those_the_word_pattern_finds(seed: int, monkeypatch) -> None:
    # words of every length about the 8-byte steps the search reads, at every offset,
    # against delimiters of each kind, multi-byte characters and the Read arrow; pieces cut
    # small and large
    rng = random.Random(seed)
    pieces = [*index._DELIMITERS.decode(), "\n", "→", "é", "字", "12\t", "a", "Z9_-./:"]
    parts = []
    for _ in range(rng.randint(1, 400)):
        if rng.random() < 0.5:
            parts.append("w" * rng.choice([1, 7, 8, 9, 14, 15, 16, 19, 20, 21, 23, 24, 40, 333]))
        else:
            parts.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))))
    data = "".join(parts).encode()
    monkeypatch.setattr(index, "WORD_CHUNK", rng.choice([16, 61, 1 << 20]))
    if seed % 5 == 0:
        monkeypatch.setattr(index, "MAX_RESULT_KEYS", rng.randint(1, 20))
    assert index._result_keys(data) == _keys_by_definition(data)
    for edge in (b"", b"x" * 19, b"x" * 20, b"x" * 64, b" " * 64, b"x" * 20 + b" " + b"y" * 20):
        assert index._result_keys(edge) == _keys_by_definition(edge), edge
