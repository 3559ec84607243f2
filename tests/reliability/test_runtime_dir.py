"""The runtime directory deleted under a running daemon (issue 10, item 7).

`rm -rf $XDG_RUNTIME_DIR/vigil` used to let the next CLI autostart a second daemon on the
same state, running executions became `unknown` and could not be killed while they ran on,
and a guardian whose child exited afterwards crashed on FileNotFoundError writing its exit
record before it told the daemon the exit code. Now the daemon notices (inotify on the dir)
and recreates its dir, lock and socket; guardians recreate their records dir (and deliver
the exit over their connection even if they cannot), and re-bind their own socket when the
daemon's connection ends, so a daemon started after the deletion finds them again."""

import os
import shutil
import signal
import stat

import pytest

from tests.support.daemon import processes_with_env, wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    Gate,
    Session,
    cli_env,
    python_child,
    wait_pid_exit,
    workspace,
)


def daemons_of(home) -> set[int]:
    """Pids of vigild processes serving this home (guardians carry the same environment)."""
    found = set()
    for pid in processes_with_env(f"VIGIL_SOCKET={home.socket}"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"vigil.daemon" in argv:  # `-m vigil.daemon`: a guardian runs boot.py
            found.add(pid)
    return found


def gated_exit(gate: Gate, code: int) -> list[str]:
    return python_child(gate.wait_source() + f"print('released'); raise SystemExit({code})")


def test_deleted_runtime_dir_is_recreated_and_nothing_is_lost(home, daemon, workspace, cli_env):
    gate = Gate(home.root / "gate")
    s = Session(home, workspace)
    later = s.run(argv=gated_exit(gate, 42))["execution_id"]
    sleeper = s.run(argv=["sleep", "600"])["execution_id"]

    shutil.rmtree(home.socket.parent)

    # The next CLI finds the same daemon (it either connects to the recreated socket, or
    # autostarts a daemon that sees the state dir held for this socket and steps aside).
    ls = home.cli("--json", "ls", env=cli_env)
    assert ls.returncode == 0, ls.stderr
    assert {e["execution_id"] for e in __import__("json").loads(ls.stdout)["executions"]} >= {
        later, sleeper}
    with home.client() as c:
        assert c.call("status")["pid"] == daemon.pid
    assert os.path.exists(home.socket)

    # Control still reaches the guardians (their connections survived the unlink).
    kill = home.cli("kill", sleeper, env=cli_env)
    assert kill.returncode == 0, kill.stderr
    s2 = Session(home, workspace)
    killed = s2.wait_exit(sleeper)
    assert killed["signal"] == signal.SIGTERM, {k: killed[k] for k in ("status", "exit_code", "signal", "unknown_reason")}
    logs = home.cli("logs", sleeper, env=cli_env)
    assert logs.returncode == 0, logs.stderr

    # An exit after the deletion: the guardian's records dir is gone, the exit code is not.
    gate.open()
    record = s2.wait_exit(later)
    assert record["status"] == "exited" and record["exit_code"] == 42, record
    assert "released" in "".join(p["text"] for p in s2.follow(later).pages)

    assert daemons_of(home) == {daemon.pid}
    assert "Traceback" not in daemon.log.read_text()
    s.close()
    s2.close()


def test_daemon_restarted_after_the_deletion_finds_the_guardians(home, workspace):
    first = home.start_daemon()
    gate = Gate(home.root / "gate")
    s = Session(home, workspace)
    eid = s.run(argv=gated_exit(gate, 7))["execution_id"]
    s.close()

    shutil.rmtree(home.socket.parent)
    wait_for(lambda: os.path.exists(home.socket), what="the daemon to recreate its socket")
    assert first.stop() == 0
    second = home.start_daemon()  # recovery connects to the guardian's re-bound socket

    s = Session(home, workspace)
    assert s.get(eid)["status"] == "running"
    gate.open()
    record = s.wait_exit(eid)
    assert record["status"] == "exited" and record["exit_code"] == 7, record
    assert daemons_of(home) == {second.pid}
    s.close()


def test_deleted_socket_alone_is_recreated(home, daemon):
    os.unlink(home.socket)
    wait_for(lambda: os.path.exists(home.socket), what="the socket to come back")
    with home.client() as c:
        assert c.call("status")["pid"] == daemon.pid
    os.unlink(home.socket.with_name("vigil.sock.lock"))
    wait_for(lambda: os.path.exists(home.socket.with_name("vigil.sock.lock")),
             what="the lock file to come back")
    with open(home.socket.with_name("vigil.sock.lock")) as f:
        assert f.readline().strip() == str(daemon.pid)


@pytest.mark.parametrize("missing", ["records", "guardians"])
def test_guardian_exit_with_its_dir_gone_is_delivered(home, daemon, workspace, missing):
    """Only the guardians' files go: the daemon has nothing to notice, the guardian copes."""
    gate = Gate(home.root / "gate")
    s = Session(home, workspace)
    eid = s.run(argv=gated_exit(gate, 5))["execution_id"]
    guardians = home.socket.parent / "guardians"
    shutil.rmtree(guardians / "records" if missing == "records" else guardians)
    gate.open()
    record = s.wait_exit(eid)
    assert record["status"] == "exited" and record["exit_code"] == 5, record
    wait_pid_exit(record["runtime"]["guardian_pid"])
    # What the guardian recreated is as private as the rest, and runs go on.
    for d in (guardians, guardians / "records"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    again = s.run(argv=["sh", "-c", "exit 6"])["execution_id"]
    assert s.wait_exit(again)["exit_code"] == 6
    s.close()
