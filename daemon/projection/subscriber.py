"""One `subscribe` call's bounded queue of projection events.

Offering never waits. When the queue holds `capacity` events, newer events are dropped for
this subscriber and counted; a gap marker is queued where they would have been, so the
subscriber is told (`DROPPED`, with the count and the executions concerned) exactly between
the last event it got before the gap and the first after it. The queue never holds more than
`capacity` events plus one marker. A WARN is logged at most once a second while it drops.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import trio

from vigil.protocol.api.projection import DroppedEvent

if TYPE_CHECKING:
    from .hub import ProjectionHub

log = logging.getLogger("vigild.projection")

#: Executions a `DROPPED` report names at most (the count is always exact).
_IDS_REPORTED = 64


class _Gap:
    __slots__ = ("count", "ids")

    def __init__(self) -> None:
        self.count = 0
        self.ids: dict[str, None] = {}


class Subscriber:
    def __init__(self, hub: "ProjectionHub", scope: str, principal: str, all_workspaces: bool,
                 capacity: int):
        self._hub = hub
        self.scope = scope
        self.principal = principal
        self.all_workspaces = all_workspaces
        self._capacity = capacity
        self._queue: deque[Any] = deque()
        self._events = 0  # events in the queue (markers not counted)
        self._ready = trio.Event()
        self.dropped_total = 0
        self._warned_at = 0.0
        self.closed = False

    def offer(self, event: Any) -> None:
        if self.closed:
            return
        if self._events >= self._capacity:
            gap = self._queue[-1] if self._queue and isinstance(self._queue[-1], _Gap) else None
            if gap is None:
                gap = _Gap()
                self._queue.append(gap)
            gap.count += 1
            if len(gap.ids) < _IDS_REPORTED:
                gap.ids[event.execution_id] = None
            self.dropped_total += 1
            self._hub.dropped += 1
            now = time.monotonic()
            if now - self._warned_at >= 1.0:
                self._warned_at = now
                log.warning("projection subscriber is not keeping up: %d events dropped so far",
                            self.dropped_total)
            return
        self._queue.append(event)
        self._events += 1
        self._ready.set()

    async def receive(self) -> Any:
        """The next event, or a `DroppedEvent` where events were dropped. Raises
        trio.EndOfChannel once closed and drained."""
        while not self._queue:
            if self.closed:
                raise trio.EndOfChannel
            self._ready = trio.Event()
            await self._ready.wait()
        item = self._queue.popleft()
        if isinstance(item, _Gap):
            return DroppedEvent(dropped=item.count, dropped_total=self.dropped_total,
                                execution_ids=list(item.ids))
        self._events -= 1
        return item

    def close(self) -> None:
        """Idempotent."""
        if not self.closed:
            self.closed = True
            self._hub.unsubscribe(self)
            self._ready.set()
