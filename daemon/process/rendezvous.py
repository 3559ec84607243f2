"""Claiming the daemon's place: the private runtime dir, the single-instance lock, the socket.

Rules (DESIGN.md, Rules that hold everywhere): the runtime dir is 0700 and ours, checked for
owner and mode; the socket is bound under umask 0o177; one daemon per socket path, decided
by `flock` on a lock file beside the socket; a stale socket (ECONNREFUSED) is replaced, a live
one is never stolen; on exit the socket path is unlinked only if its inode is still ours.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from vigil.protocol.paths import SOCKET_PATH_MAX, PrivateDirError, check_private_dir


class RendezvousError(RuntimeError):
    """The daemon cannot take its place; the message says why and what to do."""


class AlreadyRunning(RendezvousError):
    """Another vigild holds the lock for this socket path."""


def ensure_private_dir(path: Path) -> None:
    """Create `path` 0700 if missing; refuse it if it is not ours or is group/world-accessible.

    Raises:
        RendezvousError: wrong owner, wrong mode, or not a directory.
    """
    try:
        check_private_dir(os.fspath(path))
    except PrivateDirError as exc:
        raise RendezvousError(exc.message) from None


@dataclass
class Claim:
    """What the daemon holds while it runs; `release()` gives it back."""

    socket_path: Path
    listener: socket.socket
    lock_fd: int
    owns_path: bool
    inode: tuple[int, int] | None

    def release(self) -> None:
        try:
            self.listener.close()
        finally:
            if self.owns_path and self.inode is not None:
                try:
                    st = os.lstat(self.socket_path)
                    if (st.st_dev, st.st_ino) == self.inode:
                        os.unlink(self.socket_path)
                except FileNotFoundError:
                    pass
            os.close(self.lock_fd)


def acquire_lock(lock_path: Path) -> int:
    """Take the single-instance lock or raise AlreadyRunning (with the holder's pid)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise AlreadyRunning(f"vigild is already running (pid {holder}) for this socket") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _is_live(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        probe.connect(str(path))
        return True
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return False
        raise RendezvousError(f"cannot probe existing socket {path}: {exc.strerror}") from None
    finally:
        probe.close()


def claim(socket_path: Path, lock_path: Path, activated: socket.socket | None = None) -> Claim:
    """Take the lock and a listening socket (our own, or the one systemd handed over).

    Raises:
        AlreadyRunning: another daemon holds the lock.
        RendezvousError: the dir is unsafe, the path too long, or a live peer owns the socket.
    """
    if len(os.fsencode(socket_path)) > SOCKET_PATH_MAX:
        raise RendezvousError(
            f"socket path {socket_path} is {len(os.fsencode(socket_path))} bytes; "
            f"Unix socket paths must be at most {SOCKET_PATH_MAX} (set VIGIL_SOCKET shorter)")
    ensure_private_dir(socket_path.parent)
    lock_fd = acquire_lock(lock_path)
    try:
        if activated is not None:
            activated.setblocking(False)
            return Claim(socket_path, activated, lock_fd, owns_path=False, inode=None)
        if os.path.lexists(socket_path):
            if _is_live(socket_path):
                raise RendezvousError(
                    f"{socket_path} is served by a process that does not hold {lock_path}; "
                    "refusing to steal it")
            os.unlink(socket_path)  # stale: left by a daemon that died without cleaning up
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(socket_path))
        finally:
            os.umask(old_umask)
        listener.listen(512)
        listener.setblocking(False)
        st = os.lstat(socket_path)
        return Claim(socket_path, listener, lock_fd, owns_path=True, inode=(st.st_dev, st.st_ino))
    except BaseException:
        os.close(lock_fd)
        raise
