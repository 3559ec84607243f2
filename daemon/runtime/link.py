"""Daemon side: a trio client for one guardian's socket.

One `GuardianLink` per guardian connection. It owns the stream, the frame decoder, the
handshake, an outbox and the table of commands awaiting their answer. It starts no task of
its own: the runtime manager runs `run_sender()` and the loop that calls `receive()` in the
runtime's nursery, as structured concurrency wants.

Why an outbox: a guardian that stops reading (SIGSTOPped, swapped out) must never make a
caller wait without bound, and a send cancelled half-way would corrupt the stream. So
callers only append whole frames to a bounded outbox and one sender task writes them in
order; a caller waits for its command's *answer* under a deadline
(`guardian_command_timeout_seconds`), and past it is told so — the stuck guardian is
reported, not waited on, and no other runtime is affected.

Confirmed delivery (guardian protocol v2): `command()` numbers a command with `seq` and
returns the guardian's `Done`, or raises its refusal (`GuardianRefused`, the guardian's own
code: limit_exceeded, unavailable, not_found…) or `GuardianTimeout`. A v1 guardian cannot
confirm: `command()` then sends without a seq and returns None, and callers say
"unconfirmed" rather than "delivered".

Typical use:

    link = await GuardianLink.connect(path, expected_identity=identity, settings=settings)
    link.subscribe(persisted_end)
    nursery.start_soon(link.run_sender)
    while True:
        msg = await link.receive()     # Output, Gap, Exited, Error (answers are routed)
        ...

The guardian process itself must never import this module (it imports trio).
"""

from __future__ import annotations

import errno
import itertools
import os

import msgspec
import trio

from vigil.daemon.guardian import wire
from vigil.daemon.guardian.errors import (
    GuardianClosed,
    GuardianError,
    GuardianIdentityMismatch,
    GuardianProtocolError,
    GuardianUnavailable,
)
from vigil.protocol.errors import ErrorCode, ProtocolError
from vigil.protocol.frames import DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encode_frame

__all__ = ["GuardianBusy", "GuardianLink", "GuardianRefused", "GuardianTimeout"]

#: One receive_some's worth; not a message limit (the decoder enforces max_frame_bytes).
_RECEIVE_BYTES = 256 * 1024

#: The first guardian protocol that answers numbered commands.
CONFIRMING_PROTOCOL = 2
#: The first guardian protocol that can hold its child rather than overrun its ring.
HOLDING_PROTOCOL = 3


class GuardianRefused(GuardianError):
    """The guardian refused a command; `code` is its own (limit_exceeded, unavailable, …)."""


class GuardianTimeout(GuardianError):
    """The guardian did not answer a command within the deadline (stopped or overloaded).
    The command may still be applied when it resumes."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.TIMEOUT, message)


class GuardianBusy(GuardianError):
    """The outbox is full: the guardian has not read its commands for a while."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.BUSY, message)


class _Pending:
    """A numbered command waiting for its answer."""

    __slots__ = ("answered", "answer")

    def __init__(self) -> None:
        self.answered = trio.Event()
        self.answer: wire.Done | wire.ForegroundInfo | wire.Error | GuardianError | None = None


