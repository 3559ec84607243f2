"""The MCP server's way to vigild: an async socket loop around the same sans-IO
`ClientConnection` the blocking client drives (one copy of the framing), and a pool of
such connections.

One call at a time per connection, and each call has a connection of its own for as long
as it runs. That is what makes the two promises of the MCP tools hold:

- a long wait never blocks another call of the same MCP session: the other call takes
  another connection (the daemon serves connections independently);
- a client cancelling a call cancels the daemon-side wait: the cancelled call's connection
  is closed, never returned to the pool, and the daemon cancels every handler of a
  connection that closes (daemon/rpc/server.py).

Idle connections are kept per (principal, wait profile), because `hello` fixes both for a
connection's lifetime. A kept connection whose daemon went away (a restart) shows EOF: it is
checked before reuse and replaced, so a call is never sent twice and never retried after it
may have reached a daemon.
"""

from __future__ import annotations

import errno
import socket
from collections import defaultdict
from typing import Any

import anyio
import anyio.abc

from vigil.protocol import paths
from vigil.protocol.codec import Encoding
from vigil.protocol.connection import ClientConnection, Event
from vigil.protocol.errors import ErrorCode, RemoteError, VigilError

RECEIVE_BYTES = 65536


class DaemonGone(VigilError):
    """The connection to vigild ended before the answer came (the call may or may not
    have taken effect: it is never resent)."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.UNAVAILABLE, message)


class DaemonConnection:
    """One connection to vigild for one call at a time."""

    def __init__(self, stream: anyio.abc.SocketStream, conn: ClientConnection):
        self._stream = stream
        self._conn = conn

    @classmethod
    async def open(cls, socket_path: str, *, client_name: str, principal: str,
                   wait_profile: str) -> "DaemonConnection":
        stream = await anyio.connect_unix(socket_path)
        conn = ClientConnection(encoding=Encoding.MSGPACK, client_name=client_name,
                                principal=principal, wait_profile=wait_profile)
        self = cls(stream, conn)
        try:
            hello_id, frame = conn.hello()
            await stream.send(frame)
            await self._receive(hello_id)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def call(self, method: str, params: Any) -> Any:
        """The result (plain data), or `RemoteError` with the daemon's code, message, data."""
        request_id, frame = self._conn.request(method, params)
        try:
            await self._stream.send(frame)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise DaemonGone(f"lost the connection to vigild: {exc}") from None
        return await self._receive(request_id)

    async def _receive(self, request_id: int) -> Any:
        while True:
            message = self._conn.next_message()
            if message is None:
                try:
                    data = await self._stream.receive(RECEIVE_BYTES)
                except anyio.EndOfStream:
                    raise DaemonGone("vigild closed the connection") from None
                except (anyio.BrokenResourceError, OSError) as exc:
                    raise DaemonGone(f"lost the connection to vigild: {exc}") from None
                self._conn.receive_data(data)
                continue
            if isinstance(message, Event):
                continue  # no tool method streams events
            if message.id != request_id and message.id is not None:
                continue
            if message.error is not None:
                raise RemoteError(message.error.code, message.error.message, message.error.data)
            return self._conn.decode_result(message.result)

    def at_eof(self) -> bool:
        """True when the daemon closed this idle connection (checked before reuse)."""
        sock: socket.socket = self._stream.extra(anyio.abc.SocketAttribute.raw_socket)
        try:
            return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()


class DaemonPool:
    """Connections to vigild, one per call in flight, a few kept idle per principal."""

    def __init__(self, socket_path: str | None = None, *, client_name: str = "vigil-mcp",
                 idle_max: int = 4, autostart: bool = True):
        self.socket_path = socket_path or paths.socket_path()
        self.client_name = client_name
        self.idle_max = idle_max
        self.autostart = autostart
        self._idle: dict[tuple[str, str], list[DaemonConnection]] = defaultdict(list)

    async def call(self, method: str, params: Any, *, principal: str = "local",
                   wait_profile: str = "local") -> Any:
        """One call on a connection of its own.

        Cancellation: the connection is closed, which cancels the call in the daemon.
        Raises:
            RemoteError: the daemon's answer was an error (the connection is kept).
            DaemonGone: the connection ended first; nothing is resent.
        """
        key = (principal, wait_profile)
        conn = await self._take(key)
        try:
            result = await conn.call(method, params)
        except RemoteError:
            await self._give_back(key, conn)
            raise
        except BaseException:
            await conn.aclose()
            raise
        await self._give_back(key, conn)
        return result

    async def _take(self, key: tuple[str, str]) -> DaemonConnection:
        idle = self._idle[key]
        while idle:
            conn = idle.pop()
            if not conn.at_eof():
                return conn
            await conn.aclose()
        principal, wait_profile = key
        try:
            return await DaemonConnection.open(self.socket_path, client_name=self.client_name,
                                               principal=principal, wait_profile=wait_profile)
        except OSError as exc:
            if not self.autostart or exc.errno not in (errno.ENOENT, errno.ECONNREFUSED):
                raise DaemonGone(f"cannot reach vigild on {self.socket_path}: {exc.strerror}") from None
        await anyio.to_thread.run_sync(self._start_daemon)
        return await DaemonConnection.open(self.socket_path, client_name=self.client_name,
                                           principal=principal, wait_profile=wait_profile)

    def _start_daemon(self) -> None:
        from ..autostart import connect

        connect(self.socket_path).close()

    async def _give_back(self, key: tuple[str, str], conn: DaemonConnection) -> None:
        idle = self._idle[key]
        if len(idle) < self.idle_max:
            idle.append(conn)
        else:
            await conn.aclose()

    async def aclose(self) -> None:
        for idle in self._idle.values():
            while idle:
                await idle.pop().aclose()
