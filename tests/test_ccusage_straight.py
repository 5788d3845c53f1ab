"""ccusage's question answered straight from the transcripts (`cost --ccusage-compatible
--transcripts`), without a store: the same totals as the store gives after an ingest,
on transcripts at their worst. The parity with ccusage itself, on the sample, the real
transcripts and the rules corpus, is in tests/test_ccusage_parity.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from forensics import api
from forensics.cli import app
from tests.test_claude_code import Transcript, tool_result, tool_use, usage

runner = CliRunner()
MODEL = "claude-sonnet-4-5-20250929"


def hostile(root: Path) -> Path:
    """Transcripts holding what a byte search for usage lines could get wrong."""
    one = Transcript("h-1")
    one.prompt("go")
    # a response over three lines with streaming placeholders, split by its tool results
    one.response("msg_a", [{"type": "text", "text": "a"}, tool_use("t1", "Read")],
                 usage(3, 100, 200, 10))  # fmt: skip
    one.results([tool_result("t1", 'a result that says "usage": {"input_tokens": 999}')])
    # ids of the wrong type, empty ids, none: one response each, no two merged
    for n, (mid, rid) in enumerate([(12345, 678), ({"a": 1}, ["r"]), ("", ""), (None, None)]):
        body = {"id": mid, "model": MODEL, "content": "x", "usage": usage(1, 0, 100 * n, 1)}
        one.add(one._line("assistant", requestId=rid, message=body))
    # counts that are no counts, a negative one, a costUSD, a fast request
    one.add(one._line("assistant", requestId="r-huge", message={
        "id": "m-huge", "model": MODEL, "content": "x",
        "usage": {"input_tokens": 1e30, "output_tokens": 5}}))  # fmt: skip
    one.add(one._line("assistant", requestId="r-neg", message={
        "id": "m-neg", "model": MODEL, "content": "x",
        "usage": {"input_tokens": -5, "output_tokens": 3}}))  # fmt: skip
    one.add(one._line("assistant", requestId="r-usd", costUSD=0.25, message={
        "id": "m-usd", "model": MODEL, "content": "x", "usage": usage(5, 0, 50, 5)}))  # fmt: skip
    one.add(one._line("assistant", requestId="r-fast", message={
        "id": "m-fast", "model": "claude-opus-4-6", "content": "x",
        "usage": {**usage(5, 0, 50, 5), "speed": "fast"}}))  # fmt: skip
    # failures with and without usage, a system api_error with one
    one.add(one._line("assistant", isApiErrorMessage=True, message={
        "id": "m-err", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error"}],
        "usage": usage(0, 0, 0, 0)}))  # fmt: skip
    one.add(one._line("system", subtype="api_error", error="Overloaded",
                      message={"usage": usage(7, 0, 0, 0)}))  # fmt: skip
    one.add(one._line("system", subtype="api_error", error="Overloaded"))
    # lines that hold "usage" and are not read: progress, a snapshot, bad JSON, not UTF-8,
    # a time out of range, an assistant line without a message object
    one.raw('{"type":"progress","data":{"message":{"usage":{"input_tokens":50}}}}')
    one.raw('{"type":"file-history-snapshot","usage":{"input_tokens":50}}')
    one.raw('{"type":"assistant","message":{"usage":')
    late = {"id": "m-late", "model": MODEL, "usage": usage(1, 0, 0, 1)}
    late = one._line("assistant", requestId="r-late", message=late)
    one.add({**late, "timestamp": "9999-12-31T00:00:00Z"})
    one.add(one._line("assistant", requestId="r-str", message="usage"))
    # a lone surrogate in a model name
    one.raw(json.dumps(one._line("assistant", requestId="r-sur", message={
        "id": "m-sur", "model": "claude-\ud800", "content": "x", "usage": usage(1, 0, 9, 1)}),
        ensure_ascii=True))  # fmt: skip
    # an inline sidechain's copy of a main-thread response (1.0): the main copy counts
    one.add(one._line("assistant", isSidechain=True, requestId="r-side", message={
        "id": "m-side", "model": MODEL, "content": "x", "usage": usage(9, 0, 900, 9)}))  # fmt: skip
    one.add(one._line("assistant", requestId="r-side", message={
        "id": "m-side", "model": MODEL, "content": "x", "usage": usage(9, 0, 90, 9)}))  # fmt: skip
    # a response's lines whose totals tie but whose costUSD differs: the first counts;
    # and whose recorded writes and their split rank the lines apart: the recorded, as
    # the ingest keeps a response's largest usage
    for cost in (0.01, 9.0):
        one.add(one._line("assistant", requestId="r-tie", costUSD=cost, message={
            "id": "m-tie", "model": MODEL, "content": "x",
            "usage": usage(1, 0, 0, 5)}))  # fmt: skip
    for written, split in ((1000, 0), (0, 500)):
        one.add(one._line("assistant", requestId="r-split", message={
            "id": "m-split", "model": MODEL, "content": "x", "usage": {
                "input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": written,
                "cache_creation": {"ephemeral_5m_input_tokens": split,
                                   "ephemeral_1h_input_tokens": 0}}}))  # fmt: skip
    one.write(root)
    path = root / "projects" / "-home-dev-p" / "h-1.jsonl"
    with path.open("ab") as handle:  # not UTF-8, with a usage key
        handle.write(b'{"type":"assistant","usage":"\xff"}\n')
    # a resumed session copying h-1's first response, and a day of its own
    two = Transcript("h-2", start=86_400)
    two.prompt("again")
    two.response("msg_a", [{"type": "text", "text": "a"}], usage(3, 100, 200, 10))
    two.response("msg_b", [{"type": "text", "text": "b"}], usage(1, 0, 10, 2))
    two.write(root)
    return root


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = hostile(tmp_path_factory.mktemp("hostile"))
    db = root / "s.duckdb"
    api.ingest_claude_code(db, [root])
    return root, db


@pytest.mark.parametrize("by", ["day", "session"])
def test_the_totals_straight_from_the_files_are_the_stores(stored, by: str) -> None:
    root, db = stored
    straight, read = api.cost_ccusage_transcripts([root], by=by)
    kept = api.cost_ccusage(db, by=by)
    assert kept.height >= 2 and kept["entries"].sum() > 10
    assert straight.equals(kept), (straight, kept)
    assert read["files"] == 2


def test_a_line_it_cannot_read_is_a_skip_the_ingest_makes_too(stored) -> None:
    root, db = stored
    _, read = api.cost_ccusage_transcripts([root], by="day")
    ingest = dict(api.ingest_skips(db, 1).select("locator", "reason").iter_rows())
    skips = dict(read["skips"])
    assert len(skips) >= 4
    assert any(why.startswith("not valid JSON") for why in skips.values())
    assert any(why.startswith("not UTF-8") for why in skips.values())
    assert any("not between 1970 and 3000" in why for why in skips.values())
    assert any(why == "an assistant line without a message object" for why in skips.values())
    assert set(skips.items()) <= set(ingest.items())


def test_the_cli_prints_what_the_store_prints(stored) -> None:
    root, db = stored
    for by in ("day", "session"):
        straight = runner.invoke(app, ["cost", "--by", by, "--ccusage-compatible",
                                       "--transcripts", str(root), "-f", "json"])  # fmt: skip
        kept = runner.invoke(app, ["cost", "--by", by, "--ccusage-compatible",
                                   "--db", str(db), "-f", "json"])  # fmt: skip
        assert straight.exit_code == 0, straight.output
        assert straight.stdout == kept.stdout
        assert json.loads(straight.stdout)
    table = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible",
                                "--transcripts", str(root)])  # fmt: skip
    assert table.exit_code == 0, table.output
    assert "read straight from 2 files" in table.output and "no store" in table.output
    assert "Skipped " in table.stderr and ".jsonl:" in table.stderr


def test_without_a_store_the_folders_ccusage_reads_are_read(stored, tmp_path, monkeypatch):
    root, db = stored
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    monkeypatch.delenv("FORENSICS_DB", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./forensics.duckdb
    out = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible", "-f", "json"])
    assert out.exit_code == 0, out.output
    assert "No store at forensics.duckdb: ccusage's totals are read straight" in out.stderr
    kept = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible",
                               "--db", str(db), "-f", "json"])  # fmt: skip
    assert out.stdout == kept.stdout
    assert not (tmp_path / "forensics.duckdb").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--transcripts", "X"], "answers ccusage's question"),
        (["--ccusage-compatible", "--by", "day", "--transcripts", "X", "SESSION"],
         "reads the files whole"),
        (["--ccusage-compatible", "--transcripts", "X", "--by", "model"], "by day or by session"),
        (["--ccusage-compatible", "--transcripts", "X", "--user", "Y"], "reads the files whole"),
        (["--ccusage-compatible", "--transcripts", "/no/such/folder"], "no such file or folder"),
    ],
)
def test_what_does_not_go_with_transcripts_is_named(stored, args: list[str], said: str) -> None:
    root, _ = stored
    given = [str(root) if a == "X" else a for a in args]
    out = runner.invoke(app, ["cost", *given])
    assert out.exit_code == 1, out.output
    assert said in out.output
    assert "Traceback" not in out.output


def test_a_since_and_until_window_is_the_stores(stored) -> None:
    root, db = stored
    since = api.cost_ccusage(db, by="day")["day"].max()
    window = api.Selection.parse(since=str(since))
    straight, _ = api.cost_ccusage_transcripts([root], by="day", since=window.since)
    kept = api.cost_ccusage(db, window, by="day")
    assert straight.height == 1 and straight.equals(kept)
    assert isinstance(straight, pl.DataFrame)


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_pieces_of_any_size_read_the_same_lines(
    stored, tmp_path: Path, monkeypatch, piece: int
) -> None:
    """A file is read a piece at a time: lines across pieces, lines longer than a piece
    and a last line without its newline read as whole lines, skips named by line."""
    import shutil

    from forensics.sources.files import claude_code_usage

    root = tmp_path / "copy"
    shutil.copytree(stored[0], root, ignore=shutil.ignore_patterns("*.duckdb*"))
    path = root / "projects" / "-home-dev-p" / "h-2.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # no newline after the last line
    whole = claude_code_usage.read_usage([root])
    monkeypatch.setattr(claude_code_usage, "PIECE", piece)
    pieces = claude_code_usage.read_usage([root])
    assert pieces.rows.equals(whole.rows) and whole.rows.num_rows > 10
    assert pieces.skips == whole.skips and len(whole.skips) == 6
    # and in parts of 97 bytes by two workers, read a piece at a time
    monkeypatch.setattr(claude_code_usage, "WORKER_BYTES", 0)
    monkeypatch.setattr(claude_code_usage, "BATCH_BYTES", 97)
    parts = claude_code_usage.read_usage([root], workers=2)
    assert parts.rows.equals(whole.rows) and parts.skips == whole.skips
    assert (parts.files, parts.bytes_read) == (whole.files, whole.bytes_read)
    assert pieces.bytes_read == whole.bytes_read == sum(
        p.stat().st_size for p in root.rglob("*.jsonl"))


def test_a_part_that_cannot_be_read_leaves_its_file_unread_once(
    stored, tmp_path: Path, monkeypatch
) -> None:
    """A file read in parts, one of which cannot be read (gone, an I/O error): the file
    is not counted as read and its skip is said once, as when one process reads it
    whole and fails; what its other parts read is kept."""
    import shutil

    from forensics.sources.files import claude_code_usage

    root = tmp_path / "copy"
    shutil.copytree(stored[0], root, ignore=shutil.ignore_patterns("*.duckdb*"))
    failing = root / "projects" / "-home-dev-p" / "h-1.jsonl"
    lines = claude_code_usage._usage_lines

    def broken(handle: Any, first: int = 0, last: int | None = None, buffer: Any = None) -> Any:
        if handle.name == str(failing) and first > 0:
            raise OSError("Input/output error")
        return lines(handle, first, last, buffer)

    monkeypatch.setattr(claude_code_usage, "_usage_lines", broken)
    monkeypatch.setattr(claude_code_usage, "WORKER_BYTES", 0)
    monkeypatch.setattr(claude_code_usage, "BATCH_BYTES", 97)
    read = claude_code_usage.read_usage([root], workers=2)
    said = [why for where, why in read.skips if where == str(failing)]
    assert said == ["cannot read the file: Input/output error"]
    assert read.files == 1  # h-2 only
    assert read.rows.num_rows > 0 and str(failing).endswith("h-1.jsonl")


@pytest.mark.parametrize("batch", [7, 97, 1 << 30])
def test_workers_read_what_one_process_reads(
    stored, tmp_path: Path, monkeypatch, batch: int
) -> None:
    """Read by two forked workers all files at a time, or files in parts (of 7 bytes,
    shorter than any line: a line each at most; of 97 bytes: lines across parts): the
    same rows in the same order, skips (their line numbers), counts, and one response of
    two roots' files of the same name. (Parts of a byte each took 45 s of the suite;
    every place a part can end is test_a_file_cut_anywhere_reads_each_line_once's.)"""
    import shutil

    from forensics.sources.files import claude_code_usage

    roots = [tmp_path / "one", tmp_path / "two"]
    for root in roots:
        shutil.copytree(stored[0], root, ignore=shutil.ignore_patterns("*.duckdb*"))
    (roots[1] / "projects" / "-home-dev-p" / "h-2.jsonl").write_bytes(b"not json\n")
    # and a session under one root only: its file's rows come in as they are, in
    # batches with files of both roots (merged by key) or alone
    own = roots[0] / "projects" / "-home-dev-p"
    (own / "h-9.jsonl").write_bytes((own / "h-1.jsonl").read_bytes())
    alone = claude_code_usage.read_usage(roots)
    monkeypatch.setattr(claude_code_usage, "WORKER_BYTES", 0)
    monkeypatch.setattr(claude_code_usage, "BATCH_BYTES", batch)
    forked = claude_code_usage.read_usage(roots, workers=2)
    assert forked.rows.equals(alone.rows) and alone.rows.num_rows > 10
    assert (forked.skips, forked.kinds, forked.files, forked.bytes_read, forked.lines_parsed) == (
        alone.skips, alone.kinds, alone.files, alone.bytes_read, alone.lines_parsed)
    assert alone.files == 2 * len(list(roots[0].rglob("*.jsonl"))) - 1
    def calls(read: claude_code_usage.UsageRead) -> int:
        return read.rows.column("kind").to_pylist().count("call")

    # the copies' responses are one (a failed request is a row per line read)
    one = claude_code_usage.read_usage(roots[:1])
    assert calls(one) == calls(alone) > 5
    # one root's files read whole by the workers are no file's twin: batches of rows
    # as they are (in parts, each file's parts merged by key)
    forked = claude_code_usage.read_usage(roots[:1], workers=2)
    assert forked.rows.equals(one.rows) and (forked.skips, forked.files) == (one.skips, one.files)


