"""Bad input against a real daemon process: every case is answered or refused with a finite
code, the daemon keeps answering `ping` on another connection, and nothing leaks (fds in
/proc/PID/fd, trio tasks as the daemon counts them)."""

import socket

import msgspec
import pytest

from tests.support.daemon import RawConnection, wait_for
from vigil.protocol.errors import RemoteError
from vigil.protocol.frames import encode_frame

HELLO = msgspec.msgpack.encode({"id": 0, "method": "hello",
                                "params": {"protocol": [1, 1], "encoding": "msgpack"}})


def baseline(home):
    with home.client() as c:
        st = c.call("status")
    return st["open_fds"], st["tasks"]


def assert_healthy(home, daemon, base):
    """Another connection is served, and fds/tasks return to what they were."""
    def settled():
        with home.client() as c:
            assert c.call("ping", payload="still here") == {"pong": True, "payload": "still here"}
            st = c.call("status")
        return (st["open_fds"], st["tasks"]) == base and st["connections"] == 1
    wait_for(settled, what="fds and tasks back to baseline")


def error_of(frame: bytes) -> dict:
    return msgspec.msgpack.decode(frame)["error"]


def test_four_gib_prefix_is_refused_without_allocating(home, daemon):
    base = baseline(home)
    rss_before = rss_kib(daemon.pid)
    raw = RawConnection(home.socket)
    raw.send(encode_frame(HELLO))
    assert raw.read_frame() is not None
    raw.send(b"\xff\xff\xff\xff" + b"x" * 100)
    err = error_of(raw.read_frame())
    assert err["code"] == "frame_too_large"
    assert err["message"] == ("announced frame of 4294967295 bytes exceeds the maximum of "
                              "16777216 bytes")
    assert raw.read_eof()
    raw.close()
    assert rss_kib(daemon.pid) - rss_before < 64 * 1024  # far below 4 GiB, or even 64 MiB
    assert_healthy(home, daemon, base)


def test_garbage_bytes(home, daemon):
    base = baseline(home)
    raw = RawConnection(home.socket)
    raw.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    err = error_of(raw.read_frame())
    assert err["code"] == "frame_too_large"  # "GET " read as a length is 1.2 GB
    assert raw.read_eof()
    raw.close()
    raw = RawConnection(home.socket)
    raw.send(encode_frame(b"\xc1\xc1garbage"))
    err = error_of(raw.read_frame())
    assert err["code"] == "handshake_required"
    assert err["message"].startswith("the first frame must be a hello request")
    assert raw.read_eof()
    raw.close()
    assert_healthy(home, daemon, base)


def test_truncated_frame_then_disconnect(home, daemon):
    base = baseline(home)
    raw = RawConnection(home.socket)
    raw.send(encode_frame(HELLO))
    raw.read_frame()
    raw.send(b"\x00\x00\x10\x00" + b"partial")
    raw.close()
    assert_healthy(home, daemon, base)


def test_request_before_hello(home, daemon):
    base = baseline(home)
    raw = RawConnection(home.socket)
    raw.send(encode_frame(msgspec.msgpack.encode({"id": 5, "method": "ping", "params": {}})))
    frame = msgspec.msgpack.decode(raw.read_frame())
    assert frame == {"id": 5, "error": {"code": "handshake_required",
                                        "message": "the first request must be 'hello', not 'ping'"}}
    assert raw.read_eof()
    raw.close()
    assert_healthy(home, daemon, base)


def test_unknown_method_keeps_connection(home, daemon):
    base = baseline(home)
    with home.client() as c:
        with pytest.raises(RemoteError) as info:
            c.call("frobnicate", x=1)
        assert info.value.code.value == "method_not_found"
        assert info.value.message == "unknown method 'frobnicate'"
        assert c.call("ping") == {"pong": True, "payload": ""}
    assert_healthy(home, daemon, base)


@pytest.mark.parametrize("encoding", ["msgpack", "json"])
def test_wrong_parameter_type_names_field(home, daemon, encoding):
    base = baseline(home)
    with home.client(encoding=encoding) as c:
        with pytest.raises(RemoteError) as info:
            c.call("ping", payload=12)
        assert info.value.code.value == "invalid_request"
        assert info.value.message == "Expected `str`, got `int` - at `$.params.payload`"
        assert info.value.data == {"field": "params.payload"}
        with pytest.raises(RemoteError) as info:
            c.call("ping", [1, 2])
        assert info.value.message == "Expected `object`, got `array` - at `$.params`"
        assert c.call("ping", payload="ok")["payload"] == "ok"
    assert_healthy(home, daemon, base)


def test_unsupported_protocol_version(home, daemon):
    base = baseline(home)
    raw = RawConnection(home.socket)
    raw.send(encode_frame(msgspec.json.encode(
        {"id": 1, "method": "hello", "params": {"protocol": [3, 4], "encoding": "json"}})))
    frame = msgspec.json.decode(raw.read_frame())
    assert frame["error"]["code"] == "unsupported_protocol"
    assert frame["error"]["message"] == "client speaks protocol 3..4, daemon speaks 1..1"
    assert raw.read_eof()
    raw.close()
    assert_healthy(home, daemon, base)


def test_two_hundred_connections_dropped_at_once(home, daemon):
    base = baseline(home)
    socks = []
    for i in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(home.socket))
        if i % 2:
            s.sendall(encode_frame(HELLO))
        socks.append(s)
    for s in socks:
        s.close()
    assert_healthy(home, daemon, base)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")
