"""The sans-IO protocol core: framing split every way, both encodings, exact errors."""

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from vigil.protocol.codec import Encoding
from vigil.protocol.connection import (
    BadRequest,
    ClientConnection,
    ConnectionFailed,
    HelloReceived,
    RequestReceived,
    ServerConnection,
    ClientState,
    State,
    negotiate,
)
from vigil.protocol.api.daemon import HelloResult, PingParams, PingResult
from vigil.protocol.errors import ErrorCode, LocalProtocolError, RemoteProtocolError
from vigil.protocol.frames import FrameDecoder, encode_frame
from vigil.protocol.methods import all_methods
from vigil.protocol.schema import export_schema
from vigil.daemon.settings import Settings, SettingsError, load_settings

BODIES = [b"", b"a", b"hello world", bytes(range(256)) * 3]


def stream() -> bytes:
    return b"".join(encode_frame(b) for b in BODIES)


def drain(dec: FrameDecoder) -> list[bytes]:
    out = []
    while (frame := dec.next_frame()) is not None:
        out.append(frame)
    return out


def test_frames_whole():
    dec = FrameDecoder()
    dec.feed(stream())
    assert drain(dec) == BODIES
    assert dec.buffered == 0


def test_frames_byte_by_byte():
    dec = FrameDecoder()
    got = []
    for i in range(len(data := stream())):
        dec.feed(data[i : i + 1])
        got += drain(dec)
    assert got == BODIES


def test_frames_trailing_partial():
    dec = FrameDecoder()
    dec.feed(stream() + b"\x00\x00\x00\x09abc")
    assert drain(dec) == BODIES
    assert dec.buffered == 7
    with pytest.raises(RemoteProtocolError) as info:
        dec.check_eof()
    assert info.value.code is ErrorCode.MALFORMED_FRAME
    assert info.value.message == "connection closed inside a frame (7 bytes of it received)"


def test_oversized_prefix_refused_before_body():
    dec = FrameDecoder(max_frame_bytes=1024)
    dec.feed(b"\xff\xff\xff\xff")
    with pytest.raises(RemoteProtocolError) as info:
        dec.next_frame()
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE
    assert info.value.message == (
        "announced frame of 4294967295 bytes exceeds the maximum of 1024 bytes")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8), st.lists(st.integers(0, 4000), max_size=10))
def test_frames_any_split(bodies, cuts):
    data = b"".join(encode_frame(b) for b in bodies)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    dec = FrameDecoder()
    got = []
    for a, b in zip(points, points[1:]):
        dec.feed(data[a:b])
        got += drain(dec)
    assert got == bodies


@pytest.fixture(params=[Encoding.MSGPACK, Encoding.JSON])
def pair(request):
    client = ClientConnection(encoding=request.param)
    server = ServerConnection()
    hid, frame = client.hello()
    server.receive_data(frame)
    event = server.next_event()
    assert isinstance(event, HelloReceived)
    assert event.hello.encoding == request.param.value
    reply = server.accept_hello(event.id, HelloResult(protocol=1, daemon_version="v",
                                                      daemon_epoch="e", capabilities=[],
                                                      max_frame_bytes=99))
    client.receive_data(reply)
    welcome = client.next_message()
    assert welcome.id == hid and client.welcome.max_frame_bytes == 99
    assert server.state is State.READY and client.state is ClientState.READY
    return client, server


def test_request_round_trip(pair):
    client, server = pair
    rid, frame = client.request("ping", {"payload": "x"})
    server.receive_data(frame)
    event = server.next_event()
    assert isinstance(event, RequestReceived) and event.id == rid and event.method == "ping"
    assert server.decode_params(event.params, PingParams) == PingParams(payload="x")
    client.receive_data(server.send_result(rid, PingResult(payload="x")))
    reply = client.next_message()
    assert client.decode_result(reply.result) == {"pong": True, "payload": "x"}
    assert client.decode_result(reply.result, PingResult) == PingResult(payload="x")
    with pytest.raises(RemoteProtocolError, match="not the expected HelloResult"):
        client.decode_result(reply.result, HelloResult)


def test_client_requests_only_after_the_welcome():
    client = ClientConnection()
    with pytest.raises(LocalProtocolError) as info:
        client.request("ping")
    assert info.value.code is ErrorCode.HANDSHAKE_REQUIRED
    server = ServerConnection()
    _, frame = client.hello()
    server.receive_data(frame)
    server.next_event()
    client.receive_data(server.send_error(1, ErrorCode.UNSUPPORTED_PROTOCOL, "no"))
    assert client.next_message().error.code == "unsupported_protocol"
    assert client.state is ClientState.CLOSED
    with pytest.raises(LocalProtocolError) as info:
        client.request("ping")
    assert info.value.code is ErrorCode.UNAVAILABLE


