"""Screens, the persistent shell and attach, driven against a real daemon.

- `Screens`: the `screen` method and `Execution read source=screen` for one session. The
  `screen` method has no long-poll (it answers the live keeper's snapshot at once), so
  `wait_screen` re-checks the *exact* expected rows until a deadline: a condition with a
  deadline, never a fixed sleep. On timeout the message shows the last screen seen, which is
  what one needs to diagnose a rendering difference.
- `Shell`: `BashCommand` for one session (the daemon's long-poll `wait_for_seconds` is the
  event every shell test waits on).
- `Terminal`: a real PTY with a process on its slave side as its controlling terminal (what
  a human's terminal emulator is to `vigil attach`): write keystrokes to the master, read
  what the process drew, resize the window (TIOCSWINSZ, which makes the kernel send
  SIGWINCH to the foreground process group).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.support.daemon import VigilHome
from tests.support.executions import EXIT_TIMEOUT, Session
from vigil.protocol.errors import RemoteError

#: Deadline for a screen to show what the child drew. The keeper is normally current within a
#: few ms of quiet (screen_quiet_exact_seconds = 0.2 s worst case); generous for a loaded
#: 2-core machine and still a bounded failure.
SCREEN_TIMEOUT = 15.0


# --- fixtures: one daemon per module, one workspace (so one thread, one shell) per test ------


@pytest.fixture(scope="module")
def shared_home():
    """A daemon shared by a module's tests (starting one costs ~1 s here). Tests stay
    independent: each has its own workspace, so its own thread and its own shell."""
    h = VigilHome()
    try:
        h.start_daemon()
        yield h
    finally:
        h.cleanup()


@pytest.fixture
def workspace(shared_home, request) -> Path:
    ws = shared_home.root / f"ws-{request.node.name[:60]}"
    ws.mkdir()
    return ws


@pytest.fixture
def session(shared_home, workspace):
    s = Session(shared_home, workspace)
    try:
        yield s
    finally:
        # Guardians outlive daemons: end whatever the test left running (its thread's shell
        # too). The list limit is the setting's maximum: the default (20) would miss the
        # oldest records, the shell among them, after a test that ran many commands.
        for e in s.list(limit=1000)["executions"]:
            if e["status"] == "running":
                try:
                    s.call("signal", execution_id=e["execution_id"], signal="KILL")
                except RemoteError:
                    pass
        s.close()


def rows_text(rows: list[str]) -> str:
    """The `text` a screen with these rows reports: rows joined by newlines, trailing empty
    rows dropped (each row's trailing blanks are already trimmed by the daemon)."""
    return "\n".join(r.rstrip(" ") for r in rows).rstrip("\n")


class Screens:
    def __init__(self, session: Session):
        self.s = session

    def get(self, execution_id: str, ansi: bool = False, history: int = 0) -> dict:
        return self.s.call("screen", execution_id=execution_id, ansi=ansi, history=history)

    def wait(self, execution_id: str, rows: list[str] | None = None, *, text: str | None = None,
             until=None, timeout: float = SCREEN_TIMEOUT, **fields) -> dict:
        """The first `screen` answer whose text is exactly `rows` (or `text`), for which
        `until(text)` is true if given, and whose other fields equal `fields` (e.g.
        cursor=[r, c], fidelity="exact", live=False)."""
        want = rows_text(rows) if rows is not None else text
        seen: list[dict] = []

        def matches():
            snap = self.get(execution_id)
            seen[:] = [snap]
            if want is not None and snap["text"] != want:
                return None
            if until is not None and not until(snap["text"]):
                return None
            for k, v in fields.items():
                got = snap[k]
                if (list(got) if isinstance(got, (list, tuple)) else got) != v:
                    return None
            return snap

        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            snap = matches()
            if snap is not None:
                return snap
            if time.monotonic() > deadline:
                last = seen[0] if seen else {}
                raise AssertionError(
                    f"screen of {execution_id} did not become {want or until!r} {fields} within "
                    f"{timeout} s; last seen text={last.get('text')!r} "
                    f"{ {k: last.get(k) for k in ('cursor', 'fidelity', 'live', 'alt_screen')} }")
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def read_all(self, execution_id: str, page_bytes: int) -> tuple[str, list[dict]]:
        """Every page of the persisted screen (`Execution read source=screen`)."""
        pages, cursor = [], None
        while True:
            page = self.s.read(execution_id, cursor=cursor, page_bytes=page_bytes,
                               source="screen")
            pages.append(page)
            cursor = page["next_cursor"]
            if not page["has_more"]:
                return "".join(p["text"] for p in pages), pages
            assert len(pages) < 10000, "screen pages never end"


class Shell:
    """`BashCommand` in the session's thread."""

    def __init__(self, session: Session):
        self.s = session

    def call(self, action: dict, wait: float | None = 10.0, generation: int | None = None) -> dict:
        params: dict = {"action": action}
        if wait is not None:
            params["wait_for_seconds"] = wait
        if generation is not None:
            params["generation"] = generation
        return self.s.call("BashCommand", **params)

    def command(self, text: str, wait: float = 10.0) -> dict:
        return self.call({"type": "command", "command": text}, wait)

    def status(self, wait: float = 0.0) -> dict:
        return self.call({"type": "status_check"}, wait)

    def text(self, text: str, wait: float = 10.0, generation: int | None = None) -> dict:
        return self.call({"type": "send_text", "text": text}, wait, generation)

    def specials(self, *keys: str, wait: float = 10.0, generation: int | None = None) -> dict:
        return self.call({"type": "send_specials", "keys": list(keys)}, wait, generation)

    def wait_output(self, needle: str, timeout: float = EXIT_TIMEOUT) -> dict:
        """status_check until the running command's output contains `needle`. Each check
        long-polls the command's completion for a short while, so a command that ends
        instead of printing is seen at once."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.status(wait=0.05)
            if needle in r["output"] or r["status"] != "running":
                return r
            if time.monotonic() > deadline:
                raise AssertionError(f"command output never showed {needle!r}: {r!r}")


# --- a real terminal for `vigil attach` -------------------------------------------------------


def set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _become_controlling_tty() -> None:  # runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """`argv` running on the slave side of a fresh PTY of `rows`×`cols`, as its session's
    controlling terminal; the test holds the master."""

    def __init__(self, argv: list[str], env: dict, rows: int = 24, cols: int = 80):
        self.master, slave = os.openpty()
        set_winsize(self.master, rows, cols)
        try:
            self.proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave,
                                         start_new_session=True,
                                         preexec_fn=_become_controlling_tty)
        finally:
            os.close(slave)
        self.seen = bytearray()
        self.eof = False

    @classmethod
    def vigil(cls, env: dict, *args: str, rows: int = 24, cols: int = 80) -> "Terminal":
        return cls([sys.executable, "-m", "vigil.client.cli", *args], env, rows, cols)

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, rows: int, cols: int) -> None:
        """What a terminal emulator does when its window changes: the kernel then sends
        SIGWINCH to the foreground process group of the PTY."""
        set_winsize(self.master, rows, cols)

    def pump(self, timeout: float) -> bool:
        """Read what is available (waiting up to `timeout`); False at end of stream."""
        if self.eof:
            return False
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every slave fd closed (the process ended)
            data = b""
        if not data:
            self.eof = True
            return False
        self.seen += data
        return True

    def expect(self, needle: bytes, start: int = 0, timeout: float = EXIT_TIMEOUT) -> int:
        """Wait until `needle` appears in what was drawn at or after `start`; returns the
        offset just after it."""
        deadline = time.monotonic() + timeout
        while True:
            i = self.seen.find(needle, start)
            if i >= 0:
                return i + len(needle)
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(left):
                raise AssertionError(f"terminal never showed {needle!r} after offset {start}; "
                                     f"it showed {bytes(self.seen[start:])[-800:]!r}")

    def wait_exit(self, timeout: float = EXIT_TIMEOUT) -> int:
        """Drain the terminal until the process ends; its exit status."""
        deadline = time.monotonic() + timeout
        while self.pump(deadline - time.monotonic()):
            if time.monotonic() > deadline:
                break
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)
