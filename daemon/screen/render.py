"""Text and ANSI renderings of a `VtScreen` row or screen.

Text rows skip the `""` stub a wide character leaves in its second cell, so the character
appears once. The ANSI rendering re-encodes each cell's attributes as SGR, for
`vigil screen --ansi` and for repainting a human terminal that attaches.
"""

from __future__ import annotations

from pyte import graphics as g
from pyte.screens import Char

_FG = {name: code for code, name in {**g.FG_ANSI, **g.FG_AIXTERM}.items()}
_BG = {name: code for code, name in {**g.BG_ANSI, **g.BG_AIXTERM}.items()}


def row_text(row, cols: int) -> str:
    """One row's text, trailing blanks trimmed."""
    if not row:
        return ""
    return "".join([row[x].data for x in range(cols)]).rstrip(" ")


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


def sgr_for(attrs: Char) -> str:
    """`CSI 0;… m` selecting exactly these attributes."""
    parts = ["0"]
    if attrs.bold:
        parts.append("1")
    if attrs.italics:
        parts.append("3")
    if attrs.underscore:
        parts.append("4")
    if attrs.blink:
        parts.append("5")
    if attrs.reverse:
        parts.append("7")
    if attrs.strikethrough:
        parts.append("9")
    parts += _colour(attrs.fg, _FG, 38)
    parts += _colour(attrs.bg, _BG, 48)
    return "\x1b[" + ";".join(parts) + "m"


def row_ansi(row, cols: int) -> str:
    """One row with SGR changes, trailing default blanks trimmed, attributes reset at the end."""
    if not row:
        return ""
    last = cols
    while last > 0:
        c = row[last - 1]
        if c.data not in (" ", "") or c.bg != "default" or c.reverse or c.underscore:
            break
        last -= 1
    out: list[str] = []
    current = None
    for x in range(last):
        c = row[x]
        if c.data == "":
            continue
        key = c[1:]
        if key != current:
            out.append(sgr_for(c))
            current = key
        out.append(c.data)
    if current is not None:
        out.append("\x1b[0m")
    return "".join(out)