def test_wrong_param_type_names_the_field(pair):
    client, server = pair
    _, frame = client.request("ping", {"payload": 7})
    server.receive_data(frame)
    event = server.next_event()
    with pytest.raises(RemoteProtocolError) as info:
        server.decode_params(event.params, PingParams)
    assert info.value.code is ErrorCode.INVALID_REQUEST
    assert info.value.message == "Expected `str`, got `int` - at `$.params.payload`"
    assert info.value.data == {"field": "params.payload"}


def test_unknown_fields_are_ignored(pair):
    client, server = pair
    _, frame = client.request("ping", {"payload": "a", "future_field": [1, 2]})
    server.receive_data(frame)
    event = server.next_event()
    assert server.decode_params(event.params, PingParams).payload == "a"


def test_bad_envelope_keeps_connection(pair):
    client, server = pair
    body = msgspec.json.encode([1, 2]) if client.encoding is Encoding.JSON else msgspec.msgpack.encode([1, 2])
    server.receive_data(encode_frame(body))
    event = server.next_event()
    assert isinstance(event, BadRequest) and event.error.code == "invalid_request"
    assert server.state is State.READY


def test_request_before_hello_fails_connection():
    server = ServerConnection()
    server.receive_data(encode_frame(msgspec.msgpack.encode({"id": 1, "method": "ping"})))
    event = server.next_event()
    assert isinstance(event, ConnectionFailed)
    assert event.error.code == "handshake_required"
    assert event.error.message == "the first request must be 'hello', not 'ping'"
    assert server.state is State.CLOSED and event.reply


def test_unsupported_version_names_both_ranges():
    client = ClientConnection(protocol=(7, 9))
    server = ServerConnection()
    server.receive_data(client.hello()[1])
    event = server.next_event()
    assert isinstance(event, ConnectionFailed)
    assert event.error.code == "unsupported_protocol"
    assert event.error.message == "client speaks protocol 7..9, daemon speaks 1..1"
    assert event.error.data == {"client": [7, 9], "daemon": [1, 1]}


def test_negotiate():
    assert negotiate((1, 5)) == 1
    assert negotiate((0, 0)) is None
    assert negotiate((2, 1)) is None


def test_schema_covers_every_method():
    schema = export_schema()
    assert set(schema["methods"]) == {m.name for m in all_methods()}
    assert "invalid_request" in schema["error_codes"]
    msgspec.json.encode(schema)


def test_settings_defaults_are_the_specs():
    s = Settings()
    assert (s.read_page_bytes_default, s.read_page_bytes_max) == (16384, 65536)
    assert (s.observe_items_max, s.observe_page_bytes_default, s.observe_total_bytes_max) == (32, 2048, 65536)
    assert s.retention_records_per_scope == 128 and s.retention_output_bytes == 1 << 20
    assert s.retention_terminal_seconds == 86400 and s.max_frame_bytes == 16 << 20


def test_settings_file_rejects_typos_and_out_of_range(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("max_frame_bytez = 5\n")
    with pytest.raises(SettingsError, match="unknown field `max_frame_bytez`"):
        load_settings(path)
    path.write_text("read_page_bytes_max = 1\n")
    with pytest.raises(SettingsError, match=r"Expected `int` >= 4 - at `\$.read_page_bytes_max`"):
        load_settings(path)
    path.write_text("observe_items_max = 8\n")
    assert load_settings(path).observe_items_max == 8


def test_settings_doc_is_current():
    from pathlib import Path

    from vigil.daemon.settings import settings_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
    assert doc.read_text() == settings_markdown(), (
        "docs/settings.md is stale: regenerate it with "
        "python -c 'from vigil.daemon.settings import settings_markdown as m; "
        "open(\"docs/settings.md\",\"w\").write(m())'")


def test_the_family_table_names_each_methods_module():
    """`lookup` imports only a method's family: the table must say the right one."""
    from vigil.protocol.methods import FAMILY

    methods = all_methods()
    assert set(FAMILY) == {m.name for m in methods}
    for m in methods:
        assert m.params.__module__ == f"vigil.protocol.api.{FAMILY[m.name]}", m.name
