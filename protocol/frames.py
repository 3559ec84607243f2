"""Length-prefixed framing, sans-IO: bytes in, whole frame bodies out.

A frame is a u32 big-endian body length followed by the body. The length is checked against
the maximum *before* any buffer for the body is reserved, so a hostile 4 GiB prefix costs four
bytes of memory, not four gigabytes. Framing is separate from encoding (msgspec's own
asyncio-kv example does the same): the body may be msgpack or JSON.
"""

from __future__ import annotations

import struct

from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError

HEADER = struct.Struct(">I")
HEADER_BYTES = HEADER.size

#: Default largest body accepted (DESIGN.md, Wire protocol: 16 MiB); a setting
#: (`max_frame_bytes`) and negotiated in `hello`.
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024

#: Hard ceiling of the u32 prefix itself.
ABSOLUTE_MAX_FRAME_BYTES = 2**32 - 1


def encode_frame(body: bytes, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> bytes:
    """Prefix `body` with its length.

    Raises:
        LocalProtocolError: the body is larger than the peer agreed to accept.
    """
    if len(body) > max_frame_bytes:
        raise LocalProtocolError(
            ErrorCode.FRAME_TOO_LARGE,
            f"frame of {len(body)} bytes exceeds the maximum of {max_frame_bytes} bytes",
            {"frame_bytes": len(body), "max_frame_bytes": max_frame_bytes},
        )
    return HEADER.pack(len(body)) + body


class FrameDecoder:
    """Accumulates received bytes and yields complete frame bodies.

    Feed it any split of the stream (whole, byte by byte, with trailing data); the frames that
    come out are the same. A frame body is returned as `bytes` once complete; `None` means
    "need more data", which is a value and not an exception.
    """

    __slots__ = ("_buf", "_pos", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self._buf = bytearray()
        self._pos = 0
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> None:
        """Append bytes received from the peer."""
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buf) - self._pos

    def next_frame(self) -> bytes | None:
        """Return the next complete body, or None until more bytes arrive.

        Raises:
            RemoteProtocolError: the announced length exceeds `max_frame_bytes`; the stream
                cannot be resynchronised after this and the connection must be closed.
        """
        available = len(self._buf) - self._pos
        if available < HEADER_BYTES:
            return None
        (length,) = HEADER.unpack_from(self._buf, self._pos)
        if length > self.max_frame_bytes:
            raise RemoteProtocolError(
                ErrorCode.FRAME_TOO_LARGE,
                f"announced frame of {length} bytes exceeds the maximum of "
                f"{self.max_frame_bytes} bytes",
                {"frame_bytes": length, "max_frame_bytes": self.max_frame_bytes},
            )
        end = self._pos + HEADER_BYTES + length
        if len(self._buf) < end:
            return None
        body = bytes(self._buf[self._pos + HEADER_BYTES : end])
        self._pos = end
        # Compact once the consumed prefix dominates, so a long-lived connection's buffer
        # does not grow with everything it ever received.
        if self._pos > 65536 and self._pos * 2 > len(self._buf):
            del self._buf[: self._pos]
            self._pos = 0
        return body

    def check_eof(self) -> None:
        """Call at end of stream: a partial frame left over is the peer's error.

        Raises:
            RemoteProtocolError: the stream ended inside a frame.
        """
        if self.buffered:
            raise RemoteProtocolError(
                ErrorCode.MALFORMED_FRAME,
                f"connection closed inside a frame ({self.buffered} bytes of it received)",
            )
