"""The execution log: what vigil did and saw for one execution (seeds/002, "Execution
logs") — its guardian connected or lost, output lost in a ring, states recognized, prompts
delivered, signals sent, pauses, cancellations, recovery after a daemon restart — levelled
DEBUG/INFO/WARN/ERROR. Not the child's output: that is the output stream.

`add` is synchronous and never blocks (it runs on the output path and in handlers): entries
wait in memory and `run` writes them to the store in one transaction per batch interval,
as ingest does with output. A reader calls `flush` first, so an entry added before a call
is in that call's answer. The buffer is bounded (`execution_events_pending_max`): while the
store cannot be written, newer entries beyond it are dropped and counted, never waited for.

Entries are also logged to the daemon's own log at DEBUG under `vigild.execution`.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from vigil.daemon.settings import Settings
from vigil.daemon.store import Store
from vigil.daemon.store.events import LEVELS, StoredEvent

from .lifecycle import LifecycleEvent

log = logging.getLogger("vigild.execution")

_LEVEL_INDEX = {name: i for i, name in enumerate(LEVELS)}


class ExecutionLog:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._pending: dict[str, list[StoredEvent]] = {}
        self._pending_count = 0
        self._wake = trio.Event()
        self._lock = trio.Lock()
        #: Entries dropped because the buffer was full (the store not keeping up).
        self.dropped = 0
        #: The recognized state last logged per running execution (a `state` lifecycle
        #: event also follows other field changes: only a new state is an entry).
        self._states: dict[str, str | None] = {}

    def add(self, execution_id: str, level: str, kind: str, message: str, **data: Any) -> None:
        """Queue one entry; never blocks. `data` values are short scalars, never output
        bytes or environment values."""
        if self._pending_count >= self.settings.execution_events_pending_max:
            self.dropped += 1
            return
        event = StoredEvent(at_unix_ms=self.store.clock(), level=_LEVEL_INDEX[level],
                            kind=kind, message=message, data=data)
        self._pending.setdefault(execution_id, []).append(event)
        self._pending_count += 1
        self._wake.set()
        log.debug("%s %s %s: %s", execution_id, level, kind, message)

    async def flush(self) -> None:
        """Write every queued entry now (one transaction). A store failure keeps them
        queued for the next attempt and is logged."""
        async with self._lock:
            if not self._pending:
                return
            batch, self._pending, self._pending_count = self._pending, {}, 0
            try:
                await trio.to_thread.run_sync(self.store.append_events, batch)
            except Exception as exc:  # noqa: BLE001 - the store's failure is logged, retried
                log.warning("execution log entries not written yet: %s", exc)
                for eid, events in batch.items():
                    self._pending.setdefault(eid, [])[:0] = events
                    self._pending_count += len(events)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await trio.sleep(self.settings.ingest_batch_seconds)
            await self.flush()
            if self._pending:  # the store failed: try again after a pause
                await trio.sleep(self.settings.ingest_retry_initial_seconds)
                self._wake.set()

    # --- what the lifecycle seam tells -------------------------------------------------------

    def observe(self, event: LifecycleEvent) -> None:
        """A lifecycle observer (wired in main.py): starts, recognized states and outcomes."""
        rec = event.record
        eid = event.execution_id
        if event.kind == "started":
            self._states[eid] = None
            if rec is None:
                return
            extra = {"rerun_of": rec.rerun_of} if rec.rerun_of else {}
            self.add(eid, "info", "started",
                     f"started ({rec.kind}, {rec.rows}x{rec.cols}) in {rec.cwd}",
                     generation=rec.generation, **extra)
        elif event.kind == "state" and rec is not None and not rec.is_terminal:
            state = rec.recognized_state
            if state is not None and self._states.get(eid) != state:
                self._states[eid] = state
                self.add(eid, "info", "state", f"state recognized: {state}", state=state)
        elif event.kind == "exited" and rec is not None:
            self._states.pop(eid, None)
            self.outcome(rec)

    def outcome(self, rec) -> None:
        """The outcome entry: an exit 0 is INFO; a nonzero exit or a signal WARN; an
        unknown outcome ERROR (it is never a success)."""
        eid = rec.execution_id
        cancelled = " (cancelled)" if rec.cancelled else ""
        if rec.status == "unknown":
            self.add(eid, "error", "unknown", f"outcome unknown: {rec.unknown_reason}",
                     reason=rec.unknown_reason)
        elif rec.signal is not None:
            self.add(eid, "info" if rec.cancelled else "warn", "exited",
                     f"ended by signal {rec.signal}{cancelled}", signal=rec.signal,
                     cancelled=rec.cancelled)
        elif rec.start_error:
            self.add(eid, "error", "exited", f"could not start: {rec.start_error}",
                     exit_code=rec.exit_code)
        else:
            self.add(eid, "info" if rec.exit_code == 0 or rec.cancelled else "warn", "exited",
                     f"exited {rec.exit_code}{cancelled}", exit_code=rec.exit_code,
                     cancelled=rec.cancelled)
