"""A terminal resize as tmux 3.3 does it (`screen_resize_cursor`, `screen_resize_y`,
`grid_reflow`), on vtscreen `Row`s, so that after the same resize vigil shows what tmux shows.

- Height, main screen: a shorter screen first drops rows below the cursor from the bottom,
  then moves rows from the top into the history; a taller one first takes back rows that had
  scrolled into the history (not ones a clear pushed there), then adds blank rows.
- Height, alternate screen (no history): rows below the cursor go first, then rows from the
  top; new rows are blank.
- Width, main screen only: the lines are reflowed — a row whose text wrapped onto the next
  (`Row.wrapped`) is joined with it, and rows longer than the new width are split — and the
  cursor follows its character. The alternate screen is cut or padded (its program redraws).

The keeper reflows the screen and the last lines of the history only (enough for what the
new screen shows), not the whole history as tmux does: older history lines keep the width
they had (keeper.py `resize`).

Widths: `used` cells of a row count, as tmux's `cellused` (cells written, trailing blanks
included once written); a wide character and its stub move together.
"""

from __future__ import annotations

from .vtscreen import BLANK, Row, blank_row


def _glyphs(row: Row) -> list[list]:
    """The used cells of a row as [cell, width] (a wide character's stub folded into it)."""
    cells = row.cells
    out: list[list] = []
    for i in range(min(row.used, len(cells))):
        cell = cells[i]
        if cell.data == "" and out:
            out[-1][1] = 2
        else:
            out.append([cell, 1])
    return out


def _row_of(glyphs: list[list], cols: int, *, wrapped: bool, styled: bool, tainted: bool = False) -> Row:
    cells = []
    for cell, width in glyphs:
        cells.append(cell)
        if width == 2:
            cells.append(cell._replace(data=""))
    used = len(cells)
    cells.extend([BLANK] * (cols - used))
    return Row(cells[:cols], used=min(used, cols), styled=styled, wrapped=wrapped,
               taint=(1 << cols) - 1 if tainted else 0)


def fit(row: Row, cols: int) -> Row:
    """A row cut or padded to `cols` (no reflow: the alternate screen)."""
    if len(row.cells) == cols:
        return row
    glyphs = _glyphs(row)
    kept, width = [], 0
    for glyph in glyphs:
        if width + glyph[1] > cols:
            break
        kept.append(glyph)
        width += glyph[1]
    return _row_of(kept, cols, wrapped=row.wrapped, styled=row.styled, tainted=bool(row.taint))


def reflow(rows: list[Row], cols: int) -> list[Row]:
    """tmux's `grid_reflow` of `rows` to `cols` columns: a row exactly as wide stays, a
    longer one is split (the pieces wrapped), a shorter wrapped one takes cells from the rows
    after it (`grid_reflow_join`)."""
    rows = list(rows)
    out: list[Row] = []
    i = 0
    while i < len(rows):
        row = rows[i]
        i += 1
        glyphs = _glyphs(row)
        width = sum(w for _, w in glyphs)
        styled = row.styled
        tainted = bool(row.taint)
        if width == cols:
            out.append(_row_of(glyphs, cols, wrapped=row.wrapped, styled=styled, tainted=tainted))
            continue
        if width > cols:
            pieces = _split(glyphs, cols)
            for piece in pieces[:-1]:
                out.append(_row_of(piece, cols, wrapped=True, styled=styled, tainted=tainted))
            glyphs = pieces[-1]
            width = sum(w for _, w in glyphs)
        if not row.wrapped or width >= cols:
            out.append(_row_of(glyphs, cols, wrapped=row.wrapped, styled=styled, tainted=tainted))
            continue
        # A wrapped line with room left: take cells from the rows after it.
        target_wrapped = True
        wrapped = True
        while i < len(rows):
            nxt = rows[i]
            if not nxt.wrapped:
                wrapped = False
            more = _glyphs(nxt)
            if not more:
                if not wrapped:
                    break
                i += 1
                continue
            taken = 0
            for glyph in more:
                if width + glyph[1] > cols:
                    break
                glyphs.append(glyph)
                width += glyph[1]
                taken += 1
            styled = styled or nxt.styled
            tainted = tainted or bool(nxt.taint)
            if taken < len(more):
                # The rest of that row stays a row of its own, handled next.
                if taken:
                    rows[i] = _row_of(more[taken:], len(nxt.cells), wrapped=nxt.wrapped, styled=nxt.styled)
                break
            i += 1
            if not wrapped:
                target_wrapped = False
                break
            if width == cols:
                break
        out.append(_row_of(glyphs, cols, wrapped=target_wrapped, styled=styled, tainted=tainted))
    return out


