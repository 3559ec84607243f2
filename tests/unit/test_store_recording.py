"""Recording pages from the store (arrival marks, sizes, gaps, pruning) and the asciicast
text the client writes from them, including the fallback for records without timings."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_store_support import T0, FakeClock, new_record, open_store
from vigil.client.asciicast import UNTIMED_MARKER, Writer, gap_marker
from vigil.daemon.store import ExecutionUpdate, InvalidArgument, timings
from vigil.daemon.store.recording import read_recording_page
from vigil.protocol.api.terminal import RecordingGap, RecordingOutput, RecordingResize

SCOPE = "local\0t1\0/w"
KiB = 1024
US = 1000  # µs per ms


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path, FakeClock(), output_chunk_bytes=4 * KiB, retention_output_bytes=8 * KiB)
    yield s
    s.check_invariants()
    s.close()


def commit(store, eid: str, offset: int, data: bytes, at_ms: int | None, sizes=()) -> None:
    arrivals = [] if at_ms is None else [(offset, (T0 + at_ms) * US)]
    store.commit_batch([ExecutionUpdate(execution_id=eid, output=[(offset, data)],
                                        arrivals=arrivals, sizes=list(sizes))])


def all_pages(store, eid: str, page_bytes: int | None = None) -> list:
    pages, offset = [], 0
    while True:
        page = read_recording_page(store, SCOPE, eid, offset, page_bytes)
        pages.append(page)
        if not page.has_more:
            return pages
        offset = page.end_offset


def cast(pages) -> list:
    writer = Writer()
    text = "".join(writer.page(p) for p in pages) + writer.end()
    return [json.loads(line) for line in text.splitlines()]


def test_bad_arguments_are_refused(store):
    rec = store.create_execution(new_record(rows=10, cols=40))
    with pytest.raises(InvalidArgument, match="offset must be >= 0"):
        read_recording_page(store, SCOPE, rec.execution_id, -1)
    with pytest.raises(InvalidArgument, match="page_bytes must be between 4 and 65536"):
        read_recording_page(store, SCOPE, rec.execution_id, 0, 3)
    with pytest.raises(InvalidArgument, match="execution_id must be 32 lowercase"):
        read_recording_page(store, SCOPE, "XYZ", 0)
    with pytest.raises(Exception, match="execution not found"):
        read_recording_page(store, "local\0other\0/w", rec.execution_id, 0)


def test_runs_are_dated_by_their_marks_and_resizes_come_in_stream_order(store):
    rec = store.create_execution(new_record(rows=10, cols=40))
    eid = rec.execution_id
    commit(store, eid, 0, b"one\r\n", 100)
    commit(store, eid, 5, b"two\r\n", 250, sizes=[(5, (T0 + 200) * US, 20, 60)])
    commit(store, eid, 10, "日本\r\n".encode(), 1250)
    page = read_recording_page(store, SCOPE, eid)
    assert (page.rows, page.cols, page.timed, page.has_more) == (10, 40, True, False)
    assert page.events == [
        RecordingOutput(offset=0, at_unix_us=(T0 + 100) * US, data=b"one\r\n"),
        RecordingResize(offset=5, at_unix_us=(T0 + 200) * US, rows=20, cols=60),
        RecordingOutput(offset=5, at_unix_us=(T0 + 250) * US, data=b"two\r\n"),
        RecordingOutput(offset=10, at_unix_us=(T0 + 1250) * US, data="日本\r\n".encode()),
    ]
    # Pages cut inside 本 still give it whole: the client decodes the joined stream.
    events = cast(all_pages(store, eid, page_bytes=14))
    assert events[0] == {"version": 2, "width": 40, "height": 10, "timestamp": T0 // 1000,
                         "title": "echo hi"}
    assert events[1:] == [[0.1, "o", "one\r\n"], [0.2, "r", "60x20"], [0.25, "o", "two\r\n"],
                          [1.25, "o", "日"], [1.25, "o", "本\r\n"]]


def test_a_resize_after_the_last_byte_is_kept(store):
    rec = store.create_execution(new_record(rows=10, cols=40))
    eid = rec.execution_id
    commit(store, eid, 0, b"x", 10)
    store.commit_batch([ExecutionUpdate(execution_id=eid, sizes=[(1, (T0 + 20) * US, 5, 7)],
                                        fields={"rows": 5, "cols": 7})])
    assert cast(all_pages(store, eid))[1:] == [[0.01, "o", "x"], [0.02, "r", "7x5"]]


def test_pruned_output_is_a_gap_marker_and_its_marks_go_with_it(store):
    rec = store.create_execution(new_record(rows=10, cols=40))
    eid = rec.execution_id
    for i in range(6):  # 6 × 3 KiB, 8 KiB retained
        commit(store, eid, i * 3 * KiB, bytes([97 + i]) * (3 * KiB), 100 * (i + 1))
    rec = store.get(SCOPE, eid)
    start = rec.output_retained_start
    assert start == 18 * KiB - 8 * KiB
    with store.catalog() as view:
        txn, db = view.tx.txn, view.tx.dbs["timings"]
        cur = txn.cursor(db=db)
        kept = [bytes(k) for k, _ in cur if bytes(k).startswith(bytes.fromhex(eid) + timings.ARRIVALS)]
    # Marks at 9, 12 and 15 KiB: the one at 9 KiB still dates the first retained byte.
    assert len(kept) == 3
    pages = all_pages(store, eid)
    assert pages[0].events[0] == RecordingGap(from_offset=0, to_offset=start,
                                              at_unix_us=(T0 + 400) * US)
    events = cast(pages)[1:]
    assert events[0] == [0.4, "m", gap_marker(0, start)]
    text = "".join(e[2] for e in events if e[1] == "o")
    assert text == "d" * (12 * KiB - start) + "e" * 3 * KiB + "f" * 3 * KiB
    assert [e[0] for e in events if e[1] == "o"] == [0.4, 0.5, 0.6]


def test_records_without_timings_play_at_once_after_a_marker(store):
    """The documented fallback: a record from before vigil kept timings (no size mark, no
    arrival marks) gets the record's size, null times, and a marker before its output."""
    rec = store.create_execution(new_record())  # no size: no size mark either
    eid = rec.execution_id
    commit(store, eid, 0, b"old\r\n", None)
    commit(store, eid, 5, b"output\r\n", None)
    page = read_recording_page(store, SCOPE, eid)
    assert (page.rows, page.cols, page.timed) == (50, 200, False)
    assert [e.at_unix_us for e in page.events] == [None]
    assert cast([page])[1:] == [[0, "m", UNTIMED_MARKER], [0, "o", "old\r\noutput\r\n"]]