class GuardianLink:
    """A connected, handshaken link to one guardian. Build it with `connect`."""

    def __init__(self, stream: trio.SocketStream, max_frame_bytes: int,
                 command_timeout: float, outbox_bytes: int):
        self._stream = stream
        self._decoder = FrameDecoder(max_frame_bytes)
        self._closed = False
        self._outbox: list[bytes] = []
        self._outbox_size = 0
        self._outbox_limit = outbox_bytes
        self._outbox_ready = trio.Event()
        self._sent = trio.Event()
        self._seqs = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self.command_timeout = command_timeout
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
        command_timeout: float = 5.0,
        outbox_bytes: int = 4 * 1024 * 1024,
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
        link = cls(stream, max_frame_bytes, command_timeout, outbox_bytes)
        try:
            # The handshake is the one direct send: no sender task runs yet.
            await link._stream.send_all(encode_frame(wire.encode(
                wire.Hello(protocol=(wire.GUARDIAN_PROTOCOL_MIN, wire.GUARDIAN_PROTOCOL_MAX), client=client))))
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
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            await link.aclose()
            raise GuardianClosed(f"the guardian closed the connection during the handshake: {exc}") from None
        except BaseException:
            await link.aclose()
            raise
        return link

    @property
    def identity(self) -> wire.RuntimeIdentity:
        return self.welcome.identity

    @property
    def confirms(self) -> bool:
        """True when the guardian answers numbered commands (protocol v2 and later)."""
        return self.welcome is not None and self.welcome.protocol >= CONFIRMING_PROTOCOL

    # --- receiving -----------------------------------------------------------------------

    async def receive(self) -> wire.GuardianMessage:
        """The next message from the guardian that is not an answer to a numbered command
        (answers are handed to the waiting `command()` call).

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
                    msg = wire.decode_guardian_message(body)
                except wire.WireDecodeError as exc:
                    if exc.code == ErrorCode.METHOD_NOT_FOUND.value:
                        continue
                    await self.aclose()
                    raise GuardianProtocolError(exc.code, exc.message) from None
                if isinstance(msg, (wire.Done, wire.Error, wire.ForegroundInfo)) and msg.seq:
                    self._answer(msg.seq, msg)
                    continue
                return msg
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

    def _answer(self, seq: int, answer) -> None:
        pending = self._pending.pop(seq, None)
        if pending is not None:  # else: its caller gave up at the deadline
            pending.answer = answer
            pending.answered.set()

    # --- sending -------------------------------------------------------------------------

    def post(self, msg) -> None:
        """Queue `msg` for the sender without waiting for anything (acks, subscriptions,
        terminal-query answers from the receive loop, which must never wait on itself).

        Raises:
            GuardianClosed: the link is closed.
            GuardianBusy: the outbox is full (the guardian is not reading).
        """
        if self._closed:
            raise GuardianClosed("the guardian link is closed")
        frame = encode_frame(wire.encode(msg))
        if self._outbox_size + len(frame) > self._outbox_limit:
            raise GuardianBusy(
                f"the guardian has not read its last {self._outbox_size} bytes of commands; "
                "it may be stopped (SIGSTOP) or overloaded")
        self._queue(frame)

    def _queue(self, frame: bytes) -> None:
        self._outbox.append(frame)
        self._outbox_size += len(frame)
        if self._sent.is_set():
            self._sent = trio.Event()  # not drained any more
        self._outbox_ready.set()

    async def run_sender(self) -> None:
        """Write queued frames in order, until the link closes (run it in the runtime's
        nursery). A guardian that stops reading blocks only this task."""
        try:
            while not self._closed:
                if not self._outbox:
                    self._sent.set()
                    self._outbox_ready = trio.Event()
                    await self._outbox_ready.wait()
                    continue
                frames, self._outbox = self._outbox, []
                self._outbox_size = 0
                await self._stream.send_all(b"".join(frames))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self.aclose()

    async def flush(self) -> None:
        """Return once everything queued so far has been written (or the link closed)."""
        while not self._sent.is_set() and not self._closed:
            await self._sent.wait()

    async def command(self, msg, *, timeout: float | None = None
                      ) -> wire.Done | wire.ForegroundInfo | None:
        """Send a command (Input, Resize, Signal, Foreground) and wait for its answer.

        Returns the guardian's `Done` (or `ForegroundInfo`), or None for a v1 guardian,
        which cannot confirm (the command was handed over, its fate unknown).

        Raises:
            GuardianRefused: the guardian refused it (its code and message).
            GuardianTimeout: no answer within `timeout` (default: the link's).
            GuardianClosed, GuardianBusy: as `post`.
        """
        if not self.confirms:
            self.post(msg)
            return None
        seq = next(self._seqs)
        pending = self._pending[seq] = _Pending()
        try:
            self.post(_with_seq(msg, seq))
            limit = self.command_timeout if timeout is None else timeout
            with trio.move_on_after(limit):
                await pending.answered.wait()
        finally:
            self._pending.pop(seq, None)
        answer = pending.answer
        if answer is None:
            raise GuardianTimeout(
                f"the guardian did not answer within {limit:g} s (it may be stopped or "
                "overloaded); the command may still take effect when it resumes")
        if isinstance(answer, GuardianError):
            raise answer
        if isinstance(answer, wire.Error):
            raise GuardianRefused(answer.code, answer.message)
        return answer

    # --- the messages, by name ------------------------------------------------------------

    def subscribe(self, from_offset: int) -> None:
        """Ask for output from `from_offset` on (a Gap comes first if it is no longer held)."""
        self.post(wire.Subscribe(from_offset=from_offset))

    def ack(self, offset: int) -> None:
        """Tell the guardian everything before `offset` is durably persisted."""
        self.post(wire.Ack(offset=offset))

    def hold(self, on: bool) -> bool:
        """Ask the guardian to hold its child rather than overrun its ring (v3); False
        when it is too old to (it then drops the oldest bytes as before)."""
        if self.welcome is None or self.welcome.protocol < HOLDING_PROTOCOL:
            return False
        self.post(wire.Hold(on=on))
        return True

    def exit_ack(self) -> None:
        """After persisting up to Exited.end_offset: the guardian deletes its records and exits."""
        self.post(wire.ExitAck())

    async def send_input(self, data: bytes) -> wire.Done | None:
        """Write bytes to the child's terminal; the guardian's Done (None from a v1 guardian)."""
        return await self.command(wire.Input(data=bytes(data)))

    async def resize(self, rows: int, cols: int) -> wire.Done | None:
        return await self.command(wire.Resize(rows=rows, cols=cols))

    async def signal(self, signum: int, group: bool = True, *, foreground: bool = False
                     ) -> wire.Done | None:
        """Signal the child's process group (default), the child alone (`group=False`), or the
        terminal's foreground group (`foreground=True`)."""
        return await self.command(wire.Signal(signum=int(signum), group=group, foreground=foreground))

    def post_raw(self, body: bytes) -> None:
        """Queue one already-encoded message body (tests and protocol probing)."""
        self._queue(encode_frame(body))

    # --- closing -------------------------------------------------------------------------

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._outbox_ready.set()
            self._sent.set()
            for pending in list(self._pending.values()):
                pending.answer = GuardianClosed("the guardian link closed before it answered")
                pending.answered.set()
            self._pending.clear()
            with trio.CancelScope(shield=True):
                await self._stream.aclose()

    async def __aenter__(self) -> GuardianLink:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


def _with_seq(msg, seq: int):
    return msgspec.structs.replace(msg, seq=seq)
