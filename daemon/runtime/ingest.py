"""Ingest: output from every runtime, coalesced into one store transaction per tick.

DESIGN.md measured one synced transaction per 4 KiB record at ~16 MiB/s and one per 10 ms
batch at ~341 MiB/s, so runtimes never write to the store themselves: they hand bytes to
`Ingest` (synchronous, never blocks) and one task commits everything pending every
`ingest_batch_seconds`, or sooner once `ingest_batch_bytes` are waiting. The transaction runs
in a worker thread, begun and committed there (an LMDB transaction must not cross threads).

After each commit, Ingest tells each execution's runtime what is now durable (so it can
acknowledge the guardian) and publishes lifecycle events (so waiters wake). When the store
is slower than the children, pending bytes pass `high_water` and runtimes stop reading
from their guardians (`wait_room`); the guardians' rings absorb the difference, losing the
oldest bytes as recorded gaps — never slowing a child.

When the store cannot be written (disk full, a read-only or immutable file), nothing is
acknowledged: the round's items are kept and retried on their own, with a backoff from
`ingest_retry_initial_seconds` to `ingest_retry_max_seconds`, so everything pending lands
once space returns without anything else happening. `durable()` waits for that (an exit is
acknowledged to its guardian only then: the guardian keeps its records meanwhile), and
`health` says what is failing and since when (`vigil status`). An impossible item (a status
move the rules forbid) is dropped by the store with a log line; it never holds back the
others.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec
import trio

from vigil.daemon.store import BatchResult, ExecutionRecord, ExecutionUpdate, Store
from vigil.protocol.errors import VigilError
from vigil.daemon.settings import Settings

from .lifecycle import LifecycleBus, LifecycleEvent

log = logging.getLogger("vigild.ingest")


@dataclass
class _Pending:
    output: list[tuple[int, bytes]] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)
    screen: Any = None
    #: Scrollback updates in the order the runtime handed them (each continues the last).
    scrollback: list[Any] = field(default_factory=list)
    bytes: int = 0
    #: (offset, unix µs): when output arrived, at most one mark per arrival step.
    arrivals: list[tuple[int, int]] = field(default_factory=list)
    #: (offset, unix µs, rows, cols): resizes, at the offset received by then.
    sizes: list[tuple[int, int, int, int]] = field(default_factory=list)


class IngestHealth(msgspec.Struct, kw_only=True):
    """Whether commits succeed; what `status` reports about the store."""

    ok: bool = True
    #: When the current run of failed commits began (unix ms), null while ok.
    failing_since_unix_ms: int | None = None
    last_error: str | None = None
    failed_rounds: int = 0


class Ingest:
    def __init__(self, store: Store, settings: Settings, bus: LifecycleBus,
                 on_committed: Callable[[ExecutionRecord], None]):
        self.store = store
        self.settings = settings
        self.bus = bus
        self._on_committed = on_committed
        self._pending: dict[str, _Pending] = {}
        self._pending_bytes = 0
        self._work = trio.Event()
        self._full = trio.Event()
        self._room = trio.Event()
        self._round_done = trio.Event()
        self._rounds_taken = 0
        self._rounds_done = 0
        #: The newest round that committed (every item handed over before it began is durable).
        self._rounds_committed = 0
        self._backoff = 0.0
        self.high_water = 4 * settings.ingest_batch_bytes
        self._arrival_step_us = int(settings.output_arrival_step_seconds * 1_000_000)
        self.commits = 0
        self.failures = 0
        self.health = IngestHealth()

    # --- producers (sync, never block) -----------------------------------------------------

    def _slot(self, execution_id: str) -> _Pending:
        slot = self._pending.get(execution_id)
        if slot is None:
            slot = self._pending[execution_id] = _Pending()
        self._work.set()
        return slot

    def add_output(self, execution_id: str, offset: int, data: bytes, *, timed: bool = True) -> None:
        """Hand over output received now. `timed`: stamp its arrival (store/timings.py) — not
        for bytes that arrived long ago (a guardian's exit tail): they take the time of
        the mark before them."""
        slot = self._slot(execution_id)
        if timed:
            now = time.time_ns() // 1000
            marks = slot.arrivals
            if not marks or now - marks[-1][1] >= self._arrival_step_us:
                marks.append((offset, now))
        slot.output.append((offset, data))
        slot.bytes += len(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= self.settings.ingest_batch_bytes or self.bus.has_waiters(execution_id):
            # Someone is waiting on this execution: commit now rather than at the end of the
            # batch window, so the waiter wakes within a commit, not a window plus a commit.
            self._full.set()

    def set_fields(self, execution_id: str, **fields: Any) -> None:
        self._slot(execution_id).fields.update(fields)

    def add_size(self, execution_id: str, offset: int, rows: int, cols: int) -> None:
        """The terminal was resized now, after `offset` bytes of output (a recording's
        resize event)."""
        self._slot(execution_id).sizes.append((offset, time.time_ns() // 1000, rows, cols))

    def set_screen(self, execution_id: str, snapshot: Any) -> None:
        self._slot(execution_id).screen = snapshot

    def add_scrollback(self, execution_id: str, update: Any) -> None:
        """New scrollback lines (a `ScrollbackUpdate`), committed in order with the rest."""
        self._slot(execution_id).scrollback.append(update)

    def has_pending_output(self, execution_id: str) -> bool:
        """True while output of this execution was handed over and is not committed."""
        slot = self._pending.get(execution_id)
        return slot is not None and bool(slot.output)

    # --- consumers --------------------------------------------------------------------------

    async def wait_room(self) -> None:
        """Return once pending output is below the high-water mark (back-pressure)."""
        # Every runtime waits on the same event, which only a commit round replaces (after
        # setting it): a waiter that made its own event would orphan the one an earlier
        # waiter sleeps on, and that runtime would never read its guardian again.
        while self._pending_bytes >= self.high_water:
            await self._room.wait()

    async def flush(self) -> bool:
        """Try to commit everything handed over before this call, now. Returns True when it
        is committed, False when that round failed (it stays pending and is retried)."""
        target = self._rounds_taken + 1
        self._work.set()
        self._full.set()
        while self._rounds_done < target:
            await self._round_done.wait()
        return self._rounds_committed >= target

    async def durable(self) -> None:
        """Return once everything handed over before this call is committed, however long
        the store takes to accept it (a failed round's items join every later round until
        one commits). Cancel it to stop waiting; nothing is lost by that."""
        target = self._rounds_taken + 1
        self._work.set()
        self._full.set()
        while self._rounds_committed < target:
            await self._round_done.wait()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._work.wait()
            if self._backoff:
                # The store is failing: retry on our own after the backoff (sooner never
                # helps, and the guardians keep the bytes meanwhile).
                await trio.sleep(self._backoff)
            elif self._pending_bytes < self.settings.ingest_batch_bytes:
                # The batch window: let more output from every runtime join this transaction.
                with trio.move_on_after(self.settings.ingest_batch_seconds):
                    await self._full.wait()
            await self._commit_round()

    async def _commit_round(self) -> None:
        items = self._pending
        self._pending = {}
        self._pending_bytes = 0
        self._work = trio.Event()
        self._full = trio.Event()
        self._room.set()  # wakes every runtime in wait_room; later ones wait on the next
        self._room = trio.Event()
        self._rounds_taken += 1
        number = self._rounds_taken
        try:
            if items:
                batch = [ExecutionUpdate(execution_id=eid, output=p.output, fields=p.fields,
                                         screen=p.screen, arrivals=p.arrivals, sizes=p.sizes,
                                         scrollback=p.scrollback)
                         for eid, p in items.items()]
                try:
                    result = await trio.to_thread.run_sync(self.store.commit_batch, batch)
                except VigilError as exc:
                    self._failed(items, exc)
                    return
                self._recovered()
                self.commits += 1
                self._published(result, items)
            self._rounds_committed = number
        finally:
            self._rounds_done += 1
            done, self._round_done = self._round_done, trio.Event()
            done.set()

    def _failed(self, items: dict[str, _Pending], exc: VigilError) -> None:
        """Disk full, read-only dir…: nothing is acknowledged, so the guardians keep the bytes
        in their rings; the items are retried after the backoff, with newer data merged."""
        s = self.settings
        self.failures += 1
        h = self.health
        if h.ok:
            log.error("ingest commit failed (%d executions): %s; retrying", len(items), exc)
            h.failing_since_unix_ms = self.store.clock()
        h.ok, h.last_error = False, exc.message
        h.failed_rounds += 1
        self._backoff = min(max(self._backoff * 2, s.ingest_retry_initial_seconds),
                            s.ingest_retry_max_seconds)
        self._requeue(items)
        self._work.set()

    def _recovered(self) -> None:
        if not self.health.ok:
            log.info("ingest commits again after %d failed rounds", self.health.failed_rounds)
        self.health = IngestHealth()
        self._backoff = 0.0

    def _requeue(self, items: dict[str, _Pending]) -> None:
        for eid, old in items.items():
            slot = self._pending.get(eid)
            if slot is None:
                self._pending[eid] = old
            else:
                slot.output[:0] = old.output
                slot.arrivals[:0] = old.arrivals
                slot.sizes[:0] = old.sizes
                slot.fields = {**old.fields, **slot.fields}
                slot.screen = slot.screen or old.screen
                slot.scrollback[:0] = old.scrollback
                slot.bytes += old.bytes
            self._pending_bytes += old.bytes

    def _published(self, result: BatchResult, items: dict[str, _Pending]) -> None:
        for eid, reason in result.rejected:
            log.warning("ingest dropped an impossible update of %s: %s", eid, reason)
        for eid, rec in result.records.items():
            self._on_committed(rec)
            pending = items.get(eid)
            if pending is None:
                # Not in this batch: a record whose output the scope's byte retention pruned
                # in this transaction (the store returns every record it touched). Nothing
                # happened to it that its observers wait for.
                continue
            kinds = []
            if pending.output:
                kinds.append("output")
            if "status" in pending.fields and rec.is_terminal:
                kinds.append("exited")
            elif pending.fields:
                kinds.append("state")
            if pending.screen is not None:
                kinds.append("screen")
            for kind in kinds:
                self.bus.publish(LifecycleEvent(
                    kind=kind, scope=rec.scope, execution_id=eid,
                    at_unix_ms=rec.observed_at_unix_ms, record=rec,
                    data={"output": pending.output} if kind == "output" else {}))
        for eid in result.missing:
            log.warning("ingest for unknown execution %s dropped", eid)
