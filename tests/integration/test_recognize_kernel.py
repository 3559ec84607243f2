"""Turn recognition that asks the kernel (issue 18), through the real daemon.

Everyday prompts that look like no known shape — `input()` with an odd prompt, a question
without a colon, an editor opened by `git commit` — are `awaiting_input` within 1 s of
quiet because the foreground reads the terminal; programs that only look like they wait
(silent compute, sleeps and network waits under prompt-like text, progress dots) are never
reported waiting; a stopped foreground is neither. Each state is awaited with the `wait`
action from a catalog cursor taken before the program started, and confirmed by `explain`,
whose typed result carries the kernel's evidence.
"""

from __future__ import annotations

import re
import shutil
import socket
import sys
import time

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    cli_bytes,
    cli_env,
    session,
    workspace,
)

PY = sys.executable
ENV = {"PS1": "$ ", "HISTFILE": "/dev/null", "PYTHONUNBUFFERED": "1"}
#: The issue's bound: a waiting program is recognized within this long of going quiet.
QUIET_BOUND = 1.0
#: Longer than recognize_kernel_interval_max_seconds (1 s) twice over: every program has
#: been looked at again at its slowest pace during the window.
NEVER_WINDOW = 2.5


def explain(s: Session, eid: str) -> dict:
    return s.execution({"type": "explain", "execution_id": eid})["data"]


def reached(s: Session, eids: list[str], cursor: str, states: list[str], timeout: float) -> list[str]:
    """The executions among `eids` that reported one of `states` after `cursor` within `timeout`."""
    data = s.execution({"type": "wait", "execution_ids": eids, "after": cursor,
                        "events": states, "timeout_seconds": timeout})["data"]
    if data["outcome"] != "changed":
        return []
    return sorted({c["execution_id"] for c in data["changes"]})


def started(s: Session, shows: str, **run) -> tuple[str, str]:
    """Run a program and return (its id, a catalog cursor from before it ran) once its
    output shows `shows`."""
    cursor = s.list()["catalog_cursor"]
    eid = s.run(env=ENV, **run)["execution_id"]
    s.read_until(eid, lambda p: shows in p["text"])
    return eid, cursor


def awaiting_within_quiet(s: Session, eid: str, cursor: str, state: str = "awaiting_input") -> None:
    t0 = time.monotonic()
    got = reached(s, [eid], cursor, [state], QUIET_BOUND)
    assert got == [eid], (time.monotonic() - t0, explain(s, eid))


@pytest.mark.parametrize("prompt", ["~~ ", "Which branch shall I deploy", "Deploy to production now? "],
                         ids=["odd_prompt", "no_colon", "question"])
def test_input_prompt_is_awaiting_input(session, prompt):
    s = session
    eid, cursor = started(s, prompt.strip(), argv=[PY, "-c", f"input({prompt!r})"])
    awaiting_within_quiet(s, eid, cursor)
    e = explain(s, eid)
    assert (e["state"], e["source"], e["screen_state"], e["kernel"]["verdict"]) == \
        ("awaiting_input", "kernel", "unknown", "awaiting_input"), e
    (proc,) = e["kernel"]["processes"]
    assert (proc["activity"], proc["syscall"], proc["fd"], proc["state"]) == \
        ("reading_terminal", "read", 0, "S"), proc
    assert re.fullmatch(rf"foreground {proc['pid']} python[\d.]*: blocked in read\(0\) on the "
                        rf"terminal( for \d+\.\d s)?; (CPU idle|CPU: first look)", e["kernel"]["text"]), e["kernel"]
    assert e["reason"] == f"kernel: {e['kernel']['text']}"


def test_a_yes_no_question_keeps_its_shape(session):
    # The kernel says the program reads the terminal; the screen says what kind of answer.
    s = session
    eid, cursor = started(s, "[y/N]", argv=[PY, "-c", "input('Overwrite notes.txt? [y/N] ')"])
    awaiting_within_quiet(s, eid, cursor, "awaiting_approval")
    e = explain(s, eid)
    assert (e["state"], e["source"], e["rule"], e["kernel"]["verdict"]) == \
        ("awaiting_approval", "rule", "yes_no", "awaiting_input"), e
    assert "; the kernel agrees: foreground " in e["reason"], e


def test_explain_cli_shows_the_evidence(session, cli_env):
    s = session
    eid, cursor = started(s, "~~", argv=[PY, "-c", "input('~~ ')"])
    awaiting_within_quiet(s, eid, cursor)
    out = cli_bytes(cli_env, "explain", eid)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "source      kernel, live screen (the screen alone said unknown)\n" in text, text
    assert re.search(r"^kernel      awaiting_input: foreground \d+ python[\d.]*: blocked in read\(0\) on the terminal",
                     text, re.M), text


EDITORS = [e for e in ("vim", "nvim", "nano") if shutil.which(e)]


