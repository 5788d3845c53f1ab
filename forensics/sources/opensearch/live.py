"""A live OpenSearch cluster, read without writing: every request bounded, every message
scrubbed, every server-side cursor released.

Read-only by construction: the only requests sent are `GET /` (version), point-in-time
create, delete and list, `_search`, and scroll / clear-scroll. Nothing indexes,
updates, deletes a document or changes a setting.

Paging (`Cluster.scan`): a point in time (`POST /<index>/_search/point_in_time`) and
`search_after` on the caller's sort fields, ascending. Those must be unique together
(e.g. startTime, traceId, spanId): `_shard_doc`, the tie-breaker that makes any sort
total, exists only from OpenSearch 3.3 (OpenSearch PR #18924), so it is appended only
there. A cluster that answers the PIT creation with HTTP 400 "no handler found" (before
2.4, and some managed services) is read with scroll instead, said once. The first page
asks for `track_total_hits: true`; later pages leave it at its default, never `false`
(search_after with `track_total_hits: false` could skip hits before 2.10, OpenSearch
#14824 / #9683). A page whose `_shards.failed` is not zero is an error, not a short page.

opensearch-py's point-in-time methods, by release (we call keyword arguments only,
which 3.0 made mandatory, #907, and pick the method with `hasattr`):

- before 2.4: `create_point_in_time`, `delete_point_in_time(body=, all=)`,
  `list_all_point_in_time`;
- 2.4 added `create_pit`, `delete_pit`, `get_all_pits`, `delete_all_pits` (CHANGELOG
  2.4.0, #502) and kept the old names as deprecated wrappers (DeprecationWarning);
- 3.x has only the new names (3.2.0, installed here, has no `create_point_in_time`).

Retries: a timeout (and HTTP 429/502/503/504) is retried `retries` times with
exponential backoff, except a scroll page: a scroll cursor moves on the server even
when its answer is lost, so a repeated scroll request would skip a page. What the user
should know (TLS verification off, the scroll fallback, a server `Warning` header such
as sorting on `_id` being deprecated, a cursor that could not be released) goes to
`notice`, once each; stderr unless the caller gives its own.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import logging
import netrc as netrc_module
import os
import re
import socket
import ssl
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit

from opensearchpy import OpenSearch, RequestsHttpConnection
from opensearchpy.exceptions import ConnectionError as OSConnectionError
from opensearchpy.exceptions import (
    ConnectionTimeout,
    OpenSearchWarning,
    SerializationError,
    SSLError,
    TransportError,
)

from ...errors import MissingRelationError, SourceError, TransientSourceError, stop_deferred

USER_ENV = "FORENSICS_OPENSEARCH_USER"
PASSWORD_ENV = "FORENSICS_OPENSEARCH_PASSWORD"
API_KEY_ENV = "FORENSICS_OPENSEARCH_API_KEY"

METHODS = ("auto", "pit", "scroll")
RETRIED_STATUS = {429, 502, 503, 504}
REASON_CHARS = 300  # of a server's error text quoted in a message
NOT_OPENSEARCH = ("check that the URL is the cluster's own REST endpoint, not a proxy, a "
                  "login page or another service")
SHARD_DOC_SINCE = (3, 3)

T = TypeVar("T")
Notice = Callable[[str], None]


@dataclass(frozen=True)
class Hit:
    """One document: the index it is in, its `_id` and its `_source`."""

    index: str
    id: str
    source: dict[str, Any]


class _NoPointInTime(Exception):
    """The cluster has no point-in-time API (it answered 'no handler found')."""


def _stderr(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


class Cluster:
    """A connection to one cluster (made by `connect`); a context manager that closes it."""

    def __init__(
        self,
        client: OpenSearch,
        *,
        url: str,
        secrets: Sequence[str],
        timeout: float,
        retries: int,
        backoff: float,
        notice: Notice,
    ) -> None:
        self._client = client
        self.url = url  # without credentials: the only form any message uses
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._notice = notice
        self._has_pit: bool | None = None  # unknown until a PIT is asked for
        self._warned: set[str] = set()
        self.version = ""
        self.distribution = ""
        info = self._call("GET /", client.info, index=None)
        version = info.get("version") or {}
        self.version = str(version.get("number", ""))
        # Elasticsearch (and AWS's 7.10.2 compatibility answer) has no distribution
        self.distribution = str(version.get("distribution", "elasticsearch"))

    def __repr__(self) -> str:
        return f"Cluster({self.url!r}, {self.distribution} {self.version})"

    def __enter__(self) -> Cluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", self.version)[:3])

    @property
    def has_shard_doc(self) -> bool:
        """Whether `_shard_doc` can break sort ties (OpenSearch 3.3 and later)."""
        return self.distribution == "opensearch" and self.version_tuple >= SHARD_DOC_SINCE

    # --- reading ----------------------------------------------------------------

    def scan(
        self,
        index: str,
        *,
        time_field: str | None,
        since: datetime | None,
        until: datetime | None,
        query: str | None,
        sort: Sequence[str],
        page_size: int = 5000,
        method: str = "auto",
        progress: Callable[[int], None] | None = None,
        keep_alive: str = "5m",
        total: Callable[[int], None] | None = None,
    ) -> Iterator[Hit]:
        """Every document of `index` (a name, a pattern or a comma list) in the time range
        [since, until) on `time_field` that `query` (query_string syntax) matches, in
        `sort` order, one page in memory at a time. `progress(n)` after each page with
        the documents so far; `total(n)` once, when the cluster counted them exactly.
        The point in time or scroll is released however the iteration ends."""
        if method not in METHODS:
            raise SourceError(
                f"unknown paging method {method!r}: choose one of {', '.join(METHODS)}"
            )
        if page_size < 1:
            raise SourceError(f"page size must be at least 1, not {page_size}")
        if not sort:
            raise SourceError("paging needs at least one sort field (unique together)")
        search_query = _query(time_field, since, until, query)
        pages = _Pages(
            self, index, search_query, list(sort), page_size, keep_alive, progress, total
        )
        return pages.run(method)

    def open_pits(self) -> list[str]:
        """The ids of the points in time open on the cluster (anyone's)."""
        client: Any = self._client  # typed for one opensearch-py release: names differ
        if hasattr(client, "get_all_pits"):
            listing = client.get_all_pits
        else:  # opensearch-py before 2.4 has only the old name
            listing = client.list_all_point_in_time
        answer = self._call("list PITs", listing, index=None)
        return [str(p.get("pit_id")) for p in answer.get("pits") or []]

    # --- requests ---------------------------------------------------------------

    def _call(
        self, what: str, request: Callable[[], T], *, index: str | None, retry: bool = True,
        page_size: int | None = None,
    ) -> T:
        """`request()`, its timeouts retried with backoff, its errors as SourceErrors."""
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._said(request)
            except SerializationError as e:
                raise SourceError(
                    f"{self.url}: {what}: the answer is not JSON: {self._scrub(_truncate(str(e)))}",
                    hint=NOT_OPENSEARCH,
                ) from e
            except TransportError as e:
                timed_out = _is_timeout(e)
                status = e.status_code if isinstance(e.status_code, int) else None
                transient = timed_out or status in RETRIED_STATUS
                if transient and retry and attempts <= self.retries:
                    time.sleep(self.backoff * 2 ** (attempts - 1))
                    continue
                if timed_out:
                    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
                    raise TransientSourceError(
                        f"{self.url}: {what} timed out ({tries}, {self.timeout:g} s each)",
                        hint="raise --timeout or --retries, or lower --page-size"
                        if retry
                        else "raise --timeout, or lower --page-size (a scroll page cannot "
                        "be asked for twice)",
                    ) from e
                raise self._translate(e, what, index, page_size, attempts) from e

    def _said(self, request: Callable[[], T]) -> T:
        """`request()`, each distinct server `Warning` header (opensearch-py makes them
        OpenSearchWarnings, e.g. sorting on `_id` is deprecated) said once as a notice
        instead of a Python warning on every page; other warnings pass on unchanged."""
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as recorded:
                warnings.simplefilter("always", OpenSearchWarning)
                caught = recorded
                return request()
        finally:  # outside the recording, so what is passed on is not recorded again
            for warning in caught:
                if not issubclass(warning.category, OpenSearchWarning):
                    warnings.warn_explicit(
                        warning.message, warning.category, warning.filename, warning.lineno
                    )
                    continue
                text = self._scrub(_truncate(str(warning.message)))
                if text not in self._warned:
                    self._warned.add(text)
                    self._notice(f"{self.url} warns: {text}")

    def _translate(
        self, e: TransportError, what: str, index: str | None, page_size: int | None,
        attempts: int,
    ) -> SourceError:
        """A driver error as the SourceError that says what happened, scrubbed."""
        if isinstance(e, OSConnectionError):
            return self._unreachable(e)
        status = e.status_code
        kind, reason = _error_text(e)
        text = self._scrub(_truncate(reason))
        where = f"index {index!r}" if index else "the cluster"
        if status == 401:
            return SourceError(
                f"{self.url}: authentication failed",
                hint=f"check the user and password (in the URL, the options, {USER_ENV} and "
                f"{PASSWORD_ENV}, or the netrc file) or the API key ({API_KEY_ENV})",
            )
        if status == 403:
            return SourceError(
                f"{self.url}: not authorised to read {where}: {text}",
                hint="the user needs indices:data/read/search and the "
                "indices:data/read/point_in_time/* permissions on it",
            )
        if status == 404 and kind == "index_not_found_exception":
            missing = _error_field(e, "index") or index or "?"
            return MissingRelationError(
                f"{self.url}: no index {self._scrub(missing)!r}",
                hint="check the name; GET /_cat/indices lists the cluster's indices",
            )
        if status == 404 and "search_context_missing_exception" in _dump(e):
            return TransientSourceError(
                f"{self.url}: the server forgot the {what} cursor (it expired or a node "
                f"restarted): {text}",
                hint="run again; raise --keep-alive if pages take long to read",
            )
        dump = _dump(e)
        too_large = "Result window is too large" in dump or "Batch size is too large" in dump
        if status == 400 and too_large:
            window = re.search(r"less than or equal to: \[(\d+)\]", _dump(e))
            limit = f" ({window.group(1)})" if window else ""
            size = f"page size {page_size}" if page_size else "the page size"
            return SourceError(
                f"{self.url}: {size} is over the max_result_window{limit} of {where}",
                hint="use a smaller --page-size",
            )
        if status == 400 and "No mapping found for [" in _dump(e):
            field = re.search(r"No mapping found for \[([^\]]*)\] in order to sort on", _dump(e))
            name = field.group(1) if field else "?"
            return SourceError(
                f"{self.url}: {where} has no field {self._scrub(name)!r} to sort on",
                hint="sort on fields every index of the pattern maps",
            )
        shown = f"{kind}: {text}" if kind and text else kind or text or "no reason given"
        error_class: type[SourceError] = (
            TransientSourceError if isinstance(status, int) and status >= 500 else SourceError
        )
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return error_class(f"{self.url}: {what} failed{tries}: HTTP {status} {shown}")

    def _unreachable(self, e: OSConnectionError) -> SourceError:
        """Refused, DNS, TLS or another connection failure, said as which."""
        chain = list(_causes(e.info if isinstance(e.info, BaseException) else None))
        detail = self._scrub(_truncate(" ".join(str(c) for c in chain[-1:]) or str(e.error)))
        names = {type(c).__name__ for c in chain}
        text = " ".join(str(c) for c in chain)
        if isinstance(e, SSLError) or any(isinstance(c, ssl.SSLError) for c in chain):
            return TransientSourceError(
                f"cannot reach {self.url}: TLS failed: {detail}",
                hint="give the cluster's CA bundle with --ca-certs (or, knowingly, --insecure)",
            )
        if (
            any(isinstance(c, socket.gaierror) for c in chain)
            or "NameResolutionError" in names
            or re.search(r"[Nn]ame or service not known|nodename nor servname|getaddrinfo", text)
        ):
            return TransientSourceError(
                f"cannot reach {self.url}: the host name does not resolve (DNS): {detail}",
                hint="check the host name in the URL",
            )
        if any(isinstance(c, ConnectionRefusedError) for c in chain) or "refused" in text:
            return TransientSourceError(
                f"cannot reach {self.url}: connection refused",
                hint="check the host and port; the cluster must be running and listening",
            )
        return TransientSourceError(f"cannot reach {self.url}: {detail}")

    def _scrub(self, text: str) -> str:
        return _scrub(text, self._secrets)

    def _pit_methods(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """(create, delete) of this opensearch-py release, called with keywords only."""
        client: Any = self._client  # typed for one opensearch-py release: names differ
        if hasattr(client, "create_pit"):  # 2.4 and later
            return client.create_pit, client.delete_pit
        return client.create_point_in_time, client.delete_point_in_time


def _opening(request: Callable[[], Any], key: str, opened: set[str]) -> Any:
    """The answer of `request`, which opens a cursor (a point in time, a scroll) whose id
    only that answer carries: a stop waits for it (the request has a timeout; a retry's
    pause does not wait), and the id (its `key`) is kept in `opened`, to be released."""
    with stop_deferred():
        answer = request()
        found = answer.get(key) if isinstance(answer, dict) else None
        if isinstance(found, str) and found:
            opened.add(found)
        return answer


class _Pages:
    """One scan: its query, sort and cursors; `run` is the generator the caller iterates."""

    def __init__(
        self,
        cluster: Cluster,
        index: str,
        query: dict[str, Any],
        sort: list[str],
        page_size: int,
        keep_alive: str,
        progress: Callable[[int], None] | None,
        total: Callable[[int], None] | None,
    ) -> None:
        check_index(index)
        self.cluster = cluster
        self.index = index
        self.query = query
        self.sort = sort
        self.page_size = page_size
        self.keep_alive = keep_alive
        self.progress = progress
        self.total = total
        self.read = 0
        self.counted: int | None = None  # the exact total of the first page, when given
        self.opened: set[str] = set()  # the points in time to release at the end

    def run(self, method: str) -> Iterator[Hit]:
        cluster = self.cluster
        if method == "scroll" or (method == "auto" and cluster._has_pit is False):
            yield from self._scroll()
            return
        if _is_pattern(self.index) and self._matches_no_index():
            return  # nothing to read, and no PIT to open on nothing
        try:
            yield from self._pit_run(method)
        finally:  # every PIT opened, however the scan ended (a stop while one opened too)
            if self.opened:
                self._release_pits(self.opened, cluster._pit_methods()[1])
                self.opened.clear()

    def _pit_run(self, method: str) -> Iterator[Hit]:
        cluster = self.cluster
        try:
            pit_id = self._create_pit()
        except _NoPointInTime:
            cluster._has_pit = False
            if method == "pit":
                raise SourceError(
                    f"{cluster.url} has no point-in-time API (OpenSearch 2.4 and later have one)",
                    hint="use the scroll method",
                ) from None
            cluster._notice(
                f"{cluster.url} has no point-in-time API (OpenSearch before 2.4, or a managed "
                "service without it): paging with scroll instead"
            )
            yield from self._scroll()
            return
        cluster._has_pit = True
        yield from self._pit_pages(pit_id)

    # --- point in time ------------------------------------------------------------

    def _matches_no_index(self) -> bool:
        """Whether a pattern resolves to no index: read as zero hits, with no PIT opened
        (what a PIT on no shard does is not documented)."""
        body = {"size": 0, "query": self.query, "track_total_hits": False}
        answer = self.cluster._call(
            "search", lambda: self.cluster._client.search(index=self.index, body=body),
            index=self.index,
        )
        shards = _object(self.cluster, _object(self.cluster, answer, "a search answer")
                         .get("_shards") or {}, "a search answer's _shards")
        return shards.get("total", 1) == 0

    def _create_pit(self) -> str:
        cluster = self.cluster
        create, delete = cluster._pit_methods()

        def request() -> Any:  # its id kept in self.opened, which run() releases
            return _opening(lambda: create(index=self.index,
                                           params={"keep_alive": self.keep_alive}),
                            "pit_id", self.opened)  # fmt: skip

        try:
            # a retried creation may leave the first PIT open: the server drops it after
            # keep_alive
            answer = cluster._call("point-in-time creation", request, index=self.index)
        except SourceError as e:
            cause = e.__cause__
            if (
                isinstance(cause, TransportError)
                and cause.status_code == 400
                and "no handler found" in _dump(cause)
            ):
                raise _NoPointInTime() from e
            raise
        answer = _object(cluster, answer, "the point-in-time answer")
        if not isinstance(answer.get("pit_id"), str) or not answer["pit_id"]:
            raise SourceError(f"{cluster.url}: the point-in-time answer has no pit_id",
                              hint=NOT_OPENSEARCH)
        pit_id = answer["pit_id"]
        shards = _object(cluster, answer.get("_shards") or {},
                         "the point-in-time answer's _shards")
        if shards.get("failed"):
            self._release_pits({pit_id}, delete)
            self.opened.discard(pit_id)
            raise TransientSourceError(
                f"{cluster.url}: the point in time on {self.index!r} misses "
                f"{shards.get('failed')} of {shards.get('total')} shards",
                hint="run again when the cluster is green",
            )
        return pit_id

    def _pit_pages(self, pit_id: str) -> Iterator[Hit]:
        """The pages of the point in time; each id it is given is kept in self.opened,
        which run() releases."""
        cluster = self.cluster
        sort = _sort_spec(self.sort, shard_doc=cluster.has_shard_doc)
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": self.page_size,
                "query": self.query,
                "sort": sort,
                "pit": {"id": pit_id, "keep_alive": self.keep_alive},
            }
            if after is None:
                body["track_total_hits"] = True
            else:
                body["search_after"] = after

            answer = cluster._call(
                "search", functools.partial(cluster._client.search, body=body),
                index=self.index, page_size=self.page_size,
            )
            answer = _object(cluster, answer, "a search answer")
            pit_id = str(answer.get("pit_id") or pit_id)  # the newest id is the one to use
            self.opened.add(pit_id)
            hits = self._page(answer, first=after is None)
            yield from (_hit(h) for h in hits)
            self._progress(len(hits))
            if len(hits) < self.page_size:
                return
            before, after = after, hits[-1].get("sort")
            if not after or not isinstance(after, list):
                raise SourceError(f"{cluster.url}: a page came back without sort values")
            if after == before:
                raise self._not_moving(f"search_after stayed at {after}")

    def _release_pits(self, ids: set[str], delete: Callable[..., Any]) -> None:
        """Delete the PITs; a failure is said, never raised: it must not hide the error
        the scan ended with, and the server drops them after keep_alive anyway."""
        cluster = self.cluster
        try:
            answer = cluster._call(
                "point-in-time deletion", lambda: delete(body={"pit_id": sorted(ids)}),
                index=self.index, retry=False,
            )
            failed = [p for p in (answer or {}).get("pits") or [] if not p.get("successful")]
            if failed:
                cluster._notice(
                    f"{cluster.url}: {len(failed)} point(s) in time were not deleted; the "
                    f"server drops them after {self.keep_alive}"
                )
        except Exception as e:  # noqa: BLE001 - said, not raised (see docstring)
            cluster._notice(
                f"{cluster.url}: the point in time was not deleted "
                f"({cluster._scrub(_truncate(str(e)))}); the server drops it after "
                f"{self.keep_alive}"
            )

    # --- scroll ---------------------------------------------------------------------

    def _scroll(self) -> Iterator[Hit]:
        cluster = self.cluster
        client = cluster._client
        body = {
            "size": self.page_size,
            "query": self.query,
            "sort": _sort_spec(self.sort, shard_doc=False, scroll=True),  # _shard_doc: PIT only
            "track_total_hits": True,
        }
        opened: set[str] = set()

        def request() -> Any:  # its scroll id kept in `opened`, for the clearing below
            return _opening(lambda: client.search(index=self.index, body=body,
                                                  params={"scroll": self.keep_alive}),
                            "_scroll_id", opened)  # fmt: skip

        first = True
        last_keys: list[tuple[Any, Any]] = []
        try:
            answer = cluster._call("search", request, index=self.index,
                                   page_size=self.page_size)  # fmt: skip
            while True:
                scroll_id = _object(cluster, answer, "a search answer").get("_scroll_id")
                if scroll_id:
                    opened.add(str(scroll_id))
                hits = self._page(answer, first=first)
                first = False
                keys = [(h.get("_index"), h.get("_id")) for h in hits]
                if keys and keys == last_keys:
                    raise self._not_moving("the scroll answered the same hits again")
                last_keys = keys
                yield from (_hit(h) for h in hits)
                self._progress(len(hits))
                if len(hits) < self.page_size or not scroll_id:
                    return
                next_body = {"scroll": self.keep_alive, "scroll_id": scroll_id}
                answer = cluster._call(
                    "scroll",
                    functools.partial(client.scroll, body=next_body),
                    index=self.index, retry=False, page_size=self.page_size,
                )
        finally:
            self._clear_scrolls(opened)

    def _clear_scrolls(self, ids: set[str]) -> None:
        if not ids:
            return
        cluster = self.cluster
        try:
            cluster._call(
                "scroll clearing",
                lambda: cluster._client.clear_scroll(body={"scroll_id": sorted(ids)}),
                index=self.index, retry=False,
            )
        except Exception as e:  # noqa: BLE001 - said, not raised (see _release_pits)
            cluster._notice(
                f"{cluster.url}: the scroll was not cleared "
                f"({cluster._scrub(_truncate(str(e)))}); the server drops it after "
                f"{self.keep_alive}"
            )

    # --- pages ----------------------------------------------------------------------

    def _page(self, answer: Any, *, first: bool) -> list[dict[str, Any]]:
        """The hits of one answer, after checking its shape, that no shard failed and
        that the scan has not read more than the cluster counted; on the first page, the
        exact total is reported and kept."""
        cluster = self.cluster
        answer = _object(cluster, answer, "a search answer")
        shards = _object(cluster, answer.get("_shards") or {}, "a search answer's _shards")
        if shards.get("failed"):
            failures = shards.get("failures") or []
            reason = ""
            if failures and isinstance(failures[0], dict):
                cause = failures[0].get("reason")
                reason = cause.get("reason", "") if isinstance(cause, dict) else str(cause or "")
            raise TransientSourceError(
                f"{self.cluster.url}: {shards.get('failed')} of {shards.get('total')} shards "
                f"of {self.index!r} failed"
                + (f": {self.cluster._scrub(_truncate(str(reason)))}" if reason else ""),
                hint="run again when the cluster is green",
            )
        hits = _object(cluster, answer.get("hits") or {}, "a search answer's hits")
        page = hits.get("hits") or []
        if not isinstance(page, list) or not all(isinstance(h, dict) for h in page):
            raise SourceError(f"{cluster.url}: a search answer's hits.hits is not a list of "
                              "objects", hint=NOT_OPENSEARCH)
        if first:
            counted = hits.get("total")
            if isinstance(counted, dict) and counted.get("relation") == "eq":
                counted = counted.get("value")
            if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
                self.counted = counted
                if self.total is not None:
                    self.total(counted)
        if self.counted is not None and self.read + len(page) > self.counted:
            raise self._not_moving(f"more hits than the {self.counted:,} it counted")
        return page

    def _not_moving(self, how: str) -> SourceError:
        """A cluster (or a proxy before it) whose pages do not move on: stopped, rather
        than read for ever."""
        return SourceError(
            f"{self.cluster.url}: the pages of {self.index!r} do not move on ({how}) after "
            f"{self.read:,} hits; stopped rather than read them again",
            hint=f"the sort fields ({', '.join(self.sort)}) must be unique together; a proxy "
            "that caches _search answers repeats pages",
        )

    def _progress(self, n: int) -> None:
        self.read += n
        if self.progress is not None:
            self.progress(self.read)


def _object(cluster: Cluster, value: Any, what: str) -> dict[str, Any]:
    """`value`, which must be a JSON object: else the answer is not OpenSearch's."""
    if not isinstance(value, dict):
        kind = {"list": "a list", "str": "a string"}.get(type(value).__name__,
                                                         type(value).__name__)
        raise SourceError(f"{cluster.url}: {what} is {kind}, not a JSON object",
                          hint=NOT_OPENSEARCH)
    return value


def _hit(raw: dict[str, Any]) -> Hit:
    source = raw.get("_source") or {}
    return Hit(index=str(raw.get("_index")), id=str(raw.get("_id")), source=source)


# --- the request body ---------------------------------------------------------------


def _iso(moment: datetime) -> str:
    """UTC ISO 8601 with microseconds and Z; a naive time is UTC (as selection.py reads)."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _query(
    time_field: str | None, since: datetime | None, until: datetime | None, query: str | None
) -> dict[str, Any]:
    """The time range and the query_string as a bool filter (no scoring), or match_all."""
    filters: list[dict[str, Any]] = []
    if since is not None or until is not None:
        if not time_field:
            raise SourceError("a time range (--since/--until) needs a time field")
        bounds: dict[str, str] = {"format": "strict_date_optional_time_nanos"}
        if since is not None:
            bounds["gte"] = _iso(since)
        if until is not None:
            bounds["lt"] = _iso(until)
        filters.append({"range": {time_field: bounds}})
    if query:
        filters.append({"query_string": {"query": query}})
    return {"bool": {"filter": filters}} if filters else {"match_all": {}}


def _sort_spec(fields: Sequence[str], *, shard_doc: bool, scroll: bool = False) -> list[Any]:
    """The sort of a search: `fields` ascending, then `_shard_doc` where it breaks ties.
    `_id` is only ever a tie-breaker for search_after: with `_shard_doc`, or in a scroll
    (which needs none), it is left out, since sorting on it loads fielddata on `_id`:
    deprecated (OpenSearch warns on it), and refused where
    `indices.id_field_data.enabled` is false."""
    if shard_doc or scroll:
        fields = [f for f in fields if f != "_id"]
    spec: list[Any] = [{field: {"order": "asc"}} for field in fields]
    if shard_doc:
        spec.append({"_shard_doc": "asc"})
    if not spec:
        spec.append({"_doc": "asc"})  # a scroll in index order
    return spec


def check_index(index: str) -> None:
    """An index to search names one: a search of none reads every index (`*` says so)."""
    if not index.strip(", \t"):
        raise SourceError(
            f"--index {index!r} names no index: it would search every index of the cluster",
            hint="name one or a pattern, e.g. --index 'otel-v1-apm-span-*'",
        )


def _is_pattern(index: str) -> bool:
    return any(c in index for c in "*,") or index in ("_all", "")


# --- errors -------------------------------------------------------------------------


def _is_timeout(e: TransportError) -> bool:
    if isinstance(e, ConnectionTimeout):
        return True
    if isinstance(e, OSConnectionError) and not isinstance(e, SSLError):
        cause = e.info if isinstance(e.info, BaseException) else None
        names = ("ConnectTimeoutError", "ConnectTimeout")  # urllib3's, requests'
        return any(
            isinstance(c, TimeoutError) or type(c).__name__ in names for c in _causes(cause)
        )
    return False


def _causes(error: BaseException | None) -> Iterator[BaseException]:
    """`error` and what caused it: __cause__, __context__, urllib3's `.reason`, requests'
    wrapped first argument."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.append(current.__cause__)
        todo.append(current.__context__)
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
        if current.args and isinstance(current.args[0], BaseException):
            todo.append(current.args[0])


def _error_text(e: TransportError) -> tuple[str, str]:
    """(type, reason) from an error body: the root cause's reason where there is one."""
    info = e.info
    if isinstance(info, dict):
        error = info.get("error")
        if isinstance(error, dict):
            roots = error.get("root_cause") or []
            root = roots[0] if roots and isinstance(roots[0], dict) else {}
            reason = root.get("reason") or error.get("reason") or ""
            return str(error.get("type") or ""), str(reason)
        if isinstance(error, str):
            return "", error
        if "Message" in info:  # AWS's own gateway answers
            return "", str(info["Message"])
        if "message" in info:
            return "", str(info["message"])
    text = str(e.error or "")
    if re.match(r"\s*<(!doctype|html|head|body|\?xml)", text, re.IGNORECASE):
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        text = title.group(1) if title else re.sub(r"<[^>]*>", " ", text)
        return "", f"(an HTML page) {text}"
    return "", text


def _error_field(e: TransportError, key: str) -> str | None:
    info = e.info
    if isinstance(info, dict) and isinstance(info.get("error"), dict):
        value = info["error"].get(key)
        return str(value) if value else None
    return None


def _dump(e: TransportError) -> str:
    """The whole error, as text, to look for a message in."""
    info = e.info
    try:
        body = json.dumps(info) if isinstance(info, dict) else str(info or "")
    except (TypeError, ValueError):
        body = str(info)
    return f"{e.error} {body}"


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by ***, the longest first."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(secret) <= 3:  # a short one only where it stands alone, or it garbles all
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
        else:
            text = text.replace(secret, "***")
    return text


def _truncate(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


# --- connecting ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    prefix: str
    user: str | None
    password: str | None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"


def _parse_url(url: str) -> _Target:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise SourceError(
            "the OpenSearch URL cannot be read (it is not shown: it may hold a password)",
            hint="use https://host:9200 (a password's '@', '/' or ':' written %40, %2F, %3A)",
        ) from None
    scheme = parts.scheme.lower()
    shown = _Target(scheme, host or "?", port or 0, "", None, None).url
    if scheme not in ("http", "https") or not host:
        raise SourceError(
            f"not an OpenSearch URL: {shown if host else '(no host)'}",
            hint="use http://host:9200 or https://host:9200",
        )
    if parts.query or parts.fragment:
        raise SourceError(
            f"the OpenSearch URL {shown} has a query or fragment; give options instead",
        )
    prefix = parts.path.rstrip("/")
    return _Target(
        scheme=scheme,
        host=host,
        port=port or (443 if scheme == "https" else 80),
        prefix=prefix,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password is not None else None,
    )


@dataclass
class _Credentials:
    user: str | None = None
    password: str | None = None
    api_key: str | None = None


def _credentials(
    target: _Target,
    user: str | None,
    password: str | None,
    api_key: str | None,
    netrc: Path | None,
    aws: bool,
) -> _Credentials:
    """Who we are, in this order: the URL's user and password, the arguments, the
    environment, the netrc file. An explicit API key and an explicit password (or AWS
    signing and either) conflict; the environment only fills what was not given."""
    explicit_user = target.user or user
    explicit_password = target.password if target.password is not None else password
    if aws:
        if explicit_user or explicit_password or api_key:
            raise SourceError(
                "AWS signing (--aws-region) and a user, password or API key were all given: "
                "use one way to authenticate"
            )
        return _Credentials()
    if api_key:
        if explicit_user or explicit_password:
            raise SourceError(
                "an API key and a user or password were both given: use one way to authenticate"
            )
        return _Credentials(api_key=api_key)
    if not explicit_user and not explicit_password:
        env_user, env_key = os.environ.get(USER_ENV), os.environ.get(API_KEY_ENV)
        if env_user and env_key:
            raise SourceError(
                f"both {USER_ENV} and {API_KEY_ENV} are set: unset one of them"
            )
        if env_key:
            return _Credentials(api_key=env_key)
        explicit_user = env_user
    found = _Credentials(
        user=explicit_user,
        password=explicit_password
        if explicit_password is not None
        else os.environ.get(PASSWORD_ENV) or None,
    )
    if found.password is None and netrc is not None:
        entry = _netrc_entry(netrc, target.host)
        if entry and (found.user is None or found.user == entry[0]):
            found.user, found.password = entry
    if found.password is not None and not found.user:
        raise SourceError(
            "a password was given without a user",
            hint=f"give the user in the URL (https://user@host:9200), the options or {USER_ENV}",
        )
    if found.user and found.password is None:
        raise SourceError(
            f"no password for user {found.user!r}",
            hint=f"set {PASSWORD_ENV}, or give a netrc file with a 'machine {target.host}' line",
        )
    return found


def _netrc_entry(path: Path, host: str) -> tuple[str, str] | None:
    """(login, password) for `host` in a netrc-style file, or None."""
    try:
        parsed = netrc_module.netrc(str(path))
    except FileNotFoundError:
        raise SourceError(f"no netrc file {path}") from None
    except netrc_module.NetrcParseError as e:
        # its message can quote a token of the file, a password among them: not shown
        raise SourceError(f"{path}, line {e.lineno}: not a netrc file") from None
    except OSError as e:
        raise SourceError(f"cannot read the netrc file {path}: {e.strerror}") from None
    entry = parsed.authenticators(host)
    if entry is None:
        return None
    login, _account, password = entry
    return (login, password) if login and password is not None else None


def _aws_auth(region: str, service: str) -> Any:
    """A SigV4 signer for requests: opensearch-py's with botocore's credentials, else
    requests-aws4auth with the AWS_* environment; either is an optional install."""
    try:
        botocore_session = importlib.import_module("botocore.session")
    except ImportError:
        botocore_session = None
    if botocore_session is not None:
        credentials = botocore_session.Session().get_credentials()
        if credentials is None:
            raise SourceError(
                "AWS signing (--aws-region) found no AWS credentials",
                hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run "
                "where an instance or task role applies",
            )
        signers = importlib.import_module("opensearchpy")
        signer = getattr(signers, "RequestsAWSV4SignerAuth", None) or signers.AWSV4SignerAuth
        return signer(credentials, region, service)
    try:
        aws4auth = importlib.import_module("requests_aws4auth")
    except ImportError:
        raise SourceError(
            "AWS signing (--aws-region) needs botocore, which is not installed",
            hint="pip install botocore",
        ) from None
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        raise SourceError(
            "AWS signing with requests-aws4auth needs AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY",
            hint="set them, or pip install botocore to use profiles and roles",
        )
    return aws4auth.AWS4Auth(
        key, secret, region, service, session_token=os.environ.get("AWS_SESSION_TOKEN")
    )


def connect(
    url: str,
    *,
    user: str | None = None,
    password: str | None = None,
    netrc: Path | None = None,
    api_key: str | None = None,
    ca_certs: Path | None = None,
    insecure: bool = False,
    aws_region: str | None = None,
    timeout: float = 30.0,
    retries: int = 3,
    aws_service: str | None = None,
    backoff: float = 0.5,
    notice: Notice | None = None,
) -> Cluster:
    """A read-only connection to the cluster at `url`, its version asked for once.

    Credentials: the URL's (https://user:pass@host:9200), else `user`/`password`, else
    FORENSICS_OPENSEARCH_USER / _PASSWORD, else `netrc` (`machine host login u password
    p`); an API key (`api_key` or FORENSICS_OPENSEARCH_API_KEY) is sent as
    `Authorization: ApiKey <key>`; `aws_region` signs with SigV4 (service `es`, or
    `aoss` for a *.aoss.amazonaws.com host, unless `aws_service` says). TLS is verified
    unless `insecure`, against `ca_certs` when given. `notice` receives what the user
    should know (insecure TLS, the scroll fallback); stderr by default.
    """
    say = notice or _stderr
    target = _parse_url(url)
    creds = _credentials(target, user, password, api_key, netrc, aws=aws_region is not None)
    secrets = [s for s in (creds.password, creds.api_key) if s]
    secrets += [quote(s, safe="") for s in secrets]
    if creds.user and creds.password:
        secrets.append(base64.b64encode(f"{creds.user}:{creds.password}".encode()).decode())
    if target.password:
        secrets.append(target.password)
    if ca_certs is not None and not Path(ca_certs).is_file():
        raise SourceError(f"no CA bundle file {ca_certs}")
    if timeout <= 0:
        raise SourceError(f"the timeout must be positive, not {timeout:g}")
    if retries < 0:
        raise SourceError(f"retries cannot be negative, not {retries}")
    _quiet_driver_log()

    options: dict[str, Any] = {
        "hosts": [{"host": target.host, "port": target.port, "url_prefix": target.prefix}],
        "use_ssl": target.scheme == "https",
        "verify_certs": not insecure,
        "ssl_show_warn": False,  # the one warning is ours, below
        "timeout": timeout,
        "max_retries": 0,  # retried here, with backoff, and never a scroll page
        "retry_on_timeout": False,
    }
    if ca_certs is not None and not insecure:
        options["ca_certs"] = str(ca_certs)
    if aws_region is not None:
        service = aws_service or ("aoss" if target.host.endswith(".aoss.amazonaws.com") else "es")
        options["http_auth"] = _aws_auth(aws_region, service)
        options["connection_class"] = RequestsHttpConnection  # the signers sign requests'
    elif creds.api_key:
        options["headers"] = {"Authorization": f"ApiKey {creds.api_key}"}
    elif creds.user and creds.password is not None:
        options["http_auth"] = (creds.user, creds.password)
    if insecure and target.scheme == "https":
        say(f"warning: TLS certificate verification is off for {target.url} (--insecure)")

    try:
        client = OpenSearch(**options)
    except Exception as e:  # noqa: BLE001 - any set-up failure, said scrubbed
        raise SourceError(
            f"cannot set up the client for {target.url}: {_scrub(_truncate(str(e)), secrets)}"
        ) from e
    try:
        return Cluster(
            client, url=target.url, secrets=secrets, timeout=timeout, retries=retries,
            backoff=backoff, notice=say,
        )
    except BaseException:
        client.close()
        raise


def _quiet_driver_log() -> None:
    """opensearch-py logs every failed request at WARNING; with no handler configured,
    Python's last-resort handler would print those on stderr (each 404, each 400 of the
    scroll fallback). A NullHandler stops that and leaves configured logging alone."""
    logger = logging.getLogger("opensearch")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
