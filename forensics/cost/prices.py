"""Which price applies to a model on a day, and where it came from.

Prices come from genai-prices (its bundled data, pinned; its updater is never started)
looked up with the request's UTC day and the provider the model name routes to, or
from a user's TOML file of dated overrides and aliases, which take precedence
(docs/cost.md). A model neither knows has an unknown price, never zero.

Rates are USD per million tokens, exact Decimals. A price is a list of tiers: the base
rates (`above` 0), and for a long-context cliff the rates that apply to the whole
request once its input tokens exceed `above`, as genai-prices models them.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ..errors import TOML_NUMBER_TOO_LONG, ForensicsError
from ..sanitize import not_utf8, storable

RATES = ("input", "cache_read", "cache_write", "cache_write_1h", "output")
# genai-prices' price keys for the rates above, in the same order; and its request fee
_KEYS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_mtok")
_REQUESTS = "requests_kcount"  # USD per 1,000 requests
PLACES = 12  # a rate per MTok has at most this many decimal places: exact per token
FAST = " (fast)"  # how a fast-mode request's model is named for its price (cost/calls.sql)
MAX_RATE = Decimal(10) ** 9  # USD per MTok: anything above is a typo, not a price
MAX_ABOVE = 2**63 - 1  # a tier's `above` is a BIGINT where calls are priced (billed.py)
# LiteLLM's provider prefixes (model names such as `bedrock/...`) -> genai-prices' ids
_PREFIXES = {
    "anthropic": "anthropic",
    "bedrock": "aws",
    "bedrock_converse": "aws",
    "gemini": "google",
    "vertex_ai": "google",
    "vertex_ai_beta": "google",
    "google": "google",
    "openai": "openai",
    "azure": "azure",
    "azure_ai": "azure",
    "mistral": "mistral",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x-ai",
    "cohere": "cohere",
    "together_ai": "together",
    "fireworks_ai": "fireworks",
    "openrouter": "openrouter",
    "perplexity": "perplexity",
}
# a Bedrock model id: an optional region or profile prefix, then the vendor
_BEDROCK = re.compile(
    r"^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|"
    r"qwen|writer|openai)\.[a-z0-9]"
)


@cache
def genai_prices_version() -> str:
    """The installed release (read once: reading a package's metadata each time a model
    was looked up was 30% of an ingest that loaded nothing new)."""
    return version("genai-prices")


@dataclass(frozen=True)
class Tier:
    """The rates (USD per million tokens) that apply once input exceeds `above` tokens."""

    above: int
    input: Decimal
    cache_read: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal
    output: Decimal
    requests_k: Decimal = Decimal(0)  # USD per 1,000 requests (a fee per call)


@dataclass(frozen=True)
class Price:
    model: str  # as the events name it
    provider: str
    price_model: str  # the model the price list prices
    source: str  # "genai-prices 0.2.3", or the override file and entry
    since: date | None  # the day this price started (None: as long as the list knows)
    tiers: tuple[Tier, ...]  # by `above`, the base first
    note: str = ""

    def tier(self, input_tokens: int) -> Tier:
        """The tier a request of `input_tokens` input tokens pays (a cliff: all of it)."""
        chosen = self.tiers[0]
        for tier in self.tiers[1:]:
            if input_tokens > tier.above:
                chosen = tier
        return chosen


@dataclass(frozen=True)
class Unknown:
    model: str
    reason: str


def route(model: str) -> tuple[str | None, str]:
    """The provider a model name is priced under (None: let the list find one), and the
    name to look up: `bedrock/x` and `us.anthropic.x-v1:0` are AWS's, `gemini-*` Google's,
    `claude-*` Anthropic's, a Vertex resource name its last segment."""
    name = model.strip()
    low = name.lower()
    if "/models/" in low or low.startswith("models/"):  # projects/.../models/gemini-2.5-pro
        name = name.rsplit("/", 1)[-1]
        low = name.lower()
    if "/" in low:
        prefix, rest = name.split("/", 1)
        provider = _PREFIXES.get(prefix.lower())
        if provider is not None:
            if provider == "google" and rest.lower().startswith("claude"):
                return "anthropic", rest  # Claude on Vertex: Anthropic's list prices
            return provider, rest
    if _BEDROCK.match(low):
        return "aws", name
    if low.startswith("gemini"):
        return "google", name
    if low.startswith("claude"):
        return "anthropic", name
    return None, name


@cache
def _snapshot() -> Any:
    from genai_prices.data_snapshot import get_snapshot

    return get_snapshot()


