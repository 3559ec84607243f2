"""`vigil attach`: a human at a live execution's terminal, as tmux/dtach attach does.

The local terminal goes to raw mode, the current screen is repainted, keystrokes are
relayed and output is shown live; window size changes follow (SIGWINCH). The detach key
(Ctrl-\\ by default, `--detach-key`) leaves the execution running. The daemon drops a viewer
that stops reading rather than letting it slow the child.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import termios
import tty

from vigil.protocol.api.terminal import (
    AttachDropped,
    AttachEvent,
    AttachExited,
    AttachOutput,
    AttachRepaint,
)
from vigil.protocol.errors import RemoteError

DEFAULT_DETACH = b"\x1c"  # Ctrl-\


def describe_key(key: bytes) -> str:
    """A control byte as people write it: b'\\x1c' → 'Ctrl-\\'."""
    return f"Ctrl-{chr(key[0] | 0x40)}" if len(key) == 1 and key[0] < 0x20 else repr(key)


def parse_detach_key(spec: str) -> bytes:
    """'C-\\\\' / 'Ctrl-]' / '^]' → the control byte."""
    s = spec.strip()
    for prefix in ("ctrl-", "c-", "^"):
        if s.lower().startswith(prefix):
            ch = s[len(prefix):]
            if len(ch) == 1 and (ch.isalpha() or ch in "[\\]^_@"):
                return bytes([ord(ch.upper()) & 0x1F])
    raise ValueError(f"detach key must look like Ctrl-\\ or ^], got {spec!r}")


def attach(scope, execution_id: str, detach_key: bytes = DEFAULT_DETACH,
           stdin_fd: int | None = None, stdout=None) -> str:
    """Run the attach loop; returns why it ended: 'detached', 'exited' or 'dropped'.

    Keystrokes are sent as `input` calls without waiting for each answer (typing must not
    stall on a round trip); the answers are collected as they arrive, and a refusal (the
    child stopped reading, the guardian did not answer) is shown on stderr, never dropped.
    """
    stdin_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
    stdout = stdout or sys.stdout.buffer
    client = scope.client
    is_tty = os.isatty(stdin_fd)
    rows, cols = _size(stdin_fd)
    result = client.call_typed("attach", scope.params(execution_id=execution_id, rows=rows, cols=cols))
    saved = termios.tcgetattr(stdin_fd) if is_tty else None
    resized = []
    unanswered: list[int] = []
    # select() is restarted after a signal handler runs (PEP 475), so SIGWINCH alone would
    # wait for the next key or output: a wakeup pipe in the select set makes it prompt.
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    old_wakeup = signal.set_wakeup_fd(wake_w)
    old_handler = signal.signal(signal.SIGWINCH, lambda *_: resized.append(1))

    def send(method: str, **params) -> None:
        unanswered.append(client.send(method, scope.params(execution_id=execution_id, **params)))

    def collect_answers() -> None:
        for request_id in list(unanswered):
            try:
                arrived, _ = client.poll_reply(request_id)
            except RemoteError as exc:
                arrived = True
                sys.stderr.write(f"\r\n[vigil: {exc.code}: {exc.message}]\r\n")
                sys.stderr.flush()
            if arrived:
                unanswered.remove(request_id)

    try:
        if is_tty:
            tty.setraw(stdin_fd)
        stdout.write(result.repaint.encode("utf-8", "surrogateescape"))
        stdout.flush()
        while True:
            if resized:
                resized.clear()
                r, c = _size(stdin_fd)
                send("resize", rows=r, cols=c)
            ready, _, _ = select.select([stdin_fd, client.fileno(), wake_r], [], [])
            if wake_r in ready:
                os.read(wake_r, 512)
                continue  # the SIGWINCH flag is handled at the top of the loop
            if stdin_fd in ready:
                data = os.read(stdin_fd, 4096)
                if not data:
                    return "detached"
                if detach_key in data:
                    before = data[: data.index(detach_key)]
                    if before:
                        send("input", data=before)
                    return "detached"
                send("input", data=data)
            if client.fileno() in ready:
                for event in client.pump_once(AttachEvent):
                    if isinstance(event, (AttachOutput, AttachRepaint)):
                        stdout.write(event.data)
                        stdout.flush()
                    elif isinstance(event, AttachExited):
                        return "exited"
                    elif isinstance(event, AttachDropped):
                        return "dropped"
                collect_answers()
    finally:
        signal.signal(signal.SIGWINCH, old_handler)
        signal.set_wakeup_fd(old_wakeup)
        os.close(wake_r)
        os.close(wake_w)
        if saved is not None:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)


def _size(fd: int) -> tuple[int | None, int | None]:
    try:
        size = os.get_terminal_size(fd)
        return size.lines, size.columns
    except OSError:
        return None, None
