"""ccusage's prices and rules, so that a Claude Code bill can be reconciled with it.

ccusage (npm `ccusage`; a Rust binary since v20, run here with `--offline`) totals Claude
Code usage by day and session. `forensics cost --ccusage-compatible` applies its rules,
read from its source (ccusage/ccusage, `rust/crates/ccusage-core/src/pricing.rs` and
`cost.rs`) and checked against the 20.0.24 binary (docs/claude-code.md lists them):

- its price table: the LiteLLM snapshot it embeds (raw-deflated JSON inside the binary,
  taken from the installed binary here, never run), then its built-in entries for
  models the snapshot lacks, then its models.dev snapshot; a model none prices costs 0;
- a model name matches its key exactly, else the longest key found in it (or it in the
  key) at word boundaries, a `.` or `@` read as `-`, a key ending in a digit not
  followed by `-<digits>` unless 8 of them (a date);
- each field billed on its own: above 200,000 tokens of that field only the excess at the
  above-200k rate (the provider bills the whole request at it once the prompt exceeds
  200,000); 5-minute writes at the cache-creation rate, 1-hour writes at 2x input;
- `speed: fast` multiplies the whole entry (6x for Opus 4.6 and 4.7, its overrides file).

Without a ccusage install, genai-prices' rates (of the call's day) are used under the
same rules, and every output says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import zlib
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import duckdb
import polars as pl
import pyarrow as pa

from .. import sql
from ..errors import ForensicsError
from ..store.arrow import rows_table
from ..store.handle import connect, raise_if_interrupted
from .prices import Unknown, genai_prices_version, list_price

ENV = "FORENSICS_CCUSAGE"
THRESHOLD = 200_000  # tokens of one field above which its excess pays the above-200k rate
CACHE_1H_MULTIPLIER = Decimal(2)  # cost.rs: a 1-hour write at twice the input rate
# pricing.rs `put_builtin_pricing` (ccusage 20.x): entries added only when the snapshot
# lacks the key; USD per token (input, output, 5-minute write, read; then above 200k)
_M = Decimal("0.000001")
BUILTIN: dict[str, tuple[Decimal, ...]] = {
    name: tuple(Decimal(str(v)) * _M for v in values)
    for name, values in {
        "claude-opus-4-5": (5, 25, 6.25, 0.5),
        "claude-opus-4-6": (5, 25, 6.25, 0.5),
        "claude-opus-4-7": (5, 25, 6.25, 0.5),
        "claude-opus-4-8": (5, 25, 6.25, 0.5),
        "claude-haiku-4-5": (1, 5, 1.25, 0.1),
        "claude-opus-4": (15, 75, 18.75, 1.5),
        "claude-3-opus": (15, 75, 18.75, 1.5),
        "claude-sonnet-4-6": (3, 15, 3.75, 0.3),
        "claude-3-sonnet": (3, 15, 3.75, 0.3),
        "claude-sonnet-4": (3, 15, 3.75, 0.3, 6, 22.5, 7.5, 0.6),
        "claude-3-5-haiku": (0.8, 4, 1.0, 0.08),
        "claude-3-5-haiku-20241022": (0.8, 4, 1.0, 0.08),
        "claude-3-haiku": (0.25, 1.25, 0.3, 0.03),
    }.items()
}
# the native packages the npm wrapper picks from (its cli.js)
_NATIVE = ("ccusage-linux-x64", "ccusage-linux-arm64", "ccusage-darwin-x64",
           "ccusage-darwin-arm64", "ccusage-win32-x64", "ccusage-win32-arm64")  # fmt: skip


@dataclass(frozen=True)
class Rates:
    """One model's rates under ccusage's rules, USD per token; `*_above` apply to a
    field's tokens beyond 200,000 (None: no tier); `fast` multiplies a fast request (None:
    not known, the request unpriced)."""

    key: str  # the table entry that priced it
    input: Decimal
    output: Decimal
    cache_write: Decimal  # 5-minute writes
    cache_read: Decimal
    input_above: Decimal | None = None
    output_above: Decimal | None = None
    cache_write_above: Decimal | None = None
    cache_read_above: Decimal | None = None
    fast: Decimal | None = Decimal(1)


def _d(value: Any) -> Decimal | None:
    """A JSON number as the exact decimal it was written as (3e-06 -> 0.000003)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _boundary(char: str) -> bool:
    return not (char.isascii() and char.isalnum())


