"""Runtime-only state of the executions the daemon is attached to: `Live` (one per guardian
connection), `Viewer` (one per attached human) and `Follower` (one per `follow` stream).
Never persisted: a restarted daemon rebuilds it by re-attaching (manager.py)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import trio

from vigil.daemon.store import ExecutionRecord

if TYPE_CHECKING:
    from vigil.daemon.recognize.live import Recognition
    from vigil.daemon.screen.driver import ScreenTask

    from .link import GuardianLink

#: Called with (offset, data) for every Output of a runtime, before ingest.
OutputObserver = Callable[[int, bytes], None]


class Viewer:
    """One attached human: a bounded byte queue; a viewer that falls behind is dropped."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.chunks: list[bytes] = []
        self.size = 0
        self.ready = trio.Event()
        self.closed: str | None = None
        self.repaint = False

    def offer(self, data: bytes) -> None:
        if self.closed:
            return
        if self.size + len(data) > self.capacity:
            self.close("dropped")
            return
        self.chunks.append(data)
        self.size += len(data)
        self.ready.set()

    def lost(self) -> None:
        """Output was lost before it reached us (a guardian ring gap): what is queued no
        longer joins up with what follows, so the viewer gets a repaint instead — unless it
        is already half its buffer behind, which is a viewer that stopped reading: dropped."""
        if self.size > self.capacity // 2:
            self.close("dropped")
            return
        self.clear()
        self.repaint = True
        self.ready.set()

    def clear(self) -> None:
        self.chunks.clear()
        self.size = 0

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = reason
            self.ready.set()

    async def get(self) -> bytes | None:
        """Everything queued so far, or None once closed and drained. Check `repaint` first."""
        while not self.chunks and not self.repaint:
            if self.closed:
                return None
            self.ready = trio.Event()
            await self.ready.wait()
        data = b"".join(self.chunks)
        self.clear()
        return data


class Follower:
    """One `follow` stream's live feed (`vigil run --wait`, `logs -f`): output chunks with
    their stream offsets, in a bounded queue.

    Unlike a viewer, a follower is never dropped and never gets a repaint: it wants every
    byte. When the queue is full the runtime waits for its reader a moment (up to
    `follow_stall_seconds`: a reader descheduled on a loaded machine is not a stalled one),
    the guardian holding the child meanwhile. A reader that still reads nothing is
    `stalled`: from then on the *oldest* chunks are dropped (as the guardian's ring drops
    its oldest bytes) and the stream reports exactly that range as a gap once the reader is
    back. `offer` never blocks, and a stalled reader costs a bounded buffer, never the
    child, ingest or anyone else (DESIGN: rules that hold everywhere).
    """

    def __init__(self, capacity: int, start: int):
        self.capacity = capacity
        #: Offset of the first byte this follower is offered (the runtime's received end
        #: when it registered): what comes before is read from the store.
        self.start = start
        self.chunks: deque[tuple[int, bytes]] = deque()
        self.size = 0
        #: End of the newest range dropped because the reader stalled (0: none).
        self.dropped_to = 0
        self.ready = trio.Event()
        #: Set when the reader takes chunks (the runtime may be waiting for room).
        self.room = trio.Event()
        #: The queue stayed full longer than the runtime waits: drop, do not wait, until
        #: the reader reads again.
        self.stalled = False
        self.closed = False

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def offer(self, offset: int, data: bytes) -> None:
        if self.closed or not data:
            return
        self.chunks.append((offset, data))
        self.size += len(data)
        while self.size > self.capacity and len(self.chunks) > 1:
            old, dropped = self.chunks.popleft()
            self.size -= len(dropped)
            self.dropped_to = old + len(dropped)
        self.ready.set()

    def close(self) -> None:
        self.closed = True
        self.ready.set()
        self.room.set()

    async def wait_room(self, patience: float) -> None:
        """Return once the queue has room, or after `patience` seconds of a full queue
        (then the follower is `stalled`, and is not waited for until it reads again)."""
        if not self.full or self.stalled or self.closed:
            return
        with trio.move_on_after(patience):
            while self.full and not self.closed:
                self.room = trio.Event()
                await self.room.wait()
        if self.full and not self.closed:
            self.stalled = True

    async def take(self, limit: int) -> list[tuple[int, bytes]] | None:
        """The queued chunks, oldest first, up to about `limit` bytes (at least one chunk);
        waits while the queue is empty; None once closed and drained."""
        while not self.chunks:
            if self.closed:
                return None
            self.ready = trio.Event()
            await self.ready.wait()
        out: list[tuple[int, bytes]] = []
        taken = 0
        while self.chunks and (not out or taken + len(self.chunks[0][1]) <= limit):
            offset, data = self.chunks.popleft()
            self.size -= len(data)
            taken += len(data)
            out.append((offset, data))
        self.stalled = False
        self.room.set()
        return out


@dataclass
class Live:
    """Runtime-only state of one execution whose guardian the daemon is attached to."""

    record: ExecutionRecord
    link: GuardianLink | None = None
    screen: ScreenTask | None = None
    recognition: Recognition | None = None
    #: Humans attached to the terminal: while there are any, they answer terminal queries.
    viewers: set[Viewer] = field(default_factory=set)
    #: `follow` streams: fed every Output, with its offset (never dropped: they record gaps).
    followers: set[Follower] = field(default_factory=set)
    #: Offset just past the newest Output received from the guardian (where a follower
    #: registering now starts its live part).
    received_end: int = 0
    #: Whether the guardian was asked to hold its child while followers follow.
    held: bool = False
    #: Stream offset of the screen keeper's first fed byte (fed_bytes counts from there):
    #: what a persisted screen's `output_offset` is computed from.
    screen_origin: int = 0
    #: Called with (offset, data) for every Output, before ingest (the persistent shell's
    #: marker scanner hangs here).
    observers: list[OutputObserver] = field(default_factory=list)
    committed: trio.Event = field(default_factory=trio.Event)
    #: Set once connected and subscribed: control calls wait for it (a just-started run).
    attached: trio.Event = field(default_factory=trio.Event)
    acked: int = 0
    #: The guardian's ring end when we connected: until the store has everything before it,
    #: output is pending (a re-attached guardian that held output while we were away).
    caught_up_to: int = 0
    #: The screen revision last handed to ingest (RuntimeManager.screen_changed), and the
    #: output offset it was handed with (None: not known then).
    screen_revision: int = -1
    screen_offset: int | None = None
    done: trio.Event = field(default_factory=trio.Event)
    cancel: trio.CancelScope = field(default_factory=trio.CancelScope)
