"""Recognition on live runtimes: each screen change is evaluated by the recognizer chosen
for the runtime (`auto` by default) and debounced; a *reported* state change is persisted
as `recognized_state`, which the catalog turns into a 'state' change for `wait`.

Evaluation is cheap (built-in manifests ≤ 1 ms p50) and runs in the trio thread on the
screen keeper's callback, never on the ingest path. A debounced idle state is confirmed
by re-evaluating at the debouncer's due time even when the screen stays quiet.
"""

from __future__ import annotations

from typing import Callable

import msgspec
import trio

from vigil.daemon.guardian.identity import parse_stat

from . import IdleDebouncer, RecognitionInput, Registry
from vigil.daemon.screen.snapshot import ScreenSnapshot as LiveScreen
from vigil.daemon.settings import Settings


#: Field 8 of /proc/PID/stat (tpgid): the terminal's foreground process group; fields after
#: comm start at field 3.
_TPGID_AFTER_COMM = 8 - 3


def foreground_of(child_pid: int) -> tuple[str | None, tuple[str, ...]]:
    """The PTY's foreground process (comm, argv), read from /proc: the child's stat names
    the terminal's foreground process group (tpgid), whose leader we describe."""
    try:
        with open(f"/proc/{child_pid}/stat", "rb") as f:
            tpgid = int(parse_stat(f.read())[1][_TPGID_AFTER_COMM])
        if tpgid <= 0:
            return None, ()
        with open(f"/proc/{tpgid}/comm", "rb") as f:
            comm = f.read().strip().decode(errors="replace")
        with open(f"/proc/{tpgid}/cmdline", "rb") as f:
            argv = tuple(a.decode(errors="replace") for a in f.read().split(b"\0") if a)
        return comm, argv
    except (OSError, ValueError, IndexError):
        return None, ()


def recognition_input(snap: LiveScreen, child_pid: int | None, *, exited: bool = False,
                      exit_code: int | None = None) -> RecognitionInput:
    comm, argv = foreground_of(child_pid) if child_pid and not exited else (None, ())
    return RecognitionInput(
        lines=[line.ljust(snap.cols) for line in snap.lines], title=snap.title or "",
        cursor=snap.cursor, alt_screen=snap.alt_screen, foreground=comm, foreground_argv=argv,
        exited=exited, exit_code=exit_code,
        leader=_comm(child_pid) if child_pid and not exited else None)


def _comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().strip().decode(errors="replace")
    except OSError:
        return None


class Recognition:
    """One live runtime's recognizer state."""

    def __init__(self, registry: Registry, settings: Settings, child_pid: int | None,
                 report) -> None:
        self.registry = registry
        self.child_pid = child_pid
        self.debouncer = IdleDebouncer.from_settings(settings)
        self.report = report  # report(state) when the reported state changes
        self.reported: str | None = None
        self.last_input: RecognitionInput | None = None
        self.last_detection = None
        self.due = trio.Event()
        #: Called with (detection, reported_state, input) after every evaluation (receipts).
        self.listeners: list = []

    def observe(self, snap: LiveScreen) -> None:
        inp = recognition_input(snap, self.child_pid)
        self._evaluate(inp)

    def _evaluate(self, inp: RecognitionInput) -> None:
        self.registry.reload_if_changed()
        detection = self.registry.detect("auto", inp)
        self.last_input, self.last_detection = inp, detection
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
                comm, argv = foreground_of(self.child_pid) if self.child_pid else (None, ())
                self._evaluate(msgspec.structs.replace(self.last_input, foreground=comm,
                                                       foreground_argv=argv))


class RecognitionFactory:
    """Builds the `Recognition` of each live runtime (one registry, one set of settings for
    all of them); the runtime manager calls it when it attaches a guardian."""

    def __init__(self, registry: Registry, settings: Settings):
        self.registry = registry
        self.settings = settings

    def __call__(self, child_pid: int | None, report: Callable[[str | None], None]) -> Recognition:
        return Recognition(self.registry, self.settings, child_pid, report)