def _numbered_suffix(key: str, suffix: str) -> bool:
    """After a key ending in a digit: `-<digits>` (another version), unless 8 (a date)."""
    if not key[-1:].isdigit() or suffix[:1] not in ("-", "."):
        return False
    rest = suffix[1:]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0:
        return False
    after = rest[digits : digits + 1]
    return not (digits == 8 and (after == "" or _boundary(after)))


def _contains(value: str, key: str) -> bool:
    start = 0
    while True:
        i = value.find(key, start)
        if i < 0:
            return False
        suffix = value[i + len(key) :]
        if (i == 0 or _boundary(value[i - 1])) and (
            suffix == "" or (_boundary(suffix[0]) and not _numbered_suffix(key, suffix))
        ):
            return True
        start = i + 1


def _normal(name: str) -> str:
    return name.replace(".", "-").replace("@", "-")


def _matches(key: str, model: str) -> bool:
    if _contains(model, key) or _contains(key, model):
        return True
    nm, nk = _normal(model), _normal(key)
    return _contains(nm, nk) or _contains(nk, nm)


def _fuzzy(keys: Any, model: str, exclude: set[str] | frozenset[str] = frozenset()) -> str | None:
    found = [k for k in keys if k not in exclude and _matches(k, model)]
    return min(found, key=lambda k: (-len(k), k)) if found else None


@dataclass
class PriceTable:
    """ccusage's price table: where it came from, its entries, and its lookup."""

    source: str
    primary: dict[str, Rates]  # the LiteLLM snapshot, and the built-ins it lacks
    models_dev: dict[str, Rates] = field(default_factory=dict)
    exact_only: frozenset[str] = frozenset()
    fast: dict[str, Decimal] = field(default_factory=dict)  # normalized prefix -> multiplier

    def find(self, model: str) -> Rates | None:
        """The entry ccusage prices `model` with (pricing.rs `PricingMap::find`)."""
        exact_only = model in self.exact_only or _normal(model) in {
            _normal(k) for k in self.exact_only
        }
        found = self.primary.get(model)
        if found is None and not exact_only:
            key = _fuzzy(self.primary, model)
            found = self.primary[key] if key else None
        if found is None:
            found = self.models_dev.get(model) or next(
                (self.models_dev[k] for k in self.exact_only
                 if _normal(k) == _normal(model) and k in self.models_dev),
                None,
            )  # fmt: skip
        if found is None and not exact_only:
            key = _fuzzy(self.models_dev, model, self.exact_only)
            found = self.models_dev[key] if key else None
        if found is None:
            return None
        return Rates(**{**found.__dict__, "fast": self._fast(model, found)})

    def _fast(self, model: str, rates: Rates) -> Decimal | None:
        if rates.fast != 1:
            return rates.fast
        for part in re.split(r"[/:]", _normal(model)):
            for base, multiplier in self.fast.items():
                i = part.rfind(base)
                if i >= 0 and (part[i:] == base or part[i + len(base) : i + len(base) + 1] == "-"):
                    return multiplier
        return Decimal(1)


def _litellm(entry: dict[str, Any], key: str) -> Rates | None:
    """A compact snapshot entry (i, o, cc, cr, ia, oa, cca, cra, fast) as rates; a
    missing write rate is 1.25x input, a missing read rate 0.1x (pricing.rs)."""
    i, o = _d(entry.get("i")), _d(entry.get("o"))
    if i is None or o is None:
        return None
    cc, cr = _d(entry.get("cc")), _d(entry.get("cr"))
    fast = _d(entry.get("fast"))
    return Rates(
        key,
        i,
        o,
        cc if cc is not None else i * Decimal("1.25"),
        cr if cr is not None else i * Decimal("0.1"),
        _d(entry.get("ia")),
        _d(entry.get("oa")),
        _d(entry.get("cca")),
        _d(entry.get("cra")),
        fast if fast is not None else Decimal(1),
    )


