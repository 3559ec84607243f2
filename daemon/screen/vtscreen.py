"""VtScreen: the cells of one terminal, and what every control function does to them.

The semantics are tmux's (3.3, `screen-write.c`/`input.c`), because tmux is the oracle the
tests compare with cell for cell; where tmux and a VT100 disagree, the tests say which
(tests/integration/test_screen_vttest.py).

Why a screen of our own rather than `pyte.Screen` (pyte still provides `Char`, the colour
tables and the DEC graphics map):

- Cost. pyte keeps rows as dicts and walks them cell by cell: `ESC # 8` on a 1000×1000
  screen took seconds, `CSI 9999 S` loops 9999 times over every row. Here a row is a Python
  list of `columns` cells and every operation is a handful of C-level list operations: at
  most O(rows + columns) interpreter steps per control function (a scroll is `del` +
  `insert` on the row list, DECALN builds each row with `[E] * columns`). The keeper relies
  on that bound to cap the time one sequence can hold the daemon (keeper.py, "Cost").
- Fidelity bookkeeping. Every row carries `taint`, a bit mask of the cells that may differ
  from what a terminal fed every byte would show (set when the keeper skips bytes, cleared
  when a cell is written again with known attributes at a known position), so "exact" is a
  property the screen can prove, not a guess (keeper.py, "Fidelity").
- Scrollback. Rows leaving the top of the main screen are collected in `scrolled_off` (as
  tmux moves them into its history: any scroll of the main screen, whatever the region, and
  a full clear), so the keeper can keep them rendered.
- Alternate screen, bracketed paste, wide characters that wrap early, zero-width characters
  joining the previous cell: what real programs need and pyte 0.8.2 lacks or gets wrong.

Queries (DA, DSR, CPR) are never answered here: the keeper answers them from the raw stream
(queries.py), so that an answer never waits for this screen to catch up.
"""

from __future__ import annotations

import re
import unicodedata

from pyte import charsets as pyte_charsets
from pyte import graphics as g
from pyte.screens import Char
from wcwidth import wcwidth

from .render import uniform_ansi

#: The empty cell: a space with default colours and no attributes.
BLANK = Char(" ", "default", "default", False, False, False, False, False, False)
_DEFAULT_TAIL = tuple(BLANK)[1:]
#: `E` with default attributes (DECALN fills the screen with it).
_ALIGN = BLANK._replace(data="E")

LATIN1 = pyte_charsets.LAT1_MAP
DEC_GRAPHICS = pyte_charsets.VT100_MAP

#: Bound of the (attrs → character → Char) cache: a TUI uses a few dozen attribute sets; a
#: colour gradient could use thousands, so the cache is simply cleared past this many.
_CHAR_CACHE_ATTRS = 256
_PLAIN_TOKEN = re.compile(r"[^\r\t\b\x07]+|[\r\t\b\x07]")

#: In `VtScreen.scrolled_off`, after the rows a full clear moved into the history: tmux does
#: not give such rows back to a taller window (its `hscrolled` goes to 0).
HISTORY_CLEARED = ("", None, -1)

#: Scrollback line flags (scrollback.py) for lines handed over already rendered.
FAST_FORWARDED_FLAG = 1
WRAPPED_FLAG = 2
USED_SHIFT = 8

#: Longest text one cell may hold (a base character and its combining marks): 10^6
#: combining marks must not build a megabyte cell.
_CELL_TEXT_MAX = 8


class Row:
    """One screen row: `cells`, exactly `columns` `Char`s (a wide character's second cell
    holds `""`), and what is known about them.

    A row marked `shared` may be referenced from several places — every row of a cleared
    screen is one shared blank row, a replay checkpoint shares the rows it saw, a flag
    change makes a new `Row` on the same cells — so it never changes: the screen writes a
    private copy instead (`VtScreen._writable`), and changes flags on a new `Row` sharing
    the cells (`variant`). A clear, DECALN, a checkpoint or tainting a whole screen therefore
    cost O(rows), never O(cells).
    """

    __slots__ = ("cells", "wrapped", "styled", "taint", "filler", "used", "fill", "shared", "version")

    def __init__(self, cells: list[Char], *, used: int = 0, fill: Char | None = None,
                 styled: bool = False, wrapped: bool = False, taint: int = 0,
                 filler: bool = False, shared: bool = False):
        self.cells = cells
        #: Cells at and past this column are default blanks (an upper bound of what was
        #: written), so rendering and emptiness checks look at `cells[:used]` only.
        self.used = used
        #: Every cell is this `Char` (a row as `blank_row` made it, never written since):
        #: rendering it is a string repeat.
        self.fill = fill
        #: Some cell may have non-default attributes (so an ANSI rendering is needed).
        self.styled = styled
        #: The row's text continues on the next row (autowrap wrapped here): reflow and
        #: backspace use it, as tmux's GRID_LINE_WRAPPED.
        self.wrapped = wrapped
        #: Bit x set: cell x may differ from the exact screen (see module doc).
        self.taint = taint
        #: The keeper placed this row as filler after a jump: it is not scrollback when it
        #: scrolls away (keeper.py, skips to a safe point).
        self.filler = filler
        self.shared = shared
        #: Advances whenever the cells may have been written (the keeper's render cache).
        self.version = 0

    def variant(self, **flags) -> "Row":
        """A shared row with the same cells and some flags changed."""
        self.shared = True
        new = Row(self.cells, used=self.used, fill=self.fill, styled=self.styled,
                  wrapped=self.wrapped, taint=self.taint, filler=self.filler, shared=True)
        new.version = self.version
        for name, value in flags.items():
            setattr(new, name, value)
        return new

    def private(self) -> "Row":
        """A writable copy: own cells, same flags (a filler written to is content)."""
        return Row(self.cells[:], used=self.used, styled=self.styled, wrapped=self.wrapped,
                   taint=self.taint)


