"""Keeping the daemon reachable when its runtime dir, socket or lock file is deleted.

`rm -rf $XDG_RUNTIME_DIR/vigil` (or a tmpfs cleaner) leaves a running daemon with an open
listener nobody can find: the next CLI would start a second daemon. tmux recreates its
socket on SIGUSR1, which someone has to send. Here the kernel tells us: an inotify watch on
the runtime dir reports the deletion (or rename) of the socket, of the lock file, or of the
dir itself, and the daemon takes its place back (`Claim.restore`: dir 0700, lock, socket).

Why inotify, not a periodic check: the daemon idles for hours, and a timer would wake it for
nothing all that time, yet react late when it matters; an inotify fd costs nothing until the
event, and trio waits on it like on any socket. inotify is not in the stdlib, so it is
called through ctypes (three libc functions; Linux only, as vigil is).

Each event is followed by `runtime_dir_settle_seconds` of quiet before restoring: `rm -rf`
deletes entry after entry and then the dir, and a socket recreated in the middle would make
its final rmdir fail (ENOTEMPTY). Guardians keep their own sockets under the same dir; their
connections to this daemon survive the unlink, and each guardian re-binds its socket when a
connection ends (guardian/server.py), so a later daemon finds it again.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct

import trio

from .rendezvous import Claim, RendezvousError

log = logging.getLogger("vigild.keeper")

# <sys/inotify.h>
IN_MOVED_FROM = 0x00000040
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
#: What the watch reports: a name in the dir deleted or moved away, or the dir itself.
WATCH_MASK = IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
_EVENT = struct.Struct("iIII")  # struct inotify_event {int wd; u32 mask, cookie, len; name}


class DirWatch:
    """One inotify instance watching (at most) one directory for deletions."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd = fd

    def watch(self, path: str) -> bool:
        """Watch `path` (again: a recreated dir is a new inode). False if it does not exist."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), WATCH_MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR):
                return False
            raise OSError(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        return True

    async def wait(self) -> list[tuple[int, str]]:
        """Block until events arrive; return them as (mask, name) pairs."""
        while True:
            await trio.lowlevel.wait_readable(self.fd)
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                continue
            events = []
            offset = 0
            while offset + _EVENT.size <= len(data):
                _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset:offset + length].rstrip(b"\0").decode("utf-8", "replace")
                offset += length
                events.append((mask, name))
            return events

    def close(self) -> None:
        os.close(self.fd)


async def keep_reachable(claim: Claim, adopt, settle_seconds: float, retry_seconds: float,
                         *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Watch `claim`'s runtime dir for ever; after a deletion, restore the claim and hand a
    new listener to `adopt(listener)` (which serves it and retires the old one).

    A restore that fails (another daemon took the path; the dir cannot be created) is logged
    once and retried every `retry_seconds` while it keeps failing.
    """
    watch = DirWatch()
    failing = False
    try:
        task_status.started()
        while True:
            watched = watch.watch(os.fspath(claim.socket_path.parent))
            if watched and claim.intact():
                await watch.wait()
                # Let a recursive delete finish before putting anything back into the dir.
                while True:
                    with trio.move_on_after(settle_seconds) as quiet:
                        await watch.wait()
                    if quiet.cancelled_caught:
                        break
                if claim.intact():
                    continue  # something else in the dir went (a guardian's socket, say)
            try:
                listener = claim.restore()
            except (RendezvousError, OSError) as exc:
                if not failing:
                    log.error("the runtime dir or socket was deleted and cannot be restored: %s; "
                              "retrying every %g s", exc, retry_seconds)
                    failing = True
                await trio.sleep(retry_seconds)
                continue
            failing = False
            if listener is not None:
                await adopt(listener)
            log.warning("%s was deleted under the running daemon; recreated it (pid %d goes on "
                        "serving there)", claim.socket_path, os.getpid())
    finally:
        watch.close()
