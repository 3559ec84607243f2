"""The screen as a value: `ScreenSnapshot`, what the keeper renders at one revision.

The store keeps its own form of it (`vigil.daemon.store.StoredScreen`, bounded by the
spec's 64 KiB of screen text per execution), converted in one place
(`runtime/manager.py`, `stored_screen`).
"""

from __future__ import annotations

from typing import Literal

import msgspec


Fidelity = Literal["exact", "fast_forwarded"]


class ScreenSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The visible screen of one terminal at one revision."""

    #: Advances whenever any other field would read differently (text, colours of a row,
    #: cursor, modes, title, fidelity). Starts at 1 for the first snapshot of a keeper.
    revision: int
    #: "exact": every byte since the last safe point was parsed in order; "fast_forwarded":
    #: bytes were skipped to keep up (see keeper.py, "Fidelity").
    fidelity: Fidelity
    rows: int
    cols: int
    #: Text of each row, wide characters once, trailing blanks trimmed; `rows` entries.
    lines: list[str]
    #: 0-based (row, col) of the cursor; col is at most cols - 1.
    cursor: tuple[int, int]
    cursor_visible: bool = True
    alt_screen: bool = False
    bracketed_paste: bool = False
    title: str = ""

    @property
    def text(self) -> str:
        """The rows joined by newlines, trailing empty rows removed."""
        return "\n".join(self.lines).rstrip("\n")
