"""Escape-sequence tokenizer that drives a `VtScreen` (sans-IO, total: no input raises).

Why not `pyte.Stream`: it parses one character at a time through a generator, and it turns
sequences it does not know into garbage text — `CSI < u`, `CSI = 1 u`, `CSI 4:3 m`,
`CSI ! p` leave their tails drawn on the screen, DCS/APC strings (`ESC P … ESC \\`, sent by
vim and tmux) are drawn whole, an unterminated OSC swallows the rest of the stream. Here one
compiled regular expression (C speed) splits text into printable runs, C0 controls and
complete escape sequences; unknown or private sequences are dropped whole, as a terminal
that does not implement them would. Screen methods run inside `try`: pyte raises on some
parameters (`CSI 5 K` → UnboundLocalError) and a bad sequence must cost only itself.

Split input: an escape sequence cut by the end of a `feed` is held back (at most
`escape_max` characters) and completed by the next one. A longer OSC/DCS/APC string is
discarded up to its terminator, so a 10 MB sixel image costs no memory.
"""

from __future__ import annotations

import re

from pyte import charsets as pyte_charsets

from .vtscreen import VtScreen

_TOKEN = re.compile(
    r"(?P<text>[^\x00-\x1f\x7f-\x9f]+)"
    r"|\x1b\[(?P<cp>[\x30-\x3f]*)(?P<ci>[\x20-\x2f]*)(?P<cf>[\x40-\x7e])"
    r"|\x1b\](?P<osc>[^\x07\x1b\x9c]*)(?:\x07|\x1b\\|\x9c)"
    r"|(?P<str>\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c))"
    r"|\x1b(?P<ei>[\x20-\x2f]*)(?P<ef>[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])"
    r"|(?P<ctl>[\x00-\x1a\x1c-\x1f\x7f-\x9f])"
    r"|(?P<esc>\x1b)"
)

#: An escape sequence that the end of the input cut short (matched from the ESC to the end).
_INCOMPLETE = re.compile(
    r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*|\][^\x07\x1b\x9c]*\x1b?|[PX^_][^\x1b\x9c]*\x1b?|[\x20-\x2f]*)?\Z"
)
_STRING_START = re.compile(r"\x1b[\]PX^_]")
_STRING_END = re.compile(r"\x07|\x1b\\|\x9c")

#: What a skipped run of scrolled-away lines may not contain (see `Parser._skip_scrolled`).
_UNSAFE_IN_SKIP = re.compile(r"[\x00-\x06\x0b-\x0c\x0e-\x1f\x7f-\x9f]")

#: Longest CSI kept while incomplete: real ones are < 64 characters (`CSI 38;2;255;255;255 m`).
_CSI_MAX = 256


def _int(p: str) -> int:
    # pyte's convention: a parameter above 9999 is 9999 (VT220), an empty one is 0. Checking
    # the length first also avoids int() of a 5000-digit string (ValueError in Python ≥ 3.11).
    return 9999 if len(p) > 4 else int(p or 0)


def _sgr_params(p: str) -> list[int]:
    """SGR parameters, with ITU colon sub-parameters (`38:2::r:g:b`, `4:3`) made plain."""
    out: list[int] = []
    for group in p.split(";"):
        if ":" not in group:
            out.append(_int(group) if group.isdigit() or not group else 0)
            continue
        parts = group.split(":")
        head = _int(parts[0]) if parts[0].isdigit() else -1
        if head in (38, 48) and len(parts) >= 3:
            nums = [_int(x) if x.isdigit() else 0 for x in parts[1:]]
            if nums[0] == 2:
                rgb = nums[-3:] if len(nums) >= 4 else None
                if rgb:
                    out += [head, 2, *rgb]
            elif nums[0] == 5 and len(nums) >= 2:
                out += [head, 5, nums[1]]
        elif head == 4:
            # 4:0 is "no underline"; 4:1..4:5 are underline styles.
            out.append(24 if parts[1:2] == ["0"] else 4)
    return out


