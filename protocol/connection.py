"""Connection state machines for both ends, sans-IO (bytes in, events out, bytes back).

The daemon drives a `ServerConnection`, the blocking client a `ClientConnection`; both sit
on the same `FrameDecoder` and codec, so there is exactly one copy of the framing.

States of a server connection (all transitions are in this file):

    AWAIT_HELLO --hello ok--> READY
    AWAIT_HELLO --a body nested too deep to decode--> AWAIT_HELLO (after invalid_request)
    AWAIT_HELLO --anything else / bad version--> CLOSED (after one error frame)
    READY --frame too large / undecodable envelope--> CLOSED (after one error frame)

A request whose *params* are wrong is answered with `invalid_request` and the connection
stays READY: the byte stream is still in sync, only that request was bad.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from .codec import Encoding, decode_as, decoder, encoder, sniff_encoding, too_deep
from .api.daemon import LOCAL_PRINCIPAL, HelloParams, HelloResult
from .envelope import (
    ErrorBody,
    ErrorEnvelope,
    EventEnvelope,
    IncomingEnvelope,
    RequestEnvelope,
    ResultEnvelope,
)
from .errors import ErrorCode, LocalProtocolError, ProtocolError, RemoteProtocolError
from .frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encode_frame
from .version import PROTOCOL_MAX, PROTOCOL_MIN


class State(enum.Enum):
    AWAIT_HELLO = "await_hello"
    READY = "ready"
    CLOSED = "closed"


# --- events a ServerConnection produces ----------------------------------------------------


class HelloReceived(msgspec.Struct):
    id: int | str | None
    hello: HelloParams


class RequestReceived(msgspec.Struct):
    id: int | str | None
    method: str
    params: msgspec.Raw | None


class BadRequest(msgspec.Struct):
    """A request that could not be understood; answer it and keep the connection."""

    id: int | str | None
    error: ErrorBody


class ConnectionFailed(msgspec.Struct):
    """The stream can't be trusted any more: send `reply` (if any) and close."""

    error: ErrorBody
    reply: bytes


def negotiate(client_range: tuple[int, int]) -> int | None:
    """Highest protocol version both sides speak, or None."""
    low, high = client_range
    best = min(high, PROTOCOL_MAX)
    return best if best >= max(low, PROTOCOL_MIN) and low <= high else None


