"""The one long-poll loop: look, and if nothing is there yet, sleep until the lifecycle bus
has an event for one of the watched executions, then look again — until the look finds
something or the deadline passes.

Interest is registered *before* the first look and a fresh event is armed before every
look, so a change committed between a look and the sleep wakes the sleep: nothing falls in
between, and nothing polls the store on a timer. `read` with `wait_seconds` (`vigil logs -f`)
and `Execution wait` both use it.
"""

from __future__ import annotations

import math
from typing import Awaitable, Callable, Iterable, TypeVar

import trio

from vigil.daemon.runtime.lifecycle import LifecycleBus
from vigil.daemon.telemetry.phases import phase

T = TypeVar("T")


async def poll_until(bus: LifecycleBus, execution_ids: Iterable[str],
                     look: Callable[[], Awaitable[T | None]], timeout: float) -> T | None:
    """`await look()` until it returns something other than None, sleeping on the bus
    between looks; None when `timeout` seconds pass first (the last look's None).

    A cancelled call leaves nothing behind (its interest is unregistered).
    """
    waiter = bus.register(execution_ids)
    try:
        with trio.move_on_after(timeout if math.isfinite(timeout) else 1e9):
            while True:
                waiter.event = trio.Event()
                found = await look()
                if found is not None:
                    return found
                with phase("wait_sleep"):
                    await waiter.event.wait()
        return None
    finally:
        bus.unregister(waiter)
