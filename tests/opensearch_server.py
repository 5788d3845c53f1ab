"""A loopback imitation of the OpenSearch REST subset the live source uses, for tests.

No OpenSearch runs here: `LoopbackOpenSearch` is a stdlib `ThreadingHTTPServer` on
127.0.0.1 (port 0, in a thread) that answers `GET /`, the point-in-time API, `_search`
(with a PIT, or with `?scroll=`) and scroll / clear-scroll, over documents given in
memory, one shard per index. Every JSON answer is `Content-Type: application/json`:
opensearch-py parses an error body only then (`connection/base.py`, `_raise_error`).

Where each answer's shape was copied from:

- `GET /`: a 2.17.1 node's answer quoted in opensearch-project/OpenSearch-Dashboards
  issue #8856 (name, cluster_name, cluster_uuid, version.distribution "opensearch",
  version.number, build fields, tagline).
- PIT create (`pit_id`, `_shards`, `creation_time`), list (`pits`: pit_id, creation_time,
  keep_alive in ms) and delete (`pits`: successful, pit_id; body `{"pit_id": [...]}`):
  documentation-website `_search-plugins/searching-data/point-in-time-api.md`; a search
  with `pit` answers with `pit_id` (`point-in-time.md`, and Elasticsearch's PIT page,
  whose design OpenSearch copied).
- No PIT API (`pit=False`): HTTP 400 `{"error": "no handler found for uri [...] and
  method [POST]"}`, as quoted for OpenSearch in jillesvangurp/kt-search #71 and
  acm19/aws-request-signing-apache-interceptor #91 (OpenSearch's RestController answer
  for an unknown route; opensearch-js #403 shows it for the PIT routes on 2.3).
- Missing index: 404 `index_not_found_exception` with reason "no such index [x]",
  index, resource.id, resource.type "index_or_alias", index_uuid "_na_", the same
  object as root_cause[0] (Elasticsearch 6/7 output quoted in public notes; the same
  reason text is asserted in opensearch-project/alerting's tests).
- Result window: 400 `search_phase_execution_exception` ("all shards failed", phase
  "query", grouped, failed_shards) whose root cause and caused_by are an
  `illegal_argument_exception` "Result window is too large, from + size must be less
  than or equal to: [N] but was [M]. See the scroll api ..." and, for a scroll, "Batch
  size is too large, size must be less than or equal to: [N] but was [M]. Scroll batch
  sizes cost ..." (texts: OpenSearch's DefaultSearchContext and its test; body shape:
  Sinar/popit_ng #219, Elasticsearch #116541). Status 400: a phase failure takes its
  shards' cause's status; the 500 in popit_ng #219 and django-haystack #1507 is
  Elasticsearch 2.x's (not checked against a node).
- Unknown PIT or scroll id: 404 `search_phase_execution_exception` whose root cause is
  `search_context_missing_exception` "No search context found for id [...]"
  (ropensci-archive/elastic #178, Elasticsearch PR #6063: 404 when all shards miss it).
  Clear-scroll answers `{"succeeded": true, "num_freed": n}` (Elasticsearch's clear
  scroll page; its 404 when nothing was freed is from memory, not checked).
- 401: the security plugin's HTTPBasicAuthenticator: body "Unauthorized" (text/plain),
  header `WWW-Authenticate: Basic realm="OpenSearch Security"` (opensearch-project/
  security, whose integration test asserts exactly that body and header).
- 403: `security_exception` "no permissions for [indices:data/read/search] and User
  [name=..., backend_roles=[], requestedTenant=null]" (the user's form as the security
  plugin logs it, opensearch-project/security #5544; the sentence around it is from
  memory, not checked; body shape as any OpenSearchException).
- `_shard_doc` before 3.3 and a sort field no index maps: 400 "No mapping found for
  [field] in order to sort on" (HKUDS/LightRAG #2975 for `_shard_doc` on < 3.3.0;
  OpenSearch PR #18924 added it in 3.3).
- Sort values: `date` as epoch milliseconds, `date_nanos` as epoch nanoseconds, keyword
  as the string, numbers as numbers (Elasticsearch #113802 shows a date's sort value as
  epoch ms); missing values last in either order (the `missing: _last` default);
  multi-valued fields sort on their minimum ascending, maximum descending.
- A shard that failed (`shard_failure_from_request`): 200 with `_shards.failed` and
  `_shards.failures` [{shard, index, node, reason: {type, reason}}] (the shape in
  ropensci-archive/elastic #178 and OpenBankProject/OBP-API #585).
- Sorting on `_id`: allowed while `indices.id_field_data.enabled` is true (OpenSearch's
  default, OpenSearch #12185), with the deprecation text of IdFieldMapper (quoted in
  OpenSearch #20611) in a `Warning: 299 OpenSearch-<version>-<hash> "<text>"` header
  (the format opensearch-py's `_raise_warnings` parses); off, a 400 "Fielddata access on
  the _id field is disallowed, ..." (opensearch-project/alerting #2037).
- `hits.total`: {value, relation}, counted up to `track_total_hits` (10,000 by default,
  exact when true, absent when false), and it counts the query's matches, not what
  search_after leaves (OpenSearch PR #9683's description).

Not copied, our own guesses: PIT ids and scroll ids are opaque random strings; the
query subset (match_all, bool, range, term, terms, match, exists, a query_string of
`field:value` clauses joined by AND/OR) is evaluated in Python; a search naming an
index and a PIT both is refused with a 400 whose wording is ours; an unknown route is
a 400 "no handler found" whatever the method, but `_search` asked with another method
answers 405 as a real node does.

Aligned with real nodes (2.19.6, 3.3.2 and 3.9.0, tests/test_opensearch_real.py): a PIT
on a pattern that matches no index is a 400 "invalid id: [null]"; deleting a PIT that
is gone is `successful: true` (`refuse_pit_delete` makes every delete unsuccessful, a
fault a real node cannot be made to produce); `search_context_missing` names the node's
internal context number; a search over zero shards has `max_score` 0.0. `delay` applies
to searches and scroll pages, not to the PIT or clear-scroll calls, from request number
`delay_from_request` (counting every request, from 0) on.
"""