def _decimal(value: Any) -> Decimal | None:
    return value if isinstance(value, Decimal) else None


def _tiers_of(model_price: Any) -> tuple[Tier, ...] | str:
    """A genai-prices ModelPrice as tiers (or why it cannot be): a rate the list lacks
    falls back as genai-prices bills it (a cache read or write at the input rate, a 1h
    write at the 5-minute rate, no output rate: output free)."""
    from genai_prices.types import TieredPrices

    values = {key: getattr(model_price, key, None) for key in _KEYS}
    if values["input_mtok"] is None:
        return "the price list has no input token rate for it"
    starts = sorted(
        {0}
        | {t.start for v in values.values() if isinstance(v, TieredPrices) for t in v.tiers}
    )

    def at(key: str, above: int) -> Decimal | None:
        value = values[key]
        if isinstance(value, TieredPrices):
            rate = value.base
            for t in value.tiers:
                if t.start <= above and above > 0:
                    rate = t.price
            return rate
        return _decimal(value)

    requests_k = _decimal(getattr(model_price, _REQUESTS, None)) or Decimal(0)
    return tuple(
        _tier(above, {r: at(k, above) for r, k in zip(RATES, _KEYS, strict=True)}, requests_k)
        for above in starts
    )


def list_price(model: str, day: date, provider: str | None = None) -> Price | Unknown:
    """The genai-prices price of `model` on `day` (UTC), routed to its provider."""
    routed, ref = route(model)
    provider = provider or routed
    try:
        found_provider, info = _snapshot().find_provider_model(ref, None, provider, None)
    except LookupError:
        where = f" at provider {provider}" if provider else ""
        return Unknown(model, f"genai-prices {genai_prices_version()} does not know it{where}")
    since = None
    if isinstance(info.prices, list):
        from genai_prices.types import StartDateConstraint

        for conditional in info.prices:
            if conditional.constraint is not None and not isinstance(
                conditional.constraint, StartDateConstraint
            ):
                return Unknown(model, "its list price depends on the time of day (not priced)")
        at = datetime(day.year, day.month, day.day, tzinfo=UTC)
        for conditional in reversed(info.prices):
            if conditional.constraint is None or conditional.constraint.active(at):
                since = getattr(conditional.constraint, "start_date", None)
                break
        model_price = info.get_prices(at)
    else:
        model_price = info.prices
    tiers = _tiers_of(model_price)
    if isinstance(tiers, str):
        return Unknown(model, tiers)
    return Price(
        model,
        found_provider.id,
        info.id,
        f"genai-prices {genai_prices_version()}",
        since,
        tiers,
    )


# ---------------------------------------------------------------------------
# A user's overrides: dated contracted rates, and aliases
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    where: str  # "prices.toml price[2]"
    model: str  # lower case; a trailing "*" matches as a prefix
    provider: str | None
    since: date | None
    until: date | None  # exclusive
    tiers: tuple[Tier, ...]
    note: str

    def matches(self, model: str, provider: str | None, day: date) -> bool:
        name = model.strip().lower()
        if self.model.endswith("*"):
            if not name.startswith(self.model[:-1]):
                return False
        elif name != self.model:
            return False
        if self.provider is not None and self.provider != provider:
            return False
        return (self.since is None or day >= self.since) and (
            self.until is None or day < self.until
        )


@dataclass(frozen=True)
class Alias:
    where: str
    model: str  # lower case
    price_as: str
    provider: str | None
    note: str


@dataclass(frozen=True)
class Overrides:
    path: Path
    prices: tuple[Override, ...]
    aliases: tuple[Alias, ...]
    label: str  # how outputs name the file: its path, or where the store keeps it
    digest: str = ""  # of the file's text: the same label may hold another text later


def _rate(entry: dict[str, Any], key: str, where: str, required: bool) -> Decimal | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise ForensicsError(f"{where}: {key} is missing", hint="rates are USD per MTok")
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ForensicsError(f"{where}: {key} must be a number, not {type(value).__name__}")
    text = str(value)  # (shown cut short: a file's 100,000-digit rate is no message)
    shown = repr(value) if len(text) <= 60 else f"{text[:40]!r}... ({len(text):,} characters)"
    try:
        rate = Decimal(str(value))
    except ArithmeticError:
        raise ForensicsError(f"{where}: {key} {shown} is not a number") from None
    if not rate.is_finite() or rate < 0:
        raise ForensicsError(f"{where}: {key} {shown} is not a price (a number >= 0)")
    if rate > MAX_RATE:
        raise ForensicsError(f"{where}: {key} {shown} is above {MAX_RATE:,} USD: not a price")
    if rate != rate.quantize(Decimal(10) ** -PLACES):
        raise ForensicsError(f"{where}: {key} {shown} has more than {PLACES} decimal places")
    return rate