def _models_dev(entry: dict[str, Any], key: str) -> Rates | None:
    """A models.dev entry (USD per million tokens) as rates (its tiers are not used: no
    Claude model has one in ccusage 20.0.24's snapshot)."""
    cost = entry.get("cost")
    if not isinstance(cost, dict):
        return None
    i, o = _d(cost.get("input")), _d(cost.get("output"))
    if i is None or o is None or (i == 0 and o == 0):
        return None
    i, o = i * _M, o * _M
    cw, cr = _d(cost.get("cache_write")), _d(cost.get("cache_read"))
    return Rates(
        f"models.dev {key}",
        i,
        o,
        cw * _M if cw is not None else i * Decimal("1.25"),
        cr * _M if cr is not None else i * Decimal("0.1"),
    )


def _rodata(data: bytes) -> tuple[int, int]:
    """Where an ELF binary's read-only data is (its embedded files): (start, end); the
    whole file for anything else."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # 64-bit little-endian
        return 0, len(data)
    shoff, = struct.unpack_from("<Q", data, 0x28)  # fmt: skip
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    try:
        names_at = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
        for n in range(shnum):
            base = shoff + n * shentsize
            name_off = struct.unpack_from("<I", data, base)[0]
            name = data[names_at + name_off : data.index(b"\0", names_at + name_off)]
            if name == b".rodata":
                offset, size = struct.unpack_from("<QQ", data, base + 0x18)
                return offset, offset + size
    except (struct.error, ValueError):
        pass
    return 0, len(data)


def _embedded_json(data: bytes, start: int, end: int) -> dict[str, Any]:
    """The raw-deflated JSON objects embedded between `start` and `end`, by what they are:
    `litellm` (the compact snapshot) and `models_dev`."""
    found: dict[str, Any] = {}
    for offset in range(start, end):
        if (data[offset] >> 1) & 3 not in (1, 2):  # a deflate block's type: fixed or dynamic
            continue
        try:
            head = zlib.decompressobj(-15).decompress(data[offset : offset + 256], 64)
        except zlib.error:
            continue
        if not head.startswith(b'{"'):
            continue
        inflater = zlib.decompressobj(-15)
        try:
            raw = inflater.decompress(data[offset : offset + 8_000_000])
            parsed = json.loads(raw) if inflater.eof else None
        except (zlib.error, ValueError):
            continue
        if not isinstance(parsed, dict) or not parsed:
            continue
        first = next(iter(parsed.values()))
        if isinstance(first, dict) and "i" in first and "o" in first:
            found.setdefault("litellm", parsed)
        elif isinstance(first, dict) and "cost" in first:
            found.setdefault("models_dev", parsed)
        if len(found) == 2:
            break
    return found


def _fast_overrides(data: bytes) -> dict[str, Decimal]:
    """fast-multiplier-overrides.json, embedded as text: its normalized prefixes."""
    found = re.search(rb'\{\s*"exact"\s*:', data)
    if found is None:
        return {}
    try:
        parsed, _ = json.JSONDecoder().raw_decode(data[found.start() :].decode("utf-8", "replace"))
    except ValueError:
        return {}
    prefixes = parsed.get("normalized_prefix") if isinstance(parsed, dict) else None
    return {
        k: d for k, v in (prefixes or {}).items() if isinstance(k, str) and (d := _d(v)) is not None
    }


def _version(binary: Path) -> str:
    """The native package's version (its package.json beside bin/)."""
    try:
        info = json.loads((binary.parent.parent / "package.json").read_text(encoding="utf-8"))
        return str(info.get("version") or "?")
    except (OSError, ValueError, AttributeError):
        return "?"


def find_binary(given: Path | None = None, environ: dict[str, str] | None = None) -> Path | None:
    """ccusage's native binary: `given` (the binary, its package folder, or a folder with
    node_modules), else $FORENSICS_CCUSAGE, else the `ccusage` on PATH (the npm wrapper,
    beside which npm installed the binary). None when there is none."""
    env = os.environ if environ is None else environ
    candidates: list[Path] = []
    explicit = given or (Path(env[ENV]) if env.get(ENV) else None)
    if explicit is not None:
        candidates.append(explicit.expanduser())
    else:
        on_path = shutil.which("ccusage", path=env.get("PATH"))
        if on_path:
            candidates.append(Path(on_path).resolve())
    for start in candidates:
        for path in _binaries_near(start):
            if path.is_file() and _magic(path) in _EXECUTABLES:
                return path
    if explicit is not None:
        raise ForensicsError(
            f"no ccusage binary at {explicit}",
            hint="give the binary (node_modules/@ccusage/ccusage-linux-x64/bin/ccusage), its "
            "package or a folder holding node_modules; `npm install ccusage` installs it",
        )
    return None


