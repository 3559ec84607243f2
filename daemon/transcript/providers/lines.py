"""Framing an agent's session log, appended to while we read it, into complete lines.

Sans-IO, in the manner of h11's receive buffer: `feed(bytes)` with whatever was appended,
get back the lines that are now complete, each with the absolute byte offset it starts at in
the file (so a reader that stops can resume at a line boundary). What follows the last LF is
held: a session that is still running leaves its last line half-written, and that line is
only a line once its LF arrives, or the log ends (`finish`).

A line longer than `max_bytes` is not kept whole: once it passes the limit only its first
`CUT_HEAD_BYTES` are kept and the rest is counted, so a 50 MB base64 image or compaction
record costs a bounded amount of memory. It comes out as a `CutLine` carrying that head and
the line's full length.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CUT_HEAD_BYTES", "CutLine", "LineFramer"]

#: What is kept of a cut line: enough for every key a provider writes before its bulky
#: content (a Claude line's `type`, `uuid`s and the first block's `tool_use_id`; a Codex
#: line's `timestamp`, `type` and payload `type`/`call_id` all come first), so the
#: normalizer can still say what the line was.
CUT_HEAD_BYTES = 64 * 1024


class CutLine(NamedTuple):
    """A line longer than the limit: its start offset, its first bytes, its full length
    (LF excluded)."""

    offset: int
    head: bytes
    length: int


#: A complete line: its start offset and its bytes (LF excluded).
Line = tuple[int, bytes]


class LineFramer:
    """Cuts an appended byte stream into lines of at most `max_bytes`.

    Args:
        max_bytes: the longest line kept whole.
        offset: the file offset of the first byte that will be fed (a reader resuming in the
            middle of a file starts at a line boundary it was given).
    """

    def __init__(self, max_bytes: int, offset: int = 0):
        self.max_bytes = max_bytes
        #: File offset just past the last byte fed.
        self.offset = offset
        self._parts: list[bytes] = []  # the unfinished line, while it is within the limit
        self._partial_len = 0
        self._partial_start = offset
        self._cut_head: bytes | None = None  # set once the unfinished line passed the limit

    @property
    def partial_offset(self) -> int | None:
        """Where the unfinished (not yet LF-terminated) line starts, or None if there is none."""
        return self._partial_start if self._partial_len else None

    def feed(self, data: bytes) -> list[Line | CutLine]:
        """The lines `data` completes, in order."""
        out: list[Line | CutLine] = []
        base = self.offset
        self.offset += len(data)
        nl = data.find(b"\n")
        if nl < 0:
            self._hold(data)
            return out
        start = 0
        if self._partial_len:
            self._hold(data[:nl])
            out.append(self._take_partial())
            start = nl + 1
        pieces = data[start:].split(b"\n") if start else data.split(b"\n")
        rest = pieces.pop()
        at = base + start
        limit = self.max_bytes
        for piece in pieces:
            n = len(piece)
            out.append((at, piece) if n <= limit else CutLine(at, piece[:CUT_HEAD_BYTES], n))
            at += n + 1
        self._partial_start = at
        if rest:
            self._hold(rest)
        return out

    def finish(self) -> Line | CutLine | None:
        """The unfinished last line, taken out (the log ended, or its writer is gone)."""
        return self._take_partial() if self._partial_len else None

    def reset(self, offset: int = 0) -> int:
        """Forget the unfinished line and start again at `offset` (the file was truncated or
        replaced). Returns how many bytes of an unfinished line were dropped."""
        dropped = self._partial_len
        self._parts, self._partial_len, self._cut_head = [], 0, None
        self.offset = self._partial_start = offset
        return dropped

    def _hold(self, data: bytes) -> None:
        if not data:
            return
        self._partial_len += len(data)
        if self._cut_head is not None:
            return
        self._parts.append(data)
        if self._partial_len > self.max_bytes:
            self._cut_head = b"".join(self._parts)[:CUT_HEAD_BYTES]
            self._parts = []

    def _take_partial(self) -> Line | CutLine:
        start, length = self._partial_start, self._partial_len
        if self._cut_head is not None:
            line: Line | CutLine = CutLine(start, self._cut_head, length)
        else:
            line = (start, b"".join(self._parts))
        self._parts, self._partial_len, self._cut_head = [], 0, None
        self._partial_start = start + length + 1
        return line
