"""When output arrived and which size the terminal had: the timeline a recording replays.

Output chunks (output.py) keep bytes by stream offset and nothing else; a recording
(`vigil export`, asciicast v2) also needs *when* each byte came and the terminal's size as
it changed. Both are kept here, beside the chunks, in the `timings` database:

| key | value |
|---|---|
| execution id (16) + b"t" + offset (u64) | arrival marks of one commit: (offset, unix µs) u64 pairs |
| execution id (16) + b"s" + offset (u64) | size marks at that offset: (unix µs u64, rows u32, cols u32) |

An arrival mark says "the byte at this offset, and every later one up to the next mark,
arrived at this time". Ingest stamps a chunk when it takes it from the guardian, at most one
mark per `Settings.output_arrival_step_seconds` (finer steps are invisible in a playback
at 60 frames a second and would cost a mark per 4 KiB read on a flood), and one commit
writes all of an execution's marks as ONE value: the hot path pays one put per execution
per ingest tick, not one per chunk. A size mark is written when the execution is created
(its first size) and on every resize, at the offset reached by then.

What the marks cannot know (documented in the README, "Export a recording"):
- bytes replayed from a guardian's ring after the daemon was away, and a guardian's exit
  tail, are stamped when the daemon received them (the tail not at all: it takes the time
  of the mark before it), not when the child wrote them;
- records from before vigil kept timings have no marks: their bytes are reported with no
  time (`at_unix_us` null) and a recording shows them at once.

Retention: marks live as long as the bytes they describe. When the front of the output is
pruned, marks wholly before the new retained start are deleted, keeping the one mark of
each kind that still applies at the start; removing a record removes its marks.
"""

from __future__ import annotations

import struct

from . import keys
from .tx import Tx

ARRIVALS = b"t"
SIZES = b"s"
_PAIR = struct.Struct(">QQ")
_SIZE = struct.Struct(">QII")


def _key(eid: bytes, kind: bytes, offset: int) -> bytes:
    return eid + kind + keys.U64.pack(offset)


def _offset(key: bytes) -> int:
    return keys.U64.unpack_from(key, keys.ID_LEN + 1)[0]


def _append(tx: Tx, key: bytes, value: bytes) -> None:
    """Put `value` at `key`, after what is there already (two commits may mark one offset:
    two resizes with no output between them)."""
    db = tx.dbs["timings"]
    old = tx.txn.get(key, db=db)
    tx.txn.put(key, value if old is None else bytes(old) + value, db=db)


def add_arrivals(tx: Tx, eid: bytes, marks: list[tuple[int, int]], stored_from: int) -> None:
    """Keep the arrival `marks` ((offset, unix µs), in stream order) of bytes just appended.

    `stored_from` is where this commit's new bytes begin (the stream end before it): a mark
    of bytes stored earlier (a replay that overlapped) is moved to `stored_from`, and only
    the latest such mark is kept, so a mark never claims bytes of an earlier commit.
    """
    kept: list[tuple[int, int]] = []
    for offset, at in marks:
        offset = max(offset, stored_from)
        if kept and kept[-1][0] == offset:
            kept[-1] = (offset, at)
        else:
            kept.append((offset, at))
    if kept:
        value = b"".join(_PAIR.pack(o, t) for o, t in kept)
        _append(tx, _key(eid, ARRIVALS, kept[0][0]), value)


def add_size(tx: Tx, eid: bytes, offset: int, at_unix_us: int, rows: int, cols: int) -> None:
    """Record that from stream offset `offset` on, the terminal is `rows`×`cols`."""
    _append(tx, _key(eid, SIZES, offset), _SIZE.pack(at_unix_us, rows, cols))


def prune(tx: Tx, eid: bytes, retained_start: int) -> None:
    """Delete the marks that no retained byte needs: of each kind, every entry whose
    successor already applies at `retained_start`."""
    cur = tx.txn.cursor(db=tx.dbs["timings"])
    for kind in (ARRIVALS, SIZES):
        prefix = eid + kind
        if not cur.set_range(prefix):
            continue
        while True:
            key = cur.key()
            if key[: len(prefix)] != prefix or _offset(key) >= retained_start:
                break
            if not cur.next():
                break
            following = cur.key()
            if following[: len(prefix)] != prefix or _offset(following) > retained_start:
                break
            cur.prev()
            cur.delete()  # moves to the successor, which the loop examines next


def remove(tx: Tx, eid: bytes) -> None:
    """Delete every mark of one execution (its record is being removed)."""
    tx.delete_prefix("timings", eid)


def _entries(cur, prefix: bytes, start: int):
    """(offset, value) of entries of `prefix`: the last one at or before `start`, then on."""
    key = prefix + keys.U64.pack(start)
    if cur.set_range(key):
        if bytes(cur.key()) != key and not (cur.prev() and bytes(cur.key()[: len(prefix)]) == prefix):
            cur.set_range(key)
    elif not cur.last():
        return
    elif bytes(cur.key()[: len(prefix)]) != prefix:
        return
    while bytes(cur.key()[: len(prefix)]) == prefix:
        yield _offset(cur.key()), bytes(cur.value())
        if not cur.next():
            return


def arrivals(txn, db, eid: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """The arrival marks that date bytes [start, end): the last mark at or before `start`
    (it dates `start` itself), then every mark before `end`, as (offset, unix µs)."""
    out: list[tuple[int, int]] = []
    if db is None:  # a read-only store from before timings were kept
        return out
    cur = txn.cursor(db=db)
    for _offset_key, value in _entries(cur, eid + ARRIVALS, start):
        for i in range(0, len(value), _PAIR.size):
            offset, at = _PAIR.unpack_from(value, i)
            if offset >= end:
                return out
            if offset <= start:
                out[:] = [(offset, at)]
            else:
                out.append((offset, at))
    return out


def sizes(txn, db, eid: bytes) -> list[tuple[int, int, int, int]]:
    """Every size mark kept, as (offset, unix µs, rows, cols), in stream order."""
    out: list[tuple[int, int, int, int]] = []
    if db is None:
        return out
    cur = txn.cursor(db=db)
    prefix = eid + SIZES
    ok = cur.set_range(prefix)
    while ok and bytes(cur.key()[: len(prefix)]) == prefix:
        offset, value = _offset(cur.key()), bytes(cur.value())
        for i in range(0, len(value), _SIZE.size):
            at, rows, cols = _SIZE.unpack_from(value, i)
            out.append((offset, at, rows, cols))
        ok = cur.next()
    return out
