"""ScreenKeeper: text rows, wide characters, split input, hostile input, queries, fidelity."""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from vigil.daemon.screen import DA1_REPLY, DA2_REPLY, DSR_REPLY, ScreenKeeper
from vigil.daemon.settings import Settings


def keeper_with(data: bytes | str, rows=5, cols=20, **kw) -> ScreenKeeper:
    k = ScreenKeeper(rows, cols, Settings(**kw)) if kw else ScreenKeeper(rows, cols)
    k.feed(data.encode() if isinstance(data, str) else data)
    drain(k)
    return k


def drain(k: ScreenKeeper, budget=10.0, backlog=1e9) -> None:
    while k.process(budget, backlog_seconds=backlog):
        pass


def lines(data, rows=5, cols=20) -> list[str]:
    return keeper_with(data, rows, cols).snapshot().lines


# --- text, wide characters ---------------------------------------------------------------------


def test_plain_lines_and_cursor():
    k = keeper_with("hello\r\nworld  \r\n$ ")
    snap = k.snapshot()
    assert snap.lines == ["hello", "world", "$", "", ""]
    assert snap.cursor == (2, 2) and snap.fidelity == "exact" and snap.rows == 5 and snap.cols == 20


def test_wide_characters_take_two_cells_and_appear_once():
    k = keeper_with("中x😀")
    assert k.snapshot().lines[0] == "中x😀"
    assert k.snapshot().cursor == (0, 5)  # 2 + 1 + 2 cells
    k.feed("\x1b[1;3HZ".encode())  # column 3 is the 'x'
    drain(k)
    assert k.snapshot().lines[0] == "中Z😀"


def test_wide_character_at_last_column_wraps_first():
    assert lines("abcd中", rows=3, cols=5)[:2] == ["abcd", "中"]


def test_zero_width_characters_join_previous_cell():
    # pyte 0.8.2 drops the rest of the run after VS16; we must not.
    assert lines("a\u2764\ufe0f love")[0] == "a\u2764\ufe0f love"
    k = keeper_with("e\u0301!")
    assert k.snapshot().lines[0] == "\u00e9!" and k.snapshot().cursor == (0, 2)


@pytest.mark.parametrize("text", ["a中😀é\r\nb", "\x1b[31m中\x1b[0m文\x1b]2;t\u00eftle\x07z"])
def test_split_at_every_byte_renders_once(text):
    data = text.encode()
    expected = keeper_with(data).snapshot()
    for i in range(len(data) + 1):
        k = ScreenKeeper(5, 20)
        k.feed(data[:i])
        drain(k)
        k.feed(data[i:])
        drain(k)
        snap = k.snapshot()
        assert (snap.lines, snap.cursor, snap.title) == (expected.lines, expected.cursor, expected.title), i
        assert "\ufffd" not in "".join(snap.lines)


def test_invalid_utf8_becomes_replacement_character():
    assert lines(b"a\xffb")[0] == "a\ufffdb"


# --- hostile and unknown sequences ---------------------------------------------------------------


@pytest.mark.parametrize(
    "seq",
    [
        "\x1b[>4;2m",  # vim's modifyOtherKeys: pyte mis-parses it
        "\x1b[<u", "\x1b[=1;1u", "\x1b[>1u", "\x1b[?u",  # kitty keyboard protocol
        "\x1b[4:3m", "\x1b[38:2::1:2:3m",  # colon sub-parameters
        "\x1b[!p", "\x1b[2 q", "\x1b[?2026$p", "\x1b[0%m",  # intermediates
        "\x1bPzz\x1b\\", "\x1bP+q436f\x1b\\", "\x1b_Gf=100;AAAA\x1b\\", "\x1b^pm\x1b\\",
        "\x1b]52;c;aGVsbG8=\x07", "\x1b]8;;http://x\x1b\\", "\x1b]133;A\x07", "\x1b]11;?\x07",
        "\x1b[5K", "\x1b[9J", "\x1b[0c", "\x1b[6n", "\x1b[22;0;0t", "\x1b%G",
        "\x1b[?4m", "\x1b[?1;2c", "\x9b", "\x1b\x1b[m",
    ],
)
def test_unknown_sequences_leave_no_garbage(seq):
    assert lines("x" + seq + "y")[0] == "xy"


