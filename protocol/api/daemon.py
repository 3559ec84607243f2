"""Messages of the daemon's own methods: `hello`, `ping`, `status`."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

#: The local principal: the socket peer itself (the daemon admits only its own uid).
LOCAL_PRINCIPAL = "local"
#: A principal key: `local`, or `http:<name>` for a bearer token of the MCP HTTP server
#: (seeds/000, "Operator configuration": HTTP bindings use `http:<principal-id>`).
PRINCIPAL_PATTERN = r"^(local|http:[A-Za-z0-9][A-Za-z0-9_.-]{0,63})$"
Principal = Annotated[str, Meta(pattern=PRINCIPAL_PATTERN)]
#: Whose default an omitted wait takes (seeds/000: "5 seconds locally and for Claude HTTP,
#: 50 for ChatGPT/Codex HTTP").
WaitProfile = Literal["local", "claude", "chatgpt", "codex"]


class HelloParams(msgspec.Struct, kw_only=True):
    """First frame of every connection: the protocol range and encoding the client speaks,
    and on whose behalf it calls.

    `principal` is who the calls of this connection act for: `local` (the default) or
    `http:<name>`, which the MCP HTTP server names after authenticating a bearer token. The
    socket admits only the daemon's own uid, so a peer is trusted to name its principal;
    every scoped call is then checked against it, and another principal's threads,
    executions, cursors and receipts answer exactly like absent ones. `wait_profile` picks
    the default of waits whose timeout the caller omitted.
    """

    protocol: tuple[int, int]
    encoding: Literal["msgpack", "json"] = "msgpack"
    client: str = ""
    principal: Principal = LOCAL_PRINCIPAL
    wait_profile: WaitProfile = "local"


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


class TranscriptStats(msgspec.Struct, kw_only=True):
    """The transcript recorder: events written, live subscribers, events delivered to them
    and dropped for them (a subscriber that did not keep up; the files are complete)."""

    written: int
    subscribers: int
    delivered: int
    dropped: int


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
    #: Null when transcripts are off.
    transcripts: TranscriptStats | None = None
