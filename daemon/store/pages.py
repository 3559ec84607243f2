"""Bounded pages of retained output and of the screen (spec: "Read bounded output pages").

Output pages
------------
`read_output_page` returns at most `page_bytes` bytes (default Settings.read_page_bytes_default,
16 KiB; at most read_page_bytes_max, 64 KiB; at least 4, so any one character fits) decoded
as UTF-8 with replacement, from the cursor's offset (offset 0 without a cursor). All of it
happens in ONE read transaction.

- UTF-8 boundaries: a page never ends inside a character (`utf8.safe_cut`): the bytes of a
  character cut by the page limit go to the next page. An incomplete sequence at the very
  end of the output is held back while more bytes may still come (running, or output
  pending in the daemon), and decoded (as U+FFFD) once it is final: at a hole in the retained
  output or at the end of a finished execution. Concatenating the pages of a stream
  without gaps therefore gives exactly `bytes.decode('utf-8', 'replace')` of the stream,
  and a page always makes progress except when it is waiting for the rest of a character.
- Gaps: when the requested offset is no longer retained (pruned by retention, or lost in the
  guardian's ring), the page starts at the next retained byte and reports
  `gap = {bytes_skipped, from_offset, to_offset}` with bytes_skipped = to - from exactly;
  a page stops at a hole, so the next page reports that hole as its gap.
- `has_more` is true exactly when `end_offset < output_total_bytes` (more is already
  produced), or the execution is `running`, or output is pending (the caller says so: a
  capture is still owed): i.e. while reading again later may return more. A terminal execution read
  to its end has `has_more == False`.
- `next_cursor` is always returned (continue from `end_offset`); it is bound to the store,
  scope, execution, source 'output' and the record's generation.

Screen and detection pages
--------------------------
`read_screen_page` pages the UTF-8 text of the persisted screen snapshot the same way; the
cursor carries the snapshot number, and a cursor of an older snapshot gets
`resync_required = True` with the first page of the current snapshot. The detection source
pages the same snapshot (the recognizer evaluates the screen), with cursors of its own.

Scrollback pages
----------------
`read_scrollback_page` pages the persisted scrollback (scrollback.py) in whole lines, each
ending in a newline, oldest first, up to `page_bytes` of text (always at least one line: a
line is one terminal row, at most a few KiB). Offsets are line numbers, counted from the
first line the execution scrolled away; without a cursor the page starts at the oldest kept
line. A cursor below the oldest kept line, or at a hole (lines dropped before they were
persisted), gets the next kept line and a `gap` counted in lines (`bytes_skipped` is the
number of lines). `snapshot` is the scrollback's epoch: when lines changed meaning (a clear,
a replay, a resize that pulled rows back onto the screen) a cursor of an older epoch gets
`resync_required` and the first page again. `fast_forwarded_lines` are the numbers of the
lines in the page that the keeper rendered by its fast plain path (`fidelity` is then
`fast_forwarded`). `has_more` is true while more lines are stored, or may come (running).
"""

from __future__ import annotations

from vigil.protocol.api.execution import DetectionSummary, Gap, Page

from . import cursor as cursors
from .errors import ExecutionNotFound, InvalidArgument
from .output import read_stored
from .records import ExecutionRecord, id_bytes, parse_execution_id, scope_hash
from .scrollback import header as scrollback_header
from .scrollback import lines_from
from .store import CatalogView, Store
from .utf8 import safe_cut

#: Smallest page: the longest UTF-8 character must fit (spec: observe accepts 4..65,536).
MIN_PAGE_BYTES = 4


def page_size(view: CatalogView, page_bytes: int | None) -> int:
    s = view.store.settings
    if page_bytes is None:
        return s.read_page_bytes_default
    if isinstance(page_bytes, bool) or not isinstance(page_bytes, int) or not (
        MIN_PAGE_BYTES <= page_bytes <= s.read_page_bytes_max
    ):
        raise InvalidArgument(f"page_bytes must be between {MIN_PAGE_BYTES} and {s.read_page_bytes_max}")
    return page_bytes


def scoped_record(view: CatalogView, scope: str, execution_id: str) -> ExecutionRecord:
    rec = view.get(scope, execution_id)
    if rec is None:
        raise ExecutionNotFound()
    return rec


