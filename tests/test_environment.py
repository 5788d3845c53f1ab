"""What the environment a command runs in may not change: a `~` in a path, a store
path that keeps nothing, bad values of the FORENSICS_ variables, an output that cannot
take the text or is gone, a narrow terminal, a low limit on memory or open files. Each
is said once, clearly, before any work where it can be, and never as "unexpected"
(found by a sweep of environments; the tests run the command as a process, as a shell
runs it, since each case is the process's own state)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from forensics import api
from forensics.store import Store

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "adk_v1.db"
MAIN = "from forensics.cli import main; main()"


def forensics(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
              limits: dict[int, int] | None = None, stdout: object = subprocess.PIPE,
              ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """The command as a process: `env` over this one's, `limits` as setrlimit's."""

    def limited() -> None:
        for kind, value in (limits or {}).items():
            resource.setrlimit(kind, (value, value))

    return subprocess.run(
        [sys.executable, "-c", MAIN, *args], env={**os.environ, **(env or {})}, cwd=cwd,
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300,
        preexec_fn=limited if limits else None,
    )  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("environment") / "s.duckdb"
    api.ingest_sqlite(db, SAMPLE)
    return db


def test_a_tilde_is_the_home_folder_for_the_store_and_the_export(tmp_path: Path) -> None:
    """`--db=~/x` (no shell expands it there) and an export to `~/x`: DuckDB opened and
    wrote the home folder's, Python checked and wrote a folder named `~` (an export
    split in two, exit 0; a store every query then said was missing)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    done = forensics("ingest", "adk-sqlite", str(SAMPLE), "--db=~/s.duckdb", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (home / "s.duckdb").exists() and not (tmp_path / "~").exists()
    shown = forensics("sessions", "--db", "~/s.duckdb", "-f", "json", env=env, cwd=tmp_path)
    assert shown.returncode == 0 and '"incident"' in shown.stdout, shown.stderr
    out = forensics("export", "parquet", "~/exp", "--db", "~/s.duckdb", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (home / "exp" / "manifest.json").exists() and not (tmp_path / "~").exists()
    back = forensics("ingest", "parquet", "~/exp", "--db", "~/back.duckdb", env=env, cwd=tmp_path)
    assert back.returncode == 0 and "loaded 47 new" in back.stdout, back.stderr
    from_env = forensics("sessions", env={**env, "FORENSICS_DB": "~/back.duckdb"}, cwd=tmp_path)
    assert from_env.returncode == 0, from_env.stderr
    # `~name` is no home (a shell leaves it so): a file of that name, here (DuckDB put
    # a store `~x.duckdb` in the home folder's parent, as `/rootx.duckdb`)
    (tmp_path / "~x.events.json").write_text(
        '[{"id": "e1", "author": "user", "timestamp": 1761123600.0}]')
    named = forensics("ingest", "adk-json", "~x.events.json", "--app", "a", "--user", "u",
                      "--db", "~x.duckdb", env=env, cwd=tmp_path)  # fmt: skip
    assert named.returncode == 0 and "loaded 1 new" in named.stdout, named.stderr
    assert (tmp_path / "~x.duckdb").exists() and not (home.parent / "homex.duckdb").exists()
    (home / "p.toml").write_text("")
    priced = forensics("cost", "--db", "~/s.duckdb", env={**env, "FORENSICS_PRICES": "~/p.toml"},
                       cwd=tmp_path)  # fmt: skip
    assert priced.returncode == 0, priced.stderr


def test_a_store_that_keeps_nothing_is_refused(tmp_path: Path) -> None:
    done = forensics("ingest", "adk-sqlite", str(SAMPLE), "--db", ":memory:", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "Error: :memory: is no store: a store is a file that keeps what is loaded")


def test_a_failed_ingest_through_a_dangling_link_keeps_the_link_and_no_store(
    tmp_path: Path,
) -> None:
    (tmp_path / "s.duckdb").symlink_to(tmp_path / "not_yet.duckdb")
    done = forensics("ingest", "adk-json", str(tmp_path / "nope.json"),
                     "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert done.returncode == 1
    assert (tmp_path / "s.duckdb").is_symlink() and not (tmp_path / "not_yet.duckdb").exists()


@pytest.mark.parametrize(("env", "message"), [
    ({"FORENSICS_WORKERS": "0"}, "Error: FORENSICS_WORKERS 0: the facts need 1 or more processes"),
    ({"FORENSICS_WORKERS": "abc"}, "Error: FORENSICS_WORKERS='abc' is not a number of processes"),
    ({"FORENSICS_LOCK_WAIT": "abc"}, "Error: FORENSICS_LOCK_WAIT='abc' is not a number of seconds"),
    ({"FORENSICS_LOCK_WAIT": "-1"}, "Error: FORENSICS_LOCK_WAIT='-1' is not a number of seconds"),
])  # fmt: skip
def test_a_bad_variable_is_named_before_the_ingest_stores_anything(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    """FORENSICS_WORKERS was checked when the facts were built, after the events were
    committed: a failure for a load that worked (FORENSICS_LOCK_WAIT=abc was 5 s)."""
    db = tmp_path / "s.duckdb"
    done = forensics("ingest", "adk-sqlite", str(SAMPLE), "--db", str(db), env=env)
    assert done.returncode == 1 and done.stderr.splitlines()[0] == message, done.stderr
    assert not db.exists()


def test_a_prices_file_from_the_environment_is_said_to_be(store: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    done = forensics("cost", "--db", str(store), env={"FORENSICS_PRICES": str(missing)})
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        f"Error: no prices file at {missing} (named by FORENSICS_PRICES)")


def test_an_output_that_cannot_take_the_text_or_is_gone(store: Path, tmp_path: Path) -> None:
    """A stdout whose encoding lacks a character writes its escape (an ingest that had
    committed ended in UnicodeEncodeError, exit 2); a closed stdout (a cron job's) writes
    nowhere, exit 0 (it was AttributeError, exit 2); a full one is the output's error,
    not the store's."""
    events = tmp_path / "s-中文.events.json"  # its file name is its session id
    events.write_text('[{"id": "e1", "author": "user", "timestamp": 1761123600.0, '
                      '"content": {"role": "user", "parts": [{"text": "hé 中文"}]}}]')  # fmt: skip
    db = tmp_path / "latin.duckdb"
    done = forensics("ingest", "adk-json", str(events), "--app", "a", "--user", "u",
                     "--db", str(db), env={"PYTHONIOENCODING": "latin-1"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "read 1 event: loaded 1 new" in done.stdout
    shown = forensics("sessions", "--db", str(db), env={"PYTHONIOENCODING": "latin-1"})
    assert shown.returncode == 0 and "s-中文" in shown.stdout  # (tables: UTF-8 bytes)
    gone = subprocess.run(  # (as a shell's `>&-` starts it: Python's sys.stdout is None)
        [sys.executable, "-c", MAIN, "sessions", "--db", str(store)],
        stderr=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert gone.returncode == 0 and not gone.stderr, gone.stderr
    with open("/dev/full", "w") as full:
        fills = forensics("sessions", "--db", str(store), "-f", "json", stdout=full)
    assert fills.returncode == 1
    assert fills.stderr.splitlines()[0] == "Error: cannot write the output: No space left on device"


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["report", "--help"],
                                  ["sessions", "--help"]])  # fmt: skip
def test_help_and_version_into_a_closed_or_full_output(args: list[str]) -> None:
    """Written while the arguments are parsed (before a command's boundary): a reader
    that left is no error, as for a command's output (it was exit 1), and a full disk is
    one line (it was a traceback)."""
    read, write = os.pipe()
    os.close(read)  # (the reader gone before a byte: EPIPE at the first write)
    try:
        left = forensics(*args, stdout=write)
    finally:
        os.close(write)
    assert left.returncode == 0 and not left.stderr, left.stderr
    with open("/dev/full", "w") as full:
        fills = forensics(*args, stdout=full)
    assert fills.returncode == 1
    assert fills.stderr == "Error: cannot write the output: No space left on device\n"


def test_an_error_whose_reader_left_is_still_an_error(store: Path) -> None:
    """An error or a usage error written to a stderr whose reader left exits non-zero:
    only help and the version read in part are not errors."""
    for args in (["turns", "nosuch", "--db", str(store)], ["sessions", "--bogus"]):
        read, write = os.pipe()
        os.close(read)
        try:
            failed = subprocess.run([sys.executable, "-c", MAIN, *args], stdout=subprocess.DEVNULL,
                                    stderr=write, timeout=300)  # fmt: skip
        finally:
            os.close(write)
        assert failed.returncode != 0, args


def test_a_narrow_terminal_still_gets_help_and_usage_errors() -> None:
    """COLUMNS=0 printed a blank line for --help, and nothing for a usage error."""
    helped = forensics("sessions", "--help", env={"COLUMNS": "0"})
    assert helped.returncode == 0 and "--db" in helped.stdout
    wrong = forensics("turns", "--bogus", env={"COLUMNS": "0"})
    assert wrong.returncode == 2 and "--bogus" in wrong.stderr


def test_low_limits_are_said_as_such(store: Path, tmp_path: Path) -> None:
    """An address space too small for the libraries printed a traceback (the error's own
    handler imported DuckDB, and failed too); too few open files ended in "unexpected"."""
    one = {"POLARS_MAX_THREADS": "1", "FORENSICS_WORKERS": "1"}  # (threads reserve space)
    small = forensics("sessions", "--db", str(store), env=one,
                      limits={resource.RLIMIT_AS: 400 << 20})  # fmt: skip
    assert small.returncode == 1 and "Traceback" not in small.stderr
    assert small.stderr.startswith("Error: out of memory"), small.stderr
    few = forensics("ingest", "claude-code", str(ROOT / "sample_data" / "claude_code"),
                    "--db", str(tmp_path / "cc.duckdb"),
                    limits={resource.RLIMIT_NOFILE: 8})  # fmt: skip
    assert few.returncode == 1 and "Traceback" not in few.stderr
    assert few.stderr.startswith("Error: too many open files"), few.stderr


def test_a_stop_in_the_clean_up_is_raised_as_a_stop_not_as_duckdbs_error() -> None:
    """DuckDB says a Ctrl-C that lands inside a ROLLBACK as a bare RuntimeError: it
    replaced the interrupt, and a committed ingest was said to have committed nothing.
    It is raised as the stop (after the ROLLBACK is tried again), which the command
    line says with what the first stop kept (cli/common.py `_kept_account`)."""

    class Interrupted:
        def execute(self, statement: str) -> object:
            raise RuntimeError("Query interrupted")

    with pytest.raises(KeyboardInterrupt):
        Store(Interrupted(), Path("x.duckdb"), False).quietly("ROLLBACK")  # type: ignore[arg-type]

    class Broken:
        def execute(self, statement: str) -> object:
            raise RuntimeError("something else")

    with pytest.raises(RuntimeError, match="something else"):  # not hidden: no stop
        Store(Broken(), Path("x.duckdb"), False).quietly("ROLLBACK")  # type: ignore[arg-type]
