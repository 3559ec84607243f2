"""The guardian's stdlib codec (lite.py, litewire.py) speaks exactly the wire of wire.py.

- litewire.py is what generate.py makes of wire.py now (change wire.py, run the generator);
- every message type, and the v1 fixture, crosses between the two codecs both ways;
- msgpack values at every size boundary decode to the same values in both;
- bad bodies are refused with the same code and the same words as wire.py's decoders;
- the guardian process, started the launcher's way (`python -I -S boot.py`), imports none
  of the modules whose cost made lite.py necessary.
"""

import os
import pathlib
import subprocess
import sys

import msgspec
import msgspec.inspect as mi
import pytest

from tests.unit.test_guardian_wire import FIXTURE, V1_DAEMON, V1_EXIT, V1_GUARDIAN, V1_TAIL
from vigil.daemon.guardian import generate, launch, lite, litewire, records, wire


def test_litewire_is_current():
    assert generate.main(["--check"]) == 0, "run: python -m vigil.daemon.guardian.generate"


def sample(t: mi.Type, seed: int):
    """A valid value of type `t` (varied by `seed`), for round trips of every field type."""
    if isinstance(t, mi.IntType):
        lo = t.ge if t.ge is not None else -(2**40)
        hi = t.le if t.le is not None else 2**62
        return [lo, hi, (lo + hi) // 2][seed % 3]
    if isinstance(t, mi.FloatType):
        return [0.0, 2.5, 1e300][seed % 3] if t.ge is None or t.ge <= 0 else t.ge + 1.5
    if isinstance(t, mi.StrType):
        return ["", "é" * 40, "x" * 300][seed % 3]
    if isinstance(t, mi.BytesType):
        return [b"", b"\x00\xff" * 200, bytes(70000)][seed % 3]
    if isinstance(t, mi.BoolType):
        return seed % 2 == 0
    if isinstance(t, mi.NoneType):
        return None
    if isinstance(t, mi.ListType):
        return [sample(t.item_type, seed + i) for i in range(seed % 3 * 9)]
    if isinstance(t, mi.TupleType):
        return tuple(sample(i, seed) for i in t.item_types)
    if isinstance(t, mi.DictType):
        return {f"k{i}": sample(t.value_type, seed + i) for i in range(seed % 3 * 7)}
    if isinstance(t, mi.UnionType):
        return sample(t.types[seed % len(t.types)], seed)
    if isinstance(t, mi.StructType):
        return t.cls(**{f.name: sample(f.type, seed) for f in t.fields})
    raise AssertionError(f"no sample for {t}")


def all_structs():
    return [getattr(litewire, name) for name in dir(litewire)
            if isinstance(getattr(litewire, name), type)
            and issubclass(getattr(litewire, name), lite.Message)
            and getattr(litewire, name) is not lite.Message]


def msgspec_class(lite_cls):
    return getattr(wire, lite_cls.__name__, None) or getattr(records, lite_cls.__name__)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cls", all_structs(), ids=lambda c: c.__name__)
def test_every_message_crosses_both_ways(cls, seed):
    spec_cls = msgspec_class(cls)
    original = sample(mi.type_info(spec_cls), seed)
    body = msgspec.msgpack.encode(original)
    ours = cls._from_map(lite.unpack(body))
    again = lite.encode(ours)
    assert msgspec.msgpack.decode(again, type=spec_cls) == original
    assert lite.unpack(again) == lite.unpack(body)  # the same map, field for field


def test_the_v1_fixture_decodes_in_the_guardian_codec():
    stored = msgspec.msgpack.decode(FIXTURE.read_bytes())
    for body, expected in zip(stored["daemon"], V1_DAEMON):
        got = litewire.decode_daemon_message(body)
        assert msgspec.msgpack.decode(lite.encode(got), type=wire.DaemonMessage) == expected
    for body, expected in zip(stored["guardian"], V1_GUARDIAN):
        got = litewire.decode_guardian_message(body)
        assert msgspec.msgpack.decode(lite.encode(got), type=wire.GuardianMessage) == expected
    exit_ = litewire.ExitRecord._from_map(lite.unpack(stored["exit"]))
    assert msgspec.msgpack.decode(lite.encode(exit_), type=records.ExitRecord) == V1_EXIT
    tail = litewire.TailRecord._from_map(lite.unpack(stored["tail"]))
    assert msgspec.msgpack.decode(lite.encode(tail), type=records.TailRecord) == V1_TAIL


BOUNDARY_VALUES = [
    None, True, False, 0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1,
    -1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63),
    0.0, -1.5, 1e-300, float("inf"),
    "", "a" * 31, "a" * 32, "a" * 255, "a" * 256, "a" * 65535, "a" * 65536, "€",
    b"", b"x" * 255, b"x" * 256, b"x" * 65535, b"x" * 65536,
    [], list(range(15)), list(range(16)), list(range(65536)),
    {}, {f"k{i}": i for i in range(15)}, {f"k{i}": i for i in range(16)},
    {"nested": [{"a": [1, [2, [3]]]}]},
]


