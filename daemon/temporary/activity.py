"""Is a helper in use by the thread's processes? Read in /proc, before anything is released.

The thread's processes are found from its live runtimes: every descendant of a runtime's
guardian (a subreaper: its child, everything the child started, and daemonized grandchildren
that left the child's session, which are reparented to it); on a kernel without children
links, every process in the session of a runtime's child (the guardian makes the child a
session leader, so its pid is the session id) as well. For each of them a helper is
in use when it is

- open (`/proc/PID/fd/*`, compared by device and inode through the magic links),
- mapped (`/proc/PID/maps`, by device and inode, or by path: overlay file systems show
  the lower layer's numbers there),
- the working directory or the executable (`/proc/PID/cwd`, `/proc/PID/exe`),
- or named by a running command (an argv element of the process that is the helper's name,
  ends in `/name`, or holds its path; or the same in a running command's text — a script
  that Python read and closed is still "named" by `python3 helper.py`).

What /proc refuses to show for one of the thread's processes (a permission error: a setuid
program, another uid) makes ownership unresolved: the caller then releases nothing. A
process that ends while it is examined is simply no longer a holder.

The check and the unlink are not atomic (no file system offers that): a process may open
a helper right after it was examined. The window is kept to the time between the last
/proc read and the `unlinkat`, and the entry's inode is checked again right before it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from vigil.daemon.guardian.identity import parse_stat
from vigil.daemon.runtime.manager import parent_pid

PROC = "/proc"
#: Fields after comm in /proc/PID/stat: ppid is field 4, session field 6.
_PPID, _SESSION = 4 - 3, 6 - 3
#: What separates words of a shell command (a name is matched as a whole word).
_WORDS = re.compile(r"""[\s;&|()<>`'"=]+""")


class Unresolved(Exception):
    """The thread's processes, or one of them, cannot be examined."""


@dataclass(frozen=True)
class Holder:
    """Why a helper stays: the reason (open, mapped, cwd, executable, named_by_command) and
    the process (None when a running command's text names it)."""

    reason: str
    pid: int | None


@dataclass(frozen=True)
class Candidate:
    name: str
    path: str
    dev: int
    ino: int


def supported() -> bool:
    """/proc with per-process fd links: Linux."""
    return os.path.isdir(f"{PROC}/self/fd")


def _process_table() -> dict[int, tuple[int, int]]:
    """pid → (ppid, session) of every process now."""
    table: dict[int, tuple[int, int]] = {}
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as f:
                fields = parse_stat(f.read())[1]
            table[int(name)] = (int(fields[_PPID]), int(fields[_SESSION]))
        except (OSError, ValueError, IndexError):
            continue  # ended while listed
    return table


def _children(pid: int) -> list[int] | None:
    """The children of `pid` from /proc/PID/task/*/children ([] when it is gone), or None
    when this kernel has no such files (CONFIG_PROC_CHILDREN off)."""
    try:
        tids = os.listdir(f"{PROC}/{pid}/task")
    except FileNotFoundError:
        return []
    children: list[int] = []
    for tid in tids:
        try:
            with open(f"{PROC}/{pid}/task/{tid}/children", "rb") as f:
                children += [int(c) for c in f.read().split()]
        except FileNotFoundError:
            if os.path.isdir(f"{PROC}/{pid}/task/{tid}"):
                return None  # the task is there, its children file is not
    return children


def thread_processes(sessions: set[int], guardians: set[int]) -> set[int]:
    """Every descendant of one of `guardians`, and every process in one of `sessions`.

    The guardians are subreapers, so a runtime's processes — its child, what the child
    started, and orphans that left the child's session — are all below its guardian: the
    children links are followed from there (a few reads per process of the thread, not one
    per process of the machine). Where the kernel has no children links, every process's
    stat is read instead, and the sessions are matched too.
    """
    if not sessions and not guardians:
        return set()
    found: set[int] = set()
    stack = list(guardians)
    while stack:
        children = _children(stack.pop())
        if children is None:
            return _scan_processes(sessions, guardians)
        for child in children:
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _scan_processes(sessions: set[int], guardians: set[int]) -> set[int]:
    table = _process_table()
    found = {pid for pid, (_, sid) in table.items() if sid in sessions}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    stack = [g for g in guardians if g in table]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def ancestry(pid: int, depth: int = 64) -> set[int]:
    """`pid` and its ancestors (up to `depth`, below init)."""
    chain: set[int] = set()
    while pid is not None and pid > 1 and pid not in chain and len(chain) < depth:
        chain.add(pid)
        pid = parent_pid(pid)
    return chain


def _names(text: str, candidate: Candidate) -> bool:
    """Whether one argv element or command word names `candidate`."""
    return (text == candidate.name or text.endswith("/" + candidate.name)
            or candidate.path in text)


def named_by_commands(commands: list[str], candidates: list[Candidate]) -> dict[str, Holder]:
    """Candidates that a running command's text names (as a word, a path ending in the
    name, or the helper's absolute path anywhere)."""
    held: dict[str, Holder] = {}
    for command in commands:
        words = [w for w in _WORDS.split(command) if w]
        for c in candidates:
            if c.name not in held and (c.path in command or any(_names(w, c) for w in words)):
                held[c.name] = Holder("named_by_command", None)
    return held


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise Unresolved(f"{path}: {exc.strerror}") from None
    except OSError:
        return None  # a dangling fd target, a process gone
    return st.st_dev, st.st_ino


def _process_holds(pid: int, by_key: dict[tuple[int, int], Candidate],
                   candidates: list[Candidate], caller: bool) -> dict[str, Holder]:
    base = f"{PROC}/{pid}"
    held: dict[str, Holder] = {}

    def hold(c: Candidate | None, reason: str) -> None:
        if c is not None and c.name not in held:
            held[c.name] = Holder(reason, pid)

    for link, reason in (("exe", "executable"), ("cwd", "cwd")):
        key = _stat_key(f"{base}/{link}")
        if key is not None:
            hold(by_key.get(key), reason)
    try:
        fds = os.listdir(f"{base}/fd")
    except FileNotFoundError:
        return held  # ended
    except PermissionError as exc:
        raise Unresolved(f"{base}/fd: {exc.strerror}") from None
    for fd in fds:
        key = _stat_key(f"{base}/fd/{fd}")
        if key is not None:
            hold(by_key.get(key), "open")
    try:
        with open(f"{base}/maps", "rb") as f:
            maps = f.read().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        maps = ""
    except PermissionError as exc:
        raise Unresolved(f"{base}/maps: {exc.strerror}") from None
    by_path = {c.path: c for c in candidates}
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or parts[4] == "0":
            continue
        major, _, minor = parts[3].partition(":")
        try:
            key = (os.makedev(int(major, 16), int(minor, 16)), int(parts[4]))
        except ValueError:
            continue
        path = parts[5].removesuffix(" (deleted)")
        hold(by_key.get(key) or by_path.get(path), "mapped")
    try:
        with open(f"{base}/cmdline", "rb") as f:
            argv = [] if caller else f.read().decode("utf-8", "surrogateescape").split("\0")
    except OSError:
        argv = []
    for c in candidates:
        if c.name not in held and any(_names(arg, c) for arg in argv if arg):
            held[c.name] = Holder("named_by_command", pid)
    return held


def holders(pids: set[int], commands: list[str], candidates: list[Candidate],
            callers: frozenset[int] | set[int] = frozenset()) -> dict[str, Holder]:
    """Which `candidates` the processes `pids` or the running `commands` use, by name.
    The argv of `callers` (the process asking for the release and its ancestors) is not
    read: asking to release a helper is not using it.

    Raises:
        Unresolved: one of the processes cannot be examined.
    """
    by_key = {(c.dev, c.ino): c for c in candidates}
    held = named_by_commands(commands, candidates)
    for pid in sorted(pids):
        if len(held) == len(candidates):
            break
        for name, holder in _process_holds(pid, by_key, candidates, pid in callers).items():
            held.setdefault(name, holder)
    return held
