"""The store: vigil's durable execution history in one LMDB environment (DESIGN: Store).

A synchronous API. The daemon calls it from trio worker threads (`trio.to_thread.run_sync`);
each method is one transaction that begins and ends inside the call, on that thread, so
no transaction is ever held across calls or threads (DESIGN pitfall: a txn begun in one
thread and committed in another deadlocked the next writer). Nothing here imports trio.

Catalog operations (`get`, `list`, `catalog()`, `changes_since`, pages) and appends prune
expired records lazily (spec: "Expired records are pruned lazily during catalog
operations"): a read first checks the oldest terminal record's deadline (one cursor step)
and only when something is due runs one small write txn before its read txn.

Time comes from the `clock` given to `open` (unix milliseconds), so tests can move it.

Threads: any number of threads may call in; write transactions are serialised by a lock
(LMDB would block in C otherwise) and a map resize waits for every open transaction.
Measured caveat (py-lmdb 3.0 + the GIL): two threads *spinning* on reads can starve a
writer for seconds (a write txn's abort after MapFullError waited >15 s with bare py-lmdb),
so callers must not poll the store in tight loops from threads; wake on events instead.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import msgspec

from vigil.protocol.errors import ErrorCode, VigilError
from vigil.daemon.settings import DEFAULTS, Settings

from . import archives, keys, timings
from .env import LmdbEnv
from .errors import ExecutionNotFound, InvalidArgument, StoreError
from .events import EventPage, StoredEvent, append_events, read_events
from .output import append_output, prune_output, read_stored
from .records import (
    RECORD_SCHEMA,
    UPDATABLE,
    ArchiveEntry,
    ChangeEntry,
    ExecutionRecord,
    StoredScreen,
    decode_record,
    decode_screen,
    encode,
    id_bytes,
    parse_execution_id,
    scope_hash,
)
from .scrollback import ScrollbackUpdate, put_scrollback
from .scrollback import tail as scrollback_tail
from .retention import enforce_record_count, enforce_scope_bytes, expire_due, expiry_due
from .tx import Tx


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ExecutionUpdate(msgspec.Struct, kw_only=True, frozen=True):
    """What one ingest tick learned about one execution (an item of `commit_batch`).

    - `output`: (offset, bytes) pairs in stream order. An offset beyond the current end is
      a guardian gap (counted as dropped); bytes already stored are skipped (replays).
    - `fields`: new values for updatable record fields (`records.UPDATABLE`); a value equal
      to the stored one is not a change.
    - `screen`: the current screen; stored (and numbered) only if it differs.
    - `scrollback`: new scrollback lines, applied in order (scrollback.py).
    - `arrivals`: (offset, unix µs) marks dating `output` (timings.py), in stream order.
    - `sizes`: (offset, unix µs, rows, cols): the terminal was resized at that offset.
    """

    execution_id: str
    output: list[tuple[int, bytes]] = []
    fields: dict[str, Any] = {}
    screen: StoredScreen | None = None
    scrollback: list[ScrollbackUpdate] = []
    arrivals: list[tuple[int, int]] = []
    sizes: list[tuple[int, int, int, int]] = []


class BatchResult(msgspec.Struct, kw_only=True, frozen=True):
    """Outcome of `commit_batch`: the records as committed, ids that do not exist, and items
    refused as impossible (execution id, reason) — those were dropped, the rest committed."""

    records: dict[str, ExecutionRecord]
    missing: list[str]
    change_seq: int
    rejected: list[tuple[str, str]] = []


class Listing(msgspec.Struct, kw_only=True, frozen=True):
    """`list` result: newest first; `change_seq` was read in the same transaction."""

    records: list[ExecutionRecord]
    change_seq: int
    #: Records in the scope (all, not only the page).
    total: int


class Changes(msgspec.Struct, kw_only=True, frozen=True):
    """`changes_since` result.

    `latest_seq` is the seq to resume from (the catalog cursor's position): the newest seq
    in the store, or, when `limit` cut the list short, the seq of the last entry returned.
    `resync_needed`: entries after `after` were trimmed from the log (or `after` is from
    the future), so the caller must re-read current state instead of trusting the list.
    """

    entries: list[ChangeEntry]
    latest_seq: int
    resync_needed: bool


_STATUS_MOVES = {
    ("running", "exited"),
    ("running", "unknown"),
    ("unknown", "exited"),  # a late exit record resolves an unknown outcome
}


class CatalogView:
    """Reads over ONE read transaction, for one call on one thread (e.g. observe: all
    metadata and pages of a request from one consistent snapshot)."""

    def __init__(self, store: "Store", tx: Tx) -> None:
        self.store = store
        self.tx = tx

    @property
    def now_ms(self) -> int:
        return self.tx.now_ms

    def get(self, scope: str, execution_id: str) -> ExecutionRecord | None:
        rec = self.tx.get_record(id_bytes(execution_id))
        if rec is None or rec.scope != scope:
            return None  # another scope's execution reads exactly as a missing one
        return rec

    def list(self, scope: str, limit: int | None = None, offset: int = 0,
             state: str | None = None) -> Listing:
        """See `Store.list`. With `state` (`active`: running; `history`: exited or
        unknown) the scope's records are read in full to count the matching ones (a scope
        holds a bounded number: retention)."""
        s = self.store.settings
        limit = s.list_limit_default if limit is None else limit
        if not 1 <= limit <= s.list_limit_max:
            raise InvalidArgument(f"limit must be between 1 and {s.list_limit_max}")
        if offset < 0:
            raise InvalidArgument("offset must not be negative")
        if state not in (None, "active", "history"):
            raise InvalidArgument(f"unknown list state {state!r}")
        shash = scope_hash(scope)
        out: list[ExecutionRecord] = []
        skip = offset
        matching = 0
        for rec in self.tx.scope_records(shash, newest_first=True):
            if rec.scope != scope:
                continue
            if state is not None and rec.is_terminal != (state == "history"):
                continue
            matching += 1
            if skip:
                skip -= 1
                continue
            if len(out) < limit:
                out.append(rec)
            elif state is None:
                break
        total = matching if state is not None else self.tx.usage(shash).records
        return Listing(records=out, change_seq=self.tx.latest_change_seq(), total=total)

    def reruns_of(self, scope: str, execution_id: str) -> list[str]:
        """Ids of the scope's executions that rerun `execution_id`, oldest first."""
        return [rec.execution_id
                for rec in self.tx.scope_records(scope_hash(scope), newest_first=False)
                if rec.scope == scope and rec.rerun_of == execution_id]

    def get_screen(self, scope: str, execution_id: str) -> StoredScreen | None:
        if self.get(scope, execution_id) is None:
            return None
        raw = self.tx.txn.get(id_bytes(execution_id), db=self.tx.dbs["screens"])
        return None if raw is None else decode_screen(raw)

    def scrollback_tail(self, scope: str, execution_id: str, count: int
                        ) -> tuple[int, int, list[tuple[str, bool]]]:
        """The newest `count` persisted scrollback lines (scrollback.py `tail`)."""
        if self.get(scope, execution_id) is None:
            return 0, 0, []
        return scrollback_tail(self.tx.txn, self.tx.dbs["scrollback"], id_bytes(execution_id), count)

    def latest_change_seq(self) -> int:
        return self.tx.latest_change_seq()

    def changes_since(
        self, after: int, scope: str, execution_ids: Sequence[str] | None = None, limit: int | None = None
    ) -> Changes:
        eids = None if execution_ids is None else {id_bytes(e) for e in execution_ids}
        limit = self.store.settings.changes_page_entries if limit is None else max(1, limit)
        entries, latest, resync = self.tx.changes_since(after, scope_hash(scope), eids, limit)
        return Changes(entries=entries, latest_seq=latest, resync_needed=resync)


