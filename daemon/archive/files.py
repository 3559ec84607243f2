"""Archive files: `<state>/archives/ab/cd/<ref>` — the two directory levels are the ref's
first four hex digits, so directories stay small and nothing a caller wrote ever reaches a
path. A turn's file is `<ref>.open` while it runs (created exclusively, appended to, 0600)
and is committed by fsync and rename to `<ref>`, never written again.

`path` refuses anything that is not an `ArchiveRef` (a bug, never caller input: the service
parses caller input first and refuses it before any lookup); files are opened without
following links and must be regular files of ours. Blocking: the reads and the commit run
in worker threads, the appends on the daemon's thread (one small `write()` each, as the
transcript's).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from vigil.protocol.api.trace import parse_archive_ref

OPEN_SUFFIX = ".open"


class ArchiveFiles:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, ref: str) -> Path:
        """The committed file of `ref` (`.open` added while its turn runs)."""
        if parse_archive_ref(ref) is None:
            raise ValueError("not an archive ref")  # callers parse first: this is a bug
        return self.root / ref[:2] / ref[2:4] / ref

    def create(self, ref: str) -> int:
        """Create `<ref>.open` (and its directories, 0700) for appending; its descriptor.

        Raises:
            OSError: it cannot be created (it exists already: EEXIST).
        """
        path = self.path(ref)
        for directory in (self.root, path.parent.parent, path.parent):
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
        return os.open(f"{path}{OPEN_SUFFIX}", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL
                       | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)

    def reopen(self, ref: str) -> int:
        """Open an existing `<ref>.open` for appending (a turn a stopped daemon left open).

        Raises:
            OSError: it does not exist, or is not a regular file of ours.
        """
        fd = os.open(f"{self.path(ref)}{OPEN_SUFFIX}",
                     os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)
        try:
            _check(fd)
        except OSError:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def append(fd: int, line: bytes) -> None:
        view = memoryview(line)
        while view:  # a regular file takes it whole; a short write continues the line
            view = view[os.write(fd, view):]

    def commit(self, ref: str, fd: int) -> None:
        """Make the turn's file durable and immutable: fsync, close, rename to `<ref>`.

        Raises:
            OSError: the file cannot be synced or renamed (it stays `.open`, readable).
        """
        path = self.path(ref)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(f"{path}{OPEN_SUFFIX}", path)

    def read(self, ref: str) -> tuple[bytes, bool] | None:
        """(contents, committed) of `ref`'s file, or None when there is none."""
        path = self.path(ref)
        for name, committed in ((str(path), True), (f"{path}{OPEN_SUFFIX}", False)):
            try:
                fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                continue
            try:
                size = _check(fd)
                chunks = []
                while size > 0 and (chunk := os.read(fd, size)):
                    chunks.append(chunk)
                    size -= len(chunk)
                return b"".join(chunks), committed
            finally:
                os.close(fd)
        return None

    def remove(self, ref: str) -> None:
        """Delete `ref`'s file, committed or open (either missing is fine)."""
        path = self.path(ref)
        for name in (str(path), f"{path}{OPEN_SUFFIX}"):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass


def _check(fd: int) -> int:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(errno.EPERM, "not a regular file of ours")
    return st.st_size
