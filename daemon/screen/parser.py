"""Escape-sequence parser that drives a `VtScreen` (sans-IO, total: no input raises).

The rules are a terminal's (xterm's state machine as tmux 3.3 implements it, tmux being the
oracle of the tests), applied by one compiled regular expression (C speed) that splits the
decoded text into printable runs, C0 controls and complete sequences:

- C0 controls inside an escape or control sequence are executed where they stand and the
  sequence goes on (`ESC [ 2 BS C` is a backspace, then CUF 2); CAN and SUB abort the
  sequence; ESC aborts it and starts a new one; DEL is ignored everywhere.
- A control sequence is ignored, whole, when it is malformed (a private marker after a
  parameter, a parameter after an intermediate), when its parameters are longer than
  `CSI_PARAMS_MAX` characters or more than `CSI_PARAM_COUNT_MAX`, or when a number does
  not fit a C int. Leading zeros are just zeros: `ESC [ 0000000004 ; 000000001 H` is row 4.
  Parameter defaults and minimums are tmux's (`input_get`): a missing or zero count is 1.
- OSC, DCS, SOS, PM and APC strings end at BEL or ST (`ESC \\`); CAN/SUB abort them; an
  ESC followed by anything else aborts them and starts that sequence. Their bodies are never
  drawn. A string longer than `escape_max` characters is consumed and ignored (a 10 MB
  unterminated OSC costs no memory and hides nothing that follows its end).
- Sequences the screen does not implement are consumed and ignored, as a terminal that does
  not implement them would (vim's `CSI > 4;2 m`, kitty's `CSI < u`, `CSI ? 2026 $ p` …).

Split input: a sequence cut by the end of a `feed` is held (a CSI up to `CSI_HOLD_MAX`
characters, a string up to `escape_max`) and completed by the next one; past that the
parser discards until the sequence's end.

Work budget: `feed` stops once the screen operations it ran are worth `work_limit` units
(vtscreen's costs, see `work_cost`), keeping the rest for the next call (`pending`); so one
call never holds the daemon for long however hostile the input (keeper.py, "Cost").
"""

from __future__ import annotations

import re

from pyte import charsets as pyte_charsets

from .vtscreen import LATIN1, VtScreen

#: tmux keeps at most 63 parameter characters (`param_buf[64]`) and 23 parameters
#: (`param_list[24]`); a longer sequence is consumed and ignored.
CSI_PARAMS_MAX = 63
CSI_PARAM_COUNT_MAX = 23
#: A number above INT_MAX makes tmux ignore the sequence (strtonum); so do we.
_INT_MAX = 2**31 - 1
#: Longest incomplete CSI kept between feeds; longer ones can only be ignored, so the parser
#: discards to their end instead of holding them.
CSI_HOLD_MAX = 128

_C0 = r"\x00-\x17\x19\x1c-\x1f"  # C0 controls executed inside sequences (not CAN, SUB, ESC)

_TOKEN = re.compile(
    r"(?P<text>[^\x00-\x1f\x7f-\x9f]+)"
    r"|(?P<ctl>[\x00-\x1a\x1c-\x1f\x7f-\x9f])"
    r"|\x1b(?P<pre>[" + _C0 + r"\x7f]*)(?:"
    # CSI: parameters, intermediates and stray controls, then a final (or an abort).
    r"\[(?P<cb>[" + _C0 + r"\x20-\x3f\x7f-\U0010ffff]*)(?:(?P<cf>[\x40-\x7e])|(?P<cx>[\x18\x1a])|(?=\x1b))"
    # OSC / DCS / SOS / PM / APC strings.
    r"|(?P<si>[\]PX^_])(?P<sb>[^\x07\x18\x1a\x1b]*)(?:(?P<se>\x07|\x1b\\)|(?P<sx>[\x18\x1a])|(?=\x1b[^\\]))"
    # ESC with intermediates, or a plain ESC final.
    r"|(?P<ei>[\x20-\x2f][" + _C0 + r"\x20-\x2f\x7f]*)(?P<eif>[\x30-\x7e])"
    r"|(?P<ef>[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])"
    r"|(?P<ex>[\x18\x1a])"
    r")"
    r"|(?P<esc>\x1b)"
)

