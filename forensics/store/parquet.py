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
files, and back, in Arrow batches. `read_export` checks the manifest and the files
against it (footers only), `load` each file's columns against the store's, and inserts
what the store does not hold yet, as one ingest; an export written before `logged/` travelled
has none, and loads as it did.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import quote, unquote_to_bytes

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .. import sql
from ..errors import ForensicsError
from ..folders import written_whole
from ..sanitize import require_utf8_name, storable
from ..selection import Selection
from .arrow import column as arrow_column
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
    files: dict[str, list[PartFile]] = field(default_factory=dict)  # as read back
    notes: list[str] = field(default_factory=list)  # what a read back leaves out


def export(store: Store, folder: Path, selection: Selection | None = None) -> Export:
    """Write the selected sessions' tables under `folder` (which must not hold files)."""
    selection = selection or Selection()
    require_utf8_name(folder, "write an export to {}", "Arrow writes a file",
                      "give a folder whose path is named in UTF-8")
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
    with written_whole(folder, "an export never mixes with other files", {*TABLES, *FACTS}):
        try:
            return _written(store, folder, chosen, selection)
        except OSError as e:  # (Arrow's own say no file: this names the export)
            raise ForensicsError(f"cannot write the export to {folder}: {e.strerror or e}",
                                 hint="nothing of it is left there") from e  # fmt: skip


def _written(
    store: Store, folder: Path, chosen: dict[str, Any], selection: Selection
) -> Export:
    """Each table's Parquet files of the sessions in `export_keys`, then the manifest."""
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
    """The export's manifest, once the folder is checked to hold what it lists
    (`read_export`), or a ForensicsError that says why it is not such an export."""
    return read_export(folder).manifest


def read_export(folder: Path) -> Export:
    """The export at `folder`: its manifest, checked, and each table's files, every one
    of them a Parquet file in its partition folder, as many rows in all as the manifest
    says (a folder copied in part is refused, not loaded as an export of fewer rows).
    Only the files' footers are read; `load` reads their rows."""
    manifest = _manifest(folder)
    result = Export(folder, manifest=manifest)
    tables = manifest["tables"]
    for name, keys in TABLES.items():
        files = _table_files(folder / name, name, keys, result.notes)
        found = sum(part.rows for part in files)
        if name not in tables:  # written before the table travelled: it has no files
            if files:
                raise ForensicsError(
                    f"{storable(str(folder / name))}: the files of a table that "
                    f"{folder / 'manifest.json'} does not list",
                    hint="remove them, or export again with `forensics export parquet DIR`",
                )
            continue
        listed = tables[name]["rows"]
        if found != listed:
            why = "an incomplete copy?" if found < listed else "files added since?"
            raise ForensicsError(
                f"{storable(str(folder))}: manifest.json lists {listed:,} rows of {name}, "
                f"the export holds {found:,} ({why})",
                hint="copy the whole export again, or export again with "
                "`forensics export parquet DIR`",
            )
        result.files[name] = files
        result.rows[name] = found
    return result


