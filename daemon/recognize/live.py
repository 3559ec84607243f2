"""Recognition on live runtimes: each screen change is evaluated by the recognizer chosen
for the runtime (`auto` by default), with the kernel's evidence where the screen alone does
not decide (kernel.py, _decide.py), and debounced; a *reported* state change is persisted
as `recognized_state`, which the catalog turns into a 'state' change for `wait`.

When it is evaluated, and why:

- at each screen change and at the keeper's quiet publish (`observe`, in the trio thread on
  the screen keeper's callback, never on the ingest path). Screen evaluation is cheap
  (built-in manifests ≤ 1 ms p50) and cached while the input is unchanged;
- at the debouncer's due times, so a quiet idle screen gets confirmed;
- while the program runs (kernel evidence on: `recognize_kernel`), also at
  `recognize_kernel_interval_seconds`, doubling up to `recognize_kernel_interval_max_seconds`
  while the foreground stays in the same wait. The kernel is looked at even where a claiming
  manifest's rule decides the state (_decide.py): the claim holds only while its claimant is
  the program at the terminal, not a parent blocked waiting for its child (`sh -c` running a
  script whose output ends in `>>> `).
  A program that prints nothing — a silent CPU loop, a `sleep` — has no screen change to
  look at, so the first look comes that long after the runtime is attached.

A look at the kernel is synchronous (a few /proc reads) unless the kernel refuses the daemon
/proc/PID/syscall (Yama ptrace_scope=1): then the look is finished by the runtime's task,
after asking the guardian (`read_syscalls`), and `observe` only wakes it.
"""

from __future__ import annotations

import math
import time
from typing import Awaitable, Callable

import msgspec
import trio

from vigil.daemon.guardian.identity import parse_stat
from vigil.protocol.api.execution import KernelEvidence

from . import Detection, IdleDebouncer, RecognitionInput, Registry
from .kernel import Collection, KernelSampler, leader_waits_for_child, members_on_terminal, read_proc
from vigil.daemon.screen.snapshot import ScreenSnapshot as LiveScreen
from vigil.daemon.settings import Settings

#: read_syscalls(pids) -> ({pid: text or None}, note): the guardian's reads of
#: /proc/PID/syscall, or (None, why it could not help).
SyscallReader = Callable[[list[int]], Awaitable[tuple[dict[int, str | None] | None, str]]]


def _stat(pid: int) -> tuple[str, list[bytes]]:
    """(comm, fields after comm) of /proc/PID/stat."""
    return parse_stat(read_proc(f"/proc/{pid}/stat"))