def _text(entry: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise ForensicsError(f"{where}: {key} is missing")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ForensicsError(f"{where}: {key} must be a non-empty string")
    return value.strip()


def _day(entry: dict[str, Any], key: str, where: str) -> date | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, datetime) or not isinstance(value, date):
        raise ForensicsError(
            f"{where}: {key} must be a TOML date such as 2025-06-01 (unquoted), "
            f"not {value!r}"
        )
    return value


_PRICE_FIELDS = {"model", "provider", "since", "until", "note", "tier", _REQUESTS} | {
    f"{r}_mtok" for r in RATES
}
_TIER_FIELDS = {"above", _REQUESTS} | {f"{r}_mtok" for r in RATES}


def _tier(above: int, rates: dict[str, Decimal | None], requests_k: Decimal) -> Tier:
    """A tier from the rates a list or a file gives; a missing one falls back as
    genai-prices bills it (a cache read or write at the input rate, a 1h write at the
    5-minute one, no output rate as free)."""
    rate_input = rates["input"] if rates["input"] is not None else Decimal(0)
    output = rates["output"] if rates["output"] is not None else Decimal(0)
    write = rates["cache_write"] if rates["cache_write"] is not None else rate_input
    return Tier(
        above,
        rate_input,
        rates["cache_read"] if rates["cache_read"] is not None else rate_input,
        write,
        rates["cache_write_1h"] if rates["cache_write_1h"] is not None else write,
        output,
        requests_k,
    )


def _override(entry: Any, where: str) -> Override:
    if not isinstance(entry, dict):
        raise ForensicsError(f"{where}: must be a table ([[price]])")
    unknown = sorted(set(entry) - _PRICE_FIELDS)
    if unknown:
        raise ForensicsError(
            f"{where}: unknown field {unknown[0]}",
            hint="fields: " + ", ".join(sorted(_PRICE_FIELDS)),
        )
    model = _text(entry, "model", where, required=True)
    assert model is not None
    given = {r: _rate(entry, f"{r}_mtok", where, r in ("input", "output")) for r in RATES}
    requests_k = _rate(entry, _REQUESTS, where, False) or Decimal(0)
    base = _tier(0, given, requests_k)
    tiers = [base]
    raw_tiers = entry.get("tier", [])
    if not isinstance(raw_tiers, list):
        raise ForensicsError(f"{where}: tier must be a list of tables ([[price.tier]])")
    for i, raw in enumerate(raw_tiers):
        tier_where = f"{where}.tier[{i}]"
        if not isinstance(raw, dict):
            raise ForensicsError(f"{tier_where}: must be a table")
        unknown = sorted(set(raw) - _TIER_FIELDS)
        if unknown:
            raise ForensicsError(f"{tier_where}: unknown field {unknown[0]}")
        above = raw.get("above")
        if (
            isinstance(above, bool)
            or not isinstance(above, int)
            or above <= tiers[-1].above
            or above > MAX_ABOVE
        ):
            raise ForensicsError(
                f"{tier_where}: above must be a whole number of input tokens, larger than "
                f"the tier before ({tiers[-1].above}) and at most {MAX_ABOVE:,}"
            )
        # a rate the tier leaves out is the base's as given; where the base derived it
        # (a cache rate from the input rate), it is derived from the tier's own rates
        rates = dict(given)
        for r, v in ((r, _rate(raw, f"{r}_mtok", tier_where, False)) for r in RATES):
            if v is not None:
                rates[r] = v
        tier_requests = _rate(raw, _REQUESTS, tier_where, False)
        tiers.append(_tier(above, rates, requests_k if tier_requests is None else tier_requests))
    since, until = _day(entry, "since", where), _day(entry, "until", where)
    if since and until and until <= since:
        raise ForensicsError(f"{where}: until ({until}) must be after since ({since})")
    provider = _text(entry, "provider", where)
    return Override(
        where,
        model.lower(),
        provider.lower() if provider else None,
        since,
        until,
        tuple(tiers),
        _text(entry, "note", where) or "",
    )


def _alias(entry: Any, where: str) -> Alias:
    if not isinstance(entry, dict):
        raise ForensicsError(f"{where}: must be a table ([[alias]])")
    unknown = sorted(set(entry) - {"model", "price_as", "provider", "note"})
    if unknown:
        raise ForensicsError(f"{where}: unknown field {unknown[0]}")
    model = _text(entry, "model", where, required=True)
    price_as = _text(entry, "price_as", where, required=True)
    assert model is not None and price_as is not None
    provider = _text(entry, "provider", where)
    return Alias(
        where,
        model.lower(),
        price_as,
        provider.lower() if provider else None,
        _text(entry, "note", where) or "",
    )