class Parser:
    """Feeds decoded text into a `VtScreen`; keeps the title and the incomplete tail."""

    def __init__(self, screen: VtScreen, *, escape_max: int):
        self.screen = screen
        #: Longest OSC/DCS string kept (Settings.screen_escape_max_bytes); it bounds the title.
        self.escape_max = escape_max
        self.title = ""
        self.errors = 0  #: screen methods that raised (each costs only its own sequence)
        self._held = ""
        self._discarding = False  # inside an over-long OSC/DCS string
        self._bind()

    def _bind(self) -> None:
        s = self.screen
        self._csi = {
            "@": s.insert_characters, "A": s.cursor_up, "B": s.cursor_down,
            "C": s.cursor_forward, "D": s.cursor_back, "E": s.cursor_down1,
            "F": s.cursor_up1, "G": s.cursor_to_column, "H": s.cursor_position,
            "J": s.erase_in_display, "K": s.erase_in_line, "L": s.insert_lines,
            "M": s.delete_lines, "P": s.delete_characters, "S": s.scroll_up,
            "T": s.scroll_down, "X": s.erase_characters, "`": s.cursor_to_column,
            "a": s.cursor_forward, "d": s.cursor_to_line, "e": s.cursor_down,
            "f": s.cursor_position, "g": s.clear_tab_stop, "h": s.set_mode,
            "l": s.reset_mode, "m": s.select_graphic_rendition, "r": s.set_margins,
            "s": s.save_cursor, "u": s.restore_cursor,
        }
        self._esc = {
            "7": s.save_cursor, "8": s.restore_cursor, "D": s.index, "E": s.linefeed,
            "M": s.reverse_index, "H": s.set_tab_stop, "c": s.reset,
        }
        self._ctl = {
            "\x08": s.backspace, "\x09": s.tab, "\x0a": s.linefeed, "\x0b": s.linefeed,
            "\x0c": s.linefeed, "\x0d": s.carriage_return, "\x0e": s.shift_out,
            "\x0f": s.shift_in,
        }

    def rebind(self, screen: VtScreen) -> None:
        self.screen = screen
        self._bind()

    def reset(self) -> None:
        """Forget any incomplete sequence (after a jump in the byte stream)."""
        self._held = ""
        self._discarding = False

    @property
    def state(self) -> tuple:
        return (self._held, self._discarding, self.title)

    @state.setter
    def state(self, value: tuple) -> None:
        self._held, self._discarding, self.title = value

    def feed(self, text: str) -> None:
        if self._held:
            text = self._held + text
            self._held = ""
        if self._discarding:
            m = _STRING_END.search(text)
            if m is None:
                # Keep a trailing ESC: it may be the first half of ST (`ESC \\`).
                self._held = "\x1b" if text.endswith("\x1b") else ""
                return
            text = text[m.end():]
            self._discarding = False
        screen = self.screen
        if screen.margins is None and screen.cursor.y == screen.lines - 1 and "\n" in text:
            text = self._skip_scrolled(text)
        draw = screen.draw
        csi, esc, ctl = self._csi, self._esc, self._ctl
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup
            try:
                if kind == "text":
                    draw(m.group())
                elif kind == "cf":
                    self._do_csi(m.group("cp"), m.group("ci"), m.group("cf"), csi)
                elif kind == "ctl":
                    f = ctl.get(m.group())
                    if f is not None:
                        f()
                elif kind == "osc":
                    self._do_osc(m.group("osc"))
                elif kind == "ef":
                    inter = m.group("ei")
                    final = m.group("ef")
                    if not inter:
                        f = esc.get(final)
                        if f is not None:
                            f()
                    else:
                        self._do_esc_inter(inter, final)
                elif kind == "esc":
                    rest = m.start()
                    if _INCOMPLETE.match(text, rest):
                        self._hold(text[rest:])
                        return
                    # A lone ESC that no sequence follows: dropped, the rest is text.
            except Exception:
                self.errors += 1
                self.screen.cursor.x = min(max(self.screen.cursor.x, 0), self.screen.columns)
                self.screen.cursor.y = min(max(self.screen.cursor.y, 0), self.screen.lines - 1)

    def _skip_scrolled(self, text: str) -> str:
        """Drop plain lines that would scroll away before anyone sees them (exact, not a
        fast-forward). With the cursor on the bottom row and no scroll margins, every LF
        scrolls; if the tail of `text` has `lines` LFs, nothing older survives on screen. The
        dropped prefix may only hold printable text, CR, LF, TAB, BS, BEL — nothing that
        changes state beyond the rows it scrolls away — and must end with CR LF so the tail
        starts at column 0. A `yes` flood parses ~10x faster with this."""
        screen = self.screen
        pos = len(text)
        for _ in range(screen.lines + 1):
            pos = text.rfind("\n", 0, pos)
            if pos < 0:
                return text
        # `pos` ends the line before the kept tail (which holds `lines` LFs).
        if pos == 0 or text[pos - 1] != "\r" or _UNSAFE_IN_SKIP.search(text, 0, pos) is not None:
            return text
        screen.buffer.clear()
        screen.cursor.x = 0
        screen.dirty.update(range(screen.lines))
        return text[pos + 1:]

    def _hold(self, tail: str) -> None:
        is_string = _STRING_START.match(tail) is not None
        limit = self.escape_max if is_string else _CSI_MAX
        if len(tail) <= limit:
            self._held = tail
        elif is_string:
            self._discarding = True
            self._held = "\x1b" if tail.endswith("\x1b") else ""
        # else: an over-long CSI is garbage; drop it.

    def _do_csi(self, params: str, inter: str, final: str, table) -> None:
        screen = self.screen
        if inter:
            return  # DECSCUSR, DECSTR, DECRQM …: no effect on the visible text
        private = False
        if params and params[0] in "<=>?":
            if params[0] != "?":
                return  # CSI > 4;2 m (vim's modifyOtherKeys), CSI < u, CSI = 1 u …
            private = True
            params = params[1:]
        if final == "m":
            if private:
                return
            if ":" in params:
                screen.select_graphic_rendition(*_sgr_params(params))
                return
        elif ":" in params or "<" in params or ">" in params or "=" in params or "?" in params:
            return
        f = table.get(final)
        if f is None:
            return
        args = [_int(p) for p in params.split(";")] if params else [0]
        if private:
            if final in "hl":
                f(*args, private=True)
            elif final in "JK":
                f(args[0])
            return
        if final in "su":
            if params:
                return  # CSI Ps ; Ps s is DECSLRM with left/right margins: ignored
            f()
        elif final in "JKSTm" or final in "hl":
            f(*args)
        elif final in "Hfr":
            if final == "r" and not params:
                f()
            else:
                f(*args[:2])
        else:
            f(args[0])

    def _do_esc_inter(self, inter: str, final: str) -> None:
        screen = self.screen
        if inter == "#" and final == "8":
            screen.alignment_display()
        elif inter in ("(", ")"):
            # G0/G1: "0" is DEC special graphics (line drawing, used by ncurses' ACS), any
            # other final selects plain text.
            table = pyte_charsets.VT100_MAP if final == "0" else pyte_charsets.LAT1_MAP
            if inter == "(":
                screen.g0_charset = table
            else:
                screen.g1_charset = table

    def _do_osc(self, body: str) -> None:
        code, _, arg = body.partition(";")
        if code in ("0", "2"):
            self.title = arg
            self.screen.title = self.title