#: What an incomplete sequence at the end of the text looks like (from its ESC to the end).
_INCOMPLETE_CSI = re.compile(r"\x1b[" + _C0 + r"\x7f]*\[[" + _C0 + r"\x20-\x3f\x7f-\U0010ffff]*\Z")
_INCOMPLETE_STR = re.compile(r"\x1b[" + _C0 + r"\x7f]*(?P<si>[\]PX^_])[^\x07\x18\x1a\x1b]*\x1b?\Z")
_INCOMPLETE_ESC = re.compile(r"\x1b[" + _C0 + r"\x20-\x2f\x7f]*\Z")
_CONTROLS = re.compile(r"[" + _C0 + r"]")
_JUNK_IN_SEQ = re.compile(r"[" + _C0 + r"\x7f-\U0010ffff]")
_CSI_BODY = re.compile(r"([<=>?]?)([0-9:;]*)([\x20-\x2f]*)\Z")
#: Where a discarded string ends: BEL, CAN, SUB, or an ESC (ST, or the start of a sequence).
_STRING_STOP = re.compile(r"[\x07\x18\x1a\x1b]")
#: Where a discarded control sequence ends.
_CSI_STOP = re.compile(r"[\x40-\x7e\x18\x1a\x1b]")

#: What a skipped run of scrolled-away lines may not contain (see `Parser._skip_scrolled`).
_UNSAFE_IN_SKIP = re.compile(r"[\x00-\x06\x0b-\x0c\x0e-\x1f\x7f-\x9f]")

_SCS = {"0": pyte_charsets.VT100_MAP, "B": LATIN1}


def _sgr_params(p: str) -> list[int] | None:
    """SGR parameters with ITU colon sub-parameters (`38:2::r:g:b`, `4:3`) made plain, or
    None when a number is out of range (the sequence is ignored)."""
    out: list[int] = []
    for group in p.split(";"):
        if ":" not in group:
            if not group:
                out.append(0)
            elif len(group.lstrip("0")) > 10 or int(group) > _INT_MAX:
                return None
            else:
                out.append(int(group))
            continue
        parts = group.split(":")
        if any(len(x.lstrip("0")) > 10 for x in parts):
            return None
        head = int(parts[0]) if parts[0] else -1
        nums = [int(x) if x else -1 for x in parts[1:]]
        if head in (38, 48) and nums:
            if nums[0] == 2:
                rgb = nums[-3:] if len(nums) >= 4 else None
                if rgb and all(0 <= v <= 255 for v in rgb):
                    out += [head, 2, *rgb]
            elif nums[0] == 5 and len(nums) >= 2 and 0 <= nums[1] <= 255:
                out += [head, 5, nums[1]]
        elif head == 4:
            # 4:0 is "no underline"; 4:1..4:5 are underline styles.
            out.append(24 if nums[:1] == [0] else 4)
    return out


