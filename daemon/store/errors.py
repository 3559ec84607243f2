"""The store's own exceptions, each carrying one finite wire `ErrorCode`.

LMDB and OS errors are translated once, at the edge (`store.py`), into these (trio's rule:
translate at the boundary, `from exc` so the cause stays visible in logs). The daemon can
answer any of them directly: `code` and `message` are already what the client should see.
"""

from __future__ import annotations

from vigil.protocol.errors import ErrorCode, VigilError

#: The spec's exact wording for every unusable cursor (garbage, altered, forged, moved to
#: another execution/source/scope, or from another store). One message for all of them, so
#: that the answer is not an oracle telling a prober which check failed.
CURSOR_MESSAGE = "invalid or foreign execution cursor"


class StoreError(VigilError):
    """The store cannot do what was asked (not a store, newer schema, disk full, read-only…).

    Nothing committed before is lost when this is raised: the failed transaction was
    abandoned as a whole.
    """

    def __init__(self, message: str, data: dict | None = None):
        super().__init__(ErrorCode.STORAGE_ERROR, message, data)


class CursorError(VigilError):
    """A cursor that this store did not issue for this scope, execution and source."""

    def __init__(self) -> None:
        super().__init__(ErrorCode.INVALID_CURSOR, CURSOR_MESSAGE)


class ExecutionNotFound(VigilError):
    """No such execution *in this scope* (another scope's execution reads exactly the same)."""

    def __init__(self) -> None:
        super().__init__(ErrorCode.NOT_FOUND, "execution not found")


class InvalidArgument(VigilError):
    """A caller passed a value outside its documented range (e.g. `page_bytes`)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_REQUEST, message)
