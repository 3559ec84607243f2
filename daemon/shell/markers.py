"""The persistent shell's prompt markers, found in its output stream (sans-IO).

bash announces each command's start with `PS0` and its end with `PROMPT_COMMAND`, both as
invisible OSC strings carrying a per-shell random nonce:

    ESC ] 7770 ; NONCE ; S BEL                 the command's output starts after this
    ESC ] 7770 ; NONCE ; D ; STATUS ; PWD BEL  the command ended with STATUS in PWD

Completion and exit code come from these markers only, never from guessing at a prompt.
Output cannot forge one without the nonce, which lives in an unexported shell variable.
`MarkerScanner` splits a stream (fed in arbitrary pieces, with absolute offsets) into plain
segments and marker events, holding back only a possible partial marker at the end.
"""

from __future__ import annotations

import msgspec

OSC_ID = b"7770"
#: A marker longer than this (a pathological PWD) is treated as plain output.
MAX_MARKER_BYTES = 8192


class Segment(msgspec.Struct, frozen=True):
    """Plain output bytes starting at absolute `offset`."""

    offset: int
    data: bytes


class Started(msgspec.Struct, frozen=True):
    """The command's output starts at `offset` (just after the marker)."""

    offset: int


class Done(msgspec.Struct, frozen=True):
    """The command ended; its output stopped at `offset` (where the marker began)."""

    offset: int
    status: int
    cwd: str


class MarkerScanner:
    def __init__(self, nonce: str, offset: int = 0):
        self._head = b"\x1b]" + OSC_ID + b";" + nonce.encode() + b";"
        self._buf = bytearray()
        self._offset = offset  # absolute offset of _buf[0]

    def feed(self, offset: int, data: bytes) -> list[Segment | Started | Done]:
        """Classify `data` (which starts at absolute `offset`)."""
        out: list[Segment | Started | Done] = []
        if offset > self._offset + len(self._buf):
            # A gap in the stream: whatever partial marker we held can't complete.
            if self._buf:
                out.append(Segment(self._offset, bytes(self._buf)))
            self._buf.clear()
            self._offset = offset
        elif offset < self._offset + len(self._buf):
            skip = self._offset + len(self._buf) - offset  # a replay of bytes already seen
            data = data[skip:]
        self._buf += data
        head = self._head
        while self._buf:
            i = self._buf.find(head)
            if i < 0:
                keep = _partial_suffix(self._buf, head)
                cut = len(self._buf) - keep
                if cut:
                    out.append(Segment(self._offset, bytes(self._buf[:cut])))
                    del self._buf[:cut]
                    self._offset += cut
                break
            if i:
                out.append(Segment(self._offset, bytes(self._buf[:i])))
                del self._buf[:i]
                self._offset += i
            end = self._buf.find(b"\x07", len(head))
            if end < 0:
                if len(self._buf) > MAX_MARKER_BYTES:
                    out.append(Segment(self._offset, bytes(self._buf[:1])))
                    del self._buf[:1]
                    self._offset += 1
                    continue
                break
            event = _parse(bytes(self._buf[len(head):end]), self._offset, self._offset + end + 1)
            if event is None:  # malformed after the nonce: plain output
                out.append(Segment(self._offset, bytes(self._buf[: end + 1])))
            else:
                out.append(event)
            del self._buf[: end + 1]
            self._offset += end + 1
        return out


def _parse(body: bytes, start: int, after: int) -> Started | Done | None:
    if body == b"S":
        return Started(after)
    if body.startswith(b"D;"):
        status, sep, cwd = body[2:].partition(b";")
        if sep and status.isdigit():
            return Done(start, int(status), cwd.decode("utf-8", "surrogateescape"))
    return None


def _partial_suffix(buf: bytearray, head: bytes) -> int:
    """Length of the longest suffix of buf that is a proper prefix of head."""
    for n in range(min(len(head) - 1, len(buf)), 0, -1):
        if buf.endswith(head[:n]):
            return n
    return 0


def rcfile(nonce: str, path: str) -> str:
    """The shell's start-up file: vigil's own, never the user's (which are not edited)."""
    return f"""# vigil persistent shell: generated, read once, then removed.
__vigil_nonce={nonce}
PS1='$ '
PS2='> '
PS0='\\e]7770;{nonce};S\\a'
HISTFILE=
PROMPT_COMMAND='__vigil_rc=$?; printf "\\033]7770;%s;D;%d;%s\\007" "$__vigil_nonce" "$__vigil_rc" "$PWD"; (exit $__vigil_rc)'
rm -f -- '{path}'
"""
