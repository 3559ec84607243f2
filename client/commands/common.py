"""What the command modules share: the flag every command takes, opening the CLI's scope,
naming an execution by id or prefix, and how an execution's state reads."""

from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any

from ..output import UsageError

ID_HELP = "execution id, or a unique prefix of one (as `vigil ls` shows it)"
RAW_HELP = ("write the output exactly as the program wrote it (CR LF line ends, colours and "
            "cursor moves); by default a pipe or a file gets plain text with LF line ends")
SIZE_HELP = ("terminal size the program sees, e.g. 40x120 (default: this terminal's size "
             "when stdout is one, else 50x200)")


def json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help='print machine-readable JSON; errors too, as '
                             '{"error": {"code": ..., "message": ...}}, with the same exit codes')


def open_scope(args: argparse.Namespace):
    """(client, scope): a connection (starting the daemon unless --no-autostart) and the
    CLI's thread in the chosen workspace."""
    from ..autostart import connect
    from ..scope import Scope

    client = connect(autostart=not args.no_autostart)
    try:
        return client, Scope(client, args.workspace)
    except BaseException:
        client.close()
        raise


def execution_action(args: argparse.Namespace, action: dict[str, Any]) -> Any:
    """The `data` of one `Execution` action on the execution named in `args.id`."""
    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        return scope.execution({**action, "execution_id": eid}).data


def call_on(args: argparse.Namespace, method: str, **params: Any) -> Any:
    """Call `method` on the execution named (by id or unique prefix) in `args.id`."""
    client, scope = open_scope(args)
    with client:
        return scope.call(method, execution_id=scope.resolve(args.id), **params)


# --- how an execution reads ----------------------------------------------------------------


def exit_status(execution) -> int:
    """The shell convention: the exit code, or 128+N for signal N; unknown is a failure."""
    if execution.status == "exited":
        if execution.signal is not None:
            return 128 + execution.signal
        return execution.exit_code if execution.exit_code is not None else 1
    return 1


def signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def fmt_status(e) -> str:
    if e.status == "exited":
        if e.signal is not None:
            return f"killed ({signal_name(e.signal)})"
        if getattr(e, "start_error", None):
            return f"not started ({e.exit_code})"
        return f"exited {e.exit_code}"
    if e.status == "unknown":
        return "unknown"
    return f"running ({e.recognized_state})" if e.recognized_state else "running"


def status_colour(e) -> str | None:
    """vigil's colour for a state (ls): what needs a look stands out."""
    if e.status == "exited":
        return "green" if e.exit_code == 0 and e.signal is None else "red"
    if e.status == "unknown":
        return "magenta"
    if e.recognized_state in ("awaiting_input", "awaiting_approval"):
        return "yellow"
    return "cyan"


def fmt_age(ms: int | None) -> str:
    if not ms:
        return "-"
    secs = max(0, time.time() - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit} ago"
    return f"{int(secs)}s ago"


# --- terminal sizes ------------------------------------------------------------------------

_SIZE = re.compile(r"^(\d+)x(\d+)$")


def parse_size(text: str) -> tuple[int, int]:
    """'ROWSxCOLS' → (rows, cols), each 2..1000 (the protocol's terminal limits)."""
    from vigil.protocol.settings import TERMINAL_SIZE_MAX, TERMINAL_SIZE_MIN

    m = _SIZE.match(text.strip().lower())
    if not m:
        raise UsageError(f"--size expects ROWSxCOLS such as 40x120, got {text!r}")
    rows, cols = int(m[1]), int(m[2])
    for what, n in (("rows", rows), ("columns", cols)):
        if not TERMINAL_SIZE_MIN <= n <= TERMINAL_SIZE_MAX:
            raise UsageError(f"--size: {what} must be from {TERMINAL_SIZE_MIN} to "
                             f"{TERMINAL_SIZE_MAX}, got {n}")
    return rows, cols


def caller_size(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """The size a program started for this caller gets: `--size`, else the size of the
    terminal stdout is (when it is one), else (None, None): the daemon's default."""
    if getattr(args, "size", None):
        return parse_size(args.size)
    try:
        size = os.get_terminal_size(1)
    except OSError:
        return None, None
    from vigil.protocol.settings import TERMINAL_SIZE_MAX, TERMINAL_SIZE_MIN

    clamp = lambda n: min(max(n, TERMINAL_SIZE_MIN), TERMINAL_SIZE_MAX)  # noqa: E731
    return clamp(size.lines), clamp(size.columns)