from __future__ import annotations

import base64
import bisect
import fnmatch
import functools
import itertools
import json
import re
import secrets
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NoReturn
from urllib.parse import parse_qs, unquote, urlsplit

NODE = "imitation-node-1"
ID_FIELD_DATA_DEPRECATED = (
    "Loading the fielddata on the _id field is deprecated and will be removed in future "
    "versions. If you require sorting or aggregating on this field you should also include "
    "the id in the body of your documents, and map this field as a keyword field that has "
    "[doc_values] enabled"
)
ID_FIELD_DATA_OFF = (
    "Fielddata access on the _id field is disallowed, you can re-enable it by updating the "
    "dynamic cluster setting: indices.id_field_data.enabled"
)
FIELD_TYPES = ("date_nanos", "date", "keyword", "long", "double", "text", "boolean")


class HttpError(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def _error(status: int, kind: str, reason: str, **extra: Any) -> HttpError:
    cause = {"type": kind, "reason": reason, **extra}
    return HttpError(status, {"error": {"root_cause": [cause], **cause}, "status": status})


def _shard_failure(status: int, index: str, kind: str, reason: str) -> HttpError:
    """What a search that failed on every shard answers: the phase exception around it."""
    cause = {"type": kind, "reason": reason}
    body = {
        "error": {
            "root_cause": [cause],
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
            "phase": "query",
            "grouped": True,
            "failed_shards": [{"shard": 0, "index": index, "node": NODE, "reason": cause}],
            "caused_by": {**cause, "caused_by": cause},
        },
        "status": status,
    }
    return HttpError(status, body)


def _no_handler(method: str, uri: str) -> HttpError:
    return HttpError(400, {"error": f"no handler found for uri [{uri}] and method [{method}]"})


def _wrong_method(method: str, uri: str, allowed: str) -> HttpError:
    # as 2.19.6 and 3.3.2 answer a known path asked with another method
    return HttpError(405, {"error": f"Incorrect HTTP method for uri [{uri}] and method "
                                    f"[{method}], allowed: [{allowed}]", "status": 405})


# --- field values ---------------------------------------------------------------------

_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"(Z|[+-]\d{2}:?\d{2})?$"
)