@pytest.mark.parametrize(
    "seq,first",
    [
        ("\x1b[99999G", "x" + " " * 18 + "y"),  # clamped to the last column
        ("\x1b[99999999999999999999999999G", "xy"),  # above INT_MAX: ignored (tmux)
        ("\x1b[?1049h\x1b[?1049h", " y"),  # alternate screen: cleared, cursor kept
        ("\x1b#8", "y" + "E" * 19),  # DECALN fills and homes the cursor (tmux)
        ("\x1b[?3h", "y"),  # DECCOLM: no resize; tmux homes the cursor and clears
        ("\x1b(0lqk\x1b(B", "x┌─┐y"),  # DEC line drawing
        ("\x1b[1;3r\x1b[3;1H\n\n\x1b[1;1H", "y"),  # scroll region
    ],
)
def test_known_sequences(seq, first):
    assert lines("x" + seq + "y")[0] == first


@pytest.mark.parametrize("seq", ["\x1b", "\x1b[", "\x1b[1;", "\x1b]0;unterminated", "\x1bP+q"])
def test_incomplete_sequence_is_held_until_completed(seq):
    k = keeper_with("x" + seq)
    assert k.snapshot().lines[0] == "x"


def test_pyte_raising_sequence_costs_only_itself():
    k = keeper_with("ab\x1b[5Kcd\x1b[>4;2mef")
    assert k.snapshot().lines[0] == "abcdef"


def test_overlong_osc_is_discarded_to_its_terminator():
    k = ScreenKeeper(3, 20, Settings(screen_escape_max_bytes=256))
    k.feed(b"a\x1b]52;c;" + b"A" * 5000)
    drain(k)
    k.feed(b"B" * 3000 + b"\x1b")
    drain(k)
    k.feed(b"\\b")
    drain(k)
    assert k.snapshot().lines[0] == "ab"


FRAGMENTS = [
    b"\x1b", b"[", b"]", b"?", b">", b"1049", b"h", b"l", b"m", b"H", b"J", b"K", b";", b"2",
    b"\x07", b"\x1b\\", b"P", b"\r\n", b"\n", b"\t", b"\x08", b"x", "中".encode(), b"\xf0\x9f",
    b"\x98\x80", b"\x9b", b"\xff", b"38;5;300", b"r", b"S", b"T", b"c", b"6n", b"\x0e", b"\x0f",
    b"(0", b"lqk", b"\x1bc", b"\x1b[2J", b"\x1b[?25l", b"\x1b[?2004h", b"\x1b]0;t\x07", b"@",
    b"\x1b[4h", b"\x1b[99L", b"\x1b[99M", b"\x1b[3;1r", b"\x1b[?6h", b"\x1b[20h", b"\x1b[?7l",
]


def _check_invariants(k: ScreenKeeper, rows: int, cols: int) -> None:
    snap = k.snapshot()
    assert len(snap.lines) == rows
    assert 0 <= snap.cursor[0] < rows and 0 <= snap.cursor[1] < cols
    assert snap.fidelity in ("exact", "fast_forwarded")
    k.ansi()
    k.ansi(repaint=False)


@hsettings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 64))
def test_random_bytes_never_raise(data, piece):
    k = ScreenKeeper(6, 12)
    for i in range(0, len(data), piece):
        k.feed(data[i:i + piece])
        k.process(1.0, backlog_seconds=1e9)
    drain(k)
    k.take_replies()
    _check_invariants(k, 6, 12)


