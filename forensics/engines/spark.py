"""The Spark engine: the facts of a Parquet export, built by Apache Spark.

`forensics analyze --engine spark --input EXPORT --output FACTS` reads the export's
events and parts, groups them by session, and runs the same per-session function the
local engine runs (analysis/facts.py `session_facts`) inside each group
(`cogroup(...).applyInArrow`); every group returns one row holding its session's fact
rows per table, and each table is written as Parquet under FACTS. The traced requests
and the release evidence are small: they are read on the driver and shipped to the
workers with the function. The summaries (the whole export's `turns` and `growth`) are
Spark SQL over the facts written (queries/spark/), with the ratios fitted on the driver
from the sample Spark SQL picks. `master` is passed to Spark as given (`local[2]` by
default; a cluster URL works the same). pyspark is imported only here.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds

from .. import sql
from ..analysis.facts import (
    FACT_SCHEMAS,
    FACT_TABLES,
    SessionFacts,
    failed_facts,
    session_facts,
)
from ..analysis.ratio import Ratio
from ..analysis.stored import FIT_SESSIONS, fit_sample, ratio_tables
from ..errors import ForensicsError
from ..model import ROLES, Release
from ..provenance import Column, Spec
from ..store.parquet import read_manifest
from ..store.reads import build_sessions, choose_release
from .output import SUMMARIES, output_folder, write_manifest

KEY = ("app_name", "user_id", "session_id")
# traced requests: session id -> event id -> (chars by role, system+tools chars, release)
Traced = dict[str, dict[str, tuple[dict[str, int], int, str | None]]]


def _table(folder: Path, name: str) -> pa.Table | None:
    where = folder / name
    if not where.is_dir():
        return None
    return ds.dataset(where, format="parquet").to_table()


def _traced(folder: Path) -> Traced:
    """Session id -> event id -> the traced request's sizes and the release it names."""
    calls, parts = _table(folder, "traced_calls"), _table(folder, "traced_parts")
    if calls is None:
        return {}
    by_role: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(ROLES, 0))
    for p in parts.to_pylist() if parts is not None else []:
        by_role[(p["session_id"], p["event_id"])][p["role"]] += p["chars"]
    found: Traced = defaultdict(dict)
    for c in calls.to_pylist():
        key = (c["session_id"], c["event_id"])
        found[c["session_id"]][c["event_id"]] = (
            {r: v for r, v in by_role[key].items() if r != "summary"},
            c["system_chars"] + c["tools_chars"],
            c["adk_version"],
        )
    return dict(found)


def _evidence(folder: Path) -> dict[tuple[str, str, str], dict[str, Release]]:
    table = _table(folder, "session_releases")
    found: dict[tuple[str, str, str], dict[str, Release]] = defaultdict(dict)
    for r in table.to_pylist() if table is not None else []:
        found[(r["app_name"], r["user_id"], r["session_id"])][r["basis"]] = Release(
            r["version"], r["basis"], r["detail"], r["since_version"], r["until_version"]
        )
    return dict(found)


def _families(folder: Path) -> dict[tuple[str, str, str], str]:
    """The sessions that another family than ADK wrote (an export of store schema 10+)."""
    where = folder / "sessions"
    if not where.is_dir():
        return {}
    table = ds.dataset(where, format="parquet", partitioning="hive").to_table()
    if "family" not in table.column_names:
        return {}
    return {
        (r["app_name"], r["user_id"], r["session_id"]): r["family"]
        for r in table.select([*KEY, "family"]).to_pylist()
        if r["family"] not in (None, "adk")
    }


def session_group(
    events: pa.Table,
    parts: pa.Table,
    traced: Traced,
    evidence: dict[tuple[str, str, str], dict[str, Release]],
    families: dict[tuple[str, str, str], str] | None = None,
) -> pa.Table:
    """One session's rows in, one row out: its fact rows, a list per table. A session
    whose rebuild raises is one fact_sessions row with its error, as in the local
    engine (engines/local.py): the job goes on with the others."""
    if events.num_rows == 0:  # parts without their events: nothing to rebuild
        return pa.table(
            {t: pa.array([], pa.list_(pa.struct(FACT_SCHEMAS[t]))) for t in FACT_TABLES}
        )
    event_rows = sorted(events.to_pylist(), key=lambda r: (r["epoch"], r["event_id"]))
    part_rows = sorted(
        parts.to_pylist(), key=lambda r: (r["event_id"], r["origin"], r["part_index"])
    )
    first = event_rows[0]
    key = (first["app_name"], first["user_id"], first["session_id"])
    try:
        facts = _rebuild(event_rows, part_rows, traced, evidence, families or {})
    except Exception as e:  # one session's data never stops the others
        facts = failed_facts(key, len(event_rows), e)
    tables = facts.tables
    return pa.table(
        {t: pa.array([tables[t]], pa.list_(pa.struct(FACT_SCHEMAS[t]))) for t in FACT_TABLES}
    )