def _page_cursor(view: CatalogView, rec: ExecutionRecord, source: str, offset: int, snapshot: int = 0) -> str:
    store = view.store
    return cursors.encode_cursor(
        store.mac_key,
        cursors.CursorFields(
            kind=cursors.PAGE,
            scope=scope_hash(rec.scope),
            store_epoch=store.store_epoch,
            execution_id=id_bytes(rec.execution_id),
            source=source,
            generation=rec.generation,
            snapshot=snapshot,
            offset=offset,
        ),
    )


def _decode(view: CatalogView, scope: str, execution_id: str, source: str, cursor: str) -> cursors.CursorFields:
    store = view.store
    return cursors.decode_cursor(
        store.mac_key,
        cursor,
        expect_kind=cursors.PAGE,
        expect_scope=scope,
        expect_execution_id=execution_id,
        expect_source=source,
        store_epoch=store.store_epoch,
    )


def read_output_page(
    src: Store | CatalogView,
    scope: str,
    execution_id: str,
    cursor: str | None = None,
    page_bytes: int | None = None,
    *,
    pending: bool = False,
) -> Page:
    """One page of retained output (see the module docstring for the exact semantics).

    `src` is a Store (a read txn of its own) or a CatalogView (observe: share its txn).
    `pending`: the daemon knows of output not yet persisted (runtime knowledge the store
    does not have), so more may come even after the exit.

    Raises:
        InvalidArgument: malformed execution id or page_bytes out of range.
        ExecutionNotFound: no such execution in `scope`.
        CursorError: the cursor is not this store's cursor for this scope/execution/output.
    """
    parse_execution_id(execution_id)
    if isinstance(src, Store):
        with src.catalog() as view:
            return read_output_page(view, scope, execution_id, cursor, page_bytes, pending=pending)
    view = src
    size = page_size(view, page_bytes)
    rec = scoped_record(view, scope, execution_id)
    start = 0 if cursor is None else _decode(view, scope, execution_id, "output", cursor).offset
    start = min(start, rec.output_total_bytes)
    # One byte beyond the page tells whether the stored bytes continue past it.
    first, data = read_stored(view.tx.txn, view.tx.dbs["output"], id_bytes(execution_id), start, size + 1)
    if not data:
        # Retained output is always a suffix of the stream (pruning takes the front, ingest
        # appends at the end), so nothing stored at or after `start` means that everything
        # from `start` to the end is gone (or `start` is the end).
        first = rec.output_total_bytes
    gap = Gap(bytes_skipped=first - start, from_offset=start, to_offset=first) if first > start else None
    live = rec.status == "running" or pending
    if len(data) > size:
        cut = safe_cut(data, size) or size  # size >= 4: 0 only for malformed input; force
    else:
        at_stream_end = first + len(data) >= rec.output_total_bytes
        if at_stream_end and live:
            cut = safe_cut(data, len(data))  # the rest of a character may still come
        else:
            cut = len(data)  # final: a hole or a finished stream follows; decode as is
    end = first + cut
    return Page(
        source="output",
        text=bytes(data[:cut]).decode("utf-8", "replace"),
        next_cursor=_page_cursor(view, rec, "output", end),
        has_more=end < rec.output_total_bytes or live,
        gap=gap,
        start_offset=first,
        end_offset=end,
    )


def read_output_tail(store: Store, scope: str, execution_id: str, max_bytes: int
                     ) -> tuple[str, bool]:
    """The last `max_bytes` of retained output as text, and whether anything before them
    (retained or pruned) is left out. For a short answer about a finished command (a
    BashCommand Task that ended within its inline allowance); pages are for everything else.
    """
    with store.catalog() as view:
        rec = scoped_record(view, scope, execution_id)
        start = max(0, rec.output_total_bytes - max_bytes)
        first, data = read_stored(view.tx.txn, view.tx.dbs["output"], id_bytes(execution_id),
                                  start, max_bytes)
    text = bytes(data).decode("utf-8", "replace")
    cut = start > 0 or first > start
    if cut:
        text = text.lstrip("\ufffd")  # a character split by the cut
    return text, cut


