"""A program as the session leader of a new PTY (the slave is its fds 0-2 and its
controlling terminal), as a guardian starts one, for tests and benchmarks that look at it
without a daemon."""

from __future__ import annotations

import os
import pty
import signal


def spawn_on_pty(argv: list[str], env: dict[str, str] | None = None,
                 before_exec=None) -> tuple[int, int]:
    """(pid, master fd) of `argv` started on a new PTY with `env` (default: ours);
    `before_exec()` runs in the child first."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            if before_exec is not None:
                before_exec()
            os.execvpe(argv[0], argv, os.environ if env is None else env)
        finally:
            os._exit(127)
    return pid, fd


def end_pty_child(pid: int, fd: int) -> None:
    """SIGKILL the child's process group, reap it and close the master."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    os.close(fd)
