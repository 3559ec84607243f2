"""Runtime-only state of the executions the daemon is attached to: `Live` (one per guardian
connection) and `Viewer` (one per attached human). Never persisted: a restarted daemon
rebuilds it by re-attaching (manager.py)."""

from __future__ import annotations

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


@dataclass
class Live:
    """Runtime-only state of one execution whose guardian the daemon is attached to."""

    record: ExecutionRecord
    link: GuardianLink | None = None
    screen: ScreenTask | None = None
    recognition: Recognition | None = None
    #: Humans attached to the terminal: while there are any, they answer terminal queries.
    viewers: set[Viewer] = field(default_factory=set)
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
    #: The screen revision last handed to ingest (RuntimeManager.screen_changed).
    screen_revision: int = -1
    done: trio.Event = field(default_factory=trio.Event)
    cancel: trio.CancelScope = field(default_factory=trio.CancelScope)
