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
