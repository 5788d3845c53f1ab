"""Claude Code transcripts: read by `forensics ingest claude-code`, on the real files in
shared/real_data (skipped when absent) and on small transcripts written here, line by
line in Claude Code's shape, for what the real files lack (bad lines, failed requests,
parallel results, long-context requests).

Expected figures are computed here from the files themselves, by a reading of the
format written for the test (one call per message.id and requestId, its largest usage),
never copied from the toolkit's output.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app

REAL = Path(__file__).resolve().parents[2] / "shared" / "real_data" / "claude_code"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/real_data is absent")
runner = CliRunner()


# ---------------------------------------------------------------------------
# An independent reading of the files: the figures the tests expect
# ---------------------------------------------------------------------------


def reference_usage(projects: Path) -> dict[tuple[str, str], dict[str, int]]:
    """Per (project, session the file belongs to): the sums of each usage field over its
    calls, a call being one (message.id, requestId) with its largest usage."""
    best: dict[tuple[str, str, str, str], dict[str, int]] = {}
    for path in sorted(projects.rglob("*.jsonl")):
        rel = path.relative_to(projects).parts
        project = rel[0]
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            if line.get("type") != "assistant" or line.get("isApiErrorMessage"):
                continue
            message = line["message"]
            usage = message.get("usage")
            if not usage:
                continue
            if len(rel) == 2 and not rel[1].startswith("agent-"):
                session = path.stem
            elif "subagents" in rel:
                session = rel[1]
            else:
                session = line["sessionId"]
            key = (project, session, message["id"], line.get("requestId") or "")
            counts = {
                "input": usage["input_tokens"],
                "output": usage["output_tokens"],
                "read": usage.get("cache_read_input_tokens", 0),
                "write": usage.get("cache_creation_input_tokens", 0),
            }
            if key not in best or sum(counts.values()) > sum(best[key].values()):
                best[key] = counts
    sums: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"input": 0, "output": 0, "read": 0, "write": 0, "calls": 0}
    )
    for (project, session, _, _), counts in best.items():
        total = sums[(project, session)]
        for k, v in counts.items():
            total[k] += v
        total["calls"] += 1
    return dict(sums)


def stored_usage(db: Path) -> dict[tuple[str, str], dict[str, int]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT app_name, session_id, sum(input_tokens), sum(output_tokens), "
            "sum(cache_read_tokens), sum(cache_creation_tokens), count(*) "
            "FROM transcript_events WHERE kind = 'call' GROUP BY ALL"
        ).fetchall()
    finally:
        con.close()
    return {
        (a, s): {"input": i, "output": o, "read": r, "write": w, "calls": n}
        for a, s, i, o, r, w, n in rows
    }


# ---------------------------------------------------------------------------
# Real transcripts
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REAL.is_dir():
        pytest.skip("shared/real_data is absent")
    db = tmp_path_factory.mktemp("cc") / "cc.duckdb"
    result = api.ingest_claude_code(db, [REAL])
    assert result.rows_skipped == 0, result.skips[:3]
    return db


@needs_real
def test_real_usage_is_one_call_per_response_with_its_final_usage(real_store: Path) -> None:
    expected = reference_usage(REAL / "projects")
    assert stored_usage(real_store) == expected
    # the streaming placeholders are real: a response's first line often carries less
    # output than its last, and the stored call keeps the last
    first: dict[str, int] = {}
    for path in (REAL / "projects").rglob("*.jsonl"):
        for raw in path.read_text().splitlines():
            line = json.loads(raw)
            if line.get("type") == "assistant" and line["message"].get("usage"):
                first.setdefault(line["message"]["id"], line["message"]["usage"]["output_tokens"])
    assert sum(first.values()) < sum(v["output"] for v in expected.values())


@needs_real
def test_real_calls_measure_their_windows(real_store: Path) -> None:
    calls = api.calls(real_store, api.Selection(session="258c7280-ae70-4798-800f-63464d01a85d"))
    agent = calls.filter(pl.col("kind") == "agent")
    # input + cache reads + cache writes: every call is measured
    assert agent["occupancy_source"].unique().to_list() == ["measured"]
    con = duckdb.connect(str(real_store), read_only=True)
    try:
        (prompt,) = con.execute(
            "SELECT sum(input_tokens + cache_read_tokens + cache_creation_tokens) "
            "FROM transcript_events WHERE kind = 'call' AND session_id LIKE '258c%' "
            "AND model <> '<synthetic>'"
        ).fetchone()
    finally:
        con.close()
    assert calls["occupancy_measured"].sum() == prompt
    # a subagent's calls are its own thread, named by the Task call that started it
    agents = set(calls["agent"].to_list())
    assert {"main", "claude-code-guide", "summarizer"} <= agents


@needs_real
def test_real_compaction_boundaries(real_store: Path) -> None:
    frame = api.compaction(real_store)
    assert frame.height == 3
    spotter = frame.filter(pl.col("session_id") == "258c7280-ae70-4798-800f-63464d01a85d")
    row = spotter.row(0, named=True)
    assert row["summary_in_next_request"] is True
    assert row["raw_in_range_sent_next"] == 0
    assert row["raw_events_in_range"] > 100
    # the window shrank: the main thread's next call after the boundary is far below the
    # preTokens Claude Code logged, and the summarizer (the acompact agent) read them
    calls = api.calls(real_store, api.Selection(session="258c7280-ae70-4798-800f-63464d01a85d"))
    after = calls.filter(pl.col("call_id") == row["next_call_id"])["occupancy_measured"].item()
    assert row["trigger"] == "auto" and row["pre_tokens"] == 167094
    assert after < row["pre_tokens"] / 3


@needs_real
def test_real_inline_sidechains_are_threads_of_their_own(real_store: Path) -> None:
    con = duckdb.connect(str(real_store), read_only=True)
    try:
        branches = con.execute(
            "SELECT count(DISTINCT branch) FROM events "
            "WHERE session_id LIKE 'fe5e1c67%' AND branch LIKE 'sidechain-%'"
        ).fetchone()[0]
        starts = con.execute(
            "SELECT count(*) FROM events WHERE session_id LIKE 'fe5e1c67%' "
            "AND branch LIKE 'sidechain-%' AND author = 'user'"
        ).fetchone()[0]
    finally:
        con.close()
    roots = sum(
        1
        for line in (REAL / "projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
        .read_text()
        .splitlines()
        if '"isSidechain":true' in line and '"parentUuid":null' in line
    )
    assert branches == roots == starts


@needs_real
def test_real_cost_is_exact_but_for_placeholder_outputs(real_store: Path) -> None:
    by_day = api.cost(real_store, by="day")
    expected = reference_usage(REAL / "projects")
    writes = sum(v["write"] for v in expected.values())
    assert by_day["cache_write_tokens"].sum() == writes
    # 2.1 writes a response's final usage on its last line, with keys its placeholders
    # lack; a response none of whose lines has them kept a placeholder output count
    placeholders = 0
    for path in (REAL / "projects").rglob("*.jsonl"):
        final: dict[str, bool] = {}
        for raw in path.read_text().splitlines():
            line = json.loads(raw)
            if line.get("type") == "assistant" and line.get("version", "").startswith("2.1"):
                usage = line["message"].get("usage") or {}
                key = line["message"]["id"]
                final[key] = final.get(key, False) or "iterations" in usage
        placeholders += sum(1 for done in final.values() if not done)
    con = duckdb.connect(str(real_store), read_only=True)
    try:
        flagged = {
            r[0]
            for r in con.execute(
                "SELECT event_id FROM transcript_events WHERE output_placeholder"
            ).fetchall()
        }
    finally:
        con.close()
    assert len(flagged) == placeholders > 100
    calls = api.cost(real_store, by="call")
    ranged = calls.filter(pl.col("cost_source") == "range")
    # a range where the content holds more than the placeholder said (nearly all of them)
    assert set(ranged["call_id"]) <= flagged and ranged.height > 0.9 * placeholders
    assert (ranged["output_tokens_unsure"] > 0).all()
    # every other call is exact: its low and high bounds are one figure
    exact = calls.filter(pl.col("cost_source") == "priced")
    assert exact["cost_usd_low"].to_list() == exact["cost_usd_high"].to_list()
    assert exact.height + ranged.height == calls.height


@needs_real
def test_ingest_is_idempotent_and_reads_claude_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "x.duckdb"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(REAL))
    out = runner.invoke(app, ["ingest", "claude-code", "--db", str(db)])
    assert out.exit_code == 0, out.output
    first = api.ingests(db).row(0, named=True)
    sessions = api.sessions(db).height
    again = runner.invoke(app, ["ingest", "claude-code", "--db", str(db), "-f", "json"])
    record = json.loads(again.stdout)[0]
    assert record["rows_read"] == 0
    assert record["notes"]["sessions_unchanged"] == sessions
    full = runner.invoke(app, ["ingest", "claude-code", "--full", "--db", str(db), "-f", "json"])
    record = json.loads(full.stdout)[0]  # read whole again: each session replaced
    assert record["rows_loaded"] == first["rows_loaded"] == record["notes"]["events_replaced"]
    assert api.sessions(db).height == sessions


def test_an_ingest_that_loads_nothing_new_keeps_the_priced_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calls are priced again only when something they were priced from changed: an
    ingest of unchanged files stamps the kept prices anew (repricing the store was 60%
    of it), and they are what the cost commands read; a new session prices them again."""
    import shutil

    from forensics.cost import stored as priced
    from forensics.engines import local

    root = tmp_path / "claude"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_data" / "claude_code", root)
    # a session of one file (no subagents' folder beside it)
    extra = next(p for p in sorted((root / "projects").glob("*/*.jsonl"))
                 if not p.with_suffix("").is_dir())  # fmt: skip
    held = extra.read_bytes()
    extra.unlink()
    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [root])
    bill = api.cost(db, by="day")
    calls: list[object] = []
    real = local.price_store
    monkeypatch.setattr(local, "price_store", lambda *a: calls.append(a) or real(*a))
    api.ingest_claude_code(db, [root])  # nothing new
    assert calls == []
    with api.open_store(db) as store:
        assert priced.current(store, priced.book_of(store))  # the kept prices are used
    assert api.cost(db, by="day").equals(bill)
    extra.write_bytes(held)  # a session more: priced again
    api.ingest_claude_code(db, [root])
    assert len(calls) == 1 and api.cost(db, by="day")["calls"].sum() > bill["calls"].sum()
    extra.write_bytes(b"")  # read again with nothing in it: priced again
    api.ingest_claude_code(db, [root])
    assert len(calls) == 2