class Store:
    """vigil's LMDB store. Open with `Store.open`; close with `close()` (or `with`)."""

    def __init__(self, env: LmdbEnv, settings: Settings, clock: Callable[[], int]) -> None:
        self._env = env
        self.settings = settings
        self.clock = clock
        #: The last error of a lazy expiry that could not be written (read-only, disk full);
        #: reads went on regardless. None when the last one succeeded.
        self.maintenance_error: StoreError | None = None

    @classmethod
    def open(cls, path: Path, settings: Settings = DEFAULTS, clock: Callable[[], int] = wall_clock_ms) -> "Store":
        """Open (or create) the store in directory `path` (made 0700; files 0600).

        Raises:
            StoreError: `path` holds something that is not a vigil store, a store of a
                newer schema, or cannot be opened; nothing is ever reset or overwritten.
        """
        return cls(LmdbEnv(Path(path), settings), settings, clock)

    def close(self) -> None:
        self._env.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- identity -----------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._env.path

    @property
    def readonly(self) -> bool:
        return self._env.readonly

    @property
    def store_epoch(self) -> bytes:
        """16 random bytes created with the store: cursors from another store are refused."""
        return self._env.store_epoch

    @property
    def mac_key(self) -> bytes:
        """32 random bytes created with the store: the cursor HMAC key. Never leaves the daemon."""
        return self._env.mac_key

    def map_size(self) -> int:
        return self._env.map_size()

    # --- transactions -------------------------------------------------------------------------

    def _write(self, fn: Callable[[Tx], Any]) -> Any:
        now = self.clock()
        return self._env.write(lambda txn: fn(Tx(txn, self._env.dbs, self.settings, now)))

    @contextmanager
    def catalog(self) -> Iterator[CatalogView]:
        """A consistent read view (one read txn) for one call on one thread.

        Expired records are pruned first (lazily, only when one is due). Do not call other
        Store methods inside the block: that would nest transactions (it raises).
        """
        now = self.clock()
        self._expire_if_due(now)
        with self._env.read() as txn:
            yield CatalogView(self, Tx(txn, self._env.dbs, self.settings, now))

    def _expire_if_due(self, now: int) -> None:
        with self._env.read() as txn:
            due = expiry_due(Tx(txn, self._env.dbs, self.settings, now))
        if not due:
            return
        try:
            self._env.write(lambda txn: expire_due(Tx(txn, self._env.dbs, self.settings, now)))
            self.maintenance_error = None
        except StoreError as exc:  # read-only or full: reads must keep working
            self.maintenance_error = exc

    # --- catalog reads ------------------------------------------------------------------------

    def get(self, scope: str, execution_id: str) -> ExecutionRecord | None:
        """The record, or None if it does not exist *in this scope*.

        Raises:
            InvalidArgument: `execution_id` is not 32 lowercase hex characters.
        """
        parse_execution_id(execution_id)
        with self.catalog() as view:
            return view.get(scope, execution_id)

    def list(self, scope: str, limit: int | None = None, offset: int = 0,
             state: str | None = None) -> Listing:
        """The scope's records, newest first (by `started_unix_ms`, then id), at most
        `limit`, after skipping the `offset` newest; with `state`, only the `active`
        (running) or `history` (exited, unknown) ones, and `total` counts those.

        Raises:
            InvalidArgument: limit outside 1..Settings.list_limit_max, negative offset.
        """
        with self.catalog() as view:
            return view.list(scope, limit, offset, state)

    def read_output(self, scope: str, execution_id: str, start: int, want: int
                    ) -> tuple[ExecutionRecord, int, bytes]:
        """Raw retained output of one execution from `start`, in one read transaction:
        (record, first offset, bytes). `first > start` when the bytes from `start` are no
        longer retained (the caller reports the gap); the bytes are contiguous and at most
        `want` (see `output.read_stored`).

        Raises:
            ExecutionNotFound: no such execution in `scope`.
        """
        with self.catalog() as view:
            rec = view.get(scope, execution_id)
            if rec is None:
                raise ExecutionNotFound()
            start = min(start, rec.output_total_bytes)
            first, data = read_stored(view.tx.txn, view.tx.dbs["output"], id_bytes(execution_id),
                                      start, want)
            if not data:
                first = rec.output_total_bytes  # retained output is a suffix of the stream
            return rec, first, data

    def get_screen(self, scope: str, execution_id: str) -> StoredScreen | None:
        parse_execution_id(execution_id)
        with self.catalog() as view:
            return view.get_screen(scope, execution_id)

    def get_screen_and_scrollback(self, scope: str, execution_id: str, count: int):
        """The persisted screen and its newest `count` scrollback lines, in one read."""
        parse_execution_id(execution_id)
        with self.catalog() as view:
            return view.get_screen(scope, execution_id), view.scrollback_tail(scope, execution_id, count)

    def changes_since(
        self, after: int, scope: str, execution_ids: Sequence[str] | None = None, limit: int | None = None
    ) -> Changes:
        """Change entries of `scope` (optionally only `execution_ids`) with seq > `after`."""
        with self.catalog() as view:
            return view.changes_since(after, scope, execution_ids, limit)

    def latest_change_seq(self) -> int:
        with self._env.read() as txn:
            return Tx(txn, self._env.dbs, self.settings, 0).latest_change_seq()

    def non_terminal_records(self) -> list[ExecutionRecord]:
        """Every record still `running`, in all scopes (for recovery at daemon start)."""
        out = []
        with self._env.read() as txn:
            for _, raw in txn.cursor(db=self._env.dbs["executions"]):
                rec = decode_record(raw)
                if rec.status == "running":
                    out.append(rec)
        return out

    # --- writes -------------------------------------------------------------------------------

    def create_execution(self, rec: ExecutionRecord) -> ExecutionRecord:
        """Persist a newly accepted execution; returns the record as stored.

        Store-managed fields are reset (output counters 0, observed_at = now, schema).
        The scope's record limit is enforced in the same transaction.

        Raises:
            InvalidArgument: bad execution id or empty scope.
            VigilError(conflict): the execution id exists already.
            StoreError: the store cannot be written.
        """
        parse_execution_id(rec.execution_id)
        if not rec.scope:
            raise InvalidArgument("scope must not be empty")
        if rec.status not in ("running", "exited", "unknown"):
            raise InvalidArgument(f"unknown status {rec.status!r}")

        def fn(tx: Tx) -> ExecutionRecord:
            eid = bytes.fromhex(rec.execution_id)
            if tx.get_record(eid) is not None:
                raise VigilError(ErrorCode.CONFLICT, "execution already exists")
            expire_due(tx)
            terminal = rec.status in ("exited", "unknown")
            new = msgspec.structs.replace(
                rec,
                schema=RECORD_SCHEMA,
                observed_at_unix_ms=tx.now_ms,
                terminal_at_unix_ms=tx.now_ms if terminal else None,
                output_total_bytes=0,
                output_retained_start=0,
                output_dropped_bytes=0,
                gaps=[],
                screen_bytes=0,
                screen_snapshot=0,
                output_change_seq=0,
            )
            new = _validated(new)
            shash = scope_hash(new.scope)
            # Usage first, before the record is listed (an old scope's first count must not
            # see it and then add it again).
            tx.add_usage(shash, records=1, shell_pool=int(new.in_shell_pool))
            tx.put_record(new)
            tx.txn.put(keys.by_scope_key(shash, new.started_unix_ms, eid), b"", db=tx.dbs["by_scope"])
            if terminal:
                tx.txn.put(keys.expiry_key(tx.now_ms, eid), b"", db=tx.dbs["expiry"])
            tx.add_change(new, "created")
            if new.rows and new.cols:  # the size a recording starts with (timings.py)
                timings.add_size(tx, eid, 0, new.started_unix_ms * 1000, new.rows, new.cols)
            enforce_record_count(tx, shash, new.in_shell_pool)
            return tx.get_record(eid) or new

        return self._write(fn)

    def update(self, execution_id: str, **fields: Any) -> ExecutionRecord:
        """Set updatable fields of one execution (one transaction). Returns the record.

        A value equal to the stored one changes nothing (observed_at stays).

        Raises:
            ExecutionNotFound, InvalidArgument, StoreError.
        """
        result = self.commit_batch([ExecutionUpdate(execution_id=execution_id, fields=fields)])
        for _eid, reason in result.rejected:
            raise InvalidArgument(reason)
        if execution_id in result.missing:
            raise ExecutionNotFound()
        return result.records[execution_id]

    def commit_batch(self, items: Sequence[ExecutionUpdate]) -> BatchResult:
        """Apply one ingest tick: every item, retention and expiry, in ONE write transaction.

        Items naming an execution that does not exist are skipped and listed in `missing`;
        an impossible item (a field that may not be updated, a bad value, a status move the
        outcome rules forbid) is dropped and listed in `rejected` with the reason — one bad
        item never holds back the others. Several items for one execution apply in order.

        Raises:
            StoreError: the store cannot be written (nothing of the batch is committed).
        """
        rejected: list[tuple[str, str]] = []
        valid: list[ExecutionUpdate] = []
        for item in items:
            try:
                parse_execution_id(item.execution_id)
            except InvalidArgument as exc:
                rejected.append((item.execution_id, exc.message))
                continue
            bad = set(item.fields) - UPDATABLE
            if bad:
                rejected.append((item.execution_id,
                                 f"fields not updatable: {', '.join(sorted(bad))}"))
                continue
            valid.append(item)

        def fn(tx: Tx) -> BatchResult:
            expire_due(tx)
            missing: list[str] = []
            refused = list(rejected)
            touched: dict[str, ExecutionRecord] = {}
            byte_scopes: set[bytes] = set()
            for item in valid:
                rec = tx.get_record(bytes.fromhex(item.execution_id))
                if rec is None:
                    if item.execution_id not in missing:
                        missing.append(item.execution_id)
                    continue
                try:
                    rec, grew = self._apply(tx, rec, item)
                except InvalidArgument as exc:  # raised before the item wrote anything
                    refused.append((item.execution_id, exc.message))
                    continue
                touched[rec.execution_id] = rec
                if grew:
                    byte_scopes.add(scope_hash(rec.scope))
            for shash in byte_scopes:
                enforce_scope_bytes(tx, shash, touched)
            records = {}
            for eid in touched:
                rec = tx.get_record(bytes.fromhex(eid))
                if rec is None:
                    missing.append(eid)  # removed by retention in this very transaction
                else:
                    records[eid] = rec
            return BatchResult(records=records, missing=missing, change_seq=tx.latest_change_seq(),
                               rejected=refused)

        return self._write(fn)

    def _apply(self, tx: Tx, rec: ExecutionRecord, item: ExecutionUpdate) -> tuple[ExecutionRecord, bool]:
        """One item against one record; returns (record, whether the scope's bytes grew).

        Raises:
            InvalidArgument: a bad field value or status move — before anything is written.
        """
        s = self.settings
        old = rec
        shash = scope_hash(rec.scope)
        eid = bytes.fromhex(rec.execution_id)
        events: list[tuple[str, str | None]] = []
        grew = False
        if item.fields:
            new = _validated(msgspec.structs.replace(rec, **item.fields))
            if new.status != rec.status and (rec.status, new.status) not in _STATUS_MOVES:
                raise InvalidArgument(f"status cannot change from {rec.status} to {new.status}")
            if any(getattr(new, f) != getattr(rec, f) for f in item.fields):
                if new.status != rec.status:
                    events.append((new.status, new.recognized_state))
                    if rec.terminal_at_unix_ms is None:
                        new = msgspec.structs.replace(new, terminal_at_unix_ms=tx.now_ms)
                        tx.txn.put(keys.expiry_key(tx.now_ms, eid), b"", db=tx.dbs["expiry"])
                else:
                    events.append(("state", new.recognized_state))
                rec = new
        if item.output:
            new, stored = append_output(tx, rec, item.output)
            if new.output_total_bytes != rec.output_total_bytes:
                timings.add_arrivals(tx, eid, item.arrivals, rec.output_total_bytes)
                tx.add_usage(shash, nbytes=stored)
                new, freed = prune_output(tx, new, s.retention_output_bytes)
                if freed:
                    tx.add_usage(shash, nbytes=-freed)
                grew = stored > freed
                events.append(("output", None))
                rec = msgspec.structs.replace(new, output_activity_seq=new.output_activity_seq + 1)
        for update in item.scrollback:
            put_scrollback(tx, rec.execution_id, update)  # its own db: no record change
        for offset, at_unix_us, rows, cols in item.sizes:
            timings.add_size(tx, eid, offset, at_unix_us, rows, cols)
        if item.screen is not None:
            rec, delta = self._put_screen(tx, rec, item.screen)
            if delta is not None:
                tx.add_usage(shash, nbytes=delta)
                grew = grew or delta > 0
                events.append(("screen", None))
        if not events:
            return old, False
        rec = msgspec.structs.replace(rec, observed_at_unix_ms=tx.now_ms)
        for what, state in events:
            if what == "output":
                tx.drop_change(rec.output_change_seq)  # coalesce: one live 'output' entry each
                rec = msgspec.structs.replace(rec, output_change_seq=tx.add_change(rec, "output"))
            else:
                tx.add_change(rec, what, state)
        tx.put_record(rec)
        return rec, grew

    def _put_screen(self, tx: Tx, rec: ExecutionRecord, screen: StoredScreen) -> tuple[ExecutionRecord, int | None]:
        """Store the screen if it differs; returns (record, byte delta or None if unchanged)."""
        cap = self.settings.retention_screen_bytes
        text = screen.text
        raw = text.encode("utf-8")
        truncated = screen.truncated
        if len(raw) > cap:  # keep the bottom of the screen, cut at a character boundary
            raw = raw[-cap:]
            text = raw.decode("utf-8", "ignore")
            raw = text.encode("utf-8")
            truncated = True
        eid = bytes.fromhex(rec.execution_id)
        db = tx.dbs["screens"]
        candidate = msgspec.structs.replace(screen, text=text, truncated=truncated, snapshot=rec.screen_snapshot)
        prev_raw = tx.txn.get(eid, db=db)
        if prev_raw is not None:
            prev = decode_screen(prev_raw)
            same = msgspec.structs.replace(prev, captured_unix_ms=candidate.captured_unix_ms,
                                           output_offset=candidate.output_offset)
            if same == candidate:
                # The same screen: not a change (no new snapshot number, so no reader has to
                # resync); only the offset it is known to be current at moves forward.
                if prev.output_offset != candidate.output_offset:
                    tx.txn.put(eid, encode(msgspec.structs.replace(
                        prev, output_offset=candidate.output_offset)), db=db)
                return rec, None
        number = rec.screen_snapshot + 1
        tx.txn.put(eid, encode(msgspec.structs.replace(candidate, snapshot=number)), db=db)
        delta = len(raw) - rec.screen_bytes
        return msgspec.structs.replace(rec, screen_bytes=len(raw), screen_snapshot=number), delta

    # --- threads (the daemon's scopes; opaque bytes to the store) ---------------------------------

    def put_thread(self, thread_id: str, value: bytes) -> None:
        """Store (or replace) one thread record, keyed by its id."""
        key = thread_id.encode("utf-8")

        def fn(tx: Tx) -> None:
            tx.txn.put(key, value, db=tx.dbs["threads"])

        self._write(fn)

    def delete_thread(self, thread_id: str) -> None:
        """Forget one thread record (an expired thread); a missing one is fine."""
        key = thread_id.encode("utf-8")

        def fn(tx: Tx) -> None:
            tx.txn.delete(key, db=tx.dbs["threads"])

        self._write(fn)

    def all_threads(self) -> list[bytes]:
        """Every stored thread record (read once at daemon start)."""
        db = self._env.dbs.get("threads")
        if db is None:
            return []
        with self._env.read() as txn:
            return [bytes(v) for _, v in txn.cursor(db=db)]

    # --- execution logs (bounded per execution; removed with it: store/events.py) -------------

    def append_events(self, batch: dict[str, list[StoredEvent]]) -> list[str]:
        """Append log entries of several executions in one transaction; returns the ids
        that no longer exist (their entries are dropped: a log never outlives its record)."""
        keep = self.settings.execution_events_max

        def fn(tx: Tx) -> list[str]:
            missing = []
            for execution_id, events in batch.items():
                eid = id_bytes(execution_id)
                if tx.txn.get(eid, db=tx.dbs["executions"]) is None:
                    missing.append(execution_id)
                    continue
                append_events(tx, eid, events, keep)
            return missing

        return self._write(fn)

    def read_events(self, scope: str, execution_id: str, offset: int, limit: int,
                    min_level: int) -> tuple[ExecutionRecord, EventPage]:
        """One page of an execution's log (see store/events.py), with its record.

        Raises:
            ExecutionNotFound: no such execution in this scope.
        """
        with self.catalog() as view:
            rec = view.get(scope, execution_id)
            if rec is None:
                raise ExecutionNotFound()
            if "events" not in view.tx.dbs:  # an older store opened read-only
                return rec, EventPage([], offset, False, 0)
            return rec, read_events(view.tx, id_bytes(execution_id), offset, limit, min_level)

    def reruns_of(self, scope: str, execution_id: str) -> list[str]:
        with self.catalog() as view:
            return view.reruns_of(scope, execution_id)

    # --- receipts (bounded per generation; removed with their execution) -------------------------

    def put_receipt(self, execution_id: str, generation: int, prompt_id: str, value: bytes) -> None:
        """Store (or replace) one prompt receipt. Refuses a new one beyond receipts_per_generation."""
        eid = id_bytes(execution_id)
        key = keys.receipt_prefix(eid, generation) + prompt_id.encode("utf-8")

        def fn(tx: Tx) -> None:
            db = tx.dbs["receipts"]
            if tx.txn.get(key, db=db) is None and self._count_receipts(tx, eid, generation) >= self.settings.receipts_per_generation:
                raise VigilError(ErrorCode.LIMIT_EXCEEDED, "too many prompt receipts for this generation")
            tx.txn.put(key, value, db=db)

        self._write(fn)

    def get_receipt(self, execution_id: str, generation: int, prompt_id: str) -> bytes | None:
        key = keys.receipt_prefix(id_bytes(execution_id), generation) + prompt_id.encode("utf-8")
        with self._env.read() as txn:
            raw = txn.get(key, db=self._env.dbs["receipts"])
            return None if raw is None else bytes(raw)

    @staticmethod
    def _count_receipts(tx: Tx, eid: bytes, generation: int) -> int:
        prefix = keys.receipt_prefix(eid, generation)
        cur = tx.txn.cursor(db=tx.dbs["receipts"])
        n = 0
        ok = cur.set_range(prefix)
        while ok and cur.key().startswith(prefix):
            n += 1
            ok = cur.next()
        return n

    # --- turn archives' catalog (archives.py) ---------------------------------------------------

    def put_archives(self, entries: Sequence[ArchiveEntry]) -> None:
        """Insert or replace catalog entries (and their turn records), in one transaction."""

        def fn(tx: Tx) -> None:
            for entry in entries:
                archives.put_archive(tx, entry)

        self._write(fn)

    def get_archive(self, scope: str, ref: str) -> ArchiveEntry | None:
        """`scope`'s archive `ref` (a parsed ArchiveRef), or None: absent and another
        scope's read the same."""
        with self._read() as tx:
            return archives.get_archive(tx, scope, ref)

    def get_turn_archive(self, scope: str, execution_id: str, turn: int) -> ArchiveEntry | None:
        """The archive of one turn of `scope`'s execution (a trace key), or None."""
        parse_execution_id(execution_id)
        with self._read() as tx:
            return archives.get_turn(tx, scope, execution_id, turn)

    def latest_turn_archive(self, scope: str, execution_id: str) -> ArchiveEntry | None:
        """The archive of the latest turn of `scope`'s execution, or None."""
        parse_execution_id(execution_id)
        with self._read() as tx:
            return archives.latest_turn(tx, scope, execution_id)

    def archives_due(self, limit: int = 1000) -> list[ArchiveEntry]:
        """Archives whose stamped expiry has passed (by this store's clock), oldest first."""
        with self._read() as tx:
            return archives.due(tx, limit)

    def delete_archives(self, entries: Sequence[ArchiveEntry]) -> None:
        def fn(tx: Tx) -> None:
            for entry in entries:
                archives.delete_archive(tx, entry)

        self._write(fn)

    def uncommitted_archives(self) -> list[ArchiveEntry]:
        with self._read() as tx:
            return archives.uncommitted(tx)

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        with self._env.read() as txn:
            yield Tx(txn, self._env.dbs, self.settings, self.clock())

    # --- diagnostics --------------------------------------------------------------------------

    def check_invariants(self) -> None:
        """Recompute every derived count from scratch and compare (the tests call it after every scenario).

        Raises:
            AssertionError: naming the first invariant that does not hold.
        """
        dbs = self._env.dbs
        with self._env.read() as txn:
            usage: dict[bytes, list[int]] = {}  # records, bytes, shell pool
            for k, raw in txn.cursor(db=dbs["executions"]):
                rec = decode_record(raw)
                eid = bytes(k)
                stored = 0
                cur = txn.cursor(db=dbs["output"])
                ok = cur.set_range(eid)
                first = None
                while ok and cur.key()[: keys.ID_LEN] == eid:
                    first = keys.output_offset(cur.key()) if first is None else first
                    stored += len(cur.value())
                    ok = cur.next()
                assert stored == rec.output_stored_bytes, (rec.execution_id, stored, rec.output_stored_bytes)
                expect_start = rec.output_total_bytes if first is None else first
                assert rec.output_retained_start == expect_start, (rec.execution_id, "retained_start")
                assert stored <= self.settings.retention_output_bytes, (rec.execution_id, "output cap")
                shash = scope_hash(rec.scope)
                assert txn.get(keys.by_scope_key(shash, rec.started_unix_ms, eid), db=dbs["by_scope"]) is not None
                u = usage.setdefault(shash, [0, 0, 0])
                u[0] += 1
                u[1] += stored + rec.screen_bytes
                u[2] += rec.in_shell_pool
            for k, raw in txn.cursor(db=dbs["scopes"]):
                t = Tx(txn, dbs, self.settings, 0).usage(bytes(k))
                assert usage.pop(bytes(k), [0, 0, 0]) == [t.records, t.bytes, t.shell_pool], (
                    "scope usage", bytes(k).hex())
            assert not usage, ("scopes without usage", usage)


def _validated(rec: ExecutionRecord) -> ExecutionRecord:
    """Round-trip through msgpack: msgspec checks every field's type on decode."""
    try:
        return msgspec.msgpack.decode(encode(rec), type=ExecutionRecord)
    except (msgspec.ValidationError, msgspec.DecodeError, msgspec.EncodeError, TypeError) as exc:
        raise InvalidArgument(f"invalid execution record: {exc}") from None
