"""The persisted scrollback (store/scrollback.py) and its pages (`read_scrollback_page`):
whole lines in order, page sizes, gaps (lines dropped by the limit or never handed over),
resync after lines changed meaning, a new keeper continuing the numbering, deletion with
the execution."""

from __future__ import annotations

import pytest

from tests.unit.test_store_support import FakeClock, new_record, open_store
from vigil.daemon.store import (
    CursorError,
    ExecutionUpdate,
    ScrollbackUpdate,
    read_output_page,
    read_scrollback_page,
)
from vigil.daemon.store.retention import remove_record, strip_payload

SCOPE = "local\0t1\0/w"


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path, FakeClock(), screen_scrollback_lines=50)
    yield s
    s.check_invariants()
    s.close()


def put(store, eid, *updates: ScrollbackUpdate, fields=None):
    store.commit_batch([ExecutionUpdate(execution_id=eid, scrollback=list(updates),
                                        fields=fields or {})])


def lines(start, count, keeper=1, ff=(), rewrite_from=None):
    return ScrollbackUpdate(keeper=keeper, start=start, rewrite_from=rewrite_from,
                            lines=[(f"line {n}", n in ff) for n in range(start, start + count)])


def read_all(store, eid, page_bytes=None, cursor=None):
    pages = []
    while True:
        page = read_scrollback_page(store, SCOPE, eid, cursor, page_bytes)
        pages.append(page)
        cursor = page.next_cursor
        if page.end_offset == page.start_offset:
            return pages


def text(pages):
    return "".join(p.text for p in pages)


def test_lines_page_in_order_with_whole_lines_and_a_cursor_that_continues(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 10), lines(10, 5, ff={12}))
    pages = read_all(store, eid, page_bytes=16)  # "line 0\n" is 7 bytes: two lines a page
    assert [(p.start_offset, p.end_offset) for p in pages] == [
        (0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 12), (12, 14), (14, 15), (15, 15)]
    assert text(pages) == "".join(f"line {n}\n" for n in range(15))
    assert all(p.source == "scrollback" and p.snapshot == 0 and p.gap is None for p in pages)
    assert [p.fast_forwarded_lines for p in pages[5:8]] == [[], [12], []]
    assert [p.fidelity for p in pages[5:8]] == ["exact", "fast_forwarded", "exact"]
    assert pages[0].has_more and pages[-1].has_more  # running: more may come
    put(store, eid, lines(15, 1), fields={"status": "exited", "exit_code": 0})
    last = read_scrollback_page(store, SCOPE, eid, pages[-1].next_cursor)
    assert (last.text, last.has_more) == ("line 15\n", False)


def test_a_line_longer_than_the_page_comes_whole_and_alone(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, ScrollbackUpdate(keeper=1, start=0, lines=[("x" * 300, False), ("y", False)]))
    pages = read_all(store, eid, page_bytes=100)
    assert [p.text for p in pages] == ["x" * 300 + "\n", "y\n", ""]


def test_the_limit_drops_the_oldest_and_an_old_cursor_gets_a_gap(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 10))
    early = read_scrollback_page(store, SCOPE, eid, None, 8)  # line 0 only
    put(store, eid, lines(10, 60))  # 70 lines, 50 kept: 20 .. 69
    page = read_scrollback_page(store, SCOPE, eid, early.next_cursor, 8)
    assert (page.gap.from_offset, page.gap.to_offset, page.gap.bytes_skipped) == (1, 20, 19)
    assert (page.start_offset, page.text, page.resync_required) == (20, "line 20\n", False)
    assert read_scrollback_page(store, SCOPE, eid).start_offset == 20  # no cursor: the oldest


def test_lines_never_handed_over_are_a_gap_never_invented(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 3), lines(7, 3))  # the keeper dropped 3..6 before their turn
    pages = read_all(store, eid)
    assert [(p.start_offset, p.end_offset, p.gap and (p.gap.from_offset, p.gap.to_offset))
            for p in pages] == [(0, 3, None), (7, 10, (3, 7)), (10, 10, None)]


def test_lines_that_changed_meaning_make_old_cursors_resync(store):
    """A resize pulled the newest two lines back onto the screen (the keeper's numbers from
    8 on changed meaning): they are dropped, the epoch advances, and a cursor of the old
    epoch starts again from the first page."""
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 10))
    cursor = read_scrollback_page(store, SCOPE, eid, None, 24).next_cursor
    put(store, eid, ScrollbackUpdate(keeper=1, start=8, rewrite_from=8,
                                     lines=[("new 8", False)]))
    page = read_scrollback_page(store, SCOPE, eid, cursor)
    assert page.resync_required and page.snapshot == 1 and page.start_offset == 0
    assert page.text == "".join(f"line {n}\n" for n in range(8)) + "new 8\n"
    # A clear (CSI 3 J) drops everything: later lines continue the numbering.
    put(store, eid, ScrollbackUpdate(keeper=1, start=9, rewrite_from=0))
    put(store, eid, lines(9, 2))
    page = read_scrollback_page(store, SCOPE, eid, page.next_cursor)
    assert page.resync_required and page.snapshot == 2
    assert (page.start_offset, page.text) == (9, "line 9\nline 10\n")


def test_a_new_keeper_continues_after_the_stored_lines(store):
    """After a daemon restart a new keeper numbers its lines from 0 again. Started from a
    restored screen, its lines are appended after what the store has; fed the whole output
    again, its numbers are the old ones and what is stored is not stored twice. Cursors of
    the old keeper stay valid either way."""
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 5, keeper=1))
    cursor = read_scrollback_page(store, SCOPE, eid).next_cursor
    put(store, eid, ScrollbackUpdate(keeper=2, start=0, from_start=False,
                                     lines=[("after restart", False)]))
    page = read_scrollback_page(store, SCOPE, eid, cursor)
    assert (page.resync_required, page.start_offset, page.text) == (False, 5, "after restart\n")
    put(store, eid, lines(0, 8, keeper=3))  # the whole output replayed: 0..5 are stored
    page = read_scrollback_page(store, SCOPE, eid, page.next_cursor)
    assert (page.resync_required, page.start_offset, page.text) == (False, 6, "line 6\nline 7\n")


def test_cursors_are_per_source_and_the_lines_go_with_the_execution(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 3))
    cursor = read_scrollback_page(store, SCOPE, eid).next_cursor
    with pytest.raises(CursorError):
        read_output_page(store, SCOPE, eid, cursor)
    rec = store.get(SCOPE, eid)
    store._write(lambda tx: remove_record(tx, rec))  # what retention does
    with store.catalog() as view:
        assert list(view.tx.txn.cursor(db=view.tx.dbs["scrollback"])) == []


def test_stripping_an_execution_drops_its_scrollback(store):
    eid = store.create_execution(new_record()).execution_id
    put(store, eid, lines(0, 3), fields={"status": "exited", "exit_code": 0})
    rec = store.get(SCOPE, eid)
    store._write(lambda tx: tx.put_record(strip_payload(tx, rec)[0]))
    page = read_scrollback_page(store, SCOPE, eid)
    assert (page.text, page.start_offset, page.has_more) == ("", 0, False)
