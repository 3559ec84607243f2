"""Programs that draw with cursor addressing, through the whole path (child → PTY → guardian
→ daemon → screen keeper): vim, less and a curses script of our own give exactly the rows a
terminal shows; keys sent with `input` drive them; once they exit, the execution keeps its
last screen (the main screen again, as a terminal shows it after the alternate screen is
left), readable with `screen` and paged with `Execution read source=screen`.

Every program runs in a 10×40 terminal on a 100-line file: small enough that each expected
screen is written out in full below.
"""


import pytest

from tests.support.executions import Session, python_child
from tests.support.screens import (  # noqa: F401  (fixtures)
    Screens,
    rows_text,
    session,
    shared_home,
    workspace,
)

ROWS, COLS = 10, 40
LINES = [f"line {i}" for i in range(1, 101)]
#: vim's and less's first message names the file: 100 lines of "line N\n" are 792 bytes.
FILE_BYTES = sum(len(line) + 1 for line in LINES)


@pytest.fixture
def text_file(workspace):
    path = workspace / "f.txt"
    path.write_text("".join(line + "\n" for line in LINES))
    assert path.stat().st_size == FILE_BYTES == 792
    return path


def start(s: Session, command: str) -> str:
    """`command` after the main screen shows "before": a program that switches to the
    alternate screen must give that row back when it ends."""
    return s.run(command=f"echo before; exec {command}", rows=ROWS, cols=COLS,
                 env={"LESS": "", "LESSHISTFILE": "-"})["execution_id"]


