"""Real guardians, real PTYs, real sockets: launch, output, input, signals, exit, records.

Every guardian a test starts is SIGKILLed (with its child's group) by the `guardians`
fixture if it is still alive at the end, so none leaks. Waits are on events: frames from
the guardian, or a pidfd becoming readable when a process exits.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

import msgspec
import pytest
import trio

from vigil.daemon.guardian import records, wire
from vigil.daemon.guardian.errors import GuardianClosed, GuardianIdentityMismatch, GuardianLaunchError
from vigil.daemon.guardian.identity import identity_alive, parse_stat
from vigil.daemon.guardian.launch import launch_guardian, make_launch_spec
from vigil.daemon.runtime.link import GuardianLink, GuardianRefused, GuardianTimeout
from vigil.protocol.frames import FrameDecoder, encode_frame
from vigil.daemon.settings import DEFAULTS

from tests.support.executions import Gate

TIMEOUT = 20  # generous bound for a loaded 2-core CI box; tests finish in milliseconds


# --- helpers -------------------------------------------------------------------------------


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(parse_stat(f.read())[1][1])
    except (OSError, ValueError):
        return None


async def wait_gone(pid: int, timeout: float = TIMEOUT) -> None:
    """Wait until `pid` has exited (a pidfd becomes readable; works for non-children)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with trio.fail_after(timeout):
            await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def _kill(identity: wire.RuntimeIdentity) -> None:
    if not identity_alive(identity):
        return
    if _ppid(identity.child_pid) == identity.guardian_pid:  # still the guardian's child
        try:
            os.killpg(identity.child_pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.kill(identity.guardian_pid, signal.SIGKILL)
    except OSError:
        pass


class Guardians:
    """Starts guardians for one test, each with its own runtime id, in one private dir."""

    def __init__(self, root: str):
        self.root = root
        self.launched: list[wire.RuntimeIdentity] = []
        self.count = 0

    def spec(self, argv, **changes) -> wire.LaunchSpec:
        self.count += 1
        rid = f"rt{self.count}"
        spec = make_launch_spec(
            runtime_id=rid,
            argv=argv,
            cwd="/",
            env={"PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
            socket_path=os.path.join(self.root, f"{rid}.sock"),
            records_dir=self.root,
            settings=DEFAULTS,
        )
        return msgspec.structs.replace(spec, **changes)

    async def start(self, argv, **changes) -> tuple[wire.RuntimeIdentity, wire.LaunchSpec]:
        spec = self.spec(argv, **changes)
        identity = await trio.to_thread.run_sync(launch_guardian, spec, DEFAULTS)
        self.launched.append(identity)
        return identity, spec

    async def connect(self, argv, **changes) -> tuple[GuardianLink, wire.LaunchSpec]:
        identity, spec = await self.start(argv, **changes)
        return await self.link(spec.socket_path, identity), spec

    async def link(self, path: str, identity=None) -> GuardianLink:
        """A link with its sender running (the test reads with receive(); commands that
        need no answer are posted, so nothing waits on a reply nobody reads)."""
        link = await GuardianLink.connect(path, identity)
        self.nursery.start_soon(link.run_sender)
        return link


@pytest.fixture
async def guardians(nursery):
    # Short path: a Unix socket path must fit in 107 bytes, pytest's tmp_path may not.
    root = tempfile.mkdtemp(prefix="vg-", dir="/tmp")
    os.chmod(root, 0o700)
    g = Guardians(root)
    g.nursery = nursery
    try:
        yield g
    finally:
        for identity in g.launched:
            _kill(identity)
        shutil.rmtree(root, ignore_errors=True)


async def until_exited(link: GuardianLink, start: int = 0) -> tuple[bytes, list, wire.Exited]:
    """Receive until Exited, checking that Output/Gap offsets are contiguous from `start`."""
    data = bytearray()
    msgs = []
    pos = start
    with trio.fail_after(TIMEOUT):
        async for msg in link:
            msgs.append(msg)
            match msg:
                case wire.Output(offset=offset, data=chunk):
                    assert offset == pos
                    data += chunk
                    pos += len(chunk)
                case wire.Gap(start=gap_start, end=gap_end):
                    assert gap_start == pos and gap_end > gap_start
                    pos = gap_end
                case wire.Exited(end_offset=end):
                    assert end == pos
                    return bytes(data), msgs, msg
    raise AssertionError(f"link closed before Exited; got {msgs}")


async def until_output(link: GuardianLink, expected: bytes, start: int = 0) -> int:
    """Receive Output until the stream from `start` equals `expected`; return the end offset."""
    data = bytearray()
    with trio.fail_after(TIMEOUT):
        async for msg in link:
            assert isinstance(msg, wire.Output), msg
            assert msg.offset == start + len(data)
            data += msg.data
            if len(data) >= len(expected):
                assert bytes(data) == expected
                return start + len(data)
    raise AssertionError(f"link closed after {bytes(data)!r}")


async def next_message(link: GuardianLink):
    with trio.fail_after(TIMEOUT):
        return await link.receive()


# --- output and exit ------------------------------------------------------------------------


async def test_output_offsets_and_exit_code(guardians):
    link, spec = await guardians.connect(["sh", "-c", "printf 'hello\\nworld'; exit 3"])
    assert link.welcome.protocol == 3
    assert (link.welcome.rows, link.welcome.cols) == (50, 200)
    link.subscribe(0)
    data, msgs, exited = await until_exited(link)
    assert data == b"hello\r\nworld"  # the terminal's ONLCR turns \n into \r\n
    assert exited.end_offset == 12
    assert (exited.status.exit_code, exited.status.signal) == (3, None)
    link.exit_ack()
    with pytest.raises(GuardianClosed):
        await next_message(link)
    await wait_gone(link.identity.guardian_pid)
    assert os.listdir(guardians.root) == []  # ExitAck: records deleted, socket unlinked


async def test_killed_by_signal_is_recorded_as_signal(guardians):
    link, _ = await guardians.connect(["sh", "-c", "kill -TERM $$"])
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert (exited.status.exit_code, exited.status.signal) == (None, 15)


async def test_utf8_bytes_arrive_unmodified(guardians):
    text = "é€😀 中文 ﬁ\u200d"
    link, _ = await guardians.connect(["printf", "%s", text])
    link.subscribe(0)
    data, _, exited = await until_exited(link)
    assert data == text.encode("utf-8")
    assert exited.status.exit_code == 0


async def test_child_environment_term_and_clean_signal_state(guardians):
    # cat is exec'd directly by the guardian's fork: /proc/self/status is the child's own.
    link, _ = await guardians.connect(
        ["sh", "-c", 'printf "%s\\n" "$TERM"; exec grep -E "^Sig(Ign|Blk):" /proc/self/status']
    )
    link.subscribe(0)
    data, _, _ = await until_exited(link)
    # The guardian (a Python process) ignores SIGPIPE and SIGINT; its child must not.
    assert data == b"xterm-256color\r\nSigBlk:\t0000000000000000\r\nSigIgn:\t0000000000000000\r\n"


async def test_child_has_only_the_terminal_fds_and_a_new_session(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    child = link.identity.child_pid
    assert sorted(os.listdir(f"/proc/{child}/fd")) == ["0", "1", "2"]
    assert {os.readlink(f"/proc/{child}/fd/{fd}") for fd in "012"} == {os.readlink(f"/proc/{child}/fd/0")}
    assert os.getsid(child) == child and os.getpgid(child) == child
    assert _ppid(child) == link.identity.guardian_pid
    link.post(wire.Signal(signum=signal.SIGKILL))
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert exited.status.signal == signal.SIGKILL


# --- input, resize, signals -----------------------------------------------------------------


async def test_input_reaches_the_child(guardians):
    link, _ = await guardians.connect(["cat"])
    link.subscribe(0)
    link.post(wire.Input(data=b"ping\n"))
    # The terminal echoes the line, then cat writes it back.
    end = await until_output(link, b"ping\r\nping\r\n")
    link.post(wire.Input(data=b"\x04"))  # ^D on an empty line: EOF for cat
    data, _, exited = await until_exited(link, start=end)
    assert data == b""
    assert exited.status.exit_code == 0


async def test_resize_is_seen_by_stty(guardians):
    link, _ = await guardians.connect(["sh", "-c", "stty size; read x; stty size"])
    link.subscribe(0)
    end = await until_output(link, b"50 200\r\n")
    link.post(wire.Resize(rows=30, cols=100))
    link.post(wire.Input(data=b"\n"))
    data, _, exited = await until_exited(link, start=end)
    assert data == b"\r\n30 100\r\n"
    assert exited.status.exit_code == 0


async def test_sigint_to_the_group_interrupts_sleep(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    link.post(wire.Signal(signum=signal.SIGINT))
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert (exited.status.exit_code, exited.status.signal) == (None, signal.SIGINT)


async def test_ctrl_c_typed_into_the_pty_interrupts_sleep(guardians):
    # Works only because the PTY is the child's controlling terminal (setsid + TIOCSCTTY).
    link, _ = await guardians.connect(["sleep", "100"])
    link.post(wire.Input(data=b"\x03"))
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert (exited.status.exit_code, exited.status.signal) == (None, signal.SIGINT)


async def test_foreground_info(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    link.post(wire.Foreground())
    info = await next_message(link)
    child = link.identity.child_pid
    assert info == wire.ForegroundInfo(pgid=child, pid=child, comm="sleep", argv=["sleep", "100"])
    link.post(wire.Signal(signum=signal.SIGTERM, foreground=True))
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert exited.status.signal == signal.SIGTERM


async def test_input_beyond_the_buffer_is_refused_whole(guardians):
    link, _ = await guardians.connect(["sleep", "100"], input_buffer_bytes=4096)
    link.post(wire.Input(data=b"x" * 5000))
    assert await next_message(link) == wire.Error(
        code="limit_exceeded",
        message="input of 5000 bytes refused: 0 bytes are still waiting for the child to read them "
        "(limit 4096)",
    )
    link.post(wire.Signal(signum=signal.SIGKILL))


async def test_requests_after_exit_are_refused(guardians):
    link, _ = await guardians.connect(["true"])
    link.subscribe(0)
    _, _, exited = await until_exited(link)
    assert exited.status.exit_code == 0
    link.post(wire.Signal(signum=signal.SIGTERM))
    assert await next_message(link) == wire.Error(
        code="unavailable", message="the child has exited; signal 15 not sent"
    )
    link.post(wire.Input(data=b"x"))
    assert await next_message(link) == wire.Error(
        code="unavailable", message="the child has exited; input was not delivered"
    )
    link.post(wire.Foreground())
    assert await next_message(link) == wire.ForegroundInfo(pgid=None, pid=None, comm=None, argv=[])


async def test_exit_ack_before_exit_is_refused(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    link.exit_ack()
    assert await next_message(link) == wire.Error(
        code="invalid_request", message="ExitAck before Exited: the child is still running or draining"
    )
    link.subscribe(10)
    assert await next_message(link) == wire.Error(
        code="invalid_request", message="from_offset 10 is beyond the end of output (0)"
    )
    link.post(wire.Signal(signum=signal.SIGKILL))


async def test_sigterm_to_the_guardian_hangs_up_the_child_and_keeps_the_exit(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    link.subscribe(0)
    os.kill(link.identity.guardian_pid, signal.SIGTERM)
    _, _, exited = await until_exited(link)
    assert (exited.status.exit_code, exited.status.signal) == (None, signal.SIGHUP)
    assert records.read_exit_records(guardians.root, "rt1").exit.status == exited.status
    link.exit_ack()
    await wait_gone(link.identity.guardian_pid)


async def _wait_reaped(pid: int) -> None:
    """Poll /proc until `pid` is reaped: no event exists for "someone else reaped it"."""
    with trio.fail_after(TIMEOUT):
        while os.path.exists(f"/proc/{pid}"):
            await trio.sleep(0.01)


async def test_leftover_grandchild_holding_the_pty_does_not_keep_the_runtime_open(guardians):
    # The shell ignores SIGHUP, so its background sleep (which inherits that) survives the
    # shell's exit and keeps the PTY slave open: no EIO. The drain grace ends the wait.
    link, _ = await guardians.connect(
        ["sh", "-c", 'trap "" HUP; sleep 100 & echo $!; exit 4'], drain_grace_seconds=0.2
    )
    link.subscribe(0)
    data, _, exited = await until_exited(link)
    orphan = int(data.decode().strip())
    try:
        assert exited.status.exit_code == 4
        assert _ppid(orphan) == link.identity.guardian_pid  # subreaper: it came to us, not PID 1
    finally:
        os.kill(orphan, signal.SIGKILL)
    await _wait_reaped(orphan)  # and the guardian reaped it
    link.exit_ack()
    await wait_gone(link.identity.guardian_pid)


# --- protocol errors ------------------------------------------------------------------------


async def test_unknown_and_invalid_messages_keep_the_connection(guardians):
    link, _ = await guardians.connect(["sleep", "100"])
    link.post_raw(msgspec.msgpack.encode({"type": "teleport", "to": "mars"}))
    assert await next_message(link) == wire.Error(code="method_not_found", message="unknown message type 'teleport'")
    link.post_raw(msgspec.msgpack.encode({"type": "resize", "rows": 0, "cols": 80}))
    assert await next_message(link) == wire.Error(
        code="invalid_request", message="invalid resize message: Expected `int` >= 1 - at `$.rows`"
    )
    link.post(wire.Foreground())
    assert isinstance(await next_message(link), wire.ForegroundInfo)
    link.post(wire.Signal(signum=signal.SIGKILL))


async def _raw_exchange(path: str, body: bytes) -> tuple[list, bool]:
    """Send one frame on a fresh connection; return what came back and whether it closed."""
    stream = await trio.open_unix_socket(path)
    dec = FrameDecoder()
    got = []
    async with stream:
        await stream.send_all(encode_frame(body))
        with trio.fail_after(TIMEOUT):
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return got, True
                dec.feed(data)
                while (frame := dec.next_frame()) is not None:
                    got.append(wire.decode_guardian_message(frame))


async def test_handshake_errors_close_the_connection(guardians):
    identity, spec = await guardians.start(["sleep", "100"])
    got, closed = await _raw_exchange(spec.socket_path, wire.encode(wire.Hello(protocol=(5, 6))))
    assert closed and got == [
        wire.Error(code="unsupported_protocol", message="daemon speaks guardian protocol 5..6, this guardian 1..3")
    ]
    got, closed = await _raw_exchange(spec.socket_path, wire.encode(wire.Foreground()))
    assert closed and got == [wire.Error(code="handshake_required", message="Foreground before Hello")]
    # The guardian is unharmed.
    link = await guardians.link(spec.socket_path, identity)
    link.post(wire.Signal(signum=signal.SIGKILL))


async def test_new_connection_replaces_the_old(guardians):
    old, spec = await guardians.connect(["sleep", "100"])
    new = await guardians.link(spec.socket_path, old.identity)
    with pytest.raises(GuardianClosed):
        await next_message(old)
    new.post(wire.Signal(signum=signal.SIGKILL))
    new.subscribe(0)
    _, _, exited = await until_exited(new)
    assert exited.status.signal == signal.SIGKILL


async def test_identity_mismatch_is_refused(guardians):
    identity, spec = await guardians.start(["sleep", "100"])
    wrong = msgspec.structs.replace(identity, guardian_start_ticks=identity.guardian_start_ticks + 1)
    with pytest.raises(GuardianIdentityMismatch, match="is not the one expected"):
        await GuardianLink.connect(spec.socket_path, wrong)
    assert identity_alive(identity)
    assert not identity_alive(wrong)


# --- ring overflow and gaps -----------------------------------------------------------------


async def test_overflow_without_subscriber_is_one_exact_gap(guardians):
    first, spec = await guardians.connect(["sh", "-c", "head -c 10000 /dev/zero | tr '\\0' a"], ring_bytes=4096)
    first.subscribe(0)
    _, _, exited = await until_exited(first)  # (this one may or may not have seen gaps)
    assert exited.end_offset == 10000
    await first.aclose()
    # A daemon connecting now finds a finished runtime whose ring kept the last 4096 bytes.
    link = await guardians.link(spec.socket_path, first.identity)
    assert (link.welcome.ring_start, link.welcome.ring_end) == (5904, 10000)
    link.subscribe(0)
    data, msgs, _ = await until_exited(link)
    assert msgs == [
        wire.Gap(start=0, end=5904),
        wire.Output(offset=5904, data=b"a" * 4096),
        exited,
    ]


#: A flood much larger than a small ring, through small buffers: the daemon's slowness shows.
FLOOD = 4_000_000
SMALL_BUFFERS = dict(ring_bytes=64 * 1024, send_buffer_bytes=16 * 1024, output_frame_bytes=4096)


async def test_slow_daemon_gets_exact_gaps_and_the_child_never_waits(guardians):
    total = FLOOD
    link, _ = await guardians.connect(["head", "-c", str(total), "/dev/zero"], **SMALL_BUFFERS)
    link.subscribe(0)
    # Do not read: the socket fills, the guardian stops sending, the child still finishes.
    await wait_gone(link.identity.child_pid)
    data, msgs, exited = await until_exited(link)  # checks contiguity: Output/Gap cover [0, end)
    assert exited.end_offset == total
    gaps = [m for m in msgs if isinstance(m, wire.Gap)]
    assert gaps, "4 MB through a 64 KiB ring to a daemon that did not read must lose bytes"
    assert len(data) + sum(g.end - g.start for g in gaps) == total
    assert data == bytes(len(data))
    assert len(data) >= 64 * 1024  # at least the final ring's worth arrives


async def test_a_held_guardian_makes_the_child_wait_instead_of_losing_bytes(guardians):
    """v3 `Hold`: the same 4 MB through the same 64 KiB ring to a daemon that stops reading
    for a while — the child waits (its writes block on the full PTY) and every byte
    arrives, in order, no Gap."""
    total = FLOOD
    gate = Gate(pathlib.Path(guardians.root) / "go")  # the flood starts once we hold
    link, _ = await guardians.connect(
        ["sh", "-c", f"cat {gate.path} >/dev/null; head -c {total} /dev/zero"], **SMALL_BUFFERS)
    assert link.hold(True)
    link.subscribe(0)
    await trio.to_thread.run_sync(gate.open)
    # Not read for a moment: the child cannot finish meanwhile; it waits for us.
    with trio.move_on_after(0.5):
        await wait_gone(link.identity.child_pid)
        raise AssertionError("the child finished while nobody read its held output")
    data, msgs, exited = await until_exited(link)  # contiguous from 0
    assert [m for m in msgs if isinstance(m, wire.Gap)] == []
    assert exited.end_offset == total and data == bytes(total)


async def test_hold_is_the_connections_a_new_one_starts_unheld(guardians):
    total = 2_000_000
    link, spec = await guardians.connect(["head", "-c", str(total), "/dev/zero"],
                                         ring_bytes=64 * 1024, exit_linger_seconds=30.0)
    link.hold(True)
    link.subscribe(0)
    await link.aclose()  # the daemon goes away: nothing holds the child any more
    await wait_gone(link.identity.child_pid)
    again = await guardians.link(spec.socket_path, link.identity)
    again.subscribe(0)
    data, msgs, exited = await until_exited(again)
    gaps = [m for m in msgs if isinstance(m, wire.Gap)]
    assert gaps and len(data) + sum(g.end - g.start for g in gaps) == total


# --- exit without a daemon, records, reconnect ---------------------------------------------


async def test_exit_with_no_daemon_leaves_private_records(guardians):
    identity, spec = await guardians.start(["sh", "-c", "printf abc; exit 5"], exit_linger_seconds=0.0)
    await wait_gone(identity.guardian_pid)
    assert sorted(os.listdir(guardians.root)) == ["rt1.exit", "rt1.tail"]  # socket unlinked
    for name in os.listdir(guardians.root):
        assert stat.S_IMODE(os.stat(os.path.join(guardians.root, name)).st_mode) == 0o600
    got = records.read_exit_records(guardians.root, "rt1")
    assert got.exit.identity == identity
    assert (got.exit.status.exit_code, got.exit.status.signal, got.exit.end_offset) == (5, None, 3)
    assert got.tail == records.TailRecord(version=1, runtime_id="rt1", start_offset=0, data=b"abc", gap=None)
    assert records.list_exit_records(guardians.root) == ["rt1"]
    records.delete_exit_records(guardians.root, "rt1")
    assert os.listdir(guardians.root) == []


async def test_big_output_with_no_daemon_keeps_the_newest_ring(guardians):
    total = 16 * 1024 * 1024
    identity, spec = await guardians.start(
        ["head", "-c", str(total), "/dev/zero"], ring_bytes=64 * 1024, exit_linger_seconds=0.0
    )
    await wait_gone(identity.guardian_pid)
    got = records.read_exit_records(guardians.root, "rt1")
    assert got.exit.end_offset == total
    assert got.tail.gap == wire.Gap(start=0, end=total - 64 * 1024)
    assert got.tail.start_offset == total - 64 * 1024
    assert got.tail.data == bytes(64 * 1024)


async def test_daemon_dies_before_exit_ack_then_a_new_one_gets_the_exit(guardians):
    link, spec = await guardians.connect(["sh", "-c", "printf abc; exit 7"])
    link.subscribe(0)
    data, _, exited = await until_exited(link)
    assert data == b"abc"
    link.ack(2)
    await link.flush()
    await link.aclose()  # the daemon "dies" without ExitAck
    # The records were written before Exited was sent; they are there now.
    new = await guardians.link(spec.socket_path, link.identity)
    assert new.welcome.exit == exited.status
    assert (new.welcome.ring_start, new.welcome.ring_end, new.welcome.acked_offset) == (0, 3, 2)
    got = records.read_exit_records(guardians.root, "rt1")
    # Rewritten when the first daemon left: the tail starts at its last Ack.
    assert got.tail == records.TailRecord(version=1, runtime_id="rt1", start_offset=2, data=b"c")
    new.subscribe(2)
    data, _, exited2 = await until_exited(new, start=2)
    assert (data, exited2) == (b"c", exited)
    new.exit_ack()
    await wait_gone(new.identity.guardian_pid)
    assert os.listdir(guardians.root) == []


async def test_lingering_guardian_exits_after_the_linger(guardians):
    identity, spec = await guardians.start(["true"], exit_linger_seconds=0.2)
    link = await guardians.link(spec.socket_path, identity)
    link.subscribe(0)
    await until_exited(link)
    await link.aclose()
    await wait_gone(identity.guardian_pid)
    assert records.list_exit_records(guardians.root) == ["rt1"]


# --- launching --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, code, message, exit_code",
    [
        # The command cannot start: said as a shell says it, with the shell's status.
        ({"argv": ["/nonexistent/prog"]}, "not_found", "/nonexistent/prog: command not found", 127),
        ({"argv": ["/"]}, "invalid_request", "/: Permission denied", 126),
        ({"cwd": "/nonexistent"}, "not_found",
         "cannot change to /nonexistent: No such file or directory", 126),
        # The guardian itself cannot start: no exit status (the command never had a chance).
        ({"runtime_id": "../evil"}, "invalid_request", "invalid runtime id '../evil'", None),
    ],
)
async def test_launch_failures_are_reported(guardians, changes, code, message, exit_code):
    spec = msgspec.structs.replace(guardians.spec(["true"]), **changes)
    with pytest.raises(GuardianLaunchError) as info:
        await trio.to_thread.run_sync(launch_guardian, spec, DEFAULTS)
    assert info.value.code.value == code
    assert info.value.message.startswith(message)
    assert info.value.exit_code == exit_code
    assert not os.path.exists(spec.socket_path)


async def test_launch_refuses_a_shared_directory(guardians):
    os.chmod(guardians.root, 0o755)
    spec = guardians.spec(["true"])
    with pytest.raises(GuardianLaunchError, match="mode 0755 lets other users in; it must be 0700"):
        await trio.to_thread.run_sync(launch_guardian, spec, DEFAULTS)


async def test_socket_path_in_use_is_a_conflict(guardians):
    identity, spec = await guardians.start(["sleep", "100"])
    again = msgspec.structs.replace(guardians.spec(["true"]), socket_path=spec.socket_path)
    with pytest.raises(GuardianLaunchError) as info:
        await trio.to_thread.run_sync(launch_guardian, again, DEFAULTS)
    assert info.value.code.value == "conflict"
    assert identity_alive(identity)  # the path still belongs to the first guardian
    assert os.path.exists(spec.socket_path)


async def test_under_systemd_without_a_user_manager_it_falls_back_to_a_double_fork(
    guardians, monkeypatch, caplog
):
    monkeypatch.setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
    link, spec = await guardians.connect(["sleep", "100"])
    assert identity_alive(link.identity)
    systemd_run = shutil.which("systemd-run")
    if systemd_run is None:
        assert caplog.records == []  # nothing to try: straight to the double fork
    elif subprocess.run([systemd_run, "--user", "--scope", "--collect", "--quiet", "--", "true"],
                        capture_output=True).returncode != 0:
        assert [r.getMessage() for r in caplog.records] == [
            f"systemd-run could not start guardian {spec.runtime_id} in its own scope; falling back "
            "to a double fork (restarting vigild.service may then end it)"
        ]
    link.post(wire.Signal(signum=signal.SIGKILL))


LAUNCHER = textwrap.dedent(
    """
    import os, sys, msgspec
    from vigil.daemon.guardian.launch import launch_guardian
    from vigil.daemon.guardian import wire
    from vigil.daemon.settings import DEFAULTS
    spec = msgspec.msgpack.decode(bytes.fromhex(sys.argv[1]), type=wire.LaunchSpec)
    ident = launch_guardian(spec, DEFAULTS)
    sys.stdout.buffer.write(msgspec.msgpack.encode(ident))
    sys.stdout.flush()
    os.close(1)  # sys.stdout.close() would leave fd 1 open (closefd=False)
    sys.stdin.buffer.read()  # blocks until we are killed
    """
)


async def test_guardian_survives_the_sigkill_of_its_launcher(guardians):
    spec = guardians.spec(["cat"])
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, wire.encode(spec).hex()], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        with trio.fail_after(TIMEOUT):
            out = await trio.to_thread.run_sync(launcher.stdout.read, abandon_on_cancel=True)
        identity = msgspec.msgpack.decode(out, type=wire.RuntimeIdentity)
        guardians.launched.append(identity)
        assert _ppid(identity.guardian_pid) != launcher.pid  # re-parented away: double fork
        assert os.getsid(identity.guardian_pid) != os.getsid(launcher.pid)
        assert launcher.poll() is None
    finally:
        launcher.kill()  # SIGKILL: no cleanup of any kind in the launcher
        launcher.stdin.close()
        await trio.to_thread.run_sync(launcher.wait)
    assert launcher.returncode == -signal.SIGKILL
    assert identity_alive(identity)
    link = await guardians.link(spec.socket_path, identity)
    link.subscribe(0)
    link.post(wire.Input(data=b"still here\n"))
    await until_output(link, b"still here\r\nstill here\r\n")


def test_guardian_process_does_not_import_trio():
    code = (
        "import sys, vigil.daemon.guardian.__main__; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('trio', 'vigil.daemon.runtime.link')); "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


# --- confirmed delivery (guardian protocol v2) ------------------------------------------------


class Reader:
    """The one reader of a link (as the daemon's runtime loop is): answers to numbered
    commands are routed to their callers, everything else lands in `seen`."""

    def __init__(self, guardians, link: GuardianLink):
        self.seen: list = []
        self._arrived = trio.Event()
        guardians.nursery.start_soon(self._run, link)

    async def _run(self, link: GuardianLink) -> None:
        async for msg in link:
            self.seen.append(msg)
            self._arrived.set()

    def output(self) -> bytes:
        return b"".join(m.data for m in self.seen if isinstance(m, wire.Output))

    async def until(self, condition) -> None:
        with trio.fail_after(TIMEOUT):
            while not condition():
                self._arrived = trio.Event()
                await self._arrived.wait()


async def test_numbered_commands_are_answered(guardians):
    link, _ = await guardians.connect(["cat"])
    link.subscribe(0)
    reader = Reader(guardians, link)
    done = await link.send_input(b"ping\n")
    assert done == wire.Done(seq=done.seq, accepted=5) and done.seq >= 1
    assert await link.resize(30, 100) == wire.Done(seq=done.seq + 1)
    await reader.until(lambda: reader.output() == b"ping\r\nping\r\n")
    # Answers never reach the reader: they went to their callers.
    assert not any(isinstance(m, (wire.Done, wire.Error)) for m in reader.seen)
    assert await link.signal(signal.SIGKILL) == wire.Done(seq=done.seq + 2)


async def test_input_over_the_buffer_is_refused_whole(guardians):
    link, _ = await guardians.connect(["sleep", "100"], input_buffer_bytes=4096)
    Reader(guardians, link)
    with pytest.raises(GuardianRefused) as info:
        await link.send_input(b"x" * 5000)
    assert info.value.code == "limit_exceeded"
    assert info.value.message == ("input of 5000 bytes refused: 0 bytes are still waiting for "
                                  "the child to read them (limit 4096)")
    assert (await link.send_input(b"y" * 100)).accepted == 100
    await link.signal(signal.SIGKILL)


async def test_commands_after_the_exit_are_refused(guardians):
    link, _ = await guardians.connect(["true"])
    link.subscribe(0)
    await until_exited(link)
    Reader(guardians, link)
    with pytest.raises(GuardianRefused) as info:
        await link.send_input(b"late")
    assert (info.value.code, info.value.message) == (
        "unavailable", "the child has exited; input was not delivered")
    with pytest.raises(GuardianRefused) as info:
        await link.signal(signal.SIGTERM)
    assert (info.value.code, info.value.message) == (
        "unavailable", "the child has exited; signal 15 not sent")


async def test_a_stopped_guardian_is_reported_not_waited_on(guardians):
    identity, spec = await guardians.start(["cat"])
    link = await GuardianLink.connect(spec.socket_path, identity, command_timeout=0.3)
    guardians.nursery.start_soon(link.run_sender)
    link.subscribe(0)
    reader = Reader(guardians, link)
    os.kill(identity.guardian_pid, signal.SIGSTOP)
    try:
        start = trio.current_time()
        with pytest.raises(GuardianTimeout, match="did not answer within 0.3 s"):
            await link.send_input(b"hello\n")
        with pytest.raises(GuardianTimeout):
            await link.signal(signal.SIGINT)
        assert trio.current_time() - start < 0.3 * 2 + 1.0
    finally:
        os.kill(identity.guardian_pid, signal.SIGCONT)
    # Resumed, it applies what was queued, in order: the input arrives (its answer came
    # too late), then the SIGINT ends cat.
    await reader.until(lambda: any(isinstance(m, wire.Exited) for m in reader.seen))
    # The echo of the line; cat's own copy only if it ran before the SIGINT reached it.
    assert reader.output() in (b"hello\r\n", b"hello\r\nhello\r\n")
    assert reader.seen[-1].status.signal == signal.SIGINT
