"""The V0 `events.actions` pickle decoder: real ADK pickles, hostile ones, junk.

The hostile payloads here would create a marker file if anything unpickled
them; every such test asserts both the refusal and that the file is absent.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from forensics.errors import UnsafePickleError
from forensics.families.adk import v0_pickle as adk_pickle
from forensics.families.adk.v0_pickle import decode_actions

REPO = Path(__file__).resolve().parents[1]
REAL_V0_FILES = [
    REPO / "../shared/real_data/adk/v0_crash-course_my_agent_data.db",
    REPO / "../shared/real_data/adk/v0_with_usage_column_my_agent_data.db",
]
PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)

pytestmark = [
    # ADK's AuthConfig warns about its own deprecated helper when constructed.
    pytest.mark.filterwarnings("ignore:This method is deprecated:DeprecationWarning"),
    # Random bytes hold protocol-0 strings with bad escapes; decoding them warns.
    pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning"),
]


# ---------------------------------------------------------------------------
# Round trips of pickles written by ADK 2.13 itself


@pytest.fixture(scope="module")
def adk() -> SimpleNamespace:
    pytest.importorskip("google.adk")
    from fastapi.openapi.models import APIKey, APIKeyIn
    from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes
    from google.adk.auth.auth_tool import AuthConfig
    from google.adk.events.event_actions import EventActions, EventCompaction
    from google.adk.sessions import _restricted_pickle
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.genai import types

    return SimpleNamespace(
        APIKey=APIKey,
        APIKeyIn=APIKeyIn,
        AuthConfig=AuthConfig,
        AuthCredential=AuthCredential,
        AuthCredentialTypes=AuthCredentialTypes,
        EventActions=EventActions,
        EventCompaction=EventCompaction,
        ToolConfirmation=ToolConfirmation,
        restricted_pickle=_restricted_pickle,
        types=types,
    )


def _sample_actions(adk):
    types = adk.types
    return adk.EventActions(
        skip_summarization=True,
        state_delta={
            "user:name": "Ada",
            "cart": {"items": [{"sku": "A1", "qty": 2}], "total": 12.5, "note": None},
            "flags": [True, None, 3, -1.25],
            "temp:empty": {},
        },
        artifact_delta={"report.pdf": 3},
        transfer_to_agent="billing_agent",
        transfer_reason="needs a refund",
        escalate=False,
        requested_auth_configs={
            "call-2": adk.AuthConfig(
                auth_scheme=adk.APIKey(**{"in": adk.APIKeyIn.header}, name="X-Key"),
                raw_auth_credential=adk.AuthCredential(
                    auth_type=adk.AuthCredentialTypes.API_KEY, api_key="k-123"
                ),
            )
        },
        requested_tool_confirmations={
            "call-1": adk.ToolConfirmation(
                hint="Approve the refund?", confirmed=False, payload={"amount": 10}
            )
        },
        compaction=adk.EventCompaction(
            start_timestamp=1714000000.25,
            end_timestamp=1714000123.5,
            compacted_content=types.Content(
                role="model",
                parts=[
                    types.Part(text="The user asked for a refund."),
                    types.Part(text="Billing agreed."),
                    types.Part(inline_data=types.Blob(data=b"\xfb\xff\x00", mime_type="a/b")),
                ],
            ),
        ),
        end_of_agent=True,
        agent_state={"step": 2},
        rewind_before_invocation_id="inv-0",
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_round_trip_of_adk_v0_pickle(adk, protocol):
    actions = _sample_actions(adk)
    # ADK's V0 column is PickleType(pickler=_restricted_pickle): it writes with
    # `_restricted_pickle.dumps(value, protocol)`, i.e. plain pickle.dumps.
    blob = adk.restricted_pickle.dumps(actions, protocol)

    got = decode_actions(blob)

    json.dumps(got, allow_nan=False)
    expected = actions.model_dump(mode="json", exclude_none=True)
    compaction = got["compaction"]
    assert compaction["start_timestamp"] == expected["compaction"]["start_timestamp"]
    assert compaction["end_timestamp"] == expected["compaction"]["end_timestamp"]
    assert compaction["compacted_content"]["role"] == "model"
    texts = [part["text"] for part in compaction["compacted_content"]["parts"]]
    assert texts == ["The user asked for a refund.", "Billing agreed.", None]
    assert got["transfer_to_agent"] == expected["transfer_to_agent"] == "billing_agent"
    assert got["state_delta"] == expected["state_delta"] == actions.state_delta
    assert {k for k, v in got.items() if v is not None} == expected.keys()
    # Every other field (enums such as APIKeyIn and AuthCredentialTypes, the
    # Blob's bytes as base64, nested models) agrees with pydantic's JSON dump.
    assert got == actions.model_dump(mode="json")


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_round_trip_of_stdlib_values_in_state_delta(adk, protocol):
    import collections
    import datetime as dt
    import decimal
    import pathlib
    import uuid

    utc = dt.UTC
    state = {
        "when": dt.datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=utc),
        "local": dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "naive": dt.datetime(2024, 5, 6, 7, 8, 9),
        "day": dt.date(2024, 1, 2),
        "clock": dt.time(3, 4, 5),
        "span": dt.timedelta(days=1, seconds=2, microseconds=500_000),
        "price": decimal.Decimal("1.50"),
        "id": uuid.UUID(int=5),
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
        "default": collections.defaultdict(list, {"x": [1]}),
        "tags": {"b", "a", "c"},
        "frozen": frozenset({3, 1, 2}),
        "mixed": {1, "a"},
        "pair": (1, "two"),
        "blob": b"\x00\x01hi",
        "buffer": bytearray(b"\xfb\xff"),
        "z": 1 + 2j,
        "big": 2**80,
        "nan": float("nan"),
        "inf": float("-inf"),
        "int_keys": {1: "one", 2: "two"},
        "path": pathlib.PurePosixPath("/tmp/a/b.txt"),
    }
    actions = adk.EventActions(state_delta=state)
    got = decode_actions(adk.restricted_pickle.dumps(actions, protocol))["state_delta"]

    json.dumps(got, allow_nan=False)
    assert got["when"] == "2024-05-06T07:08:09.000010Z"
    assert got["local"] == "2024-05-06T07:08:09+02:00"
    assert got["naive"] == "2024-05-06T07:08:09"
    assert got["day"] == "2024-01-02"
    assert got["clock"] == "03:04:05"
    assert got["span"] == 86402.5
    assert got["price"] == "1.50"
    assert got["id"] == "00000000-0000-0000-0000-000000000005"
    assert got["ordered"] == {"b": 1, "a": 2}
    assert got["default"] == {"x": [1]}
    assert got["tags"] == ["a", "b", "c"]
    assert got["frozen"] == [1, 2, 3]
    assert sorted(got["mixed"], key=str) == [1, "a"]
    assert got["pair"] == [1, "two"]
    assert got["blob"] == "AAFoaQ=="
    assert got["buffer"] == "-_8="  # URL-safe base64, as google.genai's bytes
    assert got["z"] == "(1+2j)"
    assert got["big"] == 2**80
    assert got["nan"] == "NaN"
    assert got["inf"] == "-Infinity"
    assert got["int_keys"] == {"1": "one", "2": "two"}
    assert got["path"] == "/tmp/a/b.txt"
    # Where pydantic's JSON dump has an opinion we share, the values agree.
    # (It keeps a set's iteration order, and writes state_delta bytes as UTF-8
    # text, which fails on the non-UTF-8 bytes above.)
    shared = ("when", "local", "naive", "day", "clock", "price", "id", "ordered", "int_keys")
    plain = adk.EventActions(state_delta={key: state[key] for key in shared})
    dumped = plain.model_dump(mode="json")["state_delta"]
    assert {key: got[key] for key in shared} == dumped


def test_adk_v0_storage_event_row_decodes(adk, tmp_path):
    """A row written through ADK's own V0 SQLAlchemy model, read back raw."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    orm = pytest.importorskip("sqlalchemy.orm")
    from google.adk.events.event import Event
    from google.adk.sessions.schemas import v0
    from google.adk.sessions.session import Session

    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'v0.db'}")
    v0.Base.metadata.create_all(engine)
    actions = _sample_actions(adk)
    event = Event(invocation_id="inv-1", author="agent", actions=actions)
    session = Session(app_name="app", user_id="u", id="s1")
    with orm.Session(engine) as db:
        db.add(v0.StorageSession(app_name="app", user_id="u", id="s1", state={}))
        db.add(v0.StorageEvent.from_event(session, event))
        db.commit()
    engine.dispose()

    with sqlite3.connect(tmp_path / "v0.db") as conn:
        (blob,) = conn.execute("SELECT actions FROM events").fetchone()
    assert isinstance(blob, bytes)
    assert decode_actions(blob) == actions.model_dump(mode="json")
    assert decode_actions(memoryview(blob)) == decode_actions(bytearray(blob))


