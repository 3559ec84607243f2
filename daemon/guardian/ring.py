"""A byte ring addressed by absolute stream offsets, sans-IO.

Offset 0 is the first byte the child ever wrote; offsets only grow. The ring retains the
newest `capacity` bytes: [start, end). Everything the guardian sends and acknowledges is
named by these offsets, so "which bytes were lost" is always an exact range, never a guess.

Layout invariant: the byte at offset `o` lives at index `o % capacity`. The buffer grows
by appending until it reaches `capacity` (so an idle runtime's guardian costs only what its
child wrote), then writes wrap around in place. With that invariant no index bookkeeping is
needed beyond `end`.
"""

from __future__ import annotations


class Ring:
    __slots__ = ("_buf", "capacity", "end")

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"ring capacity must be at least 1 byte, got {capacity}")
        self.capacity = capacity
        self._buf = bytearray()
        #: Offset one past the newest byte: the total number of bytes ever appended.
        self.end = 0

    @property
    def start(self) -> int:
        """Oldest retained offset."""
        return max(0, self.end - self.capacity)

    def __len__(self) -> int:
        return self.end - self.start

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes; the oldest ones fall out once more than `capacity` are held."""
        n = len(data)
        if not n:
            return
        cap = self.capacity
        buf = self._buf
        view = memoryview(data)
        if n >= cap:
            # Only the newest `cap` bytes survive. Fill the buffer to full size first (the
            # filler is overwritten at once) so that the wrapped write below applies.
            if len(buf) < cap:
                buf.extend(bytes(cap - len(buf)))
            self.end += n - cap
            view = view[n - cap :]
            n = cap
        elif len(buf) < cap:
            # Growth phase: len(buf) == end, so appending keeps index == offset.
            room = cap - len(buf)
            if n <= room:
                buf += view
                self.end += n
                return
            buf += view[:room]
            self.end += room
            view = view[room:]
            n -= room
        pos = self.end % cap
        first = min(n, cap - pos)
        buf[pos : pos + first] = view[:first]
        if first < n:
            buf[: n - first] = view[first:]
        self.end += n

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Up to `max_bytes` retained bytes starting exactly at `offset`.

        Raises:
            ValueError: `offset` is older than `start` or newer than `end` (the caller must
                announce a gap, or it asked for the future).
        """
        if offset < self.start or offset > self.end:
            raise ValueError(f"offset {offset} is outside the ring [{self.start}, {self.end})")
        n = min(max_bytes, self.end - offset)
        if n <= 0:
            return b""
        cap = self.capacity
        pos = offset % cap
        first = min(n, cap - pos)
        if first == n:
            return bytes(self._buf[pos : pos + n])
        return bytes(self._buf[pos:cap]) + bytes(self._buf[: n - first])
