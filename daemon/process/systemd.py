"""The two systemd conventions vigild speaks without any extra dependency.

- Socket activation (sd_listen_fds(3)): when `LISTEN_PID` is our pid, fds from 3 on are
  listening sockets handed to us; we take the first and never unlink its path (systemd owns it).
- Readiness (sd_notify(3)): one datagram with `READY=1` / `STOPPING=1` to `$NOTIFY_SOCKET`
  (a path, or an abstract name written with a leading `@`).
"""

from __future__ import annotations

import os
import socket

SD_LISTEN_FDS_START = 3


def take_listen_fds() -> list[socket.socket]:
    """Listening sockets passed by systemd, or [] when not socket-activated.

    The variables are removed from the environment so that children (guardians, commands)
    never believe the sockets were meant for them.
    """
    try:
        pid = int(os.environ.get("LISTEN_PID", ""))
        count = int(os.environ.get("LISTEN_FDS", ""))
    except ValueError:
        return []
    finally:
        for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
            os.environ.pop(name, None)
    if pid != os.getpid() or count < 1:
        return []
    socks = []
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + count):
        os.set_inheritable(fd, False)
        socks.append(socket.socket(fileno=fd))
    return socks


def notify(state: str) -> bool:
    """Send `state` (e.g. "READY=1") to the service manager; False when there is none."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.connect(address)
            sock.sendall(state.encode())
        except OSError:
            return False
    return True
