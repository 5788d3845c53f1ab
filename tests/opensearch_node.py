"""A real single-node OpenSearch for tests, started in its own JVM.

`tests/opensearch_java/` is a small Maven project (`forensics.StartNode`) that starts an
OpenSearch `Node` in-JVM (OpenSearch 2.19.6 by default; the `os3` profile builds 3.x)
with the Netty4 HTTP transport and the common analysis plugin, no security plugin. It
is built by

    cd tests/opensearch_java && mvn -q -B -T 1 package

which writes `target/opensearch-node.jar` and `target/classpath.txt` (the jars it needs,
in the local Maven repository). `OpenSearchNode` starts it in a fresh temp folder, on a
free HTTP port on 127.0.0.1, waits for its READY line and for a green cluster health,
and stops it and removes the folder again on `close()` (also registered with atexit).

`node_or_skip()` (and the `opensearch_node` fixture) skip when the jar is not built or
no Java is found, unless `FORENSICS_REQUIRE_OPENSEARCH=1` (CI), where they fail with the
reason. A node that was found but did not start is always a failure, with the tail of
its logs.

Environment:
- `FORENSICS_REQUIRE_OPENSEARCH=1`: fail instead of skipping;
- `FORENSICS_OPENSEARCH_JAVA_HOME`: the JDK to run the node with (else `JAVA_HOME`, else
  `java` on PATH); the 3.x build needs Java 21 or later;
- `FORENSICS_OPENSEARCH_NODE_TARGET`: the Maven output folder to take the jar and the
  classpath file from (default `tests/opensearch_java/target`).

The HTTP helpers (`request`, `bulk`, `put_index_template`, ...) use plain urllib: the
test side needs no client library, and a test can check what the project's own client
sends apart from what set the data up.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest

ENV_REQUIRE = "FORENSICS_REQUIRE_OPENSEARCH"
ENV_JAVA_HOME = "FORENSICS_OPENSEARCH_JAVA_HOME"
ENV_TARGET = "FORENSICS_OPENSEARCH_NODE_TARGET"

PROJECT_DIR = Path(__file__).resolve().parent / "opensearch_java"
DEFAULT_TARGET = PROJECT_DIR / "target"
JAR_NAME = "opensearch-node.jar"
CLASSPATH_NAME = "classpath.txt"
MAIN_CLASS = "forensics.StartNode"
BUILD_COMMAND = f"cd {PROJECT_DIR} && mvn -q -B -T 1 package"

# What a distribution's launcher passes besides the heap (OpenSearch's SystemJvmOptions
# and jvm.options), less what only matters for a long-running production node.
JVM_OPTIONS = (
    "-Xss1m",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
    "-Djna.nosys=true",
    "-XX:-OmitStackTraceInFastThrow",
    "-Dio.netty.noUnsafe=true",
    "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0",
    "-Dio.netty.allocator.numDirectArenas=0",
    "-Dlog4j.shutdownHookEnabled=false",
    "-Dlog4j2.disable.jmx=true",
    "-XX:+UseG1GC",
    # C1 only: on 2 cores it halves the CPU a start costs (measured: READY in 6 s and 6 s
    # of CPU, against 11-14 s of each with C2), and test data is too small for C2 to pay
    "-XX:TieredStopAtLevel=1",
)
# Lucene 10 (OpenSearch 3.x) uses the Vector API where the module is readable, and warns
# in the log where it is not; a 3.x distribution passes this on Java 20 and later.
JVM_OPTIONS_3X = ("--add-modules=jdk.incubator.vector",)


class OpenSearchNotAvailable(RuntimeError):
    """No built node or no Java to run it (the caller may skip)."""


class OpenSearchHTTPError(RuntimeError):
    """An HTTP error answer from the node: `.status` and `.body` (parsed JSON or text)."""

    def __init__(self, method: str, path: str, status: int, body: Any):
        self.status = status
        self.body = body
        text = body if isinstance(body, str) else json.dumps(body)
        super().__init__(f"{method} {path}: HTTP {status}: {text[:2000]}")


def opensearch_required() -> bool:
    return os.environ.get(ENV_REQUIRE, "").strip().lower() in ("1", "true", "yes")


# ---------------------------------------------------------------------------
# Finding the build and Java
# ---------------------------------------------------------------------------


def target_dir() -> Path:
    configured = os.environ.get(ENV_TARGET, "").strip()
    return Path(configured) if configured else DEFAULT_TARGET


def find_java() -> str | None:
    """`$FORENSICS_OPENSEARCH_JAVA_HOME/bin/java`, `$JAVA_HOME/bin/java`, or `java` on PATH."""
    for env in (ENV_JAVA_HOME, "JAVA_HOME"):
        home = os.environ.get(env, "").strip()
        if home:
            java = Path(home) / "bin" / "java"
            if os.access(java, os.X_OK):
                return str(java)
    return shutil.which("java")


def find_build(target: Path | None = None) -> tuple[Path, list[str]]:
    """The jar and the classpath entries; OpenSearchNotAvailable when not built."""
    target = target or target_dir()
    jar = target / JAR_NAME
    classpath_file = target / CLASSPATH_NAME
    if not jar.is_file() or not classpath_file.is_file():
        raise OpenSearchNotAvailable(
            f"the test OpenSearch node is not built (no {jar} or {classpath_file}): "
            f"run `{BUILD_COMMAND}`"
        )
    entries = [e for e in classpath_file.read_text().strip().split(os.pathsep) if e]
    missing = [e for e in entries if not Path(e).exists()]
    if not entries or missing:
        raise OpenSearchNotAvailable(
            f"{classpath_file} names jars that are not there ({', '.join(missing[:3]) or 'none'}"
            f"{' ...' if len(missing) > 3 else ''}): the Maven repository it was built "
            f"against is gone; run `{BUILD_COMMAND}` again"
        )
    return jar, entries


def built_version(entries: Iterable[str]) -> str | None:
    """The OpenSearch version on the classpath (from the server jar's file name)."""
    for entry in entries:
        m = re.fullmatch(r"opensearch-(\d+\.\d+\.\d+)\.jar", Path(entry).name)
        if m:
            return m.group(1)
    return None


def _major(version: str | None) -> int:
    return int(version.split(".")[0]) if version else 0


# ---------------------------------------------------------------------------
# The node
# ---------------------------------------------------------------------------


class OpenSearchNode:
    """A started single-node cluster: `.url`, `.version`, `.start_seconds`; `close()`.

    A context manager; `start()` is called by `__enter__` (or call it yourself).
    """

    def __init__(
        self,
        *,
        heap_min: str = "512m",
        heap_max: str = "1g",
        start_timeout: float = 120.0,
        jvm_options: Iterable[str] = (),
        target: Path | None = None,
        java: str | None = None,
    ):
        self.java = java  # the java binary (default: find_java())
        self.heap_min = heap_min
        self.heap_max = heap_max
        self.start_timeout = start_timeout
        self.extra_jvm_options = list(jvm_options)
        self.target = target
        self.url = ""
        self.version = ""
        self.built_version: str | None = None  # the server jar's, known before it starts
        self.start_seconds = 0.0  # from launching java to a green health answer
        self.ready_seconds = 0.0  # from launching java to the READY line
        self.tmpdir: Path | None = None
        self.home: Path | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"OpenSearchNode({self.url or 'not started'!r}, version={self.version!r})"

    def __enter__(self) -> OpenSearchNode:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- starting -------------------------------------------------------------

    def command(self, java: str, jar: Path, entries: list[str], home: Path) -> list[str]:
        assert self.tmpdir is not None
        return [
            java,
            f"-Xms{self.heap_min}",
            f"-Xmx{self.heap_max}",
            *JVM_OPTIONS,
            *(JVM_OPTIONS_3X if _major(built_version(entries)) >= 3 else ()),
            f"-Djava.io.tmpdir={self.tmpdir / 'tmp'}",
            f"-XX:ErrorFile={self.tmpdir / 'hs_err_pid%p.log'}",
            *self.extra_jvm_options,
            "-cp",
            os.pathsep.join([str(jar), *entries]),
            MAIN_CLASS,
            str(home),
            "0",
        ]

    def start(self) -> OpenSearchNode:
        java = self.java or find_java()
        if java is None:
            raise OpenSearchNotAvailable(
                f"no Java to run the test OpenSearch node: set {ENV_JAVA_HOME} or JAVA_HOME, "
                "or put java on PATH"
            )
        jar, entries = find_build(self.target)
        self.built_version = built_version(entries)
        self.tmpdir = Path(tempfile.mkdtemp(prefix="forensics-opensearch-"))
        (self.tmpdir / "tmp").mkdir()
        self.home = self.tmpdir / "home"
        atexit.register(self.close)
        cmd = self.command(java, jar, entries, self.home)
        started = time.monotonic()
        try:
            self._stderr = open(self.tmpdir / "stderr.log", "w")  # noqa: SIM115 - closed in close()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,  # the node stops when it is closed
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                cwd=self.tmpdir,
                text=True,
                start_new_session=True,  # a Ctrl-C in the terminal reaches pytest, not it
            )
            self.url = self._wait_ready(self._proc, started)
            self.ready_seconds = time.monotonic() - started
            deadline = started + self.start_timeout
            self._wait_health(deadline)
            self.version = str(self.request("GET", "/")["version"]["number"])
            self.start_seconds = time.monotonic() - started
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self, proc: subprocess.Popen[str], started: float) -> str:
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:  # after READY this drains whatever else comes
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, name="opensearch-node-stdout", daemon=True).start()
        deadline = started + self.start_timeout
        seen: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(
                    f"the test OpenSearch node printed no READY line in {self.start_timeout:g} s"
                    + self.log_tail()
                )
            try:
                line = lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if line is None:
                code = proc.wait(timeout=30)
                raise RuntimeError(
                    f"the test OpenSearch node exited ({code}) before it was ready"
                    + (f"; stdout: {''.join(seen)[-2000:]}" if seen else "")
                    + self.log_tail()
                )
            if line.startswith("READY "):
                return line.split(None, 1)[1].strip()
            seen.append(line)

    def _wait_health(self, deadline: float) -> None:
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                health = self.request(
                    "GET", "/_cluster/health?wait_for_status=green&timeout=30s", timeout=40
                )
                if health.get("status") == "green" and not health.get("timed_out"):
                    return
                last = RuntimeError(f"cluster health: {health}")
            except (OSError, OpenSearchHTTPError) as e:
                last = e
            time.sleep(0.2)
        raise RuntimeError(
            f"the test OpenSearch node at {self.url} was not green in time ({last})"
            + self.log_tail()
        )

    # --- stopping -------------------------------------------------------------

    def close(self) -> None:
        """Close the node's stdin (it closes the node and exits), then TERM, then KILL."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        try:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    assert proc.stdin is not None
                    proc.stdin.close()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.terminate()  # SIGTERM: the JVM's shutdown hook closes the node
                    try:
                        proc.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(timeout=15)
            if proc is not None and proc.stdout is not None:
                with contextlib.suppress(OSError):
                    proc.stdout.close()
        finally:
            if self._stderr is not None:
                self._stderr.close()
            if self.tmpdir is not None:
                shutil.rmtree(self.tmpdir, ignore_errors=True)
            atexit.unregister(self.close)

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def log_tail(self, chars: int = 4000) -> str:
        """The ends of the node's stderr and its OpenSearch log, for a failure message."""
        if self.tmpdir is None:
            return ""
        parts = []
        logs = self.tmpdir / "home" / "logs"
        for path in (self.tmpdir / "stderr.log", logs / "forensics-test.log"):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if text.strip():
                parts.append(f"\n--- {path.name} (tail) ---\n{text[-chars:]}")
        return "".join(parts)

    # --- HTTP -----------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        ndjson: bool = False,
        timeout: float = 60.0,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """`method path` with a JSON body (or NDJSON text when `ndjson`); the parsed answer.

        An HTTP error status raises OpenSearchHTTPError (with the parsed error body).
        """
        data: bytes | None = None
        sent = {"Accept": "application/json", **(headers or {})}
        if body is not None:
            if ndjson:
                data = body.encode() if isinstance(body, str) else body
                sent.setdefault("Content-Type", "application/x-ndjson")
            else:
                data = json.dumps(body).encode()
                sent.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as answer:  # noqa: S310 - loopback
                raw = answer.read().decode()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = text
            raise OpenSearchHTTPError(method, path, e.code, parsed) from None
        return json.loads(raw) if raw.strip() else None

    def create_index(
        self, name: str, *, mappings: Mapping[str, Any] | None = None, replicas: int = 0,
        shards: int = 1, settings: Mapping[str, Any] | None = None,
    ) -> Any:
        body: dict[str, Any] = {
            "settings": {"number_of_shards": shards, "number_of_replicas": replicas,
                         **(settings or {})},
        }
        if mappings is not None:
            body["mappings"] = dict(mappings)
        return self.request("PUT", f"/{name}", body)

    def put_index_template(
        self,
        name: str,
        template: Mapping[str, Any],
        index_patterns: Iterable[str],
        *,
        replicas: int = 0,
        shards: int = 1,
        legacy: bool = False,
        priority: int | None = None,
    ) -> Any:
        """Put `template` for `index_patterns`, whatever shape it comes in.

        Accepted: a composable template (`{"template": {"mappings", "settings"}, ...}`, as
        Data Prepper's own span template file is, without its `index_patterns`), a legacy
        one (`{"mappings", "settings", "version"}`), or bare mappings. The patterns, and
        `number_of_replicas`/`number_of_shards` (so a single node goes green), are added.
        `legacy` puts it with `_template` instead of `_index_template`.
        """
        spec: dict[str, Any] = json.loads(json.dumps(template))  # a deep copy
        patterns = list(index_patterns)
        top: dict[str, Any]
        inner: dict[str, Any]
        if isinstance(spec.get("template"), dict):
            inner, top = spec.pop("template"), spec
        elif any(k in spec for k in ("mappings", "settings", "aliases")):
            inner = {k: spec.pop(k) for k in ("mappings", "settings", "aliases") if k in spec}
            top = spec
        else:  # bare mappings
            inner, top = {"mappings": spec}, {}
        top.pop("index_patterns", None)
        top.pop("order", None)
        settings = dict(inner.get("settings") or {})
        index_settings = dict(settings.pop("index", None) or {})
        settings.update({f"index.{k}": v for k, v in index_settings.items()})
        settings.pop("number_of_replicas", None)  # said below, with the index. prefix
        settings.pop("number_of_shards", None)
        settings["index.number_of_replicas"] = replicas
        settings["index.number_of_shards"] = shards
        inner["settings"] = settings
        if legacy:
            body = {"index_patterns": patterns, **inner}
            if "version" in top:
                body["version"] = top["version"]
            if priority is not None:
                body["order"] = priority
            return self.request("PUT", f"/_template/{name}", body)
        body = {"index_patterns": patterns, "template": inner, **top}
        if priority is not None:
            body["priority"] = priority
        return self.request("PUT", f"/_index_template/{name}", body)

    def bulk(
        self,
        index: str,
        documents: Iterable[Mapping[str, Any]],
        *,
        id_field: str | None = None,
        refresh: bool = True,
        chunk: int = 5000,
    ) -> int:
        """Index `documents` into `index` with `_bulk` (`refresh=true` by default, so a
        search right after sees them); `_id` from `id_field` when given. Raises on any
        item error; returns the number indexed."""
        n = 0
        lines: list[str] = []

        def send() -> None:
            if not lines:
                return
            params = "?refresh=true" if refresh else ""
            answer = self.request("POST", f"/_bulk{params}", "".join(lines), ndjson=True)
            if answer.get("errors"):
                failed = [
                    item for item in answer.get("items", [])
                    if next(iter(item.values())).get("error")
                ]
                raise RuntimeError(
                    f"_bulk into {index!r}: {len(failed)} of {len(answer.get('items', []))} "
                    f"items failed, first: {json.dumps(failed[0])[:2000]}"
                )
            lines.clear()

        for doc in documents:
            action: dict[str, Any] = {"_index": index}
            if id_field is not None:
                action["_id"] = str(doc[id_field])
            lines.append(json.dumps({"index": action}) + "\n")
            lines.append(json.dumps(doc) + "\n")
            n += 1
            if n % chunk == 0:
                send()
        send()
        return n

    def bulk_file(self, index: str, path: Path, **options: Any) -> int:
        """`bulk` of an NDJSON file of documents (one `_source` a line)."""
        with open(path, encoding="utf-8") as f:
            return self.bulk(index, (json.loads(line) for line in f if line.strip()), **options)

    def open_pits(self) -> list[dict[str, Any]]:
        """`GET /_search/point_in_time/_all`: the points in time open on the node."""
        return list((self.request("GET", "/_search/point_in_time/_all") or {}).get("pits") or [])

    def open_scrolls(self) -> int:
        """The scroll contexts open on the node (its search stats' `scroll_current`)."""
        stats = self.request("GET", "/_nodes/stats/indices/search")
        return sum(
            int(node["indices"]["search"].get("scroll_current", 0))
            for node in stats["nodes"].values()
        )