@hsettings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=300), st.integers(1, 16), st.integers(2, 9))
def test_random_escape_soup_never_raises(frags, piece, rows):
    data = b"".join(frags)
    k = ScreenKeeper(rows, 7)
    for i in range(0, len(data), piece):
        k.feed(data[i:i + piece])
        k.process(1.0, backlog_seconds=0.0001)  # tiny backlog: fast-forward paths too
    drain(k)
    k.resize(rows + 1, 5)
    k.feed(data)
    drain(k)
    _check_invariants(k, rows + 1, 5)


# --- modes, title, alternate screen ----------------------------------------------------------------


def test_title_modes_and_alternate_screen():
    k = keeper_with("main$ \x1b]0;one\x07\x1b]2;two\x1b\\")
    assert k.title == "two" and k.snapshot().title == "two"
    k.feed(b"\x1b[?1049h\x1b[?2004h\x1b[?25lTUI")
    drain(k)
    snap = k.snapshot()
    assert snap.alt_screen and snap.bracketed_paste and not snap.cursor_visible
    assert snap.lines[0] == "      TUI"  # 1049 keeps the cursor where it was
    k.feed(b"\x1b[?1049l\x1b[?2004l\x1b[?25h")
    drain(k)
    snap = k.snapshot()
    assert not snap.alt_screen and not snap.bracketed_paste and snap.cursor_visible
    assert snap.lines[0] == "main$" and snap.cursor == (0, 6)


def test_revision_advances_only_on_change():
    k = keeper_with("a")
    r = k.snapshot().revision
    assert k.snapshot().revision == r
    k.feed(b"\x1b[1;1H")  # cursor moves: visible change
    drain(k)
    r2 = k.revision
    assert r2 == r + 1
    k.feed(b"\x1b[31ma\x1b[0m\x1b[1;1H")  # same text, now red, same cursor
    drain(k)
    assert k.revision == r2 + 1
    assert k.snapshot().lines[0] == "a"
    k.feed(b"\x1b[1;1H")
    drain(k)
    assert k.revision == r2 + 1


def test_revisions_only_increase_across_resizes_replays_and_a_new_keeper():
    """A keeper that continues a screen (daemon restart) starts above the revision it is
    given; resizes, a skip and the replay that makes it exact again each advance it."""
    k = ScreenKeeper(5, 20, revision=41)
    seen = [k.snapshot().revision]
    assert seen == [42]
    k.resize(8, 30)
    seen.append(k.snapshot().revision)
    k.resize(5, 20)
    seen.append(k.snapshot().revision)
    flood(k, tui_frames(200, rows=5, cols=20))
    drain(k, backlog=0.0001)
    assert k.snapshot().fidelity == "fast_forwarded"
    seen.append(k.snapshot().revision)
    assert k.resync()
    drain(k)
    assert k.snapshot().fidelity == "exact"
    seen.append(k.snapshot().revision)
    assert seen == sorted(set(seen)), seen


def test_ansi_repaint_places_cursor_last():
    k = keeper_with("\x1b[1;31mred\x1b[0m plain\r\n\x1b[38;5;196mx\x1b[48;2;1;2;3my\x1b[?25l", rows=3)
    out = k.ansi()
    assert out.startswith("\x1b[0m\x1b[H\x1b[2J")
    assert "\x1b[1;1H\x1b[0;1;31mred\x1b[0m plain\x1b[0m" in out
    assert "\x1b[0;38;2;255;0;0mx\x1b[0;38;2;255;0;0;48;2;1;2;3my" in out
    assert out.endswith("\x1b[2;3H\x1b[0;38;2;255;0;0;48;2;1;2;3m\x1b[?25l")
    assert k.ansi(repaint=False) == (
        "\x1b[0;1;31mred\x1b[0m plain\x1b[0m\r\n\x1b[0;38;2;255;0;0mx\x1b[0;38;2;255;0;0;48;2;1;2;3my\x1b[0m\r\n"
    )


