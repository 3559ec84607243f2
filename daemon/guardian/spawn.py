"""Start the child on a new PTY, as its controlling terminal, with a clean signal state.

We fork ourselves rather than use ptyprocess: the guardian is single-threaded (fork is safe),
and every ptyprocess pitfall listed in DESIGN.md (blocking close, `__del__` killing the child,
an inheritable master) is then simply absent. What the child gets, and why:

- a new session (`setsid`) with the PTY slave as its *controlling* terminal (`TIOCSCTTY`):
  without it `\\x03` typed into the PTY does not interrupt `sleep`;
- default dispositions for every signal and an empty signal mask: ignored signals and the
  mask survive `exec`, and a Python parent ignores SIGPIPE (its children must not);
- no file descriptor but 0, 1, 2.

The guardian closes its copy of the slave right after the fork, or EIO (end of output) would
never come. Exec failures are reported back over a close-on-exec pipe, as subprocess does.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import termios

import _signal  # signal.py's C half: signal.py wraps it in enums, and enum costs a guardian ~1 MiB

from . import libc

#: rt_sigaction's number, for the signals the C library will not let `signal.signal` touch
#: (32 and 33, reserved by NPTL): if the daemon's own parent ignored one of them, the
#: ignore would survive exec into the child. A zeroed kernel `struct sigaction` is SIG_DFL
#: with no flags and an empty mask on every layout.
_RT_SIGACTION = {"x86_64": 13, "aarch64": 134}.get(os.uname().machine)
_ZERO_SIGACTION = bytes(64)


def _default_disposition(sig: int) -> None:
    """SIG_DFL for `sig`, also for the C library's reserved real-time signals."""
    try:
        _signal.signal(sig, _signal.SIG_DFL)
    except (OSError, ValueError):
        if _RT_SIGACTION is not None:
            try:
                libc.call("syscall", _RT_SIGACTION, sig, _ZERO_SIGACTION, None, 8)
            except OSError:
                pass  # as before: a signal the kernel will not reset stays as it was


class SpawnError(OSError):
    """The child could not be started; `errno`/`strerror` say why, `step` says where.

    `exit_status` and `shell_message` are how a shell reports the same failure (POSIX,
    "Command Search and Execution"): 127 when the command is not found, 126 when it is
    found but cannot be run — so a command that cannot start is a definite outcome.
    """

    def __init__(self, err: int, step: str, detail: str):
        super().__init__(err, f"{step} failed for {detail!r}: {os.strerror(err)}")
        self.step = step
        self.detail = detail

    @property
    def exit_status(self) -> int:
        return 127 if self.step == "exec" and self.errno in (errno.ENOENT, errno.ENOTDIR) else 126

    @property
    def shell_message(self) -> str:
        if self.step == "exec":
            what = "command not found" if self.exit_status == 127 else os.strerror(self.errno)
            return f"{self.detail}: {what}"
        if self.step == "chdir":
            return f"cannot change to {self.detail}: {os.strerror(self.errno)}"
        return f"cannot start the command ({self.step}): {os.strerror(self.errno)}"


def set_winsize(fd: int, rows: int, cols: int) -> None:
    """Set the terminal size on a PTY fd (struct winsize: rows, cols, xpixel, ypixel)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_winsize(fd: int) -> tuple[int, int]:
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return rows, cols


def _child(slave: int, errpipe_w: int, argv: list[str], cwd: str, env: dict[str, str]) -> None:
    """Runs in the forked child; never returns (exec or _exit)."""
    step = "setsid"
    try:
        _signal.set_wakeup_fd(-1)
        os.setsid()
        step = "TIOCSCTTY"
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        step = "dup2"
        for fd in (0, 1, 2):
            os.dup2(slave, fd, inheritable=True)
        step = "close fds"
        # Everything Python opened is close-on-exec already (PEP 446); this also drops any
        # inheritable descriptor the guardian itself inherited. The error pipe closes at exec.
        os.closerange(3, errpipe_w)
        os.closerange(errpipe_w + 1, os.sysconf("SC_OPEN_MAX"))
        step = "chdir"
        os.chdir(cwd)
        step = "signal reset"
        for sig in range(1, _signal.NSIG):  # valid_signals() omits the reserved 32 and 33
            if sig in (_signal.SIGKILL, _signal.SIGSTOP):
                continue
            _default_disposition(sig)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        step = "exec"
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        err = exc.errno or errno.EINVAL
    except BaseException:
        err = errno.EINVAL
    try:
        os.write(errpipe_w, f"{err}:{step}".encode())
    finally:
        os._exit(127)


def spawn(argv: list[str], cwd: str, env: dict[str, str], rows: int, cols: int) -> tuple[int, int]:
    """Fork and exec `argv` on a new PTY; return (child pid, master fd).

    The master is non-blocking and not inheritable. Call with SIGCHLD already handled, so an
    instant exit is not missed.

    Raises:
        SpawnError: the PTY could not be set up, or the child failed before exec completed
            (missing program, bad cwd, …); the failed child is reaped.
    """
    if not argv:
        raise SpawnError(errno.EINVAL, "exec", "")
    master, slave = os.openpty()  # both non-inheritable (PEP 446)
    try:
        set_winsize(master, rows, cols)
        errpipe_r, errpipe_w = os.pipe()
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child execs or exits
            os.close(errpipe_r)
            os.close(master)
            _child(slave, errpipe_w, argv, cwd, env)
    finally:
        if "pid" not in locals() or pid:
            os.close(slave)
            os.close(errpipe_w)
    try:
        report = b""
        while chunk := os.read(errpipe_r, 256):
            report += chunk
    finally:
        os.close(errpipe_r)
    if report:
        os.close(master)
        os.waitpid(pid, 0)
        err_s, _, step = report.decode("ascii", "replace").partition(":")
        detail = {"exec": argv[0], "chdir": cwd}.get(step, argv[0])
        raise SpawnError(int(err_s) if err_s.isdigit() else errno.EINVAL, step, detail)
    os.set_blocking(master, False)
    return pid, master
