"""Recognition on live runtimes: each screen change is evaluated by the recognizer chosen
for the runtime (`auto` by default) and debounced; a *reported* state change is persisted
as `recognized_state`, which the catalog turns into a 'state' change for `wait`.

Evaluation is cheap (built-in manifests ≤ 1 ms p50) and runs in the trio thread on the
screen keeper's callback, never on the ingest path. A debounced idle state is confirmed
by re-evaluating at the debouncer's due time even when the screen stays quiet.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import msgspec
import trio

from vigil.daemon.guardian.identity import parse_stat

from . import IdleDebouncer, RecognitionInput, Registry
from vigil.daemon.screen.snapshot import ScreenSnapshot as LiveScreen
from vigil.daemon.settings import Settings


def _read(path: str) -> bytes:
    """A small /proc file in one read (os.open: no buffered file object to build)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[str, list[bytes]]:
    """(comm, fields after comm) of /proc/PID/stat."""
    return parse_stat(_read(f"/proc/{pid}/stat"))


class Foreground:
    """One runtime's leader and foreground process, as recognition reads them at every
    evaluation, in one /proc read where the old way took four.

    The child's stat gives its own comm (the leader) and the terminal's foreground group
    (tpgid, field 8); the foreground leader's stat (the same file when the child itself is
    in the foreground) gives its comm and start time. Its argv — a third file — is read again
    only when (pid, comm, start time) changes, or `refresh_seconds` after it was read (an
    exec that keeps the name, `python a.py` becoming `python b.py`, shows within that).
    With 500 executions each evaluated twice a line, those reads were a sixth of the
    daemon's time (tests/bench/bench_many.py, profiled with py-spy).
    """

    def __init__(self, child_pid: int, refresh_seconds: float):
        self.child_pid = child_pid
        self.refresh_seconds = refresh_seconds
        self._key: tuple | None = None
        self._argv: tuple[str, ...] = ()
        self._read_at = 0.0

    def read(self) -> tuple[str | None, str | None, tuple[str, ...]]:
        """(leader comm, foreground comm, foreground argv); Nones and () where unknown."""
        try:
            leader, fields = _stat(self.child_pid)
        except (OSError, ValueError):
            return None, None, ()
        try:
            tpgid = int(fields[5])
            if tpgid <= 0:
                return leader, None, ()
            comm, fg_fields = (leader, fields) if tpgid == self.child_pid else _stat(tpgid)
            key = (tpgid, comm, fg_fields[19])  # field 22: start time, against pid reuse
            now = time.monotonic()
            if key != self._key or now - self._read_at >= self.refresh_seconds:
                raw = _read(f"/proc/{tpgid}/cmdline")
                self._argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
                self._key, self._read_at = key, now
            return leader, comm, self._argv
        except (OSError, ValueError, IndexError):
            return leader, None, ()


def recognition_input(snap: LiveScreen, child_pid: int | None, *, exited: bool = False,
                      exit_code: int | None = None,
                      foreground: tuple[str | None, str | None, tuple[str, ...]] | None = None,
                      lines: list[str] | None = None) -> RecognitionInput:
    """What recognizers see of `snap`. `foreground` (leader, comm, argv) and the padded
    `lines` may be passed in when the caller has them already (Recognition keeps both)."""
    if exited or not child_pid:
        leader, comm, argv = None, None, ()
    else:
        leader, comm, argv = foreground or Foreground(child_pid, refresh_seconds=0.0).read()
    return RecognitionInput(
        lines=lines if lines is not None else padded_lines(snap), title=snap.title or "",
        cursor=snap.cursor, alt_screen=snap.alt_screen, foreground=comm, foreground_argv=argv,
        exited=exited, exit_code=exit_code, leader=leader)


def padded_lines(snap: LiveScreen) -> list[str]:
    return [line.ljust(snap.cols) for line in snap.lines]


class Recognition:
    """One live runtime's recognizer state."""

    def __init__(self, registry: Registry, settings: Settings, child_pid: int | None,
                 report) -> None:
        self.registry = registry
        self.child_pid = child_pid
        self.foreground = Foreground(child_pid, settings.recognize_argv_refresh_seconds) if child_pid else None
        self.reload_seconds = settings.recognize_reload_seconds
        self._generation = -1
        #: The padded lines of the last snapshot seen, by its (revision, rows, cols): a quiet
        #: screen is evaluated again without building them again.
        self._lines_key: tuple | None = None
        self._lines: list[str] = []
        self.debouncer = IdleDebouncer.from_settings(settings)
        self.report = report  # report(state) when the reported state changes
        self.reported: str | None = None
        self.last_input: RecognitionInput | None = None
        self.last_detection = None
        self.due = trio.Event()
        #: Called with (detection, reported_state, input) after every evaluation (receipts).
        self.listeners: list = []

    def observe(self, snap: LiveScreen) -> None:
        key = (snap.revision, snap.rows, snap.cols)
        if key != self._lines_key:
            self._lines_key, self._lines = key, padded_lines(snap)
        inp = recognition_input(snap, self.child_pid, lines=self._lines,
                                foreground=self.foreground.read() if self.foreground else None)
        self._evaluate(inp)

    def _evaluate(self, inp: RecognitionInput) -> None:
        self.registry.reload_if_stale(self.reload_seconds)
        if inp != self.last_input or self.registry.generation != self._generation:
            # Evaluation is a pure function of the input and the manifests: a quiet screen
            # seen again (the keeper's quiet publish, a debouncer's due time) has the same
            # detection, and only the debouncer needs to see it again.
            self.last_detection = self.registry.detect("auto", inp)
            self._generation = self.registry.generation
        detection = self.last_detection
        self.last_input = inp
        state = self.debouncer.observe(detection.state, trio.current_time())
        if state != self.reported:
            self.reported = state
            self.report(state)
        for listener in tuple(self.listeners):
            listener(detection, state, inp)
        if self.debouncer.next_due() is not None:
            self.due.set()

    async def run(self) -> None:
        """Re-evaluate at the debouncer's due times, so a quiet idle screen gets confirmed."""
        while True:
            await self.due.wait()
            self.due = trio.Event()
            while (due := self.debouncer.next_due()) is not None and self.last_input is not None:
                await trio.sleep_until(due)
                leader, comm, argv = self.foreground.read() if self.foreground else (None, None, ())
                self._evaluate(msgspec.structs.replace(self.last_input, foreground=comm,
                                                       foreground_argv=argv, leader=leader))


class RecognitionFactory:
    """Builds the `Recognition` of each live runtime (one registry, one set of settings for
    all of them); the runtime manager calls it when it attaches a guardian."""

    def __init__(self, registry: Registry, settings: Settings):
        self.registry = registry
        self.settings = settings

    def __call__(self, child_pid: int | None, report: Callable[[str | None], None]) -> Recognition:
        return Recognition(self.registry, self.settings, child_pid, report)
