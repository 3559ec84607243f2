"""Key layouts of the named databases: fixed-width, big-endian, so ranges scan in order.

| db | key |
|---|---|
| executions | execution id (16 bytes) |
| by_scope | scope hash (16) + started_unix_ms (u64) + execution id (16): newest last |
| output | execution id (16) + offset (u64): a chunk starting at that stream offset |
| screens | execution id (16) |
| changes | seq (u64) |
| receipts | execution id (16) + generation (u64) + prompt id (utf-8) |
| scopes | scope hash (16) |
| expiry | terminal_at_unix_ms (u64) + execution id (16): oldest outcome first |
| events | execution id (16) + seq (u64): one entry of the execution's log (store/events.py) |
| archives | scope hash (16) + archive ref (16): only the owner's scope finds it |
| archive_expiry | expires_at_unix_ms (u64) + scope hash (16) + archive ref (16) |
| turns | scope hash (16) + execution id (16) + turn (u64): the latest turn last |
"""

from __future__ import annotations

import struct

U64 = struct.Struct(">Q")
ID_LEN = 16
SCOPE_LEN = 16


def u64(n: int) -> bytes:
    return U64.pack(n)


def read_u64(raw: bytes, at: int = 0) -> int:
    return U64.unpack_from(raw, at)[0]


def by_scope_key(shash: bytes, started_ms: int, eid: bytes) -> bytes:
    return shash + U64.pack(max(0, started_ms)) + eid


def by_scope_eid(key: bytes) -> bytes:
    return bytes(key[SCOPE_LEN + 8 :])


def output_key(eid: bytes, offset: int) -> bytes:
    return eid + U64.pack(offset)


def output_offset(key: bytes) -> int:
    return U64.unpack_from(key, ID_LEN)[0]


def expiry_key(terminal_ms: int, eid: bytes) -> bytes:
    return U64.pack(max(0, terminal_ms)) + eid


def archive_key(shash: bytes, ref: bytes) -> bytes:
    return shash + ref


def archive_expiry_key(expires_ms: int, shash: bytes, ref: bytes) -> bytes:
    return U64.pack(max(0, expires_ms)) + shash + ref


def turn_key(shash: bytes, eid: bytes, turn: int) -> bytes:
    return shash + eid + U64.pack(turn)


def receipt_prefix(eid: bytes, generation: int) -> bytes:
    return eid + U64.pack(generation)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with `prefix` (None: no such key)."""
    p = bytearray(prefix)
    while p:
        if p[-1] != 0xFF:
            p[-1] += 1
            return bytes(p)
        p.pop()
    return None