def test_resize_reflows_as_tmux():
    """tmux 3.3, `printf 'one\r\ntwo\r\nthree'` in a 10x3 pane resized to 4x5: history
    `one`, screen two/thre/e, cursor (2, 1) at the end of the reflowed line."""
    k = keeper_with("one\r\ntwo\r\nthree", rows=3, cols=10)
    k.resize(5, 4)
    drain(k)
    snap = k.snapshot()
    assert (snap.rows, snap.cols, snap.lines, snap.cursor) == (5, 4, ["two", "thre", "e", "", ""], (2, 1))
    assert [line.text for line in k.scrollback_tail(10).lines] == ["one"]
    k.resize(2, 4)
    snap = k.snapshot()
    assert (snap.rows, snap.lines, snap.cursor) == (2, ["thre", "e"], (1, 1))


# --- terminal queries ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query,reply",
    [(b"\x1b[c", DA1_REPLY), (b"\x1b[0c", DA1_REPLY), (b"\x1b[>c", DA2_REPLY),
     (b"\x1b[>0c", DA2_REPLY), (b"\x1b[5n", DSR_REPLY)],
)
def test_identity_queries(query, reply):
    k = ScreenKeeper(5, 20)
    k.feed(b"ab" + query + b"cd")
    assert k.take_replies() == reply
    assert k.take_replies() == b""
    assert DA1_REPLY == b"\x1b[?62;22c" and DA2_REPLY == b"\x1b[>1;10;0c" and DSR_REPLY == b"\x1b[0n"


def test_cpr_uses_position_at_the_query():
    k = ScreenKeeper(5, 20)
    k.feed(b"line\r\nab\x1b[6nMORE TEXT\r\n\r\n\x1b[6n")
    assert k.take_replies() == b"\x1b[2;3R\x1b[4;1R"
    k.feed(b"\x1b[5;20Hx\x1b[6n")  # pending wrap: xterm reports the last column
    assert k.take_replies() == b"\x1b[5;20R"


def test_query_split_across_feeds_answered_once():
    data = b"xx\x1b[>0cyy\x1b[6nzz\x1b[c"
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            k = ScreenKeeper(5, 20)
            k.feed(data[:i])
            k.feed(data[i:j])
            k.feed(data[j:])
            assert k.take_replies() == DA2_REPLY + b"\x1b[1;5R" + DA1_REPLY, (i, j)