class Parser:
    """Feeds decoded text into a `VtScreen`; keeps the title and the incomplete tail."""

    def __init__(self, screen: VtScreen, *, escape_max: int, work_limit: int = 1 << 62):
        self.screen = screen
        #: Longest OSC/DCS string kept (Settings.screen_escape_max_bytes); it bounds the title.
        self.escape_max = escape_max
        #: Work units (`VtScreen.work`) after which `feed` stops and keeps the rest.
        self.work_limit = work_limit
        self.title = ""
        self.errors = 0  #: screen methods that raised (each costs only its own sequence)
        self._held = ""
        self._stopped = False
        #: True while discarding the rest of an over-long control sequence.
        self._discard_csi = False
        #: A string cut by the end of a feed: [introducer, body parts (dropped past
        #: `escape_max`), body length, ESC pending (maybe the first half of ST)]. Kept as
        #: parts, not re-parsed text, so a string dripping in byte by byte costs linear time.
        self._string: list | None = None
        self._bind()

    def _bind(self) -> None:
        s = self.screen
        self._ctl = {
            "\x08": s.backspace, "\x09": s.tab, "\x0a": s.linefeed, "\x0b": s.linefeed,
            "\x0c": s.linefeed, "\x0d": s.carriage_return, "\x0e": s.shift_out,
            "\x0f": s.shift_in,
        }
        self._esc = {
            "7": s.save_cursor, "8": s.restore_cursor, "D": s.index, "E": s.next_line,
            "M": s.reverse_index, "H": s.set_tab_stop, "c": self._reset,
        }

    def _reset(self) -> None:
        self.screen.reset()

    def reset(self) -> None:
        """Forget any incomplete sequence (after a jump in the byte stream)."""
        self._held = ""
        self._discard_csi = False
        self._string = None
        self._stopped = False

    @property
    def in_string(self) -> bool:
        """Inside an OSC/DCS/SOS/PM/APC string that an earlier feed started."""
        return self._string is not None

    def discard_string(self) -> None:
        """What follows is the rest of a string: consume it to its end, ignored (after a skip
        that stopped inside one)."""
        self.reset()
        self._string = ["", [], self.escape_max + 1, False]

    @property
    def pending(self) -> str:
        """Text taken but not parsed yet: an incomplete control or escape sequence, what the
        work budget left over, or the ESC that may start the ST ending a string."""
        if self._string is not None and self._string[3]:
            return "\x1b"
        return self._held

    @property
    def backlog(self) -> bool:
        """True when the work budget stopped the last `feed` before the end of its text."""
        return self._stopped

    @property
    def state(self) -> tuple:
        string = None if self._string is None else [self._string[0], list(self._string[1]), *self._string[2:]]
        return (self._held, self._discard_csi, string, self.title, self._stopped)

    @state.setter
    def state(self, value: tuple) -> None:
        self._held, self._discard_csi, string, self.title, self._stopped = value
        self._string = None if string is None else [string[0], list(string[1]), *string[2:]]

    # --- the loop --------------------------------------------------------------------------------

    def feed(self, text: str) -> bool:
        """Parse `text` (after anything held). Returns False when the work budget stopped it
        (call again, with "" or more text)."""
        self._stopped = False
        if self._string is not None:
            text = self._string_to_end(text)
            if text is None:
                return True
        if self._held:
            text = self._held + text
            self._held = ""
        if self._discard_csi:
            text = self._discard_to_end(text)
            if text is None:
                return True
        screen = self.screen
        if "\n" in text and screen.cursor.y == screen.lines - 1 and screen.top == 0 \
                and screen.bottom == screen.lines - 1 and not screen.insert and not screen.blind:
            text = self._skip_scrolled(text)
        draw = screen.draw
        ctl = self._ctl
        limit = self.work_limit
        start_work = screen.work
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            try:
                if kind == "text":
                    draw(m.group())
                elif kind == "ctl":
                    f = ctl.get(m.group())
                    if f is not None:
                        f()
                elif kind == "esc":
                    rest = text[m.start():]
                    if self._incomplete(rest):
                        return True
                    # A lone ESC that no sequence follows: dropped, the rest is text.
                else:
                    pre = m.group("pre")
                    if pre:
                        self._controls(pre)
                    if kind == "cf":
                        self._csi(m.group("cb"), m.group("cf"))
                    elif kind == "se":
                        if m.group("si") == "]":
                            self._osc(m.group("sb"))
                    elif kind == "ef":
                        f = self._esc.get(m.group("ef"))
                        if f is not None:
                            f()
                    elif kind == "eif":
                        self._esc_inter(m.group("ei"), m.group("eif"))
                    elif kind == "cx" or kind == "cb":
                        # A control sequence aborted by CAN/SUB or by the next ESC: the
                        # controls inside it still ran.
                        self._controls(m.group("cb"))
                    # "sx", "sb" (aborted strings) and "ex" (ESC CAN) have no effect.
            except Exception:
                self.errors += 1
                c = screen.cursor
                c.x = min(max(c.x, 0), screen.columns)
                c.y = min(max(c.y, 0), screen.lines - 1)
            if screen.work - start_work >= limit:
                self._held = text[m.end():]
                self._stopped = bool(self._held)
                return not self._stopped
        return True

    def _controls(self, chars: str) -> None:
        """Execute the C0 controls found inside a sequence, in order."""
        ctl = self._ctl
        for ch in _CONTROLS.findall(chars):
            f = ctl.get(ch)
            if f is not None:
                f()

    def _incomplete(self, tail: str) -> bool:
        """Hold (or start discarding) an escape sequence the end of the text cut short.
        Returns False if `tail` is not the start of any sequence."""
        if _INCOMPLETE_CSI.match(tail):
            if len(tail) <= CSI_HOLD_MAX:
                self._held = tail
            else:
                self._controls(tail)
                self._discard_csi = True
            return True
        m = _INCOMPLETE_STR.match(tail)
        if m:
            self._controls(tail[1:m.start("si")])
            body = tail[m.end("si"):]
            esc = body.endswith("\x1b")
            if esc:
                body = body[:-1]
            keep = [body] if len(body) <= self.escape_max else []
            self._string = [m.group("si"), keep, len(body), esc]
            return True
        if _INCOMPLETE_ESC.match(tail):
            self._held = tail
            return True
        return False

    def _discard_to_end(self, text: str) -> str | None:
        """Skip the rest of an over-long control sequence (running the controls inside it);
        returns the text after it, or None when all of `text` belongs to it."""
        m = _CSI_STOP.search(text)
        self._controls(text if m is None else text[:m.start()])
        if m is None:
            return None
        self._discard_csi = False
        return text[m.start():] if m.group() == "\x1b" else text[m.end():]

    def _string_to_end(self, text: str) -> str | None:
        """Continue a string an earlier feed started; returns the text after its end, or
        None when all of `text` belongs to it."""
        intro, parts, length, esc = self._string
        if esc:
            self._string[3] = False
            if text.startswith("\\"):
                self._end_string(intro, parts, length, True)
                return text[1:]
            if text:
                self._end_string(intro, parts, length, False)  # the ESC aborts the string
                return "\x1b" + text
            self._string[3] = True
            return None
        m = _STRING_STOP.search(text)
        body = text if m is None else text[:m.start()]
        length += len(body)
        if length <= self.escape_max:
            parts.append(body)
        elif parts:
            parts.clear()
        self._string[2] = length
        if m is None:
            return None
        end = m.start()
        ch = text[end]
        if ch == "\x07":
            self._end_string(intro, parts, length, True)
            return text[end + 1:]
        if ch != "\x1b":  # CAN, SUB: abort
            self._end_string(intro, parts, length, False)
            return text[end + 1:]
        if end + 1 == len(text):
            self._string[3] = True  # maybe the first half of ST
            return None
        if text[end + 1] == "\\":
            self._end_string(intro, parts, length, True)
            return text[end + 2:]
        self._end_string(intro, parts, length, False)
        return text[end:]

    def _end_string(self, intro: str, parts: list[str], length: int, terminated: bool) -> None:
        self._string = None
        if terminated and intro == "]" and length <= self.escape_max:
            self._osc("".join(parts))

    def _skip_scrolled(self, text: str) -> str:
        """Drop plain lines that scroll away before anyone sees them (exact, not a
        fast-forward). With the cursor on the bottom row and no scroll region, every LF
        scrolls; if the tail of `text` has `lines` LFs, nothing older survives on screen.
        The dropped prefix may only hold printable text, CR, LF, TAB, BS, BEL — nothing
        that changes state beyond the rows it scrolls away — and must end with CR LF so the
        tail starts at column 0. The screen hands the dropped lines to its scrollback
        exactly (`VtScreen.skip_lines`). A `yes` flood parses ~10x faster with this."""
        screen = self.screen
        pos = len(text)
        for _ in range(screen.lines + 1):
            pos = text.rfind("\n", 0, pos)
            if pos < 0:
                return text
        # `pos` ends the line before the kept tail (which holds `lines` LFs).
        if pos == 0 or text[pos - 1] != "\r" or _UNSAFE_IN_SKIP.search(text, 0, pos) is not None:
            return text
        first = text.find("\n") + 1
        # The first line finishes the cursor's row: parse it, the rest goes by the fast path.
        self.feed(text[:first])
        screen.skip_lines(text[first:pos + 1])
        return text[pos + 1:]

    # --- sequences -------------------------------------------------------------------------------

    def _csi(self, body: str, final: str) -> None:
        if _JUNK_IN_SEQ.search(body):
            self._controls(body)
            body = _JUNK_IN_SEQ.sub("", body)
        m = _CSI_BODY.match(body)
        if m is None:
            return  # a marker after a parameter, a parameter after an intermediate: ignored
        marker, params, inter = m.groups()
        if len(params) > CSI_PARAMS_MAX or len(inter) > 2:
            return
        screen = self.screen
        if final == "m":
            if marker or inter:
                return  # CSI > 4;2 m (modifyOtherKeys) and friends
            if not params:
                screen.select_graphic_rendition([])
                return
            values = _sgr_params(params)
            if values is not None and len(values) <= CSI_PARAM_COUNT_MAX * 5:
                screen.select_graphic_rendition(values)
            return
        if ":" in params:
            return
        if params:
            parts = params.split(";")
            if len(parts) > CSI_PARAM_COUNT_MAX:
                return
            args: list[int | None] = []
            for p in parts:
                if not p:
                    args.append(None)
                elif len(p.lstrip("0")) > 10 or int(p) > _INT_MAX:
                    return
                else:
                    args.append(int(p))
        else:
            args = []
        key = marker + inter + final
        self._dispatch(key, args)

    def _dispatch(self, key: str, args: list) -> None:
        s = self.screen

        def get(i: int, minimum: int, default: int) -> int:
            if i >= len(args) or args[i] is None:
                return default
            return max(args[i], minimum)

        if len(key) == 1:
            f = key
            if f in "ABCDEFGHJKLMPSTXZ`bdfr@":
                n = get(0, 1, 1)
                if f == "A":
                    s.cursor_up(n)
                elif f == "B":
                    s.cursor_down(n)
                elif f == "C":
                    s.cursor_forward(n)
                elif f == "D":
                    s.cursor_back(n)
                elif f == "E":
                    s.cursor_next_line(n)
                elif f == "F":
                    s.cursor_prev_line(n)
                elif f in "G`":
                    s.cursor_to_column(n)
                elif f in "Hf":
                    s.cursor_position(n, get(1, 1, 1))
                elif f == "J":
                    s.erase_in_display(get(0, 0, 0))
                elif f == "K":
                    s.erase_in_line(get(0, 0, 0))
                elif f == "L":
                    s.insert_lines(n)
                elif f == "M":
                    s.delete_lines(n)
                elif f == "P":
                    s.delete_characters(n)
                elif f == "S":
                    s.scroll_up(n)
                elif f == "T":
                    s.scroll_down(n)
                elif f == "X":
                    s.erase_characters(n)
                elif f == "Z":
                    s.tab_back(n)
                elif f == "b":
                    s.repeat(n)
                elif f == "d":
                    s.cursor_to_line(n)
                elif f == "r":
                    s.set_margins(n, get(1, 1, s.lines))
                elif f == "@":
                    s.insert_characters(n)
            elif f == "g":
                s.clear_tab_stop(get(0, 0, 0))
            elif f in "hl":
                s.set_mode([a for a in args if a is not None], False, f == "h")
            elif f == "s":
                s.save_cursor()
            elif f == "u":
                s.restore_cursor()
        elif key in ("?h", "?l"):
            s.set_mode([a for a in args if a is not None], True, key[1] == "h")

    def _esc_inter(self, inter: str, final: str) -> None:
        if _JUNK_IN_SEQ.search(inter):
            self._controls(inter)
            inter = _JUNK_IN_SEQ.sub("", inter)
        screen = self.screen
        if inter == "#" and final == "8":
            screen.alignment_display()
        elif inter in ("(", ")") and final in _SCS:
            if inter == "(":
                screen.g0 = _SCS[final]
            else:
                screen.g1 = _SCS[final]

    def _osc(self, body: str) -> None:
        if len(body) > self.escape_max:
            return
        code, _, arg = body.partition(";")
        if code in ("0", "2"):
            self.title = _CONTROLS.sub("", arg)
            self.screen.title = self.title
