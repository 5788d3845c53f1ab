"""The Claude Code sample transcripts: reproducible, shaped like real ones, self-consistent.

`sample_data/generate_claude_code.py` writes `sample_data/claude_code/` (transcripts laid out
as `~/.claude/projects`, and `expected.json`). These tests regenerate it and compare bytes,
compare the sample's line shapes with the real transcripts in `../shared/real_data/claude_code`
(skipped when that folder is absent), and check what the toolkit will rely on: message groups,
tool-result pairing, compaction lines, and the figures in `expected.json`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "claude_code"
GENERATOR = ROOT / "sample_data" / "generate_claude_code.py"
REAL = Path(__file__).resolve().parents[2] / "shared" / "real_data" / "claude_code"
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

# Keys the sample writes that no real file of the same family shows, and why.
EXPECTED_EXTRA_KEYS = {
    # The real 2.0.28 agent-*.jsonl files are hand-written fixtures without agentId; Claude Code
    # 2.0.x writes agentId on every line of a top-level agent file (the sample does).
    ("2.0", "agentId"),
}


def _load_generator() -> Any:
    return load_script(GENERATOR, "sample_data_generate_claude_code")


@dataclass(frozen=True)
class Line:
    path: Path
    number: int
    data: dict[str, Any]
    family: str  # "1.0", "2.0" or "2.1"


def _family(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _lines(root: Path) -> Iterator[Line]:
    for path in sorted(root.rglob("*.jsonl")):
        raw = path.read_text(encoding="utf-8").splitlines()
        parsed = [json.loads(text) for text in raw]
        versions = [item["version"] for item in parsed if "version" in item]
        file_family = _family(versions[0]) if versions else "?"
        for number, item in enumerate(parsed, start=1):
            family = _family(item["version"]) if "version" in item else file_family
            yield Line(path, number, item, family)


def _kind(item: dict[str, Any]) -> str:
    kind = item["type"]
    if kind == "assistant" and item.get("isApiErrorMessage"):
        return "assistant/api-error-message"  # shaped after the brief; the real files hold none
    if kind == "system":
        return f"system/{item['subtype']}"
    if kind == "progress":
        return f"progress/{item['data']['type']}"
    return kind


@pytest.fixture(scope="module")
def generator() -> Any:
    return _load_generator()


@pytest.fixture(scope="module")
def regenerated(generator: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("claude_code_sample")
    generator.generate(out, 1, quiet=True)
    return out / "claude_code"


@pytest.fixture(scope="module")
def sample_lines() -> list[Line]:
    return list(_lines(SAMPLE / "projects"))


@pytest.fixture(scope="module")
def real_lines() -> list[Line]:
    if not REAL.is_dir():
        pytest.skip(f"no real Claude Code transcripts at {REAL}")
    return list(_lines(REAL / "projects"))


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads((SAMPLE / "expected.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# Reproducible
# ---------------------------------------------------------------------------------------------


def test_committed_sample_is_what_the_generator_writes(regenerated: Path) -> None:
    committed = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    fresh = sorted(p.relative_to(regenerated) for p in regenerated.rglob("*") if p.is_file())
    assert committed == fresh
    assert len(committed) >= 9
    changed = [
        str(rel)
        for rel in committed
        if (SAMPLE / rel).read_bytes() != (regenerated / rel).read_bytes()
    ]
    assert changed == [], "regenerate with: .venv/bin/python sample_data/generate_claude_code.py"


def test_scale_writes_shifted_copies_with_fresh_ids(generator: Any, tmp_path: Path) -> None:
    written = generator.generate(tmp_path, 2, quiet=True)
    out = tmp_path / "claude_code"
    assert written == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    folders = sorted(p.name for p in (out / "projects").iterdir())
    assert folders == sorted(
        [
            "-home-dev-shop",
            "-home-dev-legacy",
            "-home-dev-api",
            "-home-dev-shop-1",
            "-home-dev-legacy-1",
            "-home-dev-api-1",
        ]
    )
    for name in ("-home-dev-shop", "-home-dev-legacy", "-home-dev-api"):  # copy 0 is the sample
        for path in (out / "projects" / name).rglob("*.jsonl"):
            assert (
                path.read_bytes()
                == (
                    SAMPLE / "projects" / name / path.relative_to(out / "projects" / name)
                ).read_bytes()
            )
    first = {
        line.data["sessionId"]
        for line in _lines(out / "projects" / "-home-dev-shop")
        if "sessionId" in line.data
    }
    second = list(_lines(out / "projects" / "-home-dev-shop-1"))
    assert len(first) == 3 and first.isdisjoint({line.data.get("sessionId") for line in second})
    assert {line.data["cwd"] for line in second if "cwd" in line.data} == {"/home/dev/shop-1"}
    days = {
        line.data["timestamp"][:10]
        for line in second
        if "timestamp" in line.data and "version" in line.data
    }
    assert days == {"2026-11-17", "2026-11-18", "2026-11-19"}  # the sample's days, one later
    data = json.loads((out / "expected.json").read_text())
    assert data["scale"] == 2 and len(data["incidents"]) == 2 and len(data["compactions"]) == 2


# ---------------------------------------------------------------------------------------------
# Shaped like the real transcripts
# ---------------------------------------------------------------------------------------------


def _shapes(lines: list[Line], shape: Any) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    """(family, kind) -> the key tuples seen, in order, as ``shape(line)`` yields them."""
    seen: dict[tuple[str, str], set[tuple[str, ...]]] = defaultdict(set)
    for line in lines:
        for kind, keys in shape(line):
            seen[(line.family, kind)].add(keys)
    return seen


def _compare(
    sample: dict[tuple[str, str], set[tuple[str, ...]]],
    real: dict[tuple[str, str], set[tuple[str, ...]]],
) -> tuple[list[str], set[tuple[str, str]]]:
    """Problems, and the (family, kind) pairs compared.

    A sample key set must equal the real one of its family and kind; when the real files show
    several variants, it may instead be a subset of their union. The key order must be a real
    one whenever the same key set occurs in the real files."""
    problems = []
    compared = set()
    for where, variants in sorted(sample.items()):
        if where not in real:
            continue
        compared.add(where)
        real_variants = real[where]
        real_sets = {frozenset(keys) for keys in real_variants}
        union = frozenset().union(*real_sets)
        for keys in sorted(variants):
            same_set = [
                real_keys for real_keys in real_variants if frozenset(real_keys) == frozenset(keys)
            ]
            if same_set:
                if keys not in same_set:
                    problems.append(
                        f"{where}: keys in another order than the real files: {keys} vs {same_set}"
                    )
            elif len(real_sets) > 1 and frozenset(keys) <= union:
                continue  # a subset of the union of the several real variants
            else:
                extra = sorted(frozenset(keys) - union)
                problems.append(
                    f"{where}: {keys} matches no real variant (extra {extra}) "
                    f"of {sorted(real_variants)}"
                )
    return problems, compared


def _top_level(line: Line) -> Iterator[tuple[str, tuple[str, ...]]]:
    keys = tuple(k for k in line.data if (line.family, k) not in EXPECTED_EXTRA_KEYS)
    yield _kind(line.data), keys


def test_top_level_keys_match_real_lines(sample_lines: list[Line], real_lines: list[Line]) -> None:
    problems, compared = _compare(
        _shapes(sample_lines, _top_level), _shapes(real_lines, _top_level)
    )
    assert problems == []
    kinds = {kind for _, kind in compared}
    assert {"user", "assistant", "file-history-snapshot", "queue-operation", "summary"} <= kinds
    assert {"system/compact_boundary", "system/stop_hook_summary", "system/turn_duration"} <= kinds
    assert {"progress/hook_progress", "progress/agent_progress", "progress/bash_progress"} <= kinds
    assert {family for family, _ in compared} == {"1.0", "2.0", "2.1"}


def test_expected_extra_keys_are_really_written(
    sample_lines: list[Line], real_lines: list[Line]
) -> None:
    """The exceptions above are needed, and the real files still lack those keys."""
    for family, key in EXPECTED_EXTRA_KEYS:
        assert any(line.family == family and key in line.data for line in sample_lines)
        assert not any(line.family == family and key in line.data for line in real_lines)


def _usage_shape(usage: dict[str, Any]) -> tuple[str, ...]:
    nested = usage.get("cache_creation", {})
    return tuple(usage) + tuple(f"cache_creation.{key}" for key in nested)


def _message_parts(line: Line) -> Iterator[tuple[str, tuple[str, ...]]]:
    item = line.data
    if item["type"] not in ("user", "assistant") or item.get("isApiErrorMessage"):
        return
    message = item["message"]
    yield f"message/{item['type']}", tuple(message)
    if item["type"] == "assistant":
        usage = message["usage"]
        if line.family == "2.1":
            yield (
                ("usage/final" if "iterations" in usage else "usage/placeholder"),
                _usage_shape(usage),
            )
        else:
            yield "usage", _usage_shape(usage)
    if isinstance(message["content"], list):
        for block in message["content"]:
            if block["type"] in ("text", "thinking", "tool_use", "tool_result"):
                yield f"block/{item['type']}/{block['type']}", tuple(block)
            if block["type"] == "tool_result" and isinstance(block["content"], list):
                for part in block["content"]:
                    yield f"block/tool_result/{part['type']}", tuple(part)


def test_message_usage_and_block_keys_match_real_lines(
    sample_lines: list[Line], real_lines: list[Line]
) -> None:
    problems, compared = _compare(
        _shapes(sample_lines, _message_parts), _shapes(real_lines, _message_parts)
    )
    assert problems == []
    assert {
        ("2.1", "usage/final"),
        ("2.1", "usage/placeholder"),
        ("1.0", "usage"),
        ("2.0", "usage"),
    } <= compared
    for family in ("1.0", "2.0", "2.1"):
        assert {(family, "block/assistant/text"), (family, "block/assistant/tool_use")} <= compared
    assert {
        ("2.1", "block/assistant/thinking"),
        ("2.1", "block/user/tool_result"),
        ("2.1", "block/tool_result/text"),
    } <= compared


# ---------------------------------------------------------------------------------------------
# What the toolkit relies on
# ---------------------------------------------------------------------------------------------


def test_every_file_is_json_lines(sample_lines: list[Line]) -> None:
    files = sorted((SAMPLE / "projects").rglob("*.jsonl"))
    for path in files:
        data = path.read_bytes()
        assert data.endswith(b"\n") and b"\n\n" not in data, path
        for text in data.decode("utf-8").splitlines():
            assert text == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    assert len(sample_lines) == sum(len(p.read_bytes().splitlines()) for p in files)
    stamps = [line.data["timestamp"] for line in sample_lines if "timestamp" in line.data]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp) for stamp in stamps)


def _groups(lines: list[Line]) -> dict[tuple[str, str, str], list[Line]]:
    """Assistant lines of one model response: (session, message id, request id) -> lines."""
    groups: dict[tuple[str, str, str], list[Line]] = defaultdict(list)
    for line in lines:
        item = line.data
        if item["type"] == "assistant" and not item.get("isApiErrorMessage"):
            groups[(item["sessionId"], item["message"]["id"], item["requestId"])].append(line)
    return groups


def test_message_groups_repeat_their_usage(sample_lines: list[Line]) -> None:
    groups = _groups(sample_lines)
    assert len(groups) >= 40
    multi = 0
    for key, lines in groups.items():
        usages = [line.data["message"]["usage"] for line in lines]
        outputs = [usage["output_tokens"] for usage in usages]
        assert outputs == sorted(outputs), key
        for field in (*USAGE_FIELDS, "cache_creation"):
            assert len({json.dumps(usage[field], sort_keys=True) for usage in usages}) == 1, (
                key,
                field,
            )
        assert len({line.path for line in lines}) == 1
        multi += len(lines) > 1
    assert multi > 20
    ids = {key[1] for key in groups}
    assert all(re.fullmatch(r"msg_01[0-9A-Za-z]{22}", message_id) for message_id in ids)
    assert all(re.fullmatch(r"req_011C[0-9A-Za-z]{20}", key[2]) for key in groups)


def _thread_roots(lines: list[Line]) -> dict[tuple[Path, int], str]:
    """Each uuid-carrying line's thread: the first line of its parentUuid chain in its file."""
    root_of: dict[str, str] = {}
    where: dict[tuple[Path, int], str] = {}
    for line in lines:
        uid = line.data.get("uuid")
        if uid is None:
            continue
        parent = line.data.get("parentUuid")
        root_of[uid] = root_of.get(parent, uid) if parent else uid
        where[(line.path, line.number)] = f"{line.path}:{root_of[uid]}"
    return where


