"""The `scrollback` read source across a daemon restart (issue 17): the new daemon's screen
keeper numbers its lines from 0 again, and the store appends them after the lines it kept,
so a cursor from before the restart continues without a resync and the pages read from
the start give every line once, in order."""

from __future__ import annotations

from tests.support.executions import Session, workspace  # noqa: F401  (fixture)
from tests.support.screens import Screens

PROGRAM = "seq 1 20; read a; seq 21 40; read b"


def read_all(session: Session, eid: str, cursor: str | None = None) -> tuple[str, list[dict]]:
    pages = []
    while True:
        page = session.read(eid, cursor=cursor, page_bytes=64, source="scrollback")
        pages.append(page)
        cursor = page["next_cursor"]
        if page["end_offset"] == page["start_offset"]:
            return "".join(p["text"] for p in pages), pages


def test_a_cursor_from_before_a_restart_continues(home, workspace):
    daemon = home.start_daemon()
    s = Session(home, workspace)
    eid = s.run(command=PROGRAM, rows=10, cols=40)["execution_id"]
    Screens(s).wait(eid, until=lambda t: "20" in t.split())
    before, pages = read_all(s, eid)
    assert before == "".join(f"{n}\n" for n in range(1, 12))  # 12..20 and the cursor's row on screen
    s.close()
    daemon.stop()

    home.start_daemon()
    s2 = Session(home, workspace)
    try:
        screens = Screens(s2)
        s2.call("input", execution_id=eid, text="\r")
        screens.wait(eid, until=lambda t: "40" in t.split())
        after, more = read_all(s2, eid, pages[-1]["next_cursor"])
        assert not any(p["resync_required"] or p["gap"] for p in more)
        assert more[0]["start_offset"] == 11
        # 12..20, the row Enter was typed on, and 21..31 scrolled away (32..40 and the
        # cursor's row stay on the screen).
        assert after == "".join(f"{n}\n" for n in [*range(12, 21), "", *range(21, 32)]), repr(after)
        assert read_all(s2, eid)[0] == before + after
        s2.call("input", execution_id=eid, text="\r")
        s2.wait_exit(eid)
    finally:
        s2.close()
