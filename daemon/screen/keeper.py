"""ScreenKeeper: one terminal's screen and scrollback, kept under a CPU budget (sync, sans-IO).

pyte-speed parsing (~3 MiB/s here) must never sit between the child and the store, which
moves ~100 MiB/s. So `feed` only appends raw bytes to a bounded pending buffer (and scans
them for terminal queries, C speed); `process(budget)` parses pending bytes for at most
`budget` seconds; when the backlog is more than `backlog_seconds` of parsing, it skips
("fast-forwards") bytes instead, at C speed.

Cost (no output, however hostile, holds the caller for more than a few milliseconds)
---------------------------------------------------------------------------------------
- Parsing goes by chunks of `PARSE_CHUNK` bytes with a clock check between chunks.
- A control function costs at most O(rows + columns) interpreted steps (vtscreen.py), but
  `ESC # 8` or `CSI 2 J` on a 1000×1000 screen still copies a million cells: the parser
  counts that work and stops after `WORK_PER_FEED` units, keeping the rest of its chunk, so
  even a chunk made only of such sequences is cut into pieces with a clock check between.
  Slow sequences lower the measured parse rate, so a flood of them is skipped sooner.
- Skipping goes by pieces of at most `SKIP_PIECE` bytes, also with a clock check between,
  its interpreted work bounded per distinct sequence (fastforward.py).
- Rendering a snapshot re-renders only rows whose cells changed (C-level join per row).
`tests/bench/bench_screen.py` measures the longest hold (target ≤ 20 ms).

Fidelity (the precise rule)
---------------------------
The screen is "exact" when it provably equals what a terminal fed every byte would show:
no visible cell is tainted and the cursor position is known (vtscreen.py). Skipping bytes
taints exactly what they may have changed:

- A skip that ends at a safe point (reset, clear, DECALN, `rows` complete lines:
  fastforward.py) supersedes the screen: nothing is tainted once the bytes after the
  safe point are parsed, because those rebuild every visible cell; until then the screen is
  "provisional" (reported fast_forwarded). A main screen those bytes drew on and left
  hidden behind the alternate screen is tainted (it shows again on leaving). A screen
  switch is a restart point only: the bytes before it are footprinted as below (the
  switch redraws nothing, and is a no-op on the screen already shown).
- Any other skip taints the cells its bytes may have written — its footprint, when they are
  plain cursor-addressed output, else every cell of every buffer they touched — and makes
  the cursor unknown unless an absolute positioning is the last thing that moved it.
- Modes, the title, the scroll region, the character sets and the attributes are carried
  across every skip exactly (fastforward.Carry); if the attributes cannot be (more than 512
  distinct SGR sequences), cells drawn with them are tainted until an SGR reset.
- Parsing writes clear the taint of the cells they write (with known attributes at a known
  cursor). A full clear, a reset, DECALN, entering the alternate screen clear everything.
- More than `screen_pending_bytes` unparsed: the head of the pending buffer is skipped at
  once, at feed time, by the same rules (a piece at a time, so a read pays milliseconds).

Exact again after quiet, whatever the flood
-------------------------------------------
- Once output is idle (`process(idle=True)`, the driver's `screen_idle_seconds`), a skip
  with no safe point near leaves half of `screen_replay_bytes` to parse instead of the
  backlog — about a TUI's redraw cycle, which parsing makes exact at once.
- Otherwise, *checkpoints*: a copy of the screen state (rows are shared, copy-on-write) at
  a parsed or skipped position plus every raw byte fed since, at most
  `screen_replay_bytes`, one every eighth of that (up to ten). Once output has been quiet
  for `screen_quiet_exact_seconds` the driver calls `resync()`, which considers them newest
  first (the shortest replay): one whose bytes cannot write every cell tainted in it
  (their footprint, C speed) is passed over; the chosen one is replayed, without skipping,
  into a screen of its own that replaces the shown one only if it comes out exact. Every
  cell the replayed bytes write is exact again, so a flood that redraws its cells within
  `screen_replay_bytes` ends exact. What is still tainted stays "fast_forwarded" until the
  program writes it again; never a guess.

Scrollback: rows leaving the top of the main screen go to `scrollback` (scrollback.py) as
tmux moves them into its history; lines skipped by a fast-forward are rendered by the fast
plain path and marked fast_forwarded. `scrollback_lines(start, count)` reads them by
absolute line number.

Queries: DA1/DA2/DSR are answered at feed time from the raw bytes; CPR needs the cursor, so
the keeper parses everything before the query right then (within the backlog bound, by
fast-forwarding if needed). Answers wait in `take_replies()`; the daemon sends them to the
child only when no human terminal is attached (a human terminal answers by itself).

Nothing here raises on any input: the parser is total and screen errors are contained.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import dataclass
from operator import attrgetter

from vigil.daemon.settings import DEFAULTS, Settings

from . import render
from .fastforward import (
    MOTION,
    Carry,
    Footprint,
    FootprintCache,
    blind_point,
    follow_lines,
    footprint,
    last_safe_point,
    lines_break,
    main_touched,
    newline_before,
    plain_lines,
    plain_rows_known,
    safe_point_length,
    scan_carry,
    string_body_end,
    unterminated_string,
)
from .parser import Parser, _sgr_params
from .resize import resize_alternate, resize_main
from .queries import DA1_REPLY, DA2_REPLY, DSR_REPLY, Query, QueryScanner, cpr_reply
from .scrollback import Scrollback, ScrollbackPage
from .snapshot import ScreenSnapshot
from .vtscreen import BLANK, DEC_GRAPHICS, LATIN1, SavedCursor, VtScreen, blank_row, row_used

#: Bytes parsed between two clock checks. At the measured 0.3-3 MiB/s 2 KiB is 0.7-7 ms.
PARSE_CHUNK = 2048
#: Screen work units (about one cell copied each, vtscreen.py) one parser call may do before
#: it stops and keeps the rest of its chunk: ~1-2 ms of list copying here.
WORK_PER_FEED = 400_000
#: Bytes skipped between two clock checks while fast-forwarding (~3-6 ms of C-speed scans).
SKIP_PIECE = 128 * 1024
#: Bytes skipped at feed time past `screen_pending_bytes`, beyond the overflow itself: small,
#: as the ingest pays for it (a footprint's first sight of each position costs ~1 µs).
DROP_PIECE = 32 * 1024
#: Skipped lines rendered for the scrollback per skip piece (~2-4 ms of the fast plain path).
HISTORY_LINES_PER_PIECE = 2000
#: Styled scrollback rows given their ANSI rendering per idle slice.
COMPACT_PER_SLICE = 256

#: First estimate of the parse rate before any measurement (bytes per second): DESIGN.md's
#: lowest pyte figure, 0.27 MiB/s. Updated from real timings after every slice.
INITIAL_RATE = 256 * 1024
#: Bounds of the measured rate, so one odd timing (a GC pause, a suspended VM) cannot make the
#: keeper skip everything or nothing: 16 KiB/s .. 64 MiB/s.
_RATE_MIN, _RATE_MAX = 16 * 1024, 64 * 1024 * 1024

#: Longest cursor position report: rows and columns are at most 1000 (Settings ranges).
_CPR_MAX = len(cpr_reply(9999, 9999))
_TAINT = attrgetter("taint")
#: Safe points whose skipped bytes are footprinted like a blind skip's: switching screens
#: redraws nothing (and is a no-op on the screen already shown), so what the bytes drew
#: before the switch stays on one of the two screens.
_FOOTPRINTED = (None, "alt", "leave")


def _new_decoder():
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


@dataclass
class _Checkpoint:
    screen: dict
    parser: tuple
    decoder: tuple
    scrollback_total: int
    start: int  #: where its bytes (every raw byte fed after it) begin in the keeper's `_Fed`


class _Fed:
    """The raw bytes fed since the oldest checkpoint, kept once: each checkpoint holds where
    its own begin. (A copy per checkpoint copied every byte of a flood into up to ten of
    them.) Positions count every byte ever fed; `end` is the next one."""

    def __init__(self) -> None:
        self.bytes = bytearray()
        self.start = self.end = 0

    def add(self, data: bytes, *, keep: bool) -> None:
        self.end += len(data)
        if keep:
            self.bytes += data

    def since(self, position: int) -> bytes:
        return bytes(self.bytes[position - self.start:])

    def restart(self, tail: bytes | bytearray) -> None:
        """Keep only `tail`, the last bytes fed (a first checkpoint's)."""
        self.bytes = bytearray(tail)
        self.start = self.end - len(tail)

    def forget_before(self, position: int) -> None:
        """No checkpoint begins before `position` any more. The bytes before it go once
        they are half the buffer: dropping a bytearray's head is cheap, but its next growth
        then moves the rest, so every read would move the whole tail."""
        if position - self.start > len(self.bytes) // 2:
            del self.bytes[:position - self.start]
            self.start = position


class _Replay:
    """A replay from a checkpoint into a screen of its own, so that what is shown stays the
    latest screen (not an older moment of the replay) until the replay is done."""

    def __init__(self, cp: _Checkpoint, data: bytes, settings: Settings, rows: int, cols: int):
        self.checkpoint = cp
        self.screen = VtScreen(cols, rows)
        self.screen.restore_state(cp.screen)
        self.parser = Parser(self.screen, escape_max=settings.screen_escape_max_bytes,
                             work_limit=WORK_PER_FEED)
        self.parser.state = cp.parser
        self.decoder = _new_decoder()
        self.decoder.setstate(cp.decoder)
        self.data = memoryview(data)
        self.pos = 0

    def process(self, deadline: float) -> bool:
        """Parse on; True when every byte of the checkpoint is parsed."""
        data, parser = self.data, self.parser
        while self.pos < len(data) or parser.backlog:
            if parser.backlog:
                parser.feed("")
            else:
                chunk = bytes(data[self.pos:self.pos + PARSE_CHUNK])
                self.pos += len(chunk)
                parser.feed(self.decoder.decode(chunk))
            if time.perf_counter() >= deadline:
                return not (self.pos < len(data) or parser.backlog)
        return True


class ScreenKeeper:
    """The screen of one terminal. Not thread-safe: one owner calls every method.

    Args:
        rows, cols: terminal size (the PTY's).
        settings: limits (`screen_*` fields).
        revision: the first snapshot's revision is `revision + 1` (a keeper that continues
            an execution's screen after a daemon restart passes the last one it reported,
            so revisions keep increasing).
    """

    def __init__(self, rows: int, cols: int, settings: Settings = DEFAULTS, *, revision: int = 0):
        self._settings = settings
        self._screen = VtScreen(cols, rows)
        self._parser = Parser(self._screen, escape_max=settings.screen_escape_max_bytes,
                              work_limit=WORK_PER_FEED)
        self._decoder = _new_decoder()
        self._pending = bytearray()
        #: Line feeds in `_pending` (kept as bytes come and go: counting them in a full
        #: buffer at every skip piece would cost milliseconds).
        self._pending_lines = 0
        self._queries = QueryScanner()
        self._replies = bytearray()
        self._rate = float(INITIAL_RATE)
        self._checkpoints: list[_Checkpoint] = []
        self._fed = _Fed()
        #: The replay in progress, the checkpoints not considered yet (newest first), and
        #: the footprint of the bytes after the last one considered (see `resync`).
        self._replay: _Replay | None = None
        self._choosing: list[_Checkpoint] = []
        self._cover = Footprint()
        self._cover_end = self._cover_cut = 0
        #: Skipping toward a safe point not reached yet: the screen is not meaningful.
        self._provisional: str | None = None
        #: [bytes still to skip, safe point kind or None] while a skip spans several calls.
        self._skip_target: list | None = None
        #: `fed_bytes` when `_fast_forward` last found nothing to skip to.
        self._nothing_to_skip = -1
        #: Text of the cursor's row before a skip: the start of the first skipped line.
        self._first_prefix = ""
        self._footprints = FootprintCache()
        self.scrollback = Scrollback(settings.screen_scrollback_lines)
        #: Counters, for status, tests and benchmarks.
        self.fed_bytes = 0
        self.parsed_bytes = 0
        self.skipped_bytes = 0
        self.jumps = 0
        self.blind_jumps = 0
        self.replies_dropped = 0
        self.resyncs = 0
        self.checkpoints_taken = 0
        #: Longest single `process` call so far (seconds), for the stall benchmark.
        self.longest_process = 0.0
        # Render cache: id(row) → (row, copy of its cells, text); see _refresh.
        self._row_cache: dict[int, tuple] = {}
        self._texts: list[str] = [""] * rows
        self._row_tuples: list[tuple] = []
        self._ids: list[int] = []
        self._changes = -1
        self._meta: tuple | None = None
        self._revision = revision

    # --- input -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take raw output bytes. Cheap (a copy and a C-speed scan), except that a cursor
        position query parses the backlog before it (bounded by `screen_backlog_seconds`)."""
        if not data:
            return
        self.fed_bytes += len(data)
        self._replay = None  # new output: the replay would be behind it
        self._choosing = []
        found = self._queries.scan(data)
        if not found:
            self._append(data)
            return
        start = 0
        for kind, end in found:
            self._append(data[start:end])
            start = end
            self._answer(kind)
        self._append(data[start:])

    def _append(self, data: bytes) -> None:
        if not data:
            return
        self._pending += data
        self._pending_lines += data.count(b"\n")
        cps = self._checkpoints
        fed = self._fed
        fed.add(data, keep=bool(cps))
        if cps and fed.end - cps[0].start > self._settings.screen_replay_bytes:
            self._keep_checkpoints([cp for cp in cps if fed.end - cp.start <= self._settings.screen_replay_bytes])
        limit = self._settings.screen_pending_bytes
        if len(self._pending) > limit:
            self._drop_head(len(self._pending) - limit + min(limit // 4, DROP_PIECE))

    def _drop_head(self, at_least: int) -> None:
        """Skip the head of the pending buffer now, as the fast-forward would (toward the
        safe point it is heading for, else blind: the cells the bytes wrote are tainted):
        the overflow and `DROP_PIECE` more, so that a flood pays this about once a read,
        each time a few milliseconds of the ingest's time, never the whole buffer."""
        cut = blind_point(self._pending, at_least)
        while cut > 0:
            target = self._skip_target
            if target is None:
                self._skip(cut, footprinted=True)
                return
            n = min(cut, target[0])
            self._skip(n, footprinted=target[1] in _FOOTPRINTED)
            target[0] -= n
            cut -= n
            if target[0] == 0:
                self._skip_target = None
                if target[1] is not None:
                    self._arrive(target[1])

    def _answer(self, kind: Query) -> None:
        if kind is Query.CPR:
            reply = None
            if len(self._replies) + _CPR_MAX <= self._settings.screen_reply_bytes:
                self.catch_up()
                s = self._screen
                row = s.cursor.y + 1
                if s.origin:
                    row -= s.top
                reply = cpr_reply(row, min(s.cursor.x, s.columns - 1) + 1)
        else:
            reply = {Query.DA1: DA1_REPLY, Query.DA2: DA2_REPLY, Query.DSR: DSR_REPLY}[kind]
        if reply is None or len(self._replies) + len(reply) > self._settings.screen_reply_bytes:
            self.replies_dropped += 1
            return
        self._replies += reply

    def catch_up(self) -> None:
        """Parse everything pending now (fast-forwarding a backlog beyond
        `screen_backlog_seconds`, so this is bounded): for a snapshot that must include every
        byte received so far (an attach's repaint, a prompt's readiness, the final screen)."""
        while self.process(float("inf")):
            pass

    def take_replies(self) -> bytes:
        """Answers to terminal queries seen so far, in order; empties the buffer."""
        out = bytes(self._replies)
        self._replies.clear()
        return out

    # --- parsing -----------------------------------------------------------------------------

    @property
    def pending_bytes(self) -> int:
        """Bytes fed but not yet parsed (or skipped). An incomplete sequence waiting for the
        rest of it is not counted: there is nothing to do with it until more comes."""
        parser = self._parser
        return len(self._pending) + (len(parser.pending) if parser.backlog else 0)

    def process(self, budget_seconds: float, *, backlog_seconds: float | None = None,
                idle: bool = False) -> bool:
        """Parse pending bytes for at most about `budget_seconds` (one chunk may overrun by a
        couple of milliseconds).

        Fast-forwards first when the backlog would take more than `backlog_seconds` (default
        `screen_backlog_seconds`) of parsing at the measured rate. `idle`: the output has
        stopped (for now), so what is parsed now will not be overtaken: a skip that finds no
        safe point then leaves half of `screen_replay_bytes` to parse rather than the
        backlog — about the redraw cycle of a TUI, which parsing makes exact at once where a
        shorter parse would need the replay after it.

        Returns:
            True if work remains (call again), False when the screen is up to date.
        """
        t0 = time.perf_counter()
        deadline = t0 + budget_seconds
        backlog = self._settings.screen_backlog_seconds if backlog_seconds is None else backlog_seconds
        capacity = max(PARSE_CHUNK, int(self._rate * backlog))
        blind_capacity = max(capacity, self._settings.screen_replay_bytes // 2) if idle else capacity
        if self._replay is not None or self._choosing:
            return self._go_on_replaying(deadline, t0)
        if self._skip_target is not None or len(self._pending) > capacity:
            self._fast_forward(capacity, blind_capacity, deadline)
        t1 = time.perf_counter()
        parsed = 0
        parser = self._parser
        pending = self._pending
        while self._skip_target is None and (pending or parser.backlog):
            if parser.backlog:
                parser.feed("")
            else:
                n = min(len(pending), PARSE_CHUNK)
                self._parse(n)
                parsed += n
            self._take_history()
            self._maybe_checkpoint()
            if time.perf_counter() >= deadline:
                break
        elapsed = time.perf_counter() - t1
        if parsed >= PARSE_CHUNK and elapsed > 0:
            measured = min(max(parsed / elapsed, _RATE_MIN), _RATE_MAX)
            self._rate = 0.7 * self._rate + 0.3 * measured
        more = bool(pending) or parser.backlog or self._skip_target is not None
        if not more and time.perf_counter() < deadline:
            self.scrollback.compact(COMPACT_PER_SLICE)
        self.longest_process = max(self.longest_process, time.perf_counter() - t0)
        return more

    def _parse(self, n: int) -> None:
        chunk = bytes(self._pending[:n])
        del self._pending[:n]
        self._pending_lines -= chunk.count(b"\n")
        self.parsed_bytes += n
        self._parser.feed(self._decoder.decode(chunk))

    def _take_history(self) -> None:
        screen = self._screen
        if screen.history_cleared:  # CSI 3 J: scrolled_off holds only rows after it
            screen.history_cleared = 0
            self.scrollback.clear()
        if screen.scrolled_off:
            rows, blind = screen.scrolled_off, screen.scrolled_off_blind
            screen.scrolled_off, screen.scrolled_off_blind = [], []
            self.scrollback.add_rows(rows, blind)

    # --- checkpoints and replay -----------------------------------------------------------------

    def _maybe_checkpoint(self) -> None:
        """Keep a checkpoint every eighth of `screen_replay_bytes` of output (parsed or
        skipped), as long as its replay fits in `screen_replay_bytes` (see "Exact again
        after quiet")."""
        limit = self._settings.screen_replay_bytes
        cps = self._checkpoints
        # Bytes since the newest checkpoint, less those pending: how far the parse (or skip)
        # got past it.
        if limit <= 0 or len(self._pending) > limit \
                or (cps and self._fed.end - cps[-1].start - len(self._pending) < limit // 8):
            return
        self._take_checkpoint_now()

    def _take_checkpoint_now(self) -> None:
        pending = self._pending
        if len(pending) > self._settings.screen_replay_bytes:
            return
        fed = self._fed
        if not self._checkpoints:
            fed.restart(pending)
        self._checkpoints.append(_Checkpoint(
            screen=self._screen.copy_state(), parser=self._parser.state,
            decoder=self._decoder.getstate(), scrollback_total=self.scrollback.total,
            start=fed.end - len(pending)))
        self.checkpoints_taken += 1
        self._keep_checkpoints(self._checkpoints[-10:])

    def _keep_checkpoints(self, kept: list[_Checkpoint]) -> None:
        """Keep these checkpoints only (oldest first), and only the bytes they need."""
        self._checkpoints = kept
        fed = self._fed
        if not kept:
            fed.restart(b"")
        elif kept[0].start > fed.start:
            fed.forget_before(kept[0].start)

    def resync(self) -> bool:
        """If the screen is not exact, start replaying from a kept checkpoint, in a screen of
        its own that replaces the shown one only once it is exact. The checkpoints are
        considered newest first (the shortest replay): one whose tainted cells its bytes
        cannot all write (their footprint, C speed) is passed over; a replay that still leaves
        cells inexact moves on to an older one. `process` does the work, a bounded step at a
        time; new output cancels it. Returns True if there is a replay to do."""
        if self._replay is not None or self._choosing:
            return True
        if not self._checkpoints or self.fidelity == "exact" or self.pending_bytes:
            return False
        self._choosing = list(reversed(self._checkpoints))
        self._cover = Footprint()
        self._cover_end = self._cover_cut = 0
        self.resyncs += 1
        return True

    def _choose_step(self) -> None:
        """Consider the next checkpoint (newest first): start its replay, or pass it over."""
        screen = self._screen
        cp = self._choosing.pop(0)
        st = cp.screen
        if st["lines"] != screen.lines or st["columns"] != screen.columns:
            return
        full = (1 << st["columns"]) - 1
        blind = not (st["x_known"] and st["y_known"])
        # The footprint of the bytes after this checkpoint, grown from the newer one's.
        # The bytes are seen as the replay's parser sees them: after what it held (an
        # unfinished sequence), without what the newer checkpoint held (counted there).
        cover = self._cover
        data = self._fed.since(cp.start)
        held, discarding, string = cp.parser[0], cp.parser[1], cp.parser[2]
        prefix = held.encode("utf-8", "surrogatepass") + cp.decoder[0]
        if string is not None or discarding:
            cover.every = True  # rare: not worth following (the replay still checks itself)
        if not cover.every and len(data) > self._cover_end:
            c = st["cursor"]
            delta = prefix + data[:max(0, len(data) - self._cover_end - self._cover_cut)]
            fp = footprint(delta, rows=st["lines"], cols=st["columns"],
                           cursor=None if blind else (c.y, c.x), top=st["top"], bottom=st["bottom"],
                           origin=st["origin"], autowrap=st["autowrap"], cache=FootprintCache())
            if fp.every:
                cover.every = True
            else:
                for y, mask in fp.rows.items():
                    cover.rows[y] = cover.rows.get(y, 0) | mask
        self._cover_end = len(data)
        self._cover_cut = len(prefix)
        if blind and st["_blind_dirty"]:
            taint = {y: full for y in range(st["lines"])}  # everything, once the cursor is known
        else:
            taint = {y: row.taint for y, row in enumerate(st["buffer"]) if row.taint}
        if taint and not cover.every and any(
                (cover.rows.get(y, 0) | ~mask) & full != full for y, mask in taint.items()):
            return  # some tainted cell the replay cannot write: it would end inexact
        self._replay = _Replay(cp, data, self._settings, screen.lines, screen.columns)

    def _go_on_replaying(self, deadline: float, t0: float) -> bool:
        replay = self._replay
        if replay is None:
            self._choose_step()
        elif replay.process(deadline):
            self._replay = None
            if not replay.screen.tainted():
                self._adopt(replay)  # else an older checkpoint is considered next
        self.longest_process = max(self.longest_process, time.perf_counter() - t0)
        return self._replay is not None or bool(self._choosing)

    def _adopt(self, replay: _Replay) -> None:
        """An exact replay becomes the screen (its history replaces the lines numbered from
        its checkpoint on)."""
        shadow = replay.screen
        shadow.changes = self._screen.changes + 1  # the render cache must see a change
        self._screen, self._parser, self._decoder = shadow, replay.parser, replay.decoder
        self.scrollback.truncate(replay.checkpoint.scrollback_total)
        self._take_history()
        self._replay = None
        self._choosing = []
        self._footprints.clear()

    # --- skipping -------------------------------------------------------------------------------

    def _fast_forward(self, capacity: int, blind_capacity: int, deadline: float) -> None:
        """Skip toward the best restart point in the pending bytes, a piece at a time, until
        the backlog fits `capacity` (`blind_capacity` when no safe point is near) or the
        deadline passes (then the next call goes on)."""
        if not self._checkpoints and len(self._pending) <= self._settings.screen_replay_bytes:
            self._take_checkpoint_now()  # whatever is skipped now can be replayed at quiet
        target = self._skip_target
        if target is not None and target[1] is None and blind_capacity > capacity:
            # Idle now: a blind skip decided before leaves more to parse.
            target[0] = min(target[0], blind_point(self._pending, max(0, len(self._pending) - blind_capacity)))
            if target[0] <= 0:
                self._skip_target = None
                return
        while True:
            if self._skip_target is None:
                if self._nothing_to_skip == self.fed_bytes:
                    return  # searched since the last byte came: parsing only shortens it
                data = self._pending
                replay = self._settings.screen_replay_bytes
                sp = last_safe_point(data, self._screen.lines, start=max(0, len(data) - replay))
                if sp is not None and sp.offset > 0 and len(data) - sp.offset <= replay:
                    self._skip_target = [sp.offset, sp.kind]
                    self._begin_superseding(sp.kind)
                elif len(data) > blind_capacity:
                    end = blind_point(data, len(data) - blind_capacity)
                    # A screen switch, clear or reset on the way: skip to it and parse it
                    # rather than skip over it (its footprint would be every cell).
                    sp = last_safe_point(data, self._screen.lines, end=end, start=max(0, end - replay))
                    if sp is not None and sp.kind != "lines":
                        self._skip_target = [sp.offset, sp.kind]
                        self._begin_superseding(sp.kind)
                    else:
                        self._skip_target = [end, None]
                else:
                    self._nothing_to_skip = self.fed_bytes
                    return
            target = self._skip_target
            while target[0] > 0:
                n = target[0] if target[0] <= SKIP_PIECE else blind_point(self._pending, SKIP_PIECE, target[0])
                n = self._cap_history_lines(n)
                self._skip(n, footprinted=target[1] in _FOOTPRINTED)
                target[0] -= n
                if target[1] is None:
                    self._maybe_checkpoint()
                if target[0] and time.perf_counter() >= deadline:
                    return
            self._skip_target = None
            if target[1] is None:
                return
            self._arrive(target[1])
            if len(self._pending) <= blind_capacity:
                return
            # The safe point is too far back to parse now, but its state is a good
            # checkpoint: keep it for the replay, then skip blind from it.
            self._take_checkpoint_now()
            self._skip_target = [blind_point(self._pending, len(self._pending) - blind_capacity), None]

    def _cap_history_lines(self, n: int) -> int:
        """Shorten a skip piece so that at most `HISTORY_LINES_PER_PIECE` of its lines are
        rendered for the scrollback (lines that later pending lines push out of it are only
        counted): the fast plain path then costs a few milliseconds per piece."""
        pending = self._pending
        limit = self.scrollback.limit
        lines = pending.count(b"\n", 0, n)
        if not lines:
            return n
        after = self._pending_lines - lines
        if after >= limit:
            return n
        keep = limit - after
        if min(lines, keep) <= HISTORY_LINES_PER_PIECE:
            return n
        # The kept lines of the piece start after its keep-th newline from the end (at the
        # piece's start if it has fewer); end the piece HISTORY_LINES_PER_PIECE newlines
        # after that start: of the `after_first` newlines there, the one counted
        # (after_first - HISTORY_LINES_PER_PIECE + 1)-th from the end.
        pos = newline_before(pending, keep, n)
        after_first = lines if pos < 0 else keep - 1
        if after_first < HISTORY_LINES_PER_PIECE:
            return n
        return newline_before(pending, after_first - HISTORY_LINES_PER_PIECE + 1, n, pos + 1) + 1


    def _begin_superseding(self, kind: str) -> None:
        """A skip to a safe point starts: the main screen's rows go to the history now (they
        would scroll or be cleared away before the bytes after the safe point show), and
        blank filler rows (never history) stand in until the safe point is parsed."""
        self._provisional = kind
        screen = self._screen
        self._first_prefix = ""
        if kind in ("lines", "clear", "reset") and not screen.alt_screen:
            # Rows above the cursor scroll away first; the cursor's row goes on with the
            # first skipped line (its text so far becomes that line's start).
            y = min(screen.cursor.y, screen.lines - 1)
            if kind == "lines":
                row = screen.buffer[y]
                self._first_prefix = render.row_text(row)[:screen.cursor.x] if screen.x_known else ""
                rows = screen.buffer[:y]
            else:
                used = 0
                for i, row in enumerate(screen.buffer):
                    if row_used(row):
                        used = i + 1
                rows = screen.buffer[:used]
            screen.scrolled_off += rows
            self._take_history()
            screen.buffer[:] = [blank_row(screen.columns).variant(filler=True)] * screen.lines
            screen.changes += 1

    def _arrive(self, kind: str) -> None:
        """The skip reached its safe point: parsing resumes at it — at once for its own
        sequence, so that a skip after it never takes it in."""
        self._provisional = None
        self.jumps += 1
        screen = self._screen
        n = safe_point_length(self._pending)
        if n:
            self._parse(n)
        if kind == "lines":
            # Line output leaves the cursor on the bottom row; from there `rows` newlines
            # scroll every older cell away.
            if screen.top != 0 or screen.bottom != screen.lines - 1:
                screen.taint_visible()  # a scroll region: the rule does not hold
            # The bottom row stays a filler unless the next line is empty (a filler written
            # to becomes content; one only scrolled away, if more is skipped, is nothing).
            if self._pending[:2] in (b"\r\n", b"\n\r") or self._pending[:1] == b"\n":
                screen.buffer[-1] = blank_row(screen.columns)
            screen.cursor.x = 0
            screen.cursor.y = screen.lines - 1
            screen.x_known = screen.y_known = True
            screen.changes += 1

    def _skip(self, n: int, *, footprinted: bool) -> None:
        """Skip pending[:n] (and whatever the parser and decoder held before it)."""
        screen = self._screen
        parser = self._parser
        in_string = parser.in_string
        held = parser.pending
        buffered = self._decoder.getstate()[0]
        raw = bytes(self._pending[:n])
        del self._pending[:n]
        self._pending_lines -= raw.count(b"\n")
        data = (held.encode("utf-8", "surrogatepass") if held else b"") + buffered + raw
        self.skipped_bytes += n
        parser.reset()
        self._decoder = _new_decoder()
        # String bodies are never drawn: leave them out, and if the skip stops inside one,
        # the parser consumes the rest of it.
        if in_string:
            end = string_body_end(data)
            if end is None:
                parser.discard_string()
                return
            data = data[end:]
        open_string = unterminated_string(data)
        if open_string is not None:
            data = data[:open_string]
            parser.discard_string()
        was_alt = screen.alt_screen
        if not footprinted:
            # Toward a safe point that redraws the visible screen: what the bytes drew on it
            # is moot, but a main screen they drew on and left hidden behind the alternate
            # one shows again when the program leaves it.
            carry = scan_carry(data, was_alt=was_alt, alt_saved=screen.alt_saved_set)
            self._history_from_skip(data, carry, fast_forwarded=True)
            self._apply_carry(carry, taint=False)
            if screen.alt_screen and main_touched(carry, was_alt):
                screen.add_taint(None, screen.main_buffer)
            return
        self.blind_jumps += 1
        cursor = None if screen.blind else (screen.cursor.y, screen.cursor.x)
        fp = footprint(data, rows=screen.lines, cols=screen.columns, cursor=cursor,
                       top=screen.top, bottom=screen.bottom, origin=screen.origin,
                       autowrap=screen.autowrap, cache=self._footprints)
        carry = scan_carry(data, fp.runs, was_alt=was_alt, alt_saved=screen.alt_saved_set)
        if carry.cursor == "unknown":
            self._lines_cursor(data, carry)
        if carry.cursor == "unknown":
            y = {"start": screen.cursor.y if screen.y_known else None, "reset": 0,
                 "saved": screen.saved.y if screen.saved.known else None,
                 "alt_saved": screen.alt_saved.y if screen.alt_saved.known else None}[carry.base]
            at = follow_lines(carry.state, data, y, top=screen.top, bottom=screen.bottom,
                              rows=screen.lines, cols=screen.columns)
            if at is not None:
                carry.cursor = ("at", at[0] + 1, at[1] + 1)
        self._history_from_skip(data, carry, fast_forwarded=True)
        self._apply_carry(carry, taint=False)
        if fp.every or carry.alt_switches or carry.reset:
            self._taint_touched(carry, was_alt)
        else:
            screen.add_taint(fp.rows)

    def _lines_cursor(self, data: bytes, carry: Carry) -> None:
        """Where skipped line output leaves the cursor: if `data` ends with `rows` line feeds
        and no cursor motion among them, on a screen without scroll region, the cursor is on
        the bottom row wherever it started — at column 0 after CR LF, in its column if the
        bytes were line feeds only."""
        screen = self._screen
        if not data.endswith(b"\n") or screen.top != 0 or screen.bottom != screen.lines - 1 \
                or screen.origin:
            return
        pos = len(data) - 1
        for _ in range(screen.lines):
            pos = data.rfind(b"\n", 0, pos)
            if pos < 0:
                return
        if MOTION.search(data, pos + 1) is not None or lines_break(data, pos + 1):
            return
        if data.endswith(b"\r\n"):
            carry.cursor = ("at", screen.lines, 1)
        elif not data.strip(b"\n") and screen.x_known:
            carry.cursor = ("at", screen.lines, min(screen.cursor.x, screen.columns - 1) + 1)

    def _taint_touched(self, carry: Carry, was_alt: bool) -> None:
        """Every cell of every buffer the skipped bytes may have drawn on."""
        screen = self._screen
        main = screen.main_buffer if screen.alt_screen else screen.buffer
        if main_touched(carry, was_alt):
            screen.add_taint(None, main)
        if screen.alt_screen and (was_alt or carry.alt_switches or carry.reset):
            screen.add_taint(None)

    def _history_from_skip(self, data: bytes, carry: Carry, *, fast_forwarded: bool) -> None:
        """Lines the skipped bytes wrote on the main screen, by the fast plain path."""
        screen = self._screen
        if (screen.alt_screen and not carry.alt_switches) or b"\n" not in data:
            return
        if carry.alt_switches and not main_touched(carry, screen.alt_screen):
            return
        # Lines that more pending lines will push out of the scrollback anyway are only
        # counted (a `yes` flood skips ~100,000 lines a slice).
        keep = max(0, self.scrollback.limit - self._pending_lines)
        prefix, self._first_prefix = self._first_prefix, ""
        known = plain_rows_known(data, screen.columns, keep, first_prefix=prefix)
        if known is None:
            count, lines = plain_lines(data, screen.columns, keep, first_prefix=prefix)
            self.scrollback.add_text(lines, fast_forwarded=fast_forwarded, skipped=count - len(lines))
            return
        # Rendered only if read before newer lines push them out (a flood's usual fate).
        count, start = known
        self.scrollback.add_plain(data[start:data.rfind(b"\n") + 1], screen.columns, lines=count,
                                  keep=keep, first_prefix=prefix if start == 0 else "",
                                  fast_forwarded=fast_forwarded)

    def _apply_carry(self, carry: Carry, *, taint: bool) -> None:
        """Bring the screen's state to what the skipped bytes left (see Carry)."""
        screen = self._screen
        was_alt = screen.alt_screen
        c = screen.cursor
        # Where attributes and positions come from (Carry.base), as they were before the bytes.
        bases = {"start": (c.x, c.y, c.attrs, screen.x_known, screen.y_known, screen.attrs_known),
                 "reset": (0, 0, BLANK, True, True, True)}
        for name, s in (("saved", screen.saved), ("alt_saved", screen.alt_saved)):
            bases[name] = (s.x, s.y, s.attrs, s.known, s.known, s.known)
        base = bases[carry.base]
        # Screens are switched as 47/1047 do (no save, no restore): what 1049 saves and
        # restores is carried apart (`base`, `alt_save`).
        if carry.reset:
            if carry.alt_at_reset is not None and carry.alt_at_reset != screen.alt_screen:
                screen.set_mode([1047], True, carry.alt_at_reset)  # the screen RIS cleared
            title = self._parser.title
            screen.reset()
            self._parser.title = screen.title = title
            self._take_history()
        if carry.restored:
            screen.restore_cursor()  # the character sets and origin mode saved before the bytes
        if carry.alt is not None and carry.alt != screen.alt_screen:
            screen.set_mode([1047], True, carry.alt)
        if carry.alt_save is not None:
            screen.alt_saved = self._saved_by_carry(carry.alt_save, bases)
            screen.alt_saved_set = True
        for name, value in carry.modes.items():
            setattr(screen, name, value)
        if carry.title is not None:
            self._parser.title = screen.title = carry.title[: self._parser.escape_max]
        if carry.margins is not None:
            top, bottom = carry.margins
            t = min(max(top, 1) - 1, screen.lines - 1)
            b = min((bottom or screen.lines) - 1, screen.lines - 1)
            if t < b:
                screen.top, screen.bottom = t, b
        if carry.g0 is not None:
            screen.g0 = DEC_GRAPHICS if carry.g0 == b"0" else LATIN1
        if carry.g1 is not None:
            screen.g1 = DEC_GRAPHICS if carry.g1 == b"0" else LATIN1
        if carry.shift is not None:
            screen.shift = carry.shift
        screen.cursor.attrs, screen.attrs_known = base[2], base[5]
        if carry.sgr_reset:
            screen.cursor.attrs = BLANK
            screen.attrs_known = True
        for params in carry.sgr:
            values = _sgr_params(params.decode("ascii"))
            if values is not None:
                screen.select_graphic_rendition(values)
        if not carry.sgr_exact:
            screen.attrs_known = False
        if carry.saved_unknown:
            screen.forget_saved()
        if carry.tabs_unknown:
            screen.tabs_known = False
        cursor = carry.cursor
        if isinstance(cursor, tuple):
            screen.cursor_position(cursor[1], cursor[2])
        elif cursor == "unknown":
            screen.lose_cursor()
        else:
            screen.put_cursor(base[0], base[1], x_known=base[3], y_known=base[4])
        screen.last_char = None

    def _saved_by_carry(self, save: tuple | str, bases: dict) -> SavedCursor:
        """What a 1049h in skipped bytes saved (Carry.alt_save), from the bases it started
        from; worked out on the screen's own cursor, which the caller sets afterwards."""
        if save == "unknown":
            return SavedCursor(known=False)
        screen = self._screen
        base, sgr_reset, sgr, exact, cursor = save
        x, y, attrs, x_known, y_known, attrs_known = bases[base]
        c = screen.cursor
        c.attrs = BLANK if sgr_reset else attrs
        for params in sgr:
            values = _sgr_params(params.decode("ascii"))
            if values is not None:
                screen.select_graphic_rendition(values)
        known = x_known and y_known and (attrs_known or sgr_reset) and exact
        if isinstance(cursor, tuple):
            if screen.origin:
                known = False  # placed relative to margins that may have differed then
            screen.cursor_position(cursor[1], cursor[2])
            x, y = c.x, c.y
        elif cursor == "unknown":
            known = False
        return SavedCursor(x, y, c.attrs, known=known)

    def lost(self) -> None:
        """Bytes between what was fed and what comes next never arrived (a guardian ring
        gap). Nothing on either screen can be trusted until it is written again, and the
        replay checkpoints no longer join up with the stream, so they are dropped."""
        screen = self._screen
        for buf in (screen.buffer, screen.main_buffer):
            if buf is not None:
                screen.add_taint(None, buf)
        screen.lose_cursor()
        screen.changes += 1
        self._keep_checkpoints([])
        self._replay = None
        self._choosing = []

    # --- size ----------------------------------------------------------------------------------

    def resize(self, rows: int, cols: int) -> None:
        """New terminal size, as tmux applies it (resize.py): the main screen reflows with
        the tail of the scrollback, the alternate screen is cut or padded. Bytes fed before
        are drawn at the old size first (the program wrote them before it knew). The
        replay checkpoints are dropped: they were taken at the old size."""
        screen = self._screen
        if (rows, cols) == (screen.lines, screen.columns):
            return
        self.catch_up()
        self._take_history()
        old_rows, old_cols = screen.lines, screen.columns
        # The history tail a resize may take back or reflow: enough for the taller screen,
        # from the start of a logical line.
        scrollback = self.scrollback
        pullable = scrollback.pullable
        tail = scrollback.take_rows(min(len(scrollback), max(rows, old_rows) + 64), old_cols)
        main_rows = screen.main_buffer if screen.alt_screen else screen.buffer
        if screen.alt_screen:
            saved = screen.alt_saved
            cx, cy = min(saved.x, old_cols - 1), min(saved.y, old_rows - 1)
        else:
            cx, cy = screen.cursor.x, screen.cursor.y
        main, history, pullable, cx, cy = resize_main(
            main_rows, tail, min(pullable, len(tail)), cx, cy, rows, cols, old_cols)
        scrollback.add_rows(history)
        scrollback.pullable = min(pullable, len(scrollback))
        if screen.alt_screen:
            alt, ay = resize_alternate(screen.buffer, screen.cursor.y, rows, cols)
            screen.apply_resize(rows, cols, alt, main, (min(screen.cursor.x, cols - 1), ay), (cx, cy))
        else:
            screen.apply_resize(rows, cols, main, None, (cx, cy), None)
        self._keep_checkpoints([])
        self._replay = None
        self._choosing = []
        self._footprints.clear()
        self._texts = []

    # --- output --------------------------------------------------------------------------------

    @property
    def fidelity(self) -> str:
        screen = self._screen
        if self._provisional or screen.blind \
                or any(map(_TAINT, screen.buffer)):
            return "fast_forwarded"
        return "exact"

    @property
    def revision(self) -> int:
        """Current revision (advances when anything in `snapshot()` changes)."""
        self._refresh()
        return self._revision

    @property
    def title(self) -> str:
        return self._parser.title

    @property
    def size(self) -> tuple[int, int]:
        """(rows, cols) the screen has now."""
        return self._screen.lines, self._screen.columns

    def _refresh(self) -> None:
        screen = self._screen
        changed = False
        if screen.changes != self._changes:
            self._changes = screen.changes
            rows = screen.buffer
            ids = [id(row.cells) for row in rows]
            cache = self._row_cache
            new_cache = {}
            texts = []
            previous = self._row_tuples
            tuples = []
            for y, row in enumerate(rows):
                cells = row.cells
                key = id(cells)
                entry = new_cache.get(key)
                if entry is None:  # not seen at another position in this refresh
                    entry = cache.get(key)
                    if entry is None or entry[0] is not cells or entry[1] != row.version:
                        # Written (or new here): re-render; a change only if the cells differ
                        # from what this row, or this position, showed before.
                        content = tuple(cells)
                        if entry is not None and entry[0] is cells and entry[2] == content:
                            entry = (cells, row.version, content, entry[3])
                        else:
                            entry = (cells, row.version, content, render.row_text(row))
                            if y >= len(previous) or previous[y] != content:
                                changed = True
                    new_cache[key] = entry
                texts.append(entry[3])
                tuples.append(entry[2])
            if ids != self._ids:
                changed = changed or tuples != previous
            self._row_tuples = tuples
            self._row_cache = new_cache
            self._ids = ids
            self._texts = texts
        c = screen.cursor
        fidelity = self.fidelity
        if fidelity == "exact" and self._footprints.positions:
            self._footprints.clear()
        meta = (
            screen.lines, screen.columns, min(c.y, screen.lines - 1), min(c.x, screen.columns - 1),
            screen.cursor_visible, screen.alt_screen, screen.bracketed_paste,
            self._parser.title, fidelity,
        )
        if changed or meta != self._meta:
            self._meta = meta
            self._revision += 1

    def snapshot(self) -> ScreenSnapshot:
        """The screen as parsed so far (call `process` first to be current)."""
        self._refresh()
        lines, cols, cy, cx, visible, alt, paste, title, fidelity = self._meta
        return ScreenSnapshot(
            revision=self._revision,
            fidelity=fidelity,
            rows=lines,
            cols=cols,
            lines=list(self._texts),
            cursor=(cy, cx),
            cursor_visible=visible,
            alt_screen=alt,
            bracketed_paste=paste,
            title=title,
        )

    def ansi(self, *, repaint: bool = True) -> str:
        """The screen with SGR colours and attributes.

        repaint=True: for a human terminal attaching — clear, each row at its position, then
        the cursor placed and shown/hidden as the program left it.
        repaint=False: rows separated by CRLF, trailing empty rows dropped, no cursor motion
        (for `vigil screen --ansi` printing into a scrolling terminal).
        """
        screen = self._screen
        rows = [render.row_ansi(row) for row in screen.buffer]
        if not repaint:
            while rows and not rows[-1]:
                rows.pop()
            return "\r\n".join(rows) + ("\r\n" if rows else "")
        out = ["\x1b[0m\x1b[H\x1b[2J"]
        for y, text in enumerate(rows):
            if text:
                out.append(f"\x1b[{y + 1};1H{text}")
        c = screen.cursor
        out.append(f"\x1b[{min(c.y, screen.lines - 1) + 1};{min(c.x, screen.columns - 1) + 1}H")
        out.append(render.sgr_for(c.attrs))
        out.append("\x1b[?25h" if screen.cursor_visible else "\x1b[?25l")
        return "".join(out)

    # --- scrollback ------------------------------------------------------------------------------

    def scrollback_lines(self, start: int, count: int) -> ScrollbackPage:
        """Scrollback lines by absolute number (0 = the first line this terminal ever
        scrolled away): those of start .. start+count-1 still kept. The page says which are
        kept (`first_kept`: lines below it were dropped), how many exist (`total`), and the
        numbering `epoch` (see scrollback.py)."""
        self._take_history()
        return self.scrollback.page(start, count)

    def scrollback_tail(self, count: int) -> ScrollbackPage:
        """The newest `count` scrollback lines."""
        self._take_history()
        return self.scrollback.tail(count)
