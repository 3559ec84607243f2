"""Resizes (issue 17), with tmux as the oracle: the same program, the same keys, the same
resizes (`resize` for vigil, `resize-window` for tmux); after each, the screen (and the
scrollback, which tmux reflows too) must be the same cell for cell, with the cursor.

tmux reflows the main screen and its history when the width changes (rows that wrapped are
joined, rows too long are split), gives back history rows to a taller window and pushes rows
into the history for a shorter one; the alternate screen is cut or padded and its program
redraws. vigil does the same (daemon/screen/resize.py).

Each resize is followed by a key that makes the program print a known mark, and the
comparison waits for that mark on both sides: the programs' own redraws are the events.

Full-screen programs are also asked to redraw once more after a resize (vim and less:
Ctrl-L, the curses program: `r`), which must change nothing: the daemon resizes the screen
keeper before it tells the guardian (daemon/runtime/manager.py), so the redraw a program
sends on SIGWINCH is already drawn at the new size.
"""

from __future__ import annotations

import sys

from tests.support.screens import (  # noqa: F401  (fixtures)
    session,
    shared_home,
    workspace,
)
from tests.support.tmux import Both, last_is, needs_tmux, tmux  # noqa: F401

pytestmark = needs_tmux


def test_plain_shell_reflows_like_tmux(session, tmux, workspace):
    b = Both(session, tmux, workspace, "exec bash --norc --noprofile -i", rows=15, cols=60)
    b.wait(last_is("$"), "the prompt")
    b.send("for i in 1 2 3 4 5 6; do printf 'line %s %s\\n' $i \"$(printf 'w%.0s' $(seq 1 $((i * 15))))\"; done\r")
    b.wait(last_is("$"), "the lines")
    b.send("seq 1 12\r")
    b.wait(last_is("$"), "seq")
    revisions = [b.sc.get(b.eid)["revision"]]
    for rows, cols, mark in ((10, 35, "r1"), (22, 80, "r2"), (8, 25, "r3"), (15, 60, "r4")):
        b.resize(rows, cols)
        b.send(f"echo {mark}\r")
        b.wait(lambda lines, mark=mark: mark in lines and last_is("$")(lines), f"{mark} after {rows}x{cols}")
        b.assert_same(history=300)
        revisions.append(b.sc.get(b.eid)["revision"])
    assert revisions == sorted(set(revisions)), revisions


def test_vim_redraws_and_the_shell_comes_back_reflowed(session, tmux, workspace):
    (workspace / "v.txt").write_text("".join(f"vim line {i} " + "x" * (i % 50) + "\n" for i in range(60)))
    b = Both(session, tmux, workspace, "exec bash --norc --noprofile -i", rows=16, cols=70)
    b.wait(last_is("$"), "the prompt")
    b.send("printf '%s\\n' \"$(printf 'long%.0s' $(seq 1 40))\"; seq 1 5\r")
    b.wait(last_is("$"), "the output")
    b.send("vim -u NONE -N -n v.txt\r")
    b.wait(lambda lines: lines[:1] == ["vim line 0"], "vim")
    for rows, cols, mark in ((10, 40, "m1"), (20, 90, "m2")):
        b.resize(rows, cols)
        b.send("\x0c")  # Ctrl-L: redraw (see the module doc)
        # vim redraws at the new size (its text reaches the row above the command line)...
        b.wait(lambda lines, r=rows: len(lines) >= r - 1 and lines[r - 2].startswith("vim line"),
               f"vim redrawn at {rows}x{cols}")
        b.send(f":echo '{mark}'\r")
        b.wait(lambda lines, mark=mark: lines[-1:] == [mark], f"{mark} in vim after {rows}x{cols}")
        b.assert_same()
    b.resize(12, 50)
    b.send(":q\r")
    b.wait(last_is("$"), "the shell after vim")
    b.send("echo back\r")
    b.wait(lambda lines: "back" in lines and last_is("$")(lines), "echo back")
    b.assert_same(history=200)


def test_less_redraws(session, tmux, workspace):
    (workspace / "f.txt").write_text("".join(f"line {i} " + "=" * (i % 40) + "\n" for i in range(1, 101)))
    b = Both(session, tmux, workspace, "less f.txt; read x", rows=12, cols=50,
             env={"LESS": "", "LESSHISTFILE": "-"})
    b.wait(lambda lines: lines[:1] == ["line 1 ="], "the first page")
    b.send("jjj")
    b.wait(lambda lines: lines[:1] == ["line 4 ===="], "three lines down")
    for rows, cols in ((8, 30), (20, 70)):
        b.resize(rows, cols)
        b.send("\x0c")  # Ctrl-L: repaint (see the module doc)
        # less redraws at the new size: its prompt on the last row.
        b.wait(lambda lines, r=rows: len(lines) == r and lines[-1] == ":", f"less redrawn at {rows}x{cols}")
        b.send("g")
        b.wait(lambda lines, r=rows: len(lines) == r and lines[:1] == ["line 1 ="] and lines[-1] == ":",
               f"the top after {rows}x{cols}")
        b.assert_same()


CURSES = r"""
import curses

def draw(w):
    w.erase()
    rows, cols = w.getmaxyx()
    w.addstr(0, 0, "-" * (cols - 1))
    w.addstr(1, 2, f"size {rows}x{cols}")
    w.addstr(rows // 2, max(1, cols // 2 - 3), "centre", curses.A_REVERSE)
    w.addstr(rows - 1, 0, "-" * (cols - 1))
    w.move(2, 2)
    w.refresh()

def main(w):
    draw(w)
    while True:
        key = w.getch()
        if key in (curses.KEY_RESIZE, ord("r")):
            draw(w)
        elif key == ord("q"):
            return

curses.wrapper(main)
input()
"""


def test_curses_program_redraws(session, tmux, workspace):
    (workspace / "cur.py").write_text(CURSES)
    b = Both(session, tmux, workspace, f"{sys.executable} cur.py", rows=10, cols=40)
    b.wait(lambda lines: len(lines) > 1 and "size 10x40" in lines[1], "the first frame")
    b.assert_same()
    for rows, cols in ((6, 24), (18, 70), (12, 50)):
        b.resize(rows, cols)
        b.send("r")  # redraw (see the module doc)
        b.wait(lambda lines, r=rows, c=cols: len(lines) > 1 and f"size {r}x{c}" in lines[1], f"the frame at {rows}x{cols}")
        b.assert_same()
