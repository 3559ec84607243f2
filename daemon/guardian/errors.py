"""Daemon-side exceptions for talking to guardians: one place, a few kinds (as httpcore does).

Each carries a vigil.protocol ErrorCode so the daemon can pass it on unchanged.
"""

from __future__ import annotations

from vigil.protocol.errors import ErrorCode, VigilError


class GuardianError(VigilError):
    """Base of every guardian-related failure."""


class GuardianUnavailable(GuardianError):
    """No guardian answers on that socket (gone, never started, or the connection ended)."""

    def __init__(self, message: str, data: dict | None = None):
        super().__init__(ErrorCode.UNAVAILABLE, message, data)


class GuardianClosed(GuardianUnavailable):
    """The guardian closed the connection (it exited, or another daemon connected)."""


class GuardianIdentityMismatch(GuardianError):
    """The process behind the socket is not the guardian we expected (pid reuse, new runtime)."""

    def __init__(self, message: str, data: dict | None = None):
        super().__init__(ErrorCode.CONFLICT, message, data)


class GuardianProtocolError(GuardianError):
    """The guardian sent something we cannot accept, or refused our handshake."""


class GuardianLaunchError(GuardianError):
    """A guardian could not be started; the message says which step failed and why.
    `exit_code` is set when the guardian ran but the command could not be started (127 not
    found, 126 not executable): a definite outcome of the command, not a daemon failure."""

    def __init__(self, code, message: str, data: dict | None = None, *,
                 exit_code: int | None = None):
        super().__init__(code, message, data)
        self.exit_code = exit_code
