"""The screen as a value: `ScreenSnapshot`, and its bounded msgpack form for the store.

An exited execution keeps its last screen (DESIGN.md, store `screens` db, ≤ 64 KiB per the
spec's "64 KiB of screen text per execution"). When a snapshot's encoding is larger than the
limit, whole lines are dropped from the top — the bottom of a terminal is where prompts and
results are — and `trimmed_lines` says how many, so `lines[i]` is screen row
`trimmed_lines + i`. The encoding is a msgpack map keyed by field name, so new fields (with
defaults) can be added and old records still decode.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from vigil.protocol.errors import ErrorCode, VigilError

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
    #: Text of each row, wide characters once, trailing blanks trimmed; `rows` entries unless
    #: trimmed by the codec.
    lines: list[str]
    #: 0-based (row, col) of the cursor; col is at most cols - 1.
    cursor: tuple[int, int]
    cursor_visible: bool = True
    alt_screen: bool = False
    bracketed_paste: bool = False
    title: str = ""
    #: Rows dropped from the top to fit the size limit (`lines[0]` is row `trimmed_lines`).
    trimmed_lines: int = 0

    @property
    def text(self) -> str:
        """The rows joined by newlines, trailing empty rows removed."""
        return "\n".join(self.lines).rstrip("\n")


class SnapshotCodecError(VigilError):
    """Stored snapshot bytes are not a snapshot (a corrupt or foreign record)."""

    def __init__(self, message: str):
        super().__init__(ErrorCode.STORAGE_ERROR, message)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ScreenSnapshot)


def encode_snapshot(snapshot: ScreenSnapshot, max_bytes: int) -> bytes:
    """msgpack bytes of at most `max_bytes`, dropping top rows (then the title) if needed.

    Raises:
        ValueError: `max_bytes` is too small for an empty snapshot (< ~200 bytes; the
            setting's minimum is 1 KiB).
    """
    data = _encoder.encode(snapshot)
    if len(data) <= max_bytes:
        return data
    # Each dropped row saves its encoded size: the UTF-8 length plus a 1-5 byte header.
    excess = len(data) - max_bytes
    lines = snapshot.lines
    drop = 0
    while drop < len(lines) and excess > 0:
        n = len(lines[drop].encode("utf-8"))
        excess -= n + (1 if n < 32 else 2 if n < 256 else 3 if n < 65536 else 5)
        drop += 1
    while True:
        trimmed = msgspec.structs.replace(
            snapshot, lines=lines[drop:], trimmed_lines=snapshot.trimmed_lines + drop
        )
        data = _encoder.encode(trimmed)
        if len(data) <= max_bytes:
            return data
        if drop < len(lines):
            drop += 1
            continue
        if trimmed.title:
            title = trimmed.title.encode("utf-8")
            cut = max(0, len(title) - (len(data) - max_bytes))
            snapshot = msgspec.structs.replace(snapshot, title=title[:cut].decode("utf-8", "ignore"))
            continue
        raise ValueError(f"screen snapshot limit {max_bytes} bytes is below an empty snapshot")


def decode_snapshot(data: bytes) -> ScreenSnapshot:
    """The snapshot stored by `encode_snapshot`.

    Raises:
        SnapshotCodecError: the bytes are not a valid snapshot (message says why).
    """
    try:
        return _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise SnapshotCodecError(f"invalid screen snapshot: {exc}") from None
