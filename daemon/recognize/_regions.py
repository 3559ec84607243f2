"""Screen regions: which part of the screen a rule looks at.

A region is named in a manifest as a string:

- `whole`: every row, trailing padding stripped, joined with `\\n`.
- `bottom_non_empty_lines(n)`: the last `n` rows that are not blank, in screen order. TUIs
  draw their prompt, spinner and dialogs at the bottom; blank rows below (a short screen)
  do not count.
- `after_last_horizontal_rule`: the rows after the last horizontal rule (see
  `is_horizontal_rule`); empty when the screen has no rule, so nothing matches there.
- `osc_title`: the window title set with OSC 0/2.

Regions are computed lazily, once per evaluation, by `ScreenView`, so a manifest whose
rules all look at the bottom three rows never joins the whole screen.
"""

from __future__ import annotations

import re

from ._model import RecognitionInput

#: Upper bound of `bottom_non_empty_lines(n)`: Settings.terminal_rows allows 1000 rows.
MAX_BOTTOM_LINES = 1000

_BOTTOM = re.compile(r"bottom_non_empty_lines\((\d{1,4})\)\Z")

#: Box-drawing horizontals used by TUIs (Ink, ratatui) for rules and box edges.
_RULE_CHARS = frozenset("─━═╌╍┄┅┈┉╴╶╸╺")
#: Corners and tees that may end a rule (`╰────╯`, `├────┤`).
_RULE_ENDS = frozenset("╭╮╰╯┌┐└┘├┤┬┴┼╞╡╘╛╒╕")
#: Shortest rule: long enough that a stray `──` in text is not a rule; short enough for a
#: narrow 20-column terminal. TUIs draw rules across the whole width (80+ columns).
MIN_RULE_CHARS = 8


class RegionError(ValueError):
    """A region name is not one of the four forms."""


def parse_region(spec: object) -> str:
    """Validate a region name and return it in canonical form.

    Raises:
        RegionError: not a string, or not `whole`, `bottom_non_empty_lines(1..1000)`,
            `after_last_horizontal_rule` or `osc_title`.
    """
    if not isinstance(spec, str):
        raise RegionError(f"region must be a string, not {type(spec).__name__}")
    if spec in ("whole", "after_last_horizontal_rule", "osc_title"):
        return spec
    m = _BOTTOM.match(spec)
    if m:
        n = int(m.group(1))
        if 1 <= n <= MAX_BOTTOM_LINES:
            return f"bottom_non_empty_lines({n})"
        raise RegionError(f"bottom_non_empty_lines(n) needs 1 <= n <= {MAX_BOTTOM_LINES}, got {n}")
    raise RegionError(
        f"unknown region {spec!r} (expected whole, bottom_non_empty_lines(n), "
        "after_last_horizontal_rule or osc_title)"
    )


def is_horizontal_rule(line: str) -> bool:
    """A row that is only a box-drawing horizontal line, optionally capped by corners."""
    s = line.strip()
    if s and s[0] in _RULE_ENDS:
        s = s[1:]
    if s and s[-1] in _RULE_ENDS:
        s = s[:-1]
    return len(s) >= MIN_RULE_CHARS and all(c in _RULE_CHARS for c in s)


class ScreenView:
    """One input, with its regions computed on first use and cached.

    Lists of region rows are kept too, because `line_regex` tests rows one by one.
    """

    __slots__ = ("inp", "_rows", "_cache")

    def __init__(self, inp: RecognitionInput) -> None:
        self.inp = inp
        self._rows: list[str] | None = None
        self._cache: dict[str, tuple[str, list[str]]] = {}

    def rows(self) -> list[str]:
        """All rows with the terminal's trailing padding removed."""
        if self._rows is None:
            self._rows = [r.rstrip() for r in self.inp.lines]
        return self._rows

    def region(self, name: str) -> tuple[str, list[str]]:
        """(text joined with `\\n`, rows) of a canonical region name."""
        hit = self._cache.get(name)
        if hit is not None:
            return hit
        if name == "osc_title":
            rows = [self.inp.title]
        elif name == "whole":
            rows = self.rows()
        elif name == "after_last_horizontal_rule":
            all_rows = self.rows()
            rows = []
            for i in range(len(all_rows) - 1, -1, -1):
                if is_horizontal_rule(all_rows[i]):
                    rows = all_rows[i + 1 :]
                    break
        else:  # bottom_non_empty_lines(n), validated by parse_region
            n = int(name[len("bottom_non_empty_lines(") : -1])
            rows = []
            for r in reversed(self.rows()):
                if r.strip():
                    rows.append(r)
                    if len(rows) == n:
                        break
            rows.reverse()
        hit = ("\n".join(rows), rows)
        self._cache[name] = hit
        return hit

    def cursor_text(self) -> str:
        """The cursor's row left of the cursor, unstripped (`user@host:~$ `)."""
        row, col = self.inp.cursor
        if 0 <= row < len(self.inp.lines):
            return self.inp.lines[row][: max(col, 0)]
        return ""
