"""`forensics ingest claude-code` and `cost --by day` against ccusage's native binary,
on generated transcripts of growing size: seconds and peak RSS of each, in one run.

    python tests/benchmarks/bench_claude_code.py --ccusage /path/with/node_modules
    python tests/benchmarks/bench_claude_code.py --scale 105 --scale 1050   # ~200 MB, ~2 GB
    python tests/benchmarks/bench_claude_code.py --lean --scale 385         # ~200 MB, 4x the lines
    python tests/benchmarks/bench_claude_code.py --one-file --scale 380     # one ~700 MB session

The transcripts are the bundled sample's scenario written N times by its generator
(sample_data/generate_claude_code.py --scale N: fresh ids, shifted days), so every
call is distinct. For each size, each command runs in a process of its own (peak RSS
is that process's ru_maxrss, as bench_ingest.run_child measures it):

(a) `ccusage claude daily --offline --json -z UTC` (its native binary, run directly;
    CLAUDE_CONFIG_DIR at the set): the totals only;
(b) `forensics ingest claude-code SET --db NEW`: the transcripts into a new store, the
    facts (windows, growth, compaction) built;
(c) `forensics cost --by day` on that store: the provider's bill;
(d) `forensics cost --by day --ccusage-compatible --ccusage INSTALL`: ccusage's totals;
(e) (b) again, nothing changed: the files' sizes and times say nothing is to be read;
(f) `forensics cost --by day --ccusage-compatible --transcripts SET`: ccusage's totals
    straight from the files, no store (only the lines holding a usage are parsed).

Run it with bytecode written (unset PYTHONDONTWRITEBYTECODE), as an installed copy
runs: otherwise every command compiles the package first.

--one-file writes the main files of the set's `-home-dev-shop*` sessions (each copy's
project), in time order,
as one session's file (sessionId rewritten; their subagent files under it): a single
transcript of hundreds of MB, as ccusage #873 and #1151 report, with a compaction in
every copy of the scenario (each copy starts a conversation of its own: a speed and
memory figure, not a realistic conversation).

The targets (issue 28): (b) + (c) within 5x of (a) on the sets of many files and 3x on
the one file, (e) under 0.5 s, (f) within 2x of (a), peak RSS under 500 MB. Prints the
figures, and after each set each target with this run's figure, met or not; asserts
nothing. Without --ccusage, ccusage 20.0.24 is installed from npm into the
work folder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_ingest import forensics_cmd, run_child, tail  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "sample_data" / "generate_claude_code.py"
VERSION = "20.0.24"


def install(workdir: Path) -> Path:
    folder = workdir / "ccusage"
    folder.mkdir(exist_ok=True)
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm not found: give --ccusage")
    subprocess.run(
        [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(folder),
         f"ccusage@{VERSION}", f"@ccusage/ccusage-linux-x64@{VERSION}"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return folder


def native(install_dir: Path) -> Path:
    binary = install_dir / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
    binary.chmod(0o755)
    return binary


def generate(scale: int, workdir: Path, lean: bool) -> tuple[Path, int, int]:
    out = workdir / f"scale-{scale}{'-lean' if lean else ''}"
    if not (out / "claude_code").is_dir():
        subprocess.run(
            [sys.executable, str(GENERATOR), "--scale", str(scale), "--out", str(out), "--quiet"],
            check=True,
        )
        if lean:  # the incident session's files: three MCP results of 120 fat rows
            for fat in (out / "claude_code" / "projects").rglob("*.jsonl"):
                if fat.stat().st_size > 1_000_000:
                    fat.unlink()
    size, lines = measure(out / "claude_code")
    return out / "claude_code", size, lines


def measure(folder: Path) -> tuple[int, int]:
    """Bytes and lines of the set's transcripts."""
    files = list((folder / "projects").rglob("*.jsonl"))
    size = sum(f.stat().st_size for f in files)
    lines = 0
    for f in files:
        with f.open("rb") as handle:
            lines += sum(1 for _ in handle)
    return size, lines


def one_file(folder: Path, workdir: Path) -> Path:
    """The set's -home-dev-shop* sessions as one session's file (see the docstring)."""
    out = workdir / f"{folder.parent.name}-one-file" / "claude_code"
    big = "0b1f0000-0000-4000-8000-000000000001"
    project = out / "projects" / "-home-dev-big"
    if (out / "complete").is_file():  # written last: an interrupted run is redone
        return out
    shutil.rmtree(out, ignore_errors=True)
    shops = sorted((folder / "projects").glob("-home-dev-shop*"))
    (project / big / "subagents").mkdir(parents=True)

    def first_time(path: Path) -> str:
        with path.open("rb") as handle:
            for raw in handle:
                found = json.loads(raw).get("timestamp")
                if found:
                    return str(found)
        return ""

    def copy(source: Path, sink: BinaryIO) -> None:
        old, new = f'"sessionId":"{source.stem}"'.encode(), f'"sessionId":"{big}"'.encode()
        session = source.parent.parent.name if source.parent.name == "subagents" else None
        if session:
            old = f'"sessionId":"{session}"'.encode()
        with source.open("rb") as handle:
            for raw in handle:
                sink.write(raw.replace(old, new))

    with (project / f"{big}.jsonl").open("wb") as sink:
        mains = [f for shop in shops for f in shop.glob("*.jsonl")]
        for main_file in sorted(mains, key=first_time):
            copy(main_file, sink)
            for agent in sorted((main_file.parent / main_file.stem / "subagents").glob("*.jsonl")):
                target = project / big / "subagents" / agent.name
                if target.exists():
                    raise SystemExit(f"two subagent files named {agent.name}")
                with target.open("wb") as agent_sink:
                    copy(agent, agent_sink)
    (out / "complete").write_text(f"{len(mains)} files\n")
    return out