_SHARED: dict[tuple[int, Char], Row] = {}


def blank_row(columns: int, fill: Char = BLANK) -> Row:
    """A row of `columns` `fill` cells; shared: one object per (width, fill)."""
    row = _SHARED.get((columns, fill))
    if row is None:
        if len(_SHARED) >= 256:
            _SHARED.clear()
        blank = fill is BLANK
        row = _SHARED[(columns, fill)] = Row(
            [fill] * columns, fill=fill, used=0 if blank else columns, shared=True,
            styled=not blank and tuple(fill)[1:] != _DEFAULT_TAIL)
    return row


class Cursor:
    __slots__ = ("x", "y", "attrs")

    def __init__(self, x: int = 0, y: int = 0, attrs: Char = BLANK):
        self.x, self.y, self.attrs = x, y, attrs


class _CharCache(dict):
    """character → `Char` with fixed attributes, built on first use."""

    __slots__ = ("tail", "styled")

    def __init__(self, attrs: Char):
        super().__init__()
        self.tail = tuple(attrs)[1:]
        self.styled = self.tail != _DEFAULT_TAIL

    def __missing__(self, ch: str) -> Char:
        c = tuple.__new__(Char, (ch, *self.tail))
        self[ch] = c
        return c


class SavedCursor:
    """What DECSC / CSI s / DECSET 1049 save (tmux: position, cell, charsets, origin mode)."""

    __slots__ = ("x", "y", "attrs", "g0", "g1", "shift", "origin", "known")

    def __init__(self, x=0, y=0, attrs=BLANK, g0=LATIN1, g1=LATIN1, shift=False, origin=False, known=True):
        self.x, self.y, self.attrs = x, y, attrs
        self.g0, self.g1, self.shift, self.origin = g0, g1, shift, origin
        #: False when the save happened in bytes the keeper skipped.
        self.known = known


