"""A history-less `pyte.Screen` with the few things a real terminal has and pyte lacks.

Why a subclass rather than pyte as is (each point was seen on this machine):

- pyte 0.8.2 `draw` stops drawing the rest of a run at the first zero-width character that is
  not a combining mark: `"a❤\\ufe0f love"` renders as `a❤`. VS16 and ZWJ are common in emoji
  output, so `draw` is ours: zero-width characters join the previous cell.
- `draw` is the hot path (pyte parses 0.27-0.87 MiB/s, DESIGN.md). Ours writes ASCII runs with
  C-level `dict.update(zip(range, map(cache)))` and reuses one `Char` per (attrs, character).
- Alternate screen (DECSET 1049/1047/47) is not implemented by pyte: it is here, with the main
  buffer kept aside, because TUIs (vim, less, claude) live on it and leaving it must restore
  the shell's screen.
- DECCOLM (`CSI ? 3 h`) would resize pyte to 132 columns; xterm ignores it by default.
- pyte's own query answers (`report_device_*`) are silenced: queries are answered from the raw
  stream at feed time (see `queries.py`), so that they are answered even when this screen falls
  behind and skips bytes.

`on_resync` and `resync_count` tell the keeper that a safe point was parsed (keeper.py,
"Fidelity").
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict

import pyte
from pyte import modes as mo
from pyte.screens import Char, Margins, StaticDefaultDict, wcwidth

#: DEC private modes (already shifted the pyte way, `<< 5`).
ALT_1049 = 1049 << 5
ALT_1047 = 1047 << 5
ALT_47 = 47 << 5
ALT_MODES = frozenset({ALT_1049, ALT_1047, ALT_47})
BRACKETED_PASTE = 2004 << 5

_LATIN1_MAP = pyte.charsets.LAT1_MAP

#: Bound of the (attrs → character → Char) cache: a TUI uses a few dozen attribute sets; a
#: colour gradient could use thousands, so the cache is simply cleared past this many.
_CHAR_CACHE_ATTRS = 256


def _ignore(kind: str) -> None:
    pass


class _CharCache(dict):
    """character → `Char` with fixed attributes, built on first use."""

    __slots__ = ("tail",)

    def __init__(self, attrs: Char):
        super().__init__()
        self.tail = tuple(attrs)[1:]

    def __missing__(self, ch: str) -> Char:
        c = tuple.__new__(Char, (ch, *self.tail))
        self[ch] = c
        return c


class VtScreen(pyte.Screen):
    """pyte.Screen + alternate screen + a fast, total `draw`. Never answers queries itself."""

    def __init__(self, columns: int, lines: int) -> None:
        self.alt_screen = False
        self._main_buffer = None
        self._main_cursor = None
        self.resync_count = 0
        #: Called with "reset" | "clear" | "alt" when such a safe point is parsed (keeper.py).
        self.on_resync = _ignore
        self._char_caches: dict[Char, _CharCache] = {}
        super().__init__(columns, lines)

    # --- state -----------------------------------------------------------------------------

    def _new_buffer(self):
        return defaultdict(lambda: StaticDefaultDict(self.default_char))

    def reset(self) -> None:
        super().reset()
        self.alt_screen = False
        self._main_buffer = None
        self._main_cursor = None
        self.resync_count += 1
        self.on_resync("reset")

    @property
    def cursor_visible(self) -> bool:
        return mo.DECTCEM in self.mode

    @property
    def bracketed_paste(self) -> bool:
        return BRACKETED_PASTE in self.mode

    def copy_state(self) -> dict:
        """Everything `restore_state` needs to rebuild this screen (rows are shallow-copied:
        `Char`s are immutable)."""

        def rows(buf):
            if buf is None:
                return None
            return {y: (row.default, dict(row)) for y, row in buf.items()}

        c = self.cursor
        cursor = pyte.screens.Cursor(c.x, c.y, c.attrs)
        cursor.hidden = c.hidden
        mc = None
        if self._main_cursor is not None:
            mc = pyte.screens.Cursor(self._main_cursor.x, self._main_cursor.y, self._main_cursor.attrs)
        return {
            "size": (self.lines, self.columns),
            "buffer": rows(self.buffer),
            "main_buffer": rows(self._main_buffer),
            "main_cursor": mc,
            "cursor": cursor,
            "mode": set(self.mode),
            "margins": self.margins,
            "savepoints": list(self.savepoints),
            "tabstops": set(self.tabstops),
            "charset": (self.charset, self.g0_charset, self.g1_charset),
            "alt": self.alt_screen,
            "title": (self.title, self.icon_name),
        }

    def restore_state(self, st: dict) -> None:
        def rows(saved):
            if saved is None:
                return None
            buf = self._new_buffer()
            for y, (default, cells) in saved.items():
                row = StaticDefaultDict(default)
                row.update(cells)
                buf[y] = row
            return buf

        self.lines, self.columns = st["size"]
        self.buffer = rows(st["buffer"])
        self._main_buffer = rows(st["main_buffer"])
        mc = st["main_cursor"]
        self._main_cursor = None if mc is None else pyte.screens.Cursor(mc.x, mc.y, mc.attrs)
        c = st["cursor"]
        self.cursor = pyte.screens.Cursor(c.x, c.y, c.attrs)
        self.cursor.hidden = c.hidden
        self.mode = set(st["mode"])
        self.margins = st["margins"]
        self.savepoints = list(st["savepoints"])
        self.tabstops = set(st["tabstops"])
        self.charset, self.g0_charset, self.g1_charset = st["charset"]
        self.alt_screen = st["alt"]
        self.title, self.icon_name = st["title"]
        self.dirty.update(range(self.lines))

    # --- modes -----------------------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs) -> None:
        if kwargs.get("private"):
            rest = []
            for m in modes:
                shifted = m << 5
                if shifted in ALT_MODES:
                    self._enter_alt(save_cursor=shifted == ALT_1049)
                elif shifted != mo.DECCOLM:
                    rest.append(m)
            if rest:
                super().set_mode(*rest, private=True)
        else:
            super().set_mode(*modes)

    def reset_mode(self, *modes: int, **kwargs) -> None:
        if kwargs.get("private"):
            rest = []
            for m in modes:
                shifted = m << 5
                if shifted in ALT_MODES:
                    self._leave_alt(restore_cursor=shifted == ALT_1049)
                elif shifted != mo.DECCOLM:
                    rest.append(m)
            if rest:
                super().reset_mode(*rest, private=True)
        else:
            super().reset_mode(*modes)

    def _enter_alt(self, *, save_cursor: bool) -> None:
        # xterm: 1049 saves the cursor and clears the alternate screen; 1047/47 switch (we
        # clear them too: every program that uses them redraws, and a stale alt screen would
        # only show bytes from an earlier program).
        self.resync_count += 1
        self.on_resync("alt")
        self.dirty.update(range(self.lines))
        if self.alt_screen:
            self.buffer.clear()
            return
        c = self.cursor
        self._main_cursor = pyte.screens.Cursor(c.x, c.y, c.attrs) if save_cursor else None
        self._main_buffer = self.buffer
        self.buffer = self._new_buffer()
        self.alt_screen = True

    def _leave_alt(self, *, restore_cursor: bool) -> None:
        if not self.alt_screen:
            return
        self.buffer = self._main_buffer if self._main_buffer is not None else self._new_buffer()
        self._main_buffer = None
        if restore_cursor and self._main_cursor is not None:
            saved = self._main_cursor
            self.cursor.x, self.cursor.y, self.cursor.attrs = saved.x, saved.y, saved.attrs
            self.ensure_hbounds()
            self.ensure_vbounds()
        self._main_cursor = None
        self.alt_screen = False
        self.dirty.update(range(self.lines))

    # --- erase (pyte raises UnboundLocalError on an unknown `how`) ----------------------------

    def erase_in_display(self, how: int = 0, *args, **kwargs) -> None:
        if how in (0, 1, 2, 3):
            super().erase_in_display(how)
            if how == 2:
                self.resync_count += 1
                self.on_resync("clear")

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        if how in (0, 1, 2):
            super().erase_in_line(how)

    # --- scrolling -------------------------------------------------------------------------------

    def index(self) -> None:
        """pyte's index, with the scroll done by one dict comprehension (a `yes` flood is
        mostly scrolls: pyte's per-row loop made it 3x slower than plain text)."""
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y != bottom:
            self.cursor_down()
            return
        buf = self.buffer
        moved = {(y - 1 if top < y <= bottom else y): row for y, row in buf.items() if y != top}
        buf.clear()
        buf.update(moved)
        self.dirty.update(range(top, bottom + 1))

    # --- scrolling that pyte lacks (SU / SD) ---------------------------------------------------

    def scroll_up(self, count: int = 1) -> None:
        """CSI n S: the region scrolls up n lines; the cursor stays."""
        top, bottom = self.margins or Margins(0, self.lines - 1)
        count = max(1, min(count or 1, bottom - top + 1))
        for _ in range(count):
            for y in range(top, bottom):
                self.buffer[y] = self.buffer[y + 1]
            self.buffer.pop(bottom, None)
        self.dirty.update(range(top, bottom + 1))

    def scroll_down(self, count: int = 1) -> None:
        """CSI n T: the region scrolls down n lines; the cursor stays."""
        top, bottom = self.margins or Margins(0, self.lines - 1)
        count = max(1, min(count or 1, bottom - top + 1))
        for _ in range(count):
            for y in range(bottom, top, -1):
                self.buffer[y] = self.buffer[y - 1]
            self.buffer.pop(top, None)
        self.dirty.update(range(top, bottom + 1))

    # --- queries: answered elsewhere ------------------------------------------------------------

    def report_device_attributes(self, *args, **kwargs) -> None:
        pass

    def report_device_status(self, *args, **kwargs) -> None:
        pass

    def write_process_input(self, data: str) -> None:
        pass

    # --- drawing ---------------------------------------------------------------------------------

    def _cache_for(self, attrs: Char) -> _CharCache:
        cache = self._char_caches.get(attrs)
        if cache is None:
            if len(self._char_caches) >= _CHAR_CACHE_ATTRS:
                self._char_caches.clear()
            cache = self._char_caches[attrs] = _CharCache(attrs)
        return cache

    def draw(self, data: str) -> None:
        """Draw printable text (the parser never passes control characters here).

        Wide characters take two cells (the second holds `""`, as in pyte) and wrap early at the
        last column as xterm does; zero-width characters join the previous cell.
        """
        if self.charset:
            data = data.translate(self.g1_charset)
        elif self.g0_charset is not _LATIN1_MAP:
            data = data.translate(self.g0_charset)
        if not data:
            return
        cols = self.columns
        cursor = self.cursor
        autowrap = mo.DECAWM in self.mode
        if data.isascii() and mo.IRM not in self.mode:
            # Fast path: every character is one cell.
            cache = self._cache_for(cursor.attrs)
            pos, n = 0, len(data)
            while pos < n:
                if cursor.x >= cols:
                    if autowrap:
                        self.dirty.add(cursor.y)
                        self.carriage_return()
                        self.linefeed()
                    else:
                        cursor.x = cols - 1
                        # Without autowrap every further character overwrites the last cell.
                        pos = n - 1
                take = min(cols - cursor.x, n - pos)
                x = cursor.x
                self.buffer[cursor.y].update(zip(range(x, x + take), map(cache.__getitem__, data[pos:pos + take])))
                cursor.x = x + take
                pos += take
            self.dirty.add(cursor.y)
            return
        self._draw_slow(data, cols, autowrap)

    def _draw_slow(self, data: str, cols: int, autowrap: bool) -> None:
        cursor = self.cursor
        cache = self._cache_for(cursor.attrs)
        irm = mo.IRM in self.mode
        for ch in data:
            width = 1 if " " <= ch <= "~" else wcwidth(ch)
            if width <= 0:
                self._join_previous(ch)
                continue
            if cursor.x + width > cols:
                if autowrap:
                    self.dirty.add(cursor.y)
                    self.carriage_return()
                    self.linefeed()
                else:
                    cursor.x = cols - width
                if width > cols:
                    continue
            if irm:
                self.insert_characters(width)
            line = self.buffer[cursor.y]
            line[cursor.x] = cache[ch]
            if width == 2:
                line[cursor.x + 1] = cache[""]
            cursor.x += width
            self.dirty.add(cursor.y)

    def _join_previous(self, ch: str) -> None:
        """A zero-width character (combining mark, VS16, ZWJ) belongs to the previous cell."""
        cursor = self.cursor
        y, x = cursor.y, cursor.x - 1
        line = self.buffer[y]
        if x >= 0 and line[x].data == "" and x >= 1:
            x -= 1  # the stub of a wide character
        if x < 0:
            if y == 0:
                return
            y, x = y - 1, self.columns - 1
            line = self.buffer[y]
        last = line[x]
        if not last.data or last.data == " " and x not in line:
            return
        joined = last.data + ch
        if unicodedata.combining(ch):
            joined = unicodedata.normalize("NFC", joined)
        # Bound a cell's text: a stream of 10^6 combining marks must not build a megabyte cell.
        if len(joined) <= 8:
            line[x] = last._replace(data=joined)
            self.dirty.add(y)
