"""The Linux system calls kernel evidence tells apart, by number, per architecture.

`/proc/PID/syscall` gives a blocked task's system call as a number, and numbers differ by
architecture (x86_64's `read` is 0, the generic table's — arm64, riscv64 — is 63). Only the
calls a waiting program blocks in are named here, each with the *kind* of wait it is and
where its arguments are (`kernel.py` reads them):

| kind | calls | what is read from the arguments |
|---|---|---|
| `read` | read, readv, pread64, preadv, preadv2 | arg 1: the descriptor |
| `select` | select, pselect6 | arg 1: nfds; args 2-4: the fd_sets (read from /proc/PID/mem); arg 5: timeout pointer (0 = none) |
| `poll` | poll | args 1-2: the pollfd array and its length (read from /proc/PID/mem); arg 3: timeout in ms (negative = none) |
| `ppoll` | ppoll | args 1-2 as poll's; arg 3: timeout pointer |
| `epoll` | epoll_wait, epoll_pwait | arg 1: the epoll fd (its set is in fdinfo); arg 4: timeout ms |
| `epoll2` | epoll_pwait2 | arg 1: the epoll fd; arg 4: timeout pointer |
| `child` | wait4, waitid | waiting for a child process |
| `signal` | pause, rt_sigsuspend, rt_sigtimedwait | waiting for a signal (a shell's SIGCHLD) |
| `sleep` | nanosleep, clock_nanosleep | a timer |
| `network` | recvfrom, recvmsg, recvmmsg, accept, accept4, connect | a socket |

Any other call is of kind `other`: blocked on something that is not the terminal. A task
of another ABI (a 32-bit program on a 64-bit kernel) reports its own ABI's numbers, which
this table would misread; such programs are rare today and are not told apart.
"""

from __future__ import annotations

#: name -> kind, for every call named below.
_KINDS = {
    "read": "read", "readv": "read", "pread64": "read", "preadv": "read", "preadv2": "read",
    "select": "select", "pselect6": "select",
    "poll": "poll", "ppoll": "ppoll",
    "epoll_wait": "epoll", "epoll_pwait": "epoll", "epoll_pwait2": "epoll2",
    "wait4": "child", "waitid": "child",
    "pause": "signal", "rt_sigsuspend": "signal", "rt_sigtimedwait": "signal",
    "nanosleep": "sleep", "clock_nanosleep": "sleep",
    "recvfrom": "network", "recvmsg": "network", "recvmmsg": "network", "accept": "network",
    "accept4": "network", "connect": "network",
    "write": "other", "writev": "other", "futex": "other", "flock": "other",
    "restart_syscall": "other",
}

#: <asm/unistd_64.h>
_X86_64 = {
    "read": 0, "write": 1, "poll": 7, "pread64": 17, "readv": 19, "writev": 20, "select": 23,
    "pause": 34, "nanosleep": 35, "connect": 42, "accept": 43, "recvfrom": 45, "recvmsg": 47,
    "wait4": 61, "flock": 73, "rt_sigtimedwait": 128, "rt_sigsuspend": 130, "futex": 202,
    "restart_syscall": 219, "clock_nanosleep": 230, "epoll_wait": 232, "waitid": 247,
    "pselect6": 270, "ppoll": 271, "epoll_pwait": 281, "accept4": 288, "preadv": 295,
    "recvmmsg": 299, "preadv2": 327, "epoll_pwait2": 441,
}

#: <asm-generic/unistd.h>: arm64 and riscv64 (no poll, select, epoll_wait, pause).
_GENERIC = {
    "epoll_pwait": 22, "flock": 32, "read": 63, "write": 64, "readv": 65, "writev": 66,
    "pread64": 67, "preadv": 69, "pselect6": 72, "ppoll": 73, "waitid": 95, "futex": 98,
    "nanosleep": 101, "clock_nanosleep": 115, "restart_syscall": 128, "rt_sigsuspend": 133,
    "rt_sigtimedwait": 137, "accept": 202, "connect": 203, "recvfrom": 207, "recvmsg": 212,
    "accept4": 242, "recvmmsg": 243, "wait4": 260, "preadv2": 286, "epoll_pwait2": 441,
}

_BY_MACHINE = {"x86_64": _X86_64, "aarch64": _GENERIC, "arm64": _GENERIC, "riscv64": _GENERIC}


def syscall_table(machine: str) -> dict[int, tuple[str, str]] | None:
    """number -> (name, kind) for `os.uname().machine`, or None for an architecture whose
    numbers are not known here (kernel evidence then says which, and is `unavailable`)."""
    numbers = _BY_MACHINE.get(machine)
    if numbers is None:
        return None
    return {nr: (name, _KINDS[name]) for name, nr in numbers.items()}
