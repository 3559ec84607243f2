"""Guardian entry point: `python -m vigil.daemon.guardian [--spec-fd N] [--ready-fd N] [--detach]`.

- `--spec-fd N` (default 0): read one msgpack `LaunchSpec` from fd N until EOF.
- `--ready-fd N`: write one framed `Ready{identity}` or `LaunchFailed{code, message}` there
  once the socket listens and the child runs (or cannot), then close it. The launcher blocks
  on this pipe instead of polling for the socket.
- `--detach`: fork once and let the parent exit at once. The launcher starts us as a session
  leader (start_new_session); our forked child is then in a session without a controlling
  terminal and is not its leader, so it can never acquire one, and it is re-parented away
  from the daemon: the classic double fork. Under `systemd-run --scope` the fork happens
  inside the transient scope, which outlives its first process.

The launcher runs it as `python -I -S boot.py …` (boot.py says why); `python -m
vigil.daemon.guardian` works too, for a person debugging. Imports here are the stdlib and
vigil.protocol.paths only (no msgspec, no trio, no Settings): startup time is part of every
command's latency, and an idle guardian's memory is multiplied by the executions running
(lite.py says what each import costs).
"""

from __future__ import annotations

import os
import sys

from . import litewire as wire
from .lite import encode_frame
from .server import Guardian, GuardianSetupError

USAGE = "usage: python -m vigil.daemon.guardian [--spec-fd N] [--ready-fd N] [--detach]"


def _parse(args: list[str]) -> tuple[int, int | None, bool]:
    spec_fd, ready_fd, detach = 0, None, False
    it = iter(args)
    for arg in it:
        if arg == "--detach":
            detach = True
        elif arg in ("--spec-fd", "--ready-fd"):
            value = next(it, None)
            if value is None or not value.isdigit():
                raise SystemExit(f"{arg} needs a file descriptor number\n{USAGE}")
            if arg == "--spec-fd":
                spec_fd = int(value)
            else:
                ready_fd = int(value)
        else:
            raise SystemExit(f"unknown argument {arg!r}\n{USAGE}")
    return spec_fd, ready_fd, detach


def _report(ready_fd: int | None, result) -> None:
    if ready_fd is None:
        if isinstance(result, wire.LaunchFailed):
            print(f"guardian: {result.code}: {result.message}", file=sys.stderr)
        return
    try:
        os.write(ready_fd, encode_frame(wire.encode(result)))
    except OSError:
        pass  # the launcher gave up waiting; nothing else to tell
    finally:
        os.close(ready_fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def main(args: list[str] | None = None) -> int:
    spec_fd, ready_fd, detach = _parse(sys.argv[1:] if args is None else args)
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)  # the child must not hold the launcher's pipe
    try:
        spec = wire.decode_launch_spec(_read_all(spec_fd))
    except wire.WireDecodeError as exc:
        _report(ready_fd, wire.LaunchFailed(code=exc.code, message=exc.message))
        return 2
    if detach and os.fork():
        os._exit(0)
    # stdin/stdout must not hold the launcher's pipes or terminal; stderr stays (a log).
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    if null > 2:
        os.close(null)
    if spec_fd > 2:
        os.close(spec_fd)

    guardian = Guardian(spec)
    try:
        identity = guardian.start()
    except GuardianSetupError as exc:
        _report(ready_fd, wire.LaunchFailed(code=exc.code, message=exc.message,
                                            exit_code=exc.exit_code))
        return 1
    except OSError as exc:
        _report(ready_fd, wire.LaunchFailed(code="internal", message=f"guardian setup: {exc}"))
        return 1
    _report(ready_fd, wire.Ready(identity=identity))
    return guardian.run()


if __name__ == "__main__":
    sys.exit(main())
