"""vttest, the VT100/VT102 conformance program, under vigil and under tmux (issue 17): menus 1
(cursor movements), 2 (screen features) and 8 (VT102 insert/delete) at 80×24, the same
keys to both, and every screen compared cell for cell (text, attributes, line drawing) with
the cursor.

Synchronisation, without sleeps: tmux copies the program's output to a file (`pipe-pane`);
vttest writes its prompt last and then reads, so a screen is complete when that file ends
with a prompt and vigil has stored exactly as many bytes. Both runs start with the copy
already running (`read x` waits for the first key), so the byte counts are comparable.

vttest's 132-column passes: neither tmux nor vigil resizes on DECCOLM (both clear the screen
and home the cursor, as xterm does when column switching is not allowed), so vttest draws
its 132-column screens into 80 columns on both, and they are compared as they are.

Where tmux itself is wrong — it shows what vttest's own text says must not be seen — the
screen is checked against that text instead, and tmux is checked to still be wrong (so
that a fixed tmux shows up here): `TMUX_WRONG`.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.screens import (  # noqa: F401  (fixtures)
    SCREEN_TIMEOUT,
    Screens,
    session,
    shared_home,
    workspace,
)
from tests.support.tmux import lines_cells, needs_tmux, repaint_cells, same_env, tmux  # noqa: F401

VTTEST = shutil.which("vttest")
pytestmark = [needs_tmux, pytest.mark.needs_program("vttest")]

ROWS, COLS = 24, 80
PROMPTS = (b"Push <RETURN>", b"Enter choice number (0 - 12): ")
MENU = b"Enter choice number (0 - 12): "


def autowrap_margins(rows: list[str]) -> bool:
    """Menu 1, "Test of autowrap, mixing control and print characters": "The left/right
    margins should have letters in order" — rows 3-20 each hold a capital at the left margin
    and the same letter in lower case at the right one, I..Z in order. (tmux moves a
    backspace from a pending wrap to the last column instead of the one before it, so the
    lower-case letter of every fourth row wraps to the left of the next row.)"""
    body = [row.ljust(COLS) for row in rows[2:20]]
    letters = "IJKLMNOPQRSTUVWXYZ"
    return len(body) == 18 and "".join(row[0] for row in body) == letters \
        and "".join(row[COLS - 1] for row in body) == letters.lower() \
        and all(row[1:COLS - 1].strip() == "" for row in body)


#: (menu, screen) → what vttest's text says, where tmux does not show it.
TMUX_WRONG = {("1", 3): autowrap_margins, ("1", 4): autowrap_margins}


class VtTest:
    def __init__(self, session, tmux, workspace):
        self.s, self.sc = session, Screens(session)
        env = same_env()
        command = "read x; exec vttest"
        self.pane = tmux.pane(command, rows=ROWS, cols=COLS, cwd=str(workspace), env=env)
        self.out = self.pane.pipe()
        self.eid = session.run(command=command, rows=ROWS, cols=COLS, env=env)["execution_id"]
        self.screens = 0

    def send(self, text: str) -> None:
        self.s.call("input", execution_id=self.eid, text=text)
        self.pane.send(text)

    def next_screen(self, before: int) -> bytes:
        """Wait until vttest has drawn its next screen (the output ends with a prompt) on
        both; returns tmux's copy of the output."""
        deadline = time.monotonic() + SCREEN_TIMEOUT
        while True:
            out = self.out.read_bytes()
            if len(out) > before and out.endswith(PROMPTS):
                stored = self.s.get(self.eid)["output"]["total_bytes"]
                if stored == len(out):
                    return out
                assert stored < len(out), f"vigil stored {stored} bytes, tmux saw {len(out)}"
            assert time.monotonic() < deadline, f"vttest never finished a screen: {out[-200:]!r}"
            time.sleep(0.005)

    def assert_same_screen(self, step: str) -> None:
        want = lines_cells(self.pane.capture(ansi=True), COLS)
        cursor = list(self.pane.cursor())
        deadline = time.monotonic() + SCREEN_TIMEOUT
        while True:
            snap = self.sc.get(self.eid, ansi=True)
            got = repaint_cells(snap["ansi"], ROWS, COLS)
            if snap["fidelity"] == "exact" and got == want and list(snap["cursor"]) == cursor:
                self.screens += 1
                return
            if time.monotonic() > deadline:
                text = lambda rows: "\n".join("".join(c[0] for c in row) for row in rows)  # noqa: E731
                raise AssertionError(
                    f"{step}: vigil's screen differs from tmux's (cursor {snap['cursor']} vs "
                    f"{cursor}, {snap['fidelity']})\n--- tmux\n{text(want)}\n--- vigil\n{text(got)}")
            time.sleep(0.005)

    def assert_vttest_text(self, step: str, rule) -> None:
        """For a screen tmux gets wrong: vigil shows what vttest says, tmux does not, and the
        rest (the explanation above, the cursor) is the same."""
        tmux_rows = [line.rstrip() for line in self.pane.capture()]
        assert not rule(tmux_rows), f"{step}: tmux now shows what vttest says; compare with it again"
        cursor = list(self.pane.cursor())
        deadline = time.monotonic() + SCREEN_TIMEOUT
        while True:
            snap = self.sc.get(self.eid)
            rows = snap["text"].split("\n")
            if snap["fidelity"] == "exact" and rule(rows) and rows[:2] == tmux_rows[:2] \
                    and list(snap["cursor"]) == cursor:
                self.screens += 1
                return
            assert time.monotonic() < deadline, f"{step}: vigil's screen is not what vttest says:\n" + snap["text"]
            time.sleep(0.005)

    def menu(self, choice: str) -> None:
        """Run one menu to its end, comparing every screen."""
        size = len(self.out.read_bytes())
        self.send(choice + "\r")
        for step in range(1, 100):
            out = self.next_screen(size)
            size = len(out)
            rule = TMUX_WRONG.get((choice, step))
            if rule is not None:
                self.assert_vttest_text(f"menu {choice} screen {step}", rule)
            else:
                self.assert_same_screen(f"menu {choice} screen {step}")
            if out.endswith(MENU):
                return
            self.send("\r")
        raise AssertionError(f"menu {choice} never returned to the main menu")


@pytest.fixture
def vttest(session, tmux, workspace):
    vt = VtTest(session, tmux, workspace)
    vt.send("\r")
    vt.next_screen(0)
    vt.assert_same_screen("main menu")
    yield vt
    vt.send("0\r")
    session.wait_exit(vt.eid)


@pytest.mark.parametrize("menu,screens", [("1", 7), ("2", 16), ("8", 15)])
def test_vttest_menu_screens_equal_tmux(vttest, menu, screens):
    vttest.menu(menu)
    assert vttest.screens == 1 + screens  # the main menu, then every screen of the menu
