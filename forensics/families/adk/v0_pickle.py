"""Decode ADK schema-V0 pickled `events.actions` without executing anything.

ADK's `DatabaseSessionService` schema V0 stores each event's `EventActions` (a
pydantic v2 model) as a pickle in `events.actions`. Bytes read from a database
are untrusted: unpickling them with `pickle.loads` runs whatever callable they
name. This module never does that, and it never imports ADK either.

`decode_actions` runs the stdlib unpickler's opcode machine with a `find_class`
that resolves no real global at all. Every global the stream names is replaced
by an inert stand-in:

* A class in `google.adk.*`, `google.genai.*` or `fastapi.openapi.models`
  (CapWords name, no dunder parts) becomes a fresh stand-in type. pydantic
  pickles a model as `NEWOBJ` (or `copyreg._reconstructor(cls, object, None)`
  at protocols 0/1) followed by `BUILD` with the state dict `{'__dict__',
  '__pydantic_extra__', '__pydantic_fields_set__', '__pydantic_private__'}`;
  the stand-in only records that state. An `Enum` pickles as `(cls, (value,))`;
  calling a stand-in with one argument returns that argument, so an enum member
  decodes to its value. Since nothing is imported, a model and an enum need not
  be told apart, and a stand-in can do nothing else.
* A fixed set of builtin and stdlib data types (`dict`, `list`, `set`,
  `frozenset`, `tuple`, `str`, `bytes`, `bytearray`, `int`, `float`, `bool`,
  `complex`, `object` as `_reconstructor`'s base, `collections.OrderedDict` and
  `defaultdict`, `datetime.datetime/date/time/timedelta/timezone`,
  `decimal.Decimal`, `uuid.UUID`/`SafeUUID`, the `pathlib` path classes,
  `_codecs.encode` (how protocols 0-2 spell `bytes`), and `copyreg.
  _reconstructor/__newobj__/__newobj_ex__`) becomes a small function that checks
  its arguments are plain data and builds a plain value.
* Anything else (`os.system`, `posix.system`, `subprocess.*`, `builtins.eval`,
  `getattr`, `__import__`, an unknown module...) raises `UnsafePickleError`
  naming the global, before any of the stream's calls could happen.

Python 2 spellings that protocols 0-2 write (`__builtin__`, `copy_reg`) are
mapped with the stdlib's own `_compat_pickle` tables before the check.

The decoded tree is then turned into plain JSON data shaped like
`EventActions.model_dump(mode="json")`:

* a model becomes a dict of its fields (the pydantic `__dict__`, snake_case
  field names) plus any `__pydantic_extra__`; private attributes and the
  fields-set are dropped;
* an enum member becomes its value;
* `set`/`frozenset` become lists, sorted when the items allow it;
* `bytes`/`bytearray` become URL-safe base64 text, as pydantic's
  `ser_json_bytes='base64'` (which `google.genai` uses, e.g. `Blob.data`)
  writes them; note `model_dump` writes bytes held in `state_delta` as UTF-8
  text instead, and keeps a set's iteration order;
* `datetime`, `date` and `time` become ISO-8601 strings (`isoformat()`, with a
  zero UTC offset written `Z` as pydantic does; naive values stay naive), not
  epoch floats; `timedelta` becomes float seconds; `timezone` its `str()`;
* `Decimal`, `complex`, `UUID` and paths become strings; a non-finite float
  becomes the string `"NaN"`, `"Infinity"` or `"-Infinity"` and an int too long
  for `str()` becomes hex text, so the result is strict JSON;
* a dict key that is not a string becomes its JSON text (`1` -> `"1"`);
* a bare reference to an allowed class (not an instance) becomes its dotted
  name.

Before the unpickler runs, `pickletools.genops` walks the opcodes (it executes
nothing) to reject truncated length prefixes and absurd memo indices, with
which the C unpickler would otherwise allocate memory the input never backs.

Bytes that are truncated or corrupt, that build a reference cycle, that nest
more than `_MAX_DEPTH` levels or expand (through shared references) into more
than `_node_budget` values also raise `UnsafePickleError`; nothing else escapes
`decode_actions`.
"""

