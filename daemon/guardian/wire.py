"""The guardian's own wire protocol: messages between one guardian and the daemon, sans-IO.

A guardian outlives daemon upgrades (DESIGN.md, Processes), so a new daemon must keep
speaking to a guardian started by an old one: this protocol is versioned on its own
(`GUARDIAN_PROTOCOL_MIN..MAX`), separately from the client/daemon protocol. Rules (the same
as vigil.protocol's): one tagged msgspec Struct per message, one union per direction, msgpack
maps (so unknown fields are ignored), new fields always get defaults, and the version advances
only when an old peer could misread a new message. `tests/fixtures/guardian_wire_v1.msgpack`
holds encoded v1 messages that every later build must still decode.

Framing is vigil.protocol.frames (u32 length + body); this module only turns messages into
bodies and back. It imports msgspec and the stdlib only: the guardian process loads it and
must start fast.
"""

from __future__ import annotations

from typing import Annotated, Union

import msgspec
from msgspec import Meta, Struct

#: Oldest and newest guardian wire protocol this build speaks.
#:
#: v2 (additive): a command (Input, Resize, Signal, Foreground) may carry a `seq` > 0, and a
#: v2 guardian answers every such command exactly once — `Done{seq}` when it was applied,
#: `Error{seq, code, message}` when it was refused (input over the buffer limit, a child
#: that exited, a process group that is gone) — so the daemon reports what happened instead
#: of assuming delivery. `seq` 0 (what a v1 daemon sends) asks for no answer, and a v1
#: guardian ignores the field: it answers only refusals, without a seq. The daemon knows
#: which it talks to from `Welcome.protocol`.
#:
#: v3 (additive): `Hold{on}`. While on (someone follows the output live: `vigil run
#: --wait`), the guardian stops reading the PTY rather than overwrite ring bytes it has not
#: sent yet, so a daemon that is late (a loaded machine) makes the child wait, as a slow
#: terminal would, instead of costing bytes. It is the connection's: a new connection (a
#: restarted daemon) starts with it off. A v2 guardian would refuse the message; the daemon
#: sends it only to v3.
GUARDIAN_PROTOCOL_MIN = 1
GUARDIAN_PROTOCOL_MAX = 3
#: The `seq` of a command: 0 asks for no answer (v1 behaviour).
Seq = Annotated[int, Meta(ge=0)]

Offset = Annotated[int, Meta(ge=0)]
#: struct winsize fields are unsigned short; 0 rows/cols is meaningless to a program.
Dimension = Annotated[int, Meta(ge=1, le=65535)]
Version = Annotated[int, Meta(ge=0, le=65535)]


class _Msg(Struct, kw_only=True, tag_field="type", omit_defaults=False):
    """Base of wire messages: a map with a `type` tag."""


# --- values carried inside messages ------------------------------------------------------


class RuntimeIdentity(Struct, frozen=True, kw_only=True):
    """Who a guardian is. A pid alone is never trusted (pid reuse): recovery compares all of it."""

    runtime_id: str
    boot_id: str
    guardian_pid: int
    #: Field 22 of /proc/PID/stat: clock ticks after boot at which the guardian started.
    guardian_start_ticks: int
    child_pid: int


class ExitStatus(Struct, frozen=True, kw_only=True):
    """How the child ended: exactly one of `exit_code` / `signal` is set."""

    exit_code: int | None
    signal: int | None
    ended_unix_ms: int


# --- daemon -> guardian ------------------------------------------------------------------


class Hello(_Msg, tag="hello"):
    """First message of a connection: the protocol range the daemon speaks."""

    protocol: tuple[Version, Version]
    client: str = ""


class Subscribe(_Msg, tag="subscribe"):
    """Send output from this absolute offset on (a Gap first if it is no longer retained)."""

    from_offset: Offset


class Ack(_Msg, tag="ack"):
    """The daemon has durably persisted every byte before `offset`."""

    offset: Offset


class Input(_Msg, tag="input"):
    """Bytes to write to the PTY master, as if typed. `Done.accepted` is how many were taken
    into the guardian's input buffer (all of them, or the command is refused whole)."""

    data: bytes
    seq: Seq = 0


class Resize(_Msg, tag="resize"):
    """Set the terminal size; the kernel sends SIGWINCH to the foreground group."""

    rows: Dimension
    cols: Dimension
    seq: Seq = 0


class Signal(_Msg, tag="signal"):
    """Send `signum` to the child (`group=False`), its process group, or the terminal's
    foreground process group (`foreground=True`, which wins over `group`)."""

    signum: Annotated[int, Meta(ge=1, le=64)]
    group: bool = True
    foreground: bool = False
    seq: Seq = 0


class Foreground(_Msg, tag="foreground"):
    """Ask which process group owns the terminal; answered with ForegroundInfo (carrying
    this `seq`)."""

    seq: Seq = 0


class ExitAck(_Msg, tag="exit_ack"):
    """The daemon persisted everything up to Exited.end_offset; the guardian may go."""


class Hold(_Msg, tag="hold"):
    """v3: while `on`, never overwrite unsent ring bytes: stop reading the PTY instead (the
    child waits for the daemon). Off by default, and again on every new connection."""

    on: bool


DaemonMessage = Union[Hello, Subscribe, Ack, Input, Resize, Signal, Foreground, ExitAck, Hold]

# --- guardian -> daemon ------------------------------------------------------------------


class Welcome(_Msg, tag="welcome"):
    """Answer to Hello: the chosen version, who this guardian is and what its ring holds."""

    protocol: int
    identity: RuntimeIdentity
    ring_start: int
    ring_end: int
    exit: ExitStatus | None
    rows: int
    cols: int
    #: Highest offset any daemon acknowledged to this guardian.
    acked_offset: int = 0


