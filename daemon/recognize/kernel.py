"""Kernel evidence: what the terminal's foreground processes are doing right now (issue 18).

A screen shows what a program drew, not what it does: `input("~~> ")` looks like nothing a
manifest knows, and `printf 'Continue? [y/N] '; sleep 60` looks like a question. The kernel
knows. For the foreground process group of the terminal (the tpgid in the session leader's
`/proc/PID/stat`), each member's

- `/proc/PID/stat` gives its state (R running, S sleeping, D disk, T stopped, Z zombie) and
  its CPU time;
- `/proc/PID/syscall` the system call it is blocked in with its arguments: `read` on a
  descriptor, `pselect6` on the fds below nfds with or without a timeout, ...;
- `/proc/PID/fd/N`, stat'ed through the link, what a descriptor is: this terminal (its
  device number is `tty_nr` of the stat line; `/dev/tty` counts too), a pipe, a socket ...;
  `/proc/PID/fdinfo/N` of an epoll descriptor lists the descriptors it waits on;
- `/proc/PID/mem`, at the pointers of a blocked select or poll, the descriptors it waits on
  (an fd_set, a pollfd array): a program selecting on a socket has the terminal open as
  fds 0-2 too, and is not waiting for input. Where the memory cannot be read, every open
  descriptor (below nfds) is assumed, which can only make the answer `inconclusive`;
- `/proc/PID/wchan` the kernel function it sleeps in: shown by explain, and used alone
  only to rule the terminal *out* (a sleep, a child) when the syscall cannot be read.

so "blocked in read(0), and 0 is the terminal" is a fact. `KernelSampler.look()` turns one
look into a `KernelEvidence` (protocol/api/execution.py) with one verdict for the group:

1. something runs (R, D), or used CPU since the previous look → `busy`;
2. something is stopped (T) → `stopped` (neither idle nor busy);
3. something waits on what is not the terminal (a sleep, a socket, a futex, events without
   the terminal) → `busy`: it is working, through a timer or a peer;
4. something could not be read → `unavailable` (a setuid program, a hardened kernel): never
   guessed;
5. something reads the terminal, or waits on events of the terminal alone with no timeout
   (a REPL's select, a shell's prompt) → `awaiting_input`;
6. something waits on the terminal with a timeout or among other sources (vim's timed
   select, ssh's poll on the terminal and its socket) → `inconclusive`: the screen decides;
7. only waits on the others (a parent in wait4, a reader of a pipe, a shell in sigsuspend)
   → `busy`.

Members are found by walking the session from its leader (`/proc/PID/task/TID/children` of
each thread) and keeping those whose process group is the foreground's, at most
`processes_max` of them. A process that left the session (setsid) is not followed.

Who reads: the daemon reads everything, except where the kernel refuses it
`/proc/PID/syscall`, which needs ptrace rights: under Yama `ptrace_scope=1` only an
ancestor has them, and the daemon is none. The child's guardian is. So `look()` is two
halves: `collect()` reads what the daemon may and lists the pids whose syscall it was
refused; the caller may have the guardian read those (`wire.Foreground.syscall_pids`) and
hands them to `conclude()`. A guardian too old to read them leaves them `unavailable`.

Cost: a look at a one-process foreground reads 3-4 small files (~30 µs here); a look at a
group with a running member stops before the syscalls in `detail=False` mode (the verdict
is `busy` already). tests/bench/bench_kernel.py measures it.
"""

from __future__ import annotations

import errno
import os
import stat as st
import struct
import sys
import time
from dataclasses import dataclass, field

from vigil.daemon.guardian.identity import parse_stat
from vigil.protocol.api.execution import KernelEvidence, KernelProcess

from ._syscalls import syscall_table

TICKS = os.sysconf("SC_CLK_TCK")
#: /dev/tty: a process's own controlling terminal, whatever its device number.
DEV_TTY = os.makedev(5, 0)
#: select's and poll's sets are read from the process's memory up to these sizes
#: (FD_SETSIZE; pollfd entries beyond 4096 are not looked at).
_FD_SETSIZE = 1024
_POLL_MAX = 4096
_POLLIN, _POLLPRI = 0x001, 0x002
#: Character devices that never block a reader: /dev/null, /dev/zero, /dev/full,
#: /dev/random, /dev/urandom.
_NEVER_BLOCK = frozenset(os.makedev(1, m) for m in (3, 5, 7, 8, 9))

