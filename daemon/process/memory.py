"""The daemon process's memory policy, set once at start by the composition root (main.py):
glibc's malloc arenas, and when the cycle collector runs.

The cycle collector runs on a timer, not on allocation counts. CPython starts a collection
every few hundred net allocations and, every so often, a full one over every tracked
object; it holds the trio thread while it walks. With 500 executions printing a line a
second, the daemon keeps ~185,000 objects alive (each execution's tasks, screen,
recognizer) and about 50,000 that live a second or so (the await chains of waiting tasks);
collections walked them several times a second, 10-60 ms each, and in full every few
seconds, 80-220 ms — and freed nearly nothing (0 to 52 objects: the daemon makes almost no
cyclic garbage; reference counting frees the rest). Those pauses were the largest part
of the ping latency at 500 executions (tests/bench/bench_many.py). Tried and rejected: freezing the survivors of long full
collections (`gc.freeze`) — it also freezes the short-lived objects, whose deaths then stall
CPython's young-generation counter, so young collections come late and walk 70,000 objects.

So automatic collection is off, and a collection runs every `gc_collect_seconds`, or sooner
once `gc_allocations_max` more objects are alive than at the last run (a backstop: garbage
cycles made at a rate no one expected cannot pile up for long). After each run its
survivors are frozen — harmless now that no collection is started by counts — so the next
run walks only what came since (tens of ms at 500 executions instead of 200+); every
`gc_thaw_seconds` a run thaws everything first, and reclaims any cycle among frozen objects
that has become garbage since.
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


async def collect_on_a_timer(interval: float, allocations_max: int, thaw_interval: float,
                             check_seconds: float = 1.0,
                             *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Turn automatic cycle collection off; collect every `interval` seconds, or at the first
    check (every `check_seconds`) that finds `allocations_max` more tracked objects alive than
    after the last collection; freeze the survivors; thaw before a run every `thaw_interval`
    seconds. Undone (thawed, automatic collection back) when cancelled."""
    gc.disable()
    try:
        task_status.started()
        last = thawed = trio.current_time()
        while True:
            await trio.sleep(check_seconds)
            grown = gc.get_count()[0]  # net allocations since the last collection
            if trio.current_time() - last < interval and grown < allocations_max:
                continue
            thaw = trio.current_time() - thawed >= thaw_interval
            t0 = time.perf_counter()
            if thaw:
                gc.unfreeze()
                thawed = trio.current_time()
            freed = gc.collect()
            gc.freeze()
            last = trio.current_time()
            log.debug("cycle collection%s: %.0f ms, %d objects freed, %d allocations since the last",
                      " (thawed)" if thaw else "", (time.perf_counter() - t0) * 1000, freed, grown)
    finally:
        gc.unfreeze()
        gc.enable()