def test_tool_results_answer_earlier_tool_uses_of_their_thread(sample_lines: list[Line]) -> None:
    thread = _thread_roots(sample_lines)
    issued: dict[str, set[str]] = defaultdict(set)
    answered = 0
    for line in sample_lines:
        item = line.data
        if item["type"] not in ("user", "assistant") or not isinstance(
            item["message"]["content"], list
        ):
            continue
        key = thread[(line.path, line.number)]
        for block in item["message"]["content"]:
            if block["type"] == "tool_use":
                assert re.fullmatch(r"toolu_01[0-9A-Za-z]{22}", block["id"])
                issued[key].add(block["id"])
            elif block["type"] == "tool_result":
                assert block["tool_use_id"] in issued[key], (line.path.name, line.number)
                answered += 1
                if item.get("sourceToolAssistantUUID"):
                    assert item["parentUuid"] == item["sourceToolAssistantUUID"]
    assert answered >= 30


def test_parallel_results_sit_between_lines_of_their_message(sample_lines: list[Line]) -> None:
    """2.1 runs read-only tools while the message streams: a result between two of its lines."""
    interleaved = 0
    for lines in _groups(sample_lines).values():
        numbers = [line.number for line in lines]
        if numbers[-1] - numbers[0] + 1 > len(numbers):
            between = [
                line
                for line in sample_lines
                if line.path == lines[0].path and numbers[0] < line.number < numbers[-1]
            ]
            interleaved += any(line.data["type"] == "user" for line in between)
    assert interleaved >= 1