# Fields of /proc/PID/stat after the comm, 0-based (proc(5) numbers them from 1; the comm
# is field 2, so field n is index n - 3).
_STATE, _PPID, _PGRP, _SESSION, _TTY_NR, _TPGID = 0, 1, 2, 3, 4, 5
_UTIME, _STIME, _THREADS, _START = 11, 12, 17, 19

#: The verdict each activity supports on its own (see the module doc for how they combine).
_RUNS = frozenset(("running", "disk"))
_ELSEWHERE = frozenset(("waiting_events", "sleeping", "network", "other"))
_TERMINAL = frozenset(("reading_terminal", "waiting_terminal"))
_MAYBE_TERMINAL = frozenset(("polling_terminal", "waiting_terminal_and_more"))
#: On the terminal in some way: `auto` looks at these processes' names first.
ON_TERMINAL = _TERMINAL | _MAYBE_TERMINAL
#: Most telling first, when several threads are on the terminal.
_TERMINAL_ORDER = ("reading_terminal", "waiting_terminal", "polling_terminal", "waiting_terminal_and_more")

#: Words for the activities that need no detail.
_WORDS = {
    "waiting_child": "waiting for a child process",
    "reading_pipe": "reading a pipe",
    "waiting_signal": "waiting for a signal",
    "sleeping": "sleeping",
    "network": "waiting on a socket",
    "waiting_events": "waiting for events, not on the terminal",
    "other": "blocked, not on the terminal",
}

#: Words for the activities on the terminal, around the call (`read(0)`, `pselect6`).
_ON_TERMINAL_WORDS = {
    "reading_terminal": "blocked in {call} on the terminal",
    "waiting_terminal": "waiting for events ({call}) on the terminal alone",
    "polling_terminal": "waiting for events ({call}) on the terminal, with a timeout",
    "waiting_terminal_and_more": "waiting for events ({call}) on the terminal and other sources",
}

#: wchan names that rule the terminal out when the syscall cannot be read.
_WCHAN = {"hrtimer_nanosleep": "sleeping", "do_nanosleep": "sleeping", "do_wait": "waiting_child",
          "pipe_read": "reading_pipe", "anon_pipe_read": "reading_pipe", "pipe_wait": "reading_pipe"}