_EXECUTABLES = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"MZ\x90\x00")  # ELF, Mach-O, PE


def _magic(path: Path) -> bytes:
    """A file's first four bytes: what kind of executable it is (not the npm wrapper)."""
    try:
        with path.open("rb") as handle:
            return handle.read(4)
    except OSError:
        return b""


def _binaries_near(start: Path) -> list[Path]:
    """Where a native binary may be, from a path: itself, a package's bin/, a
    node_modules' @ccusage/ packages, the wrapper's own node_modules."""
    found = [start, start / "bin" / "ccusage"]
    roots = [start, start / "node_modules", *start.parents]
    for root in roots:
        base = root if root.name == "node_modules" else root / "node_modules"
        found += [base / "@ccusage" / name / "bin" / "ccusage" for name in _NATIVE]
        if root.name == "node_modules":
            break
    return found


@cache
def read_table(binary: Path) -> PriceTable:
    """ccusage's own price table, taken from its binary (not run)."""
    try:
        data = binary.read_bytes()
    except OSError as e:
        raise ForensicsError(f"cannot read the ccusage binary {binary}: {e}") from None
    start, end = _rodata(data)
    embedded = _embedded_json(data, start, end)
    if "litellm" not in embedded:
        raise ForensicsError(
            f"no price table found in {binary}",
            hint="this reads ccusage 20.x's native binary; give --ccusage another install",
        )
    primary = {
        k: r for k, v in embedded["litellm"].items()
        if isinstance(v, dict) and (r := _litellm(v, k)) is not None
    }  # fmt: skip
    for key, values in BUILTIN.items():
        if key not in primary:
            tier = values[4:] if len(values) > 4 else (None,) * 4
            primary[key] = Rates(f"built-in {key}", *values[:4], *tier)
    dev = embedded.get("models_dev", {})
    models_dev = {
        k: r for k, v in dev.items() if isinstance(v, dict) and (r := _models_dev(v, k)) is not None
    }
    exact_only = frozenset(k for k, v in dev.items() if isinstance(v, dict) and v.get("exactOnly"))
    return PriceTable(
        f"ccusage {_version(binary)} price table ({binary})",
        primary,
        models_dev,
        exact_only,
        _fast_overrides(data[start:end]),
    )


# ---------------------------------------------------------------------------
# Totals as ccusage gives them (queries/cost/ccusage.sql)
# ---------------------------------------------------------------------------

_PER_TOKEN = pa.decimal128(38, 18)
RATES_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("day", pa.date32()),  # null: the rate of every day (ccusage's table is undated)
        ("price_key", pa.string()),
        ("input", _PER_TOKEN),
        ("output", _PER_TOKEN),
        ("cache_write", _PER_TOKEN),
        ("cache_read", _PER_TOKEN),
        ("input_above", _PER_TOKEN),
        ("output_above", _PER_TOKEN),
        ("cache_write_above", _PER_TOKEN),
        ("cache_read_above", _PER_TOKEN),
        ("fast", _PER_TOKEN),
    ]
)
_SCALE = Decimal(10) ** -18


def _q(value: Decimal | None) -> Decimal | None:
    """A rate as the query holds it (18 places); a rate finer than that is refused."""
    if value is None:
        return None
    exact = value.quantize(_SCALE)
    if exact != value:
        raise ForensicsError(f"the rate {value} has more than 18 decimal places")
    return exact


def _row(model: str, day: date | None, rates: Rates) -> dict[str, object]:
    return {
        "model": model,
        "day": day,
        "price_key": rates.key,
        **{
            name: _q(getattr(rates, name))
            for name in ("input", "output", "cache_write", "cache_read", "input_above",
                         "output_above", "cache_write_above", "cache_read_above", "fast")
        },
    }  # fmt: skip


def list_rates(model: str, day: date) -> Rates | None:
    """genai-prices' rates of `model` on `day` as ccusage would use them: the base tier,
    and its 200,000-token tier's rates for the excess of each field; genai-prices has no
    fast-mode rates, so a fast request is unpriced (at 0, as ccusage counts one)."""
    found = list_price(model, day)
    if isinstance(found, Unknown):
        return None
    base = found.tiers[0]
    above = next((t for t in found.tiers[1:] if t.above == THRESHOLD), None)
    per = Decimal(1_000_000)
    return Rates(
        f"genai-prices {found.price_model}",
        base.input / per,
        base.output / per,
        base.cache_write / per,
        base.cache_read / per,
        above.input / per if above else None,
        above.output / per if above else None,
        above.cache_write / per if above else None,
        above.cache_read / per if above else None,
        fast=None,
    )


