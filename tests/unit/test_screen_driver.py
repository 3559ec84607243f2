"""ScreenTask in trio: wakes on feed, publishes revisions, reports an exact screen on quiet."""

from __future__ import annotations

import trio

from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.screen.driver import ScreenTask
from vigil.daemon.settings import Settings

from .test_screen_keeper import tui_frames


class Recorder:
    def __init__(self):
        self.calls = []
        self.quiet = trio.Event()

    def __call__(self, snap, quiet):
        self.calls.append((snap, quiet))
        if quiet:
            self.quiet.set()


async def test_feed_wakes_and_wait_revision():
    rec = Recorder()
    task = ScreenTask(ScreenKeeper(5, 20), on_snapshot=rec)
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)
        start = task.snapshot().revision
        task.feed(b"hello\x1b[c")
        with trio.fail_after(5):
            snap = await task.wait_revision(start)
        assert snap.lines[0] == "hello"
        assert task.take_replies() == b"\x1b[?62;22c"
        with trio.fail_after(5):
            await rec.quiet.wait()
        last, quiet = rec.calls[-1]
        assert quiet and last.fidelity == "exact" and last.lines[0] == "hello"
        assert all(not q for _, q in rec.calls[:-1])
        nursery.cancel_scope.cancel()


async def test_flood_through_the_task_ends_exact():
    rec = Recorder()
    task = ScreenTask(ScreenKeeper(50, 200), on_snapshot=rec)
    chunk = b"y\r\n" * 20000
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)
        for _ in range(100):  # 6 MB, fed as fast as the loop turns
            task.feed(chunk)
            await trio.lowlevel.checkpoint()
        task.feed(b"$ ")
        with trio.fail_after(10):
            await rec.quiet.wait()
        snap, _ = rec.calls[-1]
        assert snap.lines == ["y"] * 49 + ["$"] and snap.fidelity == "exact"
        assert task.keeper.jumps > 0
        nursery.cancel_scope.cancel()


async def test_quiet_replays_checkpoint_after_blind_jump():
    rec = Recorder()
    data = tui_frames(250)
    ref = ScreenKeeper(20, 60)
    ref.feed(data)
    while ref.process(10.0, backlog_seconds=1e9):
        pass
    # A tiny backlog forces blind jumps while the frames stream in.
    task = ScreenTask(ScreenKeeper(20, 60, Settings(screen_backlog_seconds=0.01)), on_snapshot=rec)
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)
        task.feed(data)
        with trio.fail_after(20):
            await rec.quiet.wait()
        snap, _ = rec.calls[-1]
        assert task.keeper.blind_jumps > 0 and task.keeper.resyncs == 1
        assert snap.fidelity == "exact"
        assert snap.lines == ref.snapshot().lines
        nursery.cancel_scope.cancel()
