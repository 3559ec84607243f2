"""Retained output: a byte stream per execution, stored as chunks keyed by stream offset.

Why chunks of ~Settings.output_chunk_bytes (64 KiB): LMDB stores any value above ~2 KiB in
overflow pages, so a 4 KiB value takes two 4 KiB pages (the file grows to twice the data,
DESIGN "Output path"); bigger chunks waste at most one partial page each. Appends from one
batch are coalesced, and the last (partial) chunk of an execution is extended in place until
it is full, so slow trickles do not leave thousands of tiny chunks.

Stream model: offsets are absolute (the guardian's ring offsets). Bytes that will never be
stored are *dropped*: guardian ring gaps (an append at an offset beyond the end) and bytes
pruned by retention. Invariant per execution:
    output_total_bytes - output_dropped_bytes == sum of stored chunk lengths
and `output_retained_start` is the offset of the first stored chunk (== total when none).
An append that overlaps what is already stored (a replay after a daemon restart) stores only
the new suffix, so ingest is idempotent.
"""

from __future__ import annotations

import msgspec

from . import keys, timings
from .records import ExecutionRecord
from .tx import Tx


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def append_output(tx: Tx, rec: ExecutionRecord, appends: list[tuple[int, bytes]]) -> tuple[ExecutionRecord, int]:
    """Store `appends` ((offset, bytes), in stream order) for `rec`.

    Returns the updated record (not yet written) and the number of bytes newly stored.
    Gaps (an offset beyond the current end) are counted as dropped and listed in `gaps`.
    """
    eid = bytes.fromhex(rec.execution_id)
    db = tx.dbs["output"]
    chunk = tx.settings.output_chunk_bytes
    total = rec.output_total_bytes
    dropped = rec.output_dropped_bytes
    gaps = list(rec.gaps)
    segments: list[tuple[int, bytearray]] = []
    for offset, data in appends:
        if offset < 0:
            raise ValueError("output offset must be >= 0")
        end = offset + len(data)
        if end <= total:
            continue  # already stored (replay)
        if offset < total:
            data = data[total - offset :]
            offset = total
        if offset > total:  # the guardian's ring lost these bytes
            dropped += offset - total
            gaps.append((total, offset))
        if segments and segments[-1][0] + len(segments[-1][1]) == offset:
            segments[-1][1].extend(data)
        else:
            segments.append((offset, bytearray(data)))
        total = end
    if not segments:
        return rec, 0
    stored_before = rec.output_stored_bytes
    new_bytes = sum(len(s) for _, s in segments)
    first_offset, first = segments[0]
    # Extend the execution's last chunk if it is partial and the first segment continues it.
    if stored_before and first_offset == rec.output_total_bytes:
        cur = tx.txn.cursor(db=db)
        end_key = keys.output_key(eid, 0xFFFF_FFFF_FFFF_FFFF)
        ok = cur.prev() if cur.set_range(end_key) else cur.last()
        if ok and cur.key()[: keys.ID_LEN] == eid:
            last_offset = keys.output_offset(cur.key())
            last = cur.value()
            room = chunk - len(last)
            if room > 0 and last_offset + len(last) == first_offset:
                take = bytes(first[:room])
                tx.txn.put(cur.key(), bytes(last) + take, db=db)
                segments[0] = (first_offset + len(take), first[len(take) :])
    for offset, data in segments:
        for i in range(0, len(data), chunk):
            tx.txn.put(keys.output_key(eid, offset + i), bytes(data[i : i + chunk]), db=db)
    retained_start = rec.output_retained_start if stored_before else first_offset
    keep = tx.settings.store_gaps_kept
    gaps = [g for g in gaps if g[1] > retained_start][-keep:]
    rec = msgspec.structs.replace(
        rec,
        output_total_bytes=total,
        output_dropped_bytes=dropped,
        output_retained_start=retained_start,
        gaps=gaps,
    )
    return rec, new_bytes


def prune_output(tx: Tx, rec: ExecutionRecord, keep_bytes: int) -> tuple[ExecutionRecord, int]:
    """Drop the oldest stored bytes of `rec` until at most `keep_bytes` remain.

    The first kept chunk is cut exactly, then moved forward past at most 3 UTF-8
    continuation bytes so that the retained text does not begin mid-character.
    Returns the updated record (not yet written) and the number of bytes freed.
    """
    excess = rec.output_stored_bytes - max(0, keep_bytes)
    if excess <= 0:
        return rec, 0
    eid = bytes.fromhex(rec.execution_id)
    db = tx.dbs["output"]
    cur = tx.txn.cursor(db=db)
    freed = 0
    ok = cur.set_range(eid)
    while ok and excess > 0:
        key = cur.key()
        if key[: keys.ID_LEN] != eid:
            break
        value = cur.value()
        if len(value) <= excess:
            excess -= len(value)
            freed += len(value)
            ok = cur.delete()
            continue
        cut = excess
        while cut < len(value) and cut - excess < 3 and _is_continuation(value[cut]):
            cut += 1
        offset = keys.output_offset(key)
        rest = bytes(value[cut:])
        cur.delete()
        if rest:
            tx.txn.put(keys.output_key(eid, offset + cut), rest, db=db)
        freed += cut
        excess = 0
    rec = msgspec.structs.replace(rec, output_dropped_bytes=rec.output_dropped_bytes + freed)
    return _refresh_retained_start(tx, rec), freed


def _refresh_retained_start(tx: Tx, rec: ExecutionRecord) -> ExecutionRecord:
    eid = bytes.fromhex(rec.execution_id)
    cur = tx.txn.cursor(db=tx.dbs["output"])
    if cur.set_range(eid) and cur.key()[: keys.ID_LEN] == eid:
        start = keys.output_offset(cur.key())
    else:
        start = rec.output_total_bytes
    gaps = [g for g in rec.gaps if g[1] > start]
    timings.prune(tx, eid, start)
    return msgspec.structs.replace(rec, output_retained_start=start, gaps=gaps)


def read_stored(txn, db, eid: bytes, start: int, want: int) -> tuple[int, bytes]:
    """Stored bytes of one execution from offset `start`: (first_offset, data).

    `first_offset` is `start` when that byte is stored, else the start of the next stored
    chunk (the caller reports the skipped range), or `start` with empty data when nothing is
    stored at or after it. `data` is contiguous: it stops at `want` bytes, at a hole between
    chunks, or at the end of what is stored.
    """
    cur = txn.cursor(db=db)
    target = keys.output_key(eid, start)

    def ours() -> bool:
        key = cur.key()
        return bool(key) and key[: keys.ID_LEN] == eid

    def contains_start() -> bool:
        return ours() and keys.output_offset(cur.key()) + len(cur.value()) > start

    # The chunk holding `start` is the last one whose key is <= target.
    if cur.set_range(target):
        if cur.key() != target:
            if not (cur.prev() and contains_start()):
                cur.set_range(target)
    elif not (cur.last() and contains_start()):
        return start, b""
    parts: list[bytes] = []
    first_offset = expect = None
    got = 0
    while got < want and ours():
        off = keys.output_offset(cur.key())
        value = cur.value()
        if first_offset is None:
            skip = max(0, start - off)
            first_offset = off + skip
            piece = bytes(value[skip : skip + want])
        elif off != expect:
            break  # a hole: the next page reports it as a gap
        else:
            piece = bytes(value[: want - got])
        expect = off + len(value)
        parts.append(piece)
        got += len(piece)
        if not cur.next():
            break
    if first_offset is None:
        return start, b""
    return first_offset, b"".join(parts)
