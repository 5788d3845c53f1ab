"""`forensics ingest opensearch`, `ingest opensearch-file` and `forensics failures`:
production logs and traces in, context failures out."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ForensicsError
from .common import (
    AppPick,
    DbOption,
    Format,
    FormatOption,
    SinceOption,
    UntilOption,
    UserPick,
    app,
    boundary,
    echo,
    emit,
    ingest_app,
    selection,
    stored_name,
)
from .ingest import report_ingest

MappingOption = Annotated[
    Path | None,
    typer.Option(
        "--mapping",
        help="A TOML file naming which fields of your own documents hold the session, "
        "agent, time, tokens, context size and error (docs/opensearch.md). Not needed for "
        "Data Prepper spans and logs or LiteLLM payloads: those are read by their shape.",
    ),
]
ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain-mapping",
        help="Show what the first documents map to (shape, kind, session, tokens, "
        "failure) and load nothing.",
    ),
]
SampleOption = Annotated[
    int, typer.Option("--sample", min=1, help="How many documents --explain-mapping shows.")
]


class Method(StrEnum):
    auto = "auto"
    pit = "pit"
    scroll = "scroll"


class PageProgress:
    """`read N documents` on stderr after each page, only on a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\rread {done:,} documents ")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _time(text: str | None, option: str) -> datetime | None:
    from ..selection import parse_time

    seconds = parse_time(text, option)
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else None


@ingest_app.command("opensearch")
@boundary
def ingest_opensearch(
    url: Annotated[
        str,
        typer.Argument(
            help="The cluster, e.g. https://search.internal:9200. A user and password may "
            "be in the URL, but FORENSICS_OPENSEARCH_USER / FORENSICS_OPENSEARCH_PASSWORD "
            "or --netrc keep them out of your shell history; they are never printed or "
            "stored."
        ),
    ],
    index: Annotated[
        str,
        typer.Option(
            "--index",
            help="The index or pattern, e.g. 'otel-v1-apm-span-*', 'logs-otel-v1-*', "
            "'litellm-*'.",
        ),
    ],
    since: SinceOption = None,
    until: UntilOption = None,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            help="A query_string query, pushed into the search: 'service.name:agent-api'.",
        ),
    ] = None,
    time_field: Annotated[
        str | None,
        typer.Option(
            "--time-field",
            help="The field --since/--until filter and pages sort on. Default: startTime "
            "for otel-v1-apm-span*, time for logs-otel-v1*, else @timestamp.",
        ),
    ] = None,
    mapping: MappingOption = None,
    explain_mapping: ExplainOption = False,
    sample: SampleOption = 20,
    page_size: Annotated[
        int, typer.Option("--page-size", min=1, help="Documents per page (≤ max_result_window).")
    ] = 5000,
    method: Annotated[
        Method,
        typer.Option(
            "--method",
            help="auto: a point in time with search_after, or scroll when the cluster has "
            "no PIT; pit or scroll to force one.",
        ),
    ] = Method.auto,
    netrc: Annotated[
        Path | None,
        typer.Option("--netrc", help="A netrc-style file with the cluster's login and password."),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="The environment variable holding an API key (sent as `ApiKey`); default "
            "FORENSICS_OPENSEARCH_API_KEY when set.",
        ),
    ] = None,
    ca_certs: Annotated[
        Path | None, typer.Option("--ca-certs", help="A CA bundle to verify the cluster's TLS.")
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure", help="Do not verify TLS certificates (said on stderr).")
    ] = False,
    aws_region: Annotated[
        str | None,
        typer.Option(
            "--aws-region",
            help="Sign requests with AWS SigV4 for Amazon OpenSearch Service (needs botocore "
            "or requests-aws4auth installed).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds per request; timeouts are retried.")
    ] = 30.0,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read logs and traces from a live OpenSearch cluster, read-only.

    Pages come from a point in time with search_after (OpenSearch 2.4+), or a scroll
    where the cluster has no PIT; either is released when the run ends, also on
    Ctrl-C. The time range and --query are pushed into the search. Data Prepper span
    and log documents and LiteLLM payloads are read by their shape; anything else
    through --mapping. Example: forensics ingest opensearch https://search:9200
    --index 'otel-v1-apm-span-*' --since 2026-10-15 --until 2026-10-22
    """
    import os

    from .. import api

    selection(since=since, until=until)  # the range checked before any request
    api.check_index(index)  # and the index
    api_key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not api_key:
        raise ForensicsError(f"--api-key-env {api_key_env}: that variable is not set")
    with api.connect_opensearch(
        url,
        netrc=netrc,
        api_key=api_key,
        ca_certs=ca_certs,
        insecure=insecure,
        aws_region=aws_region,
        timeout=timeout,
    ) as cluster:
        pages = PageProgress()
        if explain_mapping:
            docs = api.opensearch_documents(
                cluster,
                index,
                since=_time(since, "--since"),
                until=_time(until, "--until"),
                query=query,
                time_field=time_field,
                page_size=min(page_size, sample),
                method=method.value,
            )
            try:
                frame = api.explain_mapping(docs, mapping, sample)
            finally:
                docs.close()  # releases the point in time
            from ..columns import MAPPING_EXPLAIN

            emit(frame, fmt, MAPPING_EXPLAIN)
            return
        result = api.ingest_opensearch(
            db,
            cluster,
            index,
            since=_time(since, "--since"),
            until=_time(until, "--until"),
            query=query,
            time_field=time_field,
            mapping=mapping,
            page_size=page_size,
            method=method.value,
            pages=pages,
        )
        pages.done()
    report_ingest(result, fmt, db)


@ingest_app.command("opensearch-file")
@boundary
def ingest_opensearch_file(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files of OpenSearch documents: NDJSON of _source documents, _search "
            "response bodies, elasticdump or _bulk lines."
        ),
    ],
    mapping: MappingOption = None,
    explain_mapping: ExplainOption = False,
    sample: SampleOption = 20,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Read OpenSearch documents saved to files, offline.

    Each line that is not JSON, and each document that maps to nothing, is one skip
    with its file and line; the rest is loaded. Loading the same document twice
    stores it once. Example: forensics ingest opensearch-file dump.ndjson
    """
    from .. import api
    from ..columns import MAPPING_EXPLAIN

    if explain_mapping:
        docs = api.opensearch_file_documents(paths)
        emit(api.explain_mapping(docs, mapping, sample), fmt, MAPPING_EXPLAIN)
        return
    report_ingest(api.ingest_opensearch_files(db, paths, mapping=mapping), fmt, db)


