"""Text and ANSI renderings of a screen row (a list of `Char` cells).

Text rows skip the `""` stub a wide character leaves in its second cell, so the character
appears once; both renderings work per row with C-level `join`/`map`/`groupby`, never a
Python loop per cell on the text path. The ANSI rendering re-encodes each cell's attributes
as SGR, for `vigil screen --ansi`, the scrollback, and for repainting a human terminal that
attaches.
"""

from __future__ import annotations

from itertools import groupby, islice
from operator import itemgetter

from pyte import graphics as g
from pyte.screens import Char

_FG = {name: code for code, name in {**g.FG_ANSI, **g.FG_AIXTERM}.items()}
_BG = {name: code for code, name in {**g.BG_ANSI, **g.BG_AIXTERM}.items()}
_DATA = itemgetter(0)
_ATTRS = itemgetter(1, 2, 3, 4, 5, 6, 7, 8)
_BLANK = Char(" ", "default", "default", False, False, False, False, False, False)
_SGR_CACHE: dict[tuple, str] = {}


def cells_text(cells) -> str:
    """The text of a sequence of cells, trailing blanks trimmed."""
    return "".join(map(_DATA, cells)).rstrip(" ")


def row_text(row) -> str:
    """One row's text, trailing blanks trimmed (a vtscreen `Row`: only `row[:row.used]`)."""
    fill = row.fill
    if fill is not None:
        return (fill.data * row.used).rstrip(" ")
    return cells_text(islice(row.cells, row.used))


def _colour(value: str, names: dict[str, int], extended: int) -> list[str]:
    if value == "default":
        return []
    code = names.get(value)
    if code is not None:
        return [str(code)]
    if len(value) == 6:
        try:
            r, gr, b = int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
        except ValueError:
            return []
        return [str(extended), "2", str(r), str(gr), str(b)]
    return []


def sgr_for(attrs) -> str:
    """`CSI 0;… m` selecting exactly these attributes (`attrs` is a `Char` or its tail)."""
    key = tuple(attrs)[-8:]
    cached = _SGR_CACHE.get(key)
    if cached is not None:
        return cached
    fg, bg, bold, italics, underscore, strikethrough, reverse, blink = key
    parts = ["0"]
    if bold:
        parts.append("1")
    if italics:
        parts.append("3")
    if underscore:
        parts.append("4")
    if blink:
        parts.append("5")
    if reverse:
        parts.append("7")
    if strikethrough:
        parts.append("9")
    parts += _colour(fg, _FG, 38)
    parts += _colour(bg, _BG, 48)
    out = "\x1b[" + ";".join(parts) + "m"
    if len(_SGR_CACHE) < 4096:
        _SGR_CACHE[key] = out
    return out


def _visible(c) -> bool:
    return c.data not in (" ", "") or c.bg != "default" or c.reverse or c.underscore


def cells_ansi(cells) -> str:
    """Cells with SGR changes, trailing default blanks trimmed, attributes reset at the end;
    "" when there is nothing to show."""
    last = len(cells)
    while last > 0:
        c = cells[last - 1]
        if c is not _BLANK and _visible(c):
            break
        last -= 1
    if last == 0:
        return ""
    out: list[str] = []
    for attrs, group in groupby(cells[:last], _ATTRS):
        out.append(sgr_for(attrs))
        out.append("".join(map(_DATA, group)))
    out.append("\x1b[0m")
    return "".join(out)


def uniform_ansi(text: str, attrs) -> str:
    """`text` drawn with one set of attributes, as `cells_ansi` renders such cells."""
    if not (attrs.bg != "default" or attrs.reverse or attrs.underscore):
        text = text.rstrip(" ")
    if not text:
        return ""
    return sgr_for(attrs) + text + "\x1b[0m"


def row_ansi(row) -> str:
    """One row (a vtscreen `Row`) with SGR changes: see `cells_ansi`."""
    return cells_ansi(row.cells[:row.used])