class Queries(Protocol):
    """Where the ccusage queries run: the store's facts (analysis.stored.Facts), or
    TranscriptUsage."""

    def query(self, name: str, tables: dict[str, pa.Table] | None = None,
              **params: Any) -> pl.DataFrame: ...  # fmt: skip


class TranscriptUsage:
    """Usage rows read straight from transcripts (sources/files/claude_code_usage.py,
    `transcript_events`' columns that the ccusage queries read), queried as the store's
    facts are: the same queries, over an in-memory DuckDB, every session in scope."""

    def __init__(self, rows: pa.Table):
        self.con: duckdb.DuckDBPyConnection = connect()  # offline, as every connection
        self.con.register("transcript_events", rows)
        self.con.execute(
            "CREATE TEMP TABLE scope_sessions AS "
            "SELECT DISTINCT app_name, user_id, session_id FROM transcript_events"
        )

    def close(self) -> None:
        self.con.close()

    def query(self, name: str, tables: dict[str, pa.Table] | None = None,
              **params: Any) -> pl.DataFrame:  # fmt: skip
        query = sql.load(name)
        for table_name, table in (tables or {}).items():
            self.con.register(table_name, table)
        try:
            found = self.con.sql(query.sql, params={k: params.get(k) for k in query.params})
            frame = pl.from_arrow(found.to_arrow_table())
        except (duckdb.InterruptException, RuntimeError) as e:
            raise_if_interrupted(e)
            raise
        finally:
            for table_name in tables or {}:
                self.con.unregister(table_name)
        assert isinstance(frame, pl.DataFrame)
        return frame


def reconciled(
    queries: Queries, by: str, binary: Path | None, window: tuple[float | None, float | None]
) -> pl.DataFrame:
    """The totals of `queries`' usage by `by` (day or session) as ccusage gives them,
    priced with the table of its install (`binary`, else one found; else genai-prices
    under its rules), in [since, until) of `window` (epoch seconds)."""
    return Reconciliation(queries, table_of(binary), window).totals(by)


def table_of(binary: Path | None) -> PriceTable | None:
    """The price table of ccusage's install (`binary`, else one found), None without."""
    found = find_binary(binary)
    return read_table(found) if found is not None else None


class Reconciliation:
    """The selection's Claude Code usage totalled as ccusage totals it, priced with its
    table (`table`) or, without one, genai-prices' rates under its rules."""

    def __init__(
        self,
        facts: Queries,
        table: PriceTable | None,
        window: tuple[float | None, float | None] = (None, None),
    ):
        self.facts = facts
        self.table = table
        self.window = window

    @property
    def price_source(self) -> str:
        if self.table is not None:
            return self.table.source
        return (
            f"genai-prices {genai_prices_version()} under ccusage's rules, fast requests "
            "unpriced (no ccusage install found: give --ccusage)"
        )

    def _rates(self) -> pa.Table:
        rows: list[dict[str, object]] = []
        looked: set[str] = set()  # ccusage's table prices a model alike on every day
        for model, day in self.facts.query("cost/ccusage_models").iter_rows():
            if model == "<synthetic>":
                continue
            if self.table is not None:
                if model in looked:
                    continue
                looked.add(model)
                found = self.table.find(model)
                if found is not None:
                    rows.append(_row(model, None, found))
            else:
                found = list_rates(model, day)
                if found is not None:
                    rows.append(_row(model, day, found))
        return rows_table(rows, RATES_SCHEMA)

    def totals(self, by: str) -> pl.DataFrame:
        """By `day` (UTC) or `session` (ccusage's: the project and session its path names)."""
        since, until = self.window
        window = rows_table(
            [{"since": since, "until": until}],
            pa.schema([("since", pa.float64()), ("until", pa.float64())]),
        )
        frame = self.facts.query(
            "cost/ccusage", {"ccusage_rates": self._rates(), "cost_window": window}, by=by
        )
        return frame.with_columns(pl.lit(self.price_source).alias("price_source"))
