"""The daemon's cycle collector runs on a timer (daemon/process/memory.py): automatic
collection is off while the task runs, a garbage cycle is freed when the timer comes due
(not before), a burst of allocations past the backstop collects at the next check, what
survives a run is frozen until a thawing run, and automatic collection is back (nothing
frozen) once the task ends."""

import gc
import weakref

import trio

from vigil.daemon.process import memory


class Node:
    def __init__(self):
        self.other = None


def garbage_cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a  # only the cycle collector can free it
    return weakref.ref(a)


def with_collector(clock, interval: float, allocations_max: int, thaw_interval: float, body) -> None:
    """Run `await body()` while the collector task runs, then check it undid everything."""
    async def main():
        async with trio.open_nursery() as nursery:
            await nursery.start(memory.collect_on_a_timer, interval, allocations_max, thaw_interval)
            assert not gc.isenabled()
            await body()
            nursery.cancel_scope.cancel()

    trio.run(main, clock=clock)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_timer_collects_and_only_the_timer(autojump_clock):
    async def body():
        gc.collect()  # start from nothing pending
        gone = garbage_cycle()
        junk = [[] for _ in range(5000)]  # allocations that would have triggered one
        await trio.sleep(299)
        assert gone() is not None  # nobody collected it yet
        await trio.sleep(2)
        assert gone() is None  # the timer did
        del junk

    with_collector(autojump_clock, 300.0, 10**9, 10**6, body)


def test_a_burst_of_allocations_collects_at_the_next_check(autojump_clock):
    async def body():
        gc.collect()
        gone = garbage_cycle()
        kept = [[] for _ in range(20_000)]  # alive, past the backstop
        await trio.sleep(1.5)
        assert gone() is None
        assert gc.get_count()[0] < 10_000
        del kept

    with_collector(autojump_clock, 3600.0, 10_000, 10**6, body)


def test_survivors_are_frozen_until_a_thawing_run(autojump_clock):
    async def body():
        a = Node()
        a.other = Node()
        a.other.other = a  # alive at the first run: frozen with the survivors
        await trio.sleep(11)
        assert gc.get_freeze_count() > 0 and gc.get_objects(2) == []
        gone = weakref.ref(a)
        del a  # garbage now, but frozen
        await trio.sleep(10)  # the second run (t=20) does not thaw
        assert gone() is not None
        await trio.sleep(10)  # the third (t=30) is past the thaw interval
        assert gone() is None

    with_collector(autojump_clock, 10.0, 10**9, 25.0, body)
