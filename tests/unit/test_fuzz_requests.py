"""Fuzzing the daemon's input surfaces with hypothesis.

- every request params Struct of the method registry, fed random JSON-like values (mostly
  near-valid: keys from the protocol's own field names, tags from its own unions) through
  `ServerConnection.decode_params`: a Struct, or `invalid_request`, never another exception;
- the cursor codec: random text and every mutation of a valid cursor → `CursorError` only;
- the screen keeper: random byte streams rich in escape and malformed UTF-8 fragments,
  split at random points → never raises, and still renders;
- end to end: random frames to a real daemon, which keeps answering `ping`.

Short in CI; `VIGIL_LONG_FUZZ=1` runs 100k examples per property (profiles below).
"""

from __future__ import annotations

import os
import socket

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.support.daemon import VigilHome
from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.store.cursor import (
    CATALOG,
    PAGE,
    CursorFields,
    decode_catalog_cursor,
    decode_cursor,
    encode_catalog_cursor,
    encode_cursor,
)
from vigil.daemon.store.errors import CursorError
from vigil.daemon.store.records import scope_hash
from vigil.protocol.codec import Encoding
from vigil.protocol.connection import ClientConnection, ServerConnection
from vigil.protocol.errors import ErrorCode, RemoteProtocolError
from vigil.protocol.frames import encode_frame
from vigil.protocol.methods import all_methods

LONG = os.environ.get("VIGIL_LONG_FUZZ") == "1"
#: CI: 100 examples per property keeps this file at a few seconds. Long: the issue's 100k.
settings.register_profile("vigil-ci", max_examples=100, deadline=None)
settings.register_profile("vigil-long", max_examples=100_000, deadline=None)
PROFILE = settings.get_profile("vigil-long" if LONG else "vigil-ci")
#: The end-to-end run costs a round trip per example: 300 in CI, 10k in the long run.
E2E = settings(PROFILE, max_examples=10_000 if LONG else 300,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

METHODS = all_methods()


def _field_names() -> list[str]:
    names: set[str] = set()

    def walk(t, seen):
        if t in seen:
            return
        seen.add(t)
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            for f in msgspec.structs.fields(t):
                names.add(f.encode_name)
                walk(f.type, seen)
        for arg in getattr(t, "__args__", ()) or ():
            walk(arg, seen)

    seen: set = set()
    for m in METHODS:
        walk(m.params, seen)
    return sorted(names)


FIELDS = _field_names()
#: Values the protocol itself uses as tags and enums, so unions and literals get hit.
WORDS = ["list", "get", "read", "observe", "wait", "explain", "command", "status_check",
         "send_text", "send_specials", "send_ascii", "output", "screen", "detection", "exited",
         "state", "TERM", "KILL", "msgpack", "json", "auto", "Enter", "C-c", "."]

scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
           | st.sampled_from(WORDS) | st.binary(max_size=16))
keys = st.sampled_from(FIELDS + ["type"]) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(keys, inner, max_size=6), max_leaves=20)
params_like = st.dictionaries(keys, values, max_size=8) | values


ENCODERS = {Encoding.MSGPACK: msgspec.msgpack.encode, Encoding.JSON: msgspec.json.encode}


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_request_params_decode_or_invalid_request(method):
    # The long run's 100k inputs are shared among the methods (≈ 7k each).
    @settings(PROFILE, max_examples=PROFILE.max_examples // (len(METHODS) if LONG else 1))
    @given(params_like, st.sampled_from(list(ENCODERS)))
    def check(value, encoding):
        conn = ServerConnection()
        conn.encoding = encoding  # decode_params reads the encoding the hello chose
        try:
            body = ENCODERS[encoding](value)
        except (TypeError, ValueError, OverflowError):  # not representable in this encoding
            return
        try:
            decoded = conn.decode_params(msgspec.Raw(body), method.params)
        except RemoteProtocolError as exc:
            assert exc.code is ErrorCode.INVALID_REQUEST, exc
            assert isinstance(exc.message, str) and exc.message
        else:
            assert isinstance(decoded, method.params)

    check()


KEY = bytes(range(32))
EPOCH = b"e" * 16
SCOPE = "/ws\x00thread"
EID = "ab" * 16


def _valid(kind: str) -> str:
    if kind == CATALOG:
        return encode_catalog_cursor(KEY, EPOCH, SCOPE, 42)
    return encode_cursor(KEY, CursorFields(kind=PAGE, scope=scope_hash(SCOPE), store_epoch=EPOCH,
                                           execution_id=bytes.fromhex(EID), source="output",
                                           offset=1234))


def _decode(kind: str, text):
    if kind == CATALOG:
        return decode_catalog_cursor(KEY, text, EPOCH, SCOPE)
    return decode_cursor(KEY, text, expect_kind=PAGE, expect_scope=SCOPE, store_epoch=EPOCH,
                         expect_execution_id=EID, expect_source="output")


def test_the_valid_cursors_decode():
    assert _decode(CATALOG, _valid(CATALOG)) == 42
    assert _decode(PAGE, _valid(PAGE)).offset == 1234


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@pytest.mark.parametrize("kind", [PAGE, CATALOG])
@settings(PROFILE)
@given(text=st.text(max_size=600) | st.text(alphabet=B64, max_size=200)
       | st.integers() | st.none() | st.binary(max_size=64))
def test_random_cursor_text_is_cursor_error(kind, text):
    with pytest.raises(CursorError):
        _decode(kind, text)


@st.composite
def mutated(draw, kind):
    text = list(_valid(kind))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "drop", "insert", "truncate", "append"]))
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        if op == "flip" and text:
            text[i] = draw(st.sampled_from(B64 + "=+/ \x00é"))
        elif op == "drop" and text:
            del text[i]
        elif op == "insert":
            text.insert(i, draw(st.sampled_from(B64 + "=")))
        elif op == "truncate":
            del text[i:]
        else:
            text += draw(st.text(alphabet=B64, min_size=1, max_size=8))
    return "".join(text)


