"""An execution's rendered scrollback, persisted (issue 17: the `scrollback` read source).

The screen keeper numbers the lines that scrolled off the top of the main screen
(daemon/screen/scrollback.py); the runtime hands the store the lines it has not handed yet
(`ScrollbackUpdate`, a bounded number per screen publication), and the store keeps them in
the `scrollback` db: one header per execution at key `eid`, one line per key
`eid + number` (8 bytes, big-endian, so the lines of an execution sort in order).

Numbers in the store are the store's own, so they survive the keeper. A daemon restart
starts a new keeper whose numbering starts again at 0: when it was fed the output from its
first byte (the guardian's ring held all of it) its numbers are the old ones and the lines
already stored are skipped; when it starts from a restored screen, its lines are appended
after the stored ones (`offset` maps the keeper's numbers to the store's). When numbered lines change
meaning — the history is cleared, a replay re-renders its newest lines exactly, a resize
pulls rows back onto the screen — the keeper says from which of its numbers on
(`rewrite_from`); the store drops the stored lines from there and advances its `epoch`, so a
reader's cursor of an older epoch gets `resync_required` (pages.py).

Bounds: at most `screen_scrollback_lines` lines per execution (the oldest are dropped; a
reader whose cursor points below the oldest kept line gets a `gap`); deleted with the
execution's screen (retention.py). Lines the keeper dropped before they were handed over
are a gap too, never invented.
"""

from __future__ import annotations

import struct

import msgspec

from .tx import Tx

_NUMBER = struct.Struct(">Q")


class ScrollbackUpdate(msgspec.Struct, kw_only=True, frozen=True):
    """New scrollback lines of one execution, in the keeper's numbering (an ingest item).

    `lines[i]` is keeper line `start + i`, as (text, fast_forwarded); the next update
    starts where this one ended, unless the keeper dropped lines before they were handed
    over (a hole). `keeper` names the keeper whose numbers these are (a new one after a
    daemon restart continues after the stored lines); `rewrite_from`, when set, is the
    first keeper number whose stored line is no longer right (stored lines from there are
    dropped before these are written).
    """

    keeper: int
    start: int
    #: The keeper was fed the output from its first byte: its numbers are the execution's.
    from_start: bool = True
    lines: list[tuple[str, bool]] = []
    rewrite_from: int | None = None


class ScrollbackHeader(msgspec.Struct, kw_only=True, frozen=True):
    """What the store knows of one execution's scrollback (store numbering)."""

    #: Advances whenever stored lines change meaning (cursors of older epochs resync).
    epoch: int = 0
    #: Oldest line number kept, and the number the next line gets.
    first: int = 0
    total: int = 0
    #: The keeper the stored numbers continue, and store number = keeper number + offset.
    keeper: int = -1
    offset: int = 0


_decode_header = msgspec.msgpack.Decoder(ScrollbackHeader).decode
_decode_line = msgspec.msgpack.Decoder(tuple[str, bool]).decode
_encode = msgspec.msgpack.Encoder().encode


def line_key(eid: bytes, number: int) -> bytes:
    return eid + _NUMBER.pack(number)


def header(txn, db, eid: bytes) -> ScrollbackHeader | None:
    raw = txn.get(eid, db=db)
    return None if raw is None else _decode_header(raw)


def lines_from(txn, db, eid: bytes, start: int):
    """(number, text, fast_forwarded) of the stored lines numbered `start` and up, in order."""
    cur = txn.cursor(db=db)
    ok = cur.set_range(line_key(eid, start))
    n = len(eid)
    while ok:
        key = cur.key()
        if len(key) != n + 8 or key[:n] != eid:
            return
        text, ff = _decode_line(cur.value())
        yield _NUMBER.unpack(key[n:])[0], text, ff
        ok = cur.next()


def tail(txn, db, eid: bytes, count: int) -> tuple[int, int, list[tuple[str, bool]]]:
    """The newest `count` stored lines: (number of the first, lines scrolled away in all,
    [(text, fast_forwarded)]) — fewer lines where some were never stored."""
    head = header(txn, db, eid)
    if head is None or count <= 0:
        return (0 if head is None else head.total), (0 if head is None else head.total), []
    start = max(head.first, head.total - count)
    out = [(text, ff) for _, text, ff in lines_from(txn, db, eid, start)]
    return start, head.total, out


def put_scrollback(tx: Tx, execution_id: str, update: ScrollbackUpdate) -> bool:
    """Store `update`; returns True when anything changed."""
    eid = bytes.fromhex(execution_id)
    db = tx.dbs["scrollback"]
    txn = tx.txn
    stored = header(txn, db, eid)
    head = stored or ScrollbackHeader()
    epoch, first, total, offset = head.epoch, head.first, head.total, head.offset
    if stored is not None and update.keeper != head.keeper:
        # A new keeper (daemon restart): the same numbers, or its lines follow the stored ones.
        offset = 0 if update.from_start else total - update.start
    elif update.rewrite_from is not None:
        cut = max(update.rewrite_from + offset, 0)
        if cut < total:
            _delete(tx, eid, cut, total)
            epoch += 1
            total = cut
            first = min(first, total)
    was_empty = first >= total
    start = update.start + offset
    # Lines the keeper dropped before they were handed over stay a hole (a reader's gap).
    written = None
    for i, (text, ff) in enumerate(update.lines):
        if start + i >= total:
            txn.put(line_key(eid, start + i), _encode((text, ff)), db=db)
            written = start + i if written is None else written
    total = max(total, start + len(update.lines))
    if was_empty:
        first = total if written is None else written
    limit = tx.settings.screen_scrollback_lines
    if total - first > limit:
        _delete(tx, eid, first, total - limit)
        first = total - limit
    new = ScrollbackHeader(epoch=epoch, first=first, total=total, keeper=update.keeper,
                           offset=offset)
    if new == head:
        return False
    txn.put(eid, _encode(new), db=db)
    return True


def _delete(tx: Tx, eid: bytes, start: int, end: int) -> None:
    """Delete the stored lines numbered start .. end-1."""
    cur = tx.txn.cursor(db=tx.dbs["scrollback"])
    ok = cur.set_range(line_key(eid, start))
    stop = line_key(eid, end)
    while ok:
        key = cur.key()
        if key >= stop or key[:len(eid)] != eid:
            return
        ok = cur.delete()


def delete_scrollback(tx: Tx, eid: bytes) -> None:
    """Every stored line and the header of one execution (with its screen)."""
    tx.delete_prefix("scrollback", eid)
