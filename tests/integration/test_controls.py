"""Lifecycle controls through the real daemon (seeds/002, `POST /executions/:id/cancel|pause|
resume`): pause stops a program's output and resume continues it with not a byte lost;
cancel records a cancelled outcome within the grace, and SIGKILLs a program that ignores
SIGTERM once the grace is over; misuse gets `conflict` with a clear message and sends nothing.
"""

import time

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    EXIT_TIMEOUT,
    Session,
    cli_env,
    python_child,
    remote_error,
    session,
    workspace,
)

#: A program that prints 0..COUNT-1, one line every TICK seconds, then exits 0.
COUNT = 60
TICK = 0.02
TICKER = python_child(
    "import time\n"
    f"for i in range({COUNT}):\n"
    "    print(i)\n"
    f"    time.sleep({TICK})\n")
TICKER_OUTPUT = "".join(f"{i}\r\n" for i in range(COUNT))


def proc_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (`T`: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_pause_stops_output_and_resume_continues_it_byte_for_byte(session, home, cli_env):
    e = session.run(argv=TICKER)
    eid = e["execution_id"]
    child = session.get(eid)["runtime"]["child_pid"]
    page = session.read_until(eid, lambda p: "3\r\n" in p["text"])

    paused = session.call("pause", execution_id=eid)
    assert (paused["action"], paused["execution"]["paused"], paused["execution"]["status"]) == \
        ("pause", True, "running")
    wait_for(lambda: proc_state(child) == "T", what="the child stopped")
    assert session.get(eid)["paused"] is True
    # Stopped: whatever it wrote before the stop arrives, then nothing more.
    seen = session.get(eid)["output"]["total_bytes"]
    quiet = session.read(eid, cursor=page["next_cursor"], wait_seconds=0.5)
    later = session.get(eid)["output"]["total_bytes"]
    quiet2 = session.read(eid, cursor=quiet["next_cursor"], wait_seconds=0.5)
    assert quiet2["text"] == "" and session.get(eid)["output"]["total_bytes"] == later
    assert later < len(TICKER_OUTPUT) and seen <= later

    listed = home.cli("ls", env=cli_env)
    assert [line.split()[1] for line in listed.stdout.splitlines()[1:]] == ["paused"]
    shown = home.cli("show", eid, env=cli_env)
    assert "status    paused" in shown.stdout.splitlines()
    observed = session.execution({"type": "observe", "items": [{"execution_id": eid}]})
    assert observed["data"]["items"][0]["execution"]["paused"] is True
    listed = session.execution({"type": "list", "state": "active"})["data"]["executions"]
    assert [(e["execution_id"], e["paused"]) for e in listed] == [(eid, True)]

    err = remote_error(session.call, "pause", execution_id=eid)
    assert (err.code, err.message) == ("conflict", "the execution is already paused")

    resumed = home.cli("resume", eid[:10], env=cli_env)
    assert (resumed.returncode, resumed.stderr) == (0, "")
    assert resumed.stdout == f"{eid} resumed\n"
    final = session.follow(eid)
    assert final.text == TICKER_OUTPUT
    assert (final.record["status"], final.record["exit_code"], final.record["paused"],
            final.record["cancelled"]) == ("exited", 0, False, False)

    err = remote_error(session.call, "resume", execution_id=eid)
    assert (err.code, err.message) == ("conflict", "cannot resume: the execution has already exited")


def test_resume_when_not_paused_and_unknown_ids_are_refused(session, home, cli_env):
    e = session.run(command="echo up; exec sleep 100")
    eid = e["execution_id"]
    session.read_until(eid, lambda p: p["text"] == "up\r\n")
    err = remote_error(session.call, "resume", execution_id=eid)
    assert (err.code, err.message, err.data) == (
        "conflict", "the execution is not paused",
        {"execution_id": eid, "status": "running", "paused": False})
    for method in ("pause", "resume", "cancel", "rerun"):
        err = remote_error(session.call, method, execution_id="0" * 32)
        assert err.code == "not_found", (method, err)
        err = remote_error(session.call, method, execution_id="not-an-id")
        assert (err.code, err.data["field"]) == ("invalid_request", "params.execution_id")
    bad = home.cli("pause", "ffff", env=cli_env)
    assert bad.returncode == 1 and bad.stderr.startswith("vigil: not_found")
    session.call("cancel", execution_id=eid)


def test_cancel_records_cancelled_within_the_grace(session, home, cli_env):
    e = session.run(command="echo up; exec sleep 100")
    eid = e["execution_id"]
    session.read_until(eid, lambda p: p["text"] == "up\r\n")
    started = time.monotonic()
    done = home.cli("cancel", eid, env=cli_env)
    took = time.monotonic() - started
    assert (done.returncode, done.stderr, done.stdout) == (0, "", f"{eid} cancelled (SIGTERM)\n")
    assert took < 5.0  # the default grace: SIGTERM ended it, no SIGKILL was waited for
    rec = session.get(eid)
    assert (rec["status"], rec["signal"], rec["cancelled"], rec["paused"]) == \
        ("exited", 15, True, False)
    listed = home.cli("ls", env=cli_env)
    assert listed.stdout.splitlines()[1].split()[1] == "cancelled"
    again = home.cli("cancel", eid, env=cli_env)
    assert (again.returncode, again.stderr) == \
        (1, "vigil: conflict: cannot cancel: the execution has already exited\n")


def test_cancel_of_a_paused_execution_ends_it(session):
    e = session.run(argv=TICKER)
    eid = e["execution_id"]
    session.read_until(eid, lambda p: "1\r\n" in p["text"])
    session.call("pause", execution_id=eid)
    result = session.call("cancel", execution_id=eid)
    assert (result["killed"], result["execution"]["status"], result["execution"]["signal"],
            result["execution"]["cancelled"], result["execution"]["paused"]) == \
        (False, "exited", 15, True, False)


def test_cancel_kills_a_program_that_ignores_sigterm_after_the_grace(home, workspace):
    home.write_config("cancel_grace_seconds = 0.5\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        e = s.run(argv=python_child(
            "import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ignoring', flush=True)\n"
            "time.sleep(100)\n"))
        eid = e["execution_id"]
        s.read_until(eid, lambda p: p["text"] == "ignoring\r\n")
        started = time.monotonic()
        result = s.call("cancel", execution_id=eid)
        took = time.monotonic() - started
        assert 0.5 <= took < 0.5 + EXIT_TIMEOUT
        ex = result["execution"]
        assert (result["killed"], ex["status"], ex["signal"], ex["cancelled"]) == \
            (True, "exited", 9, True)
        events = s.execution({"type": "events", "execution_id": eid, "level": "warn"})["data"]
        assert [(ev["level"], ev["kind"], ev["message"]) for ev in events["events"]] == [
            ("warn", "cancel", "still running 0.5 s after SIGTERM: SIGKILL to the process group"),
        ]
    finally:
        s.close()


def test_commands_of_a_persistent_shell_are_not_controlled_directly(session):
    ran = session.call("BashCommand", action={"type": "command", "command": "echo hi"})
    eid = ran["execution_id"]
    err = remote_error(session.call, "pause", execution_id=eid)
    assert (err.code, err.message) == (
        "conflict", "cannot pause a command of a persistent shell: it shares the shell's "
                    "process group (BashCommand's Ctrl-C stops it)")


def test_vigil_events_shows_a_cancelled_execution(session, home, cli_env):
    """The CLI decodes the log typed: a cancel entry's data (the grace, in seconds) too."""
    eid = session.run(command="echo up; exec sleep 100")["execution_id"]
    session.read_until(eid, lambda p: p["text"] == "up\r\n")
    session.call("cancel", execution_id=eid)
    out = home.cli("events", eid, env=cli_env)
    assert out.returncode == 0, out.stderr
    messages = [line.split(None, 3)[3] for line in out.stdout.splitlines()]
    assert "cancel: SIGTERM to the process group, SIGKILL after 5 s" in messages
    assert messages[-1] == "ended by signal 15 (cancelled)"