from __future__ import annotations

import _compat_pickle
import base64
import datetime as _dt
import decimal
import io
import json
import math
import pathlib
import pickle
import pickletools
import uuid
from collections.abc import Callable
from typing import Any, cast

from forensics.errors import UnsafePickleError

__all__ = ["decode_actions"]

_MODEL_PACKAGES = ("google.adk", "google.genai")
_MODEL_MODULES = frozenset({"fastapi.openapi.models"})
_MAX_DEPTH = 100  # levels of containers/models; real ADK actions use < 15
_MAX_INT_BITS = 14_000  # below sys.get_int_max_str_digits() (4300 digits)

_REFUSED_HINT = (
    "The row was not written by ADK's own V0 schema, or its state holds an object "
    "that is not plain data. Inspect it with `python -m pickletools`, which "
    "disassembles without executing."
)
_CORRUPT_HINT = "The stored `actions` bytes are damaged or are not a pickle."


def _node_budget(size: int) -> int:
    """How many values a `size`-byte pickle may decode to.

    Without shared references every value costs at least one opcode; the slack
    is for memo reuse (the same string or model referenced twice). A "billion
    laughs" pickle of lists of references to lists blows far past it.
    """
    return 100_000 + 64 * size


# --------------------------------------------------------------------------
# Stand-ins. None can be mutated by the stream: BUILD on one either calls our
# own `__setstate__` or fails (no `__dict__`, `__setattr__` refuses).


class _StandInMeta(type):
    """Metaclass of the stand-in types made for allowed ADK/genai globals."""

    _global: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # REDUCE / INST / OBJ on a stand-in. An Enum member pickles as
        # (EnumClass, (value,)): keep the value. No argument: a bare instance.
        if kwargs:
            raise pickle.UnpicklingError(f"{cls._global} called with keyword arguments")
        if len(args) == 1:
            return args[0]
        if not args:
            return cls.__new__(cls)  # type: ignore[call-overload]  # _StandIn.__new__
        raise pickle.UnpicklingError(f"{cls._global} called with {len(args)} arguments")

    def __setattr__(cls, name: str, value: Any) -> None:
        raise pickle.UnpicklingError(f"cannot set {name!r} on {cls._global}")

    def __delattr__(cls, name: str) -> None:
        raise pickle.UnpicklingError(f"cannot delete {name!r} from {cls._global}")


class _StandIn(metaclass=_StandInMeta):
    """An instance of an allowed model class: only records what BUILD hands it."""

    __slots__ = ("_state", "_args")
    _state: Any
    _args: tuple[Any, ...]
    _global = "?"
    _kind = "model"

    def __new__(cls, *args: Any, **kwargs: Any) -> _StandIn:
        self = object.__new__(cls)
        object.__setattr__(self, "_state", None)
        object.__setattr__(self, "_args", args)
        return self

    def __setstate__(self, state: Any) -> None:
        object.__setattr__(self, "_state", state)

    def __setattr__(self, name: str, value: Any) -> None:
        raise pickle.UnpicklingError(f"cannot set {name!r} on a {self._global}")

    def __delattr__(self, name: str) -> None:
        raise pickle.UnpicklingError(f"cannot delete {name!r} from a {self._global}")


def _stand_in_type(dotted: str, kind: str = "model") -> type[_StandIn]:
    """A fresh stand-in type for one global of one decode (never shared)."""
    short = dotted.rsplit(".", 1)[-1]
    namespace = {"__slots__": (), "_global": dotted, "_kind": kind, "__module__": __name__}
    made = _StandInMeta(f"StandIn_{short}", (_StandIn,), namespace)
    return cast(type[_StandIn], made)


class _Func:
    """An allowed builtin/stdlib global: calls a checker that builds plain data."""

    __slots__ = ("_name", "_fn")
    _name: str
    _fn: Callable[..., Any]

    def __init__(self, name: str, fn: Callable[..., Any]):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_fn", fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise pickle.UnpicklingError(f"{self._name} called with keyword arguments")
        return self._fn(*args)

    def __setattr__(self, name: str, value: Any) -> None:
        raise pickle.UnpicklingError(f"cannot set {name!r} on {self._name}")

    def __delattr__(self, name: str) -> None:
        raise pickle.UnpicklingError(f"cannot delete {name!r} from {self._name}")

    def __repr__(self) -> str:
        return f"<stand-in {self._name}>"