def test_a_file_cut_anywhere_reads_each_line_once(stored) -> None:
    """A file's usage lines read in two parts cut at any byte, or in parts of a byte (the
    workers' parts: each reads the lines that start in it), are the lines read whole,
    each once."""
    from forensics.sources.files import claude_code_usage

    path = stored[0] / "projects" / "-home-dev-p" / "h-1.jsonl"
    lines = claude_code_usage._usage_lines
    with path.open("rb") as handle:
        whole = list(lines(handle))
        size = path.stat().st_size
        assert len(whole) > 10 and size > 2_000
        for cut in range(1, size):
            assert [*lines(handle, 0, cut), *lines(handle, cut)] == whole, cut
        # and in parts of a byte: each line read by the part it starts in
        assert [line for at in range(size) for line in lines(handle, at, at + 1)] == whole


def test_a_store_named_that_is_not_there_is_an_error_not_the_transcripts(
    stored, tmp_path: Path, monkeypatch
) -> None:
    root, _ = stored
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))  # there, and not read
    for how in (["--db", str(tmp_path / "typo.duckdb")], []):
        if not how:
            monkeypatch.setenv("FORENSICS_DB", str(tmp_path / "typo.duckdb"))
        out = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible", *how])
        assert out.exit_code == 1, out.output
        assert f"no store at {tmp_path / 'typo.duckdb'}" in out.output
        assert not (tmp_path / "typo.duckdb").exists()
    monkeypatch.delenv("FORENSICS_DB")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "empty"))
    out = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible"])
    assert out.exit_code == 1 and "no Claude Code transcripts found" in out.output
    out = runner.invoke(app, ["cost", "SESSION", "--by", "day", "--ccusage-compatible"])
    assert out.exit_code == 1 and "with no store at" in out.output


