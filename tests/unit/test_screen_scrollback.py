"""Scrollback as the keeper keeps it: what goes in (tmux's rules), numbering, bounds, flags."""

from __future__ import annotations

from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.settings import Settings

from .test_screen_keeper import drain


def fed(data: bytes, rows=3, cols=10, **settings) -> ScreenKeeper:
    k = ScreenKeeper(rows, cols, Settings(**settings)) if settings else ScreenKeeper(rows, cols)
    k.feed(data)
    drain(k)
    return k


def texts(k: ScreenKeeper, n=1000) -> list[str]:
    return [line.text for line in k.scrollback_tail(n).lines]


def test_rows_scrolled_off_the_top_in_order_with_absolute_numbers():
    k = fed(b"".join(b"L%d\r\n" % i for i in range(10)))
    page = k.scrollback_lines(0, 100)
    assert [line.text for line in page.lines] == [f"L{i}" for i in range(8)]
    assert (page.first_number, page.first_kept, page.total, page.epoch) == (0, 0, 8, 0)
    assert [line.text for line in k.scrollback_lines(5, 2).lines] == ["L5", "L6"]
    assert k.snapshot().lines == ["L8", "L9", ""]


def test_limit_drops_the_oldest_and_numbers_stay():
    k = fed(b"".join(b"L%d\r\n" % i for i in range(10)), screen_scrollback_lines=3)
    page = k.scrollback_lines(0, 100)
    assert (page.first_number, page.first_kept, page.total) == (5, 5, 8)
    assert [line.text for line in page.lines] == ["L5", "L6", "L7"]


def test_clear_scrolls_used_rows_into_history_and_ed3_empties_it():
    """tmux's scroll-on-clear: `ESC [ 2 J` moves the used rows into the history first;
    `ESC [ 3 J` clears the history (`clear` sends both)."""
    k = fed(b"a\r\nb\r\n\x1b[2J")
    assert texts(k) == ["a", "b"]
    k.feed(b"\x1b[3J")
    drain(k)
    page = k.scrollback_tail(10)
    assert (page.lines, page.total, page.first_kept, page.epoch) == ([], 2, 2, 1)


def test_rows_that_scroll_away_after_ed3_in_the_same_read_are_the_new_history():
    """`ESC [ 3 J` empties what scrolled away before it, not what scrolls away after it in
    the same chunk (the keeper parses both in one slice)."""
    k = fed(b"A\r\nB\r\nC\r\nD\r\n\x1b[3JE\r\nF\r\n")
    assert texts(k) == ["C", "D"]
    assert k.scrollback.take_rewrite() == 0  # everything numbered before changed meaning
    assert k.scrollback.take_rewrite() is None


def test_alternate_screen_never_feeds_the_history():
    k = fed(b"main\r\n\x1b[?1049h" + b"".join(b"alt%d\r\n" % i for i in range(10)) + b"\x1b[2J\x1b[?1049l")
    assert texts(k) == []
    assert k.snapshot().lines[0] == "main"


def test_lines_streamed_through_the_alternate_screen_never_reach_the_history():
    """Whole lines arriving in one read scroll through by the parser's fast line path; on
    the alternate screen they must not reach the history either (it fed them once the main
    screen had scrolled: seen through the daemon under load, when the switch and the lines
    came in separate reads)."""
    k = fed(b"a\r\nb\r\nc\r\nd\r\n\x1b[?1049h")
    k.feed(b"".join(b"%d\r\n" % i for i in range(1000, 1041)))
    drain(k)
    assert texts(k) == ["a", "b"]


def test_a_scroll_region_on_the_main_screen_pushes_its_top_row():
    """tmux moves the region's top row into the history whatever the region (and SU too)."""
    k = fed(b"top\r\n\x1b[2;3r\x1b[2;1Hr1\r\nr2\r\nr3\r\n\x1b[S", rows=3)
    assert texts(k) == ["r1", "r2", "r3"]
    assert k.snapshot().lines == ["top", "", ""]


def test_attributes_and_wrapping_are_kept():
    k = fed(b"\x1b[1;31mred\x1b[0m plain\r\n" + b"w" * 25 + b"\r\nx\r\ny\r\nz\r\n", cols=10)
    lines = k.scrollback_tail(10).lines
    assert [(line.text, line.wrapped) for line in lines] == [
        ("red plain", False), ("w" * 10, True), ("w" * 10, True), ("wwwww", False), ("x", False)]
    assert lines[0].ansi == "\x1b[0;1;31mred\x1b[0m plain\x1b[0m"
    assert lines[1].ansi is None and not any(line.fast_forwarded for line in lines)


def test_lines_skipped_by_a_fast_forward_are_plain_and_marked():
    k = ScreenKeeper(5, 20)
    data = b"".join(b"\x1b[32mline %d\x1b[0m\r\n" % i for i in range(50000))
    for i in range(0, len(data), 65536):
        k.feed(data[i:i + 65536])
        k.process(0.001, backlog_seconds=0.0001)
    drain(k)
    page = k.scrollback_tail(10000)
    # Every kept line is the line of its number (lines skipped where later ones would push
    # them out anyway are counted, and then the kept lines start after them).
    assert page.total == 50000 - 4 and len(page.lines) > 5000
    assert [line.text for line in page.lines] == [f"line {i}" for i in range(page.first_number, 50000 - 4)]
    assert k.skipped_bytes > 0
    assert any(line.fast_forwarded and line.ansi is None for line in page.lines)
    assert not page.lines[-1].fast_forwarded and page.lines[-1].ansi == "\x1b[0;32mline 49995\x1b[0m"


def test_a_replay_renumbers_the_history_it_replays_without_duplicates():
    """Skipped frames leave the history inexact (the rows the skip pushed were stale); the
    replay to exact replaces the lines from its checkpoint on with the exact ones — the
    same history as a keeper that parsed every byte — and says so with a new epoch."""
    frames = b"".join(b"\x1b[%d;1Hframe %d" % (i % 5 + 1, i) for i in range(20000))
    data = b"".join(b"log %d\r\n" % i for i in range(20)) + frames + b"\x1b[5;1H\r\nend\r\n"
    reference = fed(data, rows=5, cols=30)
    k = ScreenKeeper(5, 30)
    for i in range(0, len(data), 4096):
        k.feed(data[i:i + 4096])
        k.process(0.0005, backlog_seconds=0.001)
    drain(k, backlog=0.001)
    epoch = k.scrollback_tail(0).epoch
    assert k.skipped_bytes > 0 and k.resync() is True
    drain(k, backlog=0.001)
    after = k.scrollback_tail(1000)
    assert k.snapshot().fidelity == "exact"
    assert [line.text for line in after.lines] == texts(reference) == [f"log {i}" for i in range(16)] + [
        "frame 19995", "frame 19996"]
    assert after.total == 18 and after.epoch > epoch
