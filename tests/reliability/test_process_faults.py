"""Process faults under a live daemon: guardian SIGKILL, child SIGKILL, a child that closes
its PTY but keeps running, a child that forks a daemon of its own, zombie grandchildren.

Each case ends with the right status, and leaves nothing behind: no process carrying the
case's token (every child gets a unique `VG_FAULT_TOKEN` in its environment, so the scan of
/proc finds exactly the processes this case started, never another test's), no process
other than the daemon carrying this test's VIGIL_SOCKET, and the daemon's fd count back
to its baseline. Those three are conditions without an event: `wait_for` with a deadline.
"""

import os
import time
import uuid

import pytest

from tests.support.daemon import VigilHome, wait_for
from tests.support.executions import (
    Gate,
    Session,
    kill_leftover_children,
    kill_quietly,
    python_child,
    wait_pid_exit,
    wait_pid_reaped,
)
from vigil.daemon.guardian.identity import read_start_ticks

#: After the child exits, a leftover holder of the PTY is ignored after this long (the
#: setting's default is 2 s; 0.5 s keeps the case short and is still far above the few
#: ms a guardian needs to see EIO when nobody else holds the slave).
DRAIN_GRACE = 0.5


@pytest.fixture(scope="module")
def world():
    home = VigilHome()
    home.write_config(f"guardian_drain_grace_seconds = {DRAIN_GRACE}\n")
    daemon = home.start_daemon()
    ws = home.root / "ws"
    ws.mkdir()
    s = Session(home, ws)
    try:
        yield home, daemon, s
    finally:
        s.close()
        kill_leftover_children()
        home.cleanup()


def _environ(pid: str) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def carriers(needle: str) -> list[int]:
    """Pids whose environment holds `needle` (zombies have none: see the reaping checks)."""
    entry = needle.encode()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and entry in _environ(p).split(b"\0")]


class Case:
    """One fault case: its token, and the checks that nothing of it outlives it."""

    def __init__(self, world):
        self.home, self.daemon, self.s = world
        self.token = uuid.uuid4().hex
        self.fds = self.daemon.fd_count()

    def run(self, **params) -> dict:
        return self.s.run(env={"VG_FAULT_TOKEN": self.token}, **params)

    def assert_clean(self, allow: tuple[int, ...] = ()):
        mine = f"VG_FAULT_TOKEN={self.token}"
        wait_for(lambda: set(carriers(mine)) <= set(allow), what=f"processes of {mine} to end")
        socket_env = f"VIGIL_SOCKET={self.home.socket}"
        wait_for(lambda: set(carriers(socket_env)) <= {self.daemon.pid, *allow},
                 what="no process but the daemon carrying this test's socket")
        wait_for(lambda: self.daemon.fd_count() == self.fds,
                 what=f"daemon fds back to {self.fds}")


def test_guardian_sigkill_is_unknown_and_takes_the_child_down(world):
    c = Case(world)
    e = c.run(argv=["sleep", "30"])
    os.kill(e["runtime"]["guardian_pid"], 9)
    rec = c.s.wait_exit(e["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("unknown", None, None, "the guardian vanished without an exit record")
    # The PTY master closed with the guardian: the child (session leader) got SIGHUP.
    wait_pid_exit(e["runtime"]["child_pid"])
    c.assert_clean()


def test_child_sigkill_is_exited_with_signal_9(world):
    c = Case(world)
    e = c.run(argv=["sleep", "30"])
    os.kill(e["runtime"]["child_pid"], 9)
    rec = c.s.wait_exit(e["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("exited", None, 9, None)
    wait_pid_exit(e["runtime"]["guardian_pid"])
    c.assert_clean()


def test_child_that_closes_its_pty_keeps_running_until_it_exits(world, tmp_path):
    """What vigil reports: the guardian sees EIO (no process holds the slave any more) but
    the execution stays `running` until the child itself exits, then `exited` with its own
    code; the output is what it wrote before closing."""
    c = Case(world)
    gate = Gate(tmp_path / "gate")
    source = ("import os, sys\nos.write(1, b'closing\\n')\n"
              "null = os.open('/dev/null', os.O_RDWR)\n"
              "for fd in (0, 1, 2): os.dup2(null, fd)\n" + gate.wait_source() + "sys.exit(3)\n")
    e = c.run(argv=python_child(source))
    eid = e["execution_id"]
    c.s.read_until(eid, lambda p: "closing" in p["text"])
    assert c.s.get(eid)["status"] == "running"
    gate.open()
    rec = c.s.wait_exit(eid)
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("exited", 3, None)
    assert c.s.follow(eid).text == "closing\r\n"
    c.assert_clean()


@pytest.mark.parametrize("holds_pty", [True, False], ids=["daemon-holds-pty", "daemon-detached"])
def test_child_that_forks_its_own_daemon_and_exits(world, tmp_path, holds_pty):
    """The child starts a setsid'd background `sleep` (announcing its pid through a FIFO,
    so it surely runs before the child exits) and exits 4. vigil reports `exited 4` — after
    the drain grace when the background process still holds the PTY slave — and does not
    kill a process that left its session on purpose. Once that process ends (the test
    kills it), nothing of the case remains: the guardian, its subreaper, is gone too."""
    c = Case(world)
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    redirect = "" if holds_pty else "</dev/null >/dev/null 2>&1"
    e = c.run(command=f"setsid -f sh -c 'echo $$ > {fifo}; exec sleep 30' {redirect}; "
                      f"read pid < {fifo}; echo daemon=$pid; exit 4")
    eid = e["execution_id"]
    t0 = time.monotonic()
    rec = c.s.wait_exit(eid)
    waited = time.monotonic() - t0
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("exited", 4, None)
    if holds_pty:  # no EIO while the background process holds the slave: the grace decides
        assert waited >= DRAIN_GRACE * 0.9, waited
    text = c.s.follow(eid).text
    assert text.startswith("daemon=") and text.endswith("\r\n"), text
    bg = int(text.split("=")[1])
    assert read_start_ticks(bg) is not None, "vigil killed a process that left its session"
    assert carriers(f"VG_FAULT_TOKEN={c.token}") == [bg]
    ticks = read_start_ticks(bg)
    kill_quietly(bg)
    wait_pid_reaped(bg, ticks)
    wait_pid_exit(e["runtime"]["guardian_pid"])
    c.assert_clean()


def test_zombie_grandchildren_are_reaped(world, tmp_path):
    """The child forks five grandchildren that exit at once and never reaps them, then
    exits 5 while they are zombies: the guardian (a subreaper) reaps them."""
    c = Case(world)
    gate = Gate(tmp_path / "gate")
    source = ("import os, sys\npids = []\nfor _ in range(5):\n    pid = os.fork()\n"
              "    if pid == 0: os._exit(0)\n    pids.append(pid)\n"
              "print(' '.join(map(str, pids)), flush=True)\n" + gate.wait_source() + "sys.exit(5)\n")
    e = c.run(argv=python_child(source))
    eid = e["execution_id"]
    page = c.s.read_until(eid, lambda p: p["text"].endswith("\r\n"))
    zombies = [int(p) for p in page["text"].split()]
    ticks = {}
    for pid in zombies:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        assert fields[0] == "Z", f"grandchild {pid} is {fields[0]}, expected a zombie"
        ticks[pid] = read_start_ticks(pid)
    gate.open()
    rec = c.s.wait_exit(eid)
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("exited", 5, None)
    for pid in zombies:
        wait_pid_reaped(pid, ticks[pid])
    c.assert_clean()
