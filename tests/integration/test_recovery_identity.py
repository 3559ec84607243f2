"""Recovery trusts the whole runtime identity, never a pid: a process that merely has the
dead guardian's pid (pid reuse, forced here through ns_last_pid) is not taken for the
guardian — the execution is settled `unknown` as vanished, and the impostor is left alone.
Also: a guardian that died while the daemon was down is `unknown`, never a success."""

import os
import signal
import subprocess

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    kill_quietly,
    spawn_at_pid,
    wait_pid_exit,
    wait_pid_reaped,
    workspace,
)
from vigil.daemon.guardian.identity import identity_alive, read_boot_id, read_start_ticks
from vigil.daemon.guardian.wire import RuntimeIdentity

VANISHED = "the guardian vanished without an exit record"


def identity_of(runtime: dict) -> RuntimeIdentity:
    return RuntimeIdentity(**runtime)


def start_sleeper(home, workspace) -> tuple[Session, dict]:
    home.start_daemon()
    s = Session(home, workspace)
    return s, s.run(argv=["sleep", "100"])


def kill_guardian_while_daemon_down(home, s: Session, e: dict) -> dict:
    """SIGKILL the daemon, then the guardian (and its child); returns the runtime."""
    rt = e["runtime"]
    s.close()
    home.daemons[-1].kill()
    os.kill(rt["guardian_pid"], signal.SIGKILL)
    kill_quietly(rt["child_pid"])
    wait_pid_exit(rt["guardian_pid"])
    wait_pid_exit(rt["child_pid"])
    return rt


def test_guardian_killed_while_daemon_down_is_unknown(home, workspace):
    s, e = start_sleeper(home, workspace)
    kill_guardian_while_daemon_down(home, s, e)
    home.start_daemon()
    s = Session(home, workspace)
    try:
        rec = s.wait_exit(e["execution_id"])
    finally:
        s.close()
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("unknown", None, None, VANISHED)


def test_reused_pid_is_not_mistaken_for_the_guardian(home, workspace):
    s, e = start_sleeper(home, workspace)
    rt = kill_guardian_while_daemon_down(home, s, e)
    pid, ticks = rt["guardian_pid"], rt["guardian_start_ticks"]
    wait_pid_reaped(pid, ticks)  # the pid must be free before anyone can have it
    impostor = spawn_at_pid(pid, ["sleep", "100"])
    if impostor is None:
        pytest.skip("cannot choose pids here (ns_last_pid not writable or too busy)")
    try:
        assert read_start_ticks(pid) != ticks  # same pid, another process
        assert not identity_alive(identity_of(rt))
        home.start_daemon()
        s = Session(home, workspace)
        try:
            rec = s.wait_exit(e["execution_id"])
        finally:
            s.close()
        # Settled as a vanished guardian: neither "alive" (which a pid-only check would
        # conclude) nor any kind of success.
        assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
            ("unknown", None, None, VANISHED)
        assert impostor.poll() is None  # and the impostor was not signalled
    finally:
        impostor.kill()
        impostor.wait()


def test_identity_check_against_a_live_unrelated_process():
    """The check recovery relies on, against real processes: the pid of a live process with
    someone else's start ticks or boot is not that process; a zombie is not alive."""
    proc = subprocess.Popen(["sleep", "100"])
    try:
        ticks = read_start_ticks(proc.pid)
        real = RuntimeIdentity(runtime_id="r", boot_id=read_boot_id(), guardian_pid=proc.pid,
                               guardian_start_ticks=ticks, child_pid=proc.pid)
        assert identity_alive(real)
        for other_ticks in (ticks - 1, ticks + 1, 0):
            assert not identity_alive(RuntimeIdentity(
                runtime_id="r", boot_id=real.boot_id, guardian_pid=proc.pid,
                guardian_start_ticks=other_ticks, child_pid=proc.pid))
        assert not identity_alive(RuntimeIdentity(
            runtime_id="r", boot_id="00000000-0000-0000-0000-000000000000",
            guardian_pid=proc.pid, guardian_start_ticks=ticks, child_pid=proc.pid))
        proc.kill()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
        assert not identity_alive(real)
    finally:
        proc.kill()
        proc.wait()