@pytest.mark.parametrize("value", BOUNDARY_VALUES, ids=lambda v: repr(v)[:30])
def test_msgpack_values_match_msgspec(value):
    ours = lite.pack(value)
    assert msgspec.msgpack.decode(ours) == value
    assert lite.unpack(msgspec.msgpack.encode(value)) == value


BAD_BODIES = [
    {"type": "resize", "rows": 0, "cols": 80},
    {"type": "resize", "rows": 70000, "cols": 80},
    {"type": "resize", "rows": "50", "cols": 80},
    {"type": "ack"},
    {"type": "ack", "offset": -1},
    {"type": "input", "data": "text, not bytes"},
    {"type": "signal", "signum": 65},
    {"type": "signal", "signum": 9, "group": 1},
    {"type": "hello", "protocol": [1]},
    {"type": "hello", "protocol": [1, 2, 3]},
    {"type": "hello", "protocol": "1..2"},
    {"type": "teleport", "x": 1},
    {"no_type": 1},
    [1, 2, 3],
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=repr)
def test_refusals_read_as_wire_py_s(body):
    raw = msgspec.msgpack.encode(body)
    with pytest.raises(wire.WireDecodeError) as theirs:
        wire.decode_daemon_message(raw)
    with pytest.raises(lite.WireDecodeError) as ours:
        litewire.decode_daemon_message(raw)
    assert (ours.value.code, ours.value.message) == (theirs.value.code, theirs.value.message)


def test_deep_nesting_is_an_error_not_a_crash():
    body = b"\x81\xa4type" + b"\x91" * 100_000 + b"\x90"
    with pytest.raises(lite.WireDecodeError) as info:
        litewire.decode_daemon_message(body)
    assert info.value.code == "invalid_request"
    assert info.value.message == f"nested deeper than {lite.MAX_DEPTH} levels"


@pytest.mark.parametrize("body", [b"", b"\x81", b"\xc1", b"\x81\xa4type\xa3ack\x00"])
def test_truncated_or_malformed_bodies_are_invalid_requests(body):
    with pytest.raises(lite.WireDecodeError) as info:
        litewire.decode_daemon_message(body)
    assert info.value.code == "invalid_request"


def test_frames_match_vigil_protocol_frames():
    from vigil.protocol.frames import FrameDecoder, encode_frame

    bodies = [b"", b"x", bytes(70000)]
    stream = b"".join(lite.encode_frame(b) for b in bodies)
    assert stream == b"".join(encode_frame(b) for b in bodies)
    ours, theirs = lite.FrameDecoder(1 << 20), FrameDecoder(1 << 20)
    got = []
    for i in range(0, len(stream), 997):  # any split gives the same frames
        ours.feed(stream[i:i + 997])
        theirs.feed(stream[i:i + 997])
        while (frame := ours.next_frame()) is not None:
            assert frame == theirs.next_frame()
            got.append(frame)
    assert got == bodies
    big = lite.FrameDecoder(100)
    big.feed(b"\x00\x00\x01\x00")
    with pytest.raises(lite.WireDecodeError) as info:
        big.next_frame()
    assert (info.value.code, info.value.message) == (
        "frame_too_large", "announced frame of 256 bytes exceeds the maximum of 100 bytes")


#: What the guardian must not import: each costs it memory for nothing (lite.py, and
#: tests/bench/bench_guardian_memory.py for the figures).
HEAVY = {"msgspec", "enum", "typing", "re", "socket", "selectors", "signal", "ctypes",
         "dataclasses", "datetime", "decimal", "uuid", "platform", "collections", "functools",
         "trio", "site", "vigil.protocol.errors", "vigil.protocol.frames", "vigil.daemon.guardian.wire"}


def test_the_guardian_process_imports_nothing_heavy():
    boot = pathlib.Path(launch.__file__).with_name("boot.py")
    command = launch.guardian_command()
    assert command[:4] == [sys.executable, "-I", "-S", str(boot)]
    code = (f"import sys\nsys.argv = {command[3:]!r}\n"
            f"exec(compile(open({str(boot)!r}).read(), 'boot', 'exec'), ns := {{'__name__': 'boot'}})\n"
            "ns['register'](*sys.argv[1:])\n"
            "import vigil.daemon.guardian.__main__\n"
            "print('\\n'.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                         check=True, env={}, cwd="/").stdout.split()
    assert "vigil.daemon.guardian.server" in out
    assert HEAVY.isdisjoint(out), sorted(HEAVY.intersection(out))
    assert not [m for m in out if m.startswith("msgspec")]
    assert os.path.dirname(wire.__file__) == os.path.dirname(litewire.__file__)
