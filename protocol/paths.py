"""Where vigil's files live: the rendezvous both the daemon and its clients must agree on.

This is part of the contract between client and daemon (like a well-known port), which is
why it lives in the protocol package. Every path can be overridden by the environment:

| what | default | override |
|---|---|---|
| socket | `$XDG_RUNTIME_DIR/vigil/vigil.sock`, else `/tmp/vigil-$UID/vigil.sock` | `VIGIL_SOCKET` |
| state (LMDB) | `$XDG_STATE_HOME/vigil`, else `~/.local/state/vigil` | `VIGIL_STATE_DIR` |
"""

from __future__ import annotations

import os
from pathlib import Path

#: sockaddr_un.sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107


def runtime_dir() -> Path:
    explicit = os.environ.get("VIGIL_SOCKET")
    if explicit:
        return Path(explicit).parent
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg) / "vigil"
    return Path(f"/tmp/vigil-{os.getuid()}")


def socket_path() -> Path:
    explicit = os.environ.get("VIGIL_SOCKET")
    if explicit:
        return Path(explicit)
    return runtime_dir() / "vigil.sock"


def lock_path() -> Path:
    sock = socket_path()
    return sock.with_name(sock.name + ".lock")


def state_dir() -> Path:
    explicit = os.environ.get("VIGIL_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(xdg) / "vigil"


def guardian_dir() -> Path:
    """Guardian sockets and exit records: under the runtime dir, which outlives the service."""
    return runtime_dir() / "guardians"


def daemon_log_path() -> Path:
    """Where an autostarted daemon's stderr goes (a systemd-started one logs to the journal)."""
    return state_dir() / "vigild.log"
