"""Runtime identity from /proc: boot id and process start ticks, and the liveness check.

A pid is reused by the kernel, so "process 1234 exists" says nothing about whether it is
*our* guardian. The pair (boot_id, start ticks of that pid) does: a pid reused after the
guardian died has a later start time, and a reboot changes boot_id (DESIGN.md, Identity).
Stdlib only: the guardian process and the daemon both use it.
"""

from __future__ import annotations

_BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"

#: proc(5): field 22 of /proc/PID/stat is `starttime`. Fields after comm (field 2) start
#: at 3, so starttime is index 22 - 3 = 19 of the fields after the closing parenthesis.
_STARTTIME_AFTER_COMM = 22 - 3
_STATE_AFTER_COMM = 0  # field 3
_PGRP_AFTER_COMM = 5 - 3


def read_boot_id() -> str:
    """This boot's id (a UUID string); it changes on every reboot."""
    with open(_BOOT_ID_PATH, "rb") as f:
        return f.read().decode("ascii").strip()


def parse_stat(text: bytes) -> tuple[str, list[bytes]]:
    """Split a /proc/PID/stat line into (comm, fields after comm).

    comm may contain spaces and parentheses ("(sd-pam)", "a) b (c"): it runs from the first
    "(" to the *last* ")", which is the only parse that cannot be fooled by the name.

    Raises:
        ValueError: the text is not a stat line.
    """
    open_ = text.find(b"(")
    close = text.rfind(b")")
    if open_ < 0 or close < open_:
        raise ValueError("not a /proc/PID/stat line")
    comm = text[open_ + 1 : close].decode("utf-8", "replace")
    return comm, text[close + 1 :].split()


def _read_stat(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    try:
        fields = parse_stat(text)[1]
    except ValueError:
        return None
    return fields if len(fields) > _STARTTIME_AFTER_COMM else None


def read_start_ticks(pid: int) -> int | None:
    """Start time of `pid` in clock ticks after boot, or None if there is no such process."""
    fields = _read_stat(pid)
    return int(fields[_STARTTIME_AFTER_COMM]) if fields is not None else None


def read_pgrp(pid: int) -> int | None:
    """Process group of `pid`, or None if there is no such process (or it is a zombie)."""
    fields = _read_stat(pid)
    if fields is None or fields[_STATE_AFTER_COMM] in (b"Z", b"X"):
        return None
    return int(fields[_PGRP_AFTER_COMM])


def identity_alive(identity) -> bool:
    """True when the guardian `identity` (a wire.RuntimeIdentity: not imported, the guardian
    process loads this module and must not load msgspec) names is still running on this boot.

    A process with the same pid but different start ticks (pid reuse) or a different boot is
    *not* that guardian. A zombie guardian (dead, not yet reaped) is not alive either.
    """
    try:
        if read_boot_id() != identity.boot_id:
            return False
    except OSError:
        return False
    fields = _read_stat(identity.guardian_pid)
    if fields is None or fields[_STATE_AFTER_COMM] in (b"Z", b"X"):
        return False
    return int(fields[_STARTTIME_AFTER_COMM]) == identity.guardian_start_ticks
