"""How executions end, as a real daemon records them and the CLI reports them: exit codes,
signals (the child's own and `vigil kill`'s), a program that cannot start, a guardian killed
under its child (`unknown`, never a success), `vigil logs -f` following to the end, and
`observed_at_unix_ms` staying put on polls that change nothing."""

import os
import signal
import subprocess
import sys

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    EXIT_TIMEOUT,
    Gate,
    cli_bytes,
    cli_env,
    kill_quietly,
    python_child,
    remote_error,
    session,
    wait_pid_exit,
    workspace,
)
from vigil.protocol.errors import RemoteError


def test_exit_code_is_recorded_and_returned_by_run_wait(session, home, cli_env):
    e = session.run(command="echo out; exit 3")
    final = session.follow(e["execution_id"])
    assert final.text == "out\r\n"
    rec = final.record
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("exited", 3, None, None)
    assert rec["ended_unix_ms"] >= rec["started_unix_ms"]

    # Into a pipe: plain text with LF line ends; --raw: the PTY's bytes as written.
    done = cli_bytes(cli_env, "run", "--wait", "--", "sh", "-c", "echo hi; exit 3")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"hi\n", b"")
    raw = cli_bytes(cli_env, "run", "--wait", "--raw", "--", "sh", "-c", "echo hi; exit 3")
    assert (raw.returncode, raw.stdout, raw.stderr) == (3, b"hi\r\n", b"")


