"""The finite set of error codes vigil answers with, and the exceptions that carry them.

Every failure that crosses the wire is one `ErrorCode` plus a one-line message and optional
structured `data`. Exceptions record whose fault they are (as h11 does): a `LocalProtocolError`
is raised when *we* were asked to do something the protocol forbids; a `RemoteProtocolError`
when the peer sent something invalid. `RemoteError` is what a client raises for an error
answer from the daemon.
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.StrEnum):
    """Every error code on the wire. Adding one is additive; renaming one is a protocol change.

    A `StrEnum`: a member *is* its wire string (`str(code)`, f-strings and `==` with the
    string all give the value), so no caller needs `.value`.
    """

    # Framing and handshake (the connection is closed after these).
    FRAME_TOO_LARGE = "frame_too_large"
    MALFORMED_FRAME = "malformed_frame"
    HANDSHAKE_REQUIRED = "handshake_required"
    UNSUPPORTED_PROTOCOL = "unsupported_protocol"
    # Request level (the connection stays usable).
    INVALID_REQUEST = "invalid_request"
    METHOD_NOT_FOUND = "method_not_found"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    CONFLICT = "conflict"
    BUSY = "busy"
    STALE_GENERATION = "stale_generation"
    INVALID_CURSOR = "invalid_cursor"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    STORAGE_ERROR = "storage_error"
    LIMIT_EXCEEDED = "limit_exceeded"
    EXECUTION_OBSERVATION_ISSUES = "execution_observation_issues"
    HERDR_DISABLED = "herdr_disabled"
    HERDR_TARGET_NOT_FOUND = "herdr_target_not_found"
    HERDR_TARGET_MISMATCH = "herdr_target_mismatch"
    HERDR_INVALID_REQUEST = "herdr_invalid_request"
    HERDR_PROMPT_ID_UNSUPPORTED = "herdr_prompt_id_unsupported"
    HERDR_TIMEOUT = "herdr_timeout"
    HERDR_OUTPUT_TOO_LARGE = "herdr_output_too_large"
    HERDR_UNAVAILABLE = "herdr_unavailable"
    HERDR_CLI_ERROR = "herdr_cli_error"
    HERDR_USAGE_ERROR = "herdr_usage_error"
    HERDR_INVALID_RESPONSE = "herdr_invalid_response"
    HERDR_EXEC_FAILED = "herdr_exec_failed"
    INTERNAL = "internal"


#: Codes after which the daemon closes the connection: the byte stream can't be trusted.
FATAL_CODES = frozenset(
    {
        ErrorCode.FRAME_TOO_LARGE,
        ErrorCode.MALFORMED_FRAME,
        ErrorCode.HANDSHAKE_REQUIRED,
        ErrorCode.UNSUPPORTED_PROTOCOL,
    }
)


class VigilError(Exception):
    """Base of every vigil exception: a code, a one-line message and optional data."""

    def __init__(self, code: ErrorCode | str, message: str, data: dict[str, Any] | None = None):
        super().__init__(message)
        #: An ErrorCode when the string is one (a newer daemon may send codes we do not know).
        self.code: ErrorCode | str = ErrorCode(code) if code in _CODE_VALUES else str(code)
        self.message = message
        self.data = data or {}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


_CODE_VALUES = frozenset(ErrorCode)


class ProtocolError(VigilError):
    """A violation of the wire protocol."""


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol forbids (our fault)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids (their fault)."""


class RemoteError(VigilError):
    """The daemon answered a request with an error."""


def invalid_request(message: str, field: str) -> VigilError:
    """The one shape of a bad-parameter error: `invalid_request`, naming the field."""
    return VigilError(ErrorCode.INVALID_REQUEST, message, {"field": field})
