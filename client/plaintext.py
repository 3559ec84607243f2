"""Terminal output made fit for a pipe or a file: LF line ends, no control sequences.

A program on a PTY writes `\\r\\n` (the terminal's `onlcr`) and colours; a file or a pipe
wants `\\n` and text (`vigil run --wait -- make > log`). `PlainText` turns a stream of PTY
bytes, fed in arbitrary pieces, into that: CR LF becomes LF, and escape sequences (CSI such
as colours and cursor moves, OSC such as titles, DCS/SOS/PM/APC strings, and two-byte
ESC sequences) are dropped. A lone CR (a progress bar redrawing its line) and every other
byte are kept, so nothing but terminal control is lost. A sequence or CR LF split between
two pieces is held back until the next piece says what it is.

`--raw` skips this filter and writes the bytes as the program wrote them.
"""

from __future__ import annotations

import re

#: One escape sequence (ECMA-48): CSI, string sequences ended by BEL or ST, or ESC with
#: intermediates and a final byte. Only complete sequences match.
_ESCAPE = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"                 # CSI ... final
    rb"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC / DCS / SOS / PM / APC ... BEL or ST
    rb"|\x1b[ -/]*[0-~]"                        # ESC (intermediates) final
)
#: A sequence that could still be completed by the next piece (held back at the end).
_PARTIAL = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b]*\x1b?|[ -/]*)?\Z")
#: Longest sequence held back waiting for its end; a longer one is not a sequence we know
#: how to end, so it is passed through rather than held forever.
MAX_HELD = 4096


class PlainText:
    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The plain text of `data` (plus whatever was held back), minus what must wait."""
        data = self._held + data
        self._held = b""
        if not data:
            return b""
        hold = 0
        floor = max(0, len(data) - MAX_HELD)
        esc = len(data)
        for _ in range(3):  # an unfinished string sequence may hold an ESC of its ST
            esc = data.rfind(b"\x1b", floor, esc)
            if esc < 0:
                break
            if _PARTIAL.match(data, esc):
                hold = len(data) - esc
        if not hold and data.endswith(b"\r"):
            hold = 1
        if hold:
            data, self._held = data[:-hold], data[-hold:]
        return self._plain(data)

    def end(self) -> bytes:
        """Whatever was held back, at the end of the stream (an unfinished escape sequence
        is control, not text: dropped)."""
        held, self._held = self._held, b""
        return b"" if held.startswith(b"\x1b") else self._plain(held)

    @staticmethod
    def _plain(data: bytes) -> bytes:
        if b"\x1b" in data:
            data = _ESCAPE.sub(b"", data)
        return data.replace(b"\r\n", b"\n")
