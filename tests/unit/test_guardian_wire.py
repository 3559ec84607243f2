"""Guardian wire protocol: round trips, exact decode errors, and the checked-in fixtures.

`tests/fixtures/guardian_wire_v1.msgpack` holds bodies encoded by the v1 build, in both
directions, plus v1 exit records; `guardian_wire_v2.msgpack` the same for v2 (numbered
commands, `Done`, numbered refusals); `guardian_wire_v3.msgpack` for v3 (`Hold`). Every later build must still decode both to the
values below (a new daemon must read an old guardian, and an old guardian's messages).
Never regenerate one to make a test pass; each was written once with
`python tests/unit/test_guardian_wire.py --write-fixture` by the build of its version.
"""

import pathlib
import sys

import msgspec
import pytest

from vigil.daemon.guardian import records, wire
from vigil.protocol.frames import FrameDecoder, encode_frame

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE = FIXTURES / "guardian_wire_v1.msgpack"
FIXTURE_V2 = FIXTURES / "guardian_wire_v2.msgpack"
FIXTURE_V3 = FIXTURES / "guardian_wire_v3.msgpack"

IDENTITY = wire.RuntimeIdentity(
    runtime_id="rt-0001",
    boot_id="fb3e250c-42ed-4e0a-9e50-a617e9073ab0",
    guardian_pid=4242,
    guardian_start_ticks=67342,
    child_pid=4243,
)
STATUS_CODE = wire.ExitStatus(exit_code=3, signal=None, ended_unix_ms=1_700_000_000_123)
STATUS_SIGNAL = wire.ExitStatus(exit_code=None, signal=15, ended_unix_ms=1_700_000_000_456)

V1_DAEMON = [
    wire.Hello(protocol=(1, 1), client="vigild"),
    wire.Subscribe(from_offset=17),
    wire.Ack(offset=4096),
    wire.Input(data=b"ls -l\r\x03\xe2\x82\xac"),
    wire.Resize(rows=30, cols=100),
    wire.Signal(signum=2, group=True, foreground=False),
    wire.Signal(signum=15, group=False, foreground=True),
    wire.Foreground(),
    wire.ExitAck(),
]
V1_GUARDIAN = [
    wire.Welcome(
        protocol=1, identity=IDENTITY, ring_start=0, ring_end=12, exit=None, rows=50, cols=200, acked_offset=0
    ),
    wire.Welcome(
        protocol=1, identity=IDENTITY, ring_start=5904, ring_end=10000, exit=STATUS_SIGNAL, rows=30, cols=100,
        acked_offset=10000,
    ),
    wire.Output(offset=0, data=b"hello\r\nworld \xf0\x9f\x98\x80"),
    wire.Gap(start=0, end=5904),
    wire.Exited(status=STATUS_CODE, end_offset=12),
    wire.ForegroundInfo(pgid=4243, pid=4243, comm="sleep", argv=["sleep", "100"]),
    wire.ForegroundInfo(pgid=None, pid=None, comm=None, argv=[]),
    wire.Error(code="limit_exceeded", message="input of 5000 bytes refused"),
]
V1_EXIT = records.ExitRecord(version=1, identity=IDENTITY, status=STATUS_CODE, end_offset=12)
V1_TAIL = records.TailRecord(
    version=1, runtime_id="rt-0001", start_offset=5904, data=b"a" * 16, gap=wire.Gap(start=0, end=5904)
)


V2_DAEMON = [
    wire.Hello(protocol=(1, 2), client="vigild"),
    wire.Subscribe(from_offset=17),
    wire.Ack(offset=4096),
    wire.Input(data=b"ls -l\r\x03\xe2\x82\xac", seq=1),
    wire.Input(data=b"unnumbered", seq=0),
    wire.Resize(rows=30, cols=100, seq=2),
    wire.Signal(signum=2, group=True, foreground=False, seq=3),
    wire.Foreground(seq=4),
    wire.ExitAck(),
]
V2_GUARDIAN = [
    *V1_GUARDIAN[:2],
    wire.Welcome(
        protocol=2, identity=IDENTITY, ring_start=0, ring_end=12, exit=None, rows=50, cols=200, acked_offset=0
    ),
    wire.Done(seq=1, accepted=9),
    wire.Done(seq=2),
    wire.Error(code="not_found", message="no such process group", seq=3),
    wire.ForegroundInfo(pgid=4243, pid=4243, comm="sleep", argv=["sleep", "100"], seq=4),
]


V3_DAEMON = [
    wire.Hello(protocol=(1, 3), client="vigild"),
    *V2_DAEMON[1:],
    wire.Hold(on=True),
    wire.Hold(on=False),
]
V3_GUARDIAN = [
    *V2_GUARDIAN,
    wire.Welcome(
        protocol=3, identity=IDENTITY, ring_start=0, ring_end=12, exit=None, rows=50, cols=200, acked_offset=0
    ),
]


def _fixture_bytes(daemon=V3_DAEMON, guardian=V3_GUARDIAN) -> bytes:
    enc = msgspec.msgpack.Encoder()
    return msgspec.msgpack.encode(
        {
            "daemon": [enc.encode(m) for m in daemon],
            "guardian": [enc.encode(m) for m in guardian],
            "exit": enc.encode(V1_EXIT),
            "tail": enc.encode(V1_TAIL),
        }
    )


