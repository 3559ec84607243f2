"""A blocking client: a thin loop of stdlib socket calls around the sans-IO
`ClientConnection` — the same framing and codec the daemon uses, no second copy.

Requests may be pipelined: `send` returns an id and `receive(id)` collects that answer,
stashing any other answers that arrive first. `call` returns plain data (dicts and lists);
`call_typed` checks the params locally against the method's Struct and decodes the answer
as the method's typed result (vigil.protocol.methods). No trio, pyte or lmdb is imported
here, so a CLI call starts in tens of milliseconds.
"""

from __future__ import annotations

import errno
import os
import socket
from collections import deque
from typing import Any

from vigil.protocol import paths
from vigil.protocol.codec import Encoding
import msgspec

from vigil.protocol.api.daemon import LOCAL_PRINCIPAL, HelloResult
from vigil.protocol.connection import ClientConnection, Event, Reply
from vigil.protocol.errors import ErrorCode, RemoteError, RemoteProtocolError, VigilError, invalid_request
from vigil.protocol.methods import lookup

RECEIVE_BYTES = 1 << 20


class DaemonUnreachable(VigilError):
    """Nothing answers on the socket (and autostart, if asked for, did not help)."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.UNAVAILABLE, message)


class Client:
    """One connection to vigild. Use as a context manager or call `close()`."""

    def __init__(self, socket_path: str | os.PathLike | None = None, *,
                 encoding: Encoding | str = Encoding.MSGPACK, client_name: str = "vigil",
                 timeout: float | None = None, principal: str = LOCAL_PRINCIPAL,
                 wait_profile: str = "local"):
        self.socket_path = os.fspath(socket_path or paths.socket_path())
        self._conn = ClientConnection(encoding=Encoding(encoding), client_name=client_name,
                                      principal=principal, wait_profile=wait_profile)
        self._replies: dict[int | str | None, Reply] = {}
        self._events: deque[Event] = deque()
        self.welcome: HelloResult | None = None
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(self.socket_path)
        except OSError as exc:
            self._sock.close()
            raise DaemonUnreachable(_unreachable_message(self.socket_path, exc)) from None
        hello_id, frame = self._conn.hello()
        self._sock.sendall(frame)
        self.welcome = self.receive(hello_id, HelloResult)

    # -- calls --

    def call(self, method: str, params: Any = None, /, **kwargs: Any) -> Any:
        """Send one request and return its result.

        Raises:
            RemoteError: the daemon answered with an error (code, message, data).
            DaemonUnreachable: the connection was lost.
        """
        return self.receive(self.send(method, params if params is not None else kwargs))

    def call_typed(self, method: str, params: Any) -> Any:
        """Send one request and return its result decoded as the method's typed Struct.

        `params` is the method's params Struct, or a dict that is checked against it here
        first (a bad one raises `invalid_request` naming the field, nothing is sent).

        Raises:
            RemoteError, DaemonUnreachable: as `call`.
        """
        entry = lookup(method)
        if entry is None:
            raise VigilError(ErrorCode.METHOD_NOT_FOUND, f"unknown method {method!r}")
        if not isinstance(params, entry.params):
            try:
                params = msgspec.convert(params, entry.params)
            except msgspec.ValidationError as exc:
                raise invalid_request(f"{exc}", "params") from None
        return self.receive(self.send(method, params), entry.result_type(params))

    def send(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; returns the id to pass to `receive`."""
        request_id, frame = self._conn.request(method, params)
        try:
            self._sock.sendall(frame)
        except OSError as exc:
            raise DaemonUnreachable(f"lost the connection to vigild: {exc.strerror}") from None
        return request_id

    def receive(self, request_id: int | str | None, type_: Any = Any) -> Any:
        """Block until the answer to `request_id` arrives; return its result (decoded as
        `type_`) or raise."""
        while request_id not in self._replies:
            self._pump()
        reply = self._replies.pop(request_id)
        if reply.error is not None:
            raise RemoteError(reply.error.code, reply.error.message, reply.error.data)
        return self._conn.decode_result(reply.result, type_)

    def poll_reply(self, request_id: int | str | None, type_: Any = Any) -> tuple[bool, Any]:
        """(True, result) if the answer to `request_id` has arrived already, else (False,
        None); never blocks. Raises like `receive` for an error answer."""
        if request_id not in self._replies:
            return False, None
        return True, self.receive(request_id, type_)

    def next_event(self, type_: Any = Any) -> Any:
        """Block until the daemon pushes an event; return its params (decoded as `type_`)."""
        while not self._events:
            self._pump()
        return self._conn.decode_result(self._events.popleft().params, type_)

    def _pump(self) -> None:
        try:
            data = self._sock.recv(RECEIVE_BYTES)
        except TimeoutError:
            raise
        except OSError as exc:
            raise DaemonUnreachable(f"lost the connection to vigild: {exc.strerror}") from None
        if not data:
            self._conn.receive_eof()
            raise DaemonUnreachable("vigild closed the connection")
        self._conn.receive_data(data)
        while (message := self._conn.next_message()) is not None:
            if isinstance(message, Event):
                self._events.append(message)
            elif message.id is None and message.error is not None:
                # An error for no particular request (the daemon could not read one, or is
                # closing the connection): it answers whatever the caller is waiting for.
                raise RemoteError(message.error.code, message.error.message, message.error.data)
            else:
                self._replies[message.id] = message

    def pump_once(self, type_: Any = Any) -> list[Any]:
        """One receive (blocking unless data is ready): returns pushed event params that
        arrived (decoded as `type_`); replies are kept for `receive`. For select()-driven
        loops such as attach."""
        self._pump()
        events = [self._conn.decode_result(e.params, type_) for e in self._events]
        self._events.clear()
        return events

    def queued_events(self, type_: Any = Any) -> list[Any]:
        """Pushed event params that already arrived (decoded as `type_`); never blocks."""
        events = [self._conn.decode_result(e.params, type_) for e in self._events]
        self._events.clear()
        return events

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unreachable_message(path: str, exc: OSError) -> str:
    if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
        return f"vigild is not running (no one listens on {path})"
    if exc.errno == errno.EACCES:
        return f"permission denied on {path}"
    return f"cannot reach vigild on {path}: {exc.strerror}"


__all__ = ["Client", "DaemonUnreachable", "RemoteError", "RemoteProtocolError"]
