"""The daemon's cycle-collector policy (daemon/process/memory.py): a full collection that
took longer than the setting freezes its survivors, so the next ones do not walk them; a
quick one does not (freezing short-lived objects skews the young generation's counter); a
periodic thaw collects once more and reclaims a cycle among frozen objects that has become
garbage."""

import gc
import weakref

import trio

from vigil.daemon.process import memory


class Node:
    def __init__(self):
        self.other = None


def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a  # only the cycle collector can free it
    return a


def test_a_quick_full_collection_freezes_nothing():
    freezer = memory.FreezeLongLived(after_seconds=3600)
    freezer.install()
    try:
        gc.collect()
        assert freezer.freezes == 0 and gc.get_freeze_count() == 0
    finally:
        freezer.remove()


def test_a_long_one_freezes_and_a_thaw_reclaims_dead_cycles(autojump_clock):
    freezer = memory.FreezeLongLived(after_seconds=0.0)  # every full collection is "long"
    freezer.install()
    try:
        kept = cycle()
        gc.collect()
        assert freezer.freezes == 1 and gc.get_freeze_count() > 0
        assert gc.get_objects(2) == []  # nothing left for the next full collection to walk
        gone = weakref.ref(kept)
        del kept  # garbage now, but frozen: a collection without a thaw does not see it
        gc.collect(1)
        assert gone() is not None

        async def main():
            async with trio.open_nursery() as nursery:
                await nursery.start(memory.thaw_periodically, 60.0)
                await trio.sleep(61)
                nursery.cancel_scope.cancel()

        trio.run(main, clock=autojump_clock)
        assert gone() is None  # the thaw's collection reclaimed the cycle
        assert gc.get_freeze_count() > 0  # and, being long, froze the survivors again
    finally:
        freezer.remove()
        gc.unfreeze()
