"""tmux as the oracle for screens: a private tmux server whose panes run the same programs,
at the same size, with the same keys, as vigil executions; `capture-pane` is what a
terminal shows (and, with `-S -N`, what scrolled away).

The server is private (its own socket, config: xterm-256color, a 100,000-line history, no
status line, /bin/sh as the shell) and killed at the end. Waits are conditions on captures
with deadlines, never sleeps. `lines_cells()` turns ANSI lines (tmux `-e` or vigil `--ansi`)
into (character, attributes) cells through vigil's own parser, so the two renderings are
compared cell for cell whatever SGR spelling each uses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
#: Tests that compare with tmux skip only when the binary is absent, never in CI
#: (tests/support/programs.py).
needs_tmux = pytest.mark.needs_program("tmux")

CONFIG = """\
set -g default-terminal xterm-256color
set -g default-shell /bin/sh
set -g history-limit 100000
set -g status off
set -g escape-time 0
set -g remain-on-exit on
"""

#: Deadline for a tmux pane to show what is awaited.
TMUX_TIMEOUT = 15.0


class Tmux:
    """One private tmux server."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="vt-tmux-"))
        self.socket = self.root / "s"
        (self.root / "tmux.conf").write_text(CONFIG)
        self._panes = 0

    def run(self, *args: str, check: bool = True) -> str:
        # A clean environment for the server its panes inherit: a test runner's COLUMNS or
        # LINES (pytest sets them) would override the pane size for curses programs.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        out = subprocess.run([TMUX, "-S", str(self.socket), "-f", str(self.root / "tmux.conf"), *args],
                             capture_output=True, text=True, timeout=30, env=env)
        if check and out.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def pane(self, command: str, *, rows: int, cols: int, cwd: str, env: dict[str, str]) -> "Pane":
        self._panes += 1
        name = f"p{self._panes}"
        args = ["new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), "-c", cwd]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self.run(*args, command)
        return Pane(self, name)

    def close(self) -> None:
        self.run("kill-server", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


class Pane:
    def __init__(self, server: Tmux, name: str):
        self.server, self.name = server, name

    def capture(self, history: int = 0, ansi: bool = False) -> list[str]:
        """The screen's rows (and the last `history` scrolled-away lines before them), trailing
        empty rows dropped."""
        args = ["capture-pane", "-p", "-t", self.name]
        if history:
            args += ["-S", f"-{history}"]
        if ansi:
            args += ["-e", "-N"]  # -N: trailing blanks too (they may have a background)
        lines = self.server.run(*args).split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the final newline
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def cursor(self) -> tuple[int, int]:
        out = self.server.run("display-message", "-p", "-t", self.name, "#{cursor_y} #{cursor_x}")
        y, x = out.split()
        return int(y), int(x)

    def history_size(self) -> int:
        return int(self.server.run("display-message", "-p", "-t", self.name, "#{history_size}").strip())

    def send(self, text: str = "", keys: tuple[str, ...] = ()) -> None:
        if text:
            self.server.run("send-keys", "-t", self.name, "-l", text)
        for key in keys:
            self.server.run("send-keys", "-t", self.name, key)

    def pipe(self) -> Path:
        """Start copying everything the program writes to a file (tmux `pipe-pane`)."""
        path = self.server.root / f"{self.name}.out"
        path.touch()
        self.server.run("pipe-pane", "-t", self.name, "-o", f"cat >> {path}")
        return path

    def resize(self, rows: int, cols: int) -> None:
        self.server.run("resize-window", "-t", self.name, "-x", str(cols), "-y", str(rows))

    def wait(self, predicate, what: str, timeout: float = TMUX_TIMEOUT) -> list[str]:
        """Captures until predicate(lines) holds; returns those lines."""
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            lines = self.capture()
            if predicate(lines):
                return lines
            if time.monotonic() > deadline:
                raise AssertionError(f"tmux pane never showed {what}; it shows:\n" + "\n".join(lines))
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


class Both:
    """One program under vigil and in a tmux pane."""

    def __init__(self, session, tmux, workspace, command: str, rows: int, cols: int,
                 env: dict | None = None):
        from tests.support.screens import Screens

        self.s, self.sc = session, Screens(session)
        self.rows, self.cols = rows, cols
        env = {**same_env(), **(env or {})}
        self.eid = session.run(command=command, rows=rows, cols=cols, env=env)["execution_id"]
        self.pane = tmux.pane(command, rows=rows, cols=cols, cwd=str(workspace), env=env)

    def send(self, text: str) -> None:
        self.s.call("input", execution_id=self.eid, text=text)
        self.pane.send(text)

    def vigil_lines(self, history: int = 0, ansi: bool = False) -> list[str]:
        snap = self.sc.get(self.eid, ansi=ansi, history=history)
        rows = snap["ansi"].split("\r\n") if ansi else snap["text"].split("\n")
        lines = (snap["scrollback_ansi"] if ansi else snap["scrollback"]) + rows
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def resize(self, rows: int, cols: int) -> None:
        self.s.call("resize", execution_id=self.eid, rows=rows, cols=cols)
        self.pane.resize(rows, cols)
        self.rows, self.cols = rows, cols

    def wait(self, predicate, what: str) -> None:
        """Until both show it (and vigil's screen is exact)."""
        self.pane.wait(predicate, what)
        deadline = time.monotonic() + TMUX_TIMEOUT
        while True:
            snap = self.sc.get(self.eid)
            if snap["fidelity"] == "exact" and predicate(snap["text"].split("\n")):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"vigil never showed {what}: {snap['text']!r} ({snap['fidelity']})")
            time.sleep(0.005)

    def vigil_cells(self, history: int = 0) -> list[list[tuple]]:
        snap = self.sc.get(self.eid, ansi=True, history=history)
        if history:
            return lines_cells(snap["scrollback_ansi"] + snap["ansi"].split("\r\n"), self.cols)
        return repaint_cells(snap["ansi"], self.rows, self.cols)

    def assert_same(self, history: int = 0) -> None:
        """vigil's last `history` scrollback lines and screen equal tmux's, as text and cell
        for cell, and so does the cursor."""
        want = [line.rstrip(" ") for line in self.pane.capture(history=history)]
        got = self.vigil_lines(history=history)
        assert got == want, "text differs:\n" + _diff(want, got)
        want_cells = lines_cells(self.pane.capture(history=history, ansi=True), self.cols)
        got_cells = self.vigil_cells(history)
        bad = [i for i in range(max(len(want_cells), len(got_cells)))
               if (want_cells[i:i + 1] or [None]) != (got_cells[i:i + 1] or [None])]
        if bad:
            a, b = (want_cells[bad[0]:bad[0] + 1] or [[]])[0], (got_cells[bad[0]:bad[0] + 1] or [[]])[0]
            col = next((i for i in range(max(len(a), len(b))) if a[i:i + 1] != b[i:i + 1]), 0)
            raise AssertionError(f"attributes differ on lines {bad[:5]}; line {bad[0]} column {col}: "
                                 f"tmux {a[col:col + 2]}, vigil {b[col:col + 2]}")
        cursor, vigil_cursor = self.pane.cursor(), tuple(self.sc.get(self.eid)["cursor"])
        assert cursor == vigil_cursor, f"cursor: tmux {cursor}, vigil {vigil_cursor}"


def _diff(want: list[str], got: list[str]) -> str:
    out = []
    for i in range(max(len(want), len(got))):
        a = want[i] if i < len(want) else None
        b = got[i] if i < len(got) else None
        out.append(f"{'  ' if a == b else '!!'} {i:3} tmux  {a!r}")
        if a != b:
            out.append(f"          vigil {b!r}")
    return "\n".join(out[-80:])


def last_is(text: str):
    return lambda lines: any(line.rstrip() == text for line in lines[-3:]) if lines else False


def _plain_blank(cell) -> bool:
    return cell[0] == " " and cell[1] == "default" and tuple(cell)[3:] == (False,) * 6


def _normalise(row: list) -> list[tuple]:
    """Blanks without their background, trailing ones dropped: tmux's capture leaves out the
    background of cells a clear filled with one (and trailing ones altogether, -N too), so
    it cannot be compared; drawn text keeps its background."""
    out = [(" ", "default", "default", *([False] * 6)) if _plain_blank(c) else tuple(c) for c in row]
    while out and _plain_blank(out[-1]):
        out.pop()
    return out


def lines_cells(lines: list[str], cols: int) -> list[list[tuple]]:
    """ANSI lines (tmux `capture-pane -e`, whose attributes carry over from line to line, or
    vigil's) as rows of (character, fg, bg, bold, italics, underscore, strikethrough,
    reverse, blink) cells, through vigil's own parser. G1 is the DEC line-drawing set, as
    tmux assumes when it wraps line-drawing characters in SO/SI."""
    from vigil.daemon.screen.parser import Parser
    from vigil.daemon.screen.vtscreen import DEC_GRAPHICS, VtScreen

    screen = VtScreen(max(cols, 2), max(len(lines), 1))
    screen.g1 = DEC_GRAPHICS
    Parser(screen, escape_max=1 << 20).feed("\r\n".join(lines))
    rows = [_normalise(row.cells) for row in screen.buffer[:len(lines)]]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def repaint_cells(repaint: str, rows: int, cols: int) -> list[list[tuple]]:
    """vigil's `screen --ansi` repaint (clear, rows placed) as rows of cells, trailing
    default blanks and empty rows dropped."""
    from vigil.daemon.screen.parser import Parser
    from vigil.daemon.screen.vtscreen import VtScreen

    screen = VtScreen(cols, rows)
    Parser(screen, escape_max=4096).feed(repaint)
    out = [_normalise(row.cells) for row in screen.buffer]
    while out and not out[-1]:
        out.pop()
    return out


@pytest.fixture
def tmux():
    if TMUX is None:  # a test that uses the fixture without the mark still says why
        pytest.fail("tmux is not installed: mark the test with needs_tmux", pytrace=False)
    server = Tmux()
    try:
        yield server
    finally:
        server.close()


def same_env() -> dict[str, str]:
    """The environment both sides give the program (vigil adds TERM itself; tmux sets it from
    default-terminal)."""
    return {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": os.environ.get("HOME", "/tmp"),
            "PATH": "/usr/local/bin:/usr/bin:/bin", "PS1": "$ ", "TERM": "xterm-256color"}
