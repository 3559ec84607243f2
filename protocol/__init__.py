"""vigil.protocol — the wire contract between vigild and its clients.

msgspec and the standard library only, and no I/O: bytes in, messages out, bytes back.
"""

from .errors import ErrorCode, LocalProtocolError, ProtocolError, RemoteError, RemoteProtocolError, VigilError
from .version import PROTOCOL_MAX, PROTOCOL_MIN, VERSION

__all__ = [
    "ErrorCode",
    "LocalProtocolError",
    "PROTOCOL_MAX",
    "PROTOCOL_MIN",
    "ProtocolError",
    "RemoteError",
    "RemoteProtocolError",
    "VERSION",
    "VigilError",
]