def _rebuild(
    event_rows: list[dict[str, Any]],
    part_rows: list[dict[str, Any]],
    traced: Traced,
    evidence: dict[tuple[str, str, str], dict[str, Release]],
    families: dict[tuple[str, str, str], str],
) -> SessionFacts:
    (session,) = build_sessions(event_rows, part_rows)
    session.family = families.get(session.key, "adk")
    own = {e.event_id for e in session.events}
    sizes = {}
    versions = []
    for event_id, (by_role, system_tools, version) in traced.get(session.session_id, {}).items():
        if event_id in own:  # a traced request counts for the session whose event it answered
            sizes[event_id] = (by_role, system_tools)
            if version:
                versions.append(version)
    session.release = choose_release(evidence.get(session.key, {}), versions)
    return session_facts(session, sizes)


def _spark_type(column: Column) -> str:
    for dtype, name in ((pl.String, "string"), (pl.Int64, "bigint"), (pl.Int32, "int"),
                        (pl.Float64, "double"), (pl.Boolean, "boolean")):  # fmt: skip
        if column.dtype == dtype:
            return name
    raise TypeError(f"{column.name}: no Spark type for {column.dtype}")


def _as_spec(frame: Any, spec: Spec) -> Any:
    """A Spark frame with a Spec's columns, in its order and types (Spec.from_query)."""
    from pyspark.sql import functions as F

    return frame.select(
        *(
            F.timestamp_micros((F.col(c.name) * 1_000_000).cast("bigint")).alias(c.name)
            if c.epoch
            else F.col(c.name).cast(_spark_type(c)).alias(c.name)
            for c in spec.columns
        )
    )


def _summaries(
    spark: Any, output_dir: Path, events: Any
) -> tuple[dict[str, int], dict[str, Ratio]]:
    """The whole export's summaries, by Spark SQL over the facts written under output_dir."""
    for table in FACT_TABLES:
        spark.read.parquet(str(output_dir / table)).createOrReplaceTempView(table)
    events.createOrReplaceTempView("events")
    samples: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    fit = spark.sql(sql.load("spark/fit_samples").sql, args={"limit": FIT_SESSIONS})
    for row in fit.collect():  # at most FIT_SESSIONS sessions' calls per model
        samples[row[0]].append(tuple(row[1:]))
    models = sorted(r[0] for r in spark.sql(sql.load("spark/models").sql).collect())
    fitted = {m: fit_sample(m, samples[m]) for m in models}
    ratios, constants = ratio_tables(fitted)
    spark.createDataFrame(ratios).createOrReplaceTempView("scope_ratios")
    spark.createDataFrame(constants).createOrReplaceTempView("scope_constants")
    rows = {}
    for name, spec in SUMMARIES.items():
        frame = _as_spec(spark.sql(sql.load(f"spark/{name}").sql), spec)
        frame.write.parquet(str(output_dir / name))
        rows[name] = spark.read.parquet(str(output_dir / name)).count()
    return rows, fitted


def analyze(input_dir: Path, output_dir: Path, *, master: str = "local[2]") -> dict[str, int]:
    """Build the facts of the export at `input_dir` with Spark; returns rows per table."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema
    except ImportError:
        raise ForensicsError(
            "the Spark engine needs pyspark",
            hint="install the extra: pip install 'agent-forensics[spark]' (and Java 17+)",
        ) from None
    manifest = read_manifest(input_dir)
    with output_folder(output_dir):
        started = time.perf_counter()
        traced, evidence, families = _traced(input_dir), _evidence(input_dir), _families(input_dir)
        builder = SparkSession.builder.master(master)
        if master.startswith("local"):  # this machine: its workers run this Python
            # pyspark reads the workers' interpreter from the environment when it starts
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
                "spark.driver.host", "127.0.0.1"
            )
        spark = (
            builder.appName("agent-forensics analyze")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "8")
            # an app name such as "123" stays a string
            .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            .getOrCreate()
        )
        try:
            # the export URI-encodes an app name's UTF-8 bytes in its partition path; Spark
            # decodes each %XX to one character: re-read those characters as the bytes
            app = F.decode(F.encode("app_name", "ISO-8859-1"), "UTF-8")
            events = spark.read.parquet(str(input_dir / "events")).withColumn("app_name", app)
            parts = spark.read.parquet(str(input_dir / "parts")).withColumn("app_name", app)
            out_schema = from_arrow_schema(
                pa.schema([pa.field(t, pa.list_(pa.struct(FACT_SCHEMAS[t]))) for t in FACT_TABLES])
            )

            def run(left: pa.Table, right: pa.Table) -> pa.Table:
                return session_group(left, right, traced, evidence, families)

            grouped = (
                events.groupBy(*KEY)
                .cogroup(parts.groupBy(*KEY))
                .applyInArrow(run, schema=out_schema)
                .persist()
            )
            rows = {}
            for table in FACT_TABLES:
                exploded = grouped.select(F.explode(table).alias("r")).select("r.*")
                exploded.write.parquet(str(output_dir / table))
                rows[table] = spark.read.parquet(str(output_dir / table)).count()
            grouped.unpersist()
            failed = spark.read.parquet(str(output_dir / "fact_sessions"))
            failed = failed.where("error IS NOT NULL")
            sessions_failed = failed.count()
            summaries, ratios = _summaries(spark, output_dir, events)
            rows.update(summaries)
        finally:
            spark.stop()
        shown = re.sub(r"//[^/@]*@", "//***@", master)  # a URL's user:password never written
        seconds = time.perf_counter() - started
        write_manifest(output_dir, "spark", shown, manifest, rows, seconds, ratios, sessions_failed)
        return rows