class ServerConnection:
    """The daemon's side of one connection."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.state = State.AWAIT_HELLO
        self.encoding = Encoding.MSGPACK
        self.protocol: int | None = None
        self.client_name = ""
        #: Whom this connection's calls act for, and the default of its omitted waits
        #: (from hello; see `HelloParams`).
        self.principal = LOCAL_PRINCIPAL
        self.wait_profile = "local"
        self.max_frame_bytes = max_frame_bytes
        self._frames = FrameDecoder(max_frame_bytes)
        self._encoder = encoder(Encoding.MSGPACK)
        self._envelope_decoder = decoder(Encoding.MSGPACK, RequestEnvelope)

    # -- input --

    def receive_data(self, data: bytes) -> None:
        self._frames.feed(data)

    def receive_eof(self) -> ConnectionFailed | None:
        """End of stream: a partial frame is reported (nothing can be sent back)."""
        try:
            self._frames.check_eof()
        except ProtocolError as exc:
            self.state = State.CLOSED
            return ConnectionFailed(ErrorBody(exc.code.value, exc.message), b"")
        self.state = State.CLOSED
        return None

    def next_event(self) -> HelloReceived | RequestReceived | BadRequest | ConnectionFailed | None:
        """The next thing the peer asked for, or None until more bytes arrive."""
        if self.state is State.CLOSED:
            return None
        try:
            body = self._frames.next_frame()
        except ProtocolError as exc:
            return self._fail(None, exc.code, exc.message, exc.data)
        if body is None:
            return None
        if self.state is State.AWAIT_HELLO:
            return self._handshake(body)
        try:
            envelope = self._envelope_decoder.decode(body)
        except msgspec.ValidationError as exc:
            # The frame is intact, only its content is wrong: the stream is still in sync.
            return BadRequest(None, ErrorBody(ErrorCode.INVALID_REQUEST.value,
                                              f"invalid request envelope: {exc}"))
        except msgspec.DecodeError as exc:
            return BadRequest(None, ErrorBody(ErrorCode.INVALID_REQUEST.value,
                                              f"undecodable {self.encoding.value} body: {exc}"))
        except RecursionError:
            return BadRequest(None, ErrorBody(ErrorCode.INVALID_REQUEST.value,
                                              too_deep(self.encoding)))
        if envelope.method == "hello":
            return BadRequest(envelope.id, ErrorBody(ErrorCode.INVALID_REQUEST.value,
                                                     "hello was already completed"))
        return RequestReceived(envelope.id, envelope.method, envelope.params)

    def _handshake(self, body: bytes) -> HelloReceived | BadRequest | ConnectionFailed:
        self.encoding = sniff_encoding(body)
        self._encoder = encoder(self.encoding)
        self._envelope_decoder = decoder(self.encoding, RequestEnvelope)
        try:
            envelope = self._envelope_decoder.decode(body)
        except msgspec.DecodeError as exc:
            return self._fail(None, ErrorCode.HANDSHAKE_REQUIRED,
                              f"the first frame must be a hello request ({exc})")
        except RecursionError:
            # The frame was whole and in sync, only too deep to read: answer it and keep
            # waiting for a hello the daemon can read.
            return BadRequest(None, ErrorBody(ErrorCode.INVALID_REQUEST.value,
                                              too_deep(self.encoding)))
        if envelope.method != "hello":
            return self._fail(envelope.id, ErrorCode.HANDSHAKE_REQUIRED,
                              f"the first request must be 'hello', not {envelope.method!r}")
        try:
            hello = decode_as(envelope.params if len(envelope.params) else _empty(self.encoding), HelloParams,
                              self.encoding, "$.params")
        except RemoteProtocolError as exc:
            return self._fail(envelope.id, ErrorCode.HANDSHAKE_REQUIRED,
                              f"invalid hello: {exc.message}", exc.data)
        if hello.encoding != self.encoding.value:
            return self._fail(envelope.id, ErrorCode.HANDSHAKE_REQUIRED,
                              f"hello was sent as {self.encoding.value} but asks for "
                              f"{hello.encoding}; send hello in the encoding you want")
        version = negotiate(hello.protocol)
        if version is None:
            low, high = hello.protocol
            return self._fail(
                envelope.id, ErrorCode.UNSUPPORTED_PROTOCOL,
                f"client speaks protocol {low}..{high}, daemon speaks "
                f"{PROTOCOL_MIN}..{PROTOCOL_MAX}",
                {"client": [low, high], "daemon": [PROTOCOL_MIN, PROTOCOL_MAX]},
            )
        self.protocol = version
        self.client_name = hello.client
        self.principal = hello.principal
        self.wait_profile = hello.wait_profile
        return HelloReceived(envelope.id, hello)

    def _fail(self, id_, code: ErrorCode, message: str, data: dict | None = None
              ) -> ConnectionFailed:
        error = ErrorBody(code.value, message, data or {})
        reply = encode_frame(self._encoder.encode(ErrorEnvelope(id_, error)))
        self.state = State.CLOSED
        return ConnectionFailed(error, reply)

    # -- output --

    def accept_hello(self, id_: int | str | None, result: HelloResult) -> bytes:
        if self.state is not State.AWAIT_HELLO or self.protocol is None:
            raise LocalProtocolError(ErrorCode.INTERNAL, "accept_hello outside the handshake")
        self.state = State.READY
        return self.send_result(id_, result)

    def decode_params(self, params: msgspec.Raw | None, type_: Any) -> Any:
        """Validate a request's params as `type_` (raises `invalid_request` naming the field)."""
        return decode_as(params if params is not None and len(params) else _empty(self.encoding), type_,
                         self.encoding, "$.params")

    def send_result(self, id_: int | str | None, result: Any) -> bytes:
        return encode_frame(self._encoder.encode(ResultEnvelope(id_, result)), self.max_frame_bytes)

    def send_error(self, id_: int | str | None, code: ErrorCode | str, message: str,
                   data: dict | None = None) -> bytes:
        code_s = str(code)
        return encode_frame(self._encoder.encode(ErrorEnvelope(id_, ErrorBody(code_s, message, data or {}))))

    def send_event(self, params: Any) -> bytes:
        return encode_frame(self._encoder.encode(EventEnvelope(params)), self.max_frame_bytes)


def _empty(encoding: Encoding) -> bytes:
    return b"{}" if encoding is Encoding.JSON else b"\x80"


# --- the client side -------------------------------------------------------------------------
#
# States of a client connection (all transitions are here):
#
#     AWAIT_WELCOME --hello answered--> READY
#     AWAIT_WELCOME --hello refused--> CLOSED
#     any --end of stream / undecodable frame--> CLOSED
#
# `hello()` is the only request allowed before READY; requests after CLOSED are refused
# locally (LocalProtocolError), never sent.


class ClientState(enum.Enum):
    AWAIT_WELCOME = "await_welcome"
    READY = "ready"
    CLOSED = "closed"


