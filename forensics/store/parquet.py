"""The store as Parquet: an export another engine or tool can read, and read back.

`export` writes one folder per table under DIR, `events/` and `parts/` partitioned
Hive-style by app and UTC day (`app_name=store/day=2026-10-22/…parquet`; partition
values are URI-encoded, so no app name becomes a path), `sessions/` by app, the
traced requests and the release evidence unpartitioned, the logged records (OpenSearch
spans and logs, LiteLLM payloads: `logged/`, by the UTC day they started; they name a
session id alone, so a selection takes those of its sessions' ids, queries/store/
export/logged.sql), the stored facts (`fact_*`, by app; an import rebuilds its own, so
it never reads them), and `manifest.json` with the format's version, the store schema
it came from, the selection and each table's rows. Rows stream from DuckDB to the
files, and back, in Arrow batches. `load` checks the manifest and inserts what the
store does not hold yet, as one ingest; an export written before `logged/` travelled
has none, and loads as it did.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.dataset as ds

from .. import sql
from ..errors import ForensicsError
from ..sanitize import require_utf8_name, storable
from ..selection import Selection
from .facts import TABLES as FACT_TABLE_NAMES
from .handle import Store
from .migrations import SCHEMA_VERSION

FORMAT = "agent-forensics-parquet"
FORMAT_VERSION = 1
# table -> its Hive partition columns; loaded in this order (traced parts after calls)
TABLES: dict[str, tuple[str, ...]] = {
    "sessions": ("app_name",),
    "events": ("app_name", "day"),
    "parts": ("app_name", "day"),
    "session_releases": (),
    "traced_calls": (),
    "traced_parts": (),
    "transcript_events": ("app_name",),
    "anchors": ("app_name",),
    "anchor_sessions": ("app_name",),
    "logged": ("day",),
}
# the stored facts, exported for other engines and tools; an import rebuilds its own
# (they depend on the rules of the forensics that reads them), so it reads none of these
FACTS: dict[str, tuple[str, ...]] = {name: ("app_name",) for name in FACT_TABLE_NAMES}
BATCH_ROWS = 50_000
NAME_MAX = 255  # bytes in a folder's name (ext4, APFS, NTFS): an app's partition folder


@dataclass
class Export:
    """What an export wrote, as its manifest says."""

    folder: Path
    rows: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


def export(store: Store, folder: Path, selection: Selection | None = None) -> Export:
    """Write the selected sessions' tables under `folder` (which must not hold files)."""
    selection = selection or Selection()
    require_utf8_name(folder, "write an export to {}", "Arrow writes a file",
                      "give a folder whose path is named in UTF-8")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ForensicsError(
            f"{folder} is not an empty folder: an export never mixes with other files",
            hint="give a new folder (it is created), or empty this one",
        )
    chosen = {
        "app": selection.app,
        "user": selection.user,
        "session": selection.session,
        "since": selection.since,
        "until": selection.until,
    }
    store.run(sql.load("store/export/keys").sql, chosen)
    for (app,) in store.run("SELECT DISTINCT app_name FROM export_keys ORDER BY app_name"):
        if len(f"app_name={quote(app, safe='-._~')}".encode()) > NAME_MAX:
            shown = f"{app[:40]!r}{'...' if len(app) > 40 else ''}"
            raise ForensicsError(
                f"the app name {shown} ({len(app):,} characters) is too long to be a folder "
                f"of a Parquet export (over {NAME_MAX} bytes once URI-encoded)",
                hint="export the other apps with --app NAME",
            )
    folder.mkdir(parents=True, exist_ok=True)
    result = Export(folder)
    for name, partitions in {**TABLES, **FACTS}.items():
        query = sql.load(f"store/export/{name}")
        params = {k: chosen[k] for k in query.params}
        relation = store.con.sql(query.sql, params=params or None)
        batches = relation.to_arrow_reader(batch_size=BATCH_ROWS)
        count = 0

        def counted(source: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
            nonlocal count
            for batch in source:
                count += batch.num_rows
                yield batch

        stream = pa.RecordBatchReader.from_batches(batches.schema, counted(batches))
        ds.write_dataset(
            stream,
            folder / name,
            format="parquet",
            partitioning=list(partitions) or None,
            partitioning_flavor="hive" if partitions else None,
            basename_template="part-{i}.parquet",
            existing_data_behavior="error",
            max_rows_per_file=1_000_000,
            max_rows_per_group=BATCH_ROWS,
        )
        result.rows[name] = count
    store.run("DROP TABLE IF EXISTS export_keys")
    result.manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "store_schema": SCHEMA_VERSION,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "selection": selection.as_dict(),
        "tables": {
            name: {"rows": result.rows[name], "partitioned_by": list(partitions)}
            for name, partitions in {**TABLES, **FACTS}.items()
        },
    }
    (folder / "manifest.json").write_text(json.dumps(result.manifest, indent=2) + "\n")
    return result


def read_manifest(folder: Path) -> dict[str, Any]:
    """The export's manifest, or a ForensicsError that says why the folder is not one."""
    path = folder / "manifest.json"
    if not folder.is_dir():
        raise ForensicsError(f"{storable(str(folder))} is not a folder (an export is a folder)")
    require_utf8_name(folder, "read an export from {}", "Arrow reads a file",
                      "give the folder (or a link to it) a name in UTF-8")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ForensicsError(
            f"{folder} is not a forensics Parquet export: no manifest.json",
            hint="write one with `forensics export parquet DIR`",
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ForensicsError(f"{path}: cannot read the manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ForensicsError(f"{path}: not a forensics Parquet export (format is not {FORMAT})")
    version = manifest.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ForensicsError(
            f"{path}: export format version {version!r}; this forensics reads up to "
            f"{FORMAT_VERSION}",
            hint="upgrade agent-forensics",
        )
    return manifest


def load(store: Store, folder: Path, ingest_id: int) -> dict[str, int]:
    """Insert an export's rows that the store lacks, inside the caller's transaction;
    returns the rows read per table. Every row loaded is recorded as `ingest_id`'s."""
    manifest = read_manifest(folder)
    read: dict[str, int] = {}
    for name in TABLES:
        where = folder / name
        if not where.is_dir():  # a table the export had no rows for
            read[name] = 0
            continue
        keys = (manifest["tables"].get(name) or {}).get("partitioned_by") or []
        # every key read back as the text written (inferred, app `007` became 7) and none
        # as null (a URI-encoded value is never a bare %; pyarrow's default null,
        # __HIVE_DEFAULT_PARTITION__, is a name an app may have)
        partitions = None
        if keys:
            schema = pa.schema([(key, pa.string()) for key in keys])
            partitions = ds.HivePartitioning(schema, null_fallback="%", segment_encoding="uri")
        dataset = ds.dataset(where, format="parquet", partitioning=partitions)
        read[name] = 0
        for batch in dataset.to_batches(batch_size=BATCH_ROWS):  # memory: one batch
            read[name] += batch.num_rows
            store.con.register("imported", pa.Table.from_batches([batch]))
            try:
                store.run(sql.load(f"store/import/{name}").sql, _params(name, ingest_id))
            finally:
                store.unregister("imported")
    return read


def _params(name: str, ingest_id: int) -> dict[str, int]:
    return {} if name == "parts" else {"ingest_id": ingest_id}