def test_decoder_imports_no_adk_and_resolves_no_real_class():
    code = (
        "import sys\n"
        "import forensics.families.adk.v0_pickle\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('google', 'pydantic', 'fastapi')))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)

    unpickler = adk_pickle._SafeUnpickler(io.BytesIO(b""))
    for module, name in [
        ("google.adk.events.event_actions", "EventActions"),
        ("google.genai.types", "Content"),
        ("builtins", "dict"),
        ("__builtin__", "set"),
        ("copyreg", "_reconstructor"),
        ("datetime", "datetime"),
    ]:
        stand_in = unpickler.find_class(module, name)
        assert not isinstance(stand_in, type) or issubclass(stand_in, adk_pickle._StandIn)


# ---------------------------------------------------------------------------
# Hostile pickles


class _Reduce:
    """Pickles as `func(*args)`, the classic code-execution payload."""

    def __init__(self, func, args):
        self.func = func
        self.args = args

    def __reduce__(self):
        return self.func, self.args


class _Local:
    """An arbitrary class outside the allowlist (module tests.test_adk_pickle)."""

    def __init__(self):
        self.x = 1


def _global_name(func) -> str:
    return f"{func.__module__}.{func.__qualname__}"


def _payloads(marker: Path):
    posix = pytest.importorskip("posix")
    return {
        "os.system": (os.system, (f"touch {marker}",)),
        "posix.system": (posix.system, (f"touch {marker}",)),
        "subprocess.call": (subprocess.call, (["touch", str(marker)],)),
        "subprocess.Popen": (subprocess.Popen, (["touch", str(marker)],)),
        "builtins.eval": (builtins.eval, (f"open({str(marker)!r}, 'w')",)),
        "builtins.exec": (builtins.exec, (f"open({str(marker)!r}, 'w')",)),
        "open": (open, (str(marker), "w")),
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "variant",
    [
        "os.system",
        "posix.system",
        "subprocess.call",
        "subprocess.Popen",
        "builtins.eval",
        "builtins.exec",
        "open",
    ],
)
def test_hostile_reduce_is_refused_and_never_runs(tmp_path, variant, protocol):
    marker = tmp_path / "pwned"
    func, args = _payloads(marker)[variant]
    blob = pickle.dumps(_Reduce(func, args), protocol)

    with pytest.raises(UnsafePickleError) as info:
        decode_actions(blob)

    message = str(info.value)
    assert _global_name(func) in message  # e.g. posix.system, io.open, builtins.eval
    assert "only ADK/genai data classes are allowed" in message
    assert not marker.exists()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_hostile_value_inside_real_event_actions_is_refused(adk, tmp_path, protocol):
    marker = tmp_path / "pwned"
    actions = adk.EventActions(
        transfer_to_agent="x",
        state_delta={"ok": 1, "evil": _Reduce(os.system, (f"touch {marker}",))},
    )
    blob = adk.restricted_pickle.dumps(actions, protocol)

    with pytest.raises(UnsafePickleError, match=_global_name(os.system)):
        decode_actions(blob)
    assert not marker.exists()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unknown_module_is_refused(protocol):
    blob = pickle.dumps({"state_delta": {"x": _Local()}}, protocol)
    with pytest.raises(UnsafePickleError, match=r"test_adk_pickle\._Local"):
        decode_actions(blob)


@pytest.mark.parametrize(
    ("blob", "name"),
    [
        (b"cnt\nsystem\n(Vtouch pwned\ntR.", "nt.system"),
        (b"cposix\nsystem\n(Vtouch pwned\ntR.", "posix.system"),
        (b"c__builtin__\ngetattr\n(Vx\nVy\ntR.", "builtins.getattr"),
        (b"cbuiltins\n__import__\n(Vos\ntR.", "builtins.__import__"),
        (b"c__builtin__\neval\n(V1\ntR.", "builtins.eval (written as __builtin__.eval)"),
        (b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x01x\x85R.", "os.system"),
        # ADK's own modules are no loophole: only CapWords data classes resolve.
        (
            b"cgoogle.adk.sessions._restricted_pickle\nloads\n(C\x01xtR.",
            "google.adk.sessions._restricted_pickle.loads",
        ),
        (b"cgoogle.genai.types\n__class__\n.", "google.genai.types.__class__"),
        (b"cgoogle_evil.adk\nThing\n.", "google_evil.adk.Thing"),
        (b"cpickle\nloads\n(C\x01xtR.", "pickle.loads"),
        (b"ccopyreg\n_reconstructor\n(ccollections\nUserDict\ntR.", "collections.UserDict"),
    ],
)
def test_handwritten_hostile_globals_are_refused(tmp_path, monkeypatch, blob, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafePickleError) as info:
        decode_actions(blob)
    assert f"references {name} " in str(info.value)
    assert info.value.hint
    assert not (tmp_path / "pwned").exists()


def test_allowed_stand_ins_cannot_be_tampered_with():
    # BUILD with slot state means setattr(obj, k, v): refused on a builtin
    # stand-in and on a model stand-in type, and later decodes are unaffected.
    slot_state = b"N}X\x08\x00\x00\x00__call__K\x01s\x86b."
    model = b"\x80\x02cgoogle.adk.events.event_actions\nEventActions\n"
    for prefix in [b"\x80\x02c__builtin__\nlist\n", model]:
        with pytest.raises(UnsafePickleError, match="truncated or corrupt"):
            decode_actions(prefix + slot_state)
    # On a model instance the state is only recorded, and comes back as data.
    assert decode_actions(model + b")\x81" + slot_state) == {"__call__": 1}
    good = model + b")\x81}X\x01\x00\x00\x00aK\x01sb."
    assert decode_actions(good) == {"a": 1}


def test_memory_bomb_of_shared_references_is_refused():
    # Level i is a list of 10 references to level i-1: 10**40 leaves.
    ops = bytearray(b"\x80\x02]q\x00")
    for level in range(1, 41):
        ops += b"](" + (b"h" + bytes([level - 1])) * 10 + b"eq" + bytes([level])
    ops += b"."
    with pytest.raises(UnsafePickleError, match="too many values"):
        decode_actions(bytes(ops))


@pytest.mark.parametrize(
    "blob",
    [
        b"\x80\x02}r\xff\xff\xff\x7f.",  # LONG_BINPUT 2**31-1: the memo would be 16 GiB
        b"(dp99999999999\n.",  # PUT, protocol 0
        b"\x80\x04\x8e\xff\xff\xff\xff\xff\x00\x00\x00x.",  # BINBYTES8 claiming 1 TiB
    ],
)
def test_memory_claims_the_input_cannot_back_are_refused(blob):
    with pytest.raises(UnsafePickleError):
        decode_actions(blob)


def test_deep_nesting_and_cycles_are_refused():
    depth = 100_000
    deep = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with pytest.raises(UnsafePickleError, match="nested more than"):
        decode_actions(deep)
    cycle = b"\x80\x02}q\x00X\x04\x00\x00\x00selfq\x01h\x00s."
    with pytest.raises(UnsafePickleError, match="cycle"):
        decode_actions(cycle)


# ---------------------------------------------------------------------------
# Truncated and garbage bytes


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_truncated_pickles_are_refused(protocol):
    blob = pickle.dumps(
        {"state_delta": {"k": [1, 2.5, "three", b"4", {5}]}, "transfer_to_agent": "x"}, protocol
    )
    assert decode_actions(blob)["transfer_to_agent"] == "x"
    for cut in range(len(blob)):
        with pytest.raises(UnsafePickleError, match="truncated or corrupt"):
            decode_actions(blob[:cut])


@pytest.mark.parametrize("protocol", [0, 5])
def test_truncated_real_adk_pickles_are_refused(adk, protocol):
    blob = adk.restricted_pickle.dumps(_sample_actions(adk), protocol)
    for cut in range(0, len(blob), 7):
        with pytest.raises(UnsafePickleError):
            decode_actions(blob[:cut])


def test_garbage_is_refused():
    samples = [b"", b"not a pickle", b"\x80\x05", b"\x80\x09.", b'{"json": true}', b"N.", b"K\x01."]
    for sample in samples:
        with pytest.raises(UnsafePickleError):
            decode_actions(sample)
    with pytest.raises(UnsafePickleError):
        decode_actions("not bytes")  # type: ignore[arg-type]


def test_random_bytes_raise_only_unsafe_pickle_error():
    rng = random.Random(20240506)
    samples = [rng.randbytes(rng.randrange(1, 400)) for _ in range(2000)]
    samples += [b"\x80\x04" + rng.randbytes(rng.randrange(1, 200)) for _ in range(2000)]
    refused = 0
    for sample in samples:
        try:
            result = decode_actions(sample)
        except UnsafePickleError:
            refused += 1
        else:  # a random prefix can be a valid tiny pickle of a dict
            assert isinstance(result, dict)
            json.dumps(result, allow_nan=False)
    assert refused > len(samples) * 0.99


# ---------------------------------------------------------------------------
# Real V0 databases written by other people's ADK installs


@pytest.mark.parametrize("path", REAL_V0_FILES, ids=lambda p: p.name)
def test_real_v0_files_decode_every_row(path, capsys):
    if not path.exists():
        pytest.skip(f"{path} is not present")
    with sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True) as conn:
        (total,) = conn.execute("SELECT count(*) FROM events").fetchone()
        blobs = [row[0] for row in conn.execute("SELECT actions FROM events")]

    decoded = [decode_actions(blob) for blob in blobs]

    # Every row decodes: none of these files references a non-allowed global.
    assert len(decoded) == total > 0
    for actions in decoded:
        json.dumps(actions, allow_nan=False)
        assert isinstance(actions["state_delta"], dict)
        assert {"state_delta", "artifact_delta", "transfer_to_agent"} <= actions.keys()
    try:
        from google.adk.events.event_actions import EventActions
    except ImportError:
        pass
    else:
        # Everything written by older ADKs is still a field EventActions knows.
        for actions in decoded:
            assert set(actions) <= set(EventActions.model_fields)
            EventActions.model_validate(actions)
    assert capsys.readouterr() == ("", "")
