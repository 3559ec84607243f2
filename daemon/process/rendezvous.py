"""Claiming the daemon's place: the private runtime dir, the single-instance lock, the socket.

Rules (DESIGN.md, Rules that hold everywhere): the runtime dir is 0700 and ours, checked for
owner and mode; the socket is bound under umask 0o177; one daemon per state directory and
one per socket path, each decided by `flock` on a lock file (in the state dir, beside the
socket) opened without following links; a stale socket (ECONNREFUSED) is replaced, a live
one is never stolen; on exit the socket path is unlinked only if its inode is still ours.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from vigil.protocol.paths import SOCKET_PATH_MAX, PrivateDirError, check_private_dir, open_private_file


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
    """What the daemon holds while it runs; `release()` gives it back.

    The runtime dir can be deleted under a running daemon (`rm -rf $XDG_RUNTIME_DIR/vigil`,
    a tmpfs cleaner): the open listener and lock survive, but nobody can find them by path
    any more, and the next CLI would start a second daemon. `intact()` says whether the
    paths are still ours; `restore()` takes them back (process/keeper.py calls them).
    """

    socket_path: Path
    lock_path: Path
    listener: socket.socket
    lock_fd: int
    #: False for a socket systemd bound (socket activation): never unlinked by us.
    owns_path: bool
    #: (st_dev, st_ino) of the socket path as we last knew it.
    inode: tuple[int, int]

    def release(self) -> None:
        try:
            self.listener.close()
        finally:
            if self.owns_path:
                try:
                    st = os.lstat(self.socket_path)
                    if (st.st_dev, st.st_ino) == self.inode:
                        os.unlink(self.socket_path)
                except FileNotFoundError:
                    pass
            os.close(self.lock_fd)

    def intact(self) -> bool:
        """Whether the lock file and (for a socket we bound) the socket path are still ours."""
        held = os.fstat(self.lock_fd)
        if not _same_inode(self.lock_path, (held.st_dev, held.st_ino)):
            return False
        return _same_inode(self.socket_path, self.inode)

    def restore(self) -> socket.socket | None:
        """Recreate what went missing: the private dir, the lock file (locked anew, the old
        fd closed), the socket. Returns the new listener when the socket was bound again (the
        caller serves it and closes the old one), else None.

        Raises:
            RendezvousError: the dir cannot be made private, or another daemon took the lock
                or the socket meanwhile (then this one stays reachable only by the
                connections it has).
        """
        ensure_private_dir(self.socket_path.parent)
        held = os.fstat(self.lock_fd)
        if not _same_inode(self.lock_path, (held.st_dev, held.st_ino)):
            try:
                fd = take_lock(self.lock_path, self.socket_path)
            except LockHeld as other:
                raise RendezvousError(
                    f"vigild pid {other.pid or '?'} took {self.lock_path} after it was deleted; "
                    f"this daemon (pid {os.getpid()}) can no longer be reached at "
                    f"{self.socket_path}") from None
            os.close(self.lock_fd)
            self.lock_fd = fd
        if _same_inode(self.socket_path, self.inode):
            return None
        listener, self.inode = _bind(self.socket_path, self.lock_path)
        self.listener = listener
        self.owns_path = True
        return listener


def _same_inode(path: Path, inode: tuple[int, int]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:  # gone, or its dir replaced by something else (ENOTDIR)
        return False
    return (st.st_dev, st.st_ino) == inode


class LockHeld(Exception):
    """Another process holds the lock; `pid` and `socket` are what it wrote in the file
    (empty while it is between taking the lock and writing them)."""

    def __init__(self, pid: str, socket: str):
        super().__init__(pid)
        self.pid = pid
        self.socket = socket


def take_lock(lock_path: Path, socket_path: Path) -> int:
    """Take an exclusive `flock` on `lock_path` for as long as the returned fd stays open,
    and write our pid and socket path in it for whoever finds it taken.

    The file is opened without following a link and must be a regular file of ours
    (`open_private_file`): a link planted there must not get our pid written to its target.

    Raises:
        LockHeld: another process holds it.
        RendezvousError: the path is a link, not a regular file, not ours, or unopenable.
    """
    path = os.fspath(lock_path)
    writable = True
    try:
        fd = open_private_file(path, os.O_RDWR | os.O_CREAT)
    except PrivateDirError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise RendezvousError(exc.message) from None
        # A read-only state dir (a remounted disk, a restored backup): flock needs no write
        # access, so the lock still decides; only our pid cannot be written in it.
        try:
            fd = open_private_file(path, os.O_RDONLY)
        except PrivateDirError:
            raise RendezvousError(exc.message) from None
        writable = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lines = os.pread(fd, 4096, 0).decode(errors="replace").split("\n")
        os.close(fd)
        raise LockHeld(lines[0].strip(), lines[1].strip() if len(lines) > 1 else "") from None
    if writable:
        # Write, then cut: a reader sees the old holder's lines or ours, never an empty file.
        line = f"{os.getpid()}\n{socket_path}\n".encode()
        os.pwrite(fd, line, 0)
        os.ftruncate(fd, len(line))
    return fd


#: The state directory's lock file: held by the one daemon that may write the store.
STATE_LOCK_NAME = "vigild.lock"


def lock_state_dir(state_dir: Path, socket_path: Path) -> int:
    """Make `state_dir` private and hold its lock for the daemon's life (returns the fd).

    Two daemons on one store would each settle the other's executions as lost and fight over
    every record, so a second one must not start — whatever socket it serves. When the
    holder serves our very socket, it is simply the running daemon (AlreadyRunning, which an
    autostarting CLI treats as "connect to it"), as it is when it has not written its socket
    yet (it is starting).

    Raises:
        AlreadyRunning: the holder serves `socket_path` (or is still starting).
        RendezvousError: the holder serves another socket, or the dir or file is unsafe.
    """
    ensure_private_dir(state_dir)
    try:
        return take_lock(state_dir / STATE_LOCK_NAME, socket_path)
    except LockHeld as held:
        if not held.socket or held.socket == os.fspath(socket_path):
            raise AlreadyRunning(f"vigild is already running (pid {held.pid or '?'}) for this "
                                 "socket") from None
        raise RendezvousError(
            f"the state directory {state_dir} is in use by vigild pid {held.pid} (serving "
            f"{held.socket}); two daemons on one state would overwrite each other's history: "
            "stop that one, or give this one its own VIGIL_STATE_DIR") from None


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
    try:
        lock_fd = take_lock(lock_path, socket_path)
    except LockHeld as held:
        raise AlreadyRunning(f"vigild is already running (pid {held.pid or '?'}) for this "
                             "socket") from None
    try:
        if activated is not None:
            activated.setblocking(False)
            st = os.lstat(socket_path)  # systemd's path: never unlinked by us, but watched
            return Claim(socket_path, lock_path, activated, lock_fd, owns_path=False,
                         inode=(st.st_dev, st.st_ino))
        listener, inode = _bind(socket_path, lock_path)
        return Claim(socket_path, lock_path, listener, lock_fd, owns_path=True, inode=inode)
    except BaseException:
        os.close(lock_fd)
        raise


def _bind(socket_path: Path, lock_path: Path) -> tuple[socket.socket, tuple[int, int]]:
    """A listening socket at `socket_path` (replacing a stale one, never a live one), bound
    under umask 0o177; returns it with the inode it was bound at. Call holding the lock."""
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
    except BaseException:
        listener.close()
        raise
    finally:
        os.umask(old_umask)
    listener.listen(512)
    listener.setblocking(False)
    st = os.lstat(socket_path)
    return listener, (st.st_dev, st.st_ino)