def test_a_session_read_again_with_nothing_in_it_leaves_no_facts_nor_cost(
    tmp_path: Path,
) -> None:
    """A transcript emptied since an ingest read it: the ingest replaces its events with
    none, and its facts and priced calls go with them (the facts were rebuilt only for
    sessions with events, so its calls were still counted and billed)."""
    paths = []
    for sid in ("s-1", "s-2"):
        t = Transcript(sid)
        t.prompt("hi")
        t.response(f"msg_{sid}", [{"type": "text", "text": "hello"}], usage(1, 0, 500, 5))
        paths.append(t.write(tmp_path))
    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [tmp_path])
    paths[1].write_bytes(b"")
    api.ingest_claude_code(db, [tmp_path])
    alone = tmp_path / "alone.duckdb"
    api.ingest_claude_code(alone, [paths[0]])
    assert api.cost(db, by="session").equals(api.cost(alone, by="session"))
    with duckdb.connect(str(db), read_only=True) as con:
        for table in ("events", "fact_sessions", "fact_calls", "priced_calls"):
            (left,) = con.execute(f"SELECT count(*) FROM {table} WHERE session_id = 's-2'"  # noqa: S608
                                  ).fetchone()  # fmt: skip
            assert left == 0, table


def test_the_toolkit_reads_the_sample_as_its_generator_wrote_it(tmp_path: Path) -> None:
    # expected.json holds what the generator put into the sample; the analyses must find it
    sample = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code"
    expected = json.loads((sample / "expected.json").read_text())
    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [sample])
    (boundary,) = expected["compactions"]
    (row,) = api.compaction(db).rows(named=True)
    assert (row["session_id"], row["trigger"], row["pre_tokens"]) == (
        boundary["session_id"],
        boundary["trigger"],
        boundary["pre_tokens"],
    )
    calls = api.calls(db, api.Selection(session=boundary["session_id"]))
    after = calls.filter(pl.col("call_id") == row["next_call_id"]).row(0, named=True)
    # the next request holds the compacted window and the prompt typed after it
    assert 0 < after["occupancy_measured"] - boundary["window_after_compaction"] < 100
    (incident,) = expected["incidents"]
    growth = api.growth(db, api.Selection(session=incident["session_id"]))
    top = growth.row(0, named=True)
    largest = incident["largest_growth"]
    assert (top["function_call_id"], top["tool_name"]) == (
        largest["tool_use_id"],
        largest["tool_name"],
    )
    assert (top["occupancy_before"], top["occupancy_after"], top["growth_tokens"]) == (
        largest["window_before"],
        largest["window_after"],
        largest["growth"],
    )
    by_id = {r["function_call_id"]: r for r in growth.rows(named=True)}
    for result in incident["tool_results"]:
        got = by_id[result["tool_use_id"]]
        assert (got["occupancy_before"], got["occupancy_after"]) == (
            result["window_before"],
            result["window_after"],
        )
        # sized from the text at the session's fitted ratio: within 1% of the generator's
        assert (
            abs(got["result_tokens_estimated"] - result["result_tokens"])
            < 0.01 * result["result_tokens"]
        )
    (failure,) = api.context_failures(db).rows(named=True)
    assert failure["session_id"] == incident["session_id"]
    assert (failure["logged_tokens"], failure["context_limit"]) == (
        incident["context_failure"]["window"],
        incident["context_failure"]["limit"],
    )


def test_files_read_for_one_user_are_read_again_for_another(tmp_path: Path) -> None:
    # `--user` names whose sessions these are: the files an ingest read for one user say
    # nothing of another's, whose sessions are not stored yet
    sample = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code"
    db = tmp_path / "u.duckdb"
    first = api.ingest_claude_code(db, [sample])
    other = api.ingest_claude_code(db, [sample], user="alice")
    assert "sessions_unchanged" not in other.notes
    assert other.rows_loaded == first.rows_loaded > 0
    users = api.sessions(db).group_by("user_id").len().sort("user_id")
    assert users["len"].to_list()[0] == users["len"].to_list()[1]
    again = api.ingest_claude_code(db, [sample], user="alice")
    assert again.rows_read == 0 and again.notes["sessions_unchanged"] == users["len"][1]
    # two users' bills: neither's calls are copies of the other's
    bills = [api.cost(db, api.Selection(user=u), by="session") for u in ("alice", "claude-code")]
    assert bills[0]["cost_usd_low"].sum() == bills[1]["cost_usd_low"].sum() > 0
    assert bills[0]["copied_calls"].sum() == bills[1]["copied_calls"].sum() == 0
    theirs = api.cost_ccusage(db, api.Selection(user="alice"), by="day")
    assert theirs["entries"].sum() == first_entries(sample, tmp_path)
    with pytest.raises(api.ForensicsError, match="one user's transcripts; the selection holds 2"):
        api.cost_ccusage(db, by="day")