def _manifest(folder: Path) -> dict[str, Any]:
    """manifest.json of the export at `folder`, of a format, version, store schema and
    table list this forensics reads."""
    path = folder / "manifest.json"
    if not folder.exists():
        raise ForensicsError(
            f"{storable(str(folder))} does not exist",
            hint="give the folder `forensics export parquet DIR` wrote",
        )
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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ForensicsError(f"{path}: cannot read the manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ForensicsError(f"{path}: not a forensics Parquet export (format is not {FORMAT})")
    again = "export again with `forensics export parquet DIR`"
    version = manifest.get("version")
    if _count(version) and version > FORMAT_VERSION:
        raise ForensicsError(
            f"{path}: export format version {version!r}; this forensics reads up to "
            f"{FORMAT_VERSION}",
            hint="upgrade agent-forensics",
        )
    if not _count(version) or version < 1:  # (True is an int to Python, not a version)
        raise ForensicsError(
            f"{path}: export format version {_shown(version)} is no version "
            f"(this forensics reads {_versions(FORMAT_VERSION)})",
            hint=again,
        )
    schema = manifest.get("store_schema")
    if not _count(schema) or schema < 1:
        raise ForensicsError(
            f"{path}: store_schema {_shown(schema)} is no store schema version "
            f"(this forensics reads {_versions(SCHEMA_VERSION)})",
            hint=again,
        )
    if schema > SCHEMA_VERSION:  # its columns may mean what this forensics cannot know
        raise ForensicsError(
            f"{path}: exported from store schema {schema}; this forensics reads up to "
            f"{SCHEMA_VERSION}",
            hint="upgrade agent-forensics",
        )
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        raise ForensicsError(
            f"{path}: `tables` is {_shown(tables)}, not an object of the tables exported",
            hint=again,
        )
    for name, keys in TABLES.items():
        if name not in tables:
            continue
        about = tables[name]
        rows = about.get("rows") if isinstance(about, dict) else None
        if not _count(rows) or rows < 0:
            raise ForensicsError(
                f"{path}: tables.{name} is {_shown(about)}, not its rows and partitions "
                '(e.g. {"rows": 47, "partitioned_by": [...]})',
                hint=again,
            )
        if about.get("partitioned_by") != list(keys):
            raise ForensicsError(
                f"{path}: tables.{name}.partitioned_by is {_shown(about.get('partitioned_by'))}"
                f"; this forensics writes and reads the {name} table by {list(keys)}",
                hint=again,
            )
    return manifest


def _count(value: object) -> TypeGuard[int]:
    """`value` is a whole number written as one (JSON's true is no count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _versions(newest: int) -> str:
    return "1" if newest == 1 else f"1 to {newest}"


def _shown(value: object) -> str:
    """A manifest's value in a message, cut short (the file is anyone's)."""
    text = storable(json.dumps(value) if value is not None else "missing")
    return text if len(text) <= 60 else f"{text[:60]}..."


@dataclass(frozen=True)
class PartFile:
    """One Parquet file of an exported table, as its footer and its folders say."""

    path: Path
    partition: dict[str, str]  # each partition key's value, from its folder's name
    rows: int
    schema: pa.Schema


def _table_files(where: Path, name: str, keys: tuple[str, ...], notes: list[str]) -> list[PartFile]:
    """The files of the table `name` under `where`, in path order, each read as far as
    its footer. A link to a folder is not followed (a loop would be read again and
    again); names Arrow skips (`.`, `_`: a writer's own files) are skipped."""
    if not where.exists():
        return []  # a table the export had no rows for (the rows are compared after)
    if not where.is_dir():
        raise ForensicsError(f"{storable(str(where))} is not a folder (the {name} table's files)")
    expected = "/".join([name, *(f"{key}=VALUE" for key in keys), "FILE"])
    files, seen = [], set()
    for root, dirs, names in os.walk(where, onerror=_unreadable):
        linked = {d for d in dirs if os.path.islink(os.path.join(root, d))}
        notes.extend(f"{storable(os.path.join(root, d))}: a link to a folder, not followed"
                     for d in sorted(linked))
        dirs[:] = sorted(d for d in dirs if d not in linked and not _skipped(d))
        for file in sorted(n for n in names if not _skipped(n)):
            path = Path(root, file)
            real = path.resolve()
            if real in seen:  # a link to a file read already
                continue
            seen.add(real)
            folders = path.parent.relative_to(where).parts
            if len(folders) != len(keys) or not all(
                segment.startswith(f"{key}=") for segment, key in zip(folders, keys, strict=True)
            ):
                raise ForensicsError(
                    f"{storable(str(path))}: not where an export keeps the {name} table's "
                    f"files ({expected})",
                    hint="an export's folders are as `forensics export parquet` wrote them",
                )
            partition = {}
            for segment, key in zip(folders, keys, strict=True):
                try:  # URI-encoded when written: a value is never a path
                    partition[key] = unquote_to_bytes(segment[len(key) + 1 :]).decode("utf-8")
                except UnicodeError:
                    raise ForensicsError(
                        f"{storable(str(path.parent))}: the {name} table's {key} in this "
                        "folder's name is not UTF-8 text once URI-decoded",
                    ) from None
            try:
                footer = pq.read_metadata(path)
                schema = footer.schema.to_arrow_schema()
            except (OSError, ValueError, pa.ArrowException, UnicodeError) as e:
                raise ForensicsError(
                    f"{storable(str(path))}: not a Parquet file of the {name} table ({e})",
                    hint="copy the export again, or remove the file if it is not the export's",
                ) from None
            files.append(PartFile(path, partition, footer.num_rows, schema))
    return files


def _skipped(name: str) -> bool:
    return name.startswith((".", "_"))


def _unreadable(error: OSError) -> None:
    raise ForensicsError(f"{storable(str(error.filename))}: cannot read the folder ({error})")


# what a stored column takes from a file: any width of the same kind (Spark or polars
# may write large strings or nanosecond times), a count where a DOUBLE is stored, nulls
_KINDS = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_timestamp, pa.types.is_date)


def _fits(found: pa.DataType, wanted: pa.DataType) -> bool:
    if pa.types.is_null(found):
        return True
    if _is_list(wanted):
        return _is_list(found) and _fits(found.value_type, wanted.value_type)
    if _is_text(wanted):
        return _is_text(found)
    if pa.types.is_floating(wanted):
        return pa.types.is_floating(found) or pa.types.is_integer(found)
    for kind in _KINDS:
        if kind(wanted):
            return bool(kind(found))
    return bool(found == wanted)


def _is_list(kind: pa.DataType) -> bool:
    return bool(pa.types.is_list(kind) or pa.types.is_large_list(kind))


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_string_view(kind))


@dataclass(frozen=True)
class _Stored:
    """A store table's columns: the Arrow type of each, and those no row may lack."""

    types: dict[str, pa.DataType]
    required: set[str]


