"""What the keeper needs to know about bytes it skips instead of parsing.

Everything here runs when the parser is too slow, so it may not cost parser-like time: it
works on raw bytes with `bytes.rfind`, `bytes.split`, compiled regexes and sets (C speed),
and its interpreted work is bounded by the number of *distinct* sequences seen, never by
the number of bytes.

- `last_safe_point`: where to restart parsing so that the visible screen follows from the
  bytes after it (a reset, a clear with the cursor placed just before it, DECALN, an
  alternate screen switch, or `rows` complete lines — no motion or screen switch among
  them — that scroll every older cell away).
- `scan_carry` → `Carry`: the state the skipped bytes leave behind, exactly or marked
  unknown — modes (alternate screen, bracketed paste, cursor visibility, autowrap, origin,
  insert, newline), the title, the scroll region, the character sets, the SGR attributes
  (exact: SGR parameters are absolute setters, so folding the distinct SGR sequences in the
  order of their last occurrence gives the same attributes as applying all of them), and
  the cursor when an absolute positioning is the last thing that moved it. Restores are
  followed: a save … restore pair (DECSC/DECRC, SCOSC/SCORC; 1049h/1049l) brings back
  what the save saw, so attributes, position (and for DECRC, character sets and origin
  mode) follow from the bytes with each restored stretch taken out (`_restore_chain`),
  starting from where they started, from the defaults after RIS, or from a save made
  before the bytes (`Carry.base`).
- `follow_lines`: where line output leaves a cursor whose row was known — at the bottom
  margin once enough line feeds came — so a log under a status line (save, position, draw,
  restore, line) keeps a known cursor across skips.
- `Footprint`: the cells a run of skipped bytes may have written, when the run is the usual
  cursor-addressed TUI output (positioning, attributes, text, erase-in-line); anything else
  counts as "every cell". The keeper marks those cells tainted; they become exact again when
  parsed bytes write them (vtscreen.py), so a flood that keeps redrawing the same cells is
  exact again after a replay of one redraw cycle (keeper.py).
- `plain_lines`: the fast text rendering of skipped lines for the scrollback (control
  sequences removed, carriage returns and backspaces applied, wrapped at the width).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_RESET = b"\x1bc"
_CLEAR = b"\x1b[2J"
_ALT = (b"1049", b"1047", b"47")

#: Sequences after which "the last `rows` lines" no longer describe the screen: cursor moves
#: up/absolute (CUU, CUP, HVP, VPA, CPL, DECSTBM, RI, DECRC/SCORC), line insert/delete, scroll.
#: (One literal ESC in front: the regex engine then skips to each ESC at C speed.)
MOTION = re.compile(rb"\x1b(?:\[[0-9;?]*[AFHfdrLMSTu]|[M8])")
#: A cursor positioning right before a clear makes the clear a safe point with a known cursor.
_CUP_BEFORE = re.compile(rb"\x1b\[[0-9;]*[Hf]\Z")

#: A save … restore pair with no other save inside (the restore answers the nearest save).
#: (Unrolled: runs without ESC go at C speed, each ESC is looked at once.)
_SAVE_RESTORE = re.compile(rb"(?:\x1b7|\x1b\[s)[^\x1b]*(?:\x1b(?!7|8|c|\[s|\[u)[^\x1b]*)*(?:\x1b8|\x1b\[u)")
#: The same, with no screen switch inside either (for `_restore_chain`, which follows those).
_SAVE_RESTORE_PLAIN = re.compile(
    rb"(?:\x1b7|\x1b\[s)[^\x1b]*(?:\x1b(?!7|8|c|\[s|\[u|\[\?(?:[0-9;]*;)?(?:47|1047|1049)[;hl])[^\x1b]*)*"
    rb"(?:\x1b8|\x1b\[u)")


def _strip_pairs(data: bytes, pairs: re.Pattern) -> bytes:
    """`data` with each save … restore pair (RIS and, for `_SAVE_RESTORE_PLAIN`, screen
    switches not inside) replaced by a bare save: the restore brings back what the save saw,
    and the save stays in force for a later restore. Repeated while a restore meets the
    save left before it."""
    while True:
        stripped = pairs.sub(b"\x1b7", data)
        if len(stripped) == len(data) or (b"\x1b8" not in stripped and b"\x1b[u" not in stripped):
            return stripped
        data = stripped
#: Every sequence a carry follows, for one pass: SGR, DEC private and ANSI modes, DECSTBM,
#: TBC and SCOSC (CSI); character set designations, DECSC, HTS, a title's start (ESC). (SO
#: and SI are found by memrchr: in the pattern they would cost the regex its literal prefix.)
_CARRIED = re.compile(rb"\x1b(?:\[(?:[0-9;:]*m|\??[0-9;]*[hlr]|[0-9]*g|s)|[()][0-9A-Za-z]|[7H]|\][02];)")
_ALT_SWITCH = re.compile(rb"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
_TITLE = re.compile(rb"\x1b\][02];[^\x07\x1b]{0,4096}(?:\x07|\x1b\\)")
_CUP = re.compile(rb"\x1b\[([0-9]*)(?:;([0-9]*))?[Hf]")
#: What leaves the cursor where it is: attributes, modes (not origin/DECCOLM/alternate
#: screen), strings, character sets, erasing, inserting and deleting (tmux keeps the cursor
#: for IL/DL/ICH/DCH/ECH/ED/EL/SU/SD), BEL, SO/SI.
_NEUTRAL_TAIL = re.compile(
    rb"(?:\x1b\[[0-9;:]*m|\x1b\[\?(?!(?:[0-9;]*;)?(?:3|6|47|1047|1049)(?:;|[hl]))[0-9;]*[hl]"
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b7|\x1b\[[0-9;]*[JKXPLM@ST]|[\x07\x0e\x0f])*\Z")
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
    #: The screen shown when the last reset came (set by a switch before it), if any.
    alt_at_reset: bool | None = None
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
    #: A restore (DECRC, SCORC) of what was saved before these bytes: character sets and
    #: origin mode come back from it (and `base` says where the attributes come from).
    restored: bool = False
    #: Where the attributes and position that `sgr` and `cursor` apply to come from: "start"
    #: (where the bytes began), "reset" (defaults, home: RIS), "saved" (restored from the
    #: DECSC save made before the bytes), "alt_saved" (from the 1049h save before them).
    base: str = "start"
    #: What the last 1049h entered from the main screen saved, if one did: "unknown", or
    #: (base, sgr_reset, sgr, sgr_exact, cursor) as for the fields above, at that point.
    alt_save: tuple | str | None = None
    #: The bytes the attributes, character sets and cursor follow from: the whole bytes but
    #: for save … restore pairs (and everything before an unmatched restore).
    state: bytes = b""
    saved_unknown: bool = False
    tabs_unknown: bool = False


#: Alternate-screen switches remembered per skip; past this, the main screen counts as touched.
_SWITCHES_KEPT = 64


def _distinct_last(data: bytes, regex: re.Pattern) -> list[bytes]:
    """Each distinct match of `regex` (which has no groups), ordered by its last occurrence:
    one findall, and a dict built at C speed (a later occurrence overwrites the index of an
    earlier one), so the interpreted work is per distinct sequence."""
    found = regex.findall(data)
    last = dict(zip(found, range(len(found))))
    return sorted(last, key=last.__getitem__)


def scan_carry(data: bytes | bytearray | memoryview, runs: set[bytes] | None = None, *,
               was_alt: bool = False, alt_saved: bool = True) -> Carry:
    """The state changes in `data`, in order (later wins): one regex pass for every carried
    sequence. `runs`, if given, are the distinct pieces of `data` between its cursor
    positionings (a footprint's): the carried sequences are then looked for in those few
    pieces instead of all of `data`. `was_alt`: the alternate screen is shown before `data`;
    `alt_saved`: a 1049h saved a cursor before `data` (else a 1049l restores nothing)."""
    data = bytes(data)
    carry = Carry(length=len(data))
    if b"\x1b" not in data:  # memchr: plain text changes no mode
        shift = max(data.rfind(b"\x0e"), data.rfind(b"\x0f"))
        if shift >= 0:
            carry.shift = data[shift] == 0x0e
        carry.cursor = _cursor_after(data)
        carry.state = data
        return carry
    whole = data
    reset = data.rfind(_RESET)
    if reset >= 0:
        # RIS resets everything but the title and the screen shown (tmux keeps the alternate
        # screen): those come from the bytes before it too.
        carry.reset = True
        head_title = _last_title(data[:reset])
        data = data[reset + len(_RESET):]
    else:
        head_title = None
    # A restore brings back the position, attributes, character sets and origin mode of the
    # save: for those, a save … restore pair is as if it were not there, and what comes
    # before an unmatched restore (of a save before these bytes) does not count.
    state = data
    paired = b"\x1b8" in data or b"\x1b[u" in data
    # Without screen switches both kinds of pair are the same: strip them once.
    plain_pairs = paired and reset < 0 and not _switched_any(data)
    if paired:
        state = _strip_pairs(data, _SAVE_RESTORE)
        restore = max(state.rfind(b"\x1b8"), state.rfind(b"\x1b[u"))
        if restore >= 0:
            carry.restored = True
            state = state[restore + (2 if state[restore + 1] == 0x38 else 3):]
        runs = None
    # The attributes and the position: from where the last restore brings them back.
    chain = _restore_chain(state if plain_pairs and not carry.restored else whole, was_alt=was_alt,
                           alt_saved=alt_saved)
    unknown_attrs = chain is None
    if chain is None:
        attr_state = b""
        if b"\x1b[?1049h" in whole:
            carry.alt_save = "unknown"
    else:
        attr_state, carry.base, stripped, alt_save_at = chain
        if alt_save_at is not None:
            sub = _restore_chain(stripped[:alt_save_at], was_alt=was_alt, alt_saved=alt_saved)
            if sub is None:
                carry.alt_save = "unknown"
            else:
                carry.alt_save = (sub[1], *_sgr_fold(sub[0]), _cursor_after(sub[0]))
    carry.state = attr_state
    if runs is not None and not carry.reset:
        found: set[bytes] = set()
        for run in runs:
            found.update(_CARRIED.findall(run))
        seqs = sorted(found, key=data.rfind)  # few: the distinct pieces' distinct sequences
    else:
        seqs = _distinct_last(data, _CARRIED)
    state_seqs = seqs if state is data else _distinct_last(state, _CARRIED)
    attr_seqs = state_seqs if attr_state is state else _distinct_last(attr_state, _CARRIED)
    switched = titled = False
    for seq in seqs:
        kind = seq[1:2]
        if kind == b"[":
            final = seq[-1:]
            if final in b"hl":
                on = final == b"h"
                private = seq[2:3] == b"?"
                table = _TRACKED_PRIVATE if private else _TRACKED_ANSI
                for p in seq[3 if private else 2:-1].split(b";"):
                    name = table.get(p)
                    if name is not None and name != "origin":
                        carry.modes[name] = on
                    elif private and p in _ALT:
                        switched = True
            elif final == b"r":
                top, _, bottom = seq[2:-1].partition(b";")
                carry.margins = (int(top or 0), int(bottom or 0))
            elif final == b"g":
                carry.tabs_unknown = True
            elif final == b"s":  # SCOSC
                carry.saved_unknown = True
        elif kind == b"]":
            titled = True
        elif seq == b"\x1b7":
            carry.saved_unknown = True
        elif seq == b"\x1bH":
            carry.tabs_unknown = True
    # What a restore brings back, from the bytes it leaves in force.
    sgrs = [seq for seq in attr_seqs if seq[-1:] == b"m" and seq[1:2] == b"["]
    for seq in state_seqs:
        kind = seq[1:2]
        if kind == b"[":
            final = seq[-1:]
            if final in b"hl" and seq[2:3] == b"?":
                for p in seq[3:-1].split(b";"):
                    if p == b"6":
                        carry.modes["origin"] = final == b"h"
        elif kind == b"(":
            if seq[2:] in b"0B":
                carry.g0 = seq[2:]
        elif kind == b")":
            if seq[2:] in b"0B":
                carry.g1 = seq[2:]
    shift = max(state.rfind(b"\x0e"), state.rfind(b"\x0f"))
    if shift >= 0:
        carry.shift = state[shift] == 0x0e
    if switched or (reset > 0 and _ALT_SWITCH.search(whole, 0, reset) is not None):
        alt_now = was_alt
        for m in _ALT_SWITCH.finditer(whole):
            params = m.group()[3:-1].split(b";")
            on = m.group()[-1:] == b"h"
            if any(p in _ALT for p in params):
                alt_now = carry.alt = on
                if m.start() < reset:
                    carry.alt_at_reset = on
                carry.alt_switches += 1
                if len(carry.switches) < _SWITCHES_KEPT:
                    carry.switches.append((m.start(), m.end(), on))
    title = _last_title(data) if titled else None
    carry.title = title if title is not None else head_title
    carry.sgr_reset, carry.sgr, carry.sgr_exact = _sgr_from(sgrs)
    if unknown_attrs and not carry.sgr_reset:
        carry.sgr_exact = False
    carry.cursor = _cursor_after(attr_state)
    if unknown_attrs and carry.cursor is None:
        carry.cursor = "unknown"  # where a 1049l put it
    return carry


#: What restores or resets the cursor and attributes, and what switches screens (saves are
#: looked for with rfind from the restores: there may be one a line).
_SLOT_EVENTS = re.compile(rb"\x1b[8c]|\x1b\[u|\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
#: Restores and resets one skip follows (after save … restore pairs are taken out) before
#: calling the attributes unknown.
_SLOT_EVENTS_MAX = 20000


_SGR = re.compile(rb"\x1b\[[0-9;:]*m")


def _sgr_from(sgrs: list[bytes]) -> tuple[bool, list[bytes], bool]:
    """(reset, parameter strings to apply after it, exact) from the distinct SGR sequences
    in the order of their last occurrence: the last reset, then the ones after it."""
    resets = [i for i, seq in enumerate(sgrs) if seq in (b"\x1b[m", b"\x1b[0m")]
    after = sgrs[resets[-1] + 1 if resets else 0:]
    return bool(resets), [seq[2:-1] for seq in after], len(sgrs) <= _SGR_DISTINCT_MAX


def _sgr_fold(data: bytes) -> tuple[bool, list[bytes], bool]:
    return _sgr_from(_distinct_last(data, _SGR))


def _switched_any(data: bytes) -> bool:
    return b"\x1b[?" in data and _ALT_SWITCH.search(data) is not None


def _restore_chain(data: bytes, *, was_alt: bool, alt_saved: bool) -> tuple | None:
    """The bytes the attributes and the cursor position follow from, and what they start
    from ("start", "reset", "saved", "alt_saved": Carry.base). A restore brings back what
    its save saw, so from the end, each restore jumps back to its save: DECRC/SCORC to the
    last DECSC/SCOSC (RIS resets that save to the defaults), 1049l to the last 1049h made
    from the main screen (tmux: a 1049l restores even off the alternate screen; RIS keeps
    that save). The chain ends at the start of `data`, at a RIS, or at a save made before
    `data`. Returns (bytes, base, `data` with save … restore pairs stripped, where in it the
    last 1049h that saved is or None); None past `_SLOT_EVENTS_MAX` saves and restores."""
    if b"\x1b8" in data or b"\x1b[u" in data:
        data = _strip_pairs(data, _SAVE_RESTORE_PLAIN)
    alt_save_at = None
    events: list[tuple[int, int, object]] = []  # restores and resets: (start, end, target)
    alt = was_alt
    alt_slot: object = "alt_saved" if alt_saved else None
    last_reset = -1
    for m in _SLOT_EVENTS.finditer(data):
        g, at = m.group(), m.start()
        if g == b"\x1bc":
            events.append((at, m.end(), "reset"))
            last_reset = at
        elif g in (b"\x1b8", b"\x1b[u"):
            save = max(data.rfind(b"\x1b7", 0, at), data.rfind(b"\x1b[s", 0, at))
            target = save if save > last_reset else "reset" if last_reset >= 0 else "saved"
            events.append((at, m.end(), target))
        else:
            params = g[3:-1].split(b";")
            on = g[-1:] == b"h"
            if b"1049" in params:
                if on and not alt:
                    alt_slot = alt_save_at = at
                elif not on and alt_slot is not None:
                    events.append((at, m.end(), alt_slot))
            alt = on
        if len(events) > _SLOT_EVENTS_MAX:
            return None
    if not events:
        return data, "start", data, alt_save_at
    starts = [e[0] for e in events]
    ranges = []
    end = len(data)
    base = "start"
    i = len(events) - 1
    while i >= 0:
        _, stop, target = events[i]
        ranges.append((stop, end))
        if isinstance(target, str):
            base = target  # "reset" (RIS, or a restore of what RIS reset), "saved", "alt_saved"
            break
        end = target
        i = bisect.bisect_left(starts, target) - 1
    else:
        ranges.append((0, end))
    return b"".join(data[a:b] for a, b in reversed(ranges)), base, data, alt_save_at


def _last_title(data: bytes) -> str | None:
    titles = _distinct_last(data, _TITLE)
    if not titles:
        return None
    seq = titles[-1]
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


#: What makes counting line feeds say nothing about the row (besides cursor motion and
#: scroll margins): origin mode, column mode and screen switches, reset, DECALN, IND/NEL/RI,
#: VT and FF.
_LINES_BREAK_ESC = re.compile(rb"\x1b(?:\[\?(?:[0-9;]*;)?(?:3|6|47|69|1047|1049)(?:;[0-9;]*)?[hl]|[cDEM]|#8)")


def lines_break(data: bytes, start: int = 0) -> bool:
    """Whether `data[start:]` holds something that makes counting line feeds say nothing
    about the row (VT and FF by memchr, the rest by one regex with a literal start)."""
    return (data.find(b"\x0b", start) >= 0 or data.find(b"\x0c", start) >= 0
            or _LINES_BREAK_ESC.search(data, start) is not None)
_DECSTBM = re.compile(rb"\x1b\[([0-9]*)(?:;([0-9]*))?r")
#: What leaves the cursor where it is within a line: attributes, modes, strings, charsets.
_IN_LINE_NEUTRAL = re.compile(rb"\x1b\[[0-9;:]*m|\x1b\[\?[0-9;]*[hl]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                              rb"|\x1b[()][0-9A-Za-z]|\x1b7")
_NOT_TEXT = bytes(range(0x20)) + bytes(range(0x7f, 0x100))


def follow_lines(state: bytes, data: bytes, y: int | None, *, top: int, bottom: int, rows: int,
                 cols: int) -> tuple[int, int] | None:
    """Where line output leaves a cursor that was on row `y` (0-based; None if unknown):
    with no cursor motion but line feeds in `state` (the carry's: save … restore pairs
    taken out, as they bring the cursor back) and enough of them to reach the bottom margin
    — or the last row, from below the margins — the cursor is there whatever the lines
    held, wraps included. A scroll region set in the bytes homes the cursor: the count then
    starts there, with its margins. The column is known when the last line starts with a
    CR and holds only ASCII text. None when this cannot be told (`data`, the whole bytes,
    switches origin mode or screens, sets margins inside a save … restore pair, ...)."""
    if b"\n" not in state or lines_break(data):
        return None  # (no line feed at all: cursor-addressed output, the usual case here)
    margins = None
    for margins in _DECSTBM.finditer(state):
        pass
    if margins is not None:
        if data.count(b"r") != state.count(b"r") and len(_DECSTBM.findall(data)) != len(_DECSTBM.findall(state)):
            return None  # margins set inside a save … restore pair
        top = min((int(margins[1] or 1) or 1) - 1, rows - 1)
        bottom = min((int(margins[2] or rows) or rows) - 1, rows - 1)
        if top >= bottom:
            return None  # refused: the cursor did not move
        y = 0
        state = state[margins.end():]
    elif y is None or data.count(b"r") != state.count(b"r") and _DECSTBM.search(data) is not None:
        return None
    limit = bottom if y <= bottom else rows - 1
    n = state.count(b"\n")
    if y + n < limit or MOTION.search(state) is not None:
        return None
    last = state.rfind(b"\n")
    tail = _IN_LINE_NEUTRAL.sub(b"", state[last + 1:])
    cr = tail.rfind(b"\r")
    if cr >= 0:
        text = tail[cr + 1:]
    elif last > 0 and state[last - 1] == 0x0d:
        text = tail
    else:
        return None
    if len(text) >= cols or text.translate(None, _NOT_TEXT) != text:
        return None
    return limit, len(text)


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


@dataclass(frozen=True)
class SafePoint:
    offset: int  #: where parsing restarts (the start of the sequence, or of the line)
    kind: str  #: "reset" | "clear" | "align" | "alt" | "leave" | "lines"


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
    consider(data.rfind(b"\x1b#8", start, end), "align")  # DECALN: every cell an E
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
            # (A screen switch among the lines would leave part of the other screen as it was.)
            if (best is None or start > best.offset) and pos > 0 and data[pos - 1] == 0x0d \
                    and MOTION.search(data, start, end) is None \
                    and _ALT_SWITCH.search(data, start, end) is None:
                consider(start, "lines")
    return best


#: The sequence a safe point other than "lines" starts with (a clear with the positioning before it).
_SAFE_SEQUENCE = re.compile(rb"(?:\x1b\[[0-9;]*[Hf])?\x1b\[2J|\x1bc|\x1b#8|\x1b\[\?[0-9;]*[hl]")


def safe_point_length(data: bytes | bytearray) -> int:
    """Length of the safe point's own sequence at the start of `data` (0 for "lines")."""
    m = _SAFE_SEQUENCE.match(data)
    return m.end() if m is not None else 0


#: Attributes and a CR between the last text of a line and its newline.
_LINE_END = re.compile(rb"(?:\x1b\[[0-9;:]*m)*\r?")


def blind_point(data: bytes | bytearray, start: int, end: int | None = None) -> int:
    """The first place at or after `start` where parsing can restart cleanly: at a cursor
    positioning if one is near (the cursor is then known at once) — or at a save before it
    (a positioning between a save and its restore is forgotten at the restore, and the
    save must be parsed for the restore to be known) —, else just after a newline if one
    is near (whole lines skipped: the fast path renders them, and line output leaves the
    cursor known), else at an ESC (all ASCII, so UTF-8 boundaries). `end` if there is none."""
    end = len(data) if end is None else end
    near = min(end, start + 65536)
    m = _CUP.search(data, start, near)
    if m is not None:
        save = data.find(b"\x1b7", start, m.start())
        if save >= 0:
            return save
        opened = data.rfind(b"\x1b7", max(0, start - 4096), m.start())
        if opened >= 0 and data.find(b"\x1b8", opened, m.start()) < 0:
            restore = data.find(b"\x1b8", m.end(), near)
            if restore >= 0:
                return restore + 2  # the positioning is inside a pair: after its restore
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
#: (CUP only, the simplest pattern, which splits fastest; HVP, rare, is then "something else".)
_SPLIT_CUP = re.compile(rb"\x1b\[([0-9;]*)H")
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
    masks = union.rows
    span = (1 << width) - 1
    simple = not origin and erase is None and width > 0
    for pos in new:
        r, _, c = pos.partition(b";")
        if b";" in c:
            c = c.partition(b";")[0]  # parameters past the second are ignored
        y = (int(r) if r else 1) or 1
        x = (int(c) if c else 1) or 1
        if simple and y <= rows and x - 1 + width <= cols:
            # The common case, inline: the span fits on its row (no wrap, no erase).
            masks[y - 1] = masks.get(y - 1, 0) | (span << (x - 1))
            continue
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
    start = newline_before(data, limit, last) + 1  # 0 when there are fewer lines
    text = data[start:last].decode("utf-8", "replace")
    text = _STRIP.sub("", text)
    lines = text.split("\n")
    if start == 0 and first_prefix:
        lines[0] = first_prefix + lines[0]
    rendered: list[str] = []
    if "\b" not in text and "\t" not in text:
        # The common case at C speed: no BS or TAB, CR only ending lines, no line wider
        # than the screen: each line is one row, as `_plain_rows` would give it.
        rows = [line.rstrip("\r").rstrip(" ") for line in lines]
        if max(map(len, rows)) <= cols and "\r" not in "".join(rows):
            rendered = rows
    if not rendered:
        for line in lines:
            rendered += _plain_rows(line, cols)
    skipped = total_lines - len(lines)
    kept = rendered[-limit:] if limit else []
    return skipped + len(rendered), kept


def plain_rows_known(data: bytes, cols: int, limit: int, *, first_prefix: str = "") -> tuple[int, int] | None:
    """What `plain_lines(data, cols, limit, first_prefix=...)` counts, without rendering:
    (rows counted, where the lines it would render begin), when each of those lines is sure
    to be one row — no TAB, and none longer than `cols` bytes with the prefix (a character
    is at least one byte; control sequences, CR and BS only shorten a line). Else None:
    the caller renders them now. (The scrollback renders them only if they are read before
    newer lines push them out: scrollback.add_plain.)"""
    last = data.rfind(b"\n")
    if last < 0:
        return 0, 0
    lines = data.count(b"\n", 0, last + 1)
    if limit <= 0:
        return lines, last + 1
    start = newline_before(data, limit, last) + 1
    if data.find(b"\t", start, last) >= 0:
        return None
    first_end = data.find(b"\n", start)
    if first_end - start + (len(first_prefix) if start == 0 else 0) > cols:
        return None
    # A line longer than `cols` spans cols + 1 consecutive positions, so it holds one of
    # every (cols + 1)-th: measuring the lines at those only is C speed for short lines.
    for pos in range(start, last, cols + 1):
        if data.find(b"\n", pos, last + 1) - data.rfind(b"\n", 0, pos + 1) - 1 > cols:
            return None
    return lines, start


def newline_before(data: bytes | bytearray, k: int, end: int, start: int = 0) -> int:
    """Where the k-th LF before `end` is, counting back (k >= 1), not before `start`; -1 if
    there are fewer. A flood has ~10,000 of them to step over (the scrollback's lines), one
    `rfind` each would cost milliseconds: this guesses from the average line with C-speed
    counts instead (a flood's lines are alike), and bisects if the guess is far off."""
    if k <= 64:
        pos = end
        for _ in range(k):
            pos = data.rfind(b"\n", start, pos)
            if pos < 0:
                return -1
        return pos
    total = data.count(b"\n", start, end)
    if total < k:
        return -1
    # Guess from the average line (a flood's lines are alike), then step or bisect from it.
    guess = end - (end - start) * k // total
    after = data.count(b"\n", guess, end)
    if after >= k:  # the answer is the (after - k + 1)-th LF from `guess` on
        if after - k < 64:
            pos = guess - 1
            for _ in range(after - k + 1):
                pos = data.find(b"\n", pos + 1, end)
            return pos
        lo, hi, after_hi = guess, end, 0
    else:  # the (k - after)-th LF before `guess`
        if k - after <= 64:
            pos = guess
            for _ in range(k - after):
                pos = data.rfind(b"\n", start, pos)
            return pos
        lo, hi, after_hi = start, guess, after
    # count(lo, end) >= k > count(hi, end): the answer is the largest such lo.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        after_mid = after_hi + data.count(b"\n", mid, hi)
        if after_mid >= k:
            lo = mid
        else:
            hi, after_hi = mid, after_mid
    return lo


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