# ---------------------------------------------------------------------------
# pytest
# ---------------------------------------------------------------------------


def node_or_skip(**options: Any) -> OpenSearchNode:
    """A started node; skips the test when none can be run here (no build, no Java), or
    fails under FORENSICS_REQUIRE_OPENSEARCH=1. A node that would not start fails."""
    node = OpenSearchNode(**options)
    try:
        return node.start()
    except OpenSearchNotAvailable as e:
        if opensearch_required():
            pytest.fail(
                f"{ENV_REQUIRE}=1 but the test OpenSearch node cannot run: {e}",
                pytrace=False,
            )
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def opensearch_node() -> Iterator[OpenSearchNode]:
    """One node for the test session (import this fixture into conftest.py to share it)."""
    node = node_or_skip()
    try:
        yield node
    finally:
        node.close()


# The 3.x line (`mvn -Pos3 package` into target/os3) needs Java 21+: Temurin 25 beside
# the default Java 17 on these machines, or FORENSICS_OPENSEARCH3_JAVA_HOME.
ENV_REQUIRE_3 = "FORENSICS_REQUIRE_OPENSEARCH3"
ENV_JAVA_HOME_3 = "FORENSICS_OPENSEARCH3_JAVA_HOME"
JAVA_HOME_3 = Path("/usr/lib/jvm/temurin-25-jdk-amd64")


@pytest.fixture(scope="session")
def opensearch3_node() -> Iterator[OpenSearchNode]:
    """A node of the 3.x line, when its build and a Java 21+ are here."""
    home = Path(os.environ.get(ENV_JAVA_HOME_3) or JAVA_HOME_3)
    java = home / "bin" / "java"
    target = target_dir() / "os3"
    required = os.environ.get(ENV_REQUIRE_3, "").strip().lower() in ("1", "true", "yes")
    missing = None
    if not java.is_file():
        missing = f"no Java 21+ at {home} (set {ENV_JAVA_HOME_3})"
    elif not (target / "classpath.txt").is_file():
        missing = f"the 3.x node is not built ({target}): mvn -Pos3 package"
    if missing:
        if required:
            pytest.fail(f"{ENV_REQUIRE_3}=1 but {missing}", pytrace=False)
        pytest.skip(missing)
    node = OpenSearchNode(target=target, java=str(java))
    try:
        node.start()
    except OpenSearchNotAvailable as e:
        if required:
            pytest.fail(f"{ENV_REQUIRE_3}=1 but the 3.x node cannot run: {e}", pytrace=False)
        pytest.skip(str(e))
    try:
        yield node
    finally:
        node.close()
