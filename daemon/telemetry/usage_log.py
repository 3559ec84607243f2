"""The usage log: `<state>/usage.jsonl`, one event per line (`vigil.protocol.usage`), 0600,
rotated by size.

Writing must cost a call almost nothing (a ping is ~50 µs; the budget for the log is 15 %
of it), so a call only appends its event Structs to a list; one task encodes and writes the
list out every `usage_log_flush_seconds`, or at once past a quarter of
`usage_log_buffer_events`, in a worker thread. If the disk does not keep up, the list stops
at `usage_log_buffer_events` and newer events are dropped and counted (logged once a minute
at most): telemetry never holds up a call and never grows memory without bound.

Rotation: when the file would pass `usage_log_max_bytes`, it is renamed to `usage.jsonl.1`
(older backups shift up to `usage_log_files`), and a new file is started. A call whose
events straddle a rotation shows as a start without a terminal — which the format allows.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from vigil.daemon.settings import Settings

log = logging.getLogger("vigild.usage")

FILE_NAME = "usage.jsonl"
_encode_lines = msgspec.json.Encoder().encode_lines


class UsageLog:
    """Appends usage events; `run` (in the daemon's nursery) writes them out."""

    def __init__(self, path: Path, settings: Settings):
        self.path = Path(path)
        self.settings = settings
        self.enabled = settings.usage_log_enabled
        self._events: list[Any] = []
        self._wake = trio.Event()
        self._fd: int | None = None
        self._size = 0
        self.dropped = 0
        self._dropped_logged = 0.0
        self._cap = settings.usage_log_buffer_events
        self._soft_limit = max(1, self._cap // 4)

    # --- producing (any task, never blocks) ----------------------------------------------------

    def emit(self, event: Any) -> None:
        events = self._events
        if len(events) >= self._cap:
            self.dropped += 1
            return
        events.append(event)
        if len(events) >= self._soft_limit:
            self._wake.set()

    # --- writing ---------------------------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Write buffered events every `usage_log_flush_seconds` (sooner when the buffer
        fills). The file is opened at start, so the daemon holds the same descriptors from
        its first call to its last, and a log that cannot be written is said once, early."""
        if self.enabled:
            try:
                self._open()
            except OSError as exc:
                log.warning("usage log: cannot open %s: %s (retried at each flush)", self.path,
                            exc.strerror)
        task_status.started()
        if not self.enabled:
            return
        try:
            while True:
                with trio.move_on_after(self.settings.usage_log_flush_seconds):
                    await self._wake.wait()
                self._wake = trio.Event()
                await self.flush()
        finally:
            # Shutdown: what is buffered is written before the daemon exits.
            with trio.CancelScope(shield=True):
                await self.flush()
                if self._fd is not None:
                    os.close(self._fd)
                    self._fd = None

    async def flush(self) -> None:
        if not self._events:
            return
        events, self._events = self._events, []
        try:
            await trio.to_thread.run_sync(lambda: self._write(_encode_lines(events)))
        except OSError as exc:
            self.dropped += len(events)
            log.warning("usage log: cannot write %s: %s", self.path, exc.strerror)
        if self.dropped and time.monotonic() - self._dropped_logged > 60:
            self._dropped_logged = time.monotonic()
            log.warning("usage log: %d events dropped so far (the disk did not keep up)",
                        self.dropped)

    def _write(self, data: bytes) -> None:
        """Append whole lines; a file never passes the cap (one line longer than the cap
        alone in a file is the only exception)."""
        if self._fd is None:
            self._open()
        cap = self.settings.usage_log_max_bytes
        while data:
            room = cap - self._size
            if len(data) <= room:
                cut = len(data)
            else:
                cut = data.rfind(b"\n", 0, max(room, 0)) + 1
                if cut == 0 and self._size == 0:
                    cut = data.find(b"\n") + 1 or len(data)
            if cut:
                os.write(self._fd, data[:cut])
                self._size += cut
                data = data[cut:]
            if data:
                self._rotate()

    def _open(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(self._fd, 0o600)
        self._size = os.fstat(self._fd).st_size

    def _rotate(self) -> None:
        os.close(self._fd)
        self._fd = None
        keep = self.settings.usage_log_files
        for n in range(keep, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            newer = self.path if n == 1 else self.path.with_name(f"{self.path.name}.{n - 1}")
            if n == keep and older.exists():
                older.unlink()
            if newer.exists():
                os.replace(newer, older)
        if keep == 0:
            self.path.unlink(missing_ok=True)
        self._open()