def _bad(name: str, args: tuple[Any, ...]) -> pickle.UnpicklingError:
    kinds = ", ".join(type(a).__name__ for a in args)
    return pickle.UnpicklingError(f"{name} called with unexpected arguments ({kinds})")


_SCALARS = (str, int, float, bool)
_ITERABLES = (list, tuple, set, frozenset, dict)
_ENCODINGS = frozenset({"latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii"})


def _container(name: str, build: Callable[[Any], Any]) -> Callable[..., Any]:
    def make(*args: Any) -> Any:
        if not args:
            return build(())
        if len(args) == 1 and type(args[0]) in _ITERABLES:
            return build(args[0])
        raise _bad(name, args)

    return make


def _dict_like(name: str) -> Callable[..., Any]:
    def make(*args: Any) -> dict:
        if not args:
            return {}
        if len(args) == 1 and type(args[0]) in (dict, list, tuple):
            return dict(args[0])
        raise _bad(name, args)

    return make


def _defaultdict(*args: Any) -> dict:
    # (factory,) or (factory, mapping); the factory is never called.
    if len(args) == 2 and type(args[1]) in (dict, list, tuple):
        return dict(args[1])
    if len(args) <= 1:
        return {}
    raise _bad("collections.defaultdict", args)


def _encoding(name: str, value: Any) -> str:
    if type(value) is not str or value.lower() not in _ENCODINGS:
        raise pickle.UnpicklingError(f"{name}: unsupported encoding {value!r}")
    return value


def _bytes(*args: Any) -> bytes:
    if not args:
        return b""
    first = args[0]
    if len(args) == 1 and type(first) in (bytes, bytearray):
        return bytes(first)
    if len(args) == 1 and type(first) in (list, tuple):
        return bytes(first)  # ints 0..255, checked by bytes()
    if len(args) == 2 and type(first) is str:
        return first.encode(_encoding("bytes", args[1]))
    raise _bad("builtins.bytes", args)


def _codecs_encode(*args: Any) -> bytes:
    # Protocols 0-2 write bytes as _codecs.encode(text, 'latin1').
    if len(args) in (1, 2) and type(args[0]) is str:
        encoding = _encoding("_codecs.encode", args[1]) if len(args) == 2 else "utf-8"
        return args[0].encode(encoding)
    raise _bad("_codecs.encode", args)


def _str(*args: Any) -> str:
    if not args:
        return ""
    first = args[0]
    if len(args) == 1 and type(first) in _SCALARS:
        return str(first)
    if len(args) == 2 and type(first) in (bytes, bytearray):
        return bytes(first).decode(_encoding("str", args[1]))
    raise _bad("builtins.str", args)


def _number(name: str, kind: type) -> Callable[..., Any]:
    def make(*args: Any) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and type(args[0]) in _SCALARS:
            return kind(args[0])
        if kind is int and len(args) == 2 and type(args[0]) is str and type(args[1]) is int:
            return int(args[0], args[1])
        if kind is complex and len(args) == 2 and all(type(a) in (int, float) for a in args):
            return complex(*args)
        raise _bad(name, args)

    return make


def _bool(*args: Any) -> bool:
    if not args:
        return False
    if len(args) == 1 and (args[0] is None or type(args[0]) in _SCALARS):
        return bool(args[0])
    raise _bad("builtins.bool", args)


def _temporal(name: str, kind: type, tz_allowed: bool) -> Callable[..., Any]:
    # datetime/date/time reduce to (cls, (state_bytes[, tzinfo])); ints are
    # accepted too. The stdlib constructor validates the bytes' ranges.
    def make(*args: Any) -> Any:
        for i, arg in enumerate(args):
            if type(arg) in (int, bytes) or (type(arg) is str and i == 0):
                continue
            if tz_allowed and (arg is None or type(arg) is _dt.timezone):
                continue
            raise _bad(name, args)
        if args and type(args[0]) is str:
            args = (args[0].encode("latin-1"), *args[1:])
        return kind(*args)

    return make


