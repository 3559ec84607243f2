"""Daemon side: start a guardian that outlives us, and wait until it listens.

Blocking (subprocess + one pipe); call it from a worker thread (`trio.to_thread.run_sync`).

How the guardian is detached (DESIGN.md, Processes):
- under systemd (`$INVOCATION_ID` set, `systemd-run` on PATH) it is started in its own
  transient user scope (`systemd-run --user --scope --collect --quiet`, no `PartOf`), so
  stopping or restarting vigild.service, which kills the service's whole cgroup, spares it;
- elsewhere, and if systemd-run fails (no user manager), it is a plain double fork: we start
  it as a session leader and it forks once (`--detach`), so it is re-parented away from us.

Readiness is a pipe, not polling: the guardian writes `Ready{identity}` (or
`LaunchFailed{code, message}`) to it once its socket listens and the child runs. We never
fork the (multi-threaded) daemon in Python: subprocess does the fork+exec in C.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import subprocess
import sys
import time

from vigil.protocol.errors import ErrorCode
from vigil.protocol.paths import PrivateDirError, check_private_dir, open_private_file
from vigil.protocol.frames import FrameDecoder
from vigil.daemon.settings import Settings

from . import wire
from .errors import GuardianLaunchError

log = logging.getLogger("vigil.daemon.guardian")

def guardian_command() -> list[str]:
    """How to run a guardian: this interpreter, bare (`-I -S`), through boot.py, which is told
    where vigil's two packages are (boot.py says why)."""
    import vigil.daemon
    import vigil.protocol

    boot = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot.py")
    return [sys.executable, "-I", "-S", boot, list(vigil.daemon.__path__)[0],
            list(vigil.protocol.__path__)[0]]


def make_launch_spec(
    *,
    runtime_id: str,
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    socket_path: str,
    records_dir: str,
    settings: Settings,
    rows: int | None = None,
    cols: int | None = None,
) -> wire.LaunchSpec:
    """A LaunchSpec with every limit taken from `settings` (rows/cols default to it too)."""
    return wire.LaunchSpec(
        runtime_id=runtime_id,
        argv=list(argv),
        cwd=cwd,
        env=dict(env),
        rows=rows or settings.terminal_rows,
        cols=cols or settings.terminal_cols,
        term=settings.terminal_type,
        socket_path=socket_path,
        records_dir=records_dir,
        ring_bytes=settings.guardian_ring_bytes,
        output_frame_bytes=settings.guardian_output_frame_bytes,
        send_buffer_bytes=settings.guardian_send_buffer_bytes,
        input_buffer_bytes=settings.guardian_input_buffer_bytes,
        max_frame_bytes=settings.max_frame_bytes,
        drain_grace_seconds=settings.guardian_drain_grace_seconds,
        exit_linger_seconds=settings.guardian_exit_linger_seconds,
    )


def ensure_private_dir(path: str) -> None:
    """Create `path` (and parents) 0700 if missing; refuse one not ours or wider than 0700.

    Raises:
        GuardianLaunchError: FORBIDDEN if the directory is not private to us.
    """
    try:
        check_private_dir(path)
    except PrivateDirError as exc:
        raise GuardianLaunchError(ErrorCode.FORBIDDEN, exc.message) from None


def _use_systemd() -> str | None:
    if not os.environ.get("INVOCATION_ID"):
        return None
    return shutil.which("systemd-run")


def _start(command: list[str], spec_body: bytes, stderr_path: str | None, deadline: float) -> wire.LaunchResult | None:
    """Run `command` (which ends in the guardian with --ready-fd), feed it the spec, wait for
    readiness. Returns the result, or None if the process ended without a word (for example
    systemd-run refusing to start a scope)."""
    stderr = subprocess.DEVNULL
    if stderr_path is not None:
        try:
            stderr = open_private_file(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except PrivateDirError as exc:
            raise GuardianLaunchError(ErrorCode.FORBIDDEN, exc.message) from None
    ready_r, ready_w = os.pipe()
    try:
        proc = subprocess.Popen(
            command + ["--ready-fd", str(ready_w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            pass_fds=(ready_w,),
            start_new_session=True,
            cwd="/",
        )
    except OSError as exc:
        os.close(ready_r)
        raise GuardianLaunchError(ErrorCode.INTERNAL, f"cannot run {command[0]!r}: {exc.strerror}") from None
    finally:
        os.close(ready_w)  # only the guardian holds the write end now: EOF means it is gone
        if stderr_path is not None:
            os.close(stderr)
    try:
        try:
            proc.stdin.write(spec_body)
            proc.stdin.close()
        except BrokenPipeError:
            pass  # it died before reading; the readiness pipe tells the rest
        decoder = FrameDecoder()
        poller = select.poll()
        poller.register(ready_r, select.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                proc.kill()
                raise GuardianLaunchError(ErrorCode.TIMEOUT, "the guardian did not report readiness in time")
            chunk = os.read(ready_r, 4096)
            if not chunk:
                return None
            decoder.feed(chunk)
            body = decoder.next_frame()
            if body is not None:
                try:
                    return wire.decode_launch_result(body)
                except wire.WireDecodeError as exc:
                    raise GuardianLaunchError(ErrorCode.INTERNAL, exc.message) from None
    finally:
        os.close(ready_r)
        # The detaching parent exits right after forking (or after failing): reap it.
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch_guardian(
    spec: wire.LaunchSpec, settings: Settings, *, stderr_path: str | None = None
) -> wire.RuntimeIdentity:
    """Start a guardian for `spec`; return its identity once it listens and the child runs.

    Blocking: run it in a worker thread. Creates the socket's directory and the records
    directory 0700 if missing.

    Args:
        spec: see `make_launch_spec`.
        settings: `guardian_start_timeout_seconds` bounds the wait.
        stderr_path: the guardian's stderr is appended there (0600); default /dev/null.

    Raises:
        GuardianLaunchError: with the guardian's own code and message (NOT_FOUND for a
            missing program or cwd, FORBIDDEN for a non-private directory, CONFLICT for a
            socket path in use, TIMEOUT, INTERNAL).
    """
    ensure_private_dir(os.path.dirname(os.path.abspath(spec.socket_path)))
    ensure_private_dir(spec.records_dir)
    body = wire.encode(spec)
    deadline = time.monotonic() + settings.guardian_start_timeout_seconds
    guardian = guardian_command() + ["--detach"]
    result = None
    systemd_run = _use_systemd()
    if systemd_run:
        scope = [systemd_run, "--user", "--scope", "--collect", "--quiet",
                 f"--unit=vigil-guardian-{spec.runtime_id}", "--"]
        result = _start(scope + guardian, body, stderr_path, deadline)
        if result is None:
            log.warning(
                "systemd-run could not start guardian %s in its own scope; falling back to a "
                "double fork (restarting vigild.service may then end it)", spec.runtime_id
            )
    if result is None:
        result = _start(guardian, body, stderr_path, deadline)
    if result is None:
        raise GuardianLaunchError(ErrorCode.INTERNAL, "the guardian exited without reporting readiness")
    if isinstance(result, wire.LaunchFailed):
        raise GuardianLaunchError(result.code, result.message, exit_code=result.exit_code)
    return result.identity
