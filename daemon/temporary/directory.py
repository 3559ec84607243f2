"""The managed directories themselves: where they are, how they are made private, and what is
in them (entries, revision, budget), all through directory file descriptors.

Layout: `<state>/temporary/<principal key>/<thread_id>/`, every level 0700 and ours. The
principal key is a digest of the principal's name, so two principals never share a
directory (and no name of a principal becomes a path). The state dir, not the runtime dir:
threads outlive reboots and logouts in the store, and so do the helpers their agents wrote;
the runtime dir is a size-limited tmpfs that logout empties.

Nothing here follows a symlink: every directory below the state dir is opened with
`O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor, checked for owner and mode,
and every entry is examined with `lstat` relative to the managed directory's descriptor. A
path outside the directory is never formed from a caller's name, so nothing outside can be
touched, whatever is planted inside.

The revision is a digest of the whole tree (names, inode numbers, sizes, modification and
change times, modes): any change to an entry — a write, a rename, a chmod, a delete and
recreate — changes it. It is computed again on every call, never cached, so it is an
observation of that call (spec: "Fields are observations from that call").
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

TEMPORARY_DIR = "temporary"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class DirectoryError(Exception):
    """A managed directory cannot be made or opened safely (a symlink or another owner in
    its place, wrong permissions that cannot be fixed, an OS error)."""


def principal_key(principal: str) -> str:
    """The directory name of `principal`'s managed directories (16 hex characters)."""
    return hashlib.blake2b(principal.encode("utf-8", "surrogateescape"), digest_size=8,
                           person=b"vigil-tmp").hexdigest()


def _open_private(parent_fd: int, name: str, create: bool) -> int:
    """Open directory `name` under `parent_fd` (made 0700 if `create` and missing); it must
    be a real directory owned by us, with no access for anyone else.

    Raises:
        DirectoryError: a symlink or non-directory in its place, another owner, an OS error.
        FileNotFoundError: missing and not `create`.
    """
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP (a symlink), ENOTDIR, EACCES
        raise DirectoryError(f"{name!r} is not a private directory: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise DirectoryError(f"{name!r} belongs to uid {st.st_uid}, not to us")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, 0o700)  # ours: made private again rather than refused
        return fd
    except BaseException:
        os.close(fd)
        raise


@dataclass
class Entry:
    name: str
    kind: str  # file, directory, symlink, other
    size_bytes: int
    mtime_ns: int
    dev: int
    ino: int


@dataclass
class Measurement:
    """One observation of a managed directory."""

    revision: str
    #: Top-level entries (the helpers), sorted by name.
    entries: list[Entry]
    #: Regular files' bytes in the whole tree; None when an entry could not be measured.
    total_bytes: int | None
    #: Top-level entries; None when one of them could not be measured.
    count: int | None
    newest_mtime_ns: int = 0
    problems: list[str] = field(default_factory=list)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    return "other"


def measure(dir_fd: int) -> Measurement:
    """List, digest and size the tree under `dir_fd` without following any symlink.

    An entry that vanishes or cannot be read while it is measured makes the sizes unknown
    (None), never a smaller number: a missing count is omitted, not synthesized.
    """
    digest = hashlib.blake2b(digest_size=12)
    top = os.fstat(dir_fd)
    digest.update(f"{top.st_dev}:{top.st_ino}\0".encode())
    entries: list[Entry] = []
    total = 0
    #: Whether every entry was measured (the bytes), and every top-level one (the count).
    complete = top_complete = True
    problems: list[str] = []
    newest = 0

    def onerror(exc: OSError) -> None:
        nonlocal complete, top_complete
        complete = False
        top_complete = top_complete and exc.filename not in (None, ".")
        problems.append(f"{exc.filename}: {exc.strerror}")

    for dirpath, dirnames, filenames, fd in os.fwalk(".", dir_fd=dir_fd, follow_symlinks=False,
                                                     onerror=onerror):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            try:
                st = os.lstat(name, dir_fd=fd)
            except OSError as exc:
                complete = False
                top_complete = top_complete and dirpath != "."
                problems.append(f"{os.path.join(dirpath, name)}: {exc.strerror}")
                continue
            rel = os.path.normpath(os.path.join(dirpath, name))
            digest.update(os.fsencode(rel) + b"\0" + (
                f"{st.st_ino}:{st.st_mode}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}\0"
            ).encode())
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
            if dirpath == ".":
                newest = max(newest, st.st_mtime_ns)
                entries.append(Entry(name, _kind(st.st_mode), st.st_size, st.st_mtime_ns,
                                     st.st_dev, st.st_ino))
    entries.sort(key=lambda e: e.name)
    return Measurement(revision=digest.hexdigest(), entries=entries,
                       total_bytes=total if complete else None,
                       count=len(entries) if top_complete else None, newest_mtime_ns=newest,
                       problems=problems)


class ManagedDirectories:
    """Every principal's managed directories under one state dir."""

    def __init__(self, state_dir: Path):
        self.root = Path(state_dir) / TEMPORARY_DIR
        self._state_dir = Path(state_dir)

    def path(self, principal: str, thread_id: str) -> str:
        return str(self.root / principal_key(principal) / thread_id)

    def open(self, principal: str, thread_id: str, create: bool = False) -> int:
        """A descriptor of the thread's managed directory (made, private, if `create`).

        Raises:
            DirectoryError: see `_open_private`; FileNotFoundError: missing, not `create`.
        """
        return self._open_chain((TEMPORARY_DIR, principal_key(principal), thread_id), create)

    def siblings(self, principal: str, thread_id: str) -> list[str]:
        """Thread ids of the principal's other managed directories, sorted."""
        try:
            fd = self.open_principal(principal)
        except (FileNotFoundError, DirectoryError):
            return []
        try:
            return sorted(n for n in os.listdir(fd) if n != thread_id)
        finally:
            os.close(fd)

    def open_principal(self, principal: str) -> int:
        """A descriptor of the directory that holds `principal`'s managed directories."""
        return self._open_chain((TEMPORARY_DIR, principal_key(principal)), False)

    def _open_chain(self, names: tuple[str, ...], create: bool) -> int:
        """Open `names` one below the other from the state dir, each with `_open_private`."""
        try:
            state_fd = os.open(self._state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise DirectoryError(f"the state dir cannot be opened: {exc.strerror}") from None
        fds = [state_fd]
        try:
            for name in names:
                fds.append(_open_private(fds[-1], name, create))
            return fds.pop()
        finally:
            for fd in fds:
                os.close(fd)

    def open_sibling(self, principal_fd: int, thread_id: str) -> int:
        return _open_private(principal_fd, thread_id, False)