def test_compaction_lines(sample_lines: list[Line], expected: dict[str, Any]) -> None:
    boundaries = [line for line in sample_lines if _kind(line.data) == "system/compact_boundary"]
    assert len(boundaries) == len(expected["compactions"]) == 1
    for boundary in boundaries:
        item = boundary.data
        assert item["parentUuid"] is None and item["logicalParentUuid"]
        following = [
            line
            for line in sample_lines
            if line.path == boundary.path and line.number == boundary.number + 1
        ][0].data
        assert (
            following.get("isCompactSummary") is True
            and following.get("isVisibleInTranscriptOnly") is True
        )
        assert following["parentUuid"] == item["uuid"]
        workers = [
            line
            for line in sample_lines
            if line.path.name.startswith("agent-acompact-")
            and line.data.get("sessionId") == item["sessionId"]
        ]
        assert workers[0].data["parentUuid"] == item["logicalParentUuid"]
        assert [line.data["type"] for line in workers] == ["user", "assistant"]
        assert "iterations" not in workers[1].data["message"]["usage"]  # a placeholder count only
        fact = expected["compactions"][0]
        assert item["compactMetadata"] == {
            "trigger": fact["trigger"],
            "preTokens": fact["pre_tokens"],
        }
        assert workers[1].data["message"]["usage"]["cache_read_input_tokens"] == fact["pre_tokens"]
        assert 60_000 <= fact["pre_tokens"] <= 70_000


