"""The RPC server: accepts connections on the private socket and drives one
`ServerConnection` per client through the dispatch seam.

Per connection, one reader task parses frames; inline (quick) methods are answered in that
task in order, others run in the connection's own nursery so a long `wait` never holds up a
`ping` behind it. Everything a connection does is contained in its nursery: a client that
stops reading blocks only its own sends, and an exception in one connection is logged and
ends only that connection.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import socket
import struct

import trio

from vigil.protocol.connection import (
    BadRequest,
    ConnectionFailed,
    HelloReceived,
    RequestReceived,
    ServerConnection,
)
from vigil.protocol.api.daemon import HelloResult
from vigil.protocol.version import VERSION

from .dispatch import CallContext, Dispatcher, Peer
from ..process.state import DaemonState

log = logging.getLogger("vigild.server")

_PEERCRED = struct.Struct("3i")
RECEIVE_BYTES = 65536


#: accept(2) errnos that mean "out of a resource that closing connections gives back"; the
#: ones trio.serve_listeners retries too. Any other accept error is a bug and ends serving.
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


async def accept_loop(listener: trio.abc.Listener, handle, pause_seconds: float) -> None:
    """Accept connections for ever and pass each to `handle(stream)` (which must not block).

    Out of descriptors or memory, accept fails until some connection closes: pause
    `pause_seconds` and retry rather than spin, logging once when it starts and once when it
    ends, not at every retry. Any other error propagates (trio's own serve_listeners rule).
    """
    failing = False
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                raise
            if not failing:
                log.warning("accept failed for lack of resources (%s); retrying every %g s "
                            "while the connections we have are served", exc, pause_seconds)
                failing = True
            await trio.sleep(pause_seconds)
            continue
        if failing:
            log.warning("accepting connections again")
            failing = False
        handle(stream)


def peer_credentials(sock: trio.socket.SocketType) -> Peer | None:
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except OSError:
        return None
    pid, uid, gid = _PEERCRED.unpack(raw)
    return Peer(pid=pid, uid=uid, gid=gid, connection_id=0)


class Server:
    def __init__(self, state: DaemonState, dispatcher: Dispatcher):
        self.state = state
        self.dispatcher = dispatcher
        self._ids = itertools.count(1)
        self._nursery: trio.Nursery | None = None
        self._listener: trio.SocketListener | None = None

    async def serve(self, listener: socket.socket, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._listen(listener)
            task_status.started()

    def _listen(self, listener: socket.socket) -> None:
        trio_listener = trio.SocketListener(trio.socket.from_stdlib_socket(listener))
        self._listener = trio_listener

        async def accept() -> None:
            try:
                await accept_loop(trio_listener,
                                  lambda stream: self._nursery.start_soon(self._connection, stream),
                                  self.state.settings.accept_capacity_pause_seconds)
            except trio.ClosedResourceError:
                pass  # retired by adopt(): a new listener took over

        self._nursery.start_soon(accept)

    async def adopt(self, listener: socket.socket) -> None:
        """Serve `listener` (bound anew after the old path was deleted) and close the old
        one; connections already accepted on the old one go on."""
        old = self._listener
        self._listen(listener)
        await old.aclose()

    async def _connection(self, stream: trio.SocketStream) -> None:
        peer = peer_credentials(stream.socket)
        if peer is None or peer.uid != os.getuid():
            # Refused before a byte is read: nothing from another user reaches the parser.
            log.warning("refused connection from uid %s (pid %s)",
                        getattr(peer, "uid", "?"), getattr(peer, "pid", "?"))
            await stream.aclose()
            return
        peer.connection_id = next(self._ids)
        self.state.connections += 1
        try:
            await self._serve_connection(stream, peer)
        except* (trio.BrokenResourceError, trio.ClosedResourceError) as gone:
            # The client went away (closed, reset) while we read or answered: its business,
            # not an error of ours. They arrive wrapped in the connection nursery's group.
            log.debug("connection %d: the client went away: %s", peer.connection_id,
                      gone.exceptions[0])
        except* Exception:
            log.exception("connection %d failed", peer.connection_id)
        finally:
            self.state.connections -= 1
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_connection(self, stream: trio.SocketStream, peer: Peer) -> None:
        settings = self.state.settings
        conn = ServerConnection(settings.max_frame_bytes)
        send_lock = trio.Lock()

        async def send(frame: bytes) -> None:
            if not frame:
                return
            async with send_lock:
                await stream.send_all(frame)

        # A client that pipelines requests and never reads the answers would make the daemon
        # hold every answer in memory; past this many unanswered calls the reader stops taking
        # requests from that connection (its socket buffer then fills: its own back-pressure).
        in_flight = trio.Semaphore(settings.connection_requests_in_flight)

        async def run_call(ctx: CallContext, route, params) -> None:
            try:
                frame = await self.dispatcher.dispatch(conn, ctx, route, params)
                try:
                    await send(frame)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            finally:
                in_flight.release()

        async with trio.open_nursery() as nursery:
            while True:
                data = await stream.receive_some(RECEIVE_BYTES)
                if not data:
                    failure = conn.receive_eof()
                    if failure is not None:
                        log.info("connection %d: %s", peer.connection_id, failure.error.message)
                    break
                conn.receive_data(data)
                closing = False
                while (event := conn.next_event()) is not None:
                    if isinstance(event, RequestReceived):
                        route = self.dispatcher.get(event.method)
                        ctx = CallContext(peer, event.method, event.id, conn, send)
                        if route is None or route.inline:
                            await send(await self.dispatcher.dispatch(conn, ctx, route, event.params))
                        else:
                            await in_flight.acquire()
                            nursery.start_soon(run_call, ctx, route, event.params)
                    elif isinstance(event, HelloReceived):
                        await send(conn.accept_hello(event.id, self.hello_result(conn.protocol)))
                    elif isinstance(event, BadRequest):
                        await send(conn.send_error(event.id, event.error.code, event.error.message,
                                                   event.error.data))
                    elif isinstance(event, ConnectionFailed):
                        log.info("connection %d closed: %s: %s", peer.connection_id,
                                 event.error.code, event.error.message)
                        if event.reply:
                            await send(event.reply)
                        closing = True
                        break
                if closing:
                    break
            nursery.cancel_scope.cancel()

    def hello_result(self, protocol: int) -> HelloResult:
        return HelloResult(
            protocol=protocol,
            daemon_version=VERSION,
            daemon_epoch=self.state.epoch,
            capabilities=self.dispatcher.method_names,
            max_frame_bytes=self.state.settings.max_frame_bytes,
        )