def tty_rdev(tty_nr: int) -> int:
    """The device number (st_rdev) of a stat line's `tty_nr` (the kernel's new_encode_dev)."""
    major = (tty_nr >> 8) & 0xFFF
    minor = (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    return os.makedev(major, minor)


def read_proc(path: str) -> bytes:
    """A small /proc file in one read (os.open: no buffered file object to build)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(slots=True)
class Member:
    """One process of the foreground group during one look."""

    pid: int
    comm: str
    fields: list[bytes]
    depth: int
    cpu_ticks: int = 0
    #: `/proc/PID/syscall` as read (by the daemon or the guardian), or None.
    syscall_text: str | None = None
    #: Why it could not be read (`EPERM`, ...), when it could not.
    syscall_error: str | None = None


@dataclass(slots=True)
class Collection:
    """The daemon's half of a look: the group, and whose syscall it was refused."""

    at: float
    members: list[Member] = field(default_factory=list)
    pgid: int | None = None
    tty: int | None = None
    #: Set when there is nothing to look at (the leader is gone, no foreground group ...).
    error: str | None = None
    #: Pids whose /proc/PID/syscall the kernel refused the daemon (the guardian may read them).
    refused: list[int] = field(default_factory=list)
    #: True when the verdict is `busy` already, so the syscalls were not read (detail=False).
    settled: bool = False
    truncated: bool = False


@dataclass(slots=True)
class _Seen:
    """What the previous look saw of one process (by pid and start time)."""

    start: bytes
    cpu_ticks: int
    at: float
    wait: tuple | None = None
    since: float = 0.0


class KernelSampler:
    """Looks at one terminal's foreground, keeping what it saw of each process between
    looks (CPU time used since; how long a process has been in the same wait).

    Args:
        child_pid: the session leader (the guardian's child).
        processes_max: the most processes of the session walked per look.
        proc: the /proc mount (tests point it elsewhere).
        machine: `os.uname().machine` by default (system call numbers differ).
    """

    def __init__(self, child_pid: int, *, processes_max: int = 64, proc: str = "/proc",
                 machine: str | None = None):
        self.child_pid = child_pid
        self.processes_max = processes_max
        self.proc = proc
        self.machine = machine or os.uname().machine
        self.syscalls = syscall_table(self.machine)
        self._futex = next((f"{nr}" for nr, (name, _) in (self.syscalls or {}).items()
                            if name == "futex"), None)
        self._seen: dict[int, _Seen] = {}

    # --- reading ------------------------------------------------------------------------------

    def _stat(self, pid: int) -> tuple[str, list[bytes]]:
        return parse_stat(read_proc(f"{self.proc}/{pid}/stat"))

    def _children(self, pid: int, threads: int) -> list[int]:
        tids = [pid] if threads <= 1 else [int(t) for t in os.listdir(f"{self.proc}/{pid}/task")]
        out: list[int] = []
        for tid in tids:
            try:
                out += [int(c) for c in read_proc(f"{self.proc}/{pid}/task/{tid}/children").split()]
            except OSError:
                pass
        return out

    def collect(self, *, detail: bool = False, syscalls: bool = True) -> Collection:
        """Read what the daemon may read. `detail` reads every syscall even when the verdict
        is settled (explain); `syscalls=False` reads none (the guardian will)."""
        now = time.monotonic()
        out = Collection(at=now)
        try:
            comm, fields = self._stat(self.child_pid)
        except (OSError, ValueError) as exc:
            out.error = f"the session leader {self.child_pid} cannot be read ({_why(exc)})"
            return out
        tpgid = int(fields[_TPGID])
        if tpgid <= 0:
            out.error = "the terminal has no foreground process group"
            return out
        out.pgid, out.tty = tpgid, tty_rdev(int(fields[_TTY_NR]))
        session = int(fields[_SESSION])
        walked = [Member(self.child_pid, comm, fields, 0)]
        i = 0
        while i < len(walked) and not out.truncated:
            parent = walked[i]
            i += 1
            if parent.fields[_STATE] in (b"Z", b"X"):
                continue
            try:
                kids = self._children(parent.pid, int(parent.fields[_THREADS]))
            except OSError:
                continue
            for kid in kids:
                if len(walked) >= self.processes_max:
                    out.truncated = True
                    break
                try:
                    kcomm, kfields = self._stat(kid)
                except (OSError, ValueError):
                    continue  # gone since its parent listed it
                if int(kfields[_SESSION]) == session:
                    walked.append(Member(kid, kcomm, kfields, parent.depth + 1))
        out.members = [m for m in walked if int(m.fields[_PGRP]) == tpgid]
        if out.truncated or not out.members:
            return out
        busy = False
        for m in out.members:
            m.cpu_ticks = int(m.fields[_UTIME]) + int(m.fields[_STIME])
            state = m.fields[_STATE]
            seen = self._seen.get(m.pid)
            if state in (b"R", b"D") or (seen is not None and seen.start == m.fields[_START]
                                          and m.cpu_ticks > seen.cpu_ticks):
                busy = True
        if busy and not detail:
            out.settled = True
            return out
        if self.syscalls is None:
            return out
        for m in out.members:
            if m.fields[_STATE] != b"S":
                continue
            if not syscalls:
                m.syscall_error = "not read by the daemon (recognize_kernel is `guardian`)"
                out.refused.append(m.pid)
                continue
            try:
                m.syscall_text = read_proc(f"{self.proc}/{m.pid}/syscall").decode("ascii", "replace").strip()
            except PermissionError as exc:
                m.syscall_error = _why(exc)
                out.refused.append(m.pid)
            except (OSError, ValueError) as exc:
                m.syscall_error = _why(exc)
        return out

    # --- concluding --------------------------------------------------------------------------

    def conclude(self, got: Collection, guardian: dict[int, str | None] | None = None,
                 guardian_note: str = "", *, detail: bool = False) -> KernelEvidence:
        """The evidence of a collection. `guardian` maps pids to the syscall text the
        guardian read (None: it could not); pids refused to the daemon and absent from it
        are unavailable, with `guardian_note` saying why the guardian did not help."""
        if got.error is not None:
            self._seen.clear()
            return KernelEvidence(verdict="unavailable", text=f"unavailable: {got.error}")
        if got.truncated:
            return KernelEvidence(verdict="unavailable", foreground_pgid=got.pgid,
                                  text=f"unavailable: more than {self.processes_max} processes "
                                       f"in the session (recognize_kernel_processes_max)")
        if not got.members:
            return KernelEvidence(verdict="unavailable", foreground_pgid=got.pgid,
                                  text=f"unavailable: no process of the foreground group "
                                       f"{got.pgid} was found in the session")
        by = "daemon" if any(m.syscall_text is not None for m in got.members) else None
        for m in got.members:
            if guardian is not None and m.pid in guardian:
                text = guardian[m.pid]
                if text is not None:
                    m.syscall_text, m.syscall_error, by = text, None, "guardian"
                else:
                    m.syscall_error = (m.syscall_error or "refused") + "; the guardian could not read it either"
            elif m.pid in got.refused and guardian_note:
                m.syscall_error = f"{m.syscall_error}; {guardian_note}"
        processes = [self._process(m, got, detail) for m in got.members]
        self._remember(got, processes)
        verdict = group_verdict([p.activity for p in processes],
                                any((p.cpu_delta_seconds or 0) > 0 for p in processes))
        return KernelEvidence(verdict=verdict, text=_summary(got.pgid, processes, verdict),
                              foreground_pgid=got.pgid, processes=processes,
                              syscalls_read_by=by)

    def look(self, *, detail: bool = False) -> KernelEvidence:
        """collect() and conclude() with the daemon's reads alone."""
        got = self.collect(detail=detail)
        return self.conclude(got, detail=detail)

    def _process(self, m: Member, got: Collection, detail: bool) -> KernelProcess:
        state = m.fields[_STATE].decode("ascii", "replace")
        seen = self._seen.get(m.pid)
        if seen is not None and seen.start != m.fields[_START]:
            seen = None  # the pid was reused
        delta = None if seen is None else (m.cpu_ticks - seen.cpu_ticks) / TICKS
        if got.settled and state == "S":
            # Another process runs: the verdict is busy, and this one's call was not read.
            return KernelProcess(pid=m.pid, comm=m.comm, state=state, activity="other",
                                 cpu_seconds=m.cpu_ticks / TICKS, cpu_delta_seconds=delta,
                                 text=f"{m.pid} {m.comm}: sleeping; not looked at further "
                                      f"(another process of the group runs)")
        activity, syscall, fd = self._activity(m, state, got.tty)
        thread_note = ""
        if (activity not in ON_TERMINAL and activity not in _RUNS and activity != "unavailable"
                and int(m.fields[_THREADS]) > 1 and state == "S"):
            activity, syscall, fd, thread_note = self._threads(m, (activity, syscall, fd), got.tty)
        wchan = None
        if detail or activity == "unavailable":
            try:
                wchan = read_proc(f"{self.proc}/{m.pid}/wchan").decode("ascii", "replace").strip() or None
            except OSError:
                pass
            if wchan == "0":
                wchan = None
            if activity == "unavailable" and wchan in _WCHAN:
                activity = _WCHAN[wchan]  # rules the terminal out; never rules it in
        waiting = None
        if seen is not None and seen.wait == _wait_key(activity, syscall, fd) and delta == 0:
            waiting = got.at - seen.since
        if thread_note and not thread_note.startswith(" "):
            text = f"{m.pid} {m.comm}: {thread_note}"  # the threads' own account
        else:
            text = _process_text(m, activity, syscall, fd, wchan, waiting) + thread_note
        return KernelProcess(
            pid=m.pid, comm=m.comm, state=state, activity=activity, syscall=syscall, fd=fd,
            wchan=wchan, cpu_seconds=m.cpu_ticks / TICKS, cpu_delta_seconds=delta,
            waiting_seconds=waiting, text=text)

    def _remember(self, got: Collection, processes: list[KernelProcess]) -> None:
        seen: dict[int, _Seen] = {}
        for m, p in zip(got.members, processes):
            old = self._seen.get(m.pid)
            key = _wait_key(p.activity, p.syscall, p.fd)
            since = got.at
            if (key is not None and old is not None and old.start == m.fields[_START]
                    and old.wait == key and old.cpu_ticks == m.cpu_ticks):
                since = old.since
            seen[m.pid] = _Seen(m.fields[_START], m.cpu_ticks, got.at, key, since)
        self._seen = seen

    def _activity(self, m: Member, state: str, tty: int | None) -> tuple[str, str | None, int | None]:
        """(activity, syscall name, fd) of one member, from its state and its main thread's call."""
        if state in ("R", "W", "P", "K"):
            return "running", None, None
        if state == "D":
            return "disk", None, None
        if state in ("T", "t"):
            return "stopped", None, None
        if state in ("Z", "X"):
            return "exited", None, None
        if self.syscalls is None or m.syscall_text is None:
            return "unavailable", None, None
        return self._classify(m.pid, m.syscall_text, tty)

    def _classify(self, pid: int, text: str, tty: int | None) -> tuple[str, str | None, int | None]:
        """(activity, syscall name, fd) of one `/proc/.../syscall` line; `pid` owns the fds."""
        if text == "running":
            return "running", None, None
        parts = text.split()
        try:
            nr = int(parts[0])
            args = [int(a, 16) for a in parts[1:7]]
        except (ValueError, IndexError):
            return "other", None, None
        if nr < 0 or len(args) < 6:
            return "other", None, None  # blocked outside a system call (a page fault ...)
        name, kind = self.syscalls.get(nr, (f"syscall {nr}", "other"))
        if kind == "read":
            fd = args[0]
            what = self._fd_kind(pid, fd, tty)
            activity = {"terminal": "reading_terminal", "pipe": "reading_pipe", "socket": "network",
                        "anon": "waiting_events", "unreadable": "unavailable"}.get(what, "other")
            return activity, name, fd
        if kind in ("select", "poll", "ppoll", "epoll", "epoll2"):
            return self._events(pid, name, kind, args, tty), name, None
        activity = {"child": "waiting_child", "signal": "waiting_signal", "sleep": "sleeping",
                    "network": "network"}.get(kind, "other")
        return activity, name, None

    def _parked(self, syscall_text: str | None) -> bool:
        """A thread blocked in futex: waiting on another thread of its process."""
        return bool(syscall_text) and syscall_text.split(" ", 1)[0] == self._futex

    def _threads(self, m: Member, main: tuple[str, str | None, int | None], tty: int | None
                 ) -> tuple[str, str | None, int | None, str]:
        """A multi-threaded process whose main thread is not on the terminal: another thread
        may be (nvim's UI thread, a Go program's reader). Threads parked in futex are
        waiting on each other and count for nothing. Returns (activity, syscall, fd, a note
        for the text): the main thread's, or the thread's that decides."""
        try:
            tids = [int(t) for t in os.listdir(f"{self.proc}/{m.pid}/task") if int(t) != m.pid]
        except OSError:
            return (*main, "")
        on_terminal: list[tuple[str, str | None, int | None]] = []
        elsewhere = main[0] in _ELSEWHERE and not self._parked(m.syscall_text)
        for tid in tids[: self.processes_max]:
            base = f"{self.proc}/{m.pid}/task/{tid}"
            try:
                tstate = parse_stat(read_proc(f"{base}/stat"))[1][_STATE]
                if tstate in (b"R", b"D"):
                    return "running", None, None, f" (its thread {tid} runs)"
                if tstate != b"S":
                    continue
                text = read_proc(f"{base}/syscall").decode("ascii", "replace").strip()
            except PermissionError:
                return "unavailable", None, None, f" (its thread {tid} cannot be read)"
            except (OSError, ValueError):
                continue  # the thread ended
            if self._parked(text):
                continue
            got = self._classify(m.pid, text, tty)
            if got[0] in ON_TERMINAL:
                on_terminal.append(got)
            elif got[0] in _ELSEWHERE:
                elsewhere = True
            elif got[0] == "unavailable":
                return "unavailable", None, None, f" (its thread {tid} cannot be read)"
        if not on_terminal:
            return (*main, "")
        activity, syscall, fd = min(on_terminal, key=lambda t: _TERMINAL_ORDER.index(t[0]))
        if elsewhere:
            call = f"{syscall}({fd})" if fd is not None else syscall
            return ("waiting_terminal_and_more", syscall, fd,
                    f"one thread in {call} on the terminal, another waiting elsewhere")
        return activity, syscall, fd, " (in another thread)"

    def _events(self, pid: int, name: str, kind: str, args: list[int], tty: int | None) -> str:
        """The activity of a process blocked in select, poll or epoll."""
        if kind == "select":
            fds = self._select_fds(pid, args)
            if fds is None:
                fds = self._open_fds(pid, below=args[0])
            timed = args[4] != 0
        elif kind in ("poll", "ppoll"):
            fds = self._poll_fds(pid, args)
            if fds is None:
                fds = self._open_fds(pid)
            timed = _int32(args[2]) >= 0 if kind == "poll" else args[2] != 0
        else:
            fds = self._epoll_fds(pid, args[0])
            timed = _int32(args[3]) >= 0 if kind == "epoll" else args[3] != 0
        if fds is None:
            return "unavailable"
        kinds = {self._fd_kind(pid, fd, tty) if fd >= 0 else "other" for fd in fds}
        kinds.discard("file")
        kinds.discard(None)
        if "unreadable" in kinds:
            return "unavailable"
        if "terminal" not in kinds:
            return "waiting_events" if kinds else "sleeping"
        if kinds != {"terminal"}:
            return "waiting_terminal_and_more"
        return "polling_terminal" if timed else "waiting_terminal"

    def _memory(self, pid: int, address: int, size: int) -> bytes | None:
        """`size` bytes of the process's memory at `address` (/proc/PID/mem needs the same
        ptrace rights as /proc/PID/syscall), or None."""
        if not address or size <= 0:
            return None
        try:
            fd = os.open(f"{self.proc}/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            got = os.pread(fd, size, address)
        except (OSError, OverflowError):
            return None
        finally:
            os.close(fd)
        return got if len(got) == size else None

    def _select_fds(self, pid: int, args: list[int]) -> list[int] | None:
        """The descriptors a select waits on, from its fd_sets in the process's memory: those
        of the read and exception sets, and -1 for any in the write set (waiting to write is
        never waiting for input). None when the memory cannot be read (the caller then
        assumes every open fd below nfds)."""
        nfds = min(args[0], _FD_SETSIZE)
        size = (nfds + 63) // 64 * 8
        out: list[int] = []
        for i, address in enumerate(args[1:4]):
            if not address or not nfds:
                continue
            bits = self._memory(pid, address, size)
            if bits is None:
                return None
            value = int.from_bytes(bits, sys.byteorder)
            found = [fd for fd in range(nfds) if value >> fd & 1]
            out += [-1] * bool(found) if i == 1 else found
        return out

    def _poll_fds(self, pid: int, args: list[int]) -> list[int] | None:
        """The descriptors a poll or ppoll waits on for input (POLLIN, POLLPRI), from its
        pollfd array in the process's memory; -1 for any waited on for output only. None
        when the memory cannot be read (the caller then assumes every open fd)."""
        count = min(args[1], _POLL_MAX)
        if count == 0:
            return []
        raw = self._memory(pid, args[0], count * 8)
        if raw is None:
            return None
        out: list[int] = []
        for fd, events, _ in struct.iter_unpack("=ihh", raw):
            if fd >= 0 and events:
                out.append(fd if events & (_POLLIN | _POLLPRI) else -1)
        return out

    def _open_fds(self, pid: int, below: int | None = None) -> list[int] | None:
        if below is not None and below <= 8:
            return list(range(below))  # closed ones stat as None
        try:
            fds = [int(n) for n in os.listdir(f"{self.proc}/{pid}/fd")]
        except OSError:
            return None
        return fds if below is None else [fd for fd in fds if fd < below]

    def _epoll_fds(self, pid: int, epfd: int) -> list[int] | None:
        try:
            info = read_proc(f"{self.proc}/{pid}/fdinfo/{epfd}")
        except OSError:
            return None
        return [int(line.split()[1]) for line in info.splitlines() if line.startswith(b"tfd:")]

    def _fd_kind(self, pid: int, fd: int, tty: int | None) -> str | None:
        """`terminal`, `pipe`, `socket`, `file` (never blocks), `anon` (eventfd, epoll,
        signalfd, timerfd, inotify), `device`, `unreadable`, or None (not open)."""
        try:
            s = os.stat(f"{self.proc}/{pid}/fd/{fd}")
        except FileNotFoundError:
            return None
        except PermissionError:
            return "unreadable"
        except OSError:
            return None
        mode = s.st_mode
        if st.S_ISCHR(mode):
            if s.st_rdev == tty or s.st_rdev == DEV_TTY:
                return "terminal"
            return "file" if s.st_rdev in _NEVER_BLOCK else "device"
        if st.S_ISFIFO(mode):
            return "pipe"
        if st.S_ISSOCK(mode):
            return "socket"
        if st.S_ISREG(mode) or st.S_ISDIR(mode) or st.S_ISBLK(mode):
            return "file"
        return "anon"


def _wait_key(activity: str, syscall: str | None, fd: int | None) -> tuple | None:
    """What "the same wait" means from one look to the next (None: not waiting)."""
    return None if activity in _RUNS else (activity, syscall, fd)


def group_verdict(activities: list[str], cpu_advanced: bool) -> str:
    """The verdict of a foreground group from its processes' activities (module doc, 1-7)."""
    kinds = set(activities) - {"exited"}
    if cpu_advanced or kinds & _RUNS:
        return "busy"
    if "stopped" in kinds:
        return "stopped"
    if kinds & _ELSEWHERE:
        return "busy"
    if "unavailable" in kinds:
        return "unavailable"
    if kinds & _TERMINAL:
        return "awaiting_input"
    if kinds & _MAYBE_TERMINAL:
        return "inconclusive"
    return "busy" if kinds else "unavailable"


def leader_waits_for_child(evidence: KernelEvidence) -> bool:
    """The foreground group's leader is blocked waiting for a child (wait4, waitid)."""
    return any(p.pid == evidence.foreground_pgid and p.activity == "waiting_child"
               for p in evidence.processes)


def members_on_terminal(evidence: KernelEvidence) -> tuple[str, ...]:
    """Names `auto` tries before the group leader's: processes on the terminal, then
    running ones, deepest first; never the leader itself (its name is tried anyway)."""
    others = [p for p in reversed(evidence.processes) if p.pid != evidence.foreground_pgid]
    first = [p.comm for p in others if p.activity in ON_TERMINAL]
    then = [p.comm for p in others if p.activity in _RUNS]
    return tuple(dict.fromkeys(first + then))


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{errno.errorcode.get(exc.errno, exc.errno)}: {exc.strerror}"
    return str(exc)


def _seconds(s: float) -> str:
    return f"{s:.1f} s"


def _process_text(m: Member, activity: str, syscall: str | None, fd: int | None,
                  wchan: str | None, waiting: float | None) -> str:
    head = f"{m.pid} {m.comm}"
    since = f" for {_seconds(waiting)}" if waiting else ""
    if activity == "running":
        return f"{head}: running"
    if activity == "disk":
        return f"{head}: in uninterruptible wait (disk)"
    if activity == "stopped":
        return f"{head}: stopped"
    if activity == "exited":
        return f"{head}: exited, not yet reaped"
    if activity == "unavailable":
        why = m.syscall_error or "its system call is unknown"
        return f"{head}: unavailable ({why})" + (f"; in kernel function {wchan}" if wchan else "")
    call = f"{syscall}({fd})" if fd is not None else syscall
    if activity in _ON_TERMINAL_WORDS:
        return f"{head}: {_ON_TERMINAL_WORDS[activity].format(call=call)}{since}"
    word = _WORDS.get(activity, activity)
    return f"{head}: {word} ({call or wchan}){since}" if (call or wchan) else f"{head}: {word}{since}"


def _summary(pgid: int | None, processes: list[KernelProcess], verdict: str) -> str:
    deltas = [p.cpu_delta_seconds for p in processes if p.cpu_delta_seconds is not None]
    if len(deltas) < len(processes):
        cpu = "CPU: first look"
    elif any(deltas):
        cpu = f"CPU +{sum(deltas):.2f} s since the last look"
    else:
        cpu = "CPU idle"
    if len(processes) == 1:
        return f"foreground {processes[0].text}; {cpu}"
    return f"foreground group {pgid}: " + "; ".join(p.text for p in processes) + f"; {cpu}"