@pytest.mark.parametrize("kind", [PAGE, CATALOG])
@settings(PROFILE)
@given(data=st.data())
def test_mutated_cursors_are_cursor_error(kind, data):
    text = data.draw(mutated(kind))
    if text == _valid(kind):
        return  # the mutations cancelled out: still the valid cursor
    with pytest.raises(CursorError):
        _decode(kind, text)


FRAGMENTS = [b"\x1b", b"\x1b[", b"\x1b]", b"\x1bP", b"\x1b[?", b"\x9b", b"\x9d", b"\x07",
             b"\x1b\\", b"1049h", b"1049l", b"?25l", b"6n", b"c", b">c", b";", b"0;title",
             b"38;5;", b"48;2;1;2;3m", b"9999999999", b"H", b"J", b"K", b"m", b"r", b"@",
             b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf",
             "é漢😀\u0301".encode(), b"\r\n", b"\t", b"\x08", b"\x00", b"x" * 250]
chunks = st.lists(st.sampled_from(FRAGMENTS) | st.binary(max_size=32), max_size=60)


@settings(PROFILE)
@given(chunks, st.integers(2, 30), st.integers(2, 90), st.lists(st.integers(0, 200), max_size=5),
       st.one_of(st.none(), st.tuples(st.integers(2, 40), st.integers(2, 120))))
def test_screen_keeper_never_raises(parts, rows, cols, cuts, resize):
    k = ScreenKeeper(rows, cols)
    data = b"".join(parts)
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in zip(points, points[1:]):
        k.feed(data[a:b])
        k.process(0.05)
    if resize:
        k.resize(*resize)
    while k.process(1.0, backlog_seconds=1e9):
        pass
    snap = k.snapshot()
    assert len(snap.lines) == (resize[0] if resize else rows)
    assert isinstance(k.ansi(), str)
    k.take_replies()


# --- end to end: a real daemon fed random frames ------------------------------------------------


@pytest.fixture(scope="module")
def live():
    home = VigilHome()
    daemon = home.start_daemon()
    try:
        with home.client() as c:
            yield home, c, daemon
    finally:
        home.cleanup()


def _hello() -> bytes:
    return ClientConnection().hello()[1]


envelopes = st.fixed_dictionaries(
    {"id": st.integers(-5, 2**40) | st.text(max_size=8) | st.none(),
     "method": st.sampled_from([m.name for m in METHODS] + ["", "nope", "hello"]) | st.text(max_size=10)},
    optional={"params": params_like, "extra": values})
def _packed(value) -> bytes:
    """msgpack of `value`; ints outside msgpack's 64 bits become a reserved byte (0xc1,
    "never used"), itself a malformed body worth sending."""
    try:
        return msgspec.msgpack.encode(value)
    except OverflowError:
        return b"\xc1"


frame_bodies = envelopes.map(_packed) | values.map(_packed) | st.binary(max_size=200)
streams = st.lists(
    frame_bodies.map(encode_frame)
    | st.binary(max_size=64)  # bytes that are no frame at all (desync, bogus lengths)
    | st.integers(2**24, 2**32 - 1).map(lambda n: n.to_bytes(4, "big")),  # huge length headers
    min_size=1, max_size=6)


@E2E
@given(with_hello=st.booleans(), stream=streams)
def test_random_frames_leave_the_daemon_answering(live, with_hello, stream):
    home, c, daemon = live
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(str(home.socket))
        try:
            sock.sendall((_hello() if with_hello else b"") + b"".join(stream))
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):  # the daemon answers or closes; never hangs past EOF
                pass
        except (BrokenPipeError, ConnectionResetError):
            pass  # it closed on us first: a clean refusal
    finally:
        sock.close()
    assert c.call("ping", {}) is not None
    log = daemon.log.read_text()
    assert "Traceback" not in log and "internal" not in log.lower(), log[-3000:]
