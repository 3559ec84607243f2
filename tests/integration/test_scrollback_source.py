"""The `scrollback` read source (issue 17), through the real daemon: `Execution read` with
source `scrollback` pages the lines that scrolled off the top of the main screen — the same
lines `screen --history` shows while the execution runs — with cursors that continue,
`resync_required` after the history was cleared, and the lines still readable after the
execution ended. The alternate screen never feeds it."""

from __future__ import annotations

from tests.support.screens import (  # noqa: F401  (fixtures)
    Screens,
    session,
    shared_home,
    workspace,
)

PROGRAM = (
    "seq 1 30; printf '\\033[?1049h'; seq 1000 1040; printf '\\033[?1049l'; read a; "
    "printf '\\033[3J'; seq 31 45; read b"
)


def read_all(session, eid: str, cursor: str | None = None, page_bytes: int = 20):
    """Pages from `cursor` until a page is empty; (text, pages)."""
    pages = []
    while True:
        page = session.read(eid, cursor=cursor, page_bytes=page_bytes, source="scrollback")
        pages.append(page)
        cursor = page["next_cursor"]
        if page["end_offset"] == page["start_offset"]:
            return "".join(p["text"] for p in pages), pages
        assert len(pages) < 1000, "scrollback pages never end"


def live_history(screens: Screens, eid: str) -> str:
    return "".join(line + "\n" for line in screens.get(eid, history=1000)["scrollback"])


def test_scrollback_pages_follow_the_screen_and_outlive_the_execution(session):
    screens = Screens(session)
    eid = session.run(command=PROGRAM, rows=10, cols=40)["execution_id"]
    # The alternate screen shows 1000..1040 and never scrolls into the history; the main
    # screen is the same before and after it, so whichever is seen, the history is final.
    screens.wait(eid, until=lambda t: "30" in t.split(), alt_screen=False)
    text, pages = read_all(session, eid)
    assert text == live_history(screens, eid)
    assert text.splitlines()[:3] == ["1", "2", "3"] and "1000" not in text
    assert [p["start_offset"] for p in pages[1:]] == [p["end_offset"] for p in pages[:-1]]
    assert all(len(p["text"].encode()) <= 20 and not p["resync_required"] and p["gap"] is None
               and p["fidelity"] == "exact" and p["fast_forwarded_lines"] == [] for p in pages)
    assert pages[-1]["has_more"]  # running: more may scroll away
    epoch = pages[-1]["snapshot"]

    # CSI 3 J clears the history: an old cursor starts again, at the lines that came after.
    session.call("input", execution_id=eid, text="\r")
    screens.wait(eid, until=lambda t: "45" in t.split())
    page = session.read(eid, cursor=pages[-1]["next_cursor"], page_bytes=4096, source="scrollback")
    assert page["resync_required"] and page["snapshot"] > epoch
    assert page["text"] == live_history(screens, eid) != ""
    # Rows 23..30 were on the screen at the clear: they scroll into the new history.
    assert page["text"].split()[0] == "23" and "22" not in page["text"].split()
    after_clear = page["text"]

    session.call("input", execution_id=eid, text="\r")
    session.wait_exit(eid)
    text, pages = read_all(session, eid, page_bytes=4096)
    # The echo of that Enter scrolled one more line away before the exit.
    assert text == after_clear + "37\n" and not pages[-1]["has_more"]


def test_screen_history_of_an_ended_execution_comes_from_the_store(session):
    screens = Screens(session)
    eid = session.run(command="seq 1 25", rows=10, cols=40)["execution_id"]
    session.wait_exit(eid)
    answer = screens.get(eid, history=5)
    assert not answer["live"]
    # 25 lines and the cursor's empty row on 10 rows: 1..16 scrolled away.
    assert answer["scrollback"] == ["12", "13", "14", "15", "16"]
    assert (answer["scrollback_first"], answer["scrollback_total"]) == (11, 16)
    assert answer["text"].split() == [str(n) for n in range(17, 26)]