class Reply(msgspec.Struct):
    """The answer to request `id`: exactly one of `result` / `error` is meaningful. `result`
    is raw: decode it with `decode_result` as the type the method answers with."""

    id: int | str | None
    result: msgspec.Raw | None
    error: ErrorBody | None


class Event(msgspec.Struct):
    """A pushed event; `params` is raw until decoded (`decode_result`)."""

    params: msgspec.Raw | None


class ClientConnection:
    """The client's side: builds hello and requests, parses replies and events."""

    def __init__(self, *, encoding: Encoding = Encoding.MSGPACK, client_name: str = "vigil",
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 protocol: tuple[int, int] = (PROTOCOL_MIN, PROTOCOL_MAX),
                 principal: str = LOCAL_PRINCIPAL, wait_profile: str = "local"):
        self.encoding = encoding
        self.client_name = client_name
        self.principal = principal
        self.wait_profile = wait_profile
        self.protocol_range = protocol
        self.state = ClientState.AWAIT_WELCOME
        self.welcome: HelloResult | None = None
        self._frames = FrameDecoder(max_frame_bytes)
        self._encoder = encoder(encoding)
        self._decoder = decoder(encoding, IncomingEnvelope)
        self._next_id = 0
        self._hello_id: int | None = None

    def hello(self) -> tuple[int, bytes]:
        if self._hello_id is not None:
            raise LocalProtocolError(ErrorCode.INVALID_REQUEST, "hello was already sent")
        params = HelloParams(protocol=self.protocol_range, encoding=self.encoding.value,
                             client=self.client_name, principal=self.principal,
                             wait_profile=self.wait_profile)
        self._hello_id, frame = self._request("hello", params)
        return self._hello_id, frame

    def request(self, method: str, params: Any = None) -> tuple[int, bytes]:
        """Encode a call; returns its id (unique on this connection) and the bytes to send.

        Raises:
            LocalProtocolError: before the daemon answered hello, or after the connection
                closed (`handshake_required` / `unavailable`).
        """
        if self.state is ClientState.AWAIT_WELCOME:
            raise LocalProtocolError(ErrorCode.HANDSHAKE_REQUIRED,
                                     f"{method!r} before the daemon answered hello")
        if self.state is ClientState.CLOSED:
            raise LocalProtocolError(ErrorCode.UNAVAILABLE, "the connection is closed")
        return self._request(method, params)

    def _request(self, method: str, params: Any) -> tuple[int, bytes]:
        self._next_id += 1
        body = {"id": self._next_id, "method": method, "params": params if params is not None else {}}
        return self._next_id, encode_frame(self._encoder.encode(body))

    def receive_data(self, data: bytes) -> None:
        self._frames.feed(data)

    def receive_eof(self) -> None:
        self.state = ClientState.CLOSED
        self._frames.check_eof()

    def next_message(self) -> Reply | Event | None:
        if self.state is ClientState.CLOSED:
            return None
        try:
            body = self._frames.next_frame()
        except ProtocolError:
            self.state = ClientState.CLOSED
            raise
        if body is None:
            return None
        try:
            env = self._decoder.decode(body)
        except msgspec.DecodeError as exc:
            self.state = ClientState.CLOSED
            raise RemoteProtocolError(ErrorCode.MALFORMED_FRAME,
                                      f"undecodable reply from daemon: {exc}") from None
        except RecursionError:
            self.state = ClientState.CLOSED
            raise RemoteProtocolError(ErrorCode.MALFORMED_FRAME,
                                      f"reply from daemon: {too_deep(self.encoding)}") from None
        if env.method == "event" and env.id is None and not len(env.result):
            return Event(env.params if len(env.params) else None)
        reply = Reply(env.id, env.result if len(env.result) else None, env.error)
        if self.state is ClientState.AWAIT_WELCOME and reply.id == self._hello_id:
            if reply.error is not None:
                self.state = ClientState.CLOSED
            else:
                self.welcome = self.decode_result(reply.result, HelloResult)
                self.state = ClientState.READY
        return reply

    def decode_result(self, raw: msgspec.Raw | None, type_: Any = Any) -> Any:
        """A raw result or event as `type_` (builtins with the default `Any`).

        Raises:
            RemoteProtocolError: the daemon's answer does not have the type it should
                (`malformed_frame`): a daemon/client version skew or a daemon bug.
        """
        if raw is None:
            return None
        try:
            return decoder(self.encoding, type_).decode(raw)
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(ErrorCode.MALFORMED_FRAME,
                                      f"the daemon's answer is not the expected "
                                      f"{getattr(type_, '__name__', type_)}: {exc}") from None
        except RecursionError:
            raise RemoteProtocolError(ErrorCode.MALFORMED_FRAME,
                                      f"the daemon's answer: {too_deep(self.encoding)}") from None
