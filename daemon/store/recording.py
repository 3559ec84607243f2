"""Pages of an execution's recording: retained output with its arrival times, the terminal's
size and its changes, and the bytes not retained (the `recording` method; `vigil export`
turns the pages into an asciicast v2 file).

A page covers one contiguous range of stored bytes from `offset` (like an output page: it
stops at `page_bytes`, at a hole, or at the end), read in ONE read transaction with the
marks that date it (timings.py). Its events, in stream order:

- `gap` first, when bytes from `offset` on are no longer retained (pruned by retention, or
  lost in the guardian's ring): `from_offset`..`to_offset`, dated like the byte after it;
- `output` runs of bytes, one per arrival mark (`at_unix_us` null for bytes that no mark
  dates: records from before vigil kept timings);
- `resize` at the offset where the size changed (a resize at the same offset as output
  comes before it: the size was set before those bytes were drawn).

`rows`/`cols` is the size in effect at the page's start: the last size mark before it, or
the first one kept (then not repeated as a `resize`), or, with no size marks at all (an
older record), the record's last known size. Size marks at or after the end of the
stream go with the last page, so a resize after the final byte is not lost. Bytes are never
cut inside a page; a UTF-8 character split between pages is whole again once the client
joins the pages' bytes (the client decodes the stream, not each page).
"""

from __future__ import annotations

from vigil.protocol.api.terminal import (
    RecordingGap,
    RecordingOutput,
    RecordingResize,
    RecordingResult,
)

from . import timings
from .errors import InvalidArgument
from .output import read_stored
from .pages import page_size, scoped_record
from .records import id_bytes, parse_execution_id
from .store import CatalogView, Store

#: Size of an execution that never had one recorded (the protocol's default PTY, spec 200×50).
DEFAULT_ROWS, DEFAULT_COLS = 50, 200


def read_recording_page(store: Store, scope: str, execution_id: str, offset: int = 0,
                        page_bytes: int | None = None) -> RecordingResult:
    """One page of the recording of `execution_id` from stream `offset`.

    Raises:
        InvalidArgument: malformed execution id, a negative offset, page_bytes out of range.
        ExecutionNotFound: no such execution in `scope`.
    """
    parse_execution_id(execution_id)
    if offset < 0:
        raise InvalidArgument("offset must be >= 0")
    with store.catalog() as view:
        return _page(view, scope, execution_id, offset, page_bytes)


def _page(view: CatalogView, scope: str, execution_id: str, start: int,
          page_bytes: int | None) -> RecordingResult:
    size = page_size(view, page_bytes)
    rec = scoped_record(view, scope, execution_id)
    eid = id_bytes(execution_id)
    txn, dbs = view.tx.txn, view.tx.dbs
    total = rec.output_total_bytes
    start = min(start, total)
    first, data = read_stored(txn, dbs["output"], eid, start, size)
    if not data:
        first = total  # retained output is a suffix: nothing from `start` on is kept
    end = first + len(data)
    marks = timings.arrivals(txn, dbs.get("timings"), eid, first, max(end, first + 1))
    events: list = []
    if first > start:
        at = marks[0][1] if marks else None
        events.append(RecordingGap(from_offset=start, to_offset=first, at_unix_us=at))
    outputs = _runs(first, data, marks)
    all_sizes = timings.sizes(txn, dbs.get("timings"), eid)
    rows, cols, resizes = _sizes(all_sizes, rec, start, end, last_page=end >= total)
    events += _merged(outputs, resizes)
    return RecordingResult(
        execution_id=execution_id, command=rec.command, started_unix_ms=rec.started_unix_ms,
        ended_unix_ms=rec.ended_unix_ms, status=rec.status, rows=rows, cols=cols,
        timed=bool(marks),
        events=events, start_offset=start, end_offset=end, total_bytes=total,
        has_more=end < total)


def _runs(first: int, data: bytes, marks: list[tuple[int, int]]) -> list[RecordingOutput]:
    """`data` (stored from `first`) cut at its arrival marks, each run dated by its mark."""
    runs = []
    bounds = [(max(o, first), at) for o, at in marks] or [(first, None)]
    if bounds[0][0] > first:  # bytes before the first mark: no time is known for them
        bounds.insert(0, (first, None))
    end = first + len(data)
    for i, (offset, at) in enumerate(bounds):
        stop = bounds[i + 1][0] if i + 1 < len(bounds) else end
        if stop > offset:
            runs.append(RecordingOutput(offset=offset, at_unix_us=at,
                                        data=data[offset - first : stop - first]))
    return runs


def _sizes(marks: list[tuple[int, int, int, int]], rec, start: int, end: int, *,
           last_page: bool) -> tuple[int, int, list[RecordingResize]]:
    """(rows, cols in effect at `start`, resizes within this page)."""
    if not marks:
        return rec.rows or DEFAULT_ROWS, rec.cols or DEFAULT_COLS, []
    before = [m for m in marks if m[0] < start]
    if before:
        _, _, rows, cols = before[-1]
        rest = marks[len(before):]
    else:
        _, _, rows, cols = marks[0]
        rest = marks[1:]
    resizes = [RecordingResize(offset=o, at_unix_us=at, rows=r, cols=c) for o, at, r, c in rest
               if o < end or (last_page and o >= end)]
    return rows, cols, resizes


def _merged(outputs: list[RecordingOutput], resizes: list[RecordingResize]) -> list:
    """Outputs and resizes in stream order; at one offset the resize first."""
    keyed = [((r.offset, 0), r) for r in resizes] + [((o.offset, 1), o) for o in outputs]
    return [event for _, event in sorted(keyed, key=lambda item: item[0])]