@pytest.mark.parametrize("editor", EDITORS)
def test_editor_from_git_commit(session, workspace, editor):
    s = session
    commit = ("git init -q . && git -c user.name=T -c user.email=t@example.com "
              "commit -q --allow-empty")
    argv_editor = {"vim": "vim -N -u NONE -n", "nvim": "nvim --clean -n", "nano": "nano --ignorercfiles"}[editor]
    shows = {"vim": "~", "nvim": "~", "nano": "^X"}[editor]
    cursor = s.list()["catalog_cursor"]
    eid = s.run(command=commit, env={**ENV, "GIT_EDITOR": argv_editor, "TERM": "xterm"})["execution_id"]
    s.read_until(eid, lambda p: shows in p["text"], timeout=20)
    assert reached(s, [eid], cursor, ["awaiting_input"], 10.0) == [eid], explain(s, eid)
    e = explain(s, eid)
    assert (e["recognizer"], e["state"]) == ("editor", "awaiting_input"), e
    assert f"{editor!r}, on the terminal, matches manifest 'editor'" in e["selected_by"], e
    comms = [p["comm"] for p in e["kernel"]["processes"]]
    assert "git" in comms and editor in comms, e["kernel"]


def test_silent_cpu_loop_is_busy(session):
    s = session
    eid, cursor = started(s, "Password:", argv=[PY, "-c", "print('Password: ', end='')\nwhile True: pass"])
    assert reached(s, [eid], cursor, ["awaiting_input", "awaiting_approval"], NEVER_WINDOW) == []
    e = explain(s, eid)
    assert (e["state"], e["source"], e["kernel"]["verdict"]) == ("busy", "kernel", "busy"), e
    assert e["screen_state"] == "awaiting_input" and e["rule"] == "password", e


def test_a_silent_program_is_looked_at(session):
    # No output at all: no screen change to evaluate, the kernel is the only witness.
    s = session
    cursor = s.list()["catalog_cursor"]
    eid = s.run(argv=["sleep", "100"], env=ENV)["execution_id"]
    assert reached(s, [eid], cursor, ["busy"], 5.0) == [eid], explain(s, eid)
    e = explain(s, eid)
    assert (e["state"], e["source"]) == ("busy", "kernel"), e
    (proc,) = e["kernel"]["processes"]
    assert (proc["comm"], proc["activity"]) == ("sleep", "sleeping"), proc


def test_progress_dots_are_busy(session):
    s = session
    dots = "import time\nprint('Running tests ', end='')\nwhile True:\n print('.', end='')\n time.sleep(0.2)"
    eid, cursor = started(s, "Running tests ..", argv=[PY, "-c", dots])
    assert reached(s, [eid], cursor, ["awaiting_input", "awaiting_approval"], NEVER_WINDOW) == []
    e = explain(s, eid)
    assert (e["recognizer"], e["state"], e["rule"]) == ("progress", "busy", "dots"), e
    assert e["kernel"]["verdict"] == "busy", e


def test_stopped_foreground_is_neither(session, cli_env):
    # Ctrl-Z with no shell does nothing (the session leader's group is orphaned: the kernel
    # discards SIGTSTP); SIGSTOP stops it where it stands, holding the terminal.
    s = session
    eid, cursor = started(s, "Name:", argv=[PY, "-c", "input('Name: ')"])
    awaiting_within_quiet(s, eid, cursor)
    cursor = s.list()["catalog_cursor"]
    r = cli_bytes(cli_env, "kill", eid, "-s", "STOP")
    assert r.returncode == 0, r.stderr
    # No screen change: the next periodic look (at most recognize_kernel_interval_max_seconds
    # away) sees it.
    assert reached(s, [eid], cursor, ["unknown"], QUIET_BOUND + 0.5) == [eid], explain(s, eid)
    e = explain(s, eid)
    assert (e["state"], e["source"], e["kernel"]["verdict"]) == ("unknown", "kernel", "stopped"), e
    assert e["reason"].startswith("kernel: the foreground is stopped, neither waiting nor working: "), e
    assert e["kernel"]["processes"][0]["state"] == "T"
    cursor = s.list()["catalog_cursor"]
    assert cli_bytes(cli_env, "kill", eid, "-s", "CONT").returncode == 0
    assert reached(s, [eid], cursor, ["awaiting_input"], 5.0) == [eid], explain(s, eid)


def test_stopped_job_gives_the_shell_back(session):
    s = session
    eid, cursor = started(s, "$", argv=["bash", "--norc", "--noprofile", "-i"])
    assert reached(s, [eid], cursor, ["awaiting_input"], 5.0) == [eid]
    s.call("input", execution_id=eid, text="sleep 100\r")
    s.read_until(eid, lambda p: "sleep 100" in p["text"])
    cursor = s.list()["catalog_cursor"]
    s.call("input", execution_id=eid, text="\x1a")
    s.read_until(eid, lambda p: "Stopped" in p["text"])
    awaiting_within_quiet(s, eid, cursor)
    e = explain(s, eid)
    assert (e["recognizer"], e["state"], e["rule"], e["source"]) == ("shell", "awaiting_input", "prompt", "rule"), e