def _timedelta(*args: Any) -> _dt.timedelta:
    if len(args) <= 3 and all(type(a) in (int, float) for a in args):
        return _dt.timedelta(*args)
    raise _bad("datetime.timedelta", args)


def _timezone(*args: Any) -> _dt.timezone:
    if len(args) in (1, 2) and type(args[0]) is _dt.timedelta:
        if len(args) == 2 and type(args[1]) is not str:
            raise _bad("datetime.timezone", args)
        return _dt.timezone(*args)
    raise _bad("datetime.timezone", args)


def _decimal(*args: Any) -> decimal.Decimal:
    if not args:
        return decimal.Decimal()
    if len(args) == 1 and type(args[0]) in (str, int, float):
        return decimal.Decimal(args[0])
    raise _bad("decimal.Decimal", args)


class _PathText(str):
    """A path, already a string; kept apart only to document where it came from."""

    __slots__ = ()


def _path(name: str, kind: type) -> Callable[..., Any]:
    def make(*args: Any) -> str:
        if all(type(a) is str for a in args):
            return _PathText(kind(*args))
        raise _bad(name, args)

    return make


def _object_base(*args: Any) -> Any:
    raise pickle.UnpicklingError("builtins.object cannot be called")


_OBJECT = _Func("builtins.object", _object_base)


def _is_stand_in_type(value: Any) -> bool:
    return isinstance(value, _StandInMeta)


def _reconstructor(cls: Any, base: Any, state: Any) -> _StandIn:
    # copyreg._reconstructor(cls, object, None): protocols 0/1 for any object.
    if not _is_stand_in_type(cls) or base is not _OBJECT or state is not None:
        raise _bad("copyreg._reconstructor", (cls, base, state))
    return cls.__new__(cls)


def _newobj(cls: Any, *args: Any) -> _StandIn:
    if not _is_stand_in_type(cls):
        raise _bad("copyreg.__newobj__", (cls, *args))
    return cls.__new__(cls, *args)


def _newobj_ex(cls: Any, args: Any, kwargs: Any) -> _StandIn:
    if not _is_stand_in_type(cls) or type(args) is not tuple or type(kwargs) is not dict:
        raise _bad("copyreg.__newobj_ex__", (cls, args, kwargs))
    return cls.__new__(cls, *args)


_BUILDERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("builtins", "dict"): _dict_like("builtins.dict"),
    ("builtins", "list"): _container("builtins.list", list),
    ("builtins", "tuple"): _container("builtins.tuple", tuple),
    ("builtins", "set"): _container("builtins.set", set),
    ("builtins", "frozenset"): _container("builtins.frozenset", frozenset),
    ("builtins", "str"): _str,
    ("builtins", "bytes"): _bytes,
    ("builtins", "bytearray"): _bytes,
    ("builtins", "int"): _number("builtins.int", int),
    ("builtins", "float"): _number("builtins.float", float),
    ("builtins", "complex"): _number("builtins.complex", complex),
    ("builtins", "bool"): _bool,
    ("_codecs", "encode"): _codecs_encode,
    ("collections", "OrderedDict"): _dict_like("collections.OrderedDict"),
    ("collections", "defaultdict"): _defaultdict,
    ("datetime", "datetime"): _temporal("datetime.datetime", _dt.datetime, True),
    ("datetime", "date"): _temporal("datetime.date", _dt.date, False),
    ("datetime", "time"): _temporal("datetime.time", _dt.time, True),
    ("datetime", "timedelta"): _timedelta,
    ("datetime", "timezone"): _timezone,
    ("decimal", "Decimal"): _decimal,
    ("copyreg", "_reconstructor"): _reconstructor,
    ("copyreg", "__newobj__"): _newobj,
    ("copyreg", "__newobj_ex__"): _newobj_ex,
}
for _module in ("pathlib", "pathlib._local"):
    for _name in ("PurePosixPath", "PosixPath"):
        _BUILDERS[(_module, _name)] = _path(f"{_module}.{_name}", pathlib.PurePosixPath)
    for _name in ("PureWindowsPath", "WindowsPath"):
        _BUILDERS[(_module, _name)] = _path(f"{_module}.{_name}", pathlib.PureWindowsPath)

