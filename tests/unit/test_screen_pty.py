"""Real programs on real PTYs: vim, less and a curses script draw with cursor addressing; the
keeper must show exactly what a terminal shows, whatever the read boundaries were.

The waits are conditions on the screen with deadlines (the program's output is the event),
never sleeps; terminal queries the program sends are answered by the keeper under test, as
the daemon does when no human is attached.

The captured bytes are then fed again whole, byte by byte and in odd-sized pieces: the
screen must come out identical each time (split escapes and UTF-8 characters survive).
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

import pytest

from vigil.daemon.screen import ScreenKeeper

ENV = {"TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}


class PtyRun:
    """A child on a PTY of `rows`×`cols`; all bytes it wrote are in `captured`."""

    def __init__(self, argv: list[str], *, cwd: str, rows: int, cols: int, env: dict | None = None):
        self.rows, self.cols = rows, cols
        self.keeper = ScreenKeeper(rows, cols)
        self.captured = bytearray()
        self.eof = False
        env = {**ENV, "HOME": cwd, **(env or {})}
        pid, fd = pty.fork()
        if pid == 0:  # child
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    def _read_once(self, timeout: float) -> None:
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the slave side is closed, the program is gone
            data = b""
        if not data:
            self.eof = True
            return
        self.captured += data
        self.keeper.feed(data)
        while self.keeper.process(10.0, backlog_seconds=1e9):
            pass
        replies = self.keeper.take_replies()
        if replies:
            os.write(self.fd, replies)

    def wait_for(self, predicate, timeout: float = 15.0, what: str = "screen"):
        """Read until predicate(snapshot) holds; returns the offset into `captured`."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.keeper.snapshot()
            if predicate(snap):
                return len(self.captured)
            left = deadline - time.monotonic()
            if left <= 0 or self.eof:
                raise AssertionError(f"{what} not reached; screen is:\n" + "\n".join(snap.lines))
            self._read_once(left)

    def send(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def finish(self, timeout: float = 15.0) -> int:
        """Read to EOF and reap the child; returns its wait status."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(self.pid, 9)
                break
            self._read_once(left)
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        os.close(self.fd)
        return status

    def close(self) -> None:
        """Kill and reap the child if a test failed before `finish`."""
        if self.pid is not None:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
            self.pid = None
            os.close(self.fd)


ROWS, COLS = 10, 40
FILE = "alpha\nbeta 中文 wide\ngamma 😀 smile\ndelta\n"


def replay(data: bytes, sizes, rows=ROWS, cols=COLS) -> ScreenKeeper:
    k = ScreenKeeper(rows, cols)
    pos, i = 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        k.feed(data[pos:pos + n])
        while k.process(10.0, backlog_seconds=1e9):
            pass
        pos += n
        i += 1
    return k


def assert_replays(data: bytes, expected, rows=ROWS, cols=COLS):
    for sizes in ([len(data)], [1], [3, 7, 1, 64, 2]):
        snap = replay(data, sizes, rows, cols).snapshot()
        assert snap.lines == expected, sizes
        assert snap.fidelity == "exact"


@pytest.fixture
def spawn():
    runs: list[PtyRun] = []

    def start(*args, **kwargs) -> PtyRun:
        runs.append(PtyRun(*args, **kwargs))
        return runs[-1]

    yield start
    for run in runs:
        run.close()


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "f.txt").write_text(FILE, encoding="utf-8")
    return tmp_path


@pytest.mark.skipif(not os.path.exists("/usr/bin/vim"), reason="needs /usr/bin/vim")
def test_vim_screen_exact(workdir, spawn):
    size = len(FILE.encode())
    expected = ["alpha", "beta 中文 wide", "gamma 😀 smile", "delta"] + ["~"] * 5 + [f'"f.txt" 4L, {size}B']
    run = spawn(["/usr/bin/vim", "-u", "NONE", "-N", "f.txt"], cwd=str(workdir), rows=ROWS, cols=COLS)
    mark = run.wait_for(lambda s: s.lines == expected and s.cursor == (0, 0), what="vim screen")
    snap = run.keeper.snapshot()
    assert snap.alt_screen and snap.bracketed_paste and snap.cursor_visible
    # vim probes the terminal (CPR for ambiguous width, DA2): the keeper answered.
    assert b"\x1b[6n" in run.captured and b"\x1b[>c" in run.captured
    run.send(b":q\r")
    assert run.finish() == 0
    # vim leaves the alternate screen: the (empty) main screen and its cursor come back.
    after = run.keeper.snapshot()
    assert after.lines == [""] * ROWS and not after.alt_screen and not after.bracketed_paste
    assert_replays(bytes(run.captured[:mark]), expected)
    assert_replays(bytes(run.captured), [""] * ROWS)


@pytest.mark.skipif(not os.path.exists("/usr/bin/less"), reason="needs /usr/bin/less")
def test_less_screen_exact(workdir, spawn):
    expected = ["alpha", "beta 中文 wide", "gamma 😀 smile", "delta", "f.txt (END)"] + [""] * 5
    run = spawn(["/usr/bin/less", "f.txt"], cwd=str(workdir), rows=ROWS, cols=COLS)
    mark = run.wait_for(lambda s: s.lines == expected, what="less screen")
    assert run.keeper.snapshot().cursor == (4, 11)
    assert "\x1b[0;7mf.txt (END)\x1b[0m" in run.keeper.ansi(repaint=False)
    run.send(b"q")
    assert run.finish() == 0
    assert_replays(bytes(run.captured[:mark]), expected)


CURSES = '''
import curses, locale
locale.setlocale(locale.LC_ALL, "")
def main(w):
    curses.curs_set(0)
    w.box()
    w.addstr(2, 3, "curses 中文 ok")
    w.addstr(4, 3, "bold", curses.A_BOLD)
    w.addstr(5, 3, "x" * 10)
    w.addstr(5, 5, "YY")
    w.refresh()
    w.getch()
curses.wrapper(main)
'''


def test_curses_box_exact(tmp_path, spawn):
    (tmp_path / "cur.py").write_text(CURSES, encoding="utf-8")
    rows, cols = 8, 30
    inner = cols - 2
    expected = (
        ["┌" + "─" * inner + "┐", "│" + " " * inner + "│"]
        + ["│  " + t.ljust(inner - 2 - (2 if "中" in t else 0)) + "│" for t in ("curses 中文 ok",)]
        + ["│" + " " * inner + "│", "│  " + "bold".ljust(inner - 2) + "│",
           "│  " + "xxYYxxxxxx".ljust(inner - 2) + "│", "│" + " " * inner + "│",
           "└" + "─" * inner + "┘"]
    )
    run = spawn([sys.executable, "cur.py"], cwd=str(tmp_path), rows=rows, cols=cols)
    mark = run.wait_for(lambda s: s.lines == expected, what="curses screen")
    snap = run.keeper.snapshot()
    assert snap.cursor_visible is False and snap.alt_screen
    assert "\x1b[0;1;37;40mbold" in run.keeper.ansi(repaint=False)
    run.send(b"q")
    assert run.finish() == 0
    assert run.keeper.snapshot().lines == [""] * rows
    assert_replays(bytes(run.captured[:mark]), expected, rows, cols)
