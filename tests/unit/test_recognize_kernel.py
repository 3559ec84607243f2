"""Kernel evidence (daemon/recognize/kernel.py) of real processes on a real PTY.

Each program is the session leader of a new PTY, as under a guardian; the sampler looks
at its terminal's foreground group. A state the kernel reaches without an event (a read
blocking, a process stopping) is awaited with `wait_for`, each check a real look.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys

import pytest

from tests.support.daemon import wait_for
from tests.support.pty_child import end_pty_child, spawn_on_pty
from vigil.daemon.recognize.kernel import KernelSampler, group_verdict, members_on_terminal, tty_rdev


class Program:
    """`argv` as the session leader of a new PTY (the slave is its fds 0-2)."""

    def __init__(self, argv: list[str]):
        self.pid, self.fd = spawn_on_pty(argv)
        self.sampler = KernelSampler(self.pid)

    def output_until(self, text: bytes) -> None:
        seen = b""
        while text not in seen:
            seen += os.read(self.fd, 4096)

    def look_until(self, verdict: str, activity: str | None = None):
        """The first look whose verdict is `verdict` (and whose first process's activity is
        `activity`): a process reaches its wait on its own, with no event to wait on."""
        got = []

        def look():
            got.append(self.sampler.look(detail=True))
            return got[-1].verdict == verdict and (
                activity is None or got[-1].processes[0].activity == activity)
        wait_for(look, what=f"verdict {verdict}")
        return got[-1]

    def close(self) -> None:
        end_pty_child(self.pid, self.fd)


@pytest.fixture
def program():
    started: list[Program] = []

    def start(argv: list[str]) -> Program:
        started.append(Program(argv))
        return started[-1]
    yield start
    for p in started:
        p.close()


PY = sys.executable


def test_input_with_an_odd_prompt_reads_the_terminal(program):
    p = program([PY, "-c", "input('~~> ')"])
    p.output_until(b"~~> ")
    ev = p.look_until("awaiting_input")
    (proc,) = ev.processes
    assert (proc.pid, proc.state, proc.activity, proc.syscall, proc.fd) == \
        (p.pid, "S", "reading_terminal", "read", 0)
    assert ev.foreground_pgid == p.pid and ev.syscalls_read_by == "daemon"
    assert proc.text.startswith(f"{p.pid} python") and "blocked in read(0) on the terminal" in proc.text
    assert ev.text.startswith(f"foreground {p.pid} python")
    again = p.look_until("awaiting_input")
    assert again.text.endswith("; CPU idle"), again.text
    assert again.processes[0].waiting_seconds is not None and again.processes[0].waiting_seconds > 0


def test_a_sleep_is_busy_never_awaiting_input(program):
    p = program([PY, "-c", "print('Continue? [y/N] ', end='', flush=True); import time; time.sleep(100)"])
    p.output_until(b"[y/N]")
    ev = p.look_until("busy", "sleeping")
    assert ev.processes[0].syscall in ("clock_nanosleep", "nanosleep", "select", "pselect6"), ev


def test_a_cpu_loop_is_busy(program):
    p = program([PY, "-c", "print('x', flush=True)\nwhile True: pass"])
    p.output_until(b"x")
    ev = p.look_until("busy")
    assert ev.processes[0].activity == "running" or (ev.processes[0].cpu_delta_seconds or 0) > 0, ev


def test_a_stopped_foreground_is_stopped(program):
    p = program([PY, "-c", "input('? ')"])
    p.output_until(b"? ")
    os.kill(p.pid, signal.SIGSTOP)
    ev = p.look_until("stopped")
    assert (ev.processes[0].state, ev.processes[0].activity) == ("T", "stopped")
    assert ev.text == f"foreground {p.pid} {ev.processes[0].comm}: stopped; CPU idle" or \
        ev.text == f"foreground {p.pid} {ev.processes[0].comm}: stopped; CPU: first look", ev.text


def test_a_child_reading_the_terminal_is_named_for_auto(program):
    # sh waits for its child, which reads the terminal: the group is waiting for input, and
    # the reader's name is what `auto` tries first (git → sh → vim).
    p = program(["sh", "-c", f"{PY} -c \"input('name? ')\"; true"])
    p.output_until(b"name? ")
    ev = p.look_until("awaiting_input")
    assert [x.activity for x in ev.processes] == ["waiting_child", "reading_terminal"], ev
    assert members_on_terminal(ev) == (ev.processes[1].comm,)


@pytest.mark.skipif(shutil.which("vim") is None, reason="vim is not installed")
def test_vim_waits_on_the_terminal(program):
    p = program(["vim", "-u", "NONE", "-N", "-n"])
    p.output_until(b"~")
    got = []

    def settled():
        got.append(p.sampler.look(detail=True))
        return got[-1].verdict in ("awaiting_input", "inconclusive")
    wait_for(settled, what="vim waiting on the terminal")
    # vim waits in pselect6 on the terminal alone, with a timeout (its 'updatetime').
    assert got[-1].processes[0].activity in ("waiting_terminal", "polling_terminal"), got[-1]


def test_an_unreadable_syscall_is_unavailable(tmp_path, program):
    # A fake /proc whose syscall file is missing, as for a hardened kernel: never guessed.
    p = program([PY, "-c", "input('> ')"])
    p.output_until(b"> ")
    p.look_until("awaiting_input")
    fake = tmp_path / "proc"
    (fake / str(p.pid)).mkdir(parents=True)
    for name in ("stat", "wchan"):
        (fake / str(p.pid) / name).write_bytes(open(f"/proc/{p.pid}/{name}", "rb").read())
    (fake / str(p.pid) / "task" / str(p.pid)).mkdir(parents=True)
    (fake / str(p.pid) / "task" / str(p.pid) / "children").write_bytes(b"")
    ev = KernelSampler(p.pid, proc=str(fake)).look(detail=True)
    assert ev.verdict == "unavailable", ev
    (proc,) = ev.processes
    assert proc.activity == "unavailable"
    assert "unavailable (ENOENT: No such file or directory)" in proc.text, proc.text


def test_an_unknown_architecture_is_unavailable(program):
    p = program([PY, "-c", "input('> ')"])
    p.output_until(b"> ")
    p.look_until("awaiting_input")
    ev = KernelSampler(p.pid, machine="pdp11").look()
    assert (ev.verdict, ev.processes[0].activity) == ("unavailable", "unavailable"), ev


def test_a_gone_leader_is_unavailable():
    ev = KernelSampler(2 ** 22 + 1).look()
    assert ev.verdict == "unavailable" and ev.processes == []
    assert ev.text.startswith(f"unavailable: the session leader {2 ** 22 + 1} cannot be read (ENOENT"), ev.text


def test_tty_rdev_is_the_slaves_device(program):
    p = program([PY, "-c", "import os; print(os.ttyname(0), flush=True); input()"])
    seen = b""
    while b"\n" not in seen:
        seen += os.read(p.fd, 4096)
    name = seen.split(b"\r\n")[0].decode()
    from vigil.daemon.guardian.identity import parse_stat
    fields = parse_stat(open(f"/proc/{p.pid}/stat", "rb").read())[1]
    assert tty_rdev(int(fields[4])) == os.stat(name).st_rdev


@pytest.mark.parametrize("activities, cpu, verdict", [
    (["reading_terminal"], False, "awaiting_input"),
    (["reading_terminal"], True, "busy"),
    (["waiting_child", "reading_terminal"], False, "awaiting_input"),
    (["waiting_child", "running"], False, "busy"),
    (["reading_terminal", "sleeping"], False, "busy"),
    (["reading_terminal", "network"], False, "busy"),
    (["stopped"], False, "stopped"),
    (["stopped", "sleeping"], False, "stopped"),
    (["polling_terminal"], False, "inconclusive"),
    (["waiting_terminal_and_more"], False, "inconclusive"),
    (["reading_terminal", "unavailable"], False, "unavailable"),
    (["sleeping", "unavailable"], False, "busy"),
    (["waiting_child"], False, "busy"),
    (["exited"], False, "unavailable"),
])
def test_group_verdict(activities, cpu, verdict):
    assert group_verdict(activities, cpu) == verdict


@pytest.fixture
def listener():
    import socket
    srv = socket.create_server(("127.0.0.1", 0))
    yield srv.getsockname()[1]
    srv.close()


@pytest.mark.parametrize("wait, verdict, activity", [
    ("select.select([c], [], [], 100)", "busy", "waiting_events"),
    ("select.select([c], [], [])", "busy", "waiting_events"),
    ("select.select([c, 0], [], [])", "inconclusive", "waiting_terminal_and_more"),
    ("select.select([0], [], [])", "awaiting_input", "waiting_terminal"),
    ("select.select([0], [], [], 100)", "inconclusive", "polling_terminal"),
    ("p = select.poll(); p.register(c, select.POLLIN); p.poll()", "busy", "waiting_events"),
    ("p = select.poll(); p.register(0, select.POLLIN); p.poll()", "awaiting_input", "waiting_terminal"),
    ("p = select.poll(); p.register(0, select.POLLIN); p.register(c, select.POLLIN); p.poll(100000)",
     "inconclusive", "waiting_terminal_and_more"),
    ("e = select.epoll(); e.register(c, select.EPOLLIN); e.poll()", "busy", "waiting_events"),
    ("e = select.epoll(); e.register(0, select.EPOLLIN); e.poll()", "awaiting_input", "waiting_terminal"),
], ids=["select_socket_timed", "select_socket", "select_both", "select_terminal", "select_terminal_timed",
        "poll_socket", "poll_terminal", "poll_both", "epoll_socket", "epoll_terminal"])
def test_event_waits_are_told_apart_by_their_sets(program, listener, wait, verdict, activity):
    # The terminal is fds 0-2 of every one of them: only the set waited on tells.
    code = f"import select, socket\nc = socket.create_connection(('127.0.0.1', {listener}))\nprint('ready', flush=True)\n{wait}"
    p = program([PY, "-c", code])
    p.output_until(b"ready")
    ev = p.look_until(verdict, activity)
    assert ev.processes[0].syscall is not None