def row(label: str, rc: int, seconds: float, rss: int, err: str) -> str:
    if rc != 0:
        return f"  {label:<52} failed ({rc}): {tail(err, 3)}"
    return f"  {label:<52} {seconds:8.2f} s  {rss / 1024:8.0f} MB peak RSS"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, action="append", help="copies of the scenario")
    ap.add_argument("--ccusage", type=Path, help="a folder holding node_modules with ccusage")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--one-file", action="store_true", help="the set's -home-dev-shop* "
                    "sessions as one session's file: a single transcript of hundreds of MB")
    ap.add_argument("--lean", action="store_true", help="without the incident session (its "
                    "files over 1 MB): more, smaller lines, as everyday coding sessions have")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-claude-code-"))
    workdir.mkdir(parents=True, exist_ok=True)
    installed = args.ccusage or install(workdir)
    binary = native(installed)
    forensics = forensics_cmd()
    print(f"work folder {workdir}; ccusage {VERSION} at {binary}", flush=True)
    for scale in args.scale or [105, 1050]:
        folder, size, lines = generate(scale, workdir, args.lean)
        if args.one_file:
            folder = one_file(folder, workdir)
            size, lines = measure(folder)
        db = workdir / f"{folder.parent.name}.duckdb"
        db.unlink(missing_ok=True)
        print(f"\nscale {scale}: {size / 1e6:,.0f} MB of transcripts, {lines:,} lines", flush=True)
        env_cmd = ["env", f"CLAUDE_CONFIG_DIR={folder}", "TZ=UTC"]
        measured: dict[str, tuple[int, float, int]] = {}  # by letter: (rc, s, RSS KB)
        for label, cmd in (
            ("(a) ccusage claude daily --offline --json",
             [*env_cmd, str(binary), "claude", "daily", "--offline", "--json", "-z", "UTC"]),
            ("(b) forensics ingest claude-code",
             [*forensics, "ingest", "claude-code", str(folder), "--db", str(db)]),
            ("(c) forensics cost --by day",
             [*forensics, "cost", "--by", "day", "--db", str(db), "-f", "json"]),
            ("(d) forensics cost --by day --ccusage-compatible",
             [*forensics, "cost", "--by", "day", "--ccusage-compatible", "--ccusage",
              str(installed), "--db", str(db), "-f", "json"]),
            ("(e) forensics ingest claude-code, unchanged",
             [*forensics, "ingest", "claude-code", str(folder), "--db", str(db)]),
            ("(f) forensics cost --ccusage-compatible --transcripts",
             [*forensics, "cost", "--by", "day", "--ccusage-compatible", "--ccusage",
              str(installed), "--transcripts", str(folder), "-f", "json"]),
        ):  # fmt: skip
            rc, seconds, rss, _, err = run_child(cmd)
            if label.startswith("(a)"):  # warm: its first run of a series is slower
                runs = [seconds] + [run_child(cmd)[1] for _ in range(4)]
                seconds = sorted(runs)[len(runs) // 2]
                label += ", median of 5"
            print(row(label, rc, seconds, rss, err), flush=True)
            measured[label[1]] = (rc, seconds, rss)
            if label.startswith("(a)"):
                floor = seconds
            elif rc == 0:
                print(f"  {'':<52} {seconds / floor:8.1f}x ccusage", flush=True)
        print(f"  store {db.stat().st_size / 1e6:,.1f} MB", flush=True)
        print(targets(measured, floor, args.one_file), flush=True)
    return 0


def targets(measured: dict[str, tuple[int, float, int]], floor: float, one_file: bool) -> str:
    """Issue 28's targets against this run's figures, each said met or not."""
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = ["  issue 28's targets in this run:"]
    (rc_b, ingest, _), (rc_c, cost, _) = measured["b"], measured["c"]
    if rc_b == 0 and rc_c == 0:
        want = 3.0 if one_file else 5.0
        ratio = (ingest + cost) / floor
        lines.append(f"    ingest + cost {ingest + cost:.2f} s: {ratio:.2f}x ccusage "
                     f"(target {want:.0f}x) {verdict(ratio <= want)}")
    rc_e, unchanged, _ = measured["e"]
    if rc_e == 0:
        lines.append(f"    unchanged ingest {unchanged:.2f} s (target 0.5 s) "
                     f"{verdict(unchanged < 0.5)}")
    rc_f, straight, _ = measured["f"]
    if rc_f == 0:
        ratio = straight / floor
        # (two places: 2.05x printed as 2.0x read as met)
        lines.append(f"    --transcripts {ratio:.2f}x ccusage (target 2x) {verdict(ratio <= 2.0)}")
    peak = max(rss for letter, (_, _, rss) in measured.items() if letter != "a")  # KB
    lines.append(f"    peak RSS of our commands {peak / 1024:,.0f} MB (target 500 MB) "
                 f"{verdict(peak < 500 * 1024)}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