def _split(glyphs: list[list], cols: int) -> list[list[list]]:
    pieces: list[list[list]] = [[]]
    width = 0
    for glyph in glyphs:
        if width + glyph[1] > cols and pieces[-1]:
            pieces.append([])
            width = 0
        pieces[-1].append(glyph)
        width += glyph[1]
    return pieces


def wrap_position(rows: list[Row], x: int, y: int) -> tuple[int | None, int]:
    """tmux's `grid_wrap_position`: (offset in its logical line, logical line number) of
    cell (x, y); offset None when x is past the row's used cells (the end of the line)."""
    ax = ay = 0
    for yy in range(y):
        if rows[yy].wrapped:
            ax += rows[yy].used
        else:
            ax = 0
            ay += 1
    if x >= rows[y].used:
        return None, ay
    return ax + x, ay


def unwrap_position(rows: list[Row], wx: int | None, wy: int) -> tuple[int, int]:
    """tmux's `grid_unwrap_position`: back from a logical position to (x, y)."""
    yy = ay = 0
    while yy < len(rows) - 1 and ay != wy:
        if not rows[yy].wrapped:
            ay += 1
        yy += 1
    if wx is None:
        while yy < len(rows) - 1 and rows[yy].wrapped:
            yy += 1
        return rows[yy].used, yy
    while yy < len(rows) - 1 and rows[yy].wrapped:
        if wx < rows[yy].used:
            break
        wx -= rows[yy].used
        yy += 1
    return wx, yy


def resize_alternate(rows: list[Row], cy: int, new_rows: int, cols: int) -> tuple[list[Row], int]:
    """Height change of the alternate screen (no history): rows, new cursor row."""
    old = len(rows)
    if new_rows < old:
        needed = old - new_rows
        below = min(max(old - 1 - cy, 0), needed)
        if below:
            rows = rows[:old - below]
        needed -= below
        top = min(cy, needed)
        rows = rows[top:]
        cy -= top
        rows = rows[:new_rows]
    elif new_rows > old:
        rows = rows + [blank_row(cols)] * (new_rows - old)
    return [fit(row, cols) for row in rows], cy


def resize_main(screen_rows: list[Row], history: list[Row], pullable: int, cx: int, cy: int,
                new_rows: int, new_cols: int, old_cols: int) -> tuple[list[Row], list[Row], int, int, int]:
    """tmux's resize of the main screen, on the screen rows and the tail of the history (as
    rows, oldest first). Returns (screen rows, history tail rows, pullable, cx, cy): the new
    screen, what the history tail becomes, how many history lines a taller screen may still
    take back, and the cursor."""
    rows = list(screen_rows)
    history = list(history)
    old = len(rows)
    # --- height (screen_resize_y, eat_empty) ---------------------------------------------------
    if new_rows < old:
        needed = old - new_rows
        below = min(max(old - 1 - cy, 0), needed)
        if below:
            rows = rows[:old - below]
        needed -= below
        history += rows[:needed]
        rows = rows[needed:]
        pullable += needed
        cy -= needed
    elif new_rows > old:
        needed = new_rows - old
        take = min(pullable, needed, len(history))
        if take:
            rows = history[len(history) - take:] + rows
            history = history[:len(history) - take]
            pullable -= take
            cy += take
        rows += [blank_row(old_cols)] * (needed - take)
    rows = [fit(row, old_cols) for row in rows]  # rows taken back from the history
    # --- width (screen_reflow) -----------------------------------------------------------------
    if new_cols != old_cols:
        grid = history + rows
        ay = len(history) + cy
        wx, wy = wrap_position(grid, cx, min(ay, len(grid) - 1)) if grid else (0, 0)
        grid = reflow(grid, new_cols)
        if len(grid) < new_rows:
            grid += [blank_row(new_cols)] * (new_rows - len(grid))
        cx, ay = unwrap_position(grid, wx, wy)
        hsize = len(grid) - new_rows
        history, rows = grid[:hsize], grid[hsize:]
        pullable = min(pullable, len(history))
        if ay >= hsize:
            cy = ay - hsize
        else:
            cx = cy = 0
    else:
        rows = [fit(row, new_cols) for row in rows]
    cx = min(cx, new_cols - 1) if new_cols else 0
    cy = min(max(cy, 0), new_rows - 1)
    return rows, history, pullable, cx, cy
