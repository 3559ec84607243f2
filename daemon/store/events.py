"""Execution logs in the store: what vigil did and saw for one execution (seeds/002,
"Execution logs"), kept with its record and removed with it.

Entries live in the `events` database under execution id (16 bytes) + seq (u64). Seqs of one
execution are consecutive from 0 and only the oldest are ever deleted (the log is bounded by
`Settings.execution_events_max`), so the first and last keys give the count and the number
dropped without a scan, and a page asked for by seq never shifts when the log moves on.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import keys
from .errors import StoreError
from .tx import Tx

#: Levels, least severe first; an entry's level is stored as its index.
LEVELS = ("debug", "info", "warn", "error")


class StoredEvent(msgspec.Struct, array_like=True, frozen=True):
    """One log entry as stored (compact: a log of a long-lived shell has many)."""

    at_unix_ms: int
    level: int
    kind: str
    message: str
    data: dict[str, Any] = {}


class EventPage(msgspec.Struct, frozen=True):
    """Entries at or above a level, from a seq: (seq, entry) pairs in order."""

    entries: list[tuple[int, StoredEvent]]
    next_offset: int
    has_more: bool
    first_offset: int


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StoredEvent)


def _bounds(tx: Tx, eid: bytes) -> tuple[int, int] | None:
    """(first seq, last seq) of an execution's log, or None when it has none."""
    cur = tx.txn.cursor(db=tx.dbs["events"])
    if not cur.set_range(eid) or cur.key()[: keys.ID_LEN] != eid:
        return None
    first = keys.output_offset(cur.key())
    end = keys.prefix_end(eid)
    ok = cur.set_range(end) if end is not None else False
    ok = cur.prev() if ok else cur.last()
    return first, keys.output_offset(cur.key())


def append_events(tx: Tx, eid: bytes, events: list[StoredEvent], keep: int) -> None:
    """Append `events` to one execution's log and drop its oldest beyond `keep`."""
    db = tx.dbs["events"]
    bounds = _bounds(tx, eid)
    first, nxt = (0, 0) if bounds is None else (bounds[0], bounds[1] + 1)
    for event in events:
        tx.txn.put(keys.output_key(eid, nxt), _encoder.encode(event), db=db)
        nxt += 1
    while nxt - first > keep:
        tx.txn.delete(keys.output_key(eid, first), db=db)
        first += 1


def read_events(tx: Tx, eid: bytes, offset: int, limit: int, min_level: int) -> EventPage:
    """Up to `limit` entries with seq >= `offset` and level >= `min_level`; `next_offset`
    is where the next page starts (the first matching entry left out, when `has_more`)."""
    bounds = _bounds(tx, eid)
    if bounds is None:
        return EventPage([], offset, False, 0)
    first, last = bounds
    start = max(offset, first)
    cur = tx.txn.cursor(db=tx.dbs["events"])
    ok = cur.set_range(keys.output_key(eid, start))
    out: list[tuple[int, StoredEvent]] = []
    while ok and cur.key()[: keys.ID_LEN] == eid:
        seq = keys.output_offset(cur.key())
        try:
            event = _decoder.decode(cur.value())
        except msgspec.DecodeError as exc:
            raise StoreError(f"unreadable execution log entry: {exc}") from None
        if event.level >= min_level:
            if len(out) >= limit:
                return EventPage(out, seq, True, first)
            out.append((seq, event))
        ok = cur.next()
    return EventPage(out, max(start, last + 1), False, first)
