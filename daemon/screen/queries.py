"""Terminal queries found in the raw output, and the answers a terminal would give.

TUIs ask the terminal who it is and where the cursor is, and many wait for the answer before
drawing (an unanswered DA1 hangs some of them at start). With no human terminal attached,
vigil is the terminal, so the keeper answers. The scan runs on raw bytes at feed time — one
compiled bytes regex, C speed — so answers do not depend on the screen keeping up (only the
cursor position report needs the screen, see keeper.py).

The identity we give (documented, chosen once):

- DA1 `CSI c` / `CSI 0 c` → `CSI ? 62 ; 22 c`: a VT220-class terminal (62) with ANSI colour
  (22). Programs take that as "VT220 features, colour"; claiming more (sixel 4, DECRQM…)
  would invite queries we ignore.
- DA2 `CSI > c` / `CSI > 0 c` → `CSI > 1 ; 10 ; 0 c`: terminal type 1 (VT220), firmware
  version 10, no ROM cartridge. A low version keeps vim from assuming xterm-only features.
- DSR `CSI 5 n` → `CSI 0 n` (terminal OK).
- CPR `CSI 6 n` → `CSI row ; col R`, 1-based, relative to the top margin in origin mode.

A query split across two feeds is found once: the scan keeps the last `_KEEP` bytes of the
previous feed and only reports matches that end in the new data.
"""

from __future__ import annotations

import enum
import re

DA1_REPLY = b"\x1b[?62;22c"
DA2_REPLY = b"\x1b[>1;10;0c"
DSR_REPLY = b"\x1b[0n"

_QUERY = re.compile(rb"\x1b\[(?:0?c|>0?c|[56]n)")
#: Longest query is `ESC [ > 0 c` (5 bytes): keeping 4 bytes finds any query cut in two.
_KEEP = 4


class Query(enum.Enum):
    DA1 = "da1"
    DA2 = "da2"
    DSR = "dsr"
    CPR = "cpr"


def _kind(match: bytes) -> Query:
    last = match[-1:]
    if last == b"c":
        return Query.DA2 if match[2:3] == b">" else Query.DA1
    return Query.CPR if match[2:3] == b"6" else Query.DSR


def cpr_reply(row: int, col: int) -> bytes:
    """`CSI row ; col R` with 1-based coordinates."""
    return b"\x1b[%d;%dR" % (row, col)


class QueryScanner:
    """Finds queries in a byte stream fed in arbitrary pieces."""

    def __init__(self) -> None:
        self._tail = b""

    def reset(self) -> None:
        self._tail = b""

    def scan(self, data: bytes) -> list[tuple[Query, int]]:
        """Queries completed by `data`, each with the offset in `data` just after it."""
        if not data:
            return []
        tail = self._tail
        hay = tail + data if tail else data
        self._tail = hay[-_KEEP:]
        if b"\x1b" not in hay:
            return []
        skip = len(tail)
        return [(_kind(m.group()), m.end() - skip) for m in _QUERY.finditer(hay) if m.end() > skip]