class Foreground:
    """One runtime's leader and foreground process, as recognition reads them at every
    evaluation, in one /proc read where the old way took four.

    The child's stat gives its own comm (the leader) and the terminal's foreground group
    (tpgid, field 8); the foreground leader's stat (the same file when the child itself is
    in the foreground) gives its comm and start time. Its argv — a third file — is read again
    only when (pid, comm, start time, text mapping) changes — every exec moves the text
    mapping — or `refresh_seconds` after it was read (where the kernel hides the mapping).
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
            # Field 22, the start time, against pid reuse; fields 26-27, where the program's
            # text is mapped, change at every exec: `env python3` running a pyenv shim (a
            # bash script named python3) that execs the real python3 keeps pid, comm and
            # start time, and its argv must still be read again.
            key = (tpgid, comm, fg_fields[19], fg_fields[23], fg_fields[24])
            now = time.monotonic()
            if key != self._key or now - self._read_at >= self.refresh_seconds:
                raw = read_proc(f"/proc/{tpgid}/cmdline")
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


def informed(inp: RecognitionInput, evidence: KernelEvidence) -> RecognitionInput:
    """`inp` with what kernel evidence tells `auto` about who the program is."""
    members, waits = members_on_terminal(evidence), leader_waits_for_child(evidence)
    if not members and not waits:
        return inp
    return msgspec.structs.replace(inp, foreground_members=members, foreground_waits_for_child=waits)


class Recognition:
    """One live runtime's recognizer state.

    Args:
        snapshot: the runtime's current screen (for looks before any screen change).
        read_syscalls: asks the runtime's guardian for /proc/PID/syscall (kernel.py says
            when); None: no guardian to ask.
    """

    def __init__(self, registry: Registry, settings: Settings, child_pid: int | None,
                 report, *, snapshot: Callable[[], LiveScreen] | None = None,
                 read_syscalls: SyscallReader | None = None) -> None:
        self.registry = registry
        self.settings = settings
        self.child_pid = child_pid
        self.foreground = Foreground(child_pid, settings.recognize_argv_refresh_seconds) if child_pid else None
        self.kernel = (KernelSampler(child_pid, processes_max=settings.recognize_kernel_processes_max)
                       if child_pid and settings.recognize_kernel != "off" else None)
        self.snapshot = snapshot
        self.read_syscalls = read_syscalls
        self.reload_seconds = settings.recognize_reload_seconds
        self._generation = -1
        #: The padded lines of the last snapshot seen, by its (revision, rows, cols): a quiet
        #: screen is evaluated again without building them again.
        self._lines_key: tuple | None = None
        self._lines: list[str] = []
        #: The screen's own detections of the last inputs (without, with the kernel's
        #: member names), reused while an input is unchanged.
        self._screen_cache: dict[bool, tuple[RecognitionInput, Detection]] = {}
        self.debouncer = IdleDebouncer.from_settings(settings)
        self.report = report  # report(state) when the reported state changes
        self.reported: str | None = None
        self.last_input: RecognitionInput | None = None
        self.last_detection: Detection | None = None
        #: When the kernel is next looked at (trio time; inf: not asked about this screen),
        #: and the interval that doubles while the foreground stays in the same wait.
        self._kernel_due = math.inf
        self._kernel_interval = settings.recognize_kernel_interval_seconds
        self._kernel_signature: tuple | None = None
        #: Set to make the task look now (a look that needs the guardian).
        self._kernel_pending = False
        self._wake = trio.Event()
        #: Called with (detection, reported_state, input) after every evaluation (receipts).
        self.listeners: list = []

    # --- the screen ------------------------------------------------------------------------------

    def observe(self, snap: LiveScreen) -> None:
        """A screen change (or the keeper's quiet publish): evaluate it now."""
        key = (snap.revision, snap.rows, snap.cols)
        if key != self._lines_key:
            self._lines_key, self._lines = key, padded_lines(snap)
        inp = recognition_input(snap, self.child_pid, lines=self._lines,
                                foreground=self.foreground.read() if self.foreground else None)
        self._look(inp)

    def _screen(self, inp: RecognitionInput) -> Detection:
        """auto's screen-only detection of `inp` (a pure function of the input and manifests)."""
        self.registry.reload_if_stale(self.reload_seconds)
        slot = bool(inp.foreground_members) or inp.foreground_waits_for_child
        hit = self._screen_cache.get(slot)
        if hit is None or hit[0] != inp or self.registry.generation != self._generation:
            if self.registry.generation != self._generation:
                self._screen_cache.clear()
                self._generation = self.registry.generation
            hit = (inp, self.registry.detect("auto", inp))
            self._screen_cache[slot] = hit
        return hit[1]

    def _screen_alone(self, inp: RecognitionInput) -> bool:
        """Make `inp` the last input, and decide it by its screen alone (True), stopping the
        periodic looks, if the kernel cannot change that answer: kernel evidence is off, or
        the program exited. Anything else may change with it, even a claiming manifest's
        rule (the claim rests on its claimant being the program at the terminal, which a
        leader blocked waiting for its child is not): the screen is then evaluated once,
        with what the kernel tells `auto` (`_with_kernel`)."""
        self.last_input = inp
        if self.kernel is not None and not inp.exited:
            return False
        self._kernel_due = math.inf
        self._decided(self._screen(inp), inp)
        return True

    def _look(self, inp: RecognitionInput) -> None:
        """Evaluate `inp`: by the screen alone where it decides, else with a kernel look —
        now when the daemon can read everything, else by the task (`_kernel_pending`)."""
        if self._screen_alone(inp):
            return
        got = self._collect(detail=False)
        if got.refused and self._asks_guardian():
            self._kernel_pending = True
            self._wake.set()
            return
        self._with_kernel(inp, self.kernel.conclude(got, None, self._unasked_note(got)))

    # --- the kernel ------------------------------------------------------------------------------

    def _collect(self, *, detail: bool) -> Collection:
        return self.kernel.collect(detail=detail, syscalls=self.settings.recognize_kernel != "guardian")

    def _asks_guardian(self) -> bool:
        return self.settings.recognize_kernel in ("auto", "guardian")

    def _unasked_note(self, got: Collection) -> str:
        if not got.refused:
            return ""
        if not self._asks_guardian():
            return "recognize_kernel is `daemon`: the guardian is not asked"
        return "no guardian to ask"

    async def sample(self, *, detail: bool = False) -> KernelEvidence | None:
        """One look at the kernel, asking the guardian for what the daemon is refused.
        None when kernel evidence is off or there is no child."""
        if self.kernel is None:
            return None
        got = self._collect(detail=detail)
        answers, note = None, self._unasked_note(got)
        if got.refused and self._asks_guardian() and self.read_syscalls is not None:
            answers, note = await self.read_syscalls(list(got.refused))
        return self.kernel.conclude(got, answers, note, detail=detail)

    def _with_kernel(self, inp: RecognitionInput, evidence: KernelEvidence) -> None:
        """Decide `inp` with kernel evidence, and schedule the next look."""
        inp = informed(inp, evidence)
        screen = self._screen(inp)
        detection = self.registry.decide(screen, evidence)
        signature = (evidence.verdict, tuple((p.pid, p.activity, p.syscall, p.fd)
                                             for p in evidence.processes))
        if signature != self._kernel_signature or any(p.activity in ("running", "disk")
                                                      for p in evidence.processes):
            self._kernel_interval = self.settings.recognize_kernel_interval_seconds
        else:
            self._kernel_interval = min(self._kernel_interval * 2,
                                        self.settings.recognize_kernel_interval_max_seconds)
        self._kernel_signature = signature
        self._kernel_due = trio.current_time() + self._kernel_interval
        self._wake.set()
        self._decided(detection, inp)

    async def judge(self, recognizer: str, inp: RecognitionInput) -> Detection:
        """`recognizer`'s answer for `inp` now, with a fresh, detailed kernel look (explain,
        prompts' readiness): not debounced, not reported."""
        evidence = await self.sample(detail=True)
        if evidence is not None:
            inp = informed(inp, evidence)
        self.registry.reload_if_changed()
        return self.registry.detect(recognizer, inp, evidence)

    # --- deciding ---------------------------------------------------------------------------

    def _decided(self, detection: Detection, inp: RecognitionInput) -> None:
        self.last_detection = detection
        state = self.debouncer.observe(detection.state, trio.current_time())
        if state != self.reported:
            self.reported = state
            self.report(state)
        for listener in tuple(self.listeners):
            listener(detection, state, inp)
        if self.debouncer.next_due() is not None:
            self._wake.set()

    async def run(self) -> None:
        """Look again when due: at the debouncer's due times (a quiet idle screen gets
        confirmed), at the kernel's, and at once for a look that needs the guardian."""
        if self.kernel is not None and self.snapshot is not None:
            # A program may print nothing at all: the kernel is its only witness.
            self._kernel_due = trio.current_time() + self._kernel_interval
        while True:
            due = min(self.debouncer.next_due() or math.inf, self._kernel_due)
            if not self._kernel_pending:
                with trio.move_on_at(due):
                    await self._wake.wait()
            self._wake = trio.Event()
            if self._kernel_pending:
                self._kernel_pending = False
                await self._finish_look()
            elif trio.current_time() >= due:
                await self._again()

    async def _again(self) -> None:
        """Evaluate the last screen again, with the foreground read afresh."""
        if self.last_input is None:
            if self.snapshot is None:
                self._kernel_due = math.inf
                return
            self.observe(self.snapshot())
            return
        leader, comm, argv = self.foreground.read() if self.foreground else (None, None, ())
        inp = msgspec.structs.replace(self.last_input, foreground=comm, foreground_argv=argv,
                                      leader=leader, foreground_members=(),
                                      foreground_waits_for_child=False)
        if not self._screen_alone(inp):
            await self._finish_look()

    async def _finish_look(self) -> None:
        if self.last_input is None:
            return
        evidence = await self.sample()
        self._with_kernel(self.last_input, evidence)  # the screen may have changed meanwhile


class RecognitionFactory:
    """Builds the `Recognition` of each live runtime (one registry, one set of settings for
    all of them); the runtime manager calls it when it attaches a guardian."""

    def __init__(self, registry: Registry, settings: Settings):
        self.registry = registry
        self.settings = settings

    def __call__(self, child_pid: int | None, report: Callable[[str | None], None], *,
                 snapshot: Callable[[], LiveScreen] | None = None,
                 read_syscalls: SyscallReader | None = None) -> Recognition:
        return Recognition(self.registry, self.settings, child_pid, report, snapshot=snapshot,
                           read_syscalls=read_syscalls)
