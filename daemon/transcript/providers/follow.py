"""Following an agent's session log while the agent writes it.

`LogFollower.poll()` reads what was appended since the last call (by offset, at most
`transcript_follow_read_bytes` a call), feeds the provider's normalizer and returns the
items. It is synchronous and cheap: the recorder calls it from a trio worker thread, on a
timer or when inotify says the file changed; it keeps no thread, no timer and no open file
between calls. One follower is not thread-safe: calls on it must not overlap (one worker
call at a time per log).

A file shorter than what was read was truncated; a file whose inode changed was replaced
(rotated, rewritten by rename). Both restart reading at offset 0, say so with a `LogReset`
item, and drop a half-written line (counted). A file that is gone is not an error: the agent
may have removed it, `poll` returns nothing and `missing` says so.

The follower also owns the hold time of a reply being gathered: when the log has not grown
for `transcript_agent_hold_seconds`, the reply is released (`Normalizer.release`), so the
last reply of a turn does not wait for the next prompt.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from vigil.daemon.settings import DEFAULTS, Settings
from vigil.daemon.transcript.providers.items import Item, NormalizerStats
from vigil.daemon.transcript.providers.normalizer import Normalizer

__all__ = ["LogFollower"]


class LogFollower:
    """Reads one log incrementally into one normalizer.

    Args:
        path: the log (a discovery `Candidate.path`).
        normalizer: a fresh normalizer for its provider, created with `offset=offset`.
        offset: where to start (a `Candidate.start_offset`, or a `resume_offset` kept from a
            previous follower): a line boundary.
        settings: `transcript_follow_read_bytes`, `transcript_agent_hold_seconds`.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, path: str | Path, normalizer: Normalizer, *, offset: int = 0,
                 settings: Settings = DEFAULTS, clock: Callable[[], float] = time.monotonic):
        if normalizer.offset != offset:
            raise ValueError(f"the normalizer starts at byte {normalizer.offset}, "
                             f"the follower at {offset}: create it with offset={offset}")
        self.path = str(path)
        self.normalizer = normalizer
        self.missing = False
        #: False after a poll that stopped at its read budget: call again at once.
        self.caught_up = True
        self._read_max = settings.transcript_follow_read_bytes
        self._hold = settings.transcript_agent_hold_seconds
        self._clock = clock
        self._inode: tuple[int, int] | None = None
        self._last_growth = clock()

    @property
    def offset(self) -> int:
        """Bytes of the file read so far."""
        return self.normalizer.offset

    @property
    def resume_offset(self) -> int:
        """Where a new follower (after a daemon restart) should start to repeat nothing and
        miss nothing (see `Normalizer.resume_offset`)."""
        return self.normalizer.resume_offset

    @property
    def stats(self) -> NormalizerStats:
        return self.normalizer.stats

    def poll(self) -> list[Item]:
        """Items from what was appended since the last call.

        Raises:
            OSError: the file exists but cannot be read (a permission changed); the caller
                logs it and may try again.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self.missing, self.caught_up = True, True
            return self._release_if_quiet([])
        try:
            self.missing = False
            st = os.fstat(fd)
            items: list[Item] = []
            inode = (st.st_dev, st.st_ino)
            if self._inode is not None and inode != self._inode:
                items += self.normalizer.reset("replaced")
            elif st.st_size < self.normalizer.offset:
                items += self.normalizer.reset("truncated")
            self._inode = inode
            start = self.normalizer.offset
            want = min(st.st_size - start, self._read_max)
            data = os.pread(fd, want, start) if want > 0 else b""
        finally:
            os.close(fd)
        self.caught_up = start + len(data) >= st.st_size
        if data:
            self._last_growth = self._clock()
            items += self.normalizer.feed(data)
            return items
        return self._release_if_quiet(items)

    def release(self) -> list[Item]:
        """Release the reply being gathered now (the recognizer says the agent is back at
        its input, or the execution ended)."""
        return self.normalizer.release()

    def close(self) -> list[Item]:
        """Read what is left and end: the execution ended. An unterminated last line is read
        if it is complete JSON."""
        items = self.poll()
        while not self.caught_up:
            items += self.poll()
        return items + self.normalizer.close()

    def _release_if_quiet(self, items: list[Item]) -> list[Item]:
        if self.normalizer.holding and self._clock() - self._last_growth >= self._hold:
            items += self.normalizer.release()
        return items
