"""Opaque, authenticated cursors (DESIGN: Store, "Cursors are opaque").

A cursor is base64url (no padding) of `msgpack(CursorFields) + HMAC-SHA256(key, ...)[:16]`,
with the store's private 32-byte key. So a client cannot build one, alter one (a changed
offset fails the MAC), move one to another execution, source, scope or kind (the expected
values are checked after the MAC), or reuse one across stores (the store epoch is inside and
the key differs). Every refusal is the same `CursorError` with the spec's exact message
`invalid or foreign execution cursor`, so the answer tells a prober nothing.

A cursor grants nothing by itself: the daemon checks the session's scope before decoding,
and `expect_scope` is that scope, never something read from the cursor.

Why 16 bytes of MAC: 128 bits make forgery infeasible at any request rate, and keep a
cursor near 110 characters. The scope is carried as its 16-byte hash so that a cursor,
which may end up in logs, does not reveal the workspace path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

import msgspec

from .errors import CursorError
from .records import scope_hash

CURSOR_VERSION = 1
MAC_BYTES = 16
#: Longest cursor text accepted before any decoding (a real one is ~110 characters).
MAX_CURSOR_CHARS = 512
_DOMAIN = b"vigil-cursor-v1\x00"

#: Cursor kinds: a page cursor over one execution's source, or a catalog (wait) cursor.
PAGE = "page"
CATALOG = "catalog"


class CursorFields(msgspec.Struct, array_like=True, frozen=True, kw_only=True):
    """The authenticated content of a cursor. array_like: small; `v` versions the layout."""

    v: int = CURSOR_VERSION
    kind: str
    #: 16-byte scope hash (records.scope_hash), not the scope text.
    scope: bytes
    store_epoch: bytes
    #: 16-byte execution id; empty for a catalog cursor.
    execution_id: bytes = b""
    #: 'output', 'screen' or 'detection' for page cursors; '' for catalog cursors.
    source: str = ""
    generation: int = 0
    #: Screen/detection snapshot number the offset refers to (0 for output).
    snapshot: int = 0
    #: Byte offset for pages; the change seq for catalog cursors.
    offset: int = 0


_enc = msgspec.msgpack.Encoder()
_dec = msgspec.msgpack.Decoder(CursorFields)


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, _DOMAIN + payload, hashlib.sha256).digest()[:MAC_BYTES]


def encode_cursor(key: bytes, fields: CursorFields) -> str:
    """The opaque text of `fields`, authenticated with `key` (the store's MAC key)."""
    payload = _enc.encode(fields)
    return base64.urlsafe_b64encode(payload + _mac(key, payload)).rstrip(b"=").decode("ascii")


def decode_cursor(
    key: bytes,
    text: object,
    *,
    expect_kind: str,
    expect_scope: str,
    store_epoch: bytes,
    expect_execution_id: str | None = None,
    expect_source: str | None = None,
) -> CursorFields:
    """Verify and decode a cursor issued by this store for exactly this use.

    `expect_execution_id`/`expect_source` of None skip that check (catalog cursors).

    Raises:
        CursorError: garbage, altered or forged bytes, or a cursor of another kind, scope,
            execution, source or store (always `invalid or foreign execution cursor`).
    """
    if not isinstance(text, str) or not 0 < len(text) <= MAX_CURSOR_CHARS or not text.isascii():
        raise CursorError()
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise CursorError() from None
    # Canonical form only: re-encoding must give the same text (no alternate spellings).
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != text or len(raw) <= MAC_BYTES:
        raise CursorError()
    payload, mac = raw[:-MAC_BYTES], raw[-MAC_BYTES:]
    if not hmac.compare_digest(mac, _mac(key, payload)):
        raise CursorError()
    try:
        fields = _dec.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise CursorError() from None
    if (
        fields.v != CURSOR_VERSION
        or fields.kind != expect_kind
        or not hmac.compare_digest(fields.store_epoch, store_epoch)
        or fields.scope != scope_hash(expect_scope)
        or (expect_execution_id is not None and fields.execution_id.hex() != expect_execution_id)
        or (expect_source is not None and fields.source != expect_source)
        or fields.offset < 0
    ):
        raise CursorError()
    return fields


def encode_catalog_cursor(key: bytes, store_epoch: bytes, scope: str, change_seq: int) -> str:
    """A catalog cursor (list/observe/wait `after`) at change `change_seq` of `scope`."""
    return encode_cursor(key, CursorFields(kind=CATALOG, scope=scope_hash(scope), store_epoch=store_epoch, offset=change_seq))


def decode_catalog_cursor(key: bytes, text: object, store_epoch: bytes, scope: str) -> int:
    """The change seq of a catalog cursor of this store and scope.

    Raises:
        CursorError: as `decode_cursor`.
    """
    return decode_cursor(key, text, expect_kind=CATALOG, expect_scope=scope, store_epoch=store_epoch).offset
