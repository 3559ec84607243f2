"""The guardian process: one child on one PTY, a ring of its output, one daemon connection.

One thread, one epoll loop, no trio: the guardian must start in tens of
milliseconds and must keep running whatever happens to the daemon. What wakes the loop:

| source | what it does |
|---|---|
| PTY master readable | read until EAGAIN (or one ring's worth) into the ring; EIO = drained |
| PTY master writable | write queued input (only registered while input is pending) |
| listening socket | accept; a new daemon connection replaces the old one |
| daemon socket readable | frames in, messages applied |
| daemon socket writable | flush (only registered while the kernel buffer was full) |
| signal wakeup fd | SIGCHLD: reap (the child *and* orphaned grandchildren: we are a
  subreaper); SIGTERM/SIGHUP: hang up the child's process group |

The guardian never blocks on the daemon. Output is not queued per connection: the ring *is*
the queue. A subscription is a cursor into the ring; the loop turns ring bytes into Output
frames only while less than `send_buffer_bytes` are waiting to be sent, and when the cursor
has fallen behind the ring's start it sends `Gap{cursor, start}` and skips ahead. So a slow
or stopped daemon costs a bounded buffer and an exact, announced loss — never a stalled child.

Life cycle: running → (child reaped) draining → (EIO, or `drain_grace_seconds` after the
child was reaped if a leftover process holds the PTY open) final. On final the exit records
are written at once, then a connected daemon gets `Exited` after the last Output; `ExitAck`
deletes the records and ends the guardian. With no daemon connected, the guardian lingers
`exit_linger_seconds` for one to connect (a restarting daemon), then exits leaving the records.
"""

from __future__ import annotations

import errno
import os
import select
import struct
import sys
import time

# The C halves of socket and signal: their Python modules wrap them in enums, and enum with
# what it imports costs a guardian ~1 MiB (tests/bench/bench_guardian_memory.py).
import _signal
import _socket

from vigil.protocol.paths import PrivateDirError, check_private_dir

from . import libc
from . import litewire as wire  # wire.py's messages, without msgspec (lite.py says why)
from . import recordfiles as records  # the exit record files (records.py is the daemon's reader)
from .identity import read_boot_id, read_pgrp, read_start_ticks
from .lite import FrameDecoder, WireDecodeError, encode_frame
from .litewire import ErrorCode
from .ring import Ring
from .spawn import SpawnError, get_winsize, set_winsize, spawn

#: prctl(2) option number, from <linux/prctl.h>.
PR_SET_CHILD_SUBREAPER = 36

#: Interest in a file descriptor (selectors' EVENT_READ / EVENT_WRITE, on epoll's bits).
READ, WRITE = select.EPOLLIN, select.EPOLLOUT

#: Largest single recv from the daemon socket: one syscall's worth, not a limit on messages
#: (FrameDecoder enforces max_frame_bytes).
_RECV_BYTES = 256 * 1024
#: A PTY read returns at most ~4 KiB (DESIGN.md, Pitfalls); ask for more so a future kernel
#: that hands out more is not throttled.
_PTY_READ_BYTES = 64 * 1024

_SO_PEERCRED = struct.Struct("3i")  # struct ucred {pid, uid, gid}


