"""Where vigil's files live: the rendezvous both the daemon and its clients must agree on.

This is part of the contract between client and daemon (like a well-known port), which is
why it lives in the protocol package. Every path can be overridden by the environment:

| what | default | override |
|---|---|---|
| socket | `$XDG_RUNTIME_DIR/vigil/vigil.sock`, else `/tmp/vigil-$UID/vigil.sock` | `VIGIL_SOCKET` |
| state (LMDB) | `$XDG_STATE_HOME/vigil`, else `~/.local/state/vigil` | `VIGIL_STATE_DIR` |

Paths are plain strings: this module sits on the CLI's start-up path, where importing
`pathlib` alone costs several milliseconds.
"""

from __future__ import annotations

import os

#: sockaddr_un.sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107


def runtime_dir() -> str:
    explicit = os.environ.get("VIGIL_SOCKET")
    if explicit:
        return os.path.dirname(os.path.abspath(explicit))
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, "vigil")
    return f"/tmp/vigil-{os.getuid()}"


def socket_path() -> str:
    explicit = os.environ.get("VIGIL_SOCKET")
    if explicit:
        return os.path.abspath(explicit)
    return os.path.join(runtime_dir(), "vigil.sock")


def state_dir() -> str:
    explicit = os.environ.get("VIGIL_STATE_DIR")
    if explicit:
        return os.path.abspath(explicit)
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(xdg, "vigil")


def guardian_dir() -> str:
    """Guardian sockets and exit records: under the runtime dir, which outlives the service."""
    return os.path.join(runtime_dir(), "guardians")


def daemon_log_path() -> str:
    """Where an autostarted daemon's stderr goes (a systemd-started one logs to the journal)."""
    return os.path.join(state_dir(), "vigild.log")


class PrivateDirError(ValueError):
    """A directory (or file) that must be private to us is missing, not a directory (not a
    regular file, a symbolic link), not ours, or open to other users. `kind` says which
    (`missing`, `not_directory`, `not_regular`, `symlink`, `foreign`, `open`), so a caller can
    translate it into its own error code; the message names the path and the fix.
    """

    def __init__(self, kind: str, message: str, errno: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        #: The OS error behind a `missing` (cannot create or open), when there was one.
        self.errno = errno


def check_private_dir(path: str, *, create: bool = True) -> None:
    """Make sure `path` is a directory owned by us with mode 0700 (creating it, and missing
    parents, 0700 when `create`). A symlink in its place is refused, never followed.

    The one check of every private directory vigil uses (runtime dir, state dir, guardian
    sockets and records, the shell's files): daemon, guardian and launcher all call it.

    Raises:
        PrivateDirError: it cannot be created, or it is not a private directory of ours.
    """
    import stat

    if create:
        # Every level it creates is 0700, not only the last (os.makedirs gives the parents
        # the umask's mode): a guardian recreating `<runtime>/guardians/records` after an
        # `rm -rf <runtime>` must not leave a runtime dir the daemon then refuses as open.
        missing = []
        parent = os.path.abspath(path)
        while not os.path.lexists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        for level in reversed(missing):
            try:
                os.mkdir(level, 0o700)
            except FileExistsError:
                pass  # created meanwhile (the daemon and a guardian may race): checked below
            except OSError as exc:
                raise PrivateDirError("missing", f"cannot create {path}: {exc.strerror}",
                                      exc.errno) from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise PrivateDirError("missing", f"{path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PrivateDirError("not_directory", f"{path} is not a directory")
    if st.st_uid != os.getuid():
        raise PrivateDirError("foreign", f"refusing {path}: owned by uid {st.st_uid}, not by "
                                         f"uid {os.getuid()}")
    if st.st_mode & 0o077:
        raise PrivateDirError("open", f"refusing {path}: mode {stat.S_IMODE(st.st_mode):04o} "
                                      f"lets other users in; it must be 0700 (chmod 700 {path})")


def open_private_file(path: str, flags: int, mode: int = 0o600) -> int:
    """Open one of vigil's own files (a lock, a log, a record): never through a symbolic
    link, and only if what is there is a regular file of ours. Returns the fd.

    A link planted where vigil keeps a file would otherwise have vigil write to (or
    truncate) whatever it points to with the user's rights. `O_NOFOLLOW` refuses the link in
    the open itself (no check-then-open race); `O_NONBLOCK` keeps a FIFO planted there from
    blocking the open, and the `fstat` refuses it (and a file of another user) afterwards.

    Raises:
        PrivateDirError: kind `symlink`, `not_regular`, `foreign` or `missing`; the message
            names the path and says to remove it.
    """
    import errno
    import stat

    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symbolic link
            raise PrivateDirError("symlink", f"refusing {path}: it is a symbolic link; vigil opens "
                                             "its own files only (remove it)") from None
        raise PrivateDirError("missing", f"cannot open {path}: {exc.strerror}", exc.errno) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PrivateDirError("not_regular", f"refusing {path}: it is not a regular file "
                                                 "(remove it)")
        if st.st_uid != os.getuid():
            raise PrivateDirError("foreign", f"refusing {path}: owned by uid {st.st_uid}, not by "
                                             f"uid {os.getuid()} (remove it)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