class FailuresBy(StrEnum):
    failure = "failure"
    agent = "agent"
    cluster = "cluster"


@app.command()
@boundary
def failures(
    session_id: Annotated[
        str | None,
        typer.Argument(help="One session (logged or ADK); all when left out.",
                       callback=stored_name),
    ] = None,
    by: Annotated[
        FailuresBy,
        typer.Option(
            "--by",
            help="failure: one row each (the default); agent: failures, sessions and each "
            "session's first-failure turn; cluster: the logged size figures clustered.",
        ),
    ] = FailuresBy.failure,
    app_name: AppPick = None,
    user: UserPick = None,
    since: SinceOption = None,
    until: UntilOption = None,
    db: DbOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Context failures: requests that did not fit the model's window, from logs,
    traces, LiteLLM payloads and ADK's stored events, merged.

    Each failure has its turn two ways (completed responses logged before it; ADK's
    turn index), its logged size figure, and where the ADK session is loaded, the
    verdict: is that figure the failing call's window or the turn's cumulative input?
    Example: forensics failures --by agent
    """
    from .. import api
    from ..columns import FAILURE_CLUSTERS, FAILURES, FAILURES_BY_AGENT

    chosen = selection(app_name, user, session_id, since, until)
    with api.open_store(db) as store:
        frame = api.context_failures(store, chosen)
    spec = {"failure": FAILURES, "agent": FAILURES_BY_AGENT, "cluster": FAILURE_CLUSTERS}[by.value]
    emit(api.failures_by(frame, by.value), fmt, spec)
    if fmt is Format.table and frame.height == 0:
        echo(
            "no context failures in what is loaded (load logs or traces with "
            "`forensics ingest opensearch` or `opensearch-file`)",
            err=True,
        )