class Output(_Msg, tag="output"):
    """Child output: `data` are the bytes at absolute offsets [offset, offset + len(data))."""

    offset: int
    data: bytes


class Gap(_Msg, tag="gap"):
    """Bytes [start, end) were overwritten in the ring before they were sent: they are lost."""

    start: int
    end: int


class Exited(_Msg, tag="exited"):
    """The child has exited and the PTY is drained; `end_offset` is the final output offset.

    Sent only to a subscribed connection, once it has been sent everything up to
    `end_offset` (again after each new Subscribe). A daemon that has not subscribed learns
    the exit from Welcome.exit."""

    status: ExitStatus
    end_offset: int


class ForegroundInfo(_Msg, tag="foreground_info"):
    """The terminal's foreground process group (tcgetpgrp on the master) and its leader."""

    pgid: int | None
    pid: int | None
    comm: str | None
    argv: list[str] = []
    seq: Seq = 0


class Done(_Msg, tag="done"):
    """v2: the command with this `seq` was applied (`accepted`: input bytes taken)."""

    seq: Seq
    accepted: int = 0


class Error(_Msg, tag="error"):
    """A message could not be applied; `code` is a vigil.protocol ErrorCode value. `seq` is
    the refused command's (v2), or 0 for a message that asked for no answer."""

    code: str
    message: str
    seq: Seq = 0


GuardianMessage = Union[Welcome, Output, Gap, Exited, ForegroundInfo, Done, Error]

# --- launch (launcher -> guardian process, and back over the readiness pipe) -------------


class LaunchSpec(Struct, kw_only=True):
    """Everything a guardian needs to start, sent as one msgpack body on stdin or an fd.

    The launcher fills every limit from Settings (the guardian process does not load
    Settings: it must start fast); fields added later get defaults.
    """

    runtime_id: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    rows: Dimension
    cols: Dimension
    term: str
    socket_path: str
    records_dir: str
    ring_bytes: Annotated[int, Meta(ge=1)]
    output_frame_bytes: Annotated[int, Meta(ge=1)]
    send_buffer_bytes: Annotated[int, Meta(ge=1)]
    input_buffer_bytes: Annotated[int, Meta(ge=1)]
    max_frame_bytes: Annotated[int, Meta(ge=1)]
    drain_grace_seconds: Annotated[float, Meta(ge=0)]
    exit_linger_seconds: Annotated[float, Meta(ge=0)]


class Ready(Struct, tag="ready", tag_field="type", kw_only=True):
    """Written once to the readiness pipe: the guardian listens and the child runs."""

    identity: RuntimeIdentity


class LaunchFailed(Struct, tag="launch_failed", tag_field="type", kw_only=True):
    """Written instead of Ready when the guardian cannot start (bad spec, exec failure, …)."""

    code: str
    message: str
    #: Set when the child itself could not be started (exec or chdir failed): the status a
    #: shell reports for that, 127 (not found) or 126 (cannot run). The launch failed, but
    #: the command has a definite outcome.
    exit_code: int | None = None


LaunchResult = Union[Ready, LaunchFailed]

# --- codecs, built once ------------------------------------------------------------------

_encoder = msgspec.msgpack.Encoder()
encode = _encoder.encode

_daemon_decoder = msgspec.msgpack.Decoder(DaemonMessage)
_guardian_decoder = msgspec.msgpack.Decoder(GuardianMessage)
_launch_spec_decoder = msgspec.msgpack.Decoder(LaunchSpec)
_launch_result_decoder = msgspec.msgpack.Decoder(LaunchResult)


class _AnyTag(Struct):
    type: str = ""


_tag_decoder = msgspec.msgpack.Decoder(_AnyTag)


class WireDecodeError(ValueError):
    """A body is not a valid message. `code` is an ErrorCode value: `method_not_found` for a
    well-formed message of a type this build does not know (a newer peer), `invalid_request`
    for anything else; `message` names the bad field."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _decode(decoder: msgspec.msgpack.Decoder, body: bytes, union) -> object:
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as exc:
        try:
            tag = _tag_decoder.decode(body).type
        except msgspec.DecodeError:
            raise WireDecodeError("invalid_request", f"malformed message: {exc}") from None
        known = {cls.__struct_config__.tag for cls in union.__args__}
        if tag and tag not in known:
            raise WireDecodeError("method_not_found", f"unknown message type {tag!r}") from None
        raise WireDecodeError("invalid_request", f"invalid {tag or 'untagged'} message: {exc}") from None


def decode_daemon_message(body: bytes) -> DaemonMessage:
    """Decode a body sent by the daemon. Raises WireDecodeError."""
    return _decode(_daemon_decoder, body, DaemonMessage)


def decode_guardian_message(body: bytes) -> GuardianMessage:
    """Decode a body sent by a guardian. Raises WireDecodeError."""
    return _decode(_guardian_decoder, body, GuardianMessage)


def decode_launch_spec(body: bytes) -> LaunchSpec:
    """Decode a launch spec. Raises WireDecodeError."""
    try:
        return _launch_spec_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise WireDecodeError("invalid_request", f"invalid launch spec: {exc}") from None


def decode_launch_result(body: bytes) -> LaunchResult:
    """Decode what a guardian wrote to its readiness pipe. Raises WireDecodeError."""
    try:
        return _launch_result_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise WireDecodeError("invalid_request", f"invalid readiness message: {exc}") from None


def negotiate(theirs: tuple[int, int]) -> int | None:
    """The highest version both sides speak, or None when the ranges do not overlap."""
    lo = max(theirs[0], GUARDIAN_PROTOCOL_MIN)
    hi = min(theirs[1], GUARDIAN_PROTOCOL_MAX)
    return hi if lo <= hi else None
