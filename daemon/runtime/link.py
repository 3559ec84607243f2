"""Daemon side: a trio client for one guardian's socket.

One `GuardianLink` per guardian connection. It owns the stream, the frame decoder and the
handshake; it does not start tasks of its own (the daemon's runtime manager owns the task
that calls `receive()`, as structured concurrency wants). Sends are serialized by a lock, so
any task may send while another receives.

Typical use:

    link = await GuardianLink.connect(path, expected_identity=identity)
    await link.subscribe(persisted_end)
    async for msg in link:          # Output, Gap, Exited, ForegroundInfo, Error
        ...                         # persist, then `await link.ack(offset)`
        # on Exited: persist up to end_offset, `await link.exit_ack()`

The guardian process itself must never import this module (it imports trio).
"""

from __future__ import annotations

import errno
import os

import trio

from vigil.protocol.errors import ErrorCode, ProtocolError
from vigil.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encode_frame

from vigil.daemon.guardian import wire
from vigil.daemon.guardian.errors import GuardianClosed, GuardianIdentityMismatch, GuardianProtocolError, GuardianUnavailable
from vigil.daemon.guardian.identity import identity_alive

__all__ = ["GuardianLink", "identity_alive"]

#: One receive_some's worth; not a message limit (the decoder enforces max_frame_bytes).
_RECEIVE_BYTES = 256 * 1024


class GuardianLink:
    """A connected, handshaken link to one guardian. Build it with `connect`."""

    def __init__(self, stream: trio.SocketStream, max_frame_bytes: int):
        self._stream = stream
        self._decoder = FrameDecoder(max_frame_bytes)
        self._send_lock = trio.Lock()
        self._closed = False
        #: The guardian's answer to Hello (identity, ring bounds, exit status if exited).
        self.welcome: wire.Welcome | None = None

    # --- connecting ----------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        socket_path: str | os.PathLike,
        expected_identity: wire.RuntimeIdentity | None = None,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        client: str = "vigild",
    ) -> GuardianLink:
        """Connect, send Hello and wait for Welcome. Bound it with a trio timeout.

        Raises:
            GuardianUnavailable: nothing listens there (socket missing or refused).
            GuardianClosed: the guardian closed the connection during the handshake.
            GuardianIdentityMismatch: the guardian is not `expected_identity` (CONFLICT).
            GuardianProtocolError: it refused the handshake (its code, e.g.
                unsupported_protocol) or answered something other than Welcome.
        """
        try:
            stream = await trio.open_unix_socket(os.fspath(socket_path))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTDIR):
                raise GuardianUnavailable(
                    f"no guardian listens on {os.fspath(socket_path)!r}: {exc.strerror}"
                ) from None
            raise GuardianUnavailable(f"cannot connect to {os.fspath(socket_path)!r}: {exc.strerror}") from None
        link = cls(stream, max_frame_bytes)
        try:
            await link._send(
                wire.Hello(protocol=(wire.GUARDIAN_PROTOCOL_MIN, wire.GUARDIAN_PROTOCOL_MAX), client=client)
            )
            first = await link.receive()
            if isinstance(first, wire.Error):
                raise GuardianProtocolError(first.code, f"guardian refused the handshake: {first.message}")
            if not isinstance(first, wire.Welcome):
                raise GuardianProtocolError(
                    ErrorCode.HANDSHAKE_REQUIRED, f"guardian answered Hello with {type(first).__name__}"
                )
            if expected_identity is not None and first.identity != expected_identity:
                raise GuardianIdentityMismatch(
                    f"the guardian on {os.fspath(socket_path)!r} is not the one expected "
                    f"(expected {expected_identity}, found {first.identity})",
                )
            link.welcome = first
        except BaseException:
            await link.aclose()
            raise
        return link

    @property
    def identity(self) -> wire.RuntimeIdentity:
        return self.welcome.identity

    # --- receiving -----------------------------------------------------------------------

    async def receive(self) -> wire.GuardianMessage:
        """The next message from the guardian.

        Messages of a type this build does not know (a newer guardian) are skipped.

        Raises:
            GuardianClosed: the guardian closed the connection (it exited after ExitAck, or
                another daemon connected and replaced us).
            GuardianProtocolError: a malformed frame or message (the link is closed).
        """
        while True:
            try:
                body = self._decoder.next_frame()
            except ProtocolError as exc:
                await self.aclose()
                raise GuardianProtocolError(exc.code, exc.message) from None
            if body is not None:
                try:
                    return wire.decode_guardian_message(body)
                except wire.WireDecodeError as exc:
                    if exc.code == ErrorCode.METHOD_NOT_FOUND.value:
                        continue
                    await self.aclose()
                    raise GuardianProtocolError(exc.code, exc.message) from None
            if self._closed:
                raise GuardianClosed("the guardian link is closed")
            try:
                data = await self._stream.receive_some(_RECEIVE_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            if not data:
                partial = self._decoder.buffered
                await self.aclose()
                raise GuardianClosed(
                    "the guardian closed the connection"
                    + (f" inside a frame ({partial} bytes of it received)" if partial else "")
                )
            self._decoder.feed(data)

    def __aiter__(self):
        return self

    async def __anext__(self) -> wire.GuardianMessage:
        try:
            return await self.receive()
        except GuardianClosed:
            raise StopAsyncIteration from None

    # --- sending -------------------------------------------------------------------------

    async def _send(self, msg) -> None:
        frame = encode_frame(wire.encode(msg))
        async with self._send_lock:
            try:
                await self._stream.send_all(frame)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise GuardianClosed(f"cannot send to the guardian: {exc}") from None

    async def subscribe(self, from_offset: int) -> None:
        """Ask for output from `from_offset` on (a Gap comes first if it is no longer held)."""
        await self._send(wire.Subscribe(from_offset=from_offset))

    async def ack(self, offset: int) -> None:
        """Tell the guardian everything before `offset` is durably persisted."""
        await self._send(wire.Ack(offset=offset))

    async def send_input(self, data: bytes) -> None:
        """Write bytes to the child's terminal. A refusal comes back as an Error message."""
        await self._send(wire.Input(data=bytes(data)))

    async def resize(self, rows: int, cols: int) -> None:
        await self._send(wire.Resize(rows=rows, cols=cols))

    async def signal(self, signum: int, group: bool = True, *, foreground: bool = False) -> None:
        """Signal the child's process group (default), the child alone (`group=False`), or the
        terminal's foreground group (`foreground=True`)."""
        await self._send(wire.Signal(signum=int(signum), group=group, foreground=foreground))

    async def foreground(self) -> None:
        """Ask for the foreground process group; the answer arrives as ForegroundInfo via
        `receive()` (a link has one reader, so replies are not awaited here)."""
        await self._send(wire.Foreground())

    async def exit_ack(self) -> None:
        """After persisting up to Exited.end_offset: the guardian deletes its records and exits."""
        await self._send(wire.ExitAck())

    async def send_raw(self, body: bytes) -> None:
        """Send one already-encoded message body (tests and protocol probing)."""
        async with self._send_lock:
            await self._stream.send_all(encode_frame(body))

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with trio.CancelScope(shield=True):
                await self._stream.aclose()

    async def __aenter__(self) -> GuardianLink:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
