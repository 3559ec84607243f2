"""Output and screen pages: UTF-8 boundaries, gaps, has_more, page sizes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.unit.test_store_support import FakeClock, new_record, open_store
from vigil.daemon.store import (
    CursorFields,
    encode_cursor,
    scope_hash,
    ExecutionUpdate,
    InvalidArgument,
    StoredScreen,
    Store,
    read_output_page,
    read_screen_page,
)
from vigil.daemon.store.utf8 import safe_cut
from vigil.protocol.api.execution import Gap
from vigil.daemon.settings import Settings

SCOPE = "local\0t1\0/w"
KiB = 1024


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path, FakeClock(), output_chunk_bytes=4 * KiB)
    yield s
    s.check_invariants()
    s.close()


def _all_pages(store, eid, page_bytes, cursor=None):
    pages = []
    while True:
        page = read_output_page(store, SCOPE, eid, cursor, page_bytes)
        pages.append(page)
        cursor = page.next_cursor
        if not page.has_more or page.end_offset == page.start_offset:
            return pages


def _write(store, rec, appends, status=None):
    fields = {"status": status, "exit_code": 0} if status == "exited" else {}
    store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=appends, fields=fields)])


# --- UTF-8 boundaries ---------------------------------------------------------------------------


def test_safe_cut_examples():
    euro = "€".encode()  # e2 82 ac
    assert safe_cut(b"ab" + euro, 5) == 5
    assert safe_cut(b"ab" + euro, 4) == 2
    assert safe_cut(b"ab" + euro, 3) == 2
    assert safe_cut(b"\xf0\x9f\x98\x80", 3) == 0  # only an incomplete character: caller decides
    assert safe_cut(b"\x80\x80\x80\x80", 4) == 4  # lone continuation bytes: no lead, cut as is
    assert safe_cut(b"a\xff", 2) == 2  # invalid lead: a character of its own


def test_every_split_position_around_a_chunk_boundary(store):
    """A 1-, 2-, 3- and 4-byte character at every position across the 4 KiB chunk boundary,
    read with every page size from 4 to 12: pages concatenate to the text, and no page
    ends inside a character (no U+FFFD anywhere)."""
    for char in ("a", "é", "€", "😀"):
        for shift in range(4):
            rec = store.create_execution(new_record())
            text = "x" * (4 * KiB - shift - 8) + char * 6 + "y" * 5
            data = text.encode()
            _write(store, rec, [(0, data[:3000])])
            _write(store, rec, [(3000, data[3000:])], status="exited")  # extends the last chunk
            start = 4 * KiB - 40  # an 'x': read from just before the chunk boundary
            for page_bytes in range(4, 13):
                pages = _all_pages(store, rec.execution_id, page_bytes, cursor=_cursor_at(store, rec, start))
                assert "".join(p.text for p in pages) == text[start:]
                for p in pages:
                    assert "\ufffd" not in p.text and 0 < p.end_offset - p.start_offset <= page_bytes
            break_offsets = [p.end_offset for p in _all_pages(store, rec.execution_id, 4096 + shift)]
            assert break_offsets[-1] == len(data)


def _cursor_at(store, rec, offset):
    """A genuine cursor at `offset`, as the store would issue it (tests only)."""
    return encode_cursor(
        store.mac_key,
        CursorFields(kind="page", scope=scope_hash(SCOPE), store_epoch=store.store_epoch,
                     execution_id=bytes.fromhex(rec.execution_id), source="output", offset=offset),
    )


_tmp = None


def _shared_store() -> Store:
    """One store for all hypothesis examples (a fresh execution per example)."""
    global _tmp
    if _tmp is None:
        _tmp = Path(tempfile.mkdtemp(prefix="vigil-store-pages-"))
    return Store.open(_tmp / "state", Settings(store_initial_map_bytes=64 << 20, output_chunk_bytes=4 * KiB), FakeClock())


def teardown_module(module):
    if _tmp is not None:
        shutil.rmtree(_tmp, ignore_errors=True)


_streams = st.one_of(
    st.text(min_size=0, max_size=3000).map(lambda t: t.encode()),
    st.binary(min_size=0, max_size=3000),
    st.lists(st.sampled_from([b"a", "é".encode(), "€".encode(), "😀".encode(), b"\xff", b"\x80", b"\xe2\x82", b"\xf0"]),
             max_size=1500).map(b"".join),
).map(lambda b: b * (1 + 9000 // len(b)) if b else b)  # 9-12 KiB: crosses 4 KiB chunks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=_streams, cut=st.integers(0, 100_000), page_bytes=st.one_of(st.integers(4, 16), st.integers(4, 5000)))
def test_pages_decode_like_the_whole_stream(data, cut, page_bytes):
    """Any bytes, split into two batches anywhere, read with any page size: the pages
    concatenate to exactly `data.decode('utf-8', 'replace')`, each page within its size and
    making progress; while running, valid text is never cut inside a character."""
    store = _shared_store()
    try:
        rec = store.create_execution(new_record())
        cut = cut % (len(data) + 1)
        _write(store, rec, [(0, data[:cut])])
        if data[cut:]:
            _write(store, rec, [(cut, data[cut:])])
        running = _all_pages(store, rec.execution_id, page_bytes)
        text = "".join(p.text for p in running)
        whole = data.decode("utf-8", "replace")
        assert whole.startswith(text)  # all but an incomplete last character, held back
        assert len(data) - running[-1].end_offset <= 3
        assert running[-1].has_more  # running: more may come
        _write(store, rec, [], status="exited")
        pages = _all_pages(store, rec.execution_id, page_bytes)
        assert "".join(p.text for p in pages) == whole
        assert pages[-1].end_offset == len(data) and not pages[-1].has_more
        for p in pages[:-1] if len(pages) > 1 else []:
            assert 0 < p.end_offset - p.start_offset <= page_bytes
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            assert all("\ufffd" not in p.text or "\ufffd" in whole for p in running)
    finally:
        store.close()


# --- an incomplete character at the end ------------------------------------------------------------


def test_incomplete_character_is_held_back_while_running(store):
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"a\xe2\x82")])
    page = read_output_page(store, SCOPE, rec.execution_id)
    assert (page.text, page.start_offset, page.end_offset, page.has_more) == ("a", 0, 1, True)
    again = read_output_page(store, SCOPE, rec.execution_id, page.next_cursor)
    assert (again.text, again.end_offset, again.has_more) == ("", 1, True)  # waiting for the rest
    _write(store, rec, [(3, b"\xac!")])
    rest = read_output_page(store, SCOPE, rec.execution_id, page.next_cursor)
    assert (rest.text, rest.end_offset) == ("€!", 5)


def test_incomplete_character_at_the_end_of_a_finished_execution_is_replaced(store):
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"a\xe2\x82")], status="exited")
    page = read_output_page(store, SCOPE, rec.execution_id)
    assert (page.text, page.end_offset, page.has_more) == ("a\ufffd", 3, False)


def test_output_pending_keeps_has_more_after_exit(store):
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"abc")], status="exited")
    page = read_output_page(store, SCOPE, rec.execution_id, pending=True)
    assert (page.text, page.has_more) == ("abc", True)
    assert read_output_page(store, SCOPE, rec.execution_id).has_more is False


# --- gaps ------------------------------------------------------------------------------------------


def test_guardian_gap_is_reported_with_exact_numbers(store):
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"abc"), (10, b"def")], status="exited")
    first = read_output_page(store, SCOPE, rec.execution_id, None, 100)
    assert (first.text, first.start_offset, first.end_offset, first.gap, first.has_more) == ("abc", 0, 3, None, True)
    second = read_output_page(store, SCOPE, rec.execution_id, first.next_cursor, 100)
    assert second.gap == Gap(bytes_skipped=7, from_offset=3, to_offset=10)
    assert (second.text, second.start_offset, second.end_offset, second.has_more) == ("def", 10, 13, False)


def test_a_pruned_cursor_moves_forward_and_reports_the_gap(tmp_path):
    store = open_store(tmp_path, FakeClock(), retention_output_bytes=8 * KiB, output_chunk_bytes=4 * KiB)
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"0123456789" * 10)])
    page = read_output_page(store, SCOPE, rec.execution_id, None, 50)
    assert page.end_offset == 50
    _write(store, rec, [(100, b"z" * 20_000)])  # 20,100 produced, the last 8,192 kept
    got = read_output_page(store, SCOPE, rec.execution_id, page.next_cursor, 64)
    assert got.gap == Gap(bytes_skipped=20_100 - 8192 - 50, from_offset=50, to_offset=20_100 - 8192)
    assert (got.start_offset, got.end_offset, got.text) == (20_100 - 8192, 20_100 - 8192 + 64, "z" * 64)
    # Without a cursor the page starts at the oldest retained byte, reporting what is gone.
    fresh = read_output_page(store, SCOPE, rec.execution_id, None, 64)
    assert fresh.gap == Gap(bytes_skipped=20_100 - 8192, from_offset=0, to_offset=20_100 - 8192)
    store.check_invariants()
    store.close()


def test_all_output_pruned_gives_an_empty_page_with_the_gap(tmp_path):
    store = open_store(tmp_path, FakeClock(), retention_scope_bytes=64 * KiB)
    done = store.create_execution(new_record())
    _write(store, done, [(0, b"d" * 1000)], status="exited")
    active = store.create_execution(new_record())
    _write(store, active, [(0, b"a" * 64 * KiB)])  # the terminal record's output pays
    page = read_output_page(store, SCOPE, done.execution_id)
    assert (page.text, page.start_offset, page.end_offset, page.has_more) == ("", 1000, 1000, False)
    assert page.gap == Gap(bytes_skipped=1000, from_offset=0, to_offset=1000)
    store.close()


# --- sizes and has_more ---------------------------------------------------------------------------


def test_page_sizes_default_and_limits(store):
    rec = store.create_execution(new_record())
    _write(store, rec, [(0, b"q" * 100_000)])
    assert read_output_page(store, SCOPE, rec.execution_id).end_offset == 16 * KiB
    assert read_output_page(store, SCOPE, rec.execution_id, None, 64 * KiB).end_offset == 64 * KiB
    for bad in (0, 3, 64 * KiB + 1, True, 2.5):
        with pytest.raises(InvalidArgument) as info:
            read_output_page(store, SCOPE, rec.execution_id, None, bad)
        assert info.value.message == "page_bytes must be between 4 and 65536"


def test_has_more_while_running_even_at_the_end(store):
    rec = store.create_execution(new_record())
    page = read_output_page(store, SCOPE, rec.execution_id)
    assert (page.text, page.start_offset, page.end_offset, page.has_more, page.gap) == ("", 0, 0, True, None)
    _write(store, rec, [(0, b"hi")])
    page = read_output_page(store, SCOPE, rec.execution_id, page.next_cursor)
    assert (page.text, page.has_more) == ("hi", True)
    store.update(rec.execution_id, status="exited", exit_code=0)
    page = read_output_page(store, SCOPE, rec.execution_id, page.next_cursor)
    assert (page.text, page.start_offset, page.has_more) == ("", 2, False)


def test_observe_style_reads_share_one_view(store):
    a = store.create_execution(new_record())
    _write(store, a, [(0, b"alpha")])
    with store.catalog() as view:
        rec = view.get(SCOPE, a.execution_id)
        page = read_output_page(view, SCOPE, a.execution_id, None, 4)
        assert (rec.output_total_bytes, page.text) == (5, "alph")


# --- screen pages ----------------------------------------------------------------------------------


def test_screen_pages_and_resync(store):
    rec = store.create_execution(new_record())
    shot = StoredScreen(snapshot=0, text="héllo\nwörld", rows=2, cols=5, fidelity="exact")
    store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, screen=shot)])
    first = read_screen_page(store, SCOPE, rec.execution_id, None, 5)
    assert (first.text, first.snapshot, first.has_more, first.resync_required) == ("héll", 1, True, False)
    rest = read_screen_page(store, SCOPE, rec.execution_id, first.next_cursor, 100)
    assert (rest.text, rest.has_more, rest.resync_required) == ("o\nwörld", False, False)
    store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, screen=msgspec.structs.replace(shot, text="new"))])
    again = read_screen_page(store, SCOPE, rec.execution_id, first.next_cursor, 100)
    assert (again.text, again.snapshot, again.resync_required, again.start_offset) == ("new", 2, True, 0)


def test_screen_page_without_a_screen(store):
    rec = store.create_execution(new_record())
    page = read_screen_page(store, SCOPE, rec.execution_id)
    assert (page.text, page.snapshot, page.has_more, page.fidelity) == ("", 0, False, "")
