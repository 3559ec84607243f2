"""Live fan-out of transcript events (seeds/003, "Live Fan-Out").

An event is offered to subscribers only after it was written to its file. Each subscriber
has a bounded buffer (`subscriber_buffer_events`, 256); when it is full the newest events
are dropped *for that subscriber* and counted, and a WARN is logged at most once a second
per subscriber while it drops. Offering never waits: the disk write and every other
subscriber go on whatever one subscriber does. A subscriber that missed events can read
them back from the file (their `seq` says which). `close()` of a subscriber or of the
fan-out is idempotent.
"""

from __future__ import annotations

import logging
import time
from collections import deque

import msgspec
import trio

from vigil.protocol.transcript import ExchangeEvent

log = logging.getLogger("vigild.transcript")


class FanOutStats(msgspec.Struct, kw_only=True):
    """What `vigil status` shows of the fan-out."""

    subscribers: int
    delivered: int
    dropped: int


class Subscriber:
    """One consumer's bounded queue of events, for the runs it asked for."""

    def __init__(self, fanout: "FanOut", runs: frozenset[str] | None, capacity: int):
        self._fanout = fanout
        self.runs = runs
        self._queue: deque[ExchangeEvent] = deque()
        self._capacity = capacity
        self._ready = trio.Event()
        #: Events dropped for this subscriber (its buffer was full), and not yet reported.
        self.dropped = 0
        self.dropped_total = 0
        self._warned_at = 0.0
        self.closed = False

    def offer(self, event: ExchangeEvent) -> None:
        if self.closed or (self.runs is not None and event.run_id not in self.runs):
            return
        if len(self._queue) >= self._capacity:
            self.dropped += 1
            self.dropped_total += 1
            self._fanout.dropped += 1
            now = time.monotonic()
            if now - self._warned_at >= 1.0:
                self._warned_at = now
                log.warning("transcript subscriber is not keeping up: %d events dropped so far "
                            "(the files are complete)", self.dropped_total)
            return
        self._queue.append(event)
        self._fanout.delivered += 1
        self._ready.set()

    async def receive(self) -> ExchangeEvent:
        """The next event. Raises trio.EndOfChannel once closed and drained."""
        while not self._queue:
            if self.closed:
                raise trio.EndOfChannel
            self._ready = trio.Event()
            await self._ready.wait()
        return self._queue.popleft()

    def take_dropped(self) -> int:
        """Events dropped since the last call (for telling the consumer of its gap)."""
        count, self.dropped = self.dropped, 0
        return count

    def close(self) -> None:
        """Idempotent: closing twice is safe."""
        if not self.closed:
            self.closed = True
            self._fanout._subscribers.discard(self)
            self._ready.set()


class FanOut:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._subscribers: set[Subscriber] = set()
        self.delivered = 0
        self.dropped = 0
        self.closed = False

    def subscribe(self, runs: frozenset[str] | None = None) -> Subscriber:
        sub = Subscriber(self, runs, self.capacity)
        if self.closed:
            sub.close()
        else:
            self._subscribers.add(sub)
        return sub

    def publish(self, event: ExchangeEvent) -> None:
        for sub in tuple(self._subscribers):
            sub.offer(event)

    def stats(self) -> FanOutStats:
        return FanOutStats(subscribers=len(self._subscribers), delivered=self.delivered,
                           dropped=self.dropped)

    def close(self) -> None:
        """Idempotent: every subscriber is closed (their readers see the end)."""
        if not self.closed:
            self.closed = True
            for sub in tuple(self._subscribers):
                sub.close()