ROOT = Path(__file__).resolve().parents[1]
CORPORA = {
    "sample": ROOT / "sample_data" / "claude_code",
    "real": ROOT.parent / "shared" / "real_data" / "claude_code",
}


def variants(root: Path) -> Path:
    """A plain response's line, and that line with each field the typed decode reads
    made odd in one way: what the typed decode must hand to the ingest's functions, or
    read as they read it."""
    plain = Transcript("v-1")._line("assistant", requestId="r-0", message={
        "id": "m-0", "model": MODEL, "content": [{"type": "text", "text": "x"}],
        "usage": {**usage(3, 100, 200, 10), "speed": "standard",
                  "cache_creation": {"ephemeral_5m_input_tokens": 100,
                                     "ephemeral_1h_input_tokens": 0}}})  # fmt: skip
    odd: list[Any] = [None, True, 0, -1, 1.0, 2.5, 10**12, 10**12 + 1, 2**64, 1e400, "7", "",
                      [], {}, "x\ud800"]  # fmt: skip
    stamps = ["2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:59:60Z",
              "2026-01-01t00:00:00z", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00",
              "2026-01-01T00:00:00.1234567891Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
              "3000-01-01T00:00:00.000001Z", "2026-01-01T00:00:00.5Z", " 2026-01-01T00:00:00Z",
              "1767225600", "2026-01-01 00:00:00Z"]  # fmt: skip
    lines: list[dict[str, Any]] = [plain]
    made: list[int] = []

    def changed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
        line = json.loads(json.dumps(plain))
        # a response of its own (one response keeps only its largest usage)
        n = len(lines) + len(made)
        line["message"]["id"], line["requestId"], line["uuid"] = f"m-{n}", f"r-{n}", f"u-{n}"
        made.append(n)
        held = line
        for key in path[:-1]:
            held = held[key]
        if value is KeyError:
            held.pop(path[-1], None)
        else:
            held[path[-1]] = value
        return line

    fields = [("type",), ("timestamp",), ("message",), ("requestId",), ("isSidechain",),
              ("isApiErrorMessage",), ("uuid",), ("costUSD",), ("message", "id"),
              ("message", "model"), ("message", "usage"), ("message", "usage", "speed"),
              ("message", "usage", "cache_creation")] + [
        ("message", "usage", k) for k in ("input_tokens", "output_tokens",
                                          "cache_read_input_tokens",
                                          "cache_creation_input_tokens")] + [
        ("message", "usage", "cache_creation", k)
        for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")]  # fmt: skip
    for path in fields:
        lines += [changed(path, v) for v in [*odd, KeyError]]
    lines += [changed(("timestamp",), s) for s in stamps]
    lines += [changed(("type",), t) for t in ("user", "system", "progress", "summary")]
    lines += [changed(("costUSD",), c) for c in (0.25, 7, 1e9, 999999999.5)]
    texts = [json.dumps(line) for line in lines]
    # non-ASCII text as UTF-8 rather than escaped (each its own response again)
    texts += [json.dumps(changed(("message", "model"), "modèle-é"), ensure_ascii=False),
              json.dumps(changed(("uuid",), "ü"), ensure_ascii=False)]  # fmt: skip
    # duplicated keys (the last one counts, in both readers), a surrogate pair, a NaN:
    # each a response of its own, so a wrong reading of it shows in the rows
    texts.append(json.dumps(changed(("type",), "assistant"))[:-1] + ', "type": "user"}')
    texts.append(json.dumps(changed(("type",), "user"))[:-1] + ', "type": "assistant"}')
    texts.append(json.dumps(changed(("type",), "assistant"))[:-1] + ', "message": 5}')
    progress = json.dumps(changed(("type",), "assistant"))[1:]
    texts.append('{"type":"progress","data":{"x":1},' + progress)
    texts.append(json.dumps(changed(("type",), "assistant")).replace('"x"', '"\\ud83d\\ude00"'))
    texts.append(json.dumps(changed(("type",), "assistant")).replace('"x"', "NaN"))
    path = root / "projects" / "-home-dev-v" / "v-1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(t + "\n" for t in texts), encoding="utf-8", errors="surrogatepass")
    return root


@pytest.mark.parametrize("corpus", ["variants", "hostile", *CORPORA])
def test_the_typed_decode_reads_what_the_ingests_functions_read(
    corpus: str, tmp_path: Path, monkeypatch
) -> None:
    """Most usage lines are read by a typed decode (`plain_response`); every line it
    reads gives the row, response and skip the ingest's own functions give."""
    from forensics.families.claude_code import transcript
    from forensics.sources.files import claude_code_usage

    if corpus in CORPORA:
        root = CORPORA[corpus]
        if not root.is_dir():
            pytest.skip(f"{root} not here")
    else:
        root = variants(tmp_path) if corpus == "variants" else hostile(tmp_path)
    read = {"typed": 0, "lines": 0}

    def counted(text: str) -> Any:
        found = transcript.plain_response(text)
        read["lines"] += 1
        read["typed"] += found is not None
        return found

    monkeypatch.setattr(claude_code_usage, "plain_response", counted)
    typed = claude_code_usage.read_usage([root])
    monkeypatch.setattr(claude_code_usage, "plain_response", lambda text: None)
    slow = claude_code_usage.read_usage([root])
    assert typed.rows.equals(slow.rows), (typed.rows.to_pylist(), slow.rows.to_pylist())
    assert (typed.skips, typed.kinds, typed.lines_parsed) == (
        slow.skips, slow.kinds, slow.lines_parsed)
    assert slow.rows.num_rows > 5
    # the typed decode reads lines (most of a real corpus's), and not every variant
    assert 0 < read["typed"] < read["lines"]
    if corpus in CORPORA:
        assert read["typed"] > 0.8 * read["lines"], read


def test_the_command_forks_its_readers_before_polars_and_imports_no_analyses(stored) -> None:
    """`cost --ccusage-compatible --transcripts` imports polars, pyarrow and DuckDB while
    its workers read (forked before any of them), and neither `forensics.api` nor the
    analyses: their imports were a third of the 199 MB set's time."""
    import subprocess
    import sys

    root, db = stored
    probe = (
        "import sys\nfrom forensics.sources.files import claude_code_usage as u\n"
        "u.WORKER_BYTES = 0\nbegun = u.Reading.__init__\nseen = []\n"
        "def init(self, *a, **k):\n"
        "    seen.append(sorted(m for m in ('polars', 'pyarrow', 'duckdb') if m in sys.modules))\n"
        "    begun(self, *a, **k)\n"
        "u.Reading.__init__ = init\nfrom forensics.cli import main\n"
        f"sys.argv = ['forensics', 'cost', '--by', 'day', '--ccusage-compatible',"
        f" '--transcripts', {str(root)!r}, '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print(seen, sorted(m for m in ('forensics.api', 'forensics.analysis.reconstruct',"
        " 'forensics.engines.local') if m in sys.modules))\n"
    )
    env = {**os.environ, "FORENSICS_WORKERS": "2"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True, env=env)  # fmt: skip
    *printed, last = done.stdout.splitlines()
    assert last == "[[]] []", done.stdout
    kept = runner.invoke(app, ["cost", "--by", "day", "--ccusage-compatible", "--db", str(db),
                               "-f", "json"])  # fmt: skip
    assert json.loads("\n".join(printed)) == json.loads(kept.stdout)


def test_the_usage_rows_are_typed_as_transcript_events_holds_them() -> None:
    """The usage reader's columns have transcript_events' types (its `line` an offset,
    a 64-bit integer), so the ccusage query reads the same types from both."""
    import pyarrow as pa

    from forensics.sources.files.claude_code import DETAIL_SCHEMA
    from forensics.sources.files.claude_code_usage import usage_schema

    for field in usage_schema():
        kept = DETAIL_SCHEMA.field(field.name)
        assert field.type == (pa.int64() if field.name == "line" else kept.type), field


def test_workers_read_a_project_as_soon_as_its_folder_is_walked(
    stored, tmp_path: Path, monkeypatch
) -> None:
    """Under one projects folder, a project's files are handed to the workers once its
    folder is walked, before the next project's is looked for; the rows, skips and
    counts are those one process reads after finding every file."""
    import shutil

    from forensics.sources.files import claude_code_layout, claude_code_usage

    root = tmp_path / "copy"
    shutil.copytree(stored[0], root, ignore=shutil.ignore_patterns("*.duckdb*"))
    projects = root / "projects"
    for n in range(3):
        shutil.copytree(projects / "-home-dev-p", projects / f"-home-dev-q{n}")
    (projects / "stray.jsonl").write_text("{}\n")  # passed over, in its place
    alone = claude_code_usage.read_usage([root])
    seen: list[tuple[str, object]] = []
    walked, hand_out = claude_code_layout._walked, claude_code_usage.Reading._hand_out

    def walking(entry: os.DirEntry[str]) -> list[str]:
        seen.append(("walked", entry.name))
        return walked(entry)

    def handing(self: Any, workers: int, batches: list[Any]) -> Any:
        seen.append(("handed out", sorted({task[4] for batch in batches for task in batch})))
        return hand_out(self, workers, batches)

    monkeypatch.setattr(claude_code_layout, "_walked", walking)
    monkeypatch.setattr(claude_code_usage.Reading, "_hand_out", handing)
    monkeypatch.setattr(claude_code_usage, "WORKER_BYTES", 0)
    monkeypatch.setattr(claude_code_usage, "BATCH_BYTES", 64)  # each file in parts
    forked = claude_code_usage.read_usage([root], workers=2)
    assert forked.rows.equals(alone.rows) and alone.rows.num_rows > 10
    assert (forked.skips, forked.kinds, forked.files, forked.bytes_read, forked.passed_over) == (
        alone.skips, alone.kinds, alone.files, alone.bytes_read, alone.passed_over)
    assert alone.passed_over == [(str(projects / "stray.jsonl"),
                                  "not where Claude Code writes transcripts")]  # fmt: skip
    # each session's files are handed out as it is found, before the next project is
    # walked (but the last batch, which waits for the next file: it may grow)
    one, two = "-home-dev-p/h-1.jsonl", "-home-dev-p/h-2.jsonl"
    assert seen[:4] == [("walked", "-home-dev-p"), ("handed out", [one]),
                        ("handed out", [one, two]), ("walked", "-home-dev-q0")]  # fmt: skip
    assert [what for what, _ in seen].count("handed out") == 4 * 2 + 1