def read_overrides(path: Path) -> Overrides:
    """A prices file (docs/cost.md), checked whole: an error names the entry and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ForensicsError(f"no prices file at {path}") from None
    except UnicodeDecodeError as e:
        raise ForensicsError(f"cannot read the prices file {path}: {not_utf8(e)}") from None
    except OSError as e:
        raise ForensicsError(f"cannot read the prices file {path}: {e}") from None
    return parse_overrides(text, path)


def parse_overrides(text: str, path: Path, label: str | None = None) -> Overrides:
    """A prices file's text, checked whole; errors name `path`, its entry and field."""
    try:
        doc = tomllib.loads(text, parse_float=Decimal)  # every digit of a rate kept
    except tomllib.TOMLDecodeError as e:
        raise ForensicsError(f"{path} is not valid TOML: {e}") from None
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise ForensicsError(f"{path} is not valid TOML: nested too deeply to read") from None
    except ValueError:  # (no TOMLDecodeError: an integer past Python's 4,300 digits)
        raise ForensicsError(f"{path} is not valid TOML: {TOML_NUMBER_TOO_LONG}") from None
    unknown = sorted(set(doc) - {"price", "alias"})
    if unknown:
        raise ForensicsError(
            f"{path}: unknown table {unknown[0]}",
            hint="a prices file holds [[price]] and [[alias]]",
        )
    for key in ("price", "alias"):
        if not isinstance(doc.get(key, []), list):
            raise ForensicsError(f"{path}: {key} must be an array of tables ([[{key}]])")
    name = storable(path.name)  # (as prices' sources name it: any byte of it, escaped)
    return Overrides(
        path,
        tuple(_override(e, f"{name} price[{i}]") for i, e in enumerate(doc.get("price", []))),
        tuple(_alias(e, f"{name} alias[{i}]") for i, e in enumerate(doc.get("alias", []))),
        label or storable(str(path)),
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


class PriceBook:
    """Prices by model and UTC day: a user's overrides first, then their aliases, then
    genai-prices; looked up once per (model, day)."""

    def __init__(self, overrides: Overrides | None = None):
        self.overrides = overrides
        self._found: dict[tuple[str, date], Price | Unknown] = {}

    @property
    def sources(self) -> str:
        """Every source this book can price from, for output headers."""
        names = [f"genai-prices {genai_prices_version()}"]
        if self.overrides is not None:
            names.insert(0, f"overrides {self.overrides.label}")
        return "; ".join(names)

    @property
    def identity(self) -> str:
        """What this book prices from, such that two books of one identity price every
        call alike: its sources (genai-prices' release, where the prices file is) and
        the file's text."""
        return self.sources + ("" if self.overrides is None else f" {self.overrides.digest}")

    def price(self, model: str, day: date) -> Price | Unknown:
        key = (model, day)
        if key not in self._found:
            self._found[key] = self._look_up(model, day)
        return self._found[key]

    def _look_up(self, model: str, day: date) -> Price | Unknown:
        if not model.strip():
            return Unknown(model, "the events name no model")
        provider, _ = route(model)
        if self.overrides is not None:
            chosen = None
            for entry in self.overrides.prices:  # the latest `since` wins; then the last
                if entry.matches(model, provider, day) and (
                    chosen is None or (entry.since or date.min) >= (chosen.since or date.min)
                ):
                    chosen = entry
            if chosen is not None:
                return Price(
                    model,
                    chosen.provider or provider or "",
                    model,
                    f"override {chosen.where}",
                    chosen.since,
                    chosen.tiers,
                    chosen.note,
                )
            low = model.strip().lower()
            for alias in self.overrides.aliases:
                if alias.model == low:
                    found = list_price(alias.price_as, day, alias.provider)
                    if isinstance(found, Unknown):
                        return Unknown(model, f"{alias.where}: {alias.price_as}: {found.reason}")
                    return replace(
                        found,
                        model=model,
                        source=f"{found.source} as {found.price_model} ({alias.where})",
                        note=alias.note,
                    )
        if model.endswith(FAST):
            return Unknown(
                model,
                "a fast-mode request: genai-prices has no fast-mode rates (Claude bills them "
                f"at a multiple); price {model!r} in a --prices file",
            )
        return list_price(model, day)
