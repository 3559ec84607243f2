"""Run one Herdr CLI invocation with a literal argv, bounded output and a hard deadline.

The spec asks for "literal argument vectors, bounded output, and finite deadlines". This
module is the only place a Herdr process is started, so those three promises hold for
every action:

* **Literal argv, no shell.** ``argv[0]`` is the configured, validated executable.
* **Caps while reading, not after.** stdout is capped at ``stdout_max`` bytes and stderr at
  ``stderr_max``; memory never holds more. What happens past the cap depends on the caller:
  ``stdout_mode="fail"`` (JSON answers: a truncated document is useless) stops reading,
  marks ``stdout_overflow`` and stops the process; ``stdout_mode="tail"`` (``read``: the
  recent text is at the end) keeps the *last* ``stdout_max`` bytes and marks the overflow.
  stderr is diagnostics only: its first ``stderr_max`` bytes are kept, the rest drained
  and dropped (``stderr_truncated``).
* **Deadline.** At the deadline (or on overflow, or if the caller is cancelled) the process
  group is sent SIGTERM, given ``kill_grace`` seconds, then SIGKILL, and always reaped
  before returning — trio's order: terminate, wait, kill. The child runs in its own
  session, so a helper it forked that still holds our pipes is stopped with it.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec
import trio

__all__ = ["RunResult", "run_bounded"]

# Read size per receive: one pipe buffer's worth is plenty (Linux default pipe: 64 KiB).
_CHUNK = 64 * 1024


class RunResult(msgspec.Struct, kw_only=True):
    """What one invocation produced. ``returncode`` is None when we had to stop it."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_overflow: bool = False
    stderr_truncated: bool = False


async def run_bounded(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    deadline: float,
    stdout_max: int,
    stderr_max: int,
    stdout_mode: Literal["fail", "tail"] = "fail",
    kill_grace: float = 0.2,
) -> RunResult:
    """Run ``argv`` until it exits, overflows (``fail`` mode) or ``deadline`` (trio clock).

    Raises:
        OSError: the executable could not be started (nothing ran).
    """
    proc = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
    )
    out = bytearray()
    err = bytearray()
    state = {"overflow": False, "err_truncated": False}
    stopped = False
    timed_out = False
    assert proc.stdout is not None and proc.stderr is not None

    async def pump_stdout(cancel: trio.CancelScope) -> None:
        while chunk := await proc.stdout.receive_some(_CHUNK):
            if stdout_mode == "tail":
                out.extend(chunk)
                if len(out) > stdout_max:
                    del out[: len(out) - stdout_max]
                    state["overflow"] = True
            elif len(out) + len(chunk) > stdout_max:
                out.extend(chunk[: stdout_max - len(out)])
                state["overflow"] = True
                cancel.cancel()  # stop reading and waiting; the process is stopped below
                return
            else:
                out.extend(chunk)

    async def pump_stderr() -> None:
        while chunk := await proc.stderr.receive_some(_CHUNK):
            room = stderr_max - len(err)
            if len(chunk) > room:
                state["err_truncated"] = True
            if room > 0:
                err.extend(chunk[:room])

    try:
        with trio.CancelScope(deadline=deadline) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump_stdout, scope)
                nursery.start_soon(pump_stderr)
            await proc.wait()
        if scope.cancelled_caught:
            timed_out = not state["overflow"]
            stopped = True
    finally:
        with trio.CancelScope(shield=True):
            if stopped or proc.returncode is None:
                stopped = True
                await _stop(proc, kill_grace)
            await proc.stdout.aclose()
            await proc.stderr.aclose()
    return RunResult(
        returncode=None if stopped else proc.returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        timed_out=timed_out,
        stdout_overflow=state["overflow"],
        stderr_truncated=state["err_truncated"],
    )


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # The group id is the child's pid (start_new_session). Linux keeps that number
    # allocated while any member of the group lives, so this cannot hit a stranger's
    # group while our helpers survive; ESRCH just means everyone is gone.
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def _stop(proc: trio.Process, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` s, SIGKILL it, reap. Call shielded."""
    if proc.returncode is None:
        _signal_group(proc.pid, signal.SIGTERM)
        with trio.move_on_after(grace if math.isfinite(grace) else 0):
            await proc.wait()
    # SIGKILL also reaches helpers that outlived (or ignored SIGTERM with) the leader.
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()