def epoch_nanos(value: Any) -> int | None:
    """A date as OpenSearch reads one: ISO 8601 with up to 9 fraction digits (UTC unless
    it says otherwise), or epoch milliseconds as a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value * 1_000_000)
    if not isinstance(value, str):
        return None
    match = _ISO.match(value.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                      int(second or 0), tzinfo=UTC)
    offset = 0
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    seconds = int(moment.timestamp()) - offset
    nanos = int((fraction or "0").ljust(9, "0"))
    return seconds * 1_000_000_000 + nanos


def lookup(source: Any, path: str) -> list[Any]:
    """Every value at `path` in a `_source`: the path may be a literal dotted key
    (`"span.attributes.x@y"`), nested objects, or any mix; arrays are flattened."""
    found: list[Any] = []
    if isinstance(source, list):
        for item in source:
            found += lookup(item, path)
        return found
    if not isinstance(source, dict):
        return found
    if path in source:
        value = source[path]
        found += value if isinstance(value, list) else [value]
    parts = path.split(".")
    for cut in range(1, len(parts)):
        head, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
        if head in source and isinstance(source[head], (dict, list)):
            found += lookup(source[head], rest)
    return [v for v in found if v is not None]


class Index:
    """One index: its documents (id, source) and the type of each field."""

    def __init__(self, name: str, docs: list[dict[str, Any]], mapping: dict[str, str]):
        self.name = name
        self.docs: list[tuple[str, dict[str, Any]]] = []
        for position, doc in enumerate(docs):
            if set(doc) == {"_id", "_source"}:
                self.docs.append((str(doc["_id"]), doc["_source"]))
            else:
                self.docs.append((str(position), doc))
        for field, kind in mapping.items():
            if kind not in FIELD_TYPES:
                raise ValueError(f"{name}: field {field} has type {kind}: not one of {FIELD_TYPES}")
        self.mapping = mapping

    def field_type(self, field: str, values: list[Any]) -> str | None:
        if field in self.mapping:
            return self.mapping[field]
        for value in values:
            if isinstance(value, bool):
                return "boolean"
            if isinstance(value, int):
                return "long"
            if isinstance(value, float):
                return "double"
            if isinstance(value, str):
                return "keyword"
        return None

    def maps(self, field: str) -> bool:
        return field in self.mapping or any(lookup(src, field) for _, src in self.docs)


class Doc:
    """A document as a search sees it: where it is, and its ordinal for `_shard_doc`."""

    def __init__(self, index: Index, doc_id: str, source: dict[str, Any], ordinal: int):
        self.index = index
        self.id = doc_id
        self.source = source
        self.ordinal = ordinal

    def typed(self, field: str) -> tuple[str | None, list[Any]]:
        """(type, values as OpenSearch compares them): dates as epoch nanoseconds."""
        values = lookup(self.source, field)
        kind = self.index.field_type(field, values)
        if kind in ("date", "date_nanos"):
            return kind, [n for n in (epoch_nanos(v) for v in values) if n is not None]
        if kind in ("long", "double"):
            return kind, [v for v in values if isinstance(v, (int, float))]
        if kind == "boolean":
            return kind, [bool(v) for v in values]
        return kind, [str(v) if not isinstance(v, str) else v for v in values]


# --- queries --------------------------------------------------------------------------


def _bound(kind: str | None, value: Any) -> Any:
    if kind in ("date", "date_nanos"):
        return epoch_nanos(value)
    if kind in ("long", "double"):
        return float(value)
    return str(value)


def _same(kind: str | None, have: Any, want: Any) -> bool:
    if kind in ("date", "date_nanos"):
        return have == epoch_nanos(want)
    if kind in ("long", "double"):
        try:
            return float(have) == float(want)
        except (TypeError, ValueError):
            return False
    if kind == "boolean":
        return have == (want in (True, "true"))
    return have == str(want)


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def matches(doc: Doc, query: dict[str, Any]) -> bool:
    """Whether `doc` matches a query of the supported subset (a 400 for any other)."""
    if not isinstance(query, dict) or len(query) != 1:
        raise _error(400, "parsing_exception", f"[query] malformed: {json.dumps(query)[:200]}")
    (kind, spec), = query.items()
    if kind == "match_all":
        return True
    if kind == "bool":
        def listed(key: str) -> list[dict[str, Any]]:
            value = spec.get(key) or []
            return value if isinstance(value, list) else [value]

        must = listed("must") + listed("filter")
        should = listed("should")
        if not all(matches(doc, q) for q in must):
            return False
        if any(matches(doc, q) for q in listed("must_not")):
            return False
        minimum = spec.get("minimum_should_match", 0 if must else 1)
        return not should or sum(matches(doc, q) for q in should) >= int(minimum)
    if kind == "range":
        (field, bounds), = spec.items()
        ftype, values = doc.typed(field)
        checks = {"gte": lambda a, b: a >= b, "gt": lambda a, b: a > b,
                  "lte": lambda a, b: a <= b, "lt": lambda a, b: a < b}
        wanted = [(checks[op], _bound(ftype, bound)) for op, bound in bounds.items()
                  if op in checks and bound is not None]
        return any(all(check(v, b) for check, b in wanted) for v in values)
    if kind == "term":
        (field, want), = spec.items()
        want = want.get("value") if isinstance(want, dict) else want
        ftype, values = doc.typed(field)
        return any(_same(ftype, v, want) for v in values)
    if kind == "terms":
        (field, wants), = spec.items()
        ftype, values = doc.typed(field)
        return any(_same(ftype, v, w) for v in values for w in wants)
    if kind == "match":
        (field, want), = spec.items()
        want = want.get("query") if isinstance(want, dict) else want
        ftype, values = doc.typed(field)
        if ftype == "text":
            return any(_tokens(str(want)) & _tokens(str(v)) for v in values)
        return any(_same(ftype, v, want) for v in values)
    if kind == "exists":
        return bool(lookup(doc.source, spec["field"]))
    if kind == "query_string":
        return _query_string(doc, spec["query"])
    raise _error(400, "parsing_exception", f"unknown query [{kind}]", line=1, col=1)


_CLAUSE = re.compile(r'\s*(?:(?P<field>(?:[^\s:"\\]|\\.)+):)?(?P<value>"(?:[^"\\]|\\.)*"|[^\s()]+)')


def _query_string(doc: Doc, text: str) -> bool:
    """`field:value` clauses (value quoted, or with a trailing `*`) joined by AND / OR,
    AND binding tighter; a clause without a field looks in every string of the doc."""
    ors: list[list[tuple[str | None, str]]] = [[]]
    position, expect_clause = 0, True
    while position < len(text):
        rest = text[position:]
        if not rest.strip():
            break
        operator = re.match(r"\s*(AND|OR)\b", rest)
        if operator and not expect_clause:
            if operator.group(1) == "OR":
                ors.append([])
            position += operator.end()
            expect_clause = True
            continue
        clause = _CLAUSE.match(rest)
        if not clause or not expect_clause:
            raise _error(400, "query_shard_exception", f"Failed to parse query [{text}]")
        field = clause.group("field")
        ors[-1].append((field.replace("\\", "") if field else None, clause.group("value")))
        position += clause.end()
        expect_clause = False
    if expect_clause:
        raise _error(400, "query_shard_exception", f"Failed to parse query [{text}]")
    return any(all(_clause(doc, f, v) for f, v in group) for group in ors)


def _clause(doc: Doc, field: str | None, value: str) -> bool:
    if value.startswith('"'):
        wanted, prefix = json.loads(value), False
    else:
        prefix = value.endswith("*")
        wanted = value.rstrip("*").replace("\\", "")
    if field is None:
        values: list[Any] = [v for v in _all_strings(doc.source)]
        ftype: str | None = "keyword"
    else:
        ftype, values = doc.typed(field)
    for v in values:
        if prefix and str(v).startswith(wanted):
            return True
        if not prefix and (_same(ftype, v, wanted) or (
            ftype == "text" and _tokens(wanted) <= _tokens(str(v))
        )):
            return True
    return False


def _all_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _all_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _all_strings(item)


# --- sorting --------------------------------------------------------------------------


def _sort_fields(sort: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """(field, order, options) of each sort entry: "f", {"f": "asc"}, {"f": {...}}."""
    entries = sort if isinstance(sort, list) else [sort]
    out: list[tuple[str, str, dict[str, Any]]] = []
    for entry in entries:
        if isinstance(entry, str):
            field, _, order = entry.partition(":")
            out.append((field, order or ("desc" if field == "_score" else "asc"), {}))
        elif isinstance(entry, dict) and len(entry) == 1:
            (field, spec), = entry.items()
            if isinstance(spec, str):
                out.append((field, spec, {}))
            else:
                out.append((field, spec.get("order", "asc"), spec))
        else:
            raise _error(400, "parsing_exception", f"malformed sort [{json.dumps(entry)}]")
    return out


class _Missing:
    """Sorts after every value, in either order (`missing: _last`)."""


MISSING = _Missing()


def _sort_key(doc: Doc, fields: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """The doc's sort values as the response shows them."""
    key: list[Any] = []
    for field, order, _ in fields:
        if field == "_shard_doc":
            key.append(doc.ordinal)
            continue
        if field == "_doc":
            key.append(doc.ordinal)
            continue
        if field == "_id":
            key.append(doc.id)
            continue
        ftype, values = doc.typed(field)
        if not values:
            key.append(MISSING)
            continue
        value = min(values) if order == "asc" else max(values)
        if ftype == "date":
            value = value // 1_000_000  # epoch milliseconds
        key.append(value)
    return key


