"""`BashCommand`: the thread's persistent shell, through a real daemon, guardian and bash.

Completion and exit codes come from the nonce-carrying prompt marker only: output that
prints a marker without the nonce does not complete a command. Ctrl-c interrupts and leaves
the shell usable; `cd` persists; a second command while one runs is refused (`busy`); input
quoting an old generation is refused (`stale_generation`); long and multi-line commands run
whole; `exit N` ends the shell with N and the next command gets a new shell.

Every wait is the daemon's long-poll (`wait_for_seconds`), which returns as soon as the
command completes; the deadlines only bound failures.
"""

import os

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import remote_error
from tests.support.screens import (  # noqa: F401  (fixtures)
    Screens,
    Shell,
    session,
    shared_home,
    workspace,
)

#: A marker with the right shape (ESC ] 7770 ; NONCE ; D ; STATUS ; PWD BEL) and a wrong
#: nonce: 32 hex digits like the real one (secrets.token_hex(16)), so only the value differs.
FORGED = r"printf '\033]7770;%s;D;0;/\007' 0123456789abcdef0123456789abcdef"


#: The allowance fields a rejected call with the helpers' 10 s wait reports.
WAITED_10S = {"requested_wait_ms": 10000, "effective_wait_policy": "synchronous",
              "effective_wait_ms": 10000, "effective_wait_mode": "synchronous"}


@pytest.fixture
def shell(session):
    return Shell(session)


def test_true_and_false_report_their_exit_codes(shell, workspace):
    first = shell.command("true")
    assert (first["status"], first["exit_code"], first["output"]) == ("completed", 0, "")
    assert first["cwd"] == os.path.realpath(workspace) or first["cwd"] == str(workspace)
    second = shell.command("false")
    assert (second["status"], second["exit_code"]) == ("completed", 1)
    assert second["generation"] == first["generation"] + 1
    assert second["shell_execution_id"] == first["shell_execution_id"]
    assert second["execution_id"] != first["execution_id"]
    echo = shell.command("echo hello; (exit 42)")
    assert (echo["status"], echo["exit_code"], echo["output"]) == ("completed", 42, "hello\r\n")


def test_a_forged_marker_does_not_complete_a_command(shell):
    """The command prints a fake end marker, then waits for a line: it is still running
    (its output so far includes the fake marker as plain bytes) until it gets the line."""
    r = shell.command(f"{FORGED}; echo forged; read -r line; echo got $line", wait=0)
    assert r["status"] == "running"
    r = shell.wait_output("forged\r\n")
    assert r["status"] == "running", f"the forged marker completed the command: {r!r}"
    assert r["exit_code"] is None
    assert "forged\r\n" in r["output"]
    done = shell.text("hello\r", generation=r["generation"])
    assert (done["status"], done["exit_code"]) == ("completed", 0)
    assert done["output"].endswith("forged\r\nhello\r\ngot hello\r\n")
    # The fake marker is an OSC string: a terminal shows nothing for it, so the row it was
    # printed on shows only "forged" (the echoed command line above it does show its text).
    Screens(shell.s).wait(done["shell_execution_id"],
                          until=lambda text: text.endswith("\nforged\nhello\ngot hello\n$"))


def test_ctrl_c_interrupts_sleep_and_the_shell_stays_usable(shell):
    r = shell.command("echo started; sleep 100", wait=0)
    assert r["status"] == "running"
    r = shell.wait_output("started\r\n")
    assert r["status"] == "running"
    stopped = shell.specials("Ctrl-c", generation=r["generation"])
    assert (stopped["status"], stopped["exit_code"]) == ("completed", 130)
    after = shell.command("echo alive")
    assert (after["status"], after["exit_code"], after["output"]) == ("completed", 0, "alive\r\n")
    assert after["shell_execution_id"] == r["shell_execution_id"]


def test_cd_persists_across_commands(shell, workspace):
    r = shell.command("mkdir -p sub/deeper && cd sub/deeper")
    assert (r["status"], r["exit_code"]) == ("completed", 0)
    want = os.path.join(os.path.realpath(workspace), "sub", "deeper")
    assert r["cwd"] == want
    pwd = shell.command("pwd")
    assert (pwd["output"], pwd["cwd"]) == (want + "\r\n", want)
    up = shell.command("cd .. && pwd")
    assert (up["output"], up["cwd"]) == (os.path.dirname(want) + "\r\n", os.path.dirname(want))
    # The command's execution record carries the cwd it ended in (once committed: see
    # test_a_completed_command_is_already_recorded_as_exited for when that happens).
    rec = wait_for(lambda: (r := shell.s.get(up["execution_id"]))["status"] != "running" and r,
                   what="the command's record to be terminal")
    assert (rec["kind"], rec["status"], rec["exit_code"], rec["cwd"]) == \
        ("shell_command", "exited", 0, os.path.dirname(want))


