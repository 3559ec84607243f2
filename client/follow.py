"""Following an execution's output: `vigil run --wait`, `vigil logs [-f]`.

The daemon's `follow` stream delivers every byte as the guardian reads it, or an exact gap
(vigil.protocol.api.execution, FollowGap); this module writes the bytes to stdout —
exactly as written on a terminal or with `--raw`, as plain text (LF line ends, no control
sequences: plaintext.py) into a pipe or a file — and says every gap on stderr with its byte
count. Nothing here polls: it sleeps in select() on the daemon's socket.

While `run --wait` follows, Ctrl-C interrupts the *job*, as it would have had it run in the
foreground: SIGINT is forwarded to its process group and the CLI keeps waiting for its exit
status. Ctrl-\\ (SIGQUIT) detaches and says how to follow it again; the job runs on.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import BinaryIO

from vigil.protocol.api.execution import (
    ExecutionView,
    FollowEnd,
    FollowEvent,
    FollowGap,
    FollowOutput,
    FollowResult,
)
from vigil.protocol.errors import RemoteError

from . import output
from .plaintext import PlainText

#: How each gap reason reads on stderr.
GAP_REASONS = {
    "retention": "no longer retained",
    "ring": "lost in the guardian's ring while no daemon read it",
    "slow_reader": "dropped while this reader's output was stalled",
}


def gap_message(gap: FollowGap) -> str:
    n = gap.to_offset - gap.from_offset
    return (f"{n} bytes of output were lost ({GAP_REASONS.get(gap.reason, gap.reason)}; "
            f"bytes {gap.from_offset}-{gap.to_offset})")


class Sink:
    """Where output goes: stdout, as bytes; plain text unless it is a terminal or `raw`."""

    def __init__(self, raw: bool = False, stream: BinaryIO | None = None):
        self.stream = stream or sys.stdout.buffer
        terminal = os.isatty(self.stream.fileno()) if hasattr(self.stream, "fileno") else False
        self.plain = None if raw or terminal else PlainText()
        self.written = 0

    def write(self, data: bytes) -> None:
        if self.plain is not None:
            data = self.plain.feed(data)
        if data:
            self.stream.write(data)
            self.stream.flush()
            self.written += len(data)

    def close(self) -> None:
        if self.plain is not None:
            self.write_tail(self.plain.end())

    def write_tail(self, data: bytes) -> None:
        if data:
            self.stream.write(data)
            self.stream.flush()


class Detached(Exception):
    """The person pressed Ctrl-\\ while `run --wait` followed: the job runs on."""

    def __init__(self, execution_id: str):
        super().__init__(execution_id)
        self.execution_id = execution_id


def follow(scope, execution_id: str, sink: Sink | None, *, until_now: bool = False
           ) -> ExecutionView:
    """Stream the output of `execution_id` from its start into `sink` (None: discard) until
    it ended (or, `until_now`, until what is retained now); returns its record then.

    Raises:
        RemoteError, DaemonUnreachable: as any call.
    """
    _, final = stream(scope, "follow", {"execution_id": execution_id, "until_now": until_now},
                      sink)
    return final


def run_and_follow(scope, params: dict, sink: Sink | None) -> tuple[ExecutionView, ExecutionView]:
    """`run` with `follow`: start the command and stream its output from the first byte
    into `sink` until it ended. Returns (the execution as started, its final record).

    Ctrl-C (SIGINT) is sent on to the job's process group instead of ending us; Ctrl-\\
    (SIGQUIT) raises `Detached` (the job runs on).

    Raises:
        Detached, RemoteError, DaemonUnreachable.
    """
    answer, final = stream(scope, "run", dict(params, follow=True), sink, forward_interrupt=True)
    return answer.execution, final


def stream(scope, method: str, params: dict, sink: Sink | None, *,
           forward_interrupt: bool = False):
    """Call `method` (which answers, then streams `FollowEvent`s) and write the stream into
    `sink`; returns (its answer, the execution's record at the end of the stream)."""
    client = scope.client
    flags: list[int] = []
    wake_r = wake_w = None
    saved: dict[int, object] = {}
    old_wakeup = None
    if forward_interrupt:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        for sig in (signal.SIGINT, signal.SIGQUIT):
            saved[sig] = signal.signal(sig, lambda signum, _frame: flags.append(signum))
    unanswered: list[int] = []
    try:
        answer = client.call_typed(method, scope.params(**params))
        execution_id = params.get("execution_id") or answer.execution.execution_id
        events = client.queued_events(FollowEvent)
        while True:
            for event in events:
                if isinstance(event, FollowOutput):
                    if sink is not None:
                        sink.write(event.data)
                elif isinstance(event, FollowGap):
                    output.note(gap_message(event))
                elif isinstance(event, FollowEnd):
                    if sink is not None:
                        sink.close()
                    return answer, event.execution
            if flags:
                for signum in flags:
                    if signum == signal.SIGQUIT:
                        raise Detached(execution_id)
                    unanswered.append(client.send("signal", scope.params(
                        execution_id=execution_id, signal="INT")))
                flags.clear()
            _collect(client, unanswered)
            watch = [client.fileno()] + ([wake_r] if wake_r is not None else [])
            ready, _, _ = select.select(watch, [], [])
            if wake_r is not None and wake_r in ready:
                os.read(wake_r, 512)
            events = client.pump_once(FollowEvent) if client.fileno() in ready else []
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if wake_r is not None:
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)


def _collect(client, unanswered: list[int]) -> None:
    """Answers to forwarded interrupts: a refusal is said, never dropped (one that came too
    late, the job having exited, is not news)."""
    for request_id in list(unanswered):
        try:
            arrived, _ = client.poll_reply(request_id)
        except RemoteError as exc:
            arrived = True
            if exc.code != "conflict":
                output.note(f"could not interrupt the job: {exc.code}: {exc.message}")
        if arrived:
            unanswered.remove(request_id)


__all__ = ["Detached", "FollowResult", "Sink", "follow", "gap_message", "run_and_follow"]
