"""ScreenTask: runs one ScreenKeeper inside the trio daemon.

Where the parsing runs — the trio thread, in slices — and why:

- pyte is pure Python, so it holds the GIL wherever it runs. A worker thread would not add
  a core; it would only make the trio thread wait for the GIL at the interpreter's switch
  interval (5 ms) at unpredictable points, and it would need a lock around every keeper call
  (feed, snapshot, take_replies).
- In the trio thread, one slice is `screen_slice_seconds` (5 ms) of parsing, then a sleep
  that keeps the keeper at `screen_cpu_budget` (25 %) of a core: sleep = spent·(1−b)/b. Ingest
  and RPC tasks run between slices, so the worst added latency is one slice, and the keeper
  needs no lock because every call happens on one thread.
- The ingest path never waits: `feed()` is synchronous, O(bytes) with C-speed work only,
  and just sets an event. When parsing cannot keep up the keeper fast-forwards instead of
  growing a queue.
- Once output has been idle for `screen_idle_seconds` (20 ms: a flood's reads come every
  few ms), the share rises to `screen_quiet_cpu_budget` (80 %): there is no ingest of this
  screen to starve, and catching up is what stands between the end of a flood and an
  exact screen (issue 17: within 1 s). Only while it is the one screen with work: several
  floods at once share `screen_cpu_budget` whatever their pauses look like (on a loaded
  machine the daemon's own delays make every flood look idle, and five screens at 80 %
  starved RPC: tests/reliability/test_load.py).

Quiet: when no byte has arrived for `screen_quiet_exact_seconds` and the screen is up to
date, the task asks the keeper to `resync()` (exact re-render from its checkpoint when it
had to skip) and then reports a final snapshot with `quiet=True`, which the daemon persists.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from vigil.daemon.settings import DEFAULTS, Settings

from .keeper import ScreenKeeper
from .snapshot import ScreenSnapshot

#: on_snapshot(snapshot, quiet): quiet is True for the debounced report after output stopped.
SnapshotCallback = Callable[[ScreenSnapshot, bool], None]


class ScreenTask:
    """Owns one keeper; woken by `feed`; publishes revisions.

    Args:
        keeper: the keeper to drive (the task is its only user from now on).
        settings: `screen_cpu_budget`, `screen_quiet_cpu_budget`, `screen_idle_seconds`,
            `screen_slice_seconds`, `screen_quiet_exact_seconds`.
        on_snapshot: called (synchronously, in the trio thread) when the revision changes,
            at most once per slice, and once with quiet=True after output goes quiet. It must
            not block; exceptions from it propagate and end the task.
    """

    #: Screens with unparsed output right now, across the daemon (one trio thread, so a plain
    #: counter is enough): the CPU budget is divided among them.
    busy = 0

    def __init__(
        self,
        keeper: ScreenKeeper,
        settings: Settings = DEFAULTS,
        on_snapshot: SnapshotCallback | None = None,
    ):
        self.keeper = keeper
        self._settings = settings
        self._on_snapshot = on_snapshot
        self._wake = trio.Event()
        self._changed = trio.Event()
        self._published = 0
        self._last_feed = -float("inf")
        self._quiet_reported = True
        self._resynced = False
        #: Longest single step (one `process` slice and its publication), in seconds: how
        #: long this screen ever held the trio thread (tests/bench/bench_screen.py), and the
        #: CPU time of that thread in the longest step (the same, on a machine not shared).
        self.longest_hold = 0.0
        self.longest_hold_cpu = 0.0

    # --- called by the ingest path (never waits) ------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Hand raw output to the keeper and wake the task. Never blocks; call it from the
        trio thread (the ingest task)."""
        if not data:
            return
        self.keeper.feed(data)
        self._last_feed = trio.current_time()
        self._quiet_reported = False
        self._resynced = False
        self._wake.set()

    def take_replies(self) -> bytes:
        """Answers to terminal queries (send them to the child only when no human is attached)."""
        return self.keeper.take_replies()

    # --- readers -------------------------------------------------------------------------------

    def snapshot(self) -> ScreenSnapshot:
        return self.keeper.snapshot()

    async def wait_revision(self, after: int) -> ScreenSnapshot:
        """The first snapshot whose revision is greater than `after` (wrap in a trio timeout)."""
        while True:
            snap = self.keeper.snapshot()
            if snap.revision > after:
                return snap
            await self._changed.wait()

    # --- the task --------------------------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Process until cancelled. Start it in the nursery that owns the execution."""
        settings = self._settings
        slice_s = settings.screen_slice_seconds
        quiet_s = settings.screen_quiet_exact_seconds
        task_status.started()
        while True:
            more = True
            ScreenTask.busy += 1
            try:
                while more:
                    self._wake = trio.Event()
                    t0, c0 = time.perf_counter(), time.thread_time()
                    more = self.keeper.process(slice_s, idle=self._idle())
                    spent = time.perf_counter() - t0
                    self._publish(quiet=False)
                    self.longest_hold = max(self.longest_hold, time.perf_counter() - t0)
                    self.longest_hold_cpu = max(self.longest_hold_cpu, time.thread_time() - c0)
                    # The budget is the daemon's, not each screen's: ten busy screens share
                    # `share` of a core between them, so the keepers together never starve
                    # ingest and RPC. After `spent` of work, rest spent·(1−s)/s, s = share/busy.
                    # Once this screen's output has been quiet a while, catching up and the
                    # replay to exact get the larger quiet share.
                    mine = self._share() / ScreenTask.busy
                    rest = spent * (1 - mine) / mine
                    if rest > 0:
                        await trio.sleep(rest)
                    else:
                        await trio.lowlevel.checkpoint()
            finally:
                ScreenTask.busy -= 1
            if self.keeper.pending_bytes:
                continue
            # Up to date. Wait for more output, or for quiet.
            if not self._quiet_reported:
                deadline = self._last_feed + quiet_s
                with trio.move_on_at(deadline):
                    await self._wake.wait()
                if self._wake.is_set() or self.keeper.pending_bytes:
                    continue
                if not self._resynced and self.keeper.resync():
                    self._resynced = True  # at most one replay per quiet period
                    continue  # replay the checkpoint, then come back here
                self._quiet_reported = True
                self._publish(quiet=True)
            else:
                await self._wake.wait()

    def _idle(self) -> bool:
        return trio.current_time() - self._last_feed >= self._settings.screen_idle_seconds

    def _share(self) -> float:
        settings = self._settings
        if self._idle() and ScreenTask.busy == 1:
            return settings.screen_quiet_cpu_budget
        return settings.screen_cpu_budget

    async def settle(self) -> ScreenSnapshot:
        """Bring the screen fully up to date — parsed, and replayed to exact if it skipped —
        in slices that let the rest of the daemon run between them; for an execution that
        ended (the runtime's final screen). Returns the final snapshot."""
        slice_s = self._settings.screen_slice_seconds
        for replay in (False, True):
            if replay and not self.keeper.resync():
                break
            while self.keeper.process(slice_s, idle=True):
                self._publish(quiet=False)
                await trio.lowlevel.checkpoint()
        self._publish(quiet=False)
        return self.keeper.snapshot()

    def _publish(self, *, quiet: bool) -> None:
        snap = self.keeper.snapshot()
        changed = snap.revision != self._published
        if changed:
            self._published = snap.revision
            self._changed.set()
            self._changed = trio.Event()
        if self._on_snapshot is not None and (changed or quiet):
            self._on_snapshot(snap, quiet)
