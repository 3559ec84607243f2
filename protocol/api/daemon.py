"""Messages of the daemon's own methods: `hello`, `ping`, `status`."""

from __future__ import annotations

from typing import Literal

import msgspec


class HelloParams(msgspec.Struct, kw_only=True):
    """First frame of every connection: the protocol range and encoding the client speaks."""

    protocol: tuple[int, int]
    encoding: Literal["msgpack", "json"] = "msgpack"
    client: str = ""


class HelloResult(msgspec.Struct, kw_only=True):
    """The daemon's answer to `hello`: what was agreed and who answered. `capabilities`
    names every method this daemon serves."""

    protocol: int
    daemon_version: str
    daemon_epoch: str
    capabilities: list[str]
    max_frame_bytes: int


class PingParams(msgspec.Struct, kw_only=True):
    """Liveness check; `payload` is echoed back unchanged."""

    payload: str = ""


class PingResult(msgspec.Struct, kw_only=True):
    """Answer to `ping`."""

    pong: bool = True
    payload: str = ""


class StatusParams(msgspec.Struct, kw_only=True):
    """Ask the daemon who and where it is."""


class StoreHealth(msgspec.Struct, kw_only=True):
    """Whether the store accepts writes. While it does not (disk full, read-only), output
    and outcomes wait in the daemon and the guardians and are retried: nothing is lost until
    a guardian's ring overflows, which is then recorded as a gap."""

    ok: bool
    failing_since_unix_ms: int | None = None
    last_error: str | None = None
    failed_commits: int = 0


class StatusResult(msgspec.Struct, kw_only=True):
    """The daemon's identity, location, load and store health. `protocol` is the version
    negotiated on this connection."""

    version: str
    protocol: int
    pid: int
    daemon_epoch: str
    socket: str
    state_dir: str
    uptime_seconds: float
    connections: int
    socket_activated: bool
    open_fds: int
    tasks: int
    store: StoreHealth
