"""Where the keeper may jump to when it is behind, and what it must carry across the jump.

All of it works on raw bytes with `bytes.rfind` and compiled bytes regexes (C speed): it runs
exactly when pyte is too slow, so it must not cost pyte-like time.

Safe points (the latest one in the backlog wins; each is a place from which the visible
screen follows from the bytes after it, given the carried modes):

- `reset`:  RIS `ESC c` — everything resets.
- `clear`:  ED 2 `ESC [ 2 J` — every cell is cleared.
- `alt`:    alternate screen enter `ESC [ ? 1049|1047|47 h` — the alternate screen starts blank.
- `leave`:  alternate screen leave `… l` — the main screen comes back; it is exact only if
            nothing skipped touched it (keeper.py tracks that).
- `lines`:  the start of a line with at least `rows` complete lines after it and no cursor
            motion other than CR/LF among them: scrolling that many lines pushes every older
            cell off a terminal whose cursor was at the bottom (where line output leaves it).

Carried modes (scanned over the skipped bytes): alternate screen on/off, bracketed paste
(DECSET 2004), cursor visibility (DECTCEM 25), title (OSC 0/2), and SGR. SGR is carried from
the last `_SGR_WINDOW` bytes before the jump only: it is cumulative, so an exact value
would need every SGR since the last reset; the window makes the cost bounded, and colours
(not text) are what an old unreset attribute can get wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RESET = b"\x1bc"
_CLEAR = b"\x1b[2J"
_ALT = (b"1049", b"1047", b"47")

#: Sequences after which "the last `rows` lines" no longer describe the screen: cursor moves
#: up/absolute (CUU, CUP, HVP, VPA, CPL, DECSTBM, RI, DECRC/SCORC), line insert/delete, scroll.
_MOTION = re.compile(rb"\x1b\[[0-9;?]*[AFHfdrLMST]|\x1b[M8]|\x1b\[u")

#: One literal ESC first, then the alternatives: sre then searches for the ESC at C speed
#: (a top-level alternation of three ESC-led branches is tried at every byte: this scan of
#: skipped output was half the daemon's CPU during a 100 MB flood).
_MODES = re.compile(
    rb"\x1b(?:\[\?([0-9;]+)([hl])|(c)|\]([02]);([^\x07\x1b]{0,4096})(?:\x07|\x1b\\))"
)
_SGR = re.compile(rb"\x1b\[([0-9;:]*)m")
_SGR_RESETS = (b"\x1b[m", b"\x1b[0m")
#: Alternate-screen switches remembered per skip; past this, the main screen counts as touched.
_SWITCHES_KEPT = 64
#: Bytes before a jump searched for SGR: 64 KiB holds hundreds of coloured lines; scanning
#: it costs well under a millisecond.
_SGR_WINDOW = 64 * 1024


@dataclass
class Carry:
    """Mode changes found in skipped bytes; `None` means "not touched"."""

    reset: bool = False
    alt: bool | None = None
    alt_switches: int = 0
    #: Bytes scanned, and (start, end, on) of each alternate-screen switch, so the keeper can
    #: tell whether any skipped byte fell while the main screen was visible.
    length: int = 0
    switches: list[tuple[int, int, bool]] = field(default_factory=list)
    bracketed_paste: bool | None = None
    cursor_visible: bool | None = None
    title: str | None = None
    sgr: list[list[int]] = field(default_factory=list)
    sgr_reset: bool = False

    def merge(self, later: "Carry") -> None:
        """Fold `later` (skipped after self) into self."""
        if later.reset:
            length = self.length
            self.__dict__.update(Carry(reset=True, length=length).__dict__)
        for name in ("alt", "bracketed_paste", "cursor_visible", "title"):
            value = getattr(later, name)
            if value is not None:
                setattr(self, name, value)
        self.alt_switches += later.alt_switches
        self.switches = (self.switches + [(a + self.length, b + self.length, on) for a, b, on in later.switches])[-_SWITCHES_KEPT:]
        self.length += later.length
        if later.sgr_reset:
            self.sgr = list(later.sgr)
            self.sgr_reset = True
        else:
            self.sgr = (self.sgr + later.sgr)[-64:]


def scan_carry(data: bytes | bytearray | memoryview) -> Carry:
    """The mode changes in `data`, in order (later wins)."""
    data = bytes(data)
    carry = Carry(length=len(data))
    if b"\x1b" not in data:  # memchr: plain text changes no mode and no SGR
        return carry
    for m in _MODES.finditer(data):
        if m.group(3):
            carry = Carry(reset=True, length=len(data))
            continue
        if m.group(4) is not None:
            carry.title = m.group(5).decode("utf-8", "replace")
            continue
        on = m.group(2) == b"h"
        for p in m.group(1).split(b";"):
            if p in _ALT:
                carry.alt = on
                carry.alt_switches += 1
                if len(carry.switches) < _SWITCHES_KEPT:
                    carry.switches.append((m.start(), m.end(), on))
            elif p == b"2004":
                carry.bracketed_paste = on
            elif p == b"25":
                carry.cursor_visible = on
    start = max(0, len(data) - _SGR_WINDOW)
    last_reset = max(data.rfind(r, start) for r in _SGR_RESETS)
    if last_reset >= 0:
        carry.sgr_reset = True
        start = last_reset
    elif carry.reset:
        carry.sgr_reset = True
    for m in _SGR.finditer(data, start):
        carry.sgr.append(_sgr_ints(m.group(1)))
    carry.sgr = carry.sgr[-64:]
    return carry


def main_touched(carry: Carry, was_alt: bool) -> bool:
    """Whether any skipped byte may have drawn on the main screen, given the screen state
    (`was_alt`) where the skip began. Conservative when switches were not all recorded."""
    if carry.reset or len(carry.switches) < carry.alt_switches:
        return True
    alt, pos = was_alt, 0
    for start, end, on in carry.switches:
        if not alt and start > pos:
            return True
        alt, pos = on, end
    return not alt and carry.length > pos


def _sgr_ints(p: bytes) -> list[int]:
    if b":" in p:
        return [0] if not p else []  # colon forms: carried as nothing (rare; colours only)
    return [min(int(x), 9999) if x and len(x) < 6 else 0 for x in p.split(b";")] if p else [0]


@dataclass(frozen=True)
class SafePoint:
    offset: int  #: where parsing restarts (the start of the sequence, or of the line)
    kind: str  #: "reset" | "clear" | "alt" | "leave" | "lines"


def last_safe_point(data: bytes | bytearray, rows: int, end: int | None = None) -> SafePoint | None:
    """The latest safe point in `data[:end]`, or None."""
    end = len(data) if end is None else end
    best: SafePoint | None = None

    def consider(offset: int, kind: str) -> None:
        nonlocal best
        if offset >= 0 and (best is None or offset > best.offset):
            best = SafePoint(offset, kind)

    consider(data.rfind(_RESET, 0, end), "reset")
    consider(data.rfind(_CLEAR, 0, end), "clear")
    for mode in _ALT:
        consider(data.rfind(b"\x1b[?" + mode + b"h", 0, end), "alt")
        consider(data.rfind(b"\x1b[?" + mode + b"l", 0, end), "leave")
    # `rows` complete lines: find the newline that ends the line `rows` lines before the last
    # newline; the safe point is just after it.
    last_nl = data.rfind(b"\n", 0, end)
    if last_nl >= 0:
        pos = last_nl
        for _ in range(rows):
            pos = data.rfind(b"\n", 0, pos)
            if pos < 0:
                break
        else:
            start = pos + 1
            if (best is None or start > best.offset) and _MOTION.search(data, start, end) is None:
                consider(start, "lines")
    return best


def blind_point(data: bytes | bytearray, start: int, end: int | None = None) -> int:
    """The first place at or after `start` where parsing can restart cleanly: just after a
    newline or at an ESC (both ASCII, so also a UTF-8 boundary). `end` if there is none."""
    end = len(data) if end is None else end
    nl = data.find(b"\n", start, end)
    esc = data.find(b"\x1b", start, end)
    candidates = [p for p in (nl + 1 if nl >= 0 else -1, esc) if p >= 0]
    return min(candidates) if candidates else end
