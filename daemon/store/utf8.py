"""Where a page may end without splitting a UTF-8 character (sans-IO, pure functions)."""

from __future__ import annotations


def _sequence_length(lead: int) -> int:
    """Bytes a sequence starting with `lead` claims (1 for ASCII and invalid leads)."""
    if lead >= 0xF0:
        return 4 if lead <= 0xF7 else 1
    if lead >= 0xE0:
        return 3
    if lead >= 0xC0:
        return 2
    return 1


def safe_cut(data: bytes | bytearray | memoryview, limit: int) -> int:
    """The largest cut <= `limit` that does not end inside an incomplete UTF-8 sequence.

    Looks back at most 3 bytes from `limit` for a lead byte whose sequence would extend past
    the cut; if there is one, the cut moves to just before it, so the whole sequence lands
    on the next page. Only ever moving the cut back to a lead byte means that decoding page
    by page with replacement gives exactly the text of decoding everything at once
    (malformed bytes become U+FFFD either way). Returns 0 when the only bytes before
    `limit` are one incomplete sequence (the caller decides: wait for more, or force).
    """
    limit = min(limit, len(data))
    for back in range(1, 4):
        i = limit - back
        if i < 0:
            break
        b = data[i]
        if b & 0xC0 == 0x80:
            continue  # continuation byte: keep looking for its lead
        if b >= 0xC0 and _sequence_length(b) > back:
            return i
        break
    return limit