def _compare(a: list[Any], b: list[Any], orders: list[str]) -> int:
    for x, y, order in zip(a, b, orders, strict=True):
        if x is MISSING or y is MISSING:
            if x is MISSING and y is MISSING:
                continue
            return 1 if x is MISSING else -1
        if x == y:
            continue
        less = x < y
        return (-1 if less else 1) if order == "asc" else (1 if less else -1)
    return 0


# --- the server -----------------------------------------------------------------------


class _Context:
    """A point in time or a scroll: the documents frozen when it was made."""

    def __init__(self, kind: str, docs: list[Doc], indices: list[str], keep_alive: str):
        self.kind = kind
        self.docs = docs
        self.indices = indices
        self.keep_alive = keep_alive
        self.creation_time = int(time.time() * 1000)
        self.hits: list[dict[str, Any]] = []  # a scroll's remaining hits
        self.size = 10  # a scroll's page size: its first search's
        self.total: dict[str, Any] | None = None
        # a point in time's matching documents, sorted, per (query, sort): a real node
        # keeps its searcher; here it saves re-sorting a large index on every page
        self.sorted: dict[str, list[tuple[list[Any], Doc]]] = {}


def _keep_alive_ms(text: str) -> int:
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text or "")
    if not match:
        raise _error(
            400, "parse_exception", f"failed to parse setting [keep_alive] with value [{text}]"
        )
    scale = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    return int(match.group(1)) * scale[match.group(2)]


