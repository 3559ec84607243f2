"""The lifecycle seam: one event stream inside the daemon.

Everything that happens to an execution — started, output activity, screen changed, state
recognized, exited — is published here once, after it was persisted. Two kinds of
consumers hang off it:

- **waiters** (`vigil logs -f`, `Execution wait`) register interest in a set of execution
  ids and sleep on one `trio.Event` each; `publish` wakes exactly the waiters of that
  execution, so a thousand idle waiters cost nothing and an event costs O(its waiters);
- **observers** (the transcript recorder) are called with every event, in order; each must
  be quick and never block (the recorder writes one line and offers it to bounded queues).

`publish` is synchronous and never blocks: it runs on the ingest path.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Iterable, Literal

import msgspec
import trio

log = logging.getLogger("vigild.lifecycle")

EventKind = Literal["started", "output", "screen", "state", "prompt", "exited", "pruned"]


class LifecycleEvent(msgspec.Struct, kw_only=True, frozen=True):
    kind: EventKind
    scope: str
    execution_id: str
    at_unix_ms: int
    #: `output` events: {"output": [(offset, bytes), ...]}, the batch as ingest committed
    #: it (shared, not copied: read it, never change it).
    data: dict[str, Any] = {}
    #: The execution's record as persisted with this event (started, state, exited).
    record: Any = None


class Waiter:
    """Interest in some executions; `wait()` returns once any of them had an event."""

    __slots__ = ("ids", "event", "events")

    def __init__(self, ids: frozenset[str]):
        self.ids = ids
        self.event = trio.Event()
        self.events: list[LifecycleEvent] = []


class LifecycleBus:
    def __init__(self) -> None:
        self._waiters: dict[str, set[Waiter]] = {}
        self._observers: list[Callable[[LifecycleEvent], None]] = []
        self.published = 0

    def observe(self, observer: Callable[[LifecycleEvent], None]) -> None:
        """Call `observer(event)` for every event from now on (wired in main.py)."""
        self._observers.append(observer)

    def publish(self, event: LifecycleEvent) -> None:
        self.published += 1
        for observer in self._observers:
            try:
                observer(event)
            except Exception:  # an observer's bug must not stop ingest or the others
                log.exception("lifecycle observer failed on %s of %s", event.kind,
                              event.execution_id)
        for waiter in self._waiters.get(event.execution_id, ()):
            waiter.events.append(event)
            waiter.event.set()

    def register(self, ids: Iterable[str]) -> Waiter:
        """Start listening before checking state, so nothing between check and wait is lost."""
        waiter = Waiter(frozenset(ids))
        for eid in waiter.ids:
            self._waiters.setdefault(eid, set()).add(waiter)
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        for eid in waiter.ids:
            bucket = self._waiters.get(eid)
            if bucket is not None:
                bucket.discard(waiter)
                if not bucket:
                    del self._waiters[eid]

    async def wait(self, waiter: Waiter, timeout: float) -> bool:
        """True when an event arrived for the waiter within `timeout` seconds."""
        if waiter.event.is_set():
            return True
        with trio.move_on_after(timeout if math.isfinite(timeout) else 1e9):
            await waiter.event.wait()
            return True
        return False

    def has_waiters(self, execution_id: str) -> bool:
        return execution_id in self._waiters

    @property
    def waiter_count(self) -> int:
        return sum(len(b) for b in self._waiters.values())
