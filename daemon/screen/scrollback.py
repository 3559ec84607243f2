"""Scrollback: the rows that left the top of the main screen, rendered, bounded, numbered.

tmux moves a row into its history whenever the main screen scrolls (whatever the scroll
region) and when the whole screen is cleared (`scroll-on-clear`); the alternate screen never
feeds it, `CSI 3 J` empties it. The keeper does the same, so the last N lines here followed
by the screen are what `tmux capture-pane -p -S -N` prints for the same program.

Numbering: every line gets an absolute number, counted from the first line the execution
ever scrolled away (0). At most `limit` lines are kept: `first` is the number of the oldest
kept line (so `first` lines were dropped), `total` the number the next line will get.
`epoch` advances whenever numbered lines change meaning instead of being appended — the
history is cleared, the keeper re-renders them exactly after a replay, or a resize pulls
rows back onto the screen (as tmux does when a window grows) — so a reader holding a line
number from an older epoch must start again (the store's cursor turns that into
`resync_required`).

Cost: a row is kept as its cells (trimmed to the written ones, not copied) and rendered only
when read, or by `compact` with a budget when the keeper is idle; so a flood pays nothing
per row for the rows dropped before anyone reads them, and memory holds at most `limit`
rows unrendered until the next idle moment. Likewise what arrives is only counted (its
lines numbered) and queued as it came — rows, rendered lines, or the raw bytes of skipped
plain lines — and laid out only when read: a batch that newer ones push out of the limit
before then is dropped unseen. A flood whose keeper keeps up would otherwise lay out the
last `limit` lines at every read of output, only for the next read to push them out.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from . import render
from .fastforward import plain_lines

#: Line flags.
FAST_FORWARDED = 1  #: rendered by the fast plain path, or from cells that were not exact
WRAPPED = 2  #: the text continues on the next line (autowrap)
_STYLED = 4  #: some cell has attributes (an ANSI rendering is needed)
_FILLED = 8  #: the payload is (fill cell, count): a row of one repeated cell
#: Rendered lines keep, from this bit up, how many cells the row used (trailing blanks
#: included once written: a resize's reflow needs them, the text drops them).
USED_SHIFT = 8


@dataclass(frozen=True)
class ScrollbackLine:
    text: str
    #: The line with SGR attributes (as `vigil screen --ansi` prints rows); None when it has
    #: none (then it is `text`).
    ansi: str | None
    #: The line may differ from what a terminal showed: it was skipped while the keeper was
    #: behind (rendered by the fast plain path), or drawn where the keeper could not follow.
    fast_forwarded: bool
    wrapped: bool = False


@dataclass(frozen=True)
class ScrollbackPage:
    """`scrollback_lines(start, count)`: lines `first_number` .. `first_number+len(lines)-1`."""

    first_number: int
    lines: list[ScrollbackLine]
    #: Oldest kept line number (lines below it were dropped: `first_kept` of them in all).
    first_kept: int
    #: Number the next line will get (lines ever scrolled away, minus any pulled back).
    total: int
    epoch: int


class Scrollback:
    """Bounded history of one terminal's main screen."""

    def __init__(self, limit: int):
        self.limit = limit
        # Each entry is either rendered, a tuple (text, ansi-or-None, flags), or waiting, a
        # list [cells, flags] where cells is a tuple of the row's cells or, with _FILLED,
        # (fill cell, count).
        self._lines: deque[list] = deque(maxlen=limit)
        self.total = 0
        self.epoch = 0
        #: Every waiting entry of `_lines` is among its newest `_unrendered` (see compact).
        self._unrendered = 0
        #: Newest lines that scrolled here (rather than being pushed by a full clear): a
        #: taller window takes those back onto the screen (tmux's `hscrolled`).
        self._pullable = 0
        #: Batches counted in `total` but not laid out in `_lines` yet, oldest first: (method
        #: that lays it out, its arguments, the entries it adds, whether it drops every older
        #: line); and whether `_lines` is to be emptied first (a dropped batch would have).
        self._queued: deque[tuple] = deque()
        self._queued_entries = 0
        self._queued_clear = False
        #: Lowest number whose line changed meaning since `take_rewrite` (None: none did):
        #: what the store must drop before it stores lines again.
        self._rewritten_from: int | None = None

    def __len__(self) -> int:
        self._lay_out()
        return len(self._lines)

    @property
    def first(self) -> int:
        self._lay_out()
        return self.total - len(self._lines)

    @property
    def pullable(self) -> int:
        self._lay_out()
        return self._pullable

    @pullable.setter
    def pullable(self, value: int) -> None:
        self._lay_out()
        self._pullable = value

    # --- appending ----------------------------------------------------------------------------

    def add_rows(self, rows, blind: list[tuple[int, int]] = ()) -> None:
        """Rows (vtscreen `Row`s) that scrolled away, oldest first; those in the `blind`
        index ranges were written while the cursor was unknown. Their entries are taken now
        (a shared row's cells are copied as they are now); only laying them out waits."""
        if not rows:
            return
        skip = max(0, len(rows) - self.limit)
        ff = set()
        for start, end in blind:
            ff.update(range(max(start, skip), end))
        entries = []
        reset = None  #: pullable counts from here (a clear came before the entries after it)
        for i in range(skip, len(rows)):
            row = rows[i]
            if type(row) is tuple:  # already rendered: (text, ansi, flags)
                if row[2] < 0:  # vtscreen.HISTORY_CLEARED: what came before was a clear
                    reset = -len(entries)
                    continue
                entries.append(row)
                continue
            if row.filler:
                continue
            flags = (FAST_FORWARDED if row.taint or i in ff else 0) \
                | (WRAPPED if row.wrapped else 0) | (_STYLED if row.styled else 0)
            if row.fill is not None:
                entries.append([(row.fill, row.used), flags | _FILLED])
            elif row.shared:
                entries.append([tuple(row.cells[:row.used]), flags])
            else:
                # Nobody writes a private row once it left the screen: keep its cells.
                cells = row.cells
                del cells[row.used:]
                entries.append([cells, flags])
        fillers = sum(1 for row in rows[:skip]
                      if (row[2] < 0 if type(row) is tuple else row.filler))
        self.total += skip - fillers + len(entries)
        self._queue(self._put_entries, (entries, reset), len(entries), False)

    def add_text(self, texts: list[str], *, fast_forwarded: bool, skipped: int = 0) -> None:
        """Plain lines (no attributes); `skipped` more lines before them were counted but
        not rendered, because later lines push them out of the limit anyway — and with them
        every line kept so far (older still), which are dropped now so the kept lines stay
        consecutive."""
        self.total += skipped + len(texts)
        self._queue(self._put_text, (texts, fast_forwarded, bool(skipped)), len(texts), bool(skipped))

    def add_plain(self, data: bytes, cols: int, *, lines: int, keep: int, first_prefix: str,
                  fast_forwarded: bool) -> None:
        """The `lines` complete lines of skipped output `data` (raw bytes up to its last LF,
        `first_prefix` starting the first), one row each on a screen `cols` wide (the caller
        checked, fastforward.plain_rows_known): rendered by `fastforward.plain_lines` when
        read. Only the last `keep` of them are kept; the lines before are counted, and push
        out every line older still, as with `add_text`."""
        if not lines:
            return
        keep = min(keep, lines)
        self.total += lines
        if not keep:
            self._queue(self._put_text, ([], fast_forwarded, True), 0, True)
            return
        self._queue(self._put_plain, (data, cols, keep, first_prefix, fast_forwarded, keep < lines),
                    keep, keep < lines)

    def _queue(self, put, args: tuple, entries: int, clears: bool) -> None:
        queued = self._queued
        if clears:  # nothing older survives this batch
            queued.clear()
            self._queued_entries = 0
            self._queued_clear = True
        queued.append((put, args, entries))
        self._queued_entries += entries
        # Batches that the newer ones push out of the limit entirely: never laid out (what
        # they would leave in `_lines` goes as well).
        while len(queued) > 1 and self._queued_entries - queued[0][2] >= self.limit:
            self._queued_entries -= queued.popleft()[2]
            self._queued_clear = True

    def _lay_out(self) -> None:
        """Lay the queued batches out in `_lines`, in the order they came."""
        queued = self._queued
        if not queued:
            return
        if self._queued_clear:
            self._lines.clear()
            self._unrendered = 0
        while queued:
            put, args, _ = queued.popleft()
            put(*args)
        self._queued_entries = 0
        self._queued_clear = False

    def _put_plain(self, data: bytes, cols: int, keep: int, first_prefix: str, fast_forwarded: bool,
                   clears: bool) -> None:
        _, texts = plain_lines(data, cols, keep, first_prefix=first_prefix)
        self._put_text(texts, fast_forwarded, clears)

    def _put_text(self, texts: list[str], fast_forwarded: bool, clears: bool) -> None:
        flags = FAST_FORWARDED if fast_forwarded else 0
        if clears:
            self._lines.clear()
            self._unrendered = 0
        self._lines.extend([(text, None, flags | (len(text) << USED_SHIFT)) for text in texts])
        self._pullable = min(self._pullable + len(texts), len(self._lines))
        if self._unrendered:
            self._unrendered = min(self._unrendered + len(texts), len(self._lines))

    def _put_entries(self, entries: list, reset: int | None) -> None:
        self._lines.extend(entries)
        pullable = self._pullable if reset is None else reset
        self._pullable = min(pullable + len(entries), len(self._lines))
        waiting = len(entries) if self._unrendered else \
            next((len(entries) - j for j, e in enumerate(entries) if type(e) is list), 0)
        self._unrendered = min(self._unrendered + waiting, len(self._lines))

    # --- changes ----------------------------------------------------------------------------------

    def clear(self) -> None:
        """`CSI 3 J`: every line is dropped."""
        self._queued.clear()
        self._queued_entries = 0
        self._queued_clear = False
        self._lines.clear()
        self._unrendered = 0
        self._pullable = 0
        self._rewrite(0)

    def truncate(self, total: int) -> None:
        """Forget lines numbered `total` and above (a replay will add them again)."""
        if total >= self.total:
            return
        self._lay_out()
        lines = self._lines
        while lines and self.total > total:
            lines.pop()
            self.total -= 1
        self.total = total  # lines past the limit were already gone
        self._pullable = min(self._pullable, len(lines))
        self._rewrite(total)

    def take_rows(self, n: int, cols: int) -> list:
        """Take the newest n lines back as rows `cols` wide, oldest first (a resize reflows
        them, and gives back what stays history with `add_rows`)."""
        from .vtscreen import BLANK, Row

        self._lay_out()
        lines = self._lines
        out = []
        while n > 0 and lines:
            entry = lines.pop()
            if type(entry) is list:
                cells, flags = entry
                if flags & _FILLED:
                    fill, count = cells
                    cells = (fill,) * count
                cells = list(cells)
                styled = bool(flags & _STYLED)
            else:
                cells, flags = _cells_of(entry[1] or entry[0]), entry[2]
                styled = entry[1] is not None
                cells += [BLANK] * ((flags >> USED_SHIFT) - len(cells))
            used = len(cells)
            cells += [BLANK] * (cols - used)
            out.append(Row(cells, used=used, styled=styled, wrapped=bool(flags & WRAPPED),
                           taint=-1 if flags & FAST_FORWARDED else 0))
            self.total -= 1
            n -= 1
        if out:
            self._rewrite(self.total)
        self._pullable = min(self._pullable, len(lines))
        out.reverse()
        return out

    def compact(self, budget: int) -> None:
        """Render up to `budget` lines not rendered yet (newest first: they are the ones
        read), letting go of their cells. Only the newest `_unrendered` can be waiting: a
        flood's scrollback is not walked whole at every idle moment. (Queued batches stay
        queued: they hold no cells of their own, or the same cells as the rows would.)"""
        if not self._unrendered:
            return
        lines = self._lines
        for i in range(len(lines) - 1, max(len(lines) - self._unrendered, 0) - 1, -1):
            if budget <= 0:
                return
            if type(lines[i]) is list:
                lines[i] = _render(lines[i])
                budget -= 1
        self._unrendered = 0

    def _rewrite(self, number: int) -> None:
        self.epoch += 1
        if self._rewritten_from is None or number < self._rewritten_from:
            self._rewritten_from = number

    def take_rewrite(self) -> int | None:
        """The lowest line number that changed meaning since the last call (None if none)."""
        number, self._rewritten_from = self._rewritten_from, None
        return number

    # --- reading ----------------------------------------------------------------------------------

    def page(self, start: int, count: int) -> ScrollbackPage:
        """Lines numbered start .. start+count-1 that are still kept (a start below `first`
        begins at `first`)."""
        self._lay_out()
        first = self.first
        start = max(start, first)
        end = min(start + max(count, 0), self.total)
        lines = self._lines
        out = []
        for i in range(start - first, end - first):
            if type(lines[i]) is list:
                lines[i] = _render(lines[i])
            text, ansi, flags = lines[i]
            out.append(ScrollbackLine(text=text, ansi=ansi, fast_forwarded=bool(flags & FAST_FORWARDED),
                                      wrapped=bool(flags & WRAPPED)))
        return ScrollbackPage(first_number=start, lines=out, first_kept=first, total=self.total,
                              epoch=self.epoch)

    def tail(self, n: int) -> ScrollbackPage:
        """The newest n lines."""
        return self.page(self.total - max(n, 0), n)

    def entries(self):
        """Raw entries, oldest first (for a resize that reflows them)."""
        self._lay_out()
        return self._lines


def _cells_of(line: str) -> list:
    """The cells of a rendered line (its ANSI form, or plain text)."""
    from .parser import Parser
    from .vtscreen import VtScreen

    screen = VtScreen(max(len(line), 2), 1)
    Parser(screen, escape_max=len(line) + 16).feed(line)
    row = screen.buffer[0]
    return list(row.cells[:row.used])


def _render(entry: list) -> tuple[str, str | None, int]:
    cells, flags = entry
    if flags & _FILLED:
        fill, count = cells
        cells = (fill,) * count
    ansi = render.cells_ansi(cells) if flags & _STYLED else None
    return render.cells_text(cells), ansi, (flags & (FAST_FORWARDED | WRAPPED)) | (len(cells) << USED_SHIFT)
