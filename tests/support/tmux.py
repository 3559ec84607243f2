"""tmux as the oracle for screens: a private tmux server whose panes run the same programs,
at the same size, with the same keys, as vigil executions; `capture-pane` is what a
terminal shows (and, with `-S -N`, what scrolled away).

The server is private (its own socket, config: xterm-256color, a 100,000-line history, no
status line, /bin/sh as the shell) and killed at the end. Waits are conditions on captures
with deadlines, never sleeps. `cells()` turns an ANSI line (tmux `-e` or vigil `--ansi`)
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
#: Tests that compare with tmux skip only when the binary is absent (CI installs it).
needs_tmux = pytest.mark.skipif(TMUX is None, reason="needs tmux (CI installs it)")

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
        out = subprocess.run([TMUX, "-S", str(self.socket), "-f", str(self.root / "tmux.conf"), *args],
                             capture_output=True, text=True, timeout=30)
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
            args.append("-e")
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


def cells(line: str, cols: int) -> list[tuple]:
    """An ANSI line as (character, fg, bg, bold, italics, underscore, strikethrough, reverse,
    blink) cells, trailing default blanks dropped. G1 is the DEC line-drawing set, as tmux
    assumes when its `-e` capture wraps line-drawing characters in SO/SI."""
    from vigil.daemon.screen.parser import Parser
    from vigil.daemon.screen.vtscreen import BLANK, DEC_GRAPHICS, VtScreen

    screen = VtScreen(max(cols, 2), 1)
    screen.g1 = DEC_GRAPHICS
    Parser(screen, escape_max=4096).feed(line)
    row = list(screen.buffer[0].cells)
    while row and row[-1] == BLANK:
        row.pop()
    return [tuple(c) for c in row]


def repaint_cells(repaint: str, rows: int, cols: int) -> list[list[tuple]]:
    """vigil's `screen --ansi` repaint (clear, rows placed) as rows of cells, trailing
    default blanks and empty rows dropped."""
    from vigil.daemon.screen.parser import Parser
    from vigil.daemon.screen.vtscreen import BLANK, VtScreen

    screen = VtScreen(cols, rows)
    Parser(screen, escape_max=4096).feed(repaint)
    out = []
    for row in screen.buffer:
        cells_ = list(row.cells)
        while cells_ and cells_[-1] == BLANK:
            cells_.pop()
        out.append([tuple(c) for c in cells_])
    while out and not out[-1]:
        out.pop()
    return out


@pytest.fixture
def tmux():
    if TMUX is None:
        pytest.skip("needs tmux")
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