def test_a_session_whose_names_no_encoding_decodes_is_stored_under_their_escapes(
    tmp_path: Path,
) -> None:
    # a project folder and a session file whose names hold a byte no encoding decodes
    # (Python reads each as a lone surrogate, which the store cannot hold): the session
    # is stored whole under the names' escapes, an ingest that finds its file unchanged
    # does not read it again, and ccusage's totals read straight from the files name it
    # alike (the ingest stopped at its end on such a session)
    root = tmp_path / "claude"
    t = Transcript(os.fsdecode(b"s-\xff"))
    t.prompt("look")
    t.response("m1", [{"type": "text", "text": "seen"}], usage(3, 0, 50, 2))
    t.write(root, project=os.fsdecode(b"-home-\xfe"))
    db = tmp_path / "u.duckdb"
    first = api.ingest_claude_code(db, [root])
    assert first.rows_loaded == 2 and not first.skips
    stored = api.sessions(db)
    assert stored["session_id"].to_list() == ["s-\\udcff"]
    assert stored["app_name"].to_list() == ["-home-\\udcfe"]
    again = api.ingest_claude_code(db, [root])
    assert again.rows_read == 0 and again.notes["sessions_unchanged"] == 1
    straight, read = api.cost_ccusage_transcripts([root], by="session")
    assert straight["session_id"].to_list() == ["s-\\udcff"] and not read["skips"]
    in_store = api.cost_ccusage(db, by="session")
    assert straight["total_tokens"].to_list() == in_store["total_tokens"].to_list() == [55]


def first_entries(sample: Path, tmp_path: Path) -> int:
    """ccusage's entries of the sample, from a store holding it once."""
    once = tmp_path / "once.duckdb"
    api.ingest_claude_code(once, [sample])
    return int(api.cost_ccusage(once, by="day")["entries"].sum())


@needs_real
def test_a_session_read_while_it_was_written_is_replaced_when_read_again(
    tmp_path: Path,
) -> None:
    # the first ingest ran while Claude Code was writing: the file ended after a
    # response's first line (a placeholder usage); read again, complete, the session is
    # replaced whole, as a clean ingest of the complete file stores it
    target = REAL / "projects" / "agentlogs-fixtures" / "crud.jsonl"
    lines = target.read_text().splitlines(keepends=True)
    copy = tmp_path / "cfg" / "projects" / "agentlogs-fixtures" / "crud.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_text("".join(lines[:4]))
    db = tmp_path / "y.duckdb"
    cut = api.ingest_claude_code(db, [tmp_path / "cfg"])
    copy.write_text("".join(lines))
    again = api.ingest_claude_code(db, [tmp_path / "cfg"])
    assert again.notes["events_replaced"] == cut.rows_loaded
    clean = tmp_path / "clean.duckdb"
    api.ingest_claude_code(clean, [target])
    for frame in (api.cost, api.calls, api.turns):
        ours, theirs = frame(db), frame(clean)
        assert ours.drop("source", strict=False).equals(theirs.drop("source", strict=False))
    assert stored_usage(db) == stored_usage(clean)


# ---------------------------------------------------------------------------
# Transcripts written here: what real files lack
# ---------------------------------------------------------------------------


class Transcript:
    """Lines of one Claude Code session file, in its shape (compact JSON, one content
    block per assistant line, usage repeated on every line of a response)."""

    def __init__(self, session: str = "s-1", version: str = "2.1.39", start: int = 0):
        self.session = session
        self.version = version
        self.lines: list[str] = []
        self.n = 0
        self.second = start
        self.parent: str | None = None

    def _stamp(self) -> str:
        self.second += 1
        when = datetime(2026, 11, 16, 10, tzinfo=UTC) + timedelta(seconds=self.second)
        return when.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def _uuid(self) -> str:
        self.n += 1
        return f"00000000-0000-4000-8000-{self.n:012d}"

    def _line(self, kind: str, **fields: Any) -> dict[str, Any]:
        uuid = self._uuid()
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/p",
            "sessionId": self.session,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": uuid,
            "timestamp": self._stamp(),
        }
        self.parent = uuid
        return line

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def add(self, line: dict[str, Any]) -> None:
        self.lines.append(json.dumps(line, separators=(",", ":")))

    def prompt(self, text: str) -> None:
        self.add(self._line("user", message={"role": "user", "content": text}))

    def response(
        self,
        mid: str,
        blocks: list[dict[str, Any]],
        usage: dict[str, Any],
        *,
        placeholder: int = 10,
        model: str = "claude-sonnet-4-5-20250929",
        between: dict[int, list[dict[str, Any]]] | None = None,
    ) -> None:
        """One response, a line per block; every line but the last with a placeholder
        output count; `between[i]`: tool results written after block i."""
        for i, block in enumerate(blocks):
            last = i == len(blocks) - 1
            shown = dict(usage) if last else {**usage, "output_tokens": placeholder}
            message = {"model": model, "id": mid, "type": "message", "role": "assistant",
                       "content": [block], "stop_reason": None, "usage": shown}  # fmt: skip
            self.add(self._line("assistant", message=message, requestId=f"req_{mid}"))
            for result in (between or {}).get(i, []):
                self.results([result])

    def results(self, blocks: list[dict[str, Any]]) -> None:
        self.add(self._line("user", message={"role": "user", "content": blocks}))

    def write(self, folder: Path, project: str = "-home-dev-p") -> Path:
        target = folder / "projects" / project / f"{self.session}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return target


def usage(inp: int, read: int, write: int, out: int, *, hour: bool = True) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": 0 if hour else write,
            "ephemeral_1h_input_tokens": write if hour else 0,
        },
        "output_tokens": out,
        "service_tier": "standard",
    }


def tool_use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def tool_result(call_id: str, text: str) -> dict[str, Any]:
    return {"tool_use_id": call_id, "type": "tool_result", "content": text}


def _ingest(folder: Path, db: Path) -> api.IngestResult:
    return api.ingest_claude_code(db, [folder])


