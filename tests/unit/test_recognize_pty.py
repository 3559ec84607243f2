"""Real programs on a real PTY, rendered by pyte, recognized by the built-in manifests.

Each test waits for a condition on the screen with a deadline (never a fixed sleep): the
PTY is read as output arrives and the condition re-checked after every read.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import sys
import termios
import time

import shutil

import pyte
import pytest

from tests.support.pty_child import end_pty_child, spawn_on_pty
from vigil.daemon.recognize import RecognitionInput, Registry, load_builtins

ROWS, COLS = 24, 80
DEADLINE = 10.0  # seconds; each step takes milliseconds, the margin is for loaded CI machines


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    return Registry(tmp_path_factory.mktemp("no-user-manifests"), builtins=load_builtins())


class PtyProgram:
    """A child on a new PTY (its controlling terminal) with a pyte screen fed from the master."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        def before_exec() -> None:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
            os.chdir(cwd)
        self.pid, self.fd = spawn_on_pty(argv, env, before_exec)

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def observe(self, registry, recognizer: str):
        return registry.detect(recognizer, self.input())

    def input(self) -> RecognitionInput:
        return RecognitionInput(lines=list(self.screen.display), title=self.screen.title,
                                cursor=(self.screen.cursor.y, self.screen.cursor.x),
                                foreground=self.foreground())

    def foreground(self) -> str | None:
        try:
            pgrp = os.tcgetpgrp(self.fd)
            with open(f"/proc/{pgrp}/comm") as f:
                return f.read().strip()
        except OSError:
            return None

    def wait_for(self, predicate, what: str) -> None:
        """Read output until `predicate()` holds; fail with the screen after DEADLINE."""
        end = time.monotonic() + DEADLINE
        while not predicate():
            left = end - time.monotonic()
            if left <= 0:
                pytest.fail(f"timed out waiting for {what}; screen:\n" + "\n".join(self.screen.display).rstrip())
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.05))
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:  # EIO: the child is gone
                    data = b""
                if data:
                    self.stream.feed(data)
            # A 50 ms cap on select lets predicates that look at /proc (the foreground
            # process) be re-checked; screen predicates are re-checked after every read.

    def close(self) -> None:
        end_pty_child(self.pid, self.fd)


@pytest.fixture
def spawn(tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "TERM": "xterm",
           "LANG": "C.UTF-8", "PS1": "alice@host:~$ ", "LESS": "", "LESSHISTFILE": "-"}
    progs = []

    def start(*argv: str) -> PtyProgram:
        p = PtyProgram(list(argv), str(tmp_path), env)
        progs.append(p)
        return p

    yield start
    for p in progs:
        p.close()


def state_is(prog, registry, recognizer, state):
    return lambda: prog.observe(registry, recognizer).state == state


def test_bash_prompt_then_sleep(spawn, registry):
    bash = spawn("bash", "--norc", "--noprofile", "-i")
    bash.wait_for(state_is(bash, registry, "shell", "awaiting_input"), "the bash prompt")
    det = bash.observe(registry, "auto")
    assert (det.recognizer, det.state, det.rule, det.selected_by) == (
        "shell", "awaiting_input", "prompt", "auto: foreground 'bash' matches manifest 'shell'")
    assert bash.observe(registry, "generic").rule == "shell_prompt"

    bash.send(b"sleep 100\r")
    bash.wait_for(lambda: bash.foreground() == "sleep" and "sleep 100" in bash.screen.display[bash.screen.cursor.y - 1],
                  "sleep in the foreground")
    det = bash.observe(registry, "shell")
    assert (det.state, det.rule) == ("busy", "running")
    det = bash.observe(registry, "auto")  # sleep is in the foreground: generic, which does not guess
    assert (det.recognizer, det.state, det.source, det.selected_by) == (
        "generic", "unknown", "fallback", "auto: no manifest matches foreground 'sleep'; fallback 'generic'")


def test_python_repl(spawn, registry):
    py = spawn(sys.executable, "-i", "-q")
    py.wait_for(state_is(py, registry, "generic", "awaiting_input"), "the >>> prompt")
    assert py.observe(registry, "generic").rule == "python_repl"
    py.send(b"for i in range(2):\r")
    py.wait_for(lambda: py.input().lines[py.screen.cursor.y].startswith("... "), "the ... prompt")
    det = py.observe(registry, "generic")
    assert (det.state, det.rule) == ("awaiting_input", "python_repl")


def test_rm_interactive_confirmation(spawn, registry, tmp_path):
    (tmp_path / "somefile").write_text("x")
    rm = spawn("rm", "-i", "somefile")
    rm.wait_for(state_is(rm, registry, "generic", "awaiting_approval"), "rm's question")
    det = rm.observe(registry, "auto")
    assert (det.recognizer, det.state, det.rule) == ("generic", "awaiting_approval", "file_confirm")
    assert rm.screen.display[0].rstrip() == "rm: remove regular file 'somefile'?"


def test_password_prompt(spawn, registry):
    p = spawn("bash", "-c", 'read -s -p "Password: " x')
    p.wait_for(state_is(p, registry, "generic", "awaiting_input"), "the password prompt")
    assert p.observe(registry, "generic").rule == "password"


def test_less_end_and_colon_prompts(spawn, registry, tmp_path):
    (tmp_path / "short").write_text("one\ntwo\n")
    (tmp_path / "long").write_text("".join(f"line {i}\n" for i in range(200)))
    short = spawn("less", "short")
    short.wait_for(state_is(short, registry, "generic", "awaiting_input"), "less's (END)")
    assert short.observe(registry, "generic").rule == "pager_end"

    long = spawn("less", "long")
    long.wait_for(lambda: "line 0" in long.screen.display[0], "less's first page")
    long.send(b" ")
    long.wait_for(state_is(long, registry, "generic", "awaiting_input"), "less's : prompt")
    det = long.observe(registry, "generic")
    assert (det.rule, long.screen.display[-1].rstrip()) == ("pager_colon", ":")


@pytest.mark.parametrize(("argv", "rule"), [(["sqlite3"], "sqlite_repl"), (["node", "-i"], "node_repl")])
def test_other_repls(spawn, registry, argv, rule):
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    p = spawn(*argv)
    p.wait_for(state_is(p, registry, "generic", "awaiting_input"), f"the {argv[0]} prompt")
    assert p.observe(registry, "generic").rule == rule