def test_subagent_progress_mirrors_the_subagent_file(sample_lines: list[Line]) -> None:
    progress = [line.data for line in sample_lines if _kind(line.data) == "progress/agent_progress"]
    subagent = {
        line.data["uuid"]: line.data
        for line in sample_lines
        if "subagents" in line.path.parts
        and "acompact" not in line.path.name
        and "uuid" in line.data
    }
    assert len(progress) >= 5
    tool_ids = {
        block["id"]
        for line in sample_lines
        if line.data["type"] == "assistant" and not line.data.get("isApiErrorMessage")
        for block in line.data["message"]["content"]
        if block["type"] == "tool_use" and block["name"] == "Task"
    }
    for item in progress:
        shown = item["data"]["message"]
        original = subagent[shown["uuid"]]
        assert shown["timestamp"] == original["timestamp"]
        assert item["data"]["agentId"] == original["agentId"]
        assert item["parentToolUseID"] in tool_ids
        if shown["type"] == "assistant":
            assert shown["message"] == {**original["message"], "context_management": None}


def test_context_failure_names_the_window(
    sample_lines: list[Line], expected: dict[str, Any]
) -> None:
    failures = [line.data for line in sample_lines if line.data.get("isApiErrorMessage")]
    assert len(failures) == 1
    incident = expected["incidents"][0]
    window = incident["context_failure"]["window"]
    text = failures[0]["message"]["content"][0]["text"]
    assert f"prompt is too long: {window} tokens > 200000 maximum" in text
    assert window > 200_000 and "requestId" not in failures[0]
    growth = incident["largest_growth"]
    assert growth["tool_name"] == "mcp__store__get_order_history"
    assert 100_000 <= growth["result_tokens"] <= 115_000
    answers = [
        g
        for g in _groups(sample_lines).values()
        if g[0].data["sessionId"] == incident["session_id"]
    ]
    windows = [sum(g[-1].data["message"]["usage"][f] for f in USAGE_FIELDS) for g in answers]
    assert max(windows) < 200_000  # every answered request of the incident stayed in the window
    assert growth["window_after"] in windows and growth["window_before"] in windows