def test_marks_are_removed_with_the_record(store):
    rec = store.create_execution(new_record(rows=10, cols=40, started=T0 - 1000))
    eid = rec.execution_id
    commit(store, eid, 0, b"x", 1)
    store.update(eid, status="exited", exit_code=0)  # running records are never evicted
    for _ in range(200):  # retention_records_per_scope is 128: the first record goes
        store.create_execution(new_record())
    assert store.get(SCOPE, eid) is None
    with store.catalog() as view:
        cur = view.tx.txn.cursor(db=view.tx.dbs["timings"])
        assert not cur.set_range(bytes.fromhex(eid)) or not bytes(cur.key()).startswith(
            bytes.fromhex(eid))


def test_a_guardian_gap_in_the_middle_is_a_marker_at_its_time(store):
    rec = store.create_execution(new_record(rows=10, cols=40))
    eid = rec.execution_id
    commit(store, eid, 0, b"before\r\n", 100)
    commit(store, eid, 20, b"after\r\n", 700)  # bytes 8..20 were lost in the guardian's ring
    pages = all_pages(store, eid)
    assert [p.end_offset for p in pages] == [8, 27]
    assert pages[1].events[0] == RecordingGap(from_offset=8, to_offset=20, at_unix_us=(T0 + 700) * US)
    assert cast(pages)[1:] == [[0.1, "o", "before\r\n"], [0.7, "m", gap_marker(8, 20)],
                               [0.7, "o", "after\r\n"]]