def _stored(store: Store, name: str) -> _Stored:
    # `name` is one of TABLES, never data
    schema = store.con.sql(f"SELECT * FROM {name} LIMIT 0").to_arrow_table().schema  # noqa: S608
    required = store.run(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND is_nullable = 'NO' AND column_default IS NULL",
        [name],
    )
    return _Stored({f.name: f.type for f in schema}, {column for (column,) in required})


# DuckDB's refusals of a file's rows (a null id, a count too large for its column): the
# file is named; anything else (a full disk, a stop) is not the file's
_REFUSED = (duckdb.ConstraintException, duckdb.ConversionException, duckdb.BinderException,
            duckdb.InvalidInputException, duckdb.OutOfRangeException,
            duckdb.TypeMismatchException)


def load(store: Store, export: Export, ingest_id: int) -> tuple[dict[str, int], list[str]]:
    """Insert the rows of an export (`read_export`) that the store lacks, inside the
    caller's transaction; returns the rows read per table and notes on what was not
    read (a column this forensics' store has not, a link to a folder). Every row loaded
    is recorded as `ingest_id`'s."""
    read: dict[str, int] = {}
    notes = list(export.notes)
    for name, keys in TABLES.items():
        read[name] = 0
        files = export.files.get(name, [])
        if not files:
            continue
        stored, ignored = _stored(store, name), set()
        for part in files:
            columns, extra = _columns(part, name, keys, stored)
            ignored |= extra
            for batch in _batches(part, name, columns):  # memory: one batch
                read[name] += batch.num_rows
                store.con.register("imported", _with_keys(batch, part, stored))
                try:
                    store.run(sql.load(f"store/import/{name}").sql, _params(name, ingest_id))
                except _REFUSED as e:
                    raise ForensicsError(
                        f"{storable(str(part.path))}: the {name} table's rows cannot be "
                        f"stored ({str(e).splitlines()[0]})",
                        hint="copy the export again, or export again with "
                        "`forensics export parquet DIR`",
                    ) from None
                finally:
                    store.unregister("imported")
        if ignored:
            notes.append(
                f"{name}: column{'s' if len(ignored) > 1 else ''} {', '.join(sorted(ignored))} "
                "not read (this forensics' store has no such column; a newer forensics "
                "wrote the export?)"
            )
    return read, notes


def _columns(
    part: PartFile, name: str, keys: tuple[str, ...], stored: _Stored
) -> tuple[list[str], set[str]]:
    """The columns of `part` to read, and those the store has not (not read). A
    partition key is its folder's; `ingest_id` is the ingest's, never the file's."""
    found = {f.name: f.type for f in part.schema}
    for column in sorted(stored.required - found.keys() - set(keys) - {"ingest_id"}):
        raise ForensicsError(
            f"{storable(str(part.path))}: the {name} table's column {column} is missing",
            hint="copy the export again, or export again with `forensics export parquet DIR`",
        )
    chosen, extra = [], set()
    for column, kind in found.items():
        if column in keys or column == "ingest_id":
            continue
        if column not in stored.types:
            extra.add(column)
            continue
        if not _fits(kind, stored.types[column]):
            raise ForensicsError(
                f"{storable(str(part.path))}: the {name} table's column {column} is {kind}, "
                f"not {stored.types[column]}",
                hint="copy the export again, or export again with `forensics export parquet DIR`",
            )
        chosen.append(column)
    return chosen, extra


def _batches(part: PartFile, name: str, columns: list[str]) -> Iterator[pa.RecordBatch]:
    try:
        with pq.ParquetFile(part.path) as reader:
            yield from reader.iter_batches(batch_size=BATCH_ROWS, columns=columns)
    except (OSError, ValueError, pa.ArrowException) as e:  # damaged inside (a data page)
        raise ForensicsError(
            f"{storable(str(part.path))}: cannot read the {name} table's rows ({e})",
            hint="copy the export again, or export again with `forensics export parquet DIR`",
        ) from None


def _with_keys(batch: pa.RecordBatch, part: PartFile, stored: _Stored) -> pa.Table:
    """`batch` with its partition keys as columns of text, and a null `ingest_id` where
    the store keeps one (the import's SQL puts the ingest's own)."""
    table = pa.Table.from_batches([batch])
    for at, found in enumerate(table.schema):
        if pa.types.is_timestamp(found.type) and found.type.tz is not None:
            # an instant (Spark writes its timestamps so): the store keeps UTC without a
            # zone, and DuckDB puts a zoned time into it in the machine's own zone
            naive = table.column(at).cast(pa.timestamp(found.type.unit))
            table = table.set_column(at, found.name, naive)
    for key, value in part.partition.items():
        # (store.arrow's column: pa.array and pa.scalar import pandas where installed)
        table = table.append_column(key, arrow_column([value] * batch.num_rows, pa.string()))
    if "ingest_id" in stored.types:
        table = table.append_column("ingest_id", pa.nulls(batch.num_rows, pa.int64()))
    return table


def _params(name: str, ingest_id: int) -> dict[str, int]:
    return {} if name == "parts" else {"ingest_id": ingest_id}