class VtScreen:
    """The screen of one terminal. Not thread-safe; every method is total on its arguments
    (the parser hands it clamped integers)."""

    def __init__(self, columns: int, lines: int) -> None:
        self.columns = columns
        self.lines = lines
        self._char_caches: dict[Char, _CharCache] = {}
        self._fills: dict[str, Char] = {}
        #: Rows pushed off the top of the main screen since the keeper last took them, and
        #: the (start, end) index ranges of those written while the cursor was unknown.
        self.scrolled_off: list[Row] = []
        self.scrolled_off_blind: list[tuple[int, int]] = []
        #: Set by full clears of the main screen so the keeper knows scrollback was cleared
        #: (ED 3) — a count, read and reset by the keeper.
        self.history_cleared = 0
        #: Incremented on every change of any cell (the keeper re-renders only then).
        self.changes = 0
        #: Work done so far, in units of about one cell copied (the parser's budget).
        self.work = 0
        self.title = ""
        self._reset_state()

    # --- state ------------------------------------------------------------------------------

    def _reset_state(self) -> None:
        cols, rows = self.columns, self.lines
        self.buffer: list[Row] = [blank_row(cols)] * rows
        self.cursor = Cursor()
        self.top, self.bottom = 0, rows - 1
        self.autowrap = True
        self.origin = False
        self.insert = False
        self.newline_mode = False  # LNM: LF also returns the carriage
        self.cursor_visible = True
        self.bracketed_paste = False
        self.alt_screen = False
        self._main: list[Row] | None = None
        self.saved = SavedCursor()
        self.alt_saved = SavedCursor(known=True)
        self.alt_saved_set = False
        self.g0 = self.g1 = LATIN1
        self.shift = False
        self.tabstops = set(range(8, cols, 8))
        self.tabs_known = True
        #: Whether the cursor position (x, y) and the attributes are known exactly.
        self.x_known = self.y_known = True
        self._blind_mark = 0
        self.attrs_known = True
        #: The last printed character (for REP); None when the last thing was not printing.
        self.last_char: str | None = None
        self.changes += 1

    @property
    def blind(self) -> bool:
        """The cursor position is unknown (after a skip that moved it): writes land at a
        place we can't name. The screen reports itself inexact meanwhile, and when the cursor
        is placed again every visible cell becomes suspect (`cursor_known`)."""
        return not (self.x_known and self.y_known)

    def _cache_for(self, attrs: Char) -> _CharCache:
        cache = self._char_caches.get(attrs)
        if cache is None:
            if len(self._char_caches) >= _CHAR_CACHE_ATTRS:
                self._char_caches.clear()
            cache = self._char_caches[attrs] = _CharCache(attrs)
        return cache

    def _fill(self) -> Char:
        """The cell erase operations leave: a blank with the current background (tmux)."""
        bg = self.cursor.attrs.bg
        if bg == "default":
            return BLANK
        fill = self._fills.get(bg)
        if fill is None:
            if len(self._fills) > 64:
                self._fills.clear()
            fill = self._fills[bg] = BLANK._replace(bg=bg)
        return fill

    def _new_row(self) -> Row:
        return blank_row(self.columns, self._fill())

    def _writable(self, y: int, buf: list[Row] | None = None) -> Row:
        """Row y of `buf` (the visible buffer by default), made private first if shared."""
        buf = self.buffer if buf is None else buf
        row = buf[y]
        if row.shared:
            row = buf[y] = row.private()
            self.work += self.columns
        row.version += 1
        return row

    def _flag(self, y: int, **flags) -> None:
        """Change flags of row y (on a new row sharing the cells if the row is shared)."""
        row = self.buffer[y]
        if row.shared:
            self.buffer[y] = row.variant(**flags)
        else:
            for name, value in flags.items():
                setattr(row, name, value)

    def add_taint(self, masks: dict[int, int] | None, buf: list[Row] | None = None) -> None:
        """Taint cells: `masks` maps row → bit mask; None taints every cell of `buf`."""
        buf = self.buffer if buf is None else buf
        full = (1 << self.columns) - 1
        if masks is None:
            self.work += self.lines * 8
            tainted: dict[int, Row] = {}  # one tainted variant per distinct shared row
            for y, row in enumerate(buf):
                if row.taint != full:
                    if row.shared:
                        new = tainted.get(id(row))
                        if new is None:
                            new = tainted[id(row)] = row.variant(taint=full)
                        buf[y] = new
                    else:
                        row.taint = full
            return
        for y, mask in masks.items():
            if 0 <= y < len(buf):
                row = buf[y]
                taint = row.taint | (mask & full)
                if taint != row.taint:
                    if row.shared:
                        buf[y] = row.variant(taint=taint)
                    else:
                        row.taint = taint

    # --- taint ------------------------------------------------------------------------------

    def _wrote(self, row: Row, x: int, n: int) -> None:
        """Cells x..x+n-1 of `row` were just written (drawn or erased)."""
        if n <= 0:
            return
        if not self.attrs_known:
            row.taint |= ((1 << n) - 1) << x
        elif row.taint:
            row.taint &= ~(((1 << n) - 1) << x)

    def taint_visible(self) -> None:
        """Every visible cell becomes suspect (the cursor was unknown while writing)."""
        self.add_taint(None)

    def tainted(self) -> bool:
        return self.blind or any(row.taint for row in self.buffer)

    def cursor_known(self) -> None:
        """The cursor was just placed absolutely."""
        self._know(True, True)

    def _know(self, x: bool, y: bool) -> None:
        """The cursor's column and/or row became known. If that ends a blind spell in which
        anything was written, what was written may be anywhere on the screen."""
        was_blind = self.blind
        if x:
            self.x_known = True
        if y:
            self.y_known = True
        if was_blind and not self.blind and self.changes != self._blind_mark:
            self.taint_visible()

    def put_cursor(self, x: int, y: int, *, x_known: bool, y_known: bool) -> None:
        """Place the cursor where skipped bytes left it, known or not in each direction."""
        c = self.cursor
        c.x, c.y = min(x, self.columns - 1), min(y, self.lines - 1)
        if not (x_known and y_known):
            self.lose_cursor(not x_known, not y_known)
        self._know(x_known, y_known)

    def lose_cursor(self, x: bool = True, y: bool = True) -> None:
        """The cursor's column and/or row are no longer known (skipped bytes moved it)."""
        if not self.blind:
            self._blind_mark = self.changes
        if x:
            self.x_known = False
        if y:
            self.y_known = False

    # --- scrolling primitives ---------------------------------------------------------------

    def _scroll_up(self, top: int, bottom: int, n: int, fill: Char | None = None) -> None:
        """Rows top..bottom move up n; n new rows at the bottom (blank with the current
        background, or `fill`). On the main screen the rows leaving the top go to
        `scrolled_off` (tmux moves them into its history, whatever the region)."""
        buf = self.buffer
        n = min(n, bottom - top + 1)
        self.work += self.lines + n
        gone = buf[top:top + n]
        del buf[top:top + n]
        fill = self._fill() if fill is None else fill
        buf[bottom - n + 1:bottom - n + 1] = [blank_row(self.columns, fill)] * n
        if not self.alt_screen:
            self._to_history(gone)
        self.changes += 1

    def _to_history(self, rows: list[Row]) -> None:
        self.work += len(rows) * 256
        if self.blind:
            start = len(self.scrolled_off)
            self.scrolled_off_blind.append((start, start + len(rows)))
        self.scrolled_off += rows

    def _scroll_down(self, top: int, bottom: int, n: int) -> None:
        buf = self.buffer
        n = min(n, bottom - top + 1)
        self.work += self.lines + n
        del buf[bottom - n + 1:bottom + 1]
        buf[top:top] = [self._new_row()] * n
        self.changes += 1

    # --- C0 controls ------------------------------------------------------------------------

    def linefeed(self) -> None:
        """LF, VT, FF: down one row, scrolling at the bottom margin; with LNM also CR."""
        self.index()
        if self.newline_mode:
            self.carriage_return()

    def index(self, wrapped: bool = False) -> None:
        c = self.cursor
        if wrapped:
            self._flag(c.y, wrapped=True)
        if c.y == self.bottom:
            # tmux: a wrap scrolls in a default blank row, a line feed one with the current
            # background.
            self._scroll_up(self.top, self.bottom, 1, BLANK if wrapped else None)
        elif c.y < self.lines - 1:
            c.y += 1
        self.last_char = None

    def next_line(self) -> None:
        """NEL (ESC E): carriage return, then index."""
        self.carriage_return()
        self.index()

    def reverse_index(self) -> None:
        c = self.cursor
        if c.y == self.top:
            self._scroll_down(self.top, self.bottom, 1)
        elif c.y > 0:
            c.y -= 1
        self.last_char = None

    def carriage_return(self) -> None:
        self.cursor.x = 0
        self._know(True, False)
        self.last_char = None

    def backspace(self) -> None:
        """BS: one column left. With a wrap pending the cursor is on the last column (a
        VT100's, xterm's: vttest's autowrap screen needs it), so BS goes to the one before
        — tmux goes to the last column instead (tests/integration/test_screen_vttest.py). At
        column 0 after a wrapped row it goes back up (tmux, xterm's reverse-wrap)."""
        c = self.cursor
        if c.x == 0:
            if c.y > 0 and self.buffer[c.y - 1].wrapped:
                c.y -= 1
                c.x = self.columns - 1
        else:
            c.x = min(c.x, self.columns - 1) - 1 if c.x < self.columns else max(self.columns - 2, 0)
        self.last_char = None

    def tab(self) -> None:
        c = self.cursor
        last = self.columns - 1
        if c.x >= last:
            return
        if not self.tabs_known:
            self.lose_cursor(True, False)
        x = c.x + 1
        stops = self.tabstops
        while x < last and x not in stops:
            x += 1
        c.x = x
        self.last_char = None

    def shift_out(self) -> None:
        self.shift = True

    def shift_in(self) -> None:
        self.shift = False

    # --- cursor motion ------------------------------------------------------------------------

    def cursor_up(self, n: int) -> None:
        c = self.cursor
        n = max(n, 1)
        limit = c.y if c.y < self.top else c.y - self.top
        if c.x >= self.columns:
            c.x = self.columns - 1
        c.y -= min(n, limit)
        self.last_char = None

    def cursor_down(self, n: int) -> None:
        c = self.cursor
        n = max(n, 1)
        limit = self.lines - 1 - c.y if c.y > self.bottom else self.bottom - c.y
        if c.x >= self.columns:
            c.x = self.columns - 1
        c.y += min(n, max(limit, 0))
        self.last_char = None

    def cursor_forward(self, n: int) -> None:
        c = self.cursor
        n = max(n, 1)
        if c.x >= self.columns:
            c.x = self.columns - 1
        else:
            c.x = min(c.x + n, self.columns - 1)
        self.last_char = None

    def cursor_back(self, n: int) -> None:
        c = self.cursor
        n = max(n, 1)
        c.x = max(min(c.x, self.columns) - n, 0)
        self.last_char = None

    def cursor_next_line(self, n: int) -> None:
        self.carriage_return()
        self.cursor_down(n)

    def cursor_prev_line(self, n: int) -> None:
        self.carriage_return()
        self.cursor_up(n)

    def cursor_position(self, row: int, col: int) -> None:
        """CUP/HVP with 1-based arguments; relative to the top margin in origin mode."""
        self._move(col - 1, row - 1)
        self.cursor_known()

    def cursor_to_column(self, col: int) -> None:
        self._move(col - 1, None)
        self._know(True, False)

    def cursor_to_line(self, row: int) -> None:
        self._move(None, row - 1)
        self._know(False, True)

    def _move(self, x: int | None, y: int | None) -> None:
        c = self.cursor
        if y is not None:
            if self.origin:
                y = self.bottom if y > self.bottom - self.top else y + self.top
            c.y = min(y, self.lines - 1)
        if x is not None:
            c.x = min(x, self.columns - 1)
        self.last_char = None

    def tab_back(self, n: int) -> None:
        """CBT: to the previous tab stop, n times."""
        c = self.cursor
        x = min(c.x, self.columns - 1)
        n = max(n, 1)
        if not self.tabs_known:
            self.lose_cursor(True, False)
        while x > 0 and n > 0:
            x -= 1
            while x > 0 and x not in self.tabstops:
                x -= 1
            n -= 1
        c.x = x

    def set_tab_stop(self) -> None:
        if self.cursor.x < self.columns:
            self.tabstops.add(self.cursor.x)

    def clear_tab_stop(self, how: int) -> None:
        if how == 0:
            self.tabstops.discard(self.cursor.x)
        elif how == 3:
            self.tabstops.clear()
            self.tabs_known = True

    def set_margins(self, top: int, bottom: int) -> None:
        """DECSTBM with 1-based arguments; homes the cursor. A region of one row is refused."""
        rows = self.lines
        top = min(top - 1, rows - 1)
        bottom = min(bottom - 1, rows - 1)
        if top >= bottom:
            return
        self.top, self.bottom = top, bottom
        self.cursor.x = self.cursor.y = 0
        self.cursor_known()

    # --- save / restore -------------------------------------------------------------------------

    def save_cursor(self) -> None:
        c = self.cursor
        self.saved = SavedCursor(c.x, c.y, c.attrs, self.g0, self.g1, self.shift, self.origin,
                                 known=not self.blind and self.attrs_known)

    def forget_saved(self) -> None:
        """The DECSC save happened in skipped bytes: what it holds is unknown. (A new object:
        checkpoints share the old one.)"""
        s = self.saved
        self.saved = SavedCursor(s.x, s.y, s.attrs, s.g0, s.g1, s.shift, s.origin, known=False)

    def restore_cursor(self) -> None:
        s = self.saved
        c = self.cursor
        c.attrs = s.attrs
        self.g0, self.g1, self.shift = s.g0, s.g1, s.shift
        self.origin = s.origin
        c.x = min(s.x, self.columns - 1)
        c.y = min(s.y, self.lines - 1)
        if s.known:
            self.cursor_known()
            self.attrs_known = True
        else:
            self.lose_cursor()
            self.attrs_known = False
        self.last_char = None

    # --- drawing --------------------------------------------------------------------------------

    def draw(self, data: str) -> None:
        """Draw printable text (the parser never passes control characters here).

        Wide characters take two cells and wrap early at the last column; zero-width
        characters join the previous cell. Without autowrap the cursor sticks at the last
        column and each further character replaces the last cell.
        """
        if self.shift:
            if self.g1 is not LATIN1:
                data = data.translate(self.g1)
        elif self.g0 is not LATIN1:
            data = data.translate(self.g0)
        if not data:
            return
        self.changes += 1
        self.work += len(data) * 4
        if data.isascii() and not self.insert:
            self._draw_ascii(data)
        else:
            self._draw_slow(data)

    def _draw_ascii(self, data: str) -> None:
        cols = self.columns
        c = self.cursor
        cache = self._cache_for(c.attrs)
        getter = cache.__getitem__
        pos, n = 0, len(data)
        while pos < n:
            if c.x >= cols:
                if self.autowrap:
                    self.index(wrapped=True)
                    c.x = 0
                else:
                    c.x = cols - 1
            row = self._writable(c.y)
            cells = row.cells
            x = c.x
            take = min(cols - x, n - pos)
            end = x + take
            if cells[x].data == "" and x > 0:
                cells[x - 1] = BLANK  # the first half of a wide character we overwrite
            if end < cols and cells[end].data == "":
                cells[end] = BLANK  # the second half of a wide character we overwrite
            cells[x:end] = map(getter, data[pos:pos + take])
            if cache.styled:
                row.styled = True
            if end > row.used:
                row.used = end
            self._wrote(row, x, take)
            pos += take
            if self.autowrap:
                c.x = end
            elif pos < n:
                # Without autowrap the rest of the run overwrites the last cell.
                cells[cols - 1] = getter(data[n - 1])
                c.x = cols - 1
                pos = n
            else:
                c.x = min(end, cols - 1)
        self.last_char = data[-1]

    def _draw_slow(self, data: str) -> None:
        cols = self.columns
        c = self.cursor
        cache = self._cache_for(c.attrs)
        for ch in data:
            width = 1 if " " <= ch <= "~" else wcwidth(ch)
            if width <= 0:
                self._join_previous(ch)
                continue
            if width > cols:
                continue
            if not self.autowrap and width > 1 and c.x != cols and c.x > cols - width:
                continue  # tmux: a wide character that does not fit is dropped
            if self.insert:
                self._insert_cells(min(c.x, cols), width, BLANK)
            if c.x > cols - width:
                if self.autowrap:
                    self.index(wrapped=True)
                    c.x = 0
                else:
                    c.x = cols - width
            row = self._writable(c.y)
            cells = row.cells
            x = c.x
            if cells[x].data == "" and x > 0:
                cells[x - 1] = BLANK
            after = x + width
            if after < cols and cells[after].data == "":
                cells[after] = BLANK
            cells[x] = cache[ch]
            if width == 2:
                cells[x + 1] = cache[""]
            if cache.styled:
                row.styled = True
            if after > row.used:
                row.used = after
            self._wrote(row, x, width)
            if not self.autowrap and after > cols - 1:
                c.x = cols - 1
            else:
                c.x = after
            self.last_char = ch

    def _join_previous(self, ch: str) -> None:
        """A zero-width character (combining mark, VS16, ZWJ) belongs to the cell left of the
        cursor (the start of a wide character if that cell is its second half)."""
        c = self.cursor
        x = min(c.x, self.columns) - 1
        cells = self.buffer[c.y].cells
        if x >= 1 and cells[x].data == "":
            x -= 1
        if x < 0:
            return
        last = cells[x]
        if not last.data:
            return
        joined = last.data + ch
        if unicodedata.combining(ch):
            joined = unicodedata.normalize("NFC", joined)
        if len(joined) <= _CELL_TEXT_MAX:
            row = self._writable(c.y)
            row.cells[x] = last._replace(data=joined)
            row.used = max(row.used, x + 1)

    def repeat(self, n: int) -> None:
        """REP: the last printed character n more times, at most to the end of the line."""
        ch = self.last_char
        if ch is None:
            return
        n = min(max(n, 1), max(self.columns - self.cursor.x, 0))
        if n:
            saved = self.g0, self.g1
            self.g0 = self.g1 = LATIN1  # already translated when first printed
            self.draw(ch * n)
            self.g0, self.g1 = saved

    # --- editing ----------------------------------------------------------------------------------

    def _insert_cells(self, x: int, n: int, fill: Char) -> None:
        cols = self.columns
        self.work += cols
        row = self._writable(self.cursor.y)
        cells = row.cells
        if x >= cols - 1:
            if x == cols - 1:
                cells[x] = fill
                self._wrote(row, x, 1)
            return
        n = min(n, cols - x)
        cells[x:x] = [fill] * n
        del cells[cols:]
        row.used = cols if fill is not BLANK else min(row.used + n, cols)
        if row.taint:
            low = row.taint & ((1 << x) - 1)
            high = (row.taint >> x) << (x + n)
            row.taint = (low | high) & ((1 << cols) - 1)
        self._wrote(row, x, n)
        if fill is not BLANK:
            row.styled = True

    def insert_characters(self, n: int) -> None:
        """ICH: n blanks at the cursor, the rest of the row moves right (cells pushed past the
        last column are lost)."""
        x = self.cursor.x
        if x >= self.columns:
            return
        n = min(max(n, 1), self.columns - x)
        self.changes += 1
        self._insert_cells(x, n, self._fill())

    def delete_characters(self, n: int) -> None:
        """DCH: n cells at the cursor go, the rest of the row moves left, blanks at the end."""
        cols = self.columns
        x = self.cursor.x
        if x >= cols:
            return
        n = min(max(n, 1), cols - x)
        self.changes += 1
        self.work += cols
        row = self._writable(self.cursor.y)
        fill = self._fill()
        cells = row.cells
        del cells[x:x + n]
        cells.extend([fill] * n)
        if fill is not BLANK:
            row.used = cols
        if row.taint:
            low = row.taint & ((1 << x) - 1)
            high = (row.taint >> (x + n)) << x
            row.taint = low | high
        self._wrote(row, cols - n, n)
        if fill is not BLANK:
            row.styled = True

    def erase_characters(self, n: int) -> None:
        """ECH: n cells from the cursor become blank; nothing moves."""
        cols = self.columns
        x = self.cursor.x
        if x >= cols:
            return
        n = min(max(n, 1), cols - x)
        self._erase(self.cursor.y, x, x + n)

    def _erase(self, y: int, start: int, end: int) -> None:
        if end <= start:
            return
        self.changes += 1
        self.work += end - start
        row = self._writable(y)
        fill = self._fill()
        row.cells[start:end] = [fill] * (end - start)
        if fill is not BLANK:
            row.styled = True
            row.used = max(row.used, end)
        self._wrote(row, start, end - start)

    def _clear_rows(self, start: int, end: int) -> None:
        """Rows start..end-1 become new blank rows."""
        if end <= start:
            return
        self.changes += 1
        self.work += end - start
        row = self._new_row()
        if not self.attrs_known:
            row = row.variant(taint=(1 << self.columns) - 1)
        self.buffer[start:end] = [row] * (end - start)

    def erase_in_line(self, how: int) -> None:
        c = self.cursor
        cols = self.columns
        if how == 0:
            self._erase(c.y, min(c.x, cols), cols)
        elif how == 1:
            self._erase(c.y, 0, min(c.x + 1, cols))
        elif how == 2:
            self._erase(c.y, 0, cols)

    def erase_in_display(self, how: int) -> None:
        c = self.cursor
        if how == 0:
            if c.x == 0 and c.y == 0:
                self._clear_screen()
                return
            self.erase_in_line(0)
            self._clear_rows(c.y + 1, self.lines)
        elif how == 1:
            self._clear_rows(0, c.y)
            self.erase_in_line(1)
        elif how == 2:
            self._clear_screen()
        elif how == 3:
            if not self.alt_screen:
                # Rows that scrolled away before it go with the history; rows that scroll
                # away after it (in the same slice) are the new history.
                self.scrolled_off = []
                self.scrolled_off_blind = []
                self.history_cleared += 1

    def _clear_screen(self) -> None:
        """ED 2 (and ED 0 from the home position): tmux first scrolls the used rows of the
        main screen into its history, then blanks the screen."""
        if not self.alt_screen:
            used = 0
            self.work += self.lines * self.columns // 4
            for y, row in enumerate(self.buffer):
                if row_used(row):
                    used = y + 1
            if used:
                self._to_history(self.buffer[:used])
                self.changes += 1
            self.scrolled_off.append(HISTORY_CLEARED)
        self._clear_rows(0, self.lines)

    def insert_lines(self, n: int) -> None:
        """IL: n blank rows at the cursor row, the rows below move down (within the scroll
        region when the cursor is in it); the cursor does not move (tmux)."""
        y = self.cursor.y
        n = max(n, 1)
        if y < self.top or y > self.bottom:
            self._scroll_down(y, self.lines - 1, min(n, self.lines - y))
        else:
            self._scroll_down(y, self.bottom, min(n, self.bottom + 1 - y))
        self.last_char = None

    def delete_lines(self, n: int) -> None:
        y = self.cursor.y
        n = max(n, 1)
        bottom = self.lines - 1 if y < self.top or y > self.bottom else self.bottom
        n = min(n, bottom + 1 - y)
        buf = self.buffer
        del buf[y:y + n]
        buf[bottom - n + 1:bottom - n + 1] = [self._new_row()] * n
        self.work += self.lines + n
        self.changes += 1
        self.last_char = None

    def scroll_up(self, n: int) -> None:
        """SU: the scroll region moves up n rows (on the main screen into the history)."""
        self._scroll_up(self.top, self.bottom, max(n, 1))

    def scroll_down(self, n: int) -> None:
        self._scroll_down(self.top, self.bottom, max(n, 1))

    def alignment_display(self) -> None:
        """DECALN: every cell becomes `E`; margins reset; the cursor goes home."""
        self.changes += 1
        self.work += self.lines
        self.buffer[:] = [blank_row(self.columns, _ALIGN)] * self.lines
        self.top, self.bottom = 0, self.lines - 1
        self.cursor.x = self.cursor.y = 0
        self.x_known = self.y_known = True

    # --- modes ----------------------------------------------------------------------------------

    def set_mode(self, modes: list[int], private: bool, on: bool) -> None:
        for m in modes:
            if not private:
                if m == 4:
                    self.insert = on
                elif m == 20:
                    self.newline_mode = on
                continue
            if m == 1049 or m == 1047 or m == 47:
                if on:
                    self._enter_alt(save_cursor=m == 1049)
                else:
                    self._leave_alt(restore_cursor=m == 1049)
            elif m == 25:
                self.cursor_visible = on
            elif m == 2004:
                self.bracketed_paste = on
            elif m == 7:
                self.autowrap = on
            elif m == 6:
                self.origin = on
                self.cursor.x = self.cursor.y = 0
                self._move(0, 0)
                self.cursor_known()
            elif m == 3:
                # DECCOLM: tmux does not resize; it homes the cursor and clears the screen.
                self.cursor.x = self.cursor.y = 0
                self._move(0, 0)
                self.cursor_known()
                self._clear_screen()

    def _enter_alt(self, *, save_cursor: bool) -> None:
        if self.alt_screen:
            return  # tmux: already on the alternate screen, nothing happens
        if self.blind and self.changes != self._blind_mark:
            self.taint_visible()  # written blind before it is put aside
        c = self.cursor
        if save_cursor:
            self.alt_saved = SavedCursor(c.x, c.y, c.attrs, known=not self.blind and self.attrs_known)
            self.alt_saved_set = True
        self._main = self.buffer
        self.buffer = [blank_row(self.columns)] * self.lines
        self.work += self.lines
        self.alt_screen = True
        self.changes += 1

    def _leave_alt(self, *, restore_cursor: bool) -> None:
        c = self.cursor
        if restore_cursor and self.alt_saved_set:
            # tmux: 1049l restores even when not on the alternate screen.
            s = self.alt_saved
            c.x, c.y, c.attrs = s.x, s.y, s.attrs
            if s.known:
                self.cursor_known_if_main()
            else:
                self.lose_cursor()
                self.attrs_known = False
        if self.alt_screen:
            self.buffer = self._main if self._main is not None else [blank_row(self.columns)] * self.lines
            self._main = None
            self.alt_screen = False
            self.changes += 1
        c.x = min(c.x, self.columns - 1)
        c.y = min(c.y, self.lines - 1)

    def cursor_known_if_main(self) -> None:
        # Leaving the alternate screen: a blind spell there tainted only the alternate
        # screen, which is gone; the main screen keeps its own taint.
        self.x_known = self.y_known = True

    @property
    def main_buffer(self) -> list[Row] | None:
        """The main screen's rows while the alternate screen is shown."""
        return self._main

    # --- SGR --------------------------------------------------------------------------------------

    def select_graphic_rendition(self, params: list[int]) -> None:
        """SGR with plain integer parameters (colon forms are flattened by the parser)."""
        attrs = self.cursor.attrs
        if not params:
            self.cursor.attrs = BLANK
            return
        replace: dict = {}
        i, n = 0, len(params)
        while i < n:
            p = params[i]
            i += 1
            if p == 0:
                replace = dict(zip(Char._fields[1:], _DEFAULT_TAIL))
            elif p in g.FG_ANSI:
                replace["fg"] = g.FG_ANSI[p]
            elif p in g.BG_ANSI:
                replace["bg"] = g.BG_ANSI[p]
            elif p in g.TEXT:
                name = g.TEXT[p]
                replace[name[1:]] = name[0] == "+"
            elif p in g.FG_AIXTERM:
                replace["fg"] = g.FG_AIXTERM[p]
            elif p in g.BG_AIXTERM:
                replace["bg"] = g.BG_AIXTERM[p]
            elif p in (38, 48):
                key = "fg" if p == 38 else "bg"
                if i < n and params[i] == 5:
                    if i + 1 < n and params[i + 1] <= 255:
                        replace[key] = g.FG_BG_256[params[i + 1]]
                    i += 2
                elif i < n and params[i] == 2:
                    if i + 3 < n and all(v <= 255 for v in params[i + 1:i + 4]):
                        r, gr, b = params[i + 1:i + 4]
                        replace[key] = f"{r:02x}{gr:02x}{b:02x}"
                        i += 4
                    else:
                        i += 1
                else:
                    i += 1
            elif p == 2 or p == 21:
                pass  # faint, double underline: no field for them in a Char
        if replace:
            self.cursor.attrs = attrs._replace(**replace)

    # --- reset ------------------------------------------------------------------------------------

    def reset(self) -> None:
        """RIS: tmux clears the screen (into the history), resets margins, modes, tabs, the
        cell, the charsets and the saved cursor; the title and the alternate screen (with
        the main screen kept aside) stay."""
        self._clear_screen()
        kept = self.title, self.alt_screen, self._main, self.alt_saved, self.alt_saved_set
        self._reset_state()
        self.title, self.alt_screen, self._main, self.alt_saved, self.alt_saved_set = kept

    # --- size -------------------------------------------------------------------------------------

    def apply_resize(self, lines: int, columns: int, buffer: list[Row], main: list[Row] | None,
                     cursor: tuple[int, int], saved: tuple[int, int] | None) -> None:
        """Take the rows and cursor a resize computed (keeper.py, resize.py): the new size,
        the visible rows, the main screen's rows while the alternate one shows, the cursor,
        and where the alternate screen's saved cursor now is. Tabs go back to every 8
        columns and the scroll region to the whole screen (tmux)."""
        self.lines, self.columns = lines, columns
        self.buffer = buffer
        self._main = main
        c = self.cursor
        c.x, c.y = cursor
        if saved is not None:
            self.alt_saved.x, self.alt_saved.y = saved
        self.top, self.bottom = 0, lines - 1
        self.tabstops = set(range(8, columns, 8))
        self.tabs_known = True
        self.work += lines
        self.changes += 1

    # --- lines that scroll away unseen ---------------------------------------------------------

    def render_lines(self, lines: list[str]) -> list[Row]:
        """The rows these lines (no LF; printable text, CR, TAB, BS, BEL) occupy when drawn from
        column 0 of a fresh row each, with the current attributes, character set and autowrap —
        exactly as `draw` would lay them out."""
        cols = self.columns
        out: list[Row] = []
        cache = self._cache_for(self.cursor.attrs)
        getter = cache.__getitem__
        table = self.g1 if self.shift else self.g0
        for line in lines:
            if line.endswith("\r"):
                line = line[:-1]
            if table is not LATIN1:
                line = line.translate(table)
            if line.isascii() and line.isprintable() and (self.autowrap or len(line) <= cols):
                self.work += len(line) // 4 + cols
                if not line:
                    out.append(blank_row(cols))
                    continue
                for i in range(0, len(line), cols):
                    piece = line[i:i + cols]
                    cells = list(map(getter, piece))
                    if len(piece) < cols:
                        cells.extend([BLANK] * (cols - len(piece)))
                    out.append(Row(cells, used=len(piece), styled=cache.styled,
                                   wrapped=i + cols < len(line)))
                continue
            # Anything else: draw it on a one-row scratch screen (every rule of `draw`).
            scratch = VtScreen(cols, 1)
            scratch.cursor.attrs = self.cursor.attrs
            scratch.autowrap = self.autowrap
            scratch.tabstops = set(self.tabstops)
            for tok in _PLAIN_TOKEN.findall(line):
                if tok == "\r":
                    scratch.carriage_return()
                elif tok == "\t":
                    scratch.tab()
                elif tok == "\b":
                    scratch.backspace()
                elif tok != "\x07":
                    scratch.draw(tok)
            self.work += scratch.work + cols
            out += scratch.scrolled_off
            out.append(scratch.buffer[0])
        if not self.attrs_known:
            out = [row.variant(taint=(1 << cols) - 1) for row in out]
        return out

    def skip_lines(self, text: str) -> None:
        """`text` is whole lines (each ending with CR LF; printable text, CR, TAB, BS, BEL),
        written with the cursor at column 0 of the bottom row of a screen without scroll
        region: lay them out as `draw` would and scroll them through in one go. The rows
        leaving the top of the main screen go to the history — as rendered lines when they are plain text of one
        attribute set (no cells are built for them), else as rows; the cursor ends at column
        0 of the bottom row."""
        lines = text.split("\n")[:-1]
        if not lines:
            return
        keep = self.lines - 1
        cols = self.columns
        # The last lines fill the screen; the ones before only pass through to the history.
        rows_needed, split = 0, len(lines)
        while split > 0 and rows_needed < keep:
            split -= 1
            n = len(lines[split])
            rows_needed += max(1, -(-n // cols)) if self.autowrap else 1
        # What scrolls, in order: the rows above the bottom one, the passing lines, the
        # lines' rows; the last `keep` stay (all rows: the passing lines are only there when
        # the lines' rows fill the screen).
        combined = self.buffer[:keep] + (self._history_lines(lines[:split]) if split else []) \
            + self.render_lines(lines[split:])
        cut = len(combined) - keep
        if not self.alt_screen:  # the alternate screen never feeds the history
            self._to_history(combined[:cut])
        self.buffer[:] = combined[cut:] + [self._new_row()]
        self.cursor.x = 0
        self.cursor.y = self.lines - 1
        self.work += self.lines + len(text) // 4
        self.changes += 1
        self.last_char = None

    def _history_lines(self, lines: list[str]) -> list:
        """History entries for plain lines that never show on the screen: rendered
        (text, ANSI, flags) tuples for the simple ones, rows for the rest."""
        cols = self.columns
        attrs = self.cursor.attrs
        table = self.g1 if self.shift else self.g0
        styled = tuple(attrs)[1:] != _DEFAULT_TAIL
        flags = FAST_FORWARDED_FLAG if not self.attrs_known else 0
        # The common case at C speed: every line plain ASCII (a CR only ending it) and no
        # wider than the screen, so each is one entry; a flood repeats lines, so each
        # distinct one is rendered once.
        text = "\n".join(lines) + "\n"
        if table is not LATIN1:
            text = text.translate(table)
        text = text.replace("\r\n", "\n")
        body = text.replace("\n", "")
        if body.isascii() and body.isprintable():
            plain = text[:-1].split("\n")
            if max(map(len, plain)) <= cols:
                entries = {line: (line.rstrip(" "), uniform_ansi(line, attrs) if styled else None,
                                  flags | (len(line) << USED_SHIFT)) for line in set(plain)}
                return list(map(entries.__getitem__, plain))
        out: list = []
        for line in lines:
            if line.endswith("\r"):
                line = line[:-1]
            if table is not LATIN1:
                line = line.translate(table)
            if not (line.isascii() and line.isprintable()):
                out += self.render_lines([line])
                continue
            if not self.autowrap and len(line) > cols:
                line = line[:cols - 1] + line[-1]
            pieces = [line[i:i + cols] for i in range(0, len(line), cols)] or [""]
            last = len(pieces) - 1
            for i, piece in enumerate(pieces):
                out.append((piece.rstrip(" "), uniform_ansi(piece, attrs) if styled else None,
                            flags | (WRAPPED_FLAG if i < last else 0) | (len(piece) << USED_SHIFT)))
        return out

    # --- whole-state copies (the keeper's replay checkpoints) ---------------------------------------

    def copy_state(self) -> dict:
        """Everything `restore_state` needs to rebuild this screen exactly. The rows are
        shared with it (the screen copies a shared row before writing it): O(rows)."""
        for buf in filter(None, (self.buffer, self._main)):
            for row in buf:
                row.shared = True
        state = dict(self.__dict__)
        state["buffer"] = list(self.buffer)
        state["_main"] = None if self._main is None else list(self._main)
        state["cursor"] = Cursor(self.cursor.x, self.cursor.y, self.cursor.attrs)
        state["tabstops"] = set(self.tabstops)
        state["scrolled_off"] = []
        state["scrolled_off_blind"] = []
        state["_char_caches"] = {}
        state["_blind_dirty"] = self.changes != self._blind_mark
        self.work += 2 * self.lines
        return state

    def restore_state(self, state: dict) -> None:
        work, live_changes = self.work, self.changes
        self.__dict__.update(state)
        self.buffer = list(state["buffer"])
        self._main = None if state["_main"] is None else list(state["_main"])
        self.cursor = Cursor(state["cursor"].x, state["cursor"].y, state["cursor"].attrs)
        self.tabstops = set(state["tabstops"])
        self.scrolled_off = []
        self.scrolled_off_blind = []
        self._char_caches = {}
        self.work = work + 2 * self.lines
        changes = self.changes = live_changes + 1  # never back: the keeper renders on change
        # Whether something was written in a blind spell the checkpoint was taken in.
        self._blind_mark = changes - 1 if state["_blind_dirty"] else changes
        del self.__dict__["_blind_dirty"]

def row_used(row: Row) -> bool:
    """Whether a row holds anything but default blanks (tmux's `cellused != 0`, close
    enough: a row only erased with the default background is unused)."""
    used = row.used
    return bool(used) and row.cells[:used].count(BLANK) != used
