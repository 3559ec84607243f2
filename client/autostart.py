"""Start vigild on demand when nobody listens, as tmux does, racing safely with other CLIs.

Each racer spawns a detached `vigild --ready-fd` and waits on that pipe, not on a timer:
the daemon that wins the socket's flock writes READY once it accepts; the losers write
EXISTS and exit, and their CLI then connects to the winner. The winner may still be between
taking the lock and listening, so a loser retries the connection with a short backoff until
the start deadline (a setting) — the only retry loop, and bounded.
"""

from __future__ import annotations

import os
import sys
import time

from vigil.protocol import paths

from .connection import Client, DaemonUnreachable


def daemon_command() -> list[str]:
    """How to run the daemon: the interpreter running us, so venvs and wheels both work."""
    return [sys.executable, "-m", "vigil.daemon"]


def spawn_daemon(log_path: str | None = None) -> int:
    """Start a detached vigild; returns the read end of its readiness pipe."""
    import subprocess  # only on the autostart path: keeps `vigil ls` start-up lean

    log_path = log_path or os.fspath(paths.daemon_log_path())
    os.makedirs(os.path.dirname(log_path), mode=0o700, exist_ok=True)
    try:
        log_fd = paths.open_private_file(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except paths.PrivateDirError as exc:
        raise DaemonUnreachable(f"cannot start vigild: {exc.message}") from None
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    try:
        subprocess.Popen(
            daemon_command() + ["--ready-fd", str(write_fd)],
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
            pass_fds=(write_fd,), start_new_session=True, close_fds=True,
        )
    finally:
        os.close(write_fd)
        os.close(log_fd)
    return read_fd


def _read_ready(fd: int, deadline: float) -> bytes | None:
    """The starter's line from the readiness pipe; b"" if the deadline passed first, None if
    the daemon closed the pipe without a word (it died)."""
    import select

    chunks = b""
    try:
        while b"\n" not in chunks:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b""
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return b""
            data = os.read(fd, 512)
            if not data:
                return chunks or None
            chunks += data
    finally:
        os.close(fd)
    return chunks


def last_log_line(log_path: str, since: int) -> str:
    """What the daemon last said in its log after byte `since`, for a start that failed.

    The line that names the failure: a traceback ends with the exception's line (the last
    one not indented); a fatal signal's dump (faulthandler) starts with "Fatal Python error".
    """
    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            text = f.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line for line in text.splitlines() if line.strip() and not line[0].isspace()]
    fatal = [line for line in lines if line.startswith("Fatal Python error")]
    return (fatal or lines or [""])[-1].strip()


def _start_failed(what: str, log_path: str, since: int) -> DaemonUnreachable:
    line = last_log_line(log_path, since)
    said = f"its last log line: {line}" if line else "it wrote nothing to its log"
    return DaemonUnreachable(f"{what}; {said} (see {log_path})")


def connect(socket_path: str | None = None, *, autostart: bool = True,
            timeout: float | None = None, **kwargs) -> Client:
    """Connect to vigild, starting it first if nobody listens and `autostart` is true.

    Raises:
        DaemonUnreachable: not running (and not started), or it failed to start (the message
            says why: the daemon's own sentence, or the last line of its log).
    """
    try:
        return Client(socket_path, timeout=timeout, **kwargs)
    except DaemonUnreachable:
        if not autostart or (socket_path and os.fspath(socket_path) != os.fspath(paths.socket_path())):
            raise
    from vigil.protocol.settings import WIRE_DEFAULTS as DEFAULTS

    limit = DEFAULTS.client_start_timeout_seconds
    deadline = time.monotonic() + limit
    log_path = os.fspath(paths.daemon_log_path())
    try:
        since = os.path.getsize(log_path)
    except OSError:
        since = 0
    answer = _read_ready(spawn_daemon(log_path), deadline)
    if answer is None:
        raise _start_failed("vigild exited before it was ready", log_path, since)
    if answer.startswith(b"ERROR"):
        raise DaemonUnreachable("vigild failed to start: " + answer[6:].decode(errors="replace").strip())
    delay = 0.002
    while True:
        try:
            return Client(socket_path, timeout=timeout, **kwargs)
        except DaemonUnreachable:
            if time.monotonic() >= deadline:
                raise _start_failed(f"vigild did not start within {limit:g} s", log_path,
                                    since) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
