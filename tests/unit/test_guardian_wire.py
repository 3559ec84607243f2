"""Guardian wire protocol: round trips, exact decode errors, and the checked-in v1 fixture.

The fixture `tests/fixtures/guardian_wire_v1.msgpack` holds bodies encoded by the v1 build,
in both directions, plus v1 exit records. Every later build must still decode them to the
values below (a new daemon must read an old guardian). Never regenerate it to make a test
pass; it was written once with `python tests/unit/test_guardian_wire.py --write-fixture`.
"""

import pathlib
import sys

import msgspec
import pytest

from vigil.daemon.guardian import records, wire
from vigil.protocol.frames import FrameDecoder, encode_frame

FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "guardian_wire_v1.msgpack"

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


def _fixture_bytes() -> bytes:
    enc = msgspec.msgpack.Encoder()
    return msgspec.msgpack.encode(
        {
            "daemon": [enc.encode(m) for m in V1_DAEMON],
            "guardian": [enc.encode(m) for m in V1_GUARDIAN],
            "exit": enc.encode(V1_EXIT),
            "tail": enc.encode(V1_TAIL),
        }
    )


def test_v1_fixture_still_decodes():
    stored = msgspec.msgpack.decode(FIXTURE.read_bytes())
    assert [wire.decode_daemon_message(b) for b in stored["daemon"]] == V1_DAEMON
    assert [wire.decode_guardian_message(b) for b in stored["guardian"]] == V1_GUARDIAN
    assert msgspec.msgpack.decode(stored["exit"], type=records.ExitRecord) == V1_EXIT
    assert msgspec.msgpack.decode(stored["tail"], type=records.TailRecord) == V1_TAIL


def test_v1_fixture_is_what_this_build_encodes():
    # Not required for compatibility, but a change here means the encoding changed: decide
    # consciously (and keep the old fixture decoding) rather than by accident.
    assert FIXTURE.read_bytes() == _fixture_bytes()


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
    "theirs, chosen", [((1, 1), 1), ((1, 9), 1), ((0, 1), 1), ((2, 3), None), ((0, 0), None)]
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
    FIXTURE.write_bytes(_fixture_bytes())
    print(f"wrote {FIXTURE}")