def read_screen_page(
    src: Store | CatalogView,
    scope: str,
    execution_id: str,
    cursor: str | None = None,
    page_bytes: int | None = None,
    *,
    source: str = "screen",
    detection: DetectionSummary | None = None,
) -> Page:
    """One page of the persisted screen's text (see the module docstring).

    `source="detection"` pages the same snapshot as the detection snapshot (what the
    recognizer evaluated; `detection` says what it concluded), with cursors of their own
    source: a screen cursor is refused for detection and the other way round.

    Raises: as `read_output_page` (the cursor must be a cursor of `source`).
    """
    parse_execution_id(execution_id)
    if isinstance(src, Store):
        with src.catalog() as view:
            return read_screen_page(view, scope, execution_id, cursor, page_bytes,
                                    source=source, detection=detection)
    view = src
    size = page_size(view, page_bytes)
    rec = scoped_record(view, scope, execution_id)
    screen = view.get_screen(scope, execution_id)
    raw = b"" if screen is None else screen.text.encode("utf-8")
    number = 0 if screen is None else screen.snapshot
    start, resync = 0, False
    if cursor is not None:
        fields = _decode(view, scope, execution_id, source, cursor)
        if fields.snapshot == number:
            start = min(fields.offset, len(raw))
        else:
            resync = True
    cut = safe_cut(raw[start:], size) if len(raw) - start > size else len(raw) - start
    cut = cut or min(size, len(raw) - start)
    end = start + cut
    return Page(
        source=source,
        text=raw[start:end].decode("utf-8", "replace"),
        next_cursor=_page_cursor(view, rec, source, end, number),
        has_more=end < len(raw),
        resync_required=resync,
        snapshot=number,
        start_offset=start,
        end_offset=end,
        fidelity="" if screen is None else screen.fidelity,
        detection=detection,
    )


def read_scrollback_page(
    src: Store | CatalogView,
    scope: str,
    execution_id: str,
    cursor: str | None = None,
    page_bytes: int | None = None,
    *,
    pending: bool = False,
) -> Page:
    """One page of the persisted scrollback (see the module docstring).

    Raises: as `read_output_page` (the cursor must be a scrollback cursor).
    """
    parse_execution_id(execution_id)
    if isinstance(src, Store):
        with src.catalog() as view:
            return read_scrollback_page(view, scope, execution_id, cursor, page_bytes,
                                        pending=pending)
    view = src
    size = page_size(view, page_bytes)
    rec = scoped_record(view, scope, execution_id)
    eid = id_bytes(execution_id)
    db = view.tx.dbs["scrollback"]
    head = scrollback_header(view.tx.txn, db, eid)
    epoch, first, total = (0, 0, 0) if head is None else (head.epoch, head.first, head.total)
    start, resync = first, False
    if cursor is not None:
        fields = _decode(view, scope, execution_id, "scrollback", cursor)
        if fields.snapshot == epoch:
            start = min(fields.offset, total)
        else:
            resync = True
    texts: list[str] = []
    forwarded: list[int] = []
    used = 0
    begin = end = None
    for number, text, ff in lines_from(view.tx.txn, db, eid, start):
        if end is not None and number != end:
            break  # a hole: the next page reports it as its gap
        line = text + "\n"
        cost = len(line.encode("utf-8", "surrogatepass"))
        if texts and used + cost > size:
            break
        if begin is None:
            begin = number
        texts.append(line)
        used += cost
        if ff:
            forwarded.append(number)
        end = number + 1
    if begin is None:  # nothing stored at or after `start`: everything up to the end is gone
        begin = end = max(start, total)
    gap = Gap(bytes_skipped=begin - start, from_offset=start, to_offset=begin) if begin > start else None
    return Page(
        source="scrollback",
        text="".join(texts),
        next_cursor=_page_cursor(view, rec, "scrollback", end, epoch),
        has_more=end < total or rec.status == "running" or pending,
        gap=gap,
        resync_required=resync,
        snapshot=epoch,
        start_offset=begin,
        end_offset=end,
        fidelity="fast_forwarded" if forwarded else "exact",
        fast_forwarded_lines=forwarded,
    )