class LoopbackOpenSearch:
    """An OpenSearch imitation on 127.0.0.1, started on `__enter__`, stopped on `__exit__`.

    `indices`: index name -> `_source` documents (a doc given as {"_id", "_source"} keeps
    its id; others are numbered from 0). `mappings`: index -> {field path: type}.
    `pit=False` answers the PIT API as a cluster without it. `users` (user -> password)
    and `api_keys` turn authentication on; `forbidden` indices answer 403 to any user.
    `ssl_context` (a server context) serves HTTPS instead of HTTP. From request number
    `shard_failure_from_request` on, searches and scroll pages answer 200 with the first
    shard failed (`_shards.failed`, its `failures`) and that shard's hits missing.
    Sorting on `_id` works with a deprecation `Warning` header, or, with
    `id_field_data=False` (the cluster setting off), fails.
    `fault(number, method, path)`, when given, may answer a request in place of the
    imitation: (status, content type, raw body), for faults no real node produces on
    demand (a proxy's 502 page, a body cut short, a page that never advances); None
    lets the imitation answer.
    `requests` records every (method, path with query, JSON body or None).
    """

    def __init__(
        self,
        indices: dict[str, list[dict[str, Any]]],
        *,
        mappings: dict[str, dict[str, str]] | None = None,
        pit: bool = True,
        version: str = "2.19.0",
        users: dict[str, str] | None = None,
        api_keys: set[str] | None = None,
        max_result_window: int = 10000,
        delay: float = 0.0,
        delay_from_request: int = 0,
        forbidden: set[str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        shard_failure_from_request: int | None = None,
        id_field_data: bool = True,
        refuse_pit_delete: bool = False,
        fault: Callable[[int, str, str], tuple[int, str, bytes] | None] | None = None,
    ) -> None:
        mappings = mappings or {}
        self.indices = {
            name: Index(name, docs, mappings.get(name, {})) for name, docs in indices.items()
        }
        self.pit = pit
        self.version = version
        self.users = users
        self.api_keys = api_keys
        self.max_result_window = max_result_window
        self.delay = delay
        self.delay_from_request = delay_from_request
        self.forbidden = forbidden or set()
        self.ssl_context = ssl_context
        self.shard_failure_from_request = shard_failure_from_request
        self.id_field_data = id_field_data
        self.refuse_pit_delete = refuse_pit_delete
        self.fault = fault
        self._context_numbers = itertools.count(1)
        self._local = threading.local()  # this request's reply headers, per handler thread
        self.requests: list[tuple[str, str, Any]] = []
        self._contexts: dict[str, _Context] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> LoopbackOpenSearch:
        handler = functools.partial(_Handler, self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        scheme = "http"
        if self.ssl_context is not None:
            server.socket = self.ssl_context.wrap_socket(server.socket, server_side=True)
            scheme = "https"
        self._server = server
        self.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def open_pits(self) -> list[str]:
        with self._lock:
            return [k for k, c in self._contexts.items() if c.kind == "pit"]

    def open_scrolls(self) -> list[str]:
        with self._lock:
            return [k for k, c in self._contexts.items() if c.kind == "scroll"]

    def bodies(self, path_part: str) -> list[Any]:
        """The JSON bodies of the requests whose path has `path_part`, in order."""
        return [body for _, path, body in list(self.requests) if path_part in path]

    # --- dispatch -----------------------------------------------------------------------

    def answer(self, method: str, uri: str, headers: Any, body: Any, number: int,
               reply: dict[str, str] | None = None) -> Any:
        """The JSON body of a 200 answer (its headers added to `reply`), or an HttpError."""
        self._local.reply = reply if reply is not None else {}
        user = self._authenticate(headers)
        parts = urlsplit(uri)
        path = unquote(parts.path).rstrip("/") or "/"
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        segments = [s for s in path.split("/") if s]
        if method == "GET" and path == "/":
            return self._info()
        if segments[-2:] == ["_search", "point_in_time"] or (
            segments[:2] == ["_search", "point_in_time"]
        ):
            if not self.pit:
                raise _no_handler(method, uri)
            return self._pit_api(method, segments, params, body, user)
        if segments == ["_search", "scroll"] or segments[:2] == ["_search", "scroll"]:
            if method == "DELETE":
                return self._clear_scroll(body, segments)
            if method in ("GET", "POST"):
                self._delay(number)
                return self._partial(self._scroll_page(body, params), number)
        if segments and segments[-1] == "_search" and len(segments) <= 2 and method in (
            "GET", "POST"
        ):
            self._delay(number)
            target = segments[0] if len(segments) == 2 else None
            return self._partial(self._search(target, params, body or {}, user), number)
        if segments and segments[-1] == "_search" and len(segments) <= 2:
            raise _wrong_method(method, uri, "POST, GET")
        raise _no_handler(method, uri)

    def _partial(self, answer: dict[str, Any], number: int) -> dict[str, Any]:
        """`answer` as if its first shard (its first index) had failed, when asked to."""
        start = self.shard_failure_from_request
        shards = answer["_shards"]
        if start is None or number < start or not shards["total"]:
            return answer
        hits = answer["hits"]["hits"]
        lost = hits[0]["_index"] if hits else ""
        answer["hits"]["hits"] = [h for h in hits if h["_index"] != lost]
        shards.update(successful=shards["total"] - 1, failed=1, failures=[{
            "shard": 0, "index": lost, "node": NODE,
            "reason": {"type": "node_not_connected_exception",
                       "reason": f"[{NODE}][127.0.0.1:9300] Node not connected"},
        }])
        return answer

    def _delay(self, number: int) -> None:
        if self.delay and number >= self.delay_from_request:
            time.sleep(self.delay)

    def _authenticate(self, headers: Any) -> str | None:
        if self.users is None and self.api_keys is None:
            return None
        given = headers.get("Authorization") or ""
        scheme, _, credential = given.partition(" ")
        if scheme.lower() == "basic" and self.users:
            try:
                name, _, password = base64.b64decode(credential).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return self._refuse()
            if name in self.users and self.users[name] == password:
                return name
        if scheme == "ApiKey" and self.api_keys and credential in self.api_keys:
            return "api-key-user"
        return self._refuse()

    @staticmethod
    def _refuse() -> NoReturn:
        raise HttpError(401, "Unauthorized",
                        {"WWW-Authenticate": 'Basic realm="OpenSearch Security"'})

    def _info(self) -> dict[str, Any]:
        return {
            "name": NODE,
            "cluster_name": "imitation-cluster",
            "cluster_uuid": "Zm9yZW5zaWNzLWltaXRhdGlvbg",
            "version": {
                "distribution": "opensearch",
                "number": self.version,
                "build_type": "tar",
                "build_hash": "0" * 40,
                "build_date": "2025-01-01T00:00:00.000000000Z",
                "build_snapshot": False,
                "lucene_version": "9.12.1",
                "minimum_wire_compatibility_version": "7.10.0",
                "minimum_index_compatibility_version": "7.0.0",
            },
            "tagline": "The OpenSearch Project: https://opensearch.org/",
        }

    # --- indices --------------------------------------------------------------------------

    def _resolve(self, target: str | None, user: str | None) -> list[Index]:
        """The indices an expression names: concrete names must exist, patterns may
        match nothing (allow_no_indices, the default)."""
        names: list[str] = []
        for part in (target or "_all").split(","):
            if part in ("_all", "*"):
                names += [n for n in self.indices if n not in names]
            elif "*" in part:
                names += [n for n in self.indices if fnmatch.fnmatchcase(n, part)
                          and n not in names]
            elif part in self.indices:
                if part not in names:
                    names.append(part)
            else:
                raise _error(404, "index_not_found_exception", f"no such index [{part}]",
                             index=part, **{"resource.id": part,
                                            "resource.type": "index_or_alias",
                                            "index_uuid": "_na_"})
        for name in names:
            if name in self.forbidden:
                who = user or "anonymous"
                raise _error(403, "security_exception",
                             f"no permissions for [indices:data/read/search] and User "
                             f"[name={who}, backend_roles=[], requestedTenant=null]")
        return [self.indices[n] for n in names]

    def _docs(self, indices: list[Index]) -> list[Doc]:
        docs, ordinal = [], 0
        for shard, index in enumerate(indices):
            for doc_id, source in index.docs:
                docs.append(Doc(index, doc_id, source, (shard << 32) | ordinal))
                ordinal += 1
        return docs

    # --- point in time ------------------------------------------------------------------

    def _pit_api(self, method: str, segments: list[str], params: dict[str, str], body: Any,
                 user: str | None) -> Any:
        if method == "POST" and segments[-2:] == ["_search", "point_in_time"] and len(
            segments
        ) == 3:
            keep_alive = params.get("keep_alive")
            if not keep_alive:
                raise _error(400, "action_request_validation_exception",
                             "Validation Failed: 1: keep alive not specified;")
            _keep_alive_ms(keep_alive)
            indices = self._resolve(segments[0], user)
            if not indices:  # measured on 2.19.6, 3.3.2 and 3.9.0
                raise _error(400, "illegal_argument_exception", "invalid id: [null]")
            pit_id = base64.urlsafe_b64encode(secrets.token_bytes(30)).decode()
            with self._lock:
                self._contexts[pit_id] = _Context("pit", self._docs(indices),
                                                  [i.name for i in indices], keep_alive)
            n = len(indices)
            return {"pit_id": pit_id,
                    "_shards": {"total": n, "successful": n, "skipped": 0, "failed": 0},
                    "creation_time": self._contexts[pit_id].creation_time}
        if method == "GET" and segments == ["_search", "point_in_time", "_all"]:
            with self._lock:
                return {"pits": [{"pit_id": k, "creation_time": c.creation_time,
                                  "keep_alive": _keep_alive_ms(c.keep_alive)}
                                 for k, c in self._contexts.items() if c.kind == "pit"]}
        if method == "DELETE" and segments == ["_search", "point_in_time", "_all"]:
            with self._lock:
                gone = [k for k, c in self._contexts.items() if c.kind == "pit"]
                for k in gone:
                    del self._contexts[k]
            return {"pits": [{"successful": True, "pit_id": k} for k in gone]}
        if method == "DELETE" and segments == ["_search", "point_in_time"]:
            ids = (body or {}).get("pit_id")
            if ids is None:
                raise _error(400, "action_request_validation_exception",
                             "Validation Failed: 1: no pit ids specified;")
            ids = ids if isinstance(ids, list) else [ids]
            results = []
            with self._lock:
                for pit_id in ids:
                    found = self._contexts.get(pit_id)
                    if found is not None and found.kind == "pit":
                        del self._contexts[pit_id]
                    results.append({"successful": not self.refuse_pit_delete, "pit_id": pit_id})
            return {"pits": results}
        raise _no_handler(method, "/" + "/".join(segments))

    # --- search ---------------------------------------------------------------------------

    def _search(self, target: str | None, params: dict[str, str], body: dict[str, Any],
                user: str | None) -> Any:
        pit = body.get("pit")
        if pit is not None:
            if target is not None:
                raise _error(400, "action_request_validation_exception",
                             "Validation Failed: 1: [indices] cannot be used with point in "
                             "time;")
            pit_id = pit.get("id")
            with self._lock:
                context = self._contexts.get(pit_id)
            if context is None or context.kind != "pit":
                raise _shard_failure(404, "", "search_context_missing_exception",
                                     f"No search context found for id "
                                     f"[{next(self._context_numbers)}]")
            if pit.get("keep_alive"):
                context.keep_alive = pit["keep_alive"]
            docs, names = context.docs, context.indices
        else:
            indices = self._resolve(target, user)
            docs, names = self._docs(indices), [i.name for i in indices]
        scroll = params.get("scroll")
        if scroll is not None:
            _keep_alive_ms(scroll)
        size = int(body.get("size", params.get("size", 10)))
        start = int(body.get("from", params.get("from", 0)))
        first_index = names[0] if names else ""
        if scroll is not None and size > self.max_result_window:
            raise _shard_failure(400, first_index, "illegal_argument_exception",
                                 f"Batch size is too large, size must be less than or equal "
                                 f"to: [{self.max_result_window}] but was [{size}]. Scroll "
                                 "batch sizes cost as much memory as result windows so they "
                                 "are controlled by the [index.max_result_window] index "
                                 "level setting.")
        if scroll is None and start + size > self.max_result_window:
            raise _shard_failure(400, first_index, "illegal_argument_exception",
                                 f"Result window is too large, from + size must be less than "
                                 f"or equal to: [{self.max_result_window}] but was "
                                 f"[{start + size}]. See the scroll api for a more efficient "
                                 "way to request large data sets. This limit can be set by "
                                 "changing the [index.max_result_window] index level setting.")
        query = body.get("query") or {"match_all": {}}
        fields = _sort_fields(body["sort"]) if "sort" in body else []
        self._check_sort(fields, names, pit is not None)
        orders = [order for _, order, _ in fields]

        def by_key(a: tuple[list[Any], Doc], b: tuple[list[Any], Doc]) -> int:
            return _compare(a[0], b[0], orders)

        cache_key = json.dumps([query, body.get("sort")], sort_keys=True, default=str)
        cached = context.sorted.get(cache_key) if pit is not None else None
        if cached is None:
            keyed: list[tuple[list[Any], Doc]] = [
                (_sort_key(d, fields), d) for d in docs if matches(d, query)
            ]
            if fields:
                keyed.sort(key=functools.cmp_to_key(by_key))
            if pit is not None:
                context.sorted[cache_key] = keyed
        else:
            keyed = cached
        total = self._total(len(keyed), body.get("track_total_hits", 10000))
        after = body.get("search_after")
        if after is not None:
            if not fields:
                raise _error(400, "action_request_validation_exception",
                             "Validation Failed: 1: sort must be specified with search_after;")
            if start:
                raise _error(400, "illegal_argument_exception",
                             "[from] parameter must be set to 0 when [search_after] is used.")
            if len(after) != len(fields):
                raise _error(400, "illegal_argument_exception",
                             f"search_after has {len(after)} value(s) but sort has "
                             f"{len(fields)}.")
            bound = [self._after_value(value, field, names)
                     for value, (field, _, _) in zip(after, fields, strict=True)]
            # the first document after `bound` (the list is sorted by the same order)
            wrapped = functools.cmp_to_key(by_key)
            first = bisect.bisect_right(keyed, wrapped((bound, None)), key=wrapped)  # type: ignore[arg-type]
            keyed = keyed[first:]
        if scroll is None:
            keyed = keyed[start:start + size]  # only the page is rendered
            start = 0
        hits = [self._hit(key, doc, bool(fields)) for key, doc in keyed]
        n = len(names)
        answer: dict[str, Any] = {
            "took": 1,
            "timed_out": False,
            "_shards": {"total": n, "successful": n, "skipped": 0, "failed": 0},
            "hits": {"max_score": 0.0 if not n else None if fields else (1.0 if hits else None),
                     "hits": []},
        }
        if total is not None:
            answer["hits"]["total"] = total
        if pit is not None:
            answer["pit_id"] = pit["id"]
        if scroll is not None:
            scroll_id = base64.urlsafe_b64encode(secrets.token_bytes(24)).decode()
            context = _Context("scroll", [], names, scroll)
            context.hits = hits[size:]
            context.size = size
            context.total = total
            with self._lock:
                self._contexts[scroll_id] = context
            answer["_scroll_id"] = scroll_id
            answer["hits"]["hits"] = hits[:size]
        else:
            answer["hits"]["hits"] = hits[start:start + size]
        return answer

    def _check_sort(self, fields: list[tuple[str, str, dict[str, Any]]], names: list[str],
                    with_pit: bool) -> None:
        for field, order, options in fields:
            if order not in ("asc", "desc"):
                raise _error(400, "illegal_argument_exception", f"Unknown SortOrder [{order}]")
            if field in ("_doc", "_score"):
                continue
            if field == "_id":
                if not self.id_field_data:
                    raise _shard_failure(400, names[0] if names else "",
                                         "illegal_argument_exception", ID_FIELD_DATA_OFF)
                self._local.reply["Warning"] = (
                    f'299 OpenSearch-{self.version}-{"0" * 40} "{ID_FIELD_DATA_DEPRECATED}"'
                )
                continue
            if field == "_shard_doc":
                version = tuple(int(n) for n in re.findall(r"\d+", self.version)[:2])
                if version < (3, 3) or not with_pit:
                    raise _shard_failure(400, names[0] if names else "",
                                         "query_shard_exception",
                                         "No mapping found for [_shard_doc] in order to sort on")
                continue
            if names and "unmapped_type" not in options and not any(
                self.indices[n].maps(field) for n in names
            ):
                raise _shard_failure(400, names[0], "query_shard_exception",
                                     f"No mapping found for [{field}] in order to sort on")

    def _after_value(self, value: Any, field: str, names: list[str]) -> Any:
        """A search_after value as the sort values it is compared with: a date given as
        text read as a date (epoch ms for `date`, ns for `date_nanos`)."""
        if value is None:
            return MISSING
        if field in ("_shard_doc", "_doc"):
            return int(value)
        if field == "_id":
            return str(value)
        kind = next((self.indices[n].field_type(field, [value]) for n in names), None)
        if kind in ("date", "date_nanos") and isinstance(value, str):
            nanos = epoch_nanos(value)
            if nanos is None:
                raise _error(400, "parse_exception", f"failed to parse date field [{value}]")
            return nanos // 1_000_000 if kind == "date" else nanos
        if kind in ("long", "double") and isinstance(value, str):
            return float(value)
        if kind == "keyword":
            return str(value)
        return value

    @staticmethod
    def _total(count: int, track: Any) -> dict[str, Any] | None:
        if track is False:
            return None
        if track is True:
            return {"value": count, "relation": "eq"}
        limit = int(track)
        return {"value": min(count, limit), "relation": "eq" if count <= limit else "gte"}

    @staticmethod
    def _hit(key: list[Any], doc: Doc, sorted_: bool) -> dict[str, Any]:
        hit: dict[str, Any] = {"_index": doc.index.name, "_id": doc.id,
                               "_score": None if sorted_ else 1.0, "_source": doc.source}
        if sorted_:
            hit["sort"] = [None if v is MISSING else v for v in key]
        return hit

    # --- scroll ---------------------------------------------------------------------------

    def _scroll_page(self, body: Any, params: dict[str, str]) -> Any:
        body = body or {}
        scroll_id = body.get("scroll_id") or params.get("scroll_id")
        with self._lock:
            context = self._contexts.get(scroll_id or "")
            if context is None or context.kind != "scroll":
                raise _shard_failure(404, "", "search_context_missing_exception",
                                     f"No search context found for id "
                                     f"[{next(self._context_numbers)}]")
            page, context.hits = context.hits[:context.size], context.hits[context.size:]
        n = len(context.indices)
        answer: dict[str, Any] = {
            "_scroll_id": scroll_id,
            "took": 1,
            "timed_out": False,
            "_shards": {"total": n, "successful": n, "skipped": 0, "failed": 0},
            "hits": {"max_score": None, "hits": page},
        }
        if context.total is not None:
            answer["hits"]["total"] = context.total
        return answer

    def _clear_scroll(self, body: Any, segments: list[str]) -> Any:
        ids: Iterable[str] = (body or {}).get("scroll_id") or []
        if len(segments) == 3:
            ids = segments[2].split(",")
        if isinstance(ids, str):
            ids = [ids]
        freed = 0
        with self._lock:
            for scroll_id in ids:
                if scroll_id == "_all":
                    gone = [k for k, c in self._contexts.items() if c.kind == "scroll"]
                else:
                    gone = [scroll_id] if scroll_id in self._contexts else []
                for k in gone:
                    del self._contexts[k]
                    freed += 1
        answer = {"succeeded": True, "num_freed": freed}
        if not freed:
            raise HttpError(404, answer)
        return answer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body in one send: else Nagle and delayed ACKs cost 40 ms a request
    disable_nagle_algorithm = True
    wbufsize = -1

    def __init__(self, imitation: LoopbackOpenSearch, *args: Any, **kwargs: Any) -> None:
        self.imitation = imitation
        super().__init__(*args, **kwargs)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # quiet: pytest shows stderr of failing tests

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        imitation = self.imitation
        try:
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    with imitation._lock:
                        imitation.requests.append((self.command, self.path, None))
                    raise _error(400, "parse_exception", "request body is not JSON") from None
            with imitation._lock:
                number = len(imitation.requests)
                imitation.requests.append((self.command, self.path, body))
            injected = imitation.fault(number, self.command, self.path) if imitation.fault else None
            if injected is not None:
                self._send_raw(*injected)
                return
            headers: dict[str, str] = {}
            status, answer = 200, imitation.answer(
                self.command, self.path, self.headers, body, number, headers
            )
        except HttpError as e:
            status, answer, headers = e.status, e.body, e.headers
        self._send(status, answer, headers)

    def _send(self, status: int, answer: Any, headers: dict[str, str]) -> None:
        if isinstance(answer, str):
            data, kind = answer.encode(), "text/plain; charset=UTF-8"
        else:
            data, kind = json.dumps(answer).encode(), "application/json; charset=UTF-8"
        self._send_raw(status, kind, data, headers)

    def _send_raw(self, status: int, kind: str, data: bytes,
                  headers: dict[str, str] | None = None) -> None:
        headers = headers or {}
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nobody to answer

    do_GET = do_POST = do_DELETE = do_PUT = do_HEAD = _handle


def flat_mapping(mapping: dict[str, Any]) -> dict[str, str]:
    """An index mapping file ({"mappings": {"properties": ...}}) as {field path: type},
    in the types the imitation knows (integer -> long, float -> double)."""
    kinds = {"integer": "long", "short": "long", "byte": "long", "float": "double",
             "half_float": "double", "scaled_float": "double"}
    out: dict[str, str] = {}

    def walk(properties: dict[str, Any], prefix: str) -> None:
        for name, spec in properties.items():
            if "properties" in spec:
                walk(spec["properties"], f"{prefix}{name}.")
            elif spec.get("type") in FIELD_TYPES or spec.get("type") in kinds:
                out[prefix + name] = kinds.get(spec["type"], spec["type"])

    walk(mapping.get("mappings", mapping).get("properties", {}), "")
    return out