def assert_exited_keeps_screen(s: Session, eid: str, rows: list[str], cursor: list[int]) -> None:
    """After the exit: `screen` answers the persisted last screen (not live), and every page
    of `Execution read source=screen` adds up to the same text."""
    rec = s.wait_exit(eid)
    assert (rec["status"], rec["exit_code"]) == ("exited", 0)
    sc = Screens(s)
    snap = sc.wait(eid, rows, live=False)
    assert (snap["rows"], snap["cols"], list(snap["cursor"]), snap["fidelity"]) == \
        (ROWS, COLS, cursor, "exact")
    text, pages = sc.read_all(eid, page_bytes=4)
    assert text == rows_text(rows)
    assert len(pages) == -(-len(text.encode()) // 4)
    assert {p["source"] for p in pages} == {"screen"}
    assert not any(p["resync_required"] for p in pages)


def test_vim_draws_exact_screens_and_quits_back_to_the_main_screen(session, text_file):
    s, sc = session, Screens(session)
    eid = start(s, "/usr/bin/vim -u NONE -N f.txt")
    sc.wait(eid, LINES[:9] + ['"f.txt" 100L, 792B'], cursor=[0, 0], alt_screen=True,
            fidelity="exact", live=True)
    # G: vim redraws rows 0-8 with cursor-addressed partial writes ("93" over "line 2").
    s.call("input", execution_id=eid, text="G")
    sc.wait(eid, LINES[91:] + ['"f.txt" 100L, 792B'], cursor=[8, 0], alt_screen=True)
    # An edit: `x` deletes the 'l' of "line 100" in place.
    s.call("input", execution_id=eid, text="x")
    sc.wait(eid, LINES[91:99] + ["ine 100", '"f.txt" 100L, 792B'], cursor=[8, 0])
    s.call("input", execution_id=eid, keys=["Escape"], text="")
    s.call("input", execution_id=eid, text=":q!\r")
    assert_exited_keeps_screen(s, eid, ["before"], cursor=[1, 0])


def test_less_pages_a_file_and_quits_back_to_the_main_screen(session, text_file):
    s, sc = session, Screens(session)
    eid = start(s, "/usr/bin/less f.txt")
    sc.wait(eid, LINES[:9] + ["f.txt"], cursor=[9, 5], alt_screen=True, fidelity="exact")
    s.call("input", execution_id=eid, text=" ")  # one page forward: 9 more lines
    sc.wait(eid, LINES[9:18] + [":"], cursor=[9, 1], alt_screen=True)
    s.call("input", execution_id=eid, text="G")
    sc.wait(eid, LINES[91:] + ["(END)"], cursor=[9, 5], alt_screen=True)
    s.call("input", execution_id=eid, text="q")
    assert_exited_keeps_screen(s, eid, ["before"], cursor=[1, 0])


#: Draws at fixed cells, waits for a key, draws what it got, waits again, then leaves
#: curses (back to the main screen) and prints a last line there.
CURSES = r'''
import curses

def main(w):
    w.addstr(0, 0, "curses demo")
    w.addstr(3, 10, "at 3,10")
    w.addstr(5, 2, "wide: 日本 ok")
    w.addstr(9, 30, "bottom")
    w.move(7, 4)
    w.refresh()
    key = w.getkey()
    w.addstr(3, 10, "AT")          # overwrite two cells in place
    w.addstr(8, 0, "key " + key)
    w.move(8, 5)
    w.refresh()
    w.getkey()

curses.wrapper(main)
print("curses done")
'''


def test_a_curses_program_draws_exact_cells(session):
    s, sc = session, Screens(session)
    eid = s.run(argv=python_child(CURSES), rows=ROWS, cols=COLS,
                env={"PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8"})["execution_id"]
    first = ["curses demo", "", "", " " * 10 + "at 3,10", "", "  wide: 日本 ok", "", "", "",
             " " * 30 + "bottom"]
    sc.wait(eid, first, cursor=[7, 4], alt_screen=True, fidelity="exact")
    s.call("input", execution_id=eid, text="z")
    second = list(first)
    second[3] = " " * 10 + "AT 3,10"
    second[8] = "key z"
    sc.wait(eid, second, cursor=[8, 5], alt_screen=True)
    s.call("input", execution_id=eid, text="q")
    assert_exited_keeps_screen(s, eid, ["curses done"], cursor=[1, 0])


def test_a_screen_cursor_from_an_older_snapshot_must_resync(session, text_file):
    """`Execution read source=screen` pages the persisted snapshot; a cursor taken on one
    snapshot and used after the screen changed gets `resync_required` and the new screen
    from its start (never a mix of two screens)."""
    s, sc = session, Screens(session)
    eid = start(s, "/usr/bin/less f.txt")
    top = LINES[:9] + ["f.txt"]
    sc.wait(eid, top, alt_screen=True)
    # The persisted snapshot follows the live one with the next ingest batch.
    first = _wait_persisted(s, eid, rows_text(top))
    assert first["has_more"] and not first["resync_required"]
    assert first["text"] == "line 1\nli"
    s.call("input", execution_id=eid, text="G")
    end = LINES[91:] + ["(END)"]
    sc.wait(eid, end, alt_screen=True)
    latest = _wait_persisted(s, eid, rows_text(end))
    assert latest["snapshot"] > first["snapshot"]
    page = s.read(eid, cursor=first["next_cursor"], page_bytes=9, source="screen")
    assert page["resync_required"] is True
    assert (page["start_offset"], page["text"]) == (0, "line 92\nl")
    s.call("input", execution_id=eid, text="q")
    s.wait_exit(eid)


def _wait_persisted(s: Session, eid: str, text: str) -> dict:
    """The first page (9 bytes) of the persisted screen once it holds `text`."""
    from tests.support.daemon import wait_for

    def persisted():
        full = "".join(_pages(s, eid))
        return full == text and s.read(eid, page_bytes=9, source="screen")

    return wait_for(persisted, timeout=15, what=f"persisted screen {text!r}")


def _pages(s: Session, eid: str):
    cursor = None
    while True:
        page = s.read(eid, cursor=cursor, page_bytes=65536, source="screen")
        yield page["text"]
        cursor = page["next_cursor"]
        if not page["has_more"]:
            return
