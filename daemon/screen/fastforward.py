"""What the keeper needs to know about bytes it skips instead of parsing.

Everything here runs when the parser is too slow, so it may not cost parser-like time: it
works on raw bytes with `bytes.rfind`, `bytes.split`, compiled regexes and sets (C speed),
and its interpreted work is bounded by the number of *distinct* sequences seen, never by
the number of bytes.

- `last_safe_point`: where to restart parsing so that the visible screen follows from the
  bytes after it (a reset, a clear with the cursor placed just before it, an alternate screen
  switch, or `rows` complete lines that scroll every older cell away).
- `scan_carry` → `Carry`: the state the skipped bytes leave behind, exactly or marked
  unknown — modes (alternate screen, bracketed paste, cursor visibility, autowrap, origin,
  insert, newline), the title, the scroll region, the character sets, the SGR attributes
  (exact: SGR parameters are absolute setters, so folding the distinct SGR sequences in the
  order of their last occurrence gives the same attributes as applying all of them), and
  the cursor when an absolute positioning is the last thing that moved it.
- `Footprint`: the cells a run of skipped bytes may have written, when the run is the usual
  cursor-addressed TUI output (positioning, attributes, text, erase-in-line); anything else
  counts as "every cell". The keeper marks those cells tainted; they become exact again when
  parsed bytes write them (vtscreen.py), so a flood that keeps redrawing the same cells is
  exact again after a replay of one redraw cycle (keeper.py).
- `plain_lines`: the fast text rendering of skipped lines for the scrollback (control
  sequences removed, carriage returns and backspaces applied, wrapped at the width).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_RESET = b"\x1bc"
_CLEAR = b"\x1b[2J"
_ALT = (b"1049", b"1047", b"47")

#: Sequences after which "the last `rows` lines" no longer describe the screen: cursor moves
#: up/absolute (CUU, CUP, HVP, VPA, CPL, DECSTBM, RI, DECRC/SCORC), line insert/delete, scroll.
MOTION = re.compile(rb"\x1b\[[0-9;?]*[AFHfdrLMST]|\x1b[M8]|\x1b\[u")
#: A cursor positioning right before a clear makes the clear a safe point with a known cursor.
_CUP_BEFORE = re.compile(rb"\x1b\[[0-9;]*[Hf]\Z")

#: The CSIs a carry follows: SGR, DEC private and ANSI modes, DECSTBM.
_CARRIED_CSI = re.compile(rb"\x1b\[(?:[0-9;:]*m|\??[0-9;]*[hl]|[0-9;]*r)")
_ALT_SWITCH = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
_TITLE = re.compile(rb"\x1b\][02];[^\x07\x1b]{0,4096}(?:\x07|\x1b\\)")
_CUP = re.compile(rb"\x1b\[([0-9]*)(?:;([0-9]*))?[Hf]")
#: What leaves the cursor where it is: attributes, modes (not origin/DECCOLM/alternate
#: screen), strings, character sets, erasing, inserting and deleting (tmux keeps the cursor
#: for IL/DL/ICH/DCH/ECH/ED/EL/SU/SD), BEL, SO/SI.
_NEUTRAL_TAIL = re.compile(
    rb"(?:\x1b\[[0-9;:]*m|\x1b\[\?(?!(?:[0-9;]*;)?(?:3|6|47|1047|1049)(?:;|[hl]))[0-9;]*[hl]"
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b\[[0-9;]*[JKXPLM@ST]|[\x07\x0e\x0f])*\Z")
_TABS = re.compile(rb"\x1bH|\x1b\[[0-9]*g")
#: Distinct SGR sequences folded exactly; past this many the attributes count as unknown.
_SGR_DISTINCT_MAX = 512
#: Modes the carry tracks (DEC private; 47/1047/1049 are handled as switches).
_TRACKED_PRIVATE = {b"25": "cursor_visible", b"2004": "bracketed_paste", b"7": "autowrap",
                    b"6": "origin"}
_TRACKED_ANSI = {b"4": "insert", b"20": "newline_mode"}
#: How far back from the end of a skipped run the last cursor positioning is looked for.
_CURSOR_WINDOW = 4096


@dataclass
class Carry:
    """The state left by skipped bytes. `None` means "not touched by them"."""

    reset: bool = False
    alt: bool | None = None
    alt_switches: int = 0
    #: Bytes scanned, and (start, end, on) of each alternate-screen switch, so the keeper can
    #: tell whether any skipped byte fell while the main screen was visible.
    length: int = 0
    switches: list[tuple[int, int, bool]] = field(default_factory=list)
    modes: dict[str, bool] = field(default_factory=dict)
    title: str | None = None
    #: DECSTBM parameters (top, bottom; 0 = default) of the last one, if any.
    margins: tuple[int, int] | None = None
    g0: bytes | None = None
    g1: bytes | None = None
    shift: bool | None = None
    #: SGR parameter strings to apply in order (after a reset if `sgr_reset`).
    sgr: list[bytes] = field(default_factory=list)
    sgr_reset: bool = False
    sgr_exact: bool = True
    #: Where the skipped bytes leave the cursor: ("at", row, col) 1-based from an absolute
    #: positioning, "unknown", or None when they hold nothing that moves it.
    cursor: tuple | str | None = None
    saved_unknown: bool = False
    tabs_unknown: bool = False

    def merge(self, later: "Carry") -> None:
        """Fold `later` (skipped after self) into self."""
        if later.reset:
            length = self.length
            self.__dict__.update(Carry(reset=True, length=length).__dict__)
        for name in ("alt", "title", "margins", "g0", "g1", "shift"):
            value = getattr(later, name)
            if value is not None:
                setattr(self, name, value)
        self.modes.update(later.modes)
        self.alt_switches += later.alt_switches
        self.switches = (self.switches + [(a + self.length, b + self.length, on)
                                          for a, b, on in later.switches])[-_SWITCHES_KEPT:]
        self.length += later.length
        if later.sgr_reset:
            self.sgr = list(later.sgr)
            self.sgr_reset = True
            self.sgr_exact = later.sgr_exact
        elif later.sgr:
            # Distinct sequences, last occurrence last.
            seen = set(later.sgr)
            self.sgr = [s for s in self.sgr if s not in seen] + later.sgr
            self.sgr_exact = self.sgr_exact and later.sgr_exact and len(self.sgr) <= _SGR_DISTINCT_MAX
        if later.cursor is not None:
            self.cursor = later.cursor
        self.saved_unknown = self.saved_unknown or later.saved_unknown
        self.tabs_unknown = self.tabs_unknown or later.tabs_unknown


#: Alternate-screen switches remembered per skip; past this, the main screen counts as touched.
_SWITCHES_KEPT = 64


def _distinct_last(data: bytes, regex: re.Pattern) -> list[tuple[int, bytes]]:
    """(offset of its last occurrence, sequence) for each distinct match of `regex` (which
    has no groups), oldest first: findall, set and rfind run at C speed; the interpreted
    work is per distinct sequence."""
    return sorted((data.rfind(w), w) for w in set(regex.findall(data)))


def scan_carry(data: bytes | bytearray | memoryview, runs: set[bytes] | None = None) -> Carry:
    """The state changes in `data`, in order (later wins). `runs`, if given, are the distinct
    pieces of `data` between its cursor positionings (a footprint's): the carried sequences
    are then looked for in those few pieces instead of all of `data`."""
    data = bytes(data)
    carry = Carry(length=len(data))
    if b"\x1b" not in data:  # memchr: plain text changes no mode
        carry.cursor = _cursor_after(data)
        shift = max(data.rfind(b"\x0e"), data.rfind(b"\x0f"))
        if shift >= 0:
            carry.shift = data[shift] == 0x0e
        return carry
    reset = data.rfind(_RESET)
    if reset >= 0:
        carry.reset = True
        head_title = _last_title(data[:reset])
        data = data[reset + len(_RESET):]
        carry.length = len(data) + reset + len(_RESET)
        offset = reset + len(_RESET)
    else:
        head_title = None
        offset = 0
    for m in _ALT_SWITCH.finditer(data):
        params = m.group()[3:-1].split(b";")
        on = m.group()[-1:] == b"h"
        if any(p in _ALT for p in params):
            carry.alt = on
            carry.alt_switches += 1
            if len(carry.switches) < _SWITCHES_KEPT:
                carry.switches.append((m.start() + offset, m.end() + offset, on))
    # One pass for every CSI the carry follows (SGR, modes, margins), distinct ones only.
    if runs is not None and not carry.reset:
        found = set()
        for run in runs:
            if b"\x1b[" in run:
                found.update(_CARRIED_CSI.findall(run))
        csis = sorted((data.rfind(seq), seq) for seq in found)
    else:
        csis = _distinct_last(data, _CARRIED_CSI)
    sgrs = [(pos, seq) for pos, seq in csis if seq.endswith(b"m")]
    for _, seq in csis:
        final = seq[-1:]
        if final not in b"hl":
            continue
        on = final == b"h"
        private = seq[2:3] == b"?"
        table = _TRACKED_PRIVATE if private else _TRACKED_ANSI
        for p in seq[3 if private else 2:-1].split(b";"):
            name = table.get(p)
            if name is not None:
                carry.modes[name] = on
    title = _last_title(data) if b"\x1b]" in data else None
    carry.title = title if title is not None else head_title
    margins = [seq for _, seq in csis if seq.endswith(b"r")]
    if margins:
        top, _, bottom = margins[-1][2:-1].partition(b";")
        carry.margins = (int(top or 0), int(bottom or 0))
    g0 = max((data.rfind(b"\x1b(" + f), f) for f in (b"0", b"B"))
    if g0[0] >= 0:
        carry.g0 = g0[1]
    g1 = max((data.rfind(b"\x1b)" + f), f) for f in (b"0", b"B"))
    if g1[0] >= 0:
        carry.g1 = g1[1]
    shift = max(data.rfind(b"\x0e"), data.rfind(b"\x0f"))
    if shift >= 0:
        carry.shift = data[shift] == 0x0e
    # SGR: the last reset, then the distinct sequences after it by last occurrence.
    last_reset = max(data.rfind(b"\x1b[m"), data.rfind(b"\x1b[0m"))
    if last_reset >= 0 or carry.reset:
        carry.sgr_reset = True
    carry.sgr = [seq[2:-1] for pos, seq in sgrs if pos > last_reset]
    if len(sgrs) > _SGR_DISTINCT_MAX:
        carry.sgr_exact = False
    carry.cursor = _cursor_after(data)
    carry.saved_unknown = data.find(b"\x1b7") >= 0 or data.find(b"\x1b[s") >= 0
    carry.tabs_unknown = data.find(b"\x1bH") >= 0 or (b"g" in data and _TABS.search(data) is not None)
    return carry


def _last_title(data: bytes) -> str | None:
    titles = _distinct_last(data, _TITLE)
    if not titles:
        return None
    seq = titles[-1][1]
    body = seq[4:-1] if seq.endswith(b"\x07") else seq[4:-2]
    return body.decode("utf-8", "replace")


def _cursor_after(data: bytes) -> tuple | str | None:
    """("at", row, col) if the last thing in `data` that moves the cursor is an absolute
    positioning; None if nothing in it moves the cursor; else "unknown"."""
    start = max(0, len(data) - _CURSOR_WINDOW)
    last = None
    for last in _CUP.finditer(data, start):
        pass
    if last is None:
        return None if _NEUTRAL_TAIL.match(data) is not None else "unknown"
    if _NEUTRAL_TAIL.match(data, last.end()) is None:
        return "unknown"
    return ("at", int(last.group(1) or 1) or 1, int(last.group(2) or 1) or 1)


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


def main_touched_before_enter(carry: Carry, was_alt: bool) -> bool:
    """Whether the main screen (and so its cursor) may have changed before the last switch
    to the alternate screen in the skipped bytes — then the cursor that switch saved is
    unknown."""
    enters = [i for i, (_, _, on) in enumerate(carry.switches) if on]
    if not enters or len(carry.switches) < carry.alt_switches or carry.reset:
        return True
    alt, pos = was_alt, 0
    for i, (start, end, on) in enumerate(carry.switches):
        if i > enters[-1]:
            break
        if not alt and start > pos:
            return True
        alt, pos = on, end
    return False


@dataclass(frozen=True)
class SafePoint:
    offset: int  #: where parsing restarts (the start of the sequence, or of the line)
    kind: str  #: "reset" | "clear" | "alt" | "leave" | "lines"


def last_safe_point(data: bytes | bytearray, rows: int, end: int | None = None,
                    start: int = 0) -> SafePoint | None:
    """The latest safe point in `data[start:end]`, or None."""
    end = len(data) if end is None else end
    best: SafePoint | None = None

    def consider(offset: int, kind: str) -> None:
        nonlocal best
        if offset >= 0 and (best is None or offset > best.offset):
            best = SafePoint(offset, kind)

    consider(data.rfind(_RESET, start, end), "reset")
    clear = data.rfind(_CLEAR, start, end)
    if clear >= 0:
        # `clear` (and most programs) home the cursor just before: restart there, so the
        # cursor is known after the clear.
        m = _CUP_BEFORE.search(bytes(data[max(0, clear - 16):clear]))
        consider(clear - (len(m.group()) if m else 0), "clear")
    for mode in _ALT:
        consider(data.rfind(b"\x1b[?" + mode + b"h", start, end), "alt")
        consider(data.rfind(b"\x1b[?" + mode + b"l", start, end), "leave")
    # `rows` complete lines: find the newline that ends the line `rows` lines before the last
    # newline; the safe point is just after it (which must follow a CR, so the line starts at
    # column 0).
    last_nl = data.rfind(b"\n", start, end)
    if last_nl >= 0:
        pos = last_nl
        for _ in range(rows):
            pos = data.rfind(b"\n", start, pos)
            if pos < 0:
                break
        else:
            start = pos + 1
            if (best is None or start > best.offset) and pos > 0 and data[pos - 1] == 0x0d \
                    and MOTION.search(data, start, end) is None:
                consider(start, "lines")
    return best


#: Attributes and a CR between the last text of a line and its newline.
_LINE_END = re.compile(rb"(?:\x1b\[[0-9;:]*m)*\r?")


def blind_point(data: bytes | bytearray, start: int, end: int | None = None) -> int:
    """The first place at or after `start` where parsing can restart cleanly: at a cursor
    positioning if one is near (the cursor is then known at once), else just after a
    newline if one is near (whole lines skipped: the fast path renders them, and line
    output leaves the cursor known), else at an ESC (all ASCII, so UTF-8 boundaries).
    `end` if there is none."""
    end = len(data) if end is None else end
    m = _CUP.search(data, start, min(end, start + 65536))
    if m is not None:
        return m.start()
    nl = data.find(b"\n", start, end)
    esc = data.find(b"\x1b", start, end)
    if nl >= 0 and (esc < 0 or nl < esc or _LINE_END.fullmatch(data, esc, nl) is not None):
        return nl + 1  # (an ESC that only resets attributes before the newline: the newline)
    return esc if esc >= 0 else end


# --- strings (OSC, DCS, SOS, PM, APC): never drawn, so never part of what a skip drew ----------

_STRING_INTROS = (b"\x1b]", b"\x1bP", b"\x1bX", b"\x1b^", b"\x1b_")
_STRING_ENDS = (b"\x07", b"\x18", b"\x1a", b"\x1b")


def string_body_end(data: bytes) -> int | None:
    """For `data` that starts inside a string: where the string ends (after BEL, CAN, SUB
    or ST; at an ESC that aborts it), or None if it does not end in `data`."""
    ends = [p for p in (data.find(t) for t in _STRING_ENDS) if p >= 0]
    if not ends:
        return None
    end = min(ends)
    if data[end] != 0x1b:
        return end + 1
    if end + 1 == len(data):
        return None  # maybe the first half of ST
    return end + 2 if data[end + 1] == 0x5c else end


def unterminated_string(data: bytes) -> int | None:
    """Where an unterminated string at the end of `data` starts, if there is one."""
    start = max(data.rfind(i) for i in _STRING_INTROS)
    if start < 0:
        return None
    return start if string_body_end(data[start + 2:]) is None else None


# --- footprint ---------------------------------------------------------------------------------

#: Bytes a footprint may contain besides printable text and ESC: none (CR, LF, BS, TAB move the
#: cursor in ways the footprint does not follow).
_NOT_PRINTABLE = bytes(range(0x00, 0x1b)) + bytes(range(0x1c, 0x20)) + b"\x7f"
_KEEP_PRINTABLE = bytes(b for b in range(256) if bytes([b]) not in _NOT_PRINTABLE)
#: ESC sequences other than CSI that do not move the cursor or touch cells: OSC strings,
#: character set designations, keypad modes.
_NON_CSI_NEUTRAL = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]")
#: The units of a footprint: an absolute positioning (its parameters are captured)...
_SPLIT_CUP = re.compile(rb"\x1b\[([0-9]*;?[0-9]*)[Hf]")
#: ...followed by a run of these: neutral CSIs, printable text, and erase-in-line / ECH / CUF.
_NEUTRAL_CSI = re.compile(rb"\x1b\[(?:[0-9;:]*m|\?[0-9;]*[hl]|[0-9]* q|>[0-9;]*[a-z])")
_RUN_PART = re.compile(rb"\x1b\[([0-9]*)([KXC])|([^\x1b]+)")
#: DEC private modes that change where or how text lands: not allowed in a footprint.
_LAYOUT_MODES = {b"3", b"6", b"7", b"69", b"47", b"1047", b"1049"}
#: Distinct (position, run) units one footprint looks at before giving up (→ every cell).
FOOTPRINT_UNITS_MAX = 20_000


@dataclass
class Footprint:
    """Cells a run of skipped bytes may have written: `every`, or a bit mask per row."""

    every: bool = False
    rows: dict[int, int] = field(default_factory=dict)
    #: The distinct pieces between positionings (for `scan_carry`), when worked out.
    runs: set[bytes] | None = None

    def add(self, y: int, x: int, n: int) -> None:
        if n > 0:
            self.rows[y] = self.rows.get(y, 0) | (((1 << n) - 1) << x)


class FootprintCache:
    """What earlier footprints already worked out, so that a flood repeating the same frames
    costs interpreted work only the first time: run classifications, and the union of the
    cells at every position seen since `clear`, each as wide as the widest run seen (a
    footprint reports that union: a superset of its own cells — safe, and exact enough for
    floods that keep redrawing the same cells)."""

    def __init__(self) -> None:
        #: run bytes → (width in cells, erase: None | "end" | "row", ok)
        self.runs: dict[bytes, tuple[int, str | None, bool]] = {}
        self.positions: set[bytes] = set()
        self.width = 0
        self.erase: str | None = None
        self.union = Footprint()

    def clear(self) -> None:
        """Forget the positions (the screen is exact again: older footprints are moot)."""
        self.positions = set()
        self.width = 0
        self.erase = None
        self.union = Footprint()
        if len(self.runs) > FOOTPRINT_UNITS_MAX:
            self.runs.clear()


_ERASE_RANK = {None: 0, "end": 1, "row": 2}


def footprint(data: bytes, *, rows: int, cols: int, cursor: tuple[int, int] | None,
              top: int, bottom: int, origin: bool, autowrap: bool,
              cache: FootprintCache) -> Footprint:
    """The cells `data` may write, if it is plain cursor-addressed output; else `every`.

    `cursor` is where the bytes start (row, col, 0-based), or None if unknown. The units are
    an absolute positioning and the run after it; each position counts as wide as the
    widest run (pairing them would cost a tuple per unit). Interpreted work: per distinct
    run and per position not seen before (`cache`), at most FOOTPRINT_UNITS_MAX.
    """
    fp = Footprint()
    if data.translate(None, _KEEP_PRINTABLE):
        fp.every = True  # C0 controls: relative motion the footprint does not follow
        return fp
    if data.count(b"\x1b") != data.count(b"\x1b["):
        data = _NON_CSI_NEUTRAL.sub(b"", data)
        if data.count(b"\x1b") != data.count(b"\x1b["):
            fp.every = True
            return fp
    parts = _SPLIT_CUP.split(data)
    head = parts[0]
    if head:
        if cursor is None:
            fp.every = True
            return fp
        if not _place(fp, head, cursor[0], cursor[1], rows, cols, bottom, autowrap, cache):
            return fp
    positions = set(parts[1::2])
    runs = set(parts[2::2])
    if head:
        runs.add(head)
    fp.runs = runs
    if len(runs) > FOOTPRINT_UNITS_MAX or len(positions) + len(cache.positions) > FOOTPRINT_UNITS_MAX:
        fp.every = True
        return fp
    classified = cache.runs
    width, erase = cache.width, cache.erase
    for run in runs:
        info = classified.get(run)
        if info is None:
            info = classified[run] = _classify_run(run)
        if not info[2]:
            fp.every = True
            return fp
        width = max(width, info[0])
        if _ERASE_RANK[info[1]] > _ERASE_RANK[erase]:
            erase = info[1]
    if width != cache.width or erase != cache.erase:
        # Wider than before: every position seen so far is placed again.
        cache.width, cache.erase, cache.union = width, erase, Footprint()
        new = positions | cache.positions
    else:
        new = positions - cache.positions
    union = cache.union
    for pos in new:
        r, _, c = pos.partition(b";")
        y = (int(r) if r else 1) or 1
        x = (int(c) if c else 1) or 1
        y -= 1
        if origin:
            y = bottom if y > bottom - top else y + top
        if not _place_width(union, width, erase, min(y, rows - 1), min(x - 1, cols - 1),
                            rows, cols, bottom, autowrap):
            cache.clear()
            fp.every = True
            return fp
    cache.positions |= new
    for y, mask in union.rows.items():
        fp.rows[y] = fp.rows.get(y, 0) | mask
    return fp


def _place(fp: Footprint, run: bytes, y: int, x: int, rows: int, cols: int, bottom: int,
           autowrap: bool, cache: FootprintCache) -> bool:
    """Add the cells `run` writes from (y, x); False (and `every`) if it does more."""
    info = cache.runs.get(run)
    if info is None:
        info = cache.runs[run] = _classify_run(run)
    width, erase, ok = info
    if not ok:
        fp.every = True
        return False
    return _place_width(fp, width, erase, y, x, rows, cols, bottom, autowrap)


def _place_width(fp: Footprint, width: int, erase: str | None, y: int, x: int, rows: int,
                 cols: int, bottom: int, autowrap: bool) -> bool:
    """Add a span of `width` cells from (y, x) (wrapping) and what `erase` clears after it;
    False (and `every`) if it would scroll."""
    cx = x
    if not autowrap:
        fp.add(y, x, min(width, cols - x))
        cx = min(x + width, cols - 1)
    else:
        left = width
        while True:
            n = min(left, cols - cx)
            fp.add(y, cx, n)
            left -= n
            cx += n
            if left <= 0:
                break
            if y == bottom or y == rows - 1:
                fp.every = True  # the text wraps past the bottom: it scrolls
                return False
            y, cx = y + 1, 0
    if erase == "row":
        fp.add(y, 0, cols)
    elif erase == "end":
        start = min(cx, cols - 1)
        fp.add(y, start, cols - start)
    return True


def _classify_run(run: bytes) -> tuple[int, str | None, bool]:
    """(cells written, erase kind, ok) for the bytes between two positionings."""
    run = _NEUTRAL_CSI.sub(lambda m: b"" if _neutral_ok(m.group()) else b"\x00", run)
    if b"\x00" in run:
        return 0, None, False
    width = 0
    erase = None
    for m in _RUN_PART.finditer(run):
        if m.group(3) is not None:
            text = m.group(3)
            if text.isascii():
                width += len(text)
            else:
                # Upper bound: a character is at most two cells.
                chars = text.decode("utf-8", "replace")
                width += sum(2 if ord(ch) >= 0x1100 else 1 for ch in chars)
        else:
            n = int(m.group(1) or 1) or 1
            final = m.group(2)
            if final == b"C":
                width += n
            elif final == b"X":
                width += n
            else:  # K
                how = int(m.group(1) or 0)
                erase = "row" if how in (1, 2) else "end"
    if _RUN_PART.sub(b"", run):
        return 0, None, False  # something else (another CSI): not a plain run
    return width, erase, True


def _neutral_ok(seq: bytes) -> bool:
    if seq.startswith(b"\x1b[?"):
        return not any(p in _LAYOUT_MODES for p in seq[3:-1].split(b";"))
    return True


# --- plain rendering of skipped lines ---------------------------------------------------------

_STRIP = re.compile(
    r"\x1b\[[\x20-\x3f]*[\x40-\x7e]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]|[\x00-\x07\x0b-\x0c\x0e-\x1f\x7f]")


def plain_lines(data: bytes, cols: int, limit: int, *, first_prefix: str = "") -> tuple[int, list[str]]:
    """The rows that the complete lines of `data` (up to its last LF) occupy on a terminal
    `cols` wide, rendered fast: control sequences removed, CR and BS applied, tabs every 8
    columns, long lines wrapped. Returns (rows counted, the last `limit` rows); rows before
    the kept ones are counted as one per line (their wrapping is not worked out)."""
    last = data.rfind(b"\n")
    if last < 0:
        return 0, []
    total_lines = data.count(b"\n", 0, last + 1)
    if limit <= 0:
        return total_lines, []
    start = 0
    pos = last
    for _ in range(limit):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            break
    else:
        start = pos + 1
    text = data[start:last].decode("utf-8", "replace")
    text = _STRIP.sub("", text)
    rendered: list[str] = []
    lines = text.split("\n")
    if start == 0 and first_prefix:
        lines[0] = first_prefix + lines[0]
    for line in lines:
        rendered += _plain_rows(line, cols)
    skipped = total_lines - len(lines)
    kept = rendered[-limit:] if limit else []
    return skipped + len(rendered), kept


def _plain_rows(line: str, cols: int) -> list[str]:
    line = line.rstrip("\r")
    if "\r" in line or "\b" in line or "\t" in line:
        cells: list[str] = []
        x = 0
        for ch in line:
            if ch == "\r":
                x = 0
            elif ch == "\b":
                x = max(x - 1, 0)
            else:
                if ch == "\t":
                    n = 8 - x % 8
                    ch = " "
                else:
                    n = 1
                for _ in range(n):
                    if x < len(cells):
                        cells[x] = ch
                    else:
                        cells.append(ch)
                    x += 1
        line = "".join(cells)
    line = line.rstrip(" ")
    if len(line) <= cols:
        return [line]
    return [line[i:i + cols].rstrip(" ") for i in range(0, len(line), cols)]