@pytest.mark.parametrize("path, daemon, guardian", [(FIXTURE, V1_DAEMON, V1_GUARDIAN),
                                                    (FIXTURE_V2, V2_DAEMON, V2_GUARDIAN),
                                                    (FIXTURE_V3, V3_DAEMON, V3_GUARDIAN)],
                         ids=["v1", "v2", "v3"])
def test_fixture_still_decodes(path, daemon, guardian):
    stored = msgspec.msgpack.decode(path.read_bytes())
    assert [wire.decode_daemon_message(b) for b in stored["daemon"]] == daemon
    assert [wire.decode_guardian_message(b) for b in stored["guardian"]] == guardian
    assert msgspec.msgpack.decode(stored["exit"], type=records.ExitRecord) == V1_EXIT
    assert msgspec.msgpack.decode(stored["tail"], type=records.TailRecord) == V1_TAIL


def test_v1_commands_decode_as_unnumbered():
    # A v1 daemon never sends `seq`: its commands read as seq 0, which asks for no answer.
    stored = msgspec.msgpack.decode(FIXTURE.read_bytes())
    commands = [wire.decode_daemon_message(b) for b in stored["daemon"]]
    assert [m.seq for m in commands if hasattr(m, "seq")] == [0, 0, 0, 0, 0]


def test_v2_fixture_is_what_this_build_encodes():
    # Not required for compatibility, but a change here means the encoding changed: decide
    # consciously (and keep the old fixtures decoding) rather than by accident.
    assert FIXTURE_V2.read_bytes() == _fixture_bytes(V2_DAEMON, V2_GUARDIAN)
    assert FIXTURE_V3.read_bytes() == _fixture_bytes()


@pytest.mark.parametrize("msg", V1_DAEMON, ids=lambda m: type(m).__name__)
def test_daemon_messages_round_trip_through_frames(msg):
    stream = encode_frame(wire.encode(msg)) * 2 + b"\x00\x00"
    dec = FrameDecoder()
    for i in range(len(stream)):  # byte by byte, with trailing garbage
        dec.feed(stream[i : i + 1])
    assert wire.decode_daemon_message(dec.next_frame()) == msg
    assert wire.decode_daemon_message(dec.next_frame()) == msg
    assert dec.next_frame() is None


@pytest.mark.parametrize("msg", V1_GUARDIAN, ids=lambda m: type(m).__name__)
def test_guardian_messages_round_trip(msg):
    assert wire.decode_guardian_message(wire.encode(msg)) == msg


def test_unknown_fields_are_ignored():
    body = msgspec.msgpack.encode({"type": "subscribe", "from_offset": 5, "from_the_future": [1, 2]})
    assert wire.decode_daemon_message(body) == wire.Subscribe(from_offset=5)


def test_unknown_type_is_method_not_found():
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_daemon_message(msgspec.msgpack.encode({"type": "teleport", "x": 1}))
    assert (info.value.code, info.value.message) == ("method_not_found", "unknown message type 'teleport'")


def test_bad_field_names_the_field():
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_daemon_message(msgspec.msgpack.encode({"type": "resize", "rows": 0, "cols": 80}))
    assert info.value.code == "invalid_request"
    assert info.value.message == "invalid resize message: Expected `int` >= 1 - at `$.rows`"


def test_missing_field_names_the_field():
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_daemon_message(msgspec.msgpack.encode({"type": "ack"}))
    assert info.value.message == "invalid ack message: Object missing required field `offset`"


def test_garbage_is_invalid_request():
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_daemon_message(b"\xc1")
    assert info.value.code == "invalid_request"
    assert info.value.message.startswith("malformed message: ")


def test_guardian_message_sent_to_guardian_is_rejected():
    # A guardian->daemon type is not a daemon->guardian message: "unknown" from this side.
    with pytest.raises(wire.WireDecodeError) as info:
        wire.decode_daemon_message(wire.encode(wire.Gap(start=0, end=1)))
    assert (info.value.code, info.value.message) == ("method_not_found", "unknown message type 'gap'")


@pytest.mark.parametrize(
    "theirs, chosen", [((1, 1), 1), ((1, 9), 3), ((0, 1), 1), ((2, 3), 3), ((1, 2), 2),
                       ((4, 5), None), ((0, 0), None)]
)
def test_negotiate(theirs, chosen):
    assert wire.negotiate(theirs) == chosen


def test_launch_spec_and_result_round_trip():
    spec = wire.LaunchSpec(
        runtime_id="r", argv=["sh"], cwd="/", env={"A": "b"}, rows=50, cols=200, term="xterm-256color",
        socket_path="/tmp/x.sock", records_dir="/tmp", ring_bytes=1, output_frame_bytes=1,
        send_buffer_bytes=1, input_buffer_bytes=1, max_frame_bytes=1, drain_grace_seconds=0.0,
        exit_linger_seconds=0.0,
    )
    assert wire.decode_launch_spec(wire.encode(spec)) == spec
    for result in (wire.Ready(identity=IDENTITY), wire.LaunchFailed(code="not_found", message="m")):
        assert wire.decode_launch_result(wire.encode(result)) == result
    with pytest.raises(wire.WireDecodeError, match=r"invalid launch spec: Object missing required field `argv`"):
        wire.decode_launch_spec(msgspec.msgpack.encode({"runtime_id": "r"}))


if __name__ == "__main__" and sys.argv[1:] == ["--write-fixture"]:
    if FIXTURE_V3.exists():
        sys.exit(f"{FIXTURE_V3} exists: fixtures are written once, by the build of their version")
    FIXTURE_V3.write_bytes(_fixture_bytes())
    print(f"wrote {FIXTURE_V3}")