def test_a_second_command_while_one_runs_is_refused_busy(shell):
    r = shell.command("echo ready; read -r line; echo got $line", wait=0)
    assert r["status"] == "running"
    err = remote_error(shell.command, "echo interleaved")
    assert err.code.value == "busy"
    assert str(r["generation"]) in err.message and "status_check" in err.message
    # A structured runtime rejection still reports the allowance it was given (seeds/000,
    # "Usage metrics": the helper's explicit 10 s wait, no explicit policy).
    assert err.data == {"generation": r["generation"], "execution_id": r["execution_id"],
                        **WAITED_10S}
    # The running command is untouched: it still gets its line and completes. (Input is
    # typed once it runs: see test_input_right_after_a_command_reaches_it.)
    shell.wait_output("ready\r\n")
    done = shell.text("one\r", generation=r["generation"])
    assert (done["status"], done["exit_code"], done["execution_id"]) == \
        ("completed", 0, r["execution_id"])
    assert done["output"].endswith("got one\r\n")
    assert "interleaved" not in done["output"]


def test_input_for_a_stale_generation_is_refused(shell):
    old = shell.command("true")
    new = shell.command("echo ready; read -r line; echo got $line", wait=0)
    assert new["generation"] == old["generation"] + 1
    shell.wait_output("ready\r\n")
    err = remote_error(shell.text, "wrong\r", generation=old["generation"])
    assert err.code.value == "stale_generation"
    assert err.data == {"generation": new["generation"], **WAITED_10S}
    err = remote_error(shell.specials, "Ctrl-c", generation=old["generation"])
    assert err.code.value == "stale_generation"
    done = shell.text("right\r", generation=new["generation"])
    assert (done["status"], done["exit_code"]) == ("completed", 0)
    assert done["output"].endswith("got right\r\n")


def test_multi_line_and_10kb_commands_run_whole(shell):
    multi = shell.command("echo one\nfor i in 1 2; do\n  echo loop $i\ndone")
    assert (multi["status"], multi["exit_code"]) == ("completed", 0)
    assert multi["output"] == "one\r\nloop 1\r\nloop 2\r\n"
    # 10 KB on one line: over the kernel's 4,095-byte canonical line limit.
    word = "x" * 10_000
    long = shell.command(f"v={word}; echo ${{#v}} ${{v:9995}}")
    assert (long["status"], long["exit_code"], long["output"]) == \
        ("completed", 0, "10000 xxxxx\r\n")
    assert shell.s.get(long["execution_id"])["command"].endswith(word + "; echo ${#v} ${v:9995}")


def test_exit_ends_the_shell_with_its_code_and_the_next_command_gets_a_new_shell(shell):
    first = shell.command("echo $$")
    old_pid = first["output"].strip()
    ended = shell.command("exit 3")
    assert (ended["status"], ended["exit_code"]) == ("completed", 3)
    shell_rec = shell.s.wait_exit(first["shell_execution_id"])
    assert (shell_rec["status"], shell_rec["exit_code"]) == ("exited", 3)
    again = shell.command("echo $$")
    assert (again["status"], again["exit_code"]) == ("completed", 0)
    assert again["shell_execution_id"] != first["shell_execution_id"]
    assert again["output"].strip() != old_pid
    assert shell.s.get(ended["execution_id"])["exit_code"] == 3


def test_multi_line_and_long_commands_report_their_own_exit_code(shell):
    multi = shell.command("echo one\necho two\n(exit 7)")
    assert multi["output"] == "one\r\ntwo\r\n"
    long = shell.command("v=" + "x" * 5000 + "; false")
    assert ((multi["status"], multi["exit_code"]), (long["status"], long["exit_code"])) == \
        (("completed", 7), ("completed", 1))


def test_a_completed_command_is_already_recorded_as_exited(shell):
    """Read-your-writes: once BashCommand said `completed 0`, the command's execution record
    says so too. Several rounds, since the window is a few milliseconds."""
    for i in range(20):
        r = shell.command(f"echo {i}")
        assert (r["status"], r["exit_code"]) == ("completed", 0)
        rec = shell.s.get(r["execution_id"])
        assert (rec["status"], rec["exit_code"]) == ("exited", 0), f"round {i}: {rec['status']}"


def test_generations_keep_increasing_when_the_shell_is_replaced(shell):
    shell.command("true")
    old = shell.command("true")  # the caller keeps this generation
    ended = shell.command("exit 3")
    assert ended["generation"] == old["generation"] + 1
    shell.command("true")
    waiting = shell.command("echo ready; read -r line; echo got $line", wait=0)
    try:
        assert waiting["generation"] > ended["generation"]
        err = remote_error(shell.text, "for the old command\r", generation=old["generation"])
        assert err.code.value == "stale_generation"
    finally:
        shell.specials("Ctrl-c")


def test_input_right_after_a_command_reaches_it(shell):
    """An agent's natural sequence: start a command that reads a line, answer it at once.
    Repeated, since the window is the few ms before bash starts the command; stops at the
    first hang (a 2 s bound, against the microseconds an answer takes)."""
    for i in range(40):
        r = shell.command("read -r line; echo got $line", wait=0)
        done = shell.text(f"answer {i}\r", generation=r["generation"], wait=2.0)
        if done["status"] != "completed":
            shell.specials("Ctrl-c")
        assert (done["status"], done["exit_code"]) == ("completed", 0), f"round {i} hung"
        assert done["output"].endswith(f"got answer {i}\r\n")
