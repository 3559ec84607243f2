"""The daemon process's memory policy, set once at start by the composition root (main.py):
glibc's malloc arenas, and when the cycle collector stops walking long-lived objects.

The cycle collector. With many executions the daemon holds a large population of objects
that live as long as their execution (its tasks, its screen, its recognizer): about 185,000
at 500 executions. Each full collection walks every one of them, finds nothing to free, and
holds the trio thread meanwhile: 80–220 ms at 500 executions, every few seconds while they
print (measured with gc.callbacks; tests/bench/bench_many.py). So a full collection that took
longer than `gc_freeze_after_seconds` freezes its survivors (`gc.freeze`: the collector
no longer walks them; reference counting still frees them as usual), and the next full
collections walk only what came since. Freezing after *every* full collection was tried and
is worse: it also freezes the many objects that live a second or so (the await chains of
waiting tasks), and as they die, CPython's young-generation counter (allocations minus
deallocations) stops rising, so young collections come late and walk 70,000 objects.

A frozen object that later becomes part of a garbage cycle is only reclaimed by a
collection after `gc.unfreeze`: every `gc_thaw_seconds` everything is thawed and collected
once (one long pause in that interval), and the next long collection freezes again.
"""

from __future__ import annotations

import gc
import logging
import time

import trio

log = logging.getLogger("vigild.memory")


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas. Store reads and writes run in trio worker threads, and
    glibc gives each thread its own arena (up to 8 per core): under 50 clients the daemon's
    anonymous memory grew ~14 MiB a round, to 104 MiB, against ~40 MiB flat with two arenas
    (tests/reliability/test_load.py). A no-op where malloc is not glibc's."""
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


class FreezeLongLived:
    """The gc callback that freezes the survivors of a full collection that took too long."""

    def __init__(self, after_seconds: float):
        self.after_seconds = after_seconds
        self._started = 0.0
        self.freezes = 0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        elif time.perf_counter() - self._started > self.after_seconds:
            gc.freeze()
            self.freezes += 1

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


async def thaw_periodically(interval: float, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Every `interval` seconds: thaw and collect everything once, reclaiming garbage cycles
    among frozen objects (that collection is long, so it freezes the survivors again)."""
    task_status.started()
    while True:
        await trio.sleep(interval)
        t0 = time.perf_counter()
        gc.unfreeze()
        collected = gc.collect()
        log.debug("thawed: a full collection took %.0f ms and freed %d objects",
                  (time.perf_counter() - t0) * 1000, collected)