# Stdlib classes that pickle by NEWOBJ + BUILD (or are enums) need a type.
_STDLIB_TYPES = {("uuid", "UUID"): "uuid", ("uuid", "SafeUUID"): "model"}


def _is_model_global(module: str, name: str) -> bool:
    in_package = module in _MODEL_MODULES or any(
        module == package or module.startswith(package + ".") for package in _MODEL_PACKAGES
    )
    if not in_package:
        return False
    parts = name.split(".")
    return (
        all(part.isidentifier() and not part.startswith("__") for part in parts)
        and parts[-1][:1].isupper()
    )


class _SafeUnpickler(pickle.Unpickler):
    """Runs the pickle opcode machine; resolves every global to a stand-in."""

    def __init__(self, file: io.BytesIO):
        super().__init__(file)
        self._types: dict[str, type[_StandIn]] = {}

    def find_class(self, module: str, name: str) -> Any:
        written = f"{module}.{name}"
        key = (module, name)
        if key in _compat_pickle.NAME_MAPPING:
            key = _compat_pickle.NAME_MAPPING[key]
        elif module in _compat_pickle.IMPORT_MAPPING:
            key = (_compat_pickle.IMPORT_MAPPING[module], name)
        dotted = f"{key[0]}.{key[1]}"
        if key == ("builtins", "object"):
            return _OBJECT
        if key in _BUILDERS:
            return _Func(dotted, _BUILDERS[key])
        kind = _STDLIB_TYPES.get(key)
        if kind is None and _is_model_global(*key):
            kind = "model"
        if kind is not None:
            if dotted not in self._types:
                self._types[dotted] = _stand_in_type(dotted, kind)
            return self._types[dotted]
        shown = dotted if dotted == written else f"{dotted} (written as {written})"
        raise UnsafePickleError(
            f"refused to decode a pickle that references {shown} "
            "(only ADK/genai data classes are allowed)",
            hint=_REFUSED_HINT,
        )


def _prescan(raw: bytes) -> None:
    """Walk the opcodes without running them, before the C unpickler sees them.

    `pickletools.genops` checks every length prefix against the bytes that are
    really there, so a truncated stream fails here rather than after the C
    unpickler has allocated the size it claims. It also exposes memo indices:
    the C unpickler grows its memo array to twice a `LONG_BINPUT` index, so a
    five-byte opcode could make it allocate gigabytes. A real pickler numbers
    memo slots from 0, so an index past the length of the input is refused.
    """
    for opcode, arg, _pos in pickletools.genops(raw):
        if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT") and not (
            isinstance(arg, int) and 0 <= arg < len(raw)
        ):
            raise UnsafePickleError(
                f"refused to decode a pickle that puts memo slot {arg} in a "
                f"{len(raw)}-byte stream (a memory bomb)",
                hint=_REFUSED_HINT,
            )


# --------------------------------------------------------------------------
# Stand-ins -> plain JSON data.