def test_reply_buffer_is_bounded():
    k = ScreenKeeper(5, 20, Settings(screen_reply_bytes=64))
    k.feed(b"\x1b[c" * 100)
    out = k.take_replies()
    assert out == DA1_REPLY * (64 // len(DA1_REPLY))
    assert k.replies_dropped == 100 - 64 // len(DA1_REPLY)


# --- fast-forward and fidelity -----------------------------------------------------------------------


def test_yes_flood_fast_forwards_and_ends_exact():
    k = ScreenKeeper(50, 200)
    chunk = b"y\r\n" * (64 * 1024 // 3)
    total = 0
    while total < 50 * 1024 * 1024:
        for _ in range(8):
            k.feed(chunk)
            total += len(chunk)
        k.process(0.005)  # what the driver does between ingests
    k.feed(b"$ ")
    while k.process(0.005):
        pass
    snap = k.snapshot()
    assert snap.lines == ["y"] * 49 + ["$"]
    assert snap.cursor == (49, 2)
    assert snap.fidelity == "exact"
    assert k.jumps > 0 and k.skipped_bytes > 40 * 1024 * 1024
    assert k.pending_bytes == 0


def tui_frames(n_frames: int, seed: int = 7, rows: int = 20, cols: int = 60) -> bytes:
    """A full-screen program: enter the alternate screen, clear once, then redraw cells with
    cursor addressing only (no newline, no clear): no safe point after the start."""
    rnd = random.Random(seed)
    out = [b"\x1b[?1049h\x1b[H\x1b[2J"]
    for f in range(n_frames):
        for _ in range(40):
            y, x = rnd.randrange(rows), rnd.randrange(cols - 12)
            out.append(b"\x1b[%d;%dH\x1b[3%dmframe%06d" % (y + 1, x + 1, f % 8, f))
        out.append(b"\x1b[%d;1H\x1b[0mstatus %d\x1b[K" % (rows, f))
    return b"".join(out)


def reference(data: bytes, rows: int, cols: int):
    return keeper_with(data, rows, cols).snapshot()


def test_blind_jump_then_resync_is_exact():
    data = tui_frames(250)
    assert len(data) < Settings().screen_replay_bytes
    ref = reference(data, 20, 60)
    k = ScreenKeeper(20, 60)
    for i in range(0, len(data), 4096):
        k.feed(data[i:i + 4096])
        k.process(0.0005, backlog_seconds=0.001)  # tiny backlog forces blind jumps
    while k.process(1.0, backlog_seconds=0.001):
        pass
    assert k.blind_jumps > 0
    snap = k.snapshot()
    assert snap.fidelity == "fast_forwarded"
    assert k.resync() is True
    drain(k, backlog=0.001)  # a replay is not fast-forwarded again
    snap = k.snapshot()
    assert snap.fidelity == "exact"
    assert (snap.lines, snap.cursor, snap.alt_screen) == (ref.lines, ref.cursor, ref.alt_screen)
    assert k.resync() is False  # nothing to do when exact


def test_replay_too_short_stays_fast_forwarded_until_next_safe_point():
    """A 4 KiB replay covers a few frames; cells last written before it stay tainted, so
    the screen stays fast_forwarded (never a guess) until the program clears."""
    data = tui_frames(300)
    k = ScreenKeeper(20, 60, Settings(screen_replay_bytes=4096))
    for i in range(0, len(data), 4096):
        k.feed(data[i:i + 4096])
        k.process(0.0005, backlog_seconds=0.001)
    drain(k, backlog=0.001)
    assert k.snapshot().fidelity == "fast_forwarded"
    assert k.resync() is True
    drain(k, backlog=0.001)
    assert k.snapshot().fidelity == "fast_forwarded"
    k.feed(b"\x1b[H\x1b[2Jredrawn")
    drain(k)
    snap = k.snapshot()
    assert snap.fidelity == "exact" and snap.lines[0] == "redrawn" and snap.alt_screen


def test_leaving_alternate_screen_restores_exact_main_when_gap_was_inside():
    head = b"$ vim\r\n"
    data = head + tui_frames(300) + b"\x1b[?1049l$ done"
    k = ScreenKeeper(20, 60, Settings(screen_replay_bytes=0))  # no replay: rely on the rule
    k.feed(head)
    drain(k)
    body = data[len(head):]
    for i in range(0, len(body), 4096):
        k.feed(body[i:i + 4096])
        k.process(0.0005, backlog_seconds=0.001)
    drain(k, backlog=0.001)
    snap = k.snapshot()
    assert k.blind_jumps > 0 and not snap.alt_screen
    assert snap.lines[:2] == ["$ vim", "$ done"]
    assert snap.fidelity == "exact"


def test_modes_carried_across_a_skip():
    skipped = (b"\x1b]2;carried\x07\x1b[?2004h\x1b[?25l\x1b[?1049h\x1b[1;32m" + b"x" * 100 + b"\r\n") * 50
    tail = b"".join(b"line %d\r\n" % i for i in range(10))
    k = ScreenKeeper(5, 20)
    k.feed(skipped + tail)
    k.process(1.0, backlog_seconds=0.00001)
    drain(k)
    snap = k.snapshot()
    assert snap.lines == ["line 6", "line 7", "line 8", "line 9", ""]
    assert snap.title == "carried" and snap.bracketed_paste and not snap.cursor_visible
    assert snap.alt_screen and snap.fidelity == "exact" and k.jumps == 1
    assert "\x1b[0;1;32mline 6" in k.ansi(repaint=False)


_CARRIED_OPS = [b"\x1b]2;t1\x07", b"\x1b]0;t2\x1b\\", b"\x1b[?2004h", b"\x1b[?2004l", b"\x1b[?25l",
                b"\x1b[?25h", b"\x1b[4h", b"\x1b[4l", b"\x1b(0", b"\x1b(B", b"\x1b)0", b"\x1b)B",
                b"\x0e", b"\x0f", b"\x1b[1;31m", b"\x1b[m", b"\x1b[0m", b"\x1b[42m", b"\x1b[7m",
                b"\x1b[38;5;200m", b"\x1b[0;4m", b"\x1b[22m", b"\x1b[?1049h", b"\x1b[?1049l",
                b"\x1b[?7l", b"\x1b[?7h"]


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_CARRIED_OPS), st.integers(0, 3)), min_size=1, max_size=40))
def test_a_skip_to_a_safe_point_carries_what_parsing_would_leave(ops):
    """Modes, title, character sets and shift, attributes and the alternate screen, in any
    order, then complete lines: skipped to the `lines` safe point, the screen (text and
    attributes) equals the one parsed byte by byte."""
    one = b"".join(op + b"text%d\r\n" % n for op, n in ops)
    skipped = one * (4096 // len(one) + 1)  # past the smallest backlog (PARSE_CHUNK)
    tail = b"".join(b"qx line %d lqk\r\n" % i for i in range(6)) + b"end"
    data = skipped + tail
    parsed = keeper_with(data, 5, 20)
    k = ScreenKeeper(5, 20)
    k.feed(data)
    k.process(1.0, backlog_seconds=0.00001)
    drain(k)
    assert k.jumps == 1
    want, got = parsed.snapshot(), k.snapshot()
    assert got.fidelity == "exact"
    assert msgspec.structs.replace(got, revision=0) == msgspec.structs.replace(want, revision=0)
    assert k.ansi(repaint=False) == parsed.ansi(repaint=False)


def test_pending_buffer_is_bounded():
    s = Settings(screen_pending_bytes=64 * 1024)
    k = ScreenKeeper(5, 20, s)
    data = tui_frames(2000, rows=5, cols=20)
    k.feed(data)
    assert k.pending_bytes <= 64 * 1024
    assert k.snapshot().fidelity == "fast_forwarded"
    drain(k)
    k.feed(b"\x1bc\x1b[?1049hok")
    drain(k)
    snap = k.snapshot()
    assert snap.lines[0] == "ok" and snap.fidelity == "exact"


def test_snapshot_struct_is_msgspec():
    snap = keeper_with("hi").snapshot()
    assert msgspec.json.decode(msgspec.json.encode(snap))["lines"][0] == "hi"


# --- escape-sequence rules (xterm's state machine as tmux 3.3 implements it; issue 10) ----------


@pytest.mark.parametrize(
    "data,first",
    [
        ("ab\x1b[2\x08Cx", "ab x"),  # BS inside CSI runs there; then CUF 2 (VT100, tmux)
        ("ab\x1b[\x0d2Cx", "abx"),  # CR inside CSI
        ("a\x1b[3\x18b", "ab"),  # CAN aborts the sequence
        ("a\x1b[3\x1ab", "ab"),  # SUB too
        ("a\x1b[3\x1b[Cb", "a b"),  # ESC aborts it and starts the next one
        ("a\x1b[1\x7f;2Hb", "ab"),  # DEL is ignored inside (the CUP goes to row 1 col 2)
        ("\x1b[0000000001;000000003Hx", "  x"),  # leading zeros are zeros
        ("x\x1b[" + "1;" * 22 + "1Hy", "y"),  # 23 parameters: fine
        ("x\x1b[" + "1;" * 23 + "1Hy", "xy"),  # 24: ignored whole (tmux)
        ("x\x1b[" + "0" * 62 + "1Hy", "y"),  # 63 parameter characters: fine
        ("x\x1b[" + "0" * 63 + "1Hy", "xy"),  # 64: ignored whole
        ("x\x1b[2147483647Gy", "x" + " " * 18 + "y"),  # INT_MAX: clamped
        ("x\x1b[2147483648Gy", "xy"),  # above: ignored
        ("x\x1b[?1;2Hy", "xy"),  # private CUP does not exist
        ("x\x1b[1?Hy", "xy"),  # a marker after a parameter: ignored
        ("x\x1b[ 1Hy", "xy"),  # a parameter after an intermediate: ignored
    ],
)
def test_control_sequence_rules(data, first):
    assert lines(data)[0] == first


def test_nel_is_carriage_return_and_line_feed():
    assert lines("ab\x1bEcd")[:2] == ["ab", "cd"]


@pytest.mark.parametrize(
    "data,title,first",
    [
        ("\x1b]2;t\x07x", "t", "x"),  # BEL ends an OSC
        ("\x1b]2;t\x1b\\x", "t", "x"),  # so does ST
        ("\x1b]2;t\x18x", "", "x"),  # CAN aborts it (no title)
        ("\x1b]2;t\x1ax", "", "x"),  # SUB too
        ("\x1b]0;one\r\n\x1b]2;two\x07x", "two", "x"),  # ESC aborts it, the next one counts
        ("\x1b]2;a\tb\x07x", "ab", "x"),  # controls inside a string are not part of it
        ("\x1bPq#0;2;0;0;0#1!14~\x1b\\x", "", "x"),  # DCS (sixel) bodies are never drawn
        ("\x1bXsos\x07x\x1b^pm\x18y\x1b_apc\x1b[31mz", "", "xyz"),  # SOS, PM, APC
    ],
)
def test_string_rules(data, title, first):
    k = keeper_with(data)
    assert (k.title, k.snapshot().lines[0]) == (title, first)


def test_string_longer_than_the_limit_is_consumed_and_ignored():
    k = ScreenKeeper(3, 20, Settings(screen_escape_max_bytes=256))
    k.feed(b"a\x1b]2;" + b"T" * 300 + b"\x07b\x1b]2;ok\x07")
    drain(k)
    assert (k.snapshot().lines[0], k.title) == ("ab", "ok")


@pytest.mark.parametrize("piece", [1, 7, 100, 4096])
def test_overlong_sequences_split_across_feeds_draw_nothing(piece):
    data = (b"x\x1b[" + b"1;" * 10000 + b"Hy" + b"\x1b[" + b"1" * 100000 + b"mz"
            + b"\x1b]0;" + b"t" * 200_000 + b"\x1b]2;t2\x07!")
    k = ScreenKeeper(3, 20)
    for i in range(0, len(data), piece):
        k.feed(data[i:i + piece])
        drain(k)
    snap = k.snapshot()
    assert (snap.lines[0], snap.title, snap.fidelity) == ("xyz!", "t2", "exact")


# --- fidelity after skips (issue 10) -------------------------------------------------------------


def flood(k: ScreenKeeper, data: bytes, piece: int = 4096) -> None:
    """Feed `data` with a backlog so small that the keeper skips most of it."""
    for i in range(0, len(data), piece):
        k.feed(data[i:i + piece])
        k.process(0.0005, backlog_seconds=0.0001)


def test_clear_after_a_flood_carries_the_cursor():
    """`clear` is `ESC [ H ESC [ 2 J ESC [ 3 J`: the skip to the clear keeps the home."""
    k = ScreenKeeper(10, 40)
    flood(k, b"".join(b"%d\r\n" % i for i in range(100000)) + b"\x1b[H\x1b[2J\x1b[3Jafter-clear\r\n")
    drain(k, backlog=0.0001)
    snap = k.snapshot()
    assert k.jumps > 0
    assert (snap.lines[0], snap.cursor, snap.fidelity) == ("after-clear", (1, 0), "exact")


def test_a_clear_with_the_cursor_unknown_is_not_exact_until_the_cursor_is_placed():
    """A clear without a home after a skip: the clear is exact, but text written at a cursor
    the skipped bytes moved is not, until something places the cursor again."""
    k = ScreenKeeper(10, 40)
    body = b"".join(b"\x1b[%d;5Hcell %d" % (i % 10 + 1, i) for i in range(30000))
    flood(k, body + b"\x1b[5;5H" + b"y" * 5000 + b"\x1b[2Jafter")
    drain(k, backlog=0.0001)
    assert k.snapshot().fidelity == "fast_forwarded"
    k.feed(b"\x1b[3;1Hplaced")
    drain(k)
    snap = k.snapshot()
    assert snap.fidelity == "fast_forwarded"  # `after` went to an unknown place
    k.feed(b"\x1b[2J\x1b[Hfresh")
    drain(k)
    snap = k.snapshot()
    assert (snap.lines[0], snap.fidelity) == ("fresh", "exact")


def test_skipping_into_an_unterminated_string_draws_none_of_it():
    k = ScreenKeeper(10, 60, Settings(screen_pending_bytes=256 * 1024))
    data = b"\x1b]0;" + b"x" * 3_000_000 + b"\x1b]2;t2\x07visible\r\n"
    for i in range(0, len(data), 65536):
        k.feed(data[i:i + 65536])
        if i % (1 << 20) == 0:
            k.process(0.005)
    drain(k, budget=0.005, backlog=0.01)
    snap = k.snapshot()
    assert k.skipped_bytes > 0
    assert (snap.lines[:2], snap.title, snap.fidelity) == (["visible", ""], "t2", "exact")


def _segment(kind: int, n: int) -> bytes:
    """Output pieces whose order decides what each screen shows (see the property below)."""
    if kind == 0:
        return b"".join(b"line %d-%d\r\n" % (n, i) for i in range(n % 9 + 1))
    if kind == 1:
        return b"".join(b"\x1b[%d;%dH\x1b[3%dmcell%d" % (i % 6 + 1, (n + 3 * i) % 30 + 1, i % 8, n)
                        for i in range(n % 40 + 1))
    return (b"\x1b[?1049h", b"\x1b[?1049l", b"\x1b[H\x1b[2J", b"\x1b[2J", b"\x1b#8", b"\x1bc",
            b"\x1b[2;5r", b"\x1b[r", b"\x1b[?47h", b"\x1b[?47l", b"\x1b7", b"\x1b8",
            b"\x1b7\x1b[6;1H\x1b[7mstatus %d\x1b[m\x1b[K\x1b8" % n,  # a status line
            b"\x1b7\x1b[1;5H\x1b[1;4m\x1b(0qqq\x1b8",  # attributes and charset restored
            b"\x1b[%dm" % (31 + n % 7), b"\x1b[0m")[kind - 2]


@hsettings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 17), st.integers(0, 200)), min_size=1, max_size=60),
       st.integers(0, 2000))
def test_exact_is_never_a_guess(segments, cut):
    """Whatever the output and wherever the keeper is forced to skip (screen switches,
    clears, resets, margins, DECALN, saved cursors and what a restore brings back, at any
    place), a screen it calls exact equals the one parsed byte by byte, attributes included
    — before and after the quiet replay."""
    one = b"".join(_segment(kind, n) for kind, n in segments)
    data = one * (24000 // len(one) + 2) + b"\x1b[1;1Hend"  # enough to be skipped
    parsed = keeper_with(data, 6, 40)
    want = parsed.snapshot()
    k = ScreenKeeper(6, 40, Settings(screen_replay_bytes=8192))
    k.feed(data[:cut])
    drain(k)
    flood(k, data[cut:], piece=4096)
    drain(k, backlog=0.0001)
    for replayed in (False, True):
        if replayed and k.resync():
            drain(k)
        snap = k.snapshot()
        if snap.fidelity == "exact":
            assert (snap.lines, snap.cursor, snap.alt_screen) == (want.lines, want.cursor, want.alt_screen), \
                f"exact but wrong (replayed={replayed})"
            assert k.ansi(repaint=False) == parsed.ansi(repaint=False), f"attributes (replayed={replayed})"