def test_own_signal_is_recorded_and_run_wait_exits_128_plus_n(session, home, cli_env):
    rec = session.wait_exit(session.run(command="kill -TERM $$")["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("exited", None, 15)

    done = cli_bytes(cli_env, "run", "--wait", "--", "sh", "-c", "kill -TERM $$")
    assert (done.returncode, done.stdout, done.stderr) == (143, b"", b"")


def test_vigil_kill_sends_the_named_signal(session, home, cli_env):
    started = home.cli("run", "--", "sh", "-c", "echo up; exec sleep 100", env=cli_env)
    assert started.returncode == 0, started.stderr
    eid = started.stdout.strip()
    assert len(eid) == 32 and session.get(eid)["status"] == "running"
    # Followed by the daemon (its output persisted) before the kill: a kill racing the
    # daemon's connection to the guardian is test_signal_right_after_run_is_delivered.
    session.read_until(eid, lambda p: p["text"] == "up\r\n")

    killed = home.cli("kill", eid[:8], "-s", "INT", env=cli_env)  # a unique prefix will do
    assert (killed.returncode, killed.stderr) == (0, "")
    rec = session.wait_exit(eid)
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("exited", None, 2)

    shown = home.cli("show", eid, env=cli_env)
    assert "status    killed (SIGINT)" in shown.stdout.splitlines()
    again = home.cli("kill", eid, env=cli_env)
    assert (again.returncode, again.stderr) == (1, "vigil: conflict: the execution has already exited\n")


def test_a_command_that_cannot_start_exits_127_or_126_with_the_reason(session, home, cli_env):
    """Not `unknown`: the guardian ran and the command could not, a definite outcome,
    reported as a shell reports it (POSIX: 127 not found, 126 found but not executable)."""
    e = session.run(argv=["/nonexistent/vigil-test-prog", "x"])
    assert (e["status"], e["exit_code"], e["signal"], e["start_error"]) == \
        ("exited", 127, None, "/nonexistent/vigil-test-prog: command not found")
    rec = session.get(e["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["unknown_reason"], rec["recognized_state"]) == \
        ("exited", 127, None, "exited")
    page = session.read(e["execution_id"])
    assert (page["text"], page["has_more"]) == ("", False)

    done = home.cli("run", "--wait", "--", "vigil-no-such-command", env=cli_env)
    assert (done.returncode, done.stdout, done.stderr) == (
        127, "", "vigil: vigil-no-such-command: command not found\n")
    started = home.cli("run", "--", "/", env=cli_env)  # a directory: found, not executable
    assert (started.returncode, started.stderr) == (126, "vigil: /: Permission denied\n")
    eid = started.stdout.strip()
    shown = home.cli("show", eid, env=cli_env).stdout.splitlines()
    assert "status    not started (126)" in shown and "reason    /: Permission denied" in shown
    listed = home.cli("ls", env=cli_env).stdout.splitlines()
    assert any(line.startswith(eid[:12]) and "not started (126)" in line for line in listed)


#: What the daemon says when it loses a guardian that left no exit record.
VANISHED = "the guardian vanished without an exit record"


def kill_guardian_and_settle(session) -> dict:
    e = session.run(command="echo up; exec sleep 100")
    rt = e["runtime"]
    try:
        # Killed once it is followed (its output persisted), not mid-handshake: that case
        # is test_recovery_handshake's.
        session.read_until(e["execution_id"], lambda p: p["text"] == "up\r\n")
        os.kill(rt["guardian_pid"], signal.SIGKILL)
        wait_pid_exit(rt["guardian_pid"])
        return session.wait_exit(e["execution_id"])
    finally:
        kill_quietly(rt["child_pid"])


def test_guardian_sigkill_is_unknown_never_success(session):
    rec = kill_guardian_and_settle(session)
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("unknown", None, None, VANISHED)
    assert rec["output"]["pending"] is False


def test_guardian_sigkill_is_judged_after_its_death_every_time(session):
    """A killed guardian's socket closes a moment before the kernel makes it a zombie; a
    daemon that judged /proc at EOF would sometimes call it "alive but does not answer"
    (seen 1 run in 6 before the fix). Twelve in a row make that visible."""
    reasons = [kill_guardian_and_settle(session)["unknown_reason"] for _ in range(12)]
    assert reasons == [VANISHED] * 12


def test_logs_follow_streams_a_running_command_to_its_end(session, cli_env, workspace):
    gate = Gate(workspace / "go")
    child = python_child(
        "import sys\n"
        "for i in range(50): print(f'before {i}')\n"
        + gate.wait_source() +
        "for i in range(2000): print(f'after {i}')\n"
        "sys.exit(4)\n")
    eid = session.run(argv=child)["execution_id"]
    follower = subprocess.Popen([sys.executable, "-m", "vigil.client.cli", "logs", eid[:10], "-f"],
                                env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                bufsize=0)
    try:
        # The follower streams while the command runs: its first line arrives while the
        # command is held at the gate.
        first = follower.stdout.readline()
        assert first == b"before 0\n"  # into a pipe: plain text, LF line ends
        assert session.get(eid)["status"] == "running"
        gate.open()
        rest, err = follower.communicate(timeout=EXIT_TIMEOUT)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    expected = "".join(f"before {i}\n" for i in range(50)) + \
        "".join(f"after {i}\n" for i in range(2000))
    assert (follower.returncode, err) == (0, b"")
    assert (first + rest).decode() == expected
    rec = session.get(eid)
    assert (rec["status"], rec["exit_code"]) == ("exited", 4)


def test_observed_at_does_not_move_on_unchanged_polls(session):
    eid = session.run(command="echo done")["execution_id"]
    first = session.wait_exit(eid)
    # Let the clock move on with real work in between (another execution start to end).
    session.wait_exit(session.run(command="true")["execution_id"])
    second = session.get(eid)
    listed = [e for e in session.list()["executions"] if e["execution_id"] == eid]
    session.read(eid)
    third = session.get(eid)
    assert second == first
    assert third == first
    assert listed == [first]
    assert first["observed_at_unix_ms"] >= first["ended_unix_ms"]


def test_signal_right_after_run_is_delivered(session):
    refused = []
    for _ in range(40):  # stops at the first refusal; each try has a ~45% chance to hit it
        e = session.run(argv=["sleep", "100"])
        try:
            session.call("signal", execution_id=e["execution_id"], signal="INT")
        except RemoteError as err:
            refused.append((err.code.value, err.message))
            kill_quietly(e["runtime"]["child_pid"])
            session.wait_exit(e["execution_id"])
            break
        rec = session.wait_exit(e["execution_id"])
        assert (rec["status"], rec["signal"]) == ("exited", 2)
    assert refused == []