class GuardianSetupError(Exception):
    """The guardian cannot start; `code` is an ErrorCode value for the launcher.
    `exit_code` is set when the *child* could not be started (127/126, as a shell says)."""

    def __init__(self, code: str, message: str, exit_code: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = exit_code


_PRIVATE_DIR_CODES = {"missing": ErrorCode.NOT_FOUND, "not_directory": ErrorCode.INVALID_REQUEST,
                      "foreign": ErrorCode.FORBIDDEN, "open": ErrorCode.FORBIDDEN}


def _check_private_dir(path: str, what: str) -> None:
    try:
        check_private_dir(path, create=False)
    except PrivateDirError as exc:
        raise GuardianSetupError(_PRIVATE_DIR_CODES[exc.kind].value, f"{what}: {exc.message}") from None


def _set_subreaper() -> None:
    """Become the reaper of our orphaned grandchildren (else PID 1 reaps them, late)."""
    libc.call("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class _Poller:
    """What the loop needs of `selectors` — register a callback for READ/WRITE interest on a
    file descriptor, wait, dispatch — straight on one epoll: the selectors module with what
    it imports costs a guardian ~0.7 MiB. Hang-up and error count as both READ and WRITE (as
    in selectors), so the callback's read or write finds the condition."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._callbacks: dict[int, object] = {}

    def register(self, fd: int, events: int, callback) -> None:
        self._epoll.register(fd, events)
        self._callbacks[fd] = callback

    def modify(self, fd: int, events: int, callback) -> None:
        self._epoll.modify(fd, events)
        self._callbacks[fd] = callback

    def unregister(self, fd: int) -> None:
        self._epoll.unregister(fd)
        del self._callbacks[fd]

    def select(self, timeout: float | None) -> list[tuple[object, int]]:
        ready = []
        for fd, events in self._epoll.poll(-1 if timeout is None else timeout):
            if events & (select.EPOLLHUP | select.EPOLLERR):
                events |= READ | WRITE
            callback = self._callbacks.get(fd)
            if callback is not None:
                ready.append((callback, events & (READ | WRITE)))
        return ready


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _proc_comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().rstrip(b"\n").decode("utf-8", "replace")
    except OSError:
        return None


def _proc_argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]] if raw else []


def _group_leader(pgid: int) -> int | None:
    """The process to describe for group `pgid`: its leader, else its lowest-numbered member."""
    if read_pgrp(pgid) == pgid:
        return pgid
    members = []
    for name in os.listdir("/proc"):
        if name.isdigit() and read_pgrp(int(name)) == pgid:
            members.append(int(name))
    return min(members) if members else None


class _Conn:
    """The one daemon connection: its socket, inbound frames, outbound bytes, its cursor."""

    __slots__ = ("sock", "decoder", "out", "welcomed", "cursor", "exited_sent", "closing",
                 "hold")

    def __init__(self, sock: _socket.socket, max_frame_bytes: int):
        self.sock = sock
        self.decoder = FrameDecoder(max_frame_bytes)
        self.out = bytearray()
        self.welcomed = False
        #: Next offset to send, or None while the daemon has not subscribed.
        self.cursor: int | None = None
        self.exited_sent = False
        #: Close once `out` is flushed (after a fatal error answer).
        self.closing = False
        #: v3 `Hold`: never overwrite ring bytes this connection has not been sent.
        self.hold = False


class Guardian:
    """The guardian's whole state and its event loop. `start()`, then `run()`."""

    def __init__(self, spec: wire.LaunchSpec):
        self.spec = spec
        self.ring = Ring(spec.ring_bytes)
        self.rows, self.cols = spec.rows, spec.cols
        self.sel = _Poller()
        self.identity: wire.RuntimeIdentity | None = None
        self.child_pid = 0
        self.master: int | None = None
        self.master_events = 0
        self.pending_input = bytearray()
        self.listener: _socket.socket | None = None
        self._socket_inode: tuple[int, int] | None = None
        self.conn: _Conn | None = None
        self.acked = 0
        self.status: wire.ExitStatus | None = None
        self.pty_eof = False
        self.drain_deadline: float | None = None
        self.final = False
        self.records_acked: int | None = None  # the ack the written tail was based on
        self.linger_deadline: float | None = None
        self.done = False
        self._wakeup_r: int | None = None
        self._wakeup_w: int | None = None

    # --- setup ---------------------------------------------------------------------------

    def start(self) -> wire.RuntimeIdentity:
        """Check dirs, bind the socket, start the child. Returns the runtime identity.

        Raises:
            GuardianSetupError: anything that stops the runtime from starting.
        """
        spec = self.spec
        try:
            records.check_runtime_id(spec.runtime_id)
        except ValueError as exc:
            raise GuardianSetupError(ErrorCode.INVALID_REQUEST.value, str(exc)) from None
        if len(os.fsencode(spec.socket_path)) > 107:  # sun_path is 108 bytes with the NUL
            raise GuardianSetupError(
                ErrorCode.INVALID_REQUEST.value,
                f"socket path is {len(os.fsencode(spec.socket_path))} bytes; at most 107 fit a Unix socket",
            )
        _check_private_dir(os.path.dirname(os.path.abspath(spec.socket_path)), "socket directory")
        _check_private_dir(spec.records_dir, "records directory")
        _set_subreaper()

        self._wakeup_r, self._wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        _signal.set_wakeup_fd(self._wakeup_w, warn_on_full_buffer=False)
        for sig in (_signal.SIGCHLD, _signal.SIGTERM, _signal.SIGHUP):
            _signal.signal(sig, lambda *_: None)  # the wakeup fd carries the signal number
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)

        self._listen()
        env = dict(spec.env)
        if spec.term:
            env["TERM"] = spec.term
        try:
            self.child_pid, self.master = spawn(spec.argv, spec.cwd, env, spec.rows, spec.cols)
        except SpawnError as exc:
            self._unlink_socket()
            code = ErrorCode.NOT_FOUND if exc.errno in (errno.ENOENT, errno.ENOTDIR) else ErrorCode.INVALID_REQUEST
            raise GuardianSetupError(code.value, exc.shell_message, exc.exit_status) from None
        except OSError as exc:
            self._unlink_socket()
            raise GuardianSetupError(ErrorCode.INTERNAL.value,
                                     f"cannot set up the terminal: {exc.strerror or exc}") from None

        self.identity = wire.RuntimeIdentity(
            runtime_id=spec.runtime_id,
            boot_id=read_boot_id(),
            guardian_pid=os.getpid(),
            guardian_start_ticks=read_start_ticks(os.getpid()) or 0,
            child_pid=self.child_pid,
        )
        self.sel.register(self._wakeup_r, READ, self._on_wakeup)
        self.sel.register(self.listener.fileno(), READ, self._on_accept)
        self.master_events = READ
        self.sel.register(self.master, self.master_events, self._on_master)
        self._reap()  # the child may have gone already
        return self.identity

    def _listen(self) -> None:
        path = self.spec.socket_path
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        old = os.umask(0o177)  # the socket file is created 0600: no window where it is wider
        try:
            sock.bind(path)
        except OSError as exc:
            sock.close()
            raise GuardianSetupError(ErrorCode.CONFLICT.value, f"cannot bind {path!r}: {exc.strerror}") from None
        finally:
            os.umask(old)
        st = os.stat(path)
        self._socket_inode = (st.st_dev, st.st_ino)
        sock.listen(4)
        sock.setblocking(False)
        self.listener = sock

    def _unlink_socket(self) -> None:
        """Unlink our socket path only if it is still our inode (DESIGN.md, Pitfalls)."""
        if self._socket_inode is None:
            return
        try:
            st = os.stat(self.spec.socket_path)
            if (st.st_dev, st.st_ino) == self._socket_inode:
                os.unlink(self.spec.socket_path)
        except OSError:
            pass
        self._socket_inode = None

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until the runtime is over. Returns the process exit status (0)."""
        try:
            while not self.done:
                for callback, events in self.sel.select(self._timeout()):
                    callback(events)
                    if self.done:
                        break
                if not self.done:
                    self._advance()
        finally:
            self._shutdown()
        return 0

    def _timeout(self) -> float | None:
        deadlines = [d for d in (self.drain_deadline, self.linger_deadline) if d is not None]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    def _room(self) -> int | None:
        """Bytes the PTY may be read into now: None when unlimited; under a held connection,
        what the ring can take without overwriting bytes not yet sent to it."""
        conn = self.conn
        if conn is None or not conn.hold or conn.cursor is None:
            return None
        return max(0, self.ring.capacity - (self.ring.end - conn.cursor))

    def _advance(self) -> None:
        """Everything that follows from the new state: finalize, pump, linger, re-register."""
        room = self._room()
        if self.status is not None and self.drain_deadline is not None and room is not None \
                and room < self.ring.capacity:
            # Held, and the daemon still has bytes to be sent: the rest of the output may
            # wait in the PTY until it caught up, and the grace for leftover processes that
            # keep the PTY open counts from then (finalizing now would cut the output).
            self.drain_deadline = time.monotonic() + self.spec.drain_grace_seconds
        if not self.final and self.status is not None:
            if self.pty_eof or (self.drain_deadline is not None and time.monotonic() >= self.drain_deadline):
                self._finalize()
        if self.conn is not None:
            self._pump()
        if self.final and self.conn is None and not self.done:
            if self.linger_deadline is None:
                self.linger_deadline = time.monotonic() + self.spec.exit_linger_seconds
            if time.monotonic() >= self.linger_deadline:
                if self.records_acked is None and not self._write_records():
                    # Nobody took the exit and it is on no disk: leaving now would lose it.
                    # Keep it, try again after another linger period.
                    self.linger_deadline = time.monotonic() + max(self.spec.exit_linger_seconds, 1.0)
                else:
                    self.done = True
        if self.master is not None:
            want = READ | (WRITE if self.pending_input else 0)
            if self.pty_eof or self._room() == 0:
                want &= ~READ  # held: the child waits for the daemon
            if want != self.master_events:
                if self.master_events and want:
                    self.sel.modify(self.master, want, self._on_master)
                elif want:
                    self.sel.register(self.master, want, self._on_master)
                else:
                    self.sel.unregister(self.master)
                self.master_events = want

    def _shutdown(self) -> None:
        if self.conn is not None:
            self._drop_conn()
        self._unlink_socket()
        if self.listener is not None:
            self.listener.close()
        if self.master is not None:
            os.close(self.master)
            self.master = None
        _signal.set_wakeup_fd(-1)

    # --- PTY -----------------------------------------------------------------------------

    def _on_master(self, events: int) -> None:
        if events & READ and not self.pty_eof:
            self._read_pty()
        if events & WRITE and self.pending_input:
            self._write_input()

    def _read_pty(self) -> None:
        """Read until EAGAIN — or until one ring's worth, so that the daemon socket and the
        reaper get a turn even against a child that writes faster than we read."""
        room = self._room()
        budget = self.ring.capacity if room is None else room
        master = self.master
        while budget > 0:
            try:
                data = os.read(master, min(_PTY_READ_BYTES, budget))
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EIO:  # every slave fd closed: drained (DESIGN.md)
                    self.pty_eof = True
                    return
                raise
            if not data:
                self.pty_eof = True
                return
            self.ring.append(data)
            budget -= len(data)

    def _write_input(self) -> None:
        while self.pending_input:
            try:
                n = os.write(self.master, self.pending_input)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EIO:  # nobody holds the slave: input has nowhere to go
                    self.pending_input.clear()
                    return
                raise
            del self.pending_input[:n]

    # --- children ------------------------------------------------------------------------

    def _on_wakeup(self, events: int) -> None:
        try:
            signums = os.read(self._wakeup_r, 4096)
        except BlockingIOError:
            signums = b""
        if _signal.SIGTERM in signums or _signal.SIGHUP in signums:
            # Asked to stop: hang up the child as a closing terminal would, then finish
            # normally (drain, records) so that the exit is not lost.
            if self.status is None:
                try:
                    os.killpg(self.child_pid, _signal.SIGHUP)
                except OSError:
                    pass
        self._reap()

    def _reap(self) -> None:
        """Reap every exited child: ours, and any orphaned grandchild (we are a subreaper)."""
        while True:
            try:
                pid, wstatus = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child_pid and self.status is None:
                code = os.waitstatus_to_exitcode(wstatus)
                self.status = wire.ExitStatus(
                    exit_code=code if code >= 0 else None,
                    signal=-code if code < 0 else None,
                    ended_unix_ms=_now_ms(),
                )
                self.drain_deadline = time.monotonic() + self.spec.drain_grace_seconds

    def _finalize(self) -> None:
        """The child is reaped and its output is drained (or the grace ran out)."""
        if not self.pty_eof:
            self._read_pty()  # whatever is readable now is still the child's output
        if self.master_events:
            self.sel.unregister(self.master)
            self.master_events = 0
        os.close(self.master)
        self.master = None
        self.pending_input.clear()
        self.final = True
        self.drain_deadline = None
        self._write_records()

    def _write_records(self) -> bool:
        """Write the exit and tail records; False when they could not be written (the
        guardian then keeps its exit to tell a daemon over the connection)."""
        ring = self.ring
        start = max(self.acked, ring.start)
        tail = None
        if start < ring.end or self.acked < ring.start:
            tail = wire.encode(wire.TailRecord(
                version=records.RECORDS_VERSION,
                runtime_id=self.spec.runtime_id,
                start_offset=start,
                data=ring.read(start, ring.end - start),
                gap=wire.Gap(start=self.acked, end=ring.start) if self.acked < ring.start else None,
            ))
        exit_record = wire.encode(wire.ExitRecord(
            version=records.RECORDS_VERSION, identity=self.identity, status=self.status,
            end_offset=ring.end))
        try:
            # The dir may have been deleted under us (rm -rf of the runtime dir): recreate it.
            check_private_dir(self.spec.records_dir)
            records.write_record_files(self.spec.records_dir, self.spec.runtime_id, exit_record, tail)
        except (OSError, PrivateDirError) as exc:
            print(f"guardian {self.spec.runtime_id}: cannot write the exit records: {exc}; the "
                  "exit is kept for the daemon", file=sys.stderr, flush=True)
            self.records_acked = None
            return False
        self.records_acked = self.acked
        return True

    # --- daemon connection ---------------------------------------------------------------

    def _on_accept(self, events: int) -> None:
        while True:
            try:
                fd, _ = self.listener._accept()  # _socket's accept: a descriptor, close-on-exec
            except BlockingIOError:
                return
            except OSError:
                return  # ECONNABORTED and friends: the peer gave up; nothing to do
            sock = _socket.socket(fileno=fd)
            _pid, uid, _gid = _SO_PEERCRED.unpack(
                sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, _SO_PEERCRED.size)
            )
            if uid != os.getuid():  # refused before a byte is read (DESIGN.md, Identity)
                sock.close()
                continue
            if self.conn is not None:
                self._drop_conn()  # the previous daemon is dead or restarting
            sock.setblocking(False)
            self.conn = _Conn(sock, self.spec.max_frame_bytes)
            self.linger_deadline = None
            self.sel.register(sock.fileno(), READ, self._on_conn)

    def _drop_conn(self) -> None:
        conn, self.conn = self.conn, None
        try:
            self.sel.unregister(conn.sock.fileno())
        except (KeyError, ValueError, OSError):
            pass
        conn.sock.close()
        if self.final and self.records_acked != self.acked and not self.done:
            self._write_records()  # the daemon acknowledged more since: shrink the tail
        if not self.done:
            self._rebind_if_gone()

    def _rebind_if_gone(self) -> None:
        """Bind our socket path again if it was deleted (rm -rf of the runtime dir): the
        daemon that just went away, or the next one, must be able to find us. Checked when a
        daemon connection ends, the one moment a daemon will look for the path."""
        path = self.spec.socket_path
        try:
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) == self._socket_inode:
                return
        except FileNotFoundError:
            pass
        old = self.listener
        try:
            check_private_dir(os.path.dirname(os.path.abspath(path)))
            if os.path.lexists(path):
                return  # something else holds the path now: never steal it
            self._listen()
        except (OSError, PrivateDirError, GuardianSetupError) as exc:
            print(f"guardian {self.spec.runtime_id}: cannot bind {path} again: {exc}",
                  file=sys.stderr, flush=True)
            return
        self.sel.unregister(old.fileno())
        old.close()
        self.sel.register(self.listener.fileno(), READ, self._on_accept)

    def _on_conn(self, events: int) -> None:
        conn = self.conn
        if events & WRITE:
            self._flush(conn)
            if self.conn is not conn:
                return
        if events & READ:
            self._receive(conn)

    def _receive(self, conn: _Conn) -> None:
        while self.conn is conn and not conn.closing:
            try:
                data = conn.sock.recv(_RECV_BYTES)
            except BlockingIOError:
                return
            except OSError:
                self._drop_conn()
                return
            if not data:
                self._drop_conn()
                return
            conn.decoder.feed(data)
            while self.conn is conn and not conn.closing:
                try:
                    body = conn.decoder.next_frame()
                except WireDecodeError as exc:  # frame_too_large: the stream is lost
                    self._fatal(conn, exc.code, exc.message)
                    return
                if body is None:
                    break
                try:
                    msg = wire.decode_daemon_message(body)
                except wire.WireDecodeError as exc:
                    self._send(conn, wire.Error(code=exc.code, message=exc.message))
                    continue
                self._apply(conn, msg)
                if self.done:
                    return

    def _send(self, conn: _Conn, msg) -> None:
        conn.out += encode_frame(wire.encode(msg))

    def _fatal(self, conn: _Conn, code: str, message: str) -> None:
        """Answer with an error, then close once it is flushed (the stream is not trusted)."""
        self._send(conn, wire.Error(code=code, message=message))
        conn.closing = True
        self._flush(conn)

    def _flush(self, conn: _Conn) -> None:
        while conn.out:
            try:
                n = conn.sock.send(conn.out)
            except BlockingIOError:
                break
            except OSError:
                self._drop_conn()
                return
            del conn.out[:n]
        if not conn.out and conn.closing:
            self._drop_conn()
            return
        want = READ | (WRITE if conn.out else 0)
        self.sel.modify(conn.sock.fileno(), want, self._on_conn)

    def _pump(self) -> None:
        """Turn ring bytes into frames while the outgoing buffer has room, flushing as we go,
        until everything due is sent or the socket is full (then EVENT_WRITE resumes us)."""
        conn = self.conn
        while conn is self.conn and not conn.closing:
            if conn.welcomed:
                self._fill(conn)
            if not conn.out:
                return
            self._flush(conn)
            if conn is not self.conn or conn.out:
                return  # dropped, or the kernel buffer is full: wait for EVENT_WRITE

    def _fill(self, conn: _Conn) -> None:
        ring = self.ring
        limit = self.spec.send_buffer_bytes
        chunk = self.spec.output_frame_bytes
        while len(conn.out) < limit:
            cursor = conn.cursor
            if cursor is not None and cursor < ring.end:
                if cursor < ring.start:
                    self._send(conn, wire.Gap(start=cursor, end=ring.start))
                    conn.cursor = ring.start
                    continue
                data = ring.read(cursor, chunk)
                self._send(conn, wire.Output(offset=cursor, data=data))
                conn.cursor = cursor + len(data)
                continue
            # Only to a subscriber that has everything: a daemon must never be told
            # "exited at N" while it still lacks bytes it did not ask for yet (it might
            # ExitAck and lose them).
            if self.final and cursor is not None and not conn.exited_sent:
                self._send(conn, wire.Exited(status=self.status, end_offset=ring.end))
                conn.exited_sent = True
            return

    def _apply(self, conn: _Conn, msg) -> None:
        """One daemon message. Every refusal is an Error answer; the connection stays."""
        if not conn.welcomed and not isinstance(msg, wire.Hello):
            self._fatal(conn, ErrorCode.HANDSHAKE_REQUIRED.value, f"{type(msg).__name__} before Hello")
            return
        match msg:
            case wire.Hello(protocol=theirs):
                if conn.welcomed:
                    self._send(conn, wire.Error(code=ErrorCode.INVALID_REQUEST.value, message="second Hello"))
                    return
                version = wire.negotiate(theirs)
                if version is None:
                    self._fatal(
                        conn,
                        ErrorCode.UNSUPPORTED_PROTOCOL.value,
                        f"daemon speaks guardian protocol {theirs[0]}..{theirs[1]}, this guardian "
                        f"{wire.GUARDIAN_PROTOCOL_MIN}..{wire.GUARDIAN_PROTOCOL_MAX}",
                    )
                    return
                conn.welcomed = True
                self._send(
                    conn,
                    wire.Welcome(
                        protocol=version,
                        identity=self.identity,
                        ring_start=self.ring.start,
                        ring_end=self.ring.end,
                        exit=self.status if self.final else None,
                        rows=self.rows,
                        cols=self.cols,
                        acked_offset=self.acked,
                    ),
                )
            case wire.Subscribe(from_offset=offset):
                if offset > self.ring.end:
                    self._refuse(conn, f"from_offset {offset} is beyond the end of output ({self.ring.end})")
                    return
                conn.cursor = offset
                conn.exited_sent = False
            case wire.Ack(offset=offset):
                if offset > self.ring.end:
                    self._refuse(conn, f"ack offset {offset} is beyond the end of output ({self.ring.end})")
                    return
                self.acked = max(self.acked, offset)
            case wire.Input(data=data, seq=seq):
                if self.status is not None or self.master is None:
                    self._unavailable(conn, "the child has exited; input was not delivered", seq)
                    return
                pending = len(self.pending_input)
                if pending + len(data) > self.spec.input_buffer_bytes:
                    self._send(
                        conn,
                        wire.Error(
                            code=ErrorCode.LIMIT_EXCEEDED.value,
                            message=f"input of {len(data)} bytes refused: {pending} bytes are still "
                            f"waiting for the child to read them (limit {self.spec.input_buffer_bytes})",
                            seq=seq,
                        ),
                    )
                    return
                self.pending_input += data
                self._write_input()
                self._done(conn, seq, accepted=len(data))
            case wire.Resize(rows=rows, cols=cols, seq=seq):
                if self.master is None:
                    self._unavailable(conn, "the terminal is closed; not resized", seq)
                    return
                set_winsize(self.master, rows, cols)
                self.rows, self.cols = get_winsize(self.master)
                self._done(conn, seq)
            case wire.Signal(signum=signum, group=group, foreground=foreground, seq=seq):
                self._signal(conn, signum, group, foreground, seq)
            case wire.Foreground(seq=seq):
                self._send(conn, wire.replace(self._foreground(), seq=seq))
            case wire.Hold(on=on):
                conn.hold = on
            case wire.ExitAck():
                if not self.final:
                    self._refuse(conn, "ExitAck before Exited: the child is still running or draining")
                    return
                records.delete_exit_records(self.spec.records_dir, self.spec.runtime_id)
                self.done = True

    def _done(self, conn: _Conn, seq: int, accepted: int = 0) -> None:
        """Confirm command `seq` (v2); a command with seq 0 asked for no answer."""
        if seq:
            self._send(conn, wire.Done(seq=seq, accepted=accepted))

    def _refuse(self, conn: _Conn, message: str, seq: int = 0) -> None:
        self._send(conn, wire.Error(code=ErrorCode.INVALID_REQUEST.value, message=message, seq=seq))

    def _unavailable(self, conn: _Conn, message: str, seq: int = 0) -> None:
        self._send(conn, wire.Error(code=ErrorCode.UNAVAILABLE.value, message=message, seq=seq))

    def _signal(self, conn: _Conn, signum: int, group: bool, foreground: bool, seq: int) -> None:
        # Once reaped, the child's pid (and its group id) may belong to someone else.
        if self.status is not None:
            self._unavailable(conn, f"the child has exited; signal {signum} not sent", seq)
            return
        try:
            if foreground:
                if self.master is None:
                    self._unavailable(conn, "the terminal is closed; no foreground group", seq)
                    return
                os.killpg(os.tcgetpgrp(self.master), signum)
            elif group:
                os.killpg(self.child_pid, signum)
            else:
                os.kill(self.child_pid, signum)
        except ProcessLookupError:
            self._send(conn, wire.Error(code=ErrorCode.NOT_FOUND.value, message="no such process group",
                                        seq=seq))
            return
        except PermissionError as exc:
            self._send(conn, wire.Error(code=ErrorCode.FORBIDDEN.value,
                                        message=f"signal {signum}: {exc.strerror}", seq=seq))
            return
        except (OSError, ValueError) as exc:
            self._refuse(conn, f"signal {signum}: {exc}", seq)
            return
        self._done(conn, seq)

    def _foreground(self) -> wire.ForegroundInfo:
        if self.master is None:
            return wire.ForegroundInfo(pgid=None, pid=None, comm=None, argv=[])
        try:
            pgid = os.tcgetpgrp(self.master)
        except OSError:
            return wire.ForegroundInfo(pgid=None, pid=None, comm=None, argv=[])
        pid = _group_leader(pgid)
        if pid is None:
            return wire.ForegroundInfo(pgid=pgid, pid=None, comm=None, argv=[])
        return wire.ForegroundInfo(pgid=pgid, pid=pid, comm=_proc_comm(pid), argv=_proc_argv(pid))