def test_cache_writes_go_to_the_right_bucket(sample_lines: list[Line]) -> None:
    buckets = defaultdict(set)
    for line in sample_lines:
        item = line.data
        if item["type"] != "assistant" or item.get("isApiErrorMessage"):
            continue
        usage = item["message"]["usage"]
        split = usage["cache_creation"]
        assert (
            split["ephemeral_1h_input_tokens"] + split["ephemeral_5m_input_tokens"]
            == usage["cache_creation_input_tokens"]
        )
        subagent = item["isSidechain"] and "acompact" not in line.path.name
        buckets[(line.family, subagent)].add("1h" if split["ephemeral_1h_input_tokens"] else "5m")
    assert buckets == {
        ("2.1", False): {"1h"},
        ("2.1", True): {"5m"},
        ("2.0", False): {"5m"},
        ("2.0", True): {"5m"},
        ("1.0", False): {"5m"},
        ("1.0", True): {"5m"},
    }


def _read_back(lines: list[Line]) -> dict[tuple[str, str], dict[str, dict[str, int]]]:
    """Per (project, session) and UTC day: the sums a loader gets from each call's last line."""
    sums: dict[tuple[str, str], dict[str, dict[str, int]]] = defaultdict(dict)

    def day_of(line: Line, stamp: str) -> dict[str, int]:
        project = line.path.relative_to(SAMPLE / "projects").parts[0]
        days = sums[(project, line.data["sessionId"])]
        return days.setdefault(stamp[:10], defaultdict(int))

    for group in _groups(lines).values():
        usage = group[-1].data["message"]["usage"]
        totals = day_of(group[0], group[0].data["timestamp"])
        totals["calls"] += 1
        totals["failed_calls"] += 0
        totals["output_tokens"] += usage["output_tokens"]
        for field in USAGE_FIELDS:
            totals[field] += usage[field]
    for line in lines:
        if line.data.get("isApiErrorMessage"):
            totals = day_of(line, line.data["timestamp"])
            totals["calls"] += 1
            totals["failed_calls"] += 1
        if _kind(line.data) == "system/api_error":
            day_of(line, line.data["timestamp"])["api_errors"] += 1
    return sums