class _Converter:
    def __init__(self, budget: int):
        self.budget = budget
        self.active: set[int] = set()

    def plain(self, obj: Any, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise UnsafePickleError(
                "refused to decode a pickle that expands to too many values "
                "(shared references used as a memory bomb?)",
                hint=_REFUSED_HINT,
            )
        kind = type(obj)
        if obj is None or kind is bool or kind is str:
            return obj
        if kind is int:
            return obj if obj.bit_length() <= _MAX_INT_BITS else hex(obj)
        if kind is float:
            if math.isfinite(obj):
                return obj
            return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
        if kind in (bytes, bytearray):
            return base64.urlsafe_b64encode(obj).decode("ascii")
        if kind in (_dt.datetime, _dt.time):
            text = obj.isoformat()
            return text[:-6] + "Z" if text.endswith("+00:00") else text  # as pydantic
        if kind is _dt.date:
            return obj.isoformat()
        if kind is _dt.timedelta:
            return obj.total_seconds()
        if kind in (_dt.timezone, decimal.Decimal, complex, _PathText):
            return str(obj)
        if isinstance(obj, _StandInMeta):
            return obj._global
        if kind is _Func:
            return obj._name
        if depth >= _MAX_DEPTH:
            raise UnsafePickleError(
                f"refused to decode a pickle nested more than {_MAX_DEPTH} levels deep",
                hint=_REFUSED_HINT,
            )
        if id(obj) in self.active:
            raise UnsafePickleError(
                "refused to decode a pickle with a reference cycle", hint=_REFUSED_HINT
            )
        self.active.add(id(obj))
        try:
            return self._composite(obj, kind, depth + 1)
        finally:
            self.active.discard(id(obj))

    def _composite(self, obj: Any, kind: type, depth: int) -> Any:
        if kind is dict:
            return self._mapping(obj, depth)
        if kind in (list, tuple):
            return [self.plain(item, depth) for item in obj]
        if kind in (set, frozenset):
            items = [self.plain(item, depth) for item in obj]
            try:
                return sorted(items)
            except TypeError:
                return items
        if isinstance(obj, _StandIn):
            return self._model(obj, depth)
        raise UnsafePickleError(
            f"cannot represent a decoded {kind.__name__} as data", hint=_REFUSED_HINT
        )

    def _key(self, key: Any, depth: int) -> str:
        if type(key) is str:
            return key
        return json.dumps(self.plain(key, depth), sort_keys=True, allow_nan=False)

    def _mapping(self, mapping: dict, depth: int) -> dict[str, Any]:
        return {self._key(k, depth): self.plain(v, depth) for k, v in mapping.items()}

    def _model(self, obj: _StandIn, depth: int) -> Any:
        state = obj._state
        if obj._kind == "uuid" and type(state) is dict and type(state.get("int")) is int:
            return str(uuid.UUID(int=state["int"]))
        if state is None and len(obj._args) == 1:
            return self.plain(obj._args[0], depth)
        fields: dict = {}
        if type(state) is tuple and len(state) == 2:
            # (instance dict, slot state): the default reduce of a slotted object.
            for part in state:
                if type(part) is dict:
                    fields.update(part)
        elif type(state) is dict:
            inner = state.get("__dict__")
            if type(inner) is dict:
                # pydantic: fields, then extras (what model_dump emits).
                fields.update(inner)
                extra = state.get("__pydantic_extra__")
                if type(extra) is dict:
                    fields.update(extra)
            else:
                fields.update(state)
        elif state is not None:
            raise UnsafePickleError(
                f"{obj._global} carries a {type(state).__name__} state, not a field dict",
                hint=_CORRUPT_HINT,
            )
        return self._mapping(fields, depth)


def decode_actions(data: bytes | bytearray | memoryview) -> dict:
    """Decode one V0 `events.actions` pickle into plain JSON data; runs no code.

    Returns a dict shaped like `EventActions.model_dump(mode="json")` (see the
    module docstring for how each kind of value is represented). Raises
    `UnsafePickleError` when the bytes reference anything but allowed data
    classes, are truncated or corrupt, or hold no model/dict at the top.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise UnsafePickleError(
            f"truncated or corrupt pickle: expected bytes, got {type(data).__name__}",
            hint=_CORRUPT_HINT,
        )
    raw = bytes(data)
    try:
        _prescan(raw)
        loaded = _SafeUnpickler(io.BytesIO(raw)).load()
        result = _Converter(_node_budget(len(raw))).plain(loaded, 0)
    except UnsafePickleError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise UnsafePickleError(
            f"refused to decode a pickle that is too large or too deeply nested "
            f"({type(exc).__name__})",
            hint=_REFUSED_HINT,
        ) from None
    except Exception as exc:  # the opcode machine raises many kinds on bad input
        raise UnsafePickleError(
            f"truncated or corrupt pickle: {type(exc).__name__}: {exc}", hint=_CORRUPT_HINT
        ) from None
    if type(result) is not dict:
        raise UnsafePickleError(
            f"the pickle holds a {type(loaded).__name__}, not an EventActions model",
            hint=_CORRUPT_HINT,
        )
    return result