@pytest.fixture
def silent_server():
    """A TCP listener that accepts and never answers: a network wait that never ends."""
    srv = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield srv.getsockname()[1]
    srv.close()


def test_network_wait_under_a_password_prompt_is_busy(session, silent_server):
    s = session
    code = (f"import socket\nc = socket.create_connection(('127.0.0.1', {silent_server}))\n"
            "print('Password: ', end='')\nc.recv(1)")
    eid, cursor = started(s, "Password:", argv=[PY, "-c", code])
    assert reached(s, [eid], cursor, ["awaiting_input", "awaiting_approval"], NEVER_WINDOW) == []
    e = explain(s, eid)
    assert (e["state"], e["source"], e["screen_state"]) == ("busy", "kernel", "awaiting_input"), e
    (proc,) = e["kernel"]["processes"]
    assert (proc["activity"], proc["syscall"]) == ("network", "recvfrom"), proc


def _busy_looking(port: int) -> list[dict]:
    """20 programs that print prompt-like text and then work, sleep or wait on something
    that is not the terminal."""
    connect = f"import socket, select\nc = socket.create_connection(('127.0.0.1', {port}))\n"

    def py(prompt: str, body: str) -> dict:
        return {"argv": [PY, "-c", f"print({prompt!r}, end='')\n{body}"]}

    def sh(text: str) -> dict:
        return {"command": text}

    return [
        py("Password: ", "while True: pass"),
        py("$ ", "x = 0\nwhile True: x += 1"),
        sh("printf 'Continue? [y/N] '; sleep 100"),
        sh("printf '>>> '; sleep 100"),
        sh("printf 'Enter your name: '; sleep 100; true"),
        py("Overwrite? (y/n) ", "import time; time.sleep(100)"),
        py("Password: ", connect + "c.recv(1)"),
        py("> ", connect + "c.recv(1)"),
        py("Press Enter to continue", connect + "c.makefile().readline()"),
        sh("printf 'Proceed? '; sleep 100 | cat"),
        sh("printf '$ '; (sleep 100); true"),
        py("Password: ", connect + "select.select([c], [], [], 100)"),
        py("Token: ", connect + "p = select.poll(); p.register(c, select.POLLIN); p.poll()"),
        py("sqlite> ", connect + "e = select.epoll(); e.register(c, select.EPOLLIN); e.poll()"),
        py("Answer: ", "import threading; threading.Event().wait()"),
        sh("sleep 100 | " + PY + " -c \"print('Password: ', end='', flush=True); import sys; sys.stdin.read()\""),
        sh("printf 'mysql> '; tail -f /dev/null"),
        py("> ", "import time\nwhile True: time.sleep(0.05)"),
        py("Testing ", "import time\nwhile True:\n print('.', end='')\n time.sleep(0.3)"),
        py("Continue [Y/n]? ", "import subprocess; subprocess.run(['sleep', '100'])"),
    ]


def test_false_idle_rate_is_zero(session, silent_server):
    s = session
    programs = _busy_looking(silent_server)
    assert len(programs) == 20
    cursor = s.list()["catalog_cursor"]
    eids = [e["execution_id"] for e in s.run_many([{**p, "env": ENV} for p in programs])]
    idle = reached(s, eids, cursor, ["awaiting_input", "awaiting_approval"], NEVER_WINDOW)
    assert idle == [], [(programs[eids.index(i)], explain(s, i)) for i in idle]
    states = {}
    for eid, program in zip(eids, programs):
        e = explain(s, eid)
        states[str(program)] = (e["state"], e["kernel"]["verdict"] if e["kernel"] else None)
    assert all(v == ("busy", "busy") for v in states.values()), states


@pytest.mark.parametrize("mode", ["guardian", "off"])
def test_who_reads_the_kernel(home, workspace, mode):
    # `guardian`: the daemon reads no /proc/PID/syscall itself and asks the child's guardian,
    # as it must where Yama (ptrace_scope=1) refuses it; `off`: the screen alone.
    home.write_config(f'recognize_kernel = "{mode}"\n')
    home.start_daemon()
    s = Session(home, workspace)
    try:
        eid, cursor = started(s, "~~", argv=[PY, "-c", "input('~~ ')"])
        if mode == "off":
            assert reached(s, [eid], cursor, ["awaiting_input"], 2.0) == []
            e = explain(s, eid)
            assert (e["state"], e["source"], e["kernel"]) == ("unknown", "fallback", None), e
            return
        awaiting_within_quiet(s, eid, cursor)
        e = explain(s, eid)
        assert (e["state"], e["source"], e["kernel"]["syscalls_read_by"]) == \
            ("awaiting_input", "kernel", "guardian"), e
        assert e["kernel"]["processes"][0]["activity"] == "reading_terminal", e
    finally:
        s.close()
