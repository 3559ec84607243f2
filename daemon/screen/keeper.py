"""ScreenKeeper: one terminal's visible screen, kept under a CPU budget (sync, sans-IO).

pyte parses 0.27-0.87 MiB/s (DESIGN.md), a PTY delivers ~96 MiB/s: pyte must never sit between
the child and the store. So `feed` only appends raw bytes to a bounded pending buffer (and
scans them for terminal queries, C speed); `process(budget)` parses pending bytes for at most
`budget` seconds; when the backlog is more than `backlog_seconds` of parsing, it
fast-forwards: it jumps to the latest safe point of the backlog (fastforward.py), carrying the
modes that matter across the skipped bytes.

Fidelity (the precise rule)
---------------------------
The keeper tracks, for the main and the alternate screen separately, whether that buffer may
differ from what a terminal fed every byte would show ("has a gap"):

- A jump marks a gap on every buffer the skipped bytes could have touched: the main screen
  if any skipped byte fell while it was visible (fastforward.main_touched), the alternate
  screen if it was visible or the skipped bytes switched screens. So a flood inside vim
  leaves the shell's screen exact: leaving vim shows it exactly.
- Dropping the head of the pending buffer (more than `screen_pending_bytes` unparsed) is a
  skip too, applied at the next `process`.
- Parsing (not skipping) a safe point clears gaps: RIS clears both buffers, ED 2 the visible
  one, entering the alternate screen the alternate one. A jump to a `lines` safe point clears
  the visible one (scrolling `rows` whole lines pushes out every older cell).
- `fidelity` is "exact" when the visible buffer has no gap and no head drop is waiting to be
  applied, "fast_forwarded" otherwise. Unparsed bytes (staleness) are not a fidelity loss:
  they will be parsed; `pending_bytes` exposes them.

Exact again after quiet: line output (the usual flood) lands on a `lines` safe point, so the
screen is exact as soon as the backlog is parsed. A TUI flood may force a blind jump (no safe
point close enough): for that the keeper keeps a *checkpoint* — a copy of the screen taken
right after a safe point was parsed with no gap anywhere, plus every raw byte fed since (at
most `screen_replay_bytes`). `resync()` restores the checkpoint and replays those bytes,
which yields an exact screen; the driver calls it once output has been quiet for
`screen_quiet_exact_seconds`. Without a checkpoint (more than `screen_replay_bytes` since the
last safe point) the screen stays "fast_forwarded" until the program next clears or resets.

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

from pyte import modes as mo

from vigil.daemon.settings import DEFAULTS, Settings

from . import render
from .fastforward import Carry, blind_point, last_safe_point, main_touched, scan_carry
from .parser import Parser
from .queries import DA1_REPLY, DA2_REPLY, DSR_REPLY, Query, QueryScanner, cpr_reply
from .snapshot import ScreenSnapshot
from .vtscreen import BRACKETED_PASTE, VtScreen

#: Bytes parsed between two budget checks. At the measured 0.3-3 MiB/s (pyte's figure, and
#: ours with the fast draw) 2 KiB is 0.7-7 ms, a fair fraction of a 5 ms slice.
PARSE_CHUNK = 2048

#: First estimate of the parse rate before any measurement (bytes per second): DESIGN.md's
#: lowest pyte figure, 0.27 MiB/s. Updated from real timings after every slice.
INITIAL_RATE = 256 * 1024
#: Bounds of the measured rate, so one odd timing (a GC pause, a suspended VM) cannot make the
#: keeper skip everything or nothing: 64 KiB/s .. 64 MiB/s.
_RATE_MIN, _RATE_MAX = 64 * 1024, 64 * 1024 * 1024


#: Longest cursor position report: rows and columns are at most 1000 (Settings ranges), and
#: pyte clamps positions to 9999 anyway.
_CPR_MAX = len(cpr_reply(9999, 9999))


def _new_decoder():
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


@dataclass
class _Checkpoint:
    screen: dict
    parser: tuple
    decoder: tuple
    data: bytearray  #: every raw byte fed after the checkpoint
    gaps: tuple[bool, bool] = (False, False)  #: (main, alt) gaps at the checkpoint


class ScreenKeeper:
    """The screen of one terminal. Not thread-safe: one owner calls every method.

    Args:
        rows, cols: terminal size (the PTY's).
        settings: limits (`screen_*` fields).
    """

    def __init__(self, rows: int, cols: int, settings: Settings = DEFAULTS):
        self._settings = settings
        self._screen = VtScreen(cols, rows)
        self._parser = Parser(self._screen, escape_max=settings.screen_escape_max_bytes)
        self._decoder = _new_decoder()
        self._pending = bytearray()
        self._dropped = False
        self._carry = Carry()
        self._gap_main = False
        self._gap_alt = False
        self._queries = QueryScanner()
        self._replies = bytearray()
        self._rate = float(INITIAL_RATE)
        self._checkpoint: _Checkpoint | None = None
        self._replaying = False
        self._hook_screen()
        #: Counters, for status and tests.
        self.fed_bytes = 0
        self.parsed_bytes = 0
        self.skipped_bytes = 0
        self.jumps = 0
        self.blind_jumps = 0
        self.replies_dropped = 0
        self.resyncs = 0
        # Render cache: per row (cells, text); see _refresh.
        self._rows: list[tuple[dict, str]] = [({}, "")] * rows
        self._meta: tuple | None = None
        self._revision = 0

    # --- input -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take raw output bytes. Cheap (a copy and a C-speed scan), except that a cursor
        position query parses the backlog before it (bounded by `screen_backlog_seconds`)."""
        if not data:
            return
        self.fed_bytes += len(data)
        self._replaying = False
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
        cp = self._checkpoint
        if cp is not None:
            cp.data += data
            if len(cp.data) > self._settings.screen_replay_bytes:
                self._checkpoint = None
        limit = self._settings.screen_pending_bytes
        if len(self._pending) > limit:
            # Drop down to 3/4 of the limit so that a flood pays the scan once per quarter
            # limit, not once per read.
            cut = len(self._pending) - limit * 3 // 4
            cut = blind_point(self._pending, cut)
            self._carry.merge(scan_carry(memoryview(self._pending)[:cut]))
            del self._pending[:cut]
            self.skipped_bytes += cut
            self._dropped = True

    def _answer(self, kind: Query) -> None:
        if kind is Query.CPR:
            reply = None
            if len(self._replies) + _CPR_MAX <= self._settings.screen_reply_bytes:
                self.catch_up()
                s = self._screen
                row = s.cursor.y + 1
                if mo.DECOM in s.mode and s.margins is not None:
                    row -= s.margins.top
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
        """Raw bytes fed but not yet parsed."""
        return len(self._pending)

    def process(self, budget_seconds: float, *, backlog_seconds: float | None = None) -> bool:
        """Parse pending bytes for at most about `budget_seconds` (one chunk may overrun).

        Fast-forwards first when the backlog would take more than `backlog_seconds` (default
        `screen_backlog_seconds`) of parsing at the measured rate.

        Returns:
            True if pending bytes remain (call again), False when the screen is up to date.
        """
        t0 = time.perf_counter()
        deadline = t0 + budget_seconds
        backlog = self._settings.screen_backlog_seconds if backlog_seconds is None else backlog_seconds
        capacity = max(PARSE_CHUNK, int(self._rate * backlog))
        if self._dropped or (not self._replaying and len(self._pending) > capacity):
            self._fast_forward(capacity)
        t1 = time.perf_counter()
        parsed = 0
        pending = self._pending
        while pending:
            n = min(len(pending), PARSE_CHUNK)
            self._parse(n)
            parsed += n
            if time.perf_counter() >= deadline:
                break
        elapsed = time.perf_counter() - t1
        if parsed >= PARSE_CHUNK and elapsed > 0:
            measured = min(max(parsed / elapsed, _RATE_MIN), _RATE_MAX)
            self._rate = 0.7 * self._rate + 0.3 * measured
        if not pending:
            self._replaying = False
        return bool(pending)

    def _parse(self, n: int) -> None:
        chunk = bytes(self._pending[:n])
        del self._pending[:n]
        self.parsed_bytes += n
        before = self._screen.resync_count
        self._parser.feed(self._decoder.decode(chunk))
        if self._screen.resync_count != before:
            self._maybe_checkpoint()

    def _hook_screen(self) -> None:
        self._screen.on_resync = self._on_resync

    def _on_resync(self, kind: str) -> None:
        # Called by VtScreen while a safe point is *parsed* (see "Fidelity").
        if kind == "reset":
            self._gap_main = self._gap_alt = False
        elif kind == "clear":
            if self._screen.alt_screen:
                self._gap_alt = False
            else:
                self._gap_main = False
        elif kind == "alt":
            self._gap_alt = False

    def _maybe_checkpoint(self) -> None:
        if self._gap_main or self._gap_alt or self._dropped:
            return
        if len(self._pending) > self._settings.screen_replay_bytes:
            self._checkpoint = None
            return
        self._checkpoint = _Checkpoint(
            screen=self._screen.copy_state(),
            parser=self._parser.state,
            decoder=self._decoder.getstate(),
            data=bytearray(self._pending),
        )

    def _fast_forward(self, capacity: int) -> None:
        data = self._pending
        sp = last_safe_point(data, self._screen.lines)
        if sp is not None and len(data) - sp.offset <= capacity:
            self._jump(sp.offset, sp.kind)
            return
        if sp is not None and len(data) - sp.offset <= self._settings.screen_replay_bytes:
            # The latest safe point is too far back to parse now, but close enough to replay
            # once output is quiet: jump there first and keep that state as the checkpoint,
            # then jump blind from it.
            self._jump(sp.offset, sp.kind)
            self._checkpoint = _Checkpoint(
                screen=self._screen.copy_state(),
                parser=self._parser.state,
                decoder=self._decoder.getstate(),
                data=bytearray(self._pending),
                gaps=(self._gap_main, self._gap_alt),
            )
            data = self._pending
        cut = blind_point(data, max(0, len(data) - capacity))
        if cut or self._dropped:
            self._jump(cut, None)
            self.blind_jumps += 1

    def _jump(self, cut: int, kind: str | None) -> None:
        """Skip `pending[:cut]` and restart parsing there (see "Fidelity" for the gaps)."""
        if cut == 0 and not self._dropped:
            return  # nothing skipped: parsing simply continues
        data = self._pending
        carry = self._carry
        carry.merge(scan_carry(memoryview(data)[:cut]))
        self._carry = Carry()
        del data[:cut]
        self.skipped_bytes += cut
        self.jumps += 1
        self._dropped = False
        self._decoder = _new_decoder()
        self._parser.reset()
        screen = self._screen
        was_alt = screen.alt_screen
        # Gaps on every buffer the skipped bytes could have touched.
        if main_touched(carry, was_alt):
            self._gap_main = True
        if was_alt or carry.alt_switches or carry.reset:
            self._gap_alt = True
        self._apply_carry(carry)
        if kind == "lines":
            # Line output leaves the cursor on the bottom row; from there `rows` newlines
            # scroll every older cell away.
            screen.margins = None
            screen.cursor.x = 0
            screen.cursor.y = screen.lines - 1
            if screen.alt_screen:
                self._gap_alt = False
            else:
                self._gap_main = False
            self._maybe_checkpoint()

    def _apply_carry(self, carry: Carry) -> None:
        screen = self._screen
        hook = screen.on_resync
        screen.on_resync = lambda kind: None  # carried changes are not parsed safe points
        try:
            if carry.reset:
                screen.reset()
                self._parser.title = ""
            if carry.alt is not None and carry.alt != screen.alt_screen:
                (screen.set_mode if carry.alt else screen.reset_mode)(1049, private=True)
            if carry.bracketed_paste is not None:
                (screen.mode.add if carry.bracketed_paste else screen.mode.discard)(BRACKETED_PASTE)
            if carry.cursor_visible is not None:
                (screen.mode.add if carry.cursor_visible else screen.mode.discard)(mo.DECTCEM)
            if carry.title is not None:
                self._parser.title = screen.title = carry.title[: self._parser.escape_max]
            if carry.sgr_reset:
                screen.select_graphic_rendition(0)
            for params in carry.sgr:
                try:
                    screen.select_graphic_rendition(*params)
                except Exception:
                    pass
        finally:
            screen.on_resync = hook

    def lost(self) -> None:
        """Bytes between what was fed and what comes next never arrived (a guardian ring
        gap). The screen can't be exact again until a safe point is parsed, and the replay
        checkpoint no longer joins up with the stream, so it is dropped."""
        self._gap_main = self._gap_alt = True
        self._checkpoint = None

    def resync(self) -> bool:
        """Re-render exactly from the checkpoint, if the screen is fast-forwarded and one is
        kept. The replayed bytes become pending (parse them with `process`; they are not
        fast-forwarded unless new output arrives). Returns True if a replay was started."""
        cp = self._checkpoint
        if cp is None or self.fidelity == "exact":
            return False
        self._screen.restore_state(cp.screen)
        self._parser.state = cp.parser
        self._decoder = _new_decoder()
        self._decoder.setstate(cp.decoder)
        self._pending = bytearray(cp.data)
        self._dropped = False
        self._carry = Carry()
        self._gap_main, self._gap_alt = cp.gaps
        self._replaying = True
        self.resyncs += 1
        return True

    # --- size ----------------------------------------------------------------------------------

    def resize(self, rows: int, cols: int) -> None:
        """New terminal size. The replay checkpoint is dropped: it was taken at the old size."""
        screen = self._screen
        if (rows, cols) == (screen.lines, screen.columns):
            return
        screen.resize(lines=rows, columns=cols)
        screen.tabstops = {x for x in screen.tabstops if x < cols} | set(range(8, cols, 8))
        screen.dirty.update(range(rows))
        self._rows = [({}, "")] * rows
        self._checkpoint = None

    # --- output --------------------------------------------------------------------------------

    @property
    def fidelity(self) -> str:
        gap = self._gap_alt if self._screen.alt_screen else self._gap_main
        return "fast_forwarded" if gap or self._dropped else "exact"

    @property
    def revision(self) -> int:
        """Current revision (advances when anything in `snapshot()` changes)."""
        self._refresh()
        return self._revision

    @property
    def title(self) -> str:
        return self._parser.title

    def _refresh(self) -> None:
        screen = self._screen
        cols = screen.columns
        changed = False
        if screen.dirty:
            buffer = screen.buffer
            rows = self._rows
            for y in screen.dirty:
                if not 0 <= y < screen.lines:
                    continue
                row = buffer.get(y)
                cells = dict(row) if row else {}
                if cells != rows[y][0]:
                    rows[y] = (cells, render.row_text(row, cols))
                    changed = True
            screen.dirty.clear()
        c = screen.cursor
        meta = (
            screen.lines, cols, min(c.y, screen.lines - 1), min(c.x, cols - 1),
            screen.cursor_visible, screen.alt_screen, screen.bracketed_paste,
            self._parser.title, self.fidelity,
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
            lines=[text for _, text in self._rows],
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
        cols = screen.columns
        rows = [render.row_ansi(screen.buffer.get(y), cols) for y in range(screen.lines)]
        if not repaint:
            while rows and not rows[-1]:
                rows.pop()
            return "\r\n".join(rows) + ("\r\n" if rows else "")
        out = ["\x1b[0m\x1b[H\x1b[2J"]
        for y, text in enumerate(rows):
            if text:
                out.append(f"\x1b[{y + 1};1H{text}")
        c = screen.cursor
        out.append(f"\x1b[{min(c.y, screen.lines - 1) + 1};{min(c.x, cols - 1) + 1}H")
        out.append(render.sgr_for(c.attrs))
        out.append("\x1b[?25h" if screen.cursor_visible else "\x1b[?25l")
        return "".join(out)