def test_placeholders_parallel_results_and_growth(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("look at the orders")
    big = json.dumps({"orders": [{"id": i, "notes": "x" * 900} for i in range(40)]})
    t.response(
        "msg_a",
        [
            {"type": "text", "text": "Reading both."},
            tool_use("t1", "Read", file="a"),
            tool_use("t2", "mcp__store__orders", customer="c-1"),
        ],  # fmt: skip
        usage(3, 0, 20_000, 120),
        between={1: [tool_result("t1", "small file")], 2: [tool_result("t2", big)]},
    )
    t.response("msg_b", [{"type": "text", "text": "Done."}], usage(2, 20_000, 11_000, 40))
    t.write(tmp_path)
    db = tmp_path / "s.duckdb"
    result = _ingest(tmp_path, db)
    assert result.rows_skipped == 0
    calls = api.calls(db, "s-1")
    assert calls["occupancy_measured"].to_list() == [20_003, 31_002]
    # the final usage, never the placeholder
    costs = api.cost(db, "s-1", by="call")
    assert costs["output_tokens"].to_list() == [120, 40]
    # the two results arrived between the response's own lines: one results event, both
    # carried by msg_b; the big one grew the window most (split by size)
    growth = api.growth(db)
    assert growth["tool_name"].to_list()[0] == "mcp__store__orders"
    assert growth["occupancy_before"].to_list() == [20_003, 20_003]
    assert growth["occupancy_after"].to_list() == [31_002, 31_002]
    assert growth["growth_tokens"].sum() == 31_002 - 20_003
    # a result is sized as the text the model read (not its JSON with escapes)
    sizes = dict(
        duckdb.connect(str(db), read_only=True)
        .execute("SELECT function_call_id, chars FROM parts WHERE kind = 'function_response'")
        .fetchall()
    )
    assert sizes == {"t1": len("Read") + len("small file"),
                     "t2": len("mcp__store__orders") + len(big)}  # fmt: skip


def test_one_hour_writes_are_priced_at_the_one_hour_rate(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("hi")
    t.response("msg_a", [{"type": "text", "text": "hello"}], usage(10, 0, 1_000_000, 100))
    t.write(tmp_path)
    db = tmp_path / "s.duckdb"
    _ingest(tmp_path, db)
    row = api.cost(db, "s-1", by="call").row(0, named=True)
    assert row["cache_write_tokens"] == 1_000_000 and row["cache_write_1h_tokens"] == 1_000_000
    assert row["cache_write_source"] == "transcript (measured)"
    assert row["cost_source"] == "priced"
    # Sonnet 4.5: input $3/MTok; a 1-hour write at 2x input, tier above 200k: the provider
    # bills the whole request at the long-context rates (6, 12, 22.5)
    assert row["tier_above"] == 200_000
    expected = (
        Decimal(10) * 6 / 10**6
        + Decimal(1_000_000) * 12 / 10**6
        + Decimal(100) * Decimal("22.5") / 10**6
    )
    assert row["cost_usd_low"] == row["cost_usd_high"] == expected


def test_ccusage_rules_tier_each_field_on_its_excess(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("hi")
    t.response("msg_a", [{"type": "text", "text": "hello"}],
               usage(10, 250_000, 300_000, 100, hour=False))  # fmt: skip
    t.write(tmp_path)
    db = tmp_path / "s.duckdb"
    _ingest(tmp_path, db)
    row = api.cost_ccusage(db, by="day").row(0, named=True)
    per = Decimal(10) ** -6
    # 5-minute writes: 3.75 up to 200k, 7.5 above; reads: 0.3, 0.6 above; input, output
    # below 200k at the base rates (genai-prices' Sonnet 4.5 under ccusage's rules)
    expected = (
        Decimal(10) * 3 * per
        + Decimal(100) * 15 * per
        + (200_000 * Decimal("3.75") + 100_000 * Decimal("7.5")) * per
        + (200_000 * Decimal("0.3") + 50_000 * Decimal("0.6")) * per
    )
    assert row["cost_usd"] == expected
    assert row["cache_creation_tokens"] == 300_000 and row["entries"] == 1
    # the provider's rule: the whole request at the long-context rates
    provider = api.cost(db, by="day").row(0, named=True)["cost_usd_low"]
    assert provider == (
        Decimal(10) * 6 + Decimal(100) * Decimal("22.5") + 300_000 * Decimal("7.5")
        + 250_000 * Decimal("0.6")
    ) * per  # fmt: skip


def test_bad_lines_are_skipped_by_place_and_the_rest_loads(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("hi")
    t.raw('{"parentUuid":null,"type":"user","message":')  # truncated
    t.raw("[1, 2]")
    t.raw('{"type":"assistant","timestamp":"yesterday","message":{}}')
    t.raw('{"type":"assistant","timestamp":"2026-11-16T10:00:09.000Z"}')
    t.raw('{"type":"mystery","timestamp":"2026-11-16T10:00:09.000Z"}')
    t.response("msg_a", [{"type": "text", "text": "hello"}], usage(1, 0, 500, 5))
    path = t.write(tmp_path)
    with path.open("ab") as f:
        f.write(b'{"type":"user","message":{"content":"caf\xe9"}}\n')
        f.write(b'{"type":"user","message":{"role":"user","content":"cut')  # no newline
    db = tmp_path / "s.duckdb"
    result = _ingest(tmp_path, db)
    rel = str(path)
    reasons = {s.locator: s.reason for s in result.skips}
    assert reasons == {
        f"{rel}:2": "not valid JSON: Expecting value at column 44",
        f"{rel}:3": "not a JSON object",
        f"{rel}:4": "timestamp: not a time: 'yesterday'",
        f"{rel}:5": "an assistant line without a message object",
        f"{rel}:8": "not UTF-8 text (byte 41 of the line)",
        f"{rel}:9": "not valid JSON: Unterminated string starting at column 51",
    }
    assert result.notes["lines_not_events"] == {"mystery": 1}
    assert api.calls(db, "s-1")["occupancy_measured"].to_list() == [501]


@pytest.mark.parametrize("batch_chars", [8_000_000, 20_000])
def test_sessions_read_by_workers_store_what_one_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_chars: int
) -> None:
    """Sessions read by forked workers, their reader's calls replayed here, against one
    process reading every line: the same tables, the same skips in the same order, on
    the bundled sample with bad lines added, some sessions too large for a worker (each
    read by a process of its own that sends its calls as it reads them: three at a time
    where batches are cut every few events) and batches cut every few events."""
    import shutil

    from forensics.sources.files import claude_code

    root = tmp_path / "claude"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_data" / "claude_code", root)
    files = sorted(root.rglob("*.jsonl"))
    with files[0].open("ab") as f:
        f.write(b'{"type":"user","message":{"content":"caf\xe9"}}\n[1, 2]\n{"type":"assist')
    sizes = sorted(p.stat().st_size for p in files)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", batch_chars)
    monkeypatch.setattr(claude_code, "WORKER_MIN_BYTES", 0)
    monkeypatch.setattr(claude_code, "SESSION_WORKER_BYTES", sizes[len(sizes) // 2])
    if batch_chars < 100_000:  # and one session read ahead at a time (bytes bound it)
        monkeypatch.setattr(claude_code, "AHEAD_BYTES", 1)
        monkeypatch.setattr(claude_code, "STREAM_CALLS", 3)
    streamed: list[int] = []
    started = claude_code._Stream.__init__

    def counting(self: Any, task: Any) -> None:
        streamed.append(len(task[3]))
        started(self, task)

    monkeypatch.setattr(claude_code._Stream, "__init__", counting)
    stores, skips = [], []
    for workers in ("1", "2"):
        monkeypatch.setenv("FORENSICS_WORKERS", workers)
        db = tmp_path / f"w{workers}.duckdb"
        result = api.ingest_claude_code(db, [root])
        stores.append(db)
        skips.append([(s.locator, s.reason) for s in result.skips])
    assert skips[0] == skips[1] and len(skips[0]) == 3
    assert streamed  # (with two workers: the sessions over SESSION_WORKER_BYTES)
    # and the batches are cut where one process cuts them (a batch holds BATCH_CHARS)
    cuts = [[(_events(b), b.side["transcript_events"].num_rows, len(b.replaces))
             for b in claude_code.ClaudeCodeSource([root], workers=w).batches(None)]
            for w in (1, 2)]  # fmt: skip
    assert cuts[0] == cuts[1] and len(cuts[0]) > (2 if batch_chars < 100_000 else 0)
    with duckdb.connect() as con:
        for i, db in enumerate(stores):
            con.execute(f"ATTACH '{db}' AS s{i} (READ_ONLY)")
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = 's0'"
            " AND table_schema = 'main' AND table_name NOT IN ('ingests', 'store_meta')"
            " ORDER BY 1").fetchall()]  # fmt: skip
        assert {"events", "parts", "transcript_events", "fact_calls", "anchors"} <= set(tables)
        assert con.execute("SELECT count(*) FROM s0.anchors").fetchone()[0] > 0
        for table in tables:
            columns = ", ".join(
                f'"{c}"' for (c,) in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_catalog"
                    " = 's0' AND table_name = ? AND column_name <> 'ingest_id'", [table]
                ).fetchall())  # fmt: skip
            one, two = (con.execute(f"SELECT {columns} FROM s{i}.{table} ORDER BY ALL")  # noqa: S608
                        .fetchall() for i in (0, 1))  # fmt: skip
            assert one == two, table


def _running(pid: int) -> bool:
    """A process that has not ended (a zombie no one reaps has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _long_session(folder: Path, turns: int = 400) -> Path:
    """One session of about 600 KB: more than a pipe holds, at a call a message."""
    t = Transcript("s-long")
    for i in range(turns):
        t.prompt(f"question {i} " + "x" * 600)
        t.response(f"m-{i}", [{"type": "text", "text": "y" * 600}], usage(3, 0, 100, 5))
    t.write(folder)
    return folder


def test_a_stream_closed_while_it_reads_is_ended_and_one_killed_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed session's batches left unread (the ingest stopped, its batches closed)
    end the process reading it at once; a stream the system kills is said as a killed
    worker is (out of memory, most often), not as a broken pipe."""
    import os
    import signal

    from forensics.errors import ForensicsError
    from forensics.sources.files import claude_code

    root = _long_session(tmp_path / "claude")
    monkeypatch.setattr(claude_code, "SESSION_WORKER_BYTES", 0)
    monkeypatch.setattr(claude_code, "STREAM_CALLS", 1)
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)
    pids: list[int] = []
    started = claude_code._Stream.__init__

    def recording(self: Any, task: Any) -> None:
        started(self, task)
        pids.append(self.process.pid)

    monkeypatch.setattr(claude_code._Stream, "__init__", recording)
    batches = claude_code.ClaudeCodeSource([root], workers=2).batches(None)
    assert _events(next(batches))
    assert len(pids) == 1 and _running(pids[0])  # (its next message waits to be read)
    batches.close()
    assert not _running(pids[0])

    def killed(task: Any, conn: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(claude_code, "_stream_session", killed)
    with pytest.raises(ForensicsError, match="killed before it finished"):
        list(claude_code.ClaudeCodeSource([root], workers=2).batches(None))


def test_a_stream_whose_ingest_dies_ends(tmp_path: Path) -> None:
    """The ingest's process killed (out of memory, kill -9) while a stream waits to send:
    its send fails (it holds no copy of the ingest's end of the pipe) and it ends,
    rather than wait for ever with the session's reader in memory."""
    import subprocess
    import sys
    import time

    root = _long_session(tmp_path / "claude")
    code = (
        "import os, signal, time\n"
        "from pathlib import Path\n"
        "from forensics.sources.files import claude_code as c\n"
        "c.STREAM_CALLS = 1\n"
        f"entry = c.layout_of([Path({str(root)!r})]).sessions[0]\n"
        "stream = c._Stream((entry.app, 'u', entry.session_id, entry.files))\n"
        "print(stream.process.pid, flush=True)\n"
        "time.sleep(0.5)  # it fills the pipe, and waits\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 1, done.stderr
    gone = time.monotonic() + 20
    while time.monotonic() < gone and _running(pids[0]):
        time.sleep(0.05)
    assert not _running(pids[0])


def test_failed_requests_and_a_context_failure(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("go")
    t.add(t._line("system", subtype="api_error", level="error",
                  error={"status": 529, "headers": {}, "requestID": None,
                         "error": {"type": "error", "error": {"type": "overloaded_error",
                                                              "message": "Overloaded"}}},
                  retryInMs=500.0, retryAttempt=1, maxRetries=10))  # fmt: skip
    t.response("msg_a", [{"type": "text", "text": "ok"}], usage(3, 0, 150_000, 5))
    t.prompt("and more")
    text = (
        'API Error: 400 {"type":"error","error":{"type":"invalid_request_error",'
        '"message":"prompt is too long: 213456 tokens > 200000 maximum"}}'
    )
    t.add(t._line("assistant", isApiErrorMessage=True, message={
        "id": "a4e1", "model": "<synthetic>", "role": "assistant", "type": "message",
        "usage": usage(0, 0, 0, 0), "content": [{"type": "text", "text": text}]}))  # fmt: skip
    t.write(tmp_path)
    db = tmp_path / "s.duckdb"
    _ingest(tmp_path, db)
    calls = api.calls(db, "s-1")
    assert calls["kind"].to_list() == ["failed", "agent", "failed"]
    assert calls["error_code"].to_list() == ["overloaded_error", None, "invalid_request_error"]
    failures = api.context_failures(db)
    assert failures.height == 1
    row = failures.row(0, named=True)
    assert row["logged_tokens"] == 213_456 and row["turn"] == 2
    # failed requests cost nothing, and ccusage counts the synthetic line's zero usage
    assert api.cost(db, "s-1", by="call")["cost_source"].to_list() == ["failed", "priced", "failed"]
    assert api.cost_ccusage(db, by="day").row(0, named=True)["entries"] == 2


def test_subagent_files_and_the_compaction_summarizer(tmp_path: Path) -> None:
    main = Transcript("s-2")
    main.prompt("explore")
    prompt = "Find the slow query"
    main.response("msg_a", [tool_use("t1", "Task", description="d", subagent_type="Explore",
                                     prompt=prompt)], usage(3, 0, 9_000, 20))  # fmt: skip
    sub = Transcript("s-2", start=2)
    sub.prompt(prompt)
    sub.response("msg_s", [{"type": "text", "text": "found"}], usage(4, 0, 5_000, 8),
                 model="claude-haiku-4-5-20251001")  # fmt: skip
    main.second = 5
    main.results([tool_result("t1", "found it")])
    main.response("msg_b", [{"type": "text", "text": "summary"}], usage(2, 9_000, 100, 9))
    compact = Transcript("s-2", start=7)
    compact.prompt("Your task is to create a detailed summary of the conversation so far")
    compact.response("msg_c", [{"type": "text", "text": "<summary>"}], usage(3, 9_102, 50, 6))
    main.second = 9
    main.add(main._line("system", subtype="compact_boundary", content="Conversation compacted",
                        compactMetadata={"trigger": "manual", "preTokens": 9_102}))  # fmt: skip
    main.add(
        main._line(
            "user",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
            message={"role": "user", "content": "This session is continued: s"},
        )
    )
    main.prompt("next")
    main.response("msg_d", [{"type": "text", "text": "ok"}], usage(2, 0, 1_500, 3))
    main.write(tmp_path)
    folder = tmp_path / "projects" / "-home-dev-p" / "s-2" / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-a1b2c3d.jsonl").write_text("\n".join(sub.lines) + "\n")
    (folder / "agent-acompact-0f0f0f.jsonl").write_text("\n".join(compact.lines) + "\n")
    db = tmp_path / "s.duckdb"
    _ingest(tmp_path, db)
    calls = api.calls(db, "s-2")
    assert calls.select("agent", "kind", "occupancy_measured").rows() == [
        ("main", "agent", 9_003),
        ("Explore", "agent", 5_004),
        ("main", "agent", 9_102),
        ("summarizer", "summarizer", 9_155),
        ("main", "agent", 1_502),
    ]
    comp = api.compaction(db).row(0, named=True)
    assert comp["summary_in_next_request"] is True and comp["raw_in_range_sent_next"] == 0
    # the summarizer's usage is the compaction's; the subagent's events are not in range
    con = duckdb.connect(str(db), read_only=True)
    try:
        tokens = con.execute(
            "SELECT summarizer_prompt_tokens, raw_events_in_range FROM fact_compactions"
        ).fetchone()
    finally:
        con.close()
    assert tokens == (9_155, 4)
    # what a request held: its own thread only; after the boundary the summary, then what
    # followed it (the subagent's events are never in the main thread's windows)
    after = api.window(db, "s-2", "msg_d")
    assert after["role"].to_list() == ["summary", "user"]
    assert after["part_kind"].to_list() == ["text", "text"]
    before = api.window(db, "s-2", "msg_b")
    assert set(before["author"]) == {"user", "main"} and not before["relayed"].any()
    assert before["part_kind"].to_list() == ["text", "function_call", "function_response"]
    sub = api.window(db, "s-2", "msg_s")
    assert sub["role"].to_list() == ["user"] and sub["author"].to_list() == ["user"]
    # ccusage's sessions are its files' paths: the subagents count towards s-2
    sessions = api.cost_ccusage(db, by="session")
    assert sessions["session_id"].to_list() == ["s-2"]
    assert sessions["entries"].item() == 5


def test_cli_errors_name_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default store is ./forensics.duckdb
    monkeypatch.delenv("FORENSICS_DB", raising=False)
    out = runner.invoke(app, ["ingest", "claude-code", str(tmp_path / "nope")])
    assert out.exit_code == 1
    assert f"Error: no such file or folder: {tmp_path / 'nope'}" in out.output
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "empty"))
    out = runner.invoke(app, ["ingest", "claude-code", "--db", str(tmp_path / "x.duckdb")])
    assert out.exit_code == 1
    assert "no Claude Code transcripts found" in out.output
    out = runner.invoke(app, ["cost", "--by", "agent", "--ccusage-compatible",
                              "--db", str(tmp_path / "x.duckdb")])  # fmt: skip
    assert out.exit_code == 1
    assert "--ccusage-compatible totals by day or by session" in out.output
    given = ["--prices", str(tmp_path / "p.toml"), "--db", str(tmp_path / "x.duckdb")]
    out = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible", *given])
    assert out.exit_code == 1
    assert "under ccusage's rules, not with --prices" in out.output
    out = runner.invoke(app, ["cost", "--source", "codex", "--db", str(tmp_path / "x.duckdb")])
    assert out.exit_code == 1
    assert "--source 'codex' is not a family" in out.output


def test_an_interrupted_ingest_keeps_its_batches_and_the_next_loads_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from forensics.sources.base import EventBatcher
    from forensics.sources.files import claude_code

    sample = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code"
    clean = tmp_path / "clean.duckdb"
    whole = api.ingest_claude_code(clean, [sample]).rows_loaded
    read = claude_code.read_lines
    opened: list[Path] = []

    def stopping(path: Path, skip: Any) -> Any:
        opened.append(path)
        if len(opened) == 4:
            raise KeyboardInterrupt
        return read(path, skip)

    monkeypatch.setattr(claude_code, "read_lines", stopping)
    monkeypatch.setattr(claude_code, "EventBatcher", lambda max_chars: EventBatcher(10, max_chars))
    db = tmp_path / "cut.duckdb"
    with pytest.raises(KeyboardInterrupt):
        api.ingest_claude_code(db, [sample])
    cut = api.ingests(db).row(0, named=True)
    assert cut["status"] == "interrupted" and 0 < cut["rows_loaded"] < whole
    assert "kept" in cut["error"]
    monkeypatch.undo()
    rest = api.ingest_claude_code(db, [sample])  # no file was recorded: every session again
    assert rest.rows_loaded == whole and rest.notes["events_replaced"] == cut["rows_loaded"]
    assert api.cost(db, by="day").equals(api.cost(clean, by="day"))
    # the sessions committed before the stop were stored as Claude Code's
    assert set(api.sessions(db)["session_id"]) == set(api.sessions(clean)["session_id"])
    assert api.calls(db).equals(api.calls(clean))


def test_a_resumed_session_copies_its_history_and_is_billed_once(tmp_path: Path) -> None:
    # Claude Code resumes a conversation in a new file that starts with a copy of it: the
    # same uuids, timestamps, message and request ids, usage
    first = Transcript("s-a")
    first.prompt("start")
    first.response("msg_1", [{"type": "text", "text": "one"}], usage(3, 0, 10_000, 50))
    first.write(tmp_path)
    resumed = Transcript("a-resumed")  # a key smaller than the original's: history decides
    resumed.lines = list(first.lines)
    resumed.n, resumed.second, resumed.parent = first.n, first.second + 600, first.parent
    resumed.prompt("go on")
    resumed.response("msg_2", [{"type": "text", "text": "two"}], usage(2, 10_000, 400, 60))
    resumed.write(tmp_path)
    db = tmp_path / "r.duckdb"
    _ingest(tmp_path, db)
    calls = api.cost(db, by="call")
    copy = calls.filter(pl.col("session_id") == "a-resumed").row(0, named=True)
    assert (copy["call_id"], copy["cost_source"], copy["copied_from"]) == ("msg_1", "copied", "s-a")
    assert copy["cost_usd_low"] == copy["input_tokens"] == copy["output_tokens"] == 0
    day = api.cost(db, by="day").row(0, named=True)
    assert (day["output_tokens"], day["copied_calls"]) == (50 + 60, 1)
    assert day["cost_usd_low"] == calls["cost_usd_low"].sum()
    # ccusage merges the copies too: the same totals
    theirs = api.cost_ccusage(db, by="day").row(0, named=True)
    assert (theirs["output_tokens"], theirs["entries"]) == (110, 2)


def test_a_fast_request_is_unknown_unless_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Transcript()
    t.prompt("quick")
    fast = {**usage(10, 1_000, 2_000, 100), "speed": "fast"}
    t.response("msg_f", [{"type": "text", "text": "a"}], fast, model="claude-opus-4-6")
    t.response("msg_s", [{"type": "text", "text": "b"}], usage(10, 3_000, 20, 100),
               model="claude-opus-4-6")  # fmt: skip
    t.write(tmp_path)
    db = tmp_path / "f.duckdb"
    _ingest(tmp_path, db)
    calls = api.cost(db, "s-1", by="call")
    assert calls["model"].to_list() == ["claude-opus-4-6 (fast)", "claude-opus-4-6"]
    assert calls["cost_source"].to_list() == ["unknown", "priced"]
    assert "fast-mode" in calls["unknown_reason"][0]
    prices = tmp_path / "fast.toml"
    prices.write_text('[[price]]\nmodel = "claude-opus-4-6 (fast)"\ninput_mtok = "30"\n'
                      'output_mtok = "150"\ncache_read_mtok = "3"\ncache_write_mtok = "37.5"\n'
                      'cache_write_1h_mtok = "60"\n')  # fmt: skip
    row = api.cost(db, "s-1", by="call", prices=prices).row(0, named=True)
    per = Decimal(10) ** -6
    assert row["cost_source"] == "priced" and row["cost_usd_low"] == (
        10 * 30 + 1_000 * 3 + 2_000 * 60 + 100 * 150) * per  # fmt: skip
    # without a ccusage install its fast multiplier is not known either: unpriced, at 0
    monkeypatch.delenv("FORENSICS_CCUSAGE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    theirs = api.cost_ccusage(db, by="day").row(0, named=True)
    assert (
        "genai-prices" in theirs["price_source"]
        and "fast requests unpriced" in theirs["price_source"]
    )
    assert (theirs["entries"], theirs["unpriced_entries"]) == (2, 1)
    assert theirs["cost_usd"] == calls["cost_usd_low"][1]  # the standard request alone


def test_a_slash_command_and_its_output_are_one_turn(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("fix it")
    t.response("msg_a", [{"type": "text", "text": "done"}], usage(3, 0, 900, 5))
    t.prompt("<command-name>/compact</command-name>\n<command-message>compact</command-message>")
    t.prompt("<local-command-stdout>Compacted</local-command-stdout>")
    t.prompt("go on")
    t.response("msg_b", [{"type": "text", "text": "ok"}], usage(3, 900, 20, 5))
    t.write(tmp_path)
    db = tmp_path / "t.duckdb"
    _ingest(tmp_path, db)
    turns = api.turns(db, "s-1")
    assert turns["calls"].to_list() == [1, 0, 1]  # the prompt, the command, the prompt


def test_a_session_with_no_prompt_gets_its_incident_report(tmp_path: Path) -> None:
    """A transcript whose prompt line is missing (its calls belong to no turn): the
    report's what-if box crashed on the turn it could not find (issue 32)."""
    t = Transcript()
    big = json.dumps({"orders": [{"id": i, "notes": "x" * 900} for i in range(40)]})
    t.response(
        "msg_a",
        [tool_use("t1", "mcp__store__orders", customer="c-1")],
        usage(3, 0, 2_000, 20),
        between={0: [tool_result("t1", big)]},
    )
    t.response("msg_b", [{"type": "text", "text": "Done."}], usage(2, 2_000, 11_000, 40))
    t.write(tmp_path)
    db = tmp_path / "t.duckdb"
    _ingest(tmp_path, db)
    assert api.turns(db, "s-1").is_empty()
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", "incident", "s-1", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "mcp__store__orders result (in no turn: no prompt came before it)" in page


@needs_real
def test_the_real_crud_session_without_its_prompt_line_gets_its_report(tmp_path: Path) -> None:
    """Issue 32's reproduction: line 2 of agentlogs' crud.jsonl (its first prompt) deleted."""
    source = REAL / "projects" / "agentlogs-fixtures" / "crud.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "crud.jsonl").write_text("".join(lines[:1] + lines[2:]), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    api.ingest_claude_code(db, [folder / "crud.jsonl"])
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", "incident", "crud", "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "in no turn" in out.read_text()


def _events(batch: Any) -> int:
    """A batch's events: those the normaliser parses, and those the reader made."""
    return int(batch.events.num_rows + (batch.made.events.num_rows if batch.made else 0))


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows in order, but an ingest's clock (its times)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = {}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
            described = con.execute(f'DESCRIBE "{table}"').fetchall()
            columns = [c for c, kind, *_ in described if kind != "TIMESTAMP"]
            listed = ", ".join(f'"{c}"' for c in columns)
            found[table] = con.execute(f'SELECT {listed} FROM "{table}" ORDER BY ALL').fetchall()  # noqa: S608
        return found
    finally:
        con.close()


def test_an_unchanged_ingest_writes_what_the_full_one_does_without_the_analyses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """forensics/quick.py: an ingest that finds every session as an ingest read it, the
    facts current, writes the full ingest's ledger row and marks (every table equal but
    the clock) and says the same, on the command line without importing the analyses,
    polars or Arrow; where anything is to be read or rebuilt it writes nothing, and the
    full ingest runs."""
    import shutil
    import subprocess
    import sys

    from forensics import quick

    root = tmp_path / "claude"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_data" / "claude_code", root)
    db = tmp_path / "quick.duckdb"
    api.ingest_claude_code(db, [root])
    full = tmp_path / "full.duckdb"
    shutil.copy(db, full)

    def ingest(store: Path, *args: str, look: bool = True) -> dict[str, Any]:
        with monkeypatch.context() as m:
            if not look:  # the full path only
                m.setattr(quick, "look_claude_code", lambda *a, **k: quick.Look(None))
                m.setattr(api, "look_in", lambda *a, **k: quick.Look(None))
            out = runner.invoke(app, ["ingest", "claude-code", str(root), "--db", str(store),
                                      *args])  # fmt: skip
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)[0] if args else {"text": out.stdout}

    said = {"quick": ingest(db, "-f", "json"), "full": ingest(full, "-f", "json", look=False)}
    for record in said.values():
        assert record.pop("seconds") < 60
    assert said["quick"] == said["full"] and said["quick"]["notes"]["sessions_unchanged"] > 0
    assert _tables(db) == _tables(full)
    # (each says its own measured seconds, as the JSON above: "in 0.0 s" against "0.1 s")
    text = [re.sub(r" in \d+\.\d s\b", " in N s", t, count=1) for t in (
        ingest(db)["text"], ingest(full, look=False)["text"].replace(str(full), str(db)))]
    assert text[0] == text[1] and "not read again" in text[0] and " in N s" in text[0]
    assert _tables(db) == _tables(full)
    # on the command line, in a process of its own: the analyses are not imported
    probe = (
        "import sys\nfrom forensics.cli import main\n"
        f"sys.argv = ['forensics', 'ingest', 'claude-code', {str(root)!r}, '--db', {str(db)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('polars', 'pyarrow', 'numpy', 'forensics.api',"
        " 'forensics.analysis.facts') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    assert "not read again" in done.stdout and done.stdout.splitlines()[-1] == "[]"
    # anything to read or rebuild: nothing written here, the full ingest runs
    with api.open_store(db) as s:
        ingests = s.run("SELECT count(*) FROM ingests")[0][0]
    assert quick.look_claude_code(db, [root], full=True).result is None
    assert quick.look_claude_code(tmp_path / "none.duckdb", [root]).result is None
    assert not (tmp_path / "none.duckdb").exists()
    assert quick.look_claude_code(db, [root], user="someone-else").result is None
    with duckdb.connect(str(db)) as con:  # facts built by other rules
        con.execute("UPDATE store_meta SET value = 'other' WHERE key = 'facts_rules'")
    assert quick.look_claude_code(db, [root]).result is None
    assert ingest(db, "-f", "json")["rows_read"] == 0  # (the full ingest rebuilt them)
    assert quick.look_claude_code(db, [root]).result is not None
    with duckdb.connect(str(db)) as con:  # a kept fit that no longer holds
        con.execute("UPDATE store_meta SET value = '{}' WHERE key = 'fitted_ratios'")
    assert quick.look_claude_code(db, [root]).result is None
    ingest(db)
    # kept figures of another release or other prices: the full ingest keeps them again
    for key in ("guard_kept", "growth_kept", "priced_calls"):
        with duckdb.connect(str(db)) as con:
            (held,) = con.execute("SELECT value FROM store_meta WHERE key = ?", [key]).fetchone()
            con.execute("UPDATE store_meta SET value = 'other' WHERE key = ?", [key])
        assert quick.look_claude_code(db, [root]).result is None, key
        ingest(db)
        with duckdb.connect(str(db)) as con:
            assert con.execute("SELECT value FROM store_meta WHERE key = ?",
                               [key]).fetchone() == (held,), key  # fmt: skip
        assert quick.look_claude_code(db, [root]).result is not None, key
    # what the full ingest refuses, refused alike
    monkeypatch.setenv("FORENSICS_WORKERS", "abc")
    for look in (True, False):
        with monkeypatch.context() as m:
            if not look:
                m.setattr(quick, "look_claude_code", lambda *a, **k: quick.Look(None))
                m.setattr(api, "look_in", lambda *a, **k: quick.Look(None))
            out = runner.invoke(app, ["ingest", "claude-code", str(root), "--db", str(db)])
        assert out.exit_code == 1 and "FORENSICS_WORKERS='abc'" in out.output, out.output
    monkeypatch.delenv("FORENSICS_WORKERS")
    from forensics.errors import StoreError

    with api.open_store(db) as opened, pytest.raises(StoreError, match="read-only"):
        quick.look_claude_code(opened, [root])
    grown = next(iter(sorted((root / "projects").glob("*/*.jsonl"))))
    with grown.open("a") as f:  # a session changed
        f.write("{nope\n")
    assert quick.look_claude_code(db, [root]).result is None
    with api.open_store(db) as s:
        assert s.run("SELECT count(*) FROM ingests")[0][0] == ingests + 9
    # the full ingest reads what the look found, without looking for it again
    from forensics.sources.files import claude_code_layout

    looked = []
    real = claude_code_layout.discover
    monkeypatch.setattr(claude_code_layout, "discover", lambda p: looked.append(p) or real(p))
    record = ingest(db, "-f", "json")
    assert record["rows_skipped"] == 1 and record["notes"]["files"] > 0 and len(looked) == 1


def test_sessions_committed_before_a_stop_name_their_own_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch gives the sessions it stored their own file as source (not the run's
    folder), so what a stopped run committed says where it came from."""
    from forensics.ingest import pipeline
    from forensics.sources.files import claude_code

    sample = Path(__file__).resolve().parents[1] / "sample_data" / "claude_code"
    monkeypatch.setattr(claude_code, "BATCH_CHARS", 20_000)  # a batch or more per session

    def stop(self: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline._Run, "finish", stop)
    db = tmp_path / "s.duckdb"
    with pytest.raises(KeyboardInterrupt):
        api.ingest_claude_code(db, [sample])
    sessions = api.sessions(db)
    assert sessions.height >= 2
    for session_id, source in sessions.select("session_id", "source").rows():
        assert source.startswith("claude-code:") and source.endswith(".jsonl"), source
        assert session_id in source or "agent-" in source, (session_id, source)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}', '{"a":123456789012345678901234567890}', '{"a":"\\ud800"}',
        '{"a":"\\ud83d\\ude00"}', '{"a":NaN}', '{"a":-Infinity}', '{"a":1e400}', '{"a":-0.0}',
        "[" * 5000 + "]" * 5000, '{"a":1.5e-7}', '{"a":"x\\u0000y"}', ' {"a":1} ', '{"a":1}x',
        '{"a":18446744073709551616}', '{"a":0.1,"b":[1,2.50,{"c":null}]}', '{"\\u00e9":"é"}',
        '{"a":"\\/"}', "", "nope", '{"a":01}', '{"b":2,"a":1}',
    ],
)
def test_the_readers_json_is_pythons(text: str) -> None:
    """transcript.loads (msgspec, json where msgspec refuses) gives what json.loads
    gives: the same objects in the same key order, or the same error."""
    from forensics.families.claude_code.transcript import loads

    def read(how: Any) -> tuple[str, object]:
        try:
            return "value", repr(how(text))
        except (ValueError, RecursionError) as e:
            return type(e).__name__, str(e)

    assert read(loads) == read(json.loads)


def test_the_readers_json_writer_writes_the_same_json() -> None:
    """transcript.dumps: msgspec's JSON where every value came from msgspec, the same
    value as json.dumps writes (its spelling may differ: 1e-7 for 1e-07), which DuckDB
    reads alike; json's own where a value came from json (a NaN msgspec would write as
    null) or msgspec cannot write it (a lone surrogate)."""
    from forensics.families.claude_code.transcript import dumps, loads

    value = loads(
        '{"t":1759312345.123,"small":1e-07,"big":1e22,"n":-0.0,"i":123456789012345678901,'
        '"s":"tab\\tline\\nquote\\"back\\\\slash\\/ctl\\u001f\\u007f é 😀 \\u2028",'
        '"list":[1,2.5,null,true,{"k":[]}],"":{}}'
    )
    plain, spelled = dumps(value, True), dumps(value, False)
    assert spelled == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json.loads(plain) == json.loads(spelled) == value and plain != spelled
    con = duckdb.connect()
    read = "SELECT json_transform(?, '{\"v\": \"JSON\"}').v::VARCHAR"
    assert (con.execute(read, [f'{{"v":{plain}}}']).fetchone()
            == con.execute(read, [f'{{"v":{spelled}}}']).fetchone())  # fmt: skip
    nan = loads('{"x":NaN}')  # read by json: written by json
    assert dumps(nan, False) == '{"x":NaN}'
    lone = {"x": "\ud800"}  # (compared as bytes: a failure's text must cross to xdist)
    written = json.dumps(lone, ensure_ascii=False, separators=(",", ":"))
    assert dumps(lone, True).encode(errors="surrogatepass") == written.encode(
        errors="surrogatepass")  # fmt: skip


def test_a_session_with_a_value_only_json_reads_is_written_by_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader writes each event's JSON with msgspec while every value of its session
    came from msgspec, and with json once one came from json (a NaN in an MCP result's
    JSON: msgspec would write it as null); a text neither reads counts for neither."""
    from forensics.families.claude_code import transcript
    from forensics.sources.files import claude_code

    # (every event's JSON written: the rows the reader makes of most are another test's)
    monkeypatch.setattr(transcript, "MAKE_ROWS", False)

    def events(session: str, result: str) -> list[str]:
        t = Transcript(session)
        t.prompt("go")
        t.response("msg_" + session, [tool_use("tu_1", "mcp__db__query", limit=1e-07)],
                   usage(10, 0, 100, 5))  # fmt: skip
        t.results([tool_result("tu_1", result)])
        path = t.write(tmp_path)
        file = claude_code.TranscriptFile(path.name, "main", path=str(path))
        found, _ = claude_code._read_session(("app", "u", session, [(path, file)]))
        return [c[1]["event_json"] for calls, _, _ in found for c in calls if c[0] == "event"]

    before = transcript._json_reads
    plain = events("s-plain", '{"rows": [1, 2]}')
    assert transcript._json_reads == before
    assert any('"limit":1e-7' in e for e in plain)  # (msgspec's spelling)
    assert events("s-torn", "[main 1a2b3c] not JSON")  # read as text by both: no count
    assert transcript._json_reads == before
    nan = events("s-nan", '{"rows": [NaN]}')
    assert transcript._json_reads == before + 1
    assert any('"rows":[NaN]' in e for e in nan) and not any("[null]" in e for e in nan)
    # (the response, written once its result was read, by json too)
    assert any('"limit":1e-07' in e for e in nan)


def test_a_session_read_whole_again_from_other_files_takes_their_source(
    tmp_path: Path,
) -> None:
    """Two config folders holding the same session (a copy of a project): the second
    ingest reads it whole again and replaces its events, so the session's source is the
    second's file, whichever is read first (it stayed the first's, so two orders of the
    same ingests gave different `sessions` and `calls`)."""
    for name in ("a", "b"):
        t = Transcript("s-1")
        t.prompt("question")
        t.response("m1", [{"type": "text", "text": "answer"}], usage(3, 0, 100, 5))
        t.write(tmp_path / name)
    for first, second in (("a", "b"), ("b", "a")):
        db = tmp_path / f"{first}{second}.duckdb"
        api.ingest_claude_code(db, [tmp_path / first])
        again = api.ingest_claude_code(db, [tmp_path / second])
        assert again.notes["events_replaced"] == again.rows_loaded > 0
        (source,) = api.sessions(db)["source"].to_list()
        file = tmp_path / second / "projects" / "-home-dev-p" / "s-1.jsonl"
        assert source == f"claude-code:{file}"
    ab, ba = (api.calls(tmp_path / f"{o}.duckdb").drop("source", strict=False)
              for o in ("ab", "ba"))  # fmt: skip
    assert ab.equals(ba)