def test_expected_json_sums_are_what_the_files_say(
    sample_lines: list[Line], expected: dict[str, Any]
) -> None:
    read = _read_back(sample_lines)
    listed = {(s["project"], s["session_id"]): s for s in expected["sessions"]}
    assert set(listed) == set(read)
    assert len(listed) == 5
    for key, days in read.items():
        assert set(days) == set(listed[key]["days"]), key
        for day, totals in days.items():
            written = listed[key]["days"][day]
            for field in ("calls", "failed_calls", "api_errors", "output_tokens", *USAGE_FIELDS):
                assert written[field] == totals.get(field, 0), (key, day, field)
            assert written["output_tokens_final"] >= written["output_tokens"]
        threads = listed[key]["threads"]
        assert sum(t["calls"] for t in threads) == sum(d["calls"] for d in days.values())
    days_of = {key[0]: sorted(days) for key, days in read.items() if len(days) > 1}
    assert days_of == {"-home-dev-shop": ["2026-11-17", "2026-11-18"]}  # session C crosses midnight


# ---------------------------------------------------------------------------------------------
# Token arithmetic, recomputed from the files by the rules sample_data/README.md states
# ---------------------------------------------------------------------------------------------


def _tokens(chars: int) -> int:
    return -(-chars * 10 // 36)  # ceil(chars / 3.6)


def _block_tokens(block: dict[str, Any]) -> int:
    if block["type"] == "tool_use":
        return _tokens(
            len(block["name"])
            + len(json.dumps(block["input"], ensure_ascii=False, separators=(",", ":")))
        )
    return _tokens(len(block.get("text", block.get("thinking", ""))))


@dataclass
class _Call:
    window: int  # recomputed
    usage: dict[str, Any]  # as written on the call's last line
    output: int  # recomputed from its blocks
    at: str  # first line's timestamp
    after_compaction: bool
    final_written: bool


def _replay(
    lines: list[Line], system: int, pieces: list[tuple[int, int | None]] | None = None
) -> tuple[list[_Call], list[tuple[int, int | None]], int]:
    """Calls of one thread with the windows the README's rules give; and the thread's pieces
    (tokens, prompt number if thinking) as they stand before a compaction boundary, if any."""
    pieces = list(pieces or [])
    prompt = 1 if pieces else 0
    calls: dict[str, _Call] = {}
    blocks: dict[str, int] = defaultdict(int)
    queued: list[str] = []
    before_boundary: list[tuple[int, int | None]] = []
    compacted = False
    refused = 0
    for line in lines:
        item = line.data
        kind = _kind(item)
        if kind == "queue-operation":
            if item["operation"] == "enqueue":
                queued.append(item["content"])
            else:
                pieces.append((_tokens(len(queued.pop(0))), None))
        elif kind == "system/compact_boundary":
            before_boundary = [
                p for p in pieces if p[1] is None
            ]  # the summarizer's request is a new prompt
        elif kind == "assistant/api-error-message":
            refused = system + sum(t for t, n in pieces if n is None or n == prompt)
        elif kind == "user":
            content = item["message"]["content"]
            if item.get("isCompactSummary"):
                pieces, compacted = [], True
            if isinstance(content, str):
                prompt += 1
                pieces.append((_tokens(len(content)), None))
            else:
                for part in content:
                    if part["type"] == "tool_result":
                        inner = part["content"]
                        size = (
                            len(inner)
                            if isinstance(inner, str)
                            else sum(len(p["text"]) for p in inner)
                        )
                        pieces.append((_tokens(size), None))
        elif kind == "assistant":
            message = item["message"]
            key = message["id"] + item["requestId"]
            if key not in calls:
                window = system + sum(t for t, n in pieces if n is None or n == prompt)
                calls[key] = _Call(window, {}, 0, item["timestamp"], compacted, False)
                compacted = False
            block = message["content"][0]
            blocks[key] += _block_tokens(block)
            pieces.append((_block_tokens(block), prompt if block["type"] == "thinking" else None))
            calls[key].usage = message["usage"]
            calls[key].output = max(1, blocks[key])
            calls[key].final_written = "iterations" in message["usage"] or line.family != "2.1"
    return list(calls.values()), before_boundary, refused


def _ttl_ms(line: Line) -> int:
    main_21 = line.family == "2.1" and not line.data.get("isSidechain")
    return (60 if main_21 else 5) * 60 * 1000


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def test_windows_follow_the_documented_arithmetic(
    sample_lines: list[Line], expected: dict[str, Any]
) -> None:
    by_file: dict[Path, list[Line]] = defaultdict(list)
    for line in sample_lines:
        by_file[line.path].append(line)
    checked = 0
    reads: dict[str, int] = defaultdict(int)  # which cache rule each call followed
    refusals = []
    for path, lines in sorted(by_file.items()):
        if path.name.startswith("agent-"):
            continue  # replayed from their parent session below
        main = [line for line in lines if not line.data.get("isSidechain")]
        threads = [(main, 18_000, None)]
        inline = [line for line in lines if line.data.get("isSidechain")]
        if inline:  # 1.0: the subagent's lines are in the session's file
            threads.append((inline, 9_000, None))
        session_id = next(line.data["sessionId"] for line in lines if "sessionId" in line.data)
        main_calls, before_boundary, refused = _replay(main, 18_000)
        if refused:
            refusals.append(refused)
        for other in by_file:
            if (
                other.name.startswith("agent-")
                and by_file[other][0].data["sessionId"] == session_id
            ):
                if "acompact" in other.name:
                    threads.append((by_file[other], 18_000, before_boundary))
                else:
                    threads.append((by_file[other], 9_000, None))
        for thread_lines, system, pieces in threads:
            calls = main_calls if thread_lines is main else _replay(thread_lines, system, pieces)[0]
            previous: _Call | None = None
            for call in calls:
                usage = call.usage
                written = sum(usage[field] for field in USAGE_FIELDS)
                assert written == call.window, (path.name, call.at)
                assert 1 <= usage["input_tokens"] <= 10
                if pieces is not None:  # the compaction request reads the main thread's last window
                    rule, wanted = "summarizer", expected["compactions"][0]["pre_tokens"]
                elif previous is None:
                    rule, wanted = "first call", 0
                elif _ms(call.at) - _ms(previous.at) > _ttl_ms(thread_lines[0]):
                    rule, wanted = "expired", 0
                elif call.after_compaction:
                    rule, wanted = "after compaction", system
                else:
                    rule, wanted = "previous window", previous.window
                assert usage["cache_read_input_tokens"] == wanted, (path.name, call.at, rule)
                reads[rule] += 1
                if call.final_written:
                    assert usage["output_tokens"] == call.output, (path.name, call.at)
                else:
                    assert usage["output_tokens"] <= call.output
                previous = call
                checked += 1
    calls = sum(t["calls"] - t["failed_calls"] for s in expected["sessions"] for t in s["threads"])
    assert checked == calls
    assert set(reads) == {
        "summarizer",
        "first call",
        "expired",
        "after compaction",
        "previous window",
    }
    assert refusals == [incident["context_failure"]["window"] for incident in expected["incidents"]]
