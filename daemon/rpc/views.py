"""Records as clients see them: the store's `ExecutionRecord` → the protocol's views. One
place, so every method shows an execution the same way.

A view is bounded whatever the record holds: the command text and argv are cut to a budget
(`view_list_command_bytes` in listings, `view_get_command_bytes` in `get`) and marked, so no
retained record can push a listing past the frame limit (an argv of 840 KB made `vigil ls`
fail for good before).
"""

from __future__ import annotations

from vigil.daemon.agent.recovery import advise
from vigil.daemon.store import ExecutionRecord
from vigil.protocol.api.execution import (
    CompactExecution,
    ExecutionView,
    OutputView,
    RecoveryAdvice,
    RuntimeView,
)


def _cut(text: str, budget: int) -> tuple[str, int]:
    """`text` cut to at most `budget` UTF-8 bytes at a character boundary; (text, bytes used)."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= budget:
        return text, len(raw)
    cut = raw[:budget].decode("utf-8", "ignore")
    return cut, len(cut.encode("utf-8", "surrogateescape"))


def bounded_command(command: str, argv: list[str] | None, budget: int
                    ) -> tuple[str, list[str] | None, bool, bool]:
    """(command, argv, command_truncated, argv_truncated), each within `budget` bytes: the
    command text cut at a character boundary; argv keeps whole leading words and cuts the
    first one that does not fit."""
    shown, _ = _cut(command, budget)
    command_cut = shown != command
    if argv is None:
        return shown, None, command_cut, False
    kept: list[str] = []
    left = budget
    for word in argv:
        part, used = _cut(word, left)
        if part != word:
            kept.append(part)
            return shown, kept, command_cut, True
        kept.append(word)
        left -= used
    return shown, kept, command_cut, False


def execution_view(rec: ExecutionRecord, *, command_bytes: int, pending: bool) -> ExecutionView:
    """The view of `rec`. `pending`: the daemon knows of output not yet persisted (see
    `OutputView.pending`); it is runtime state, so the caller supplies it."""
    rt = rec.runtime
    command, argv, command_cut, argv_cut = bounded_command(rec.command, rec.argv, command_bytes)
    return ExecutionView(
        execution_id=rec.execution_id,
        name=rec.name or "",
        kind=rec.kind,
        command=command,
        argv=argv,
        cwd=rec.cwd,
        status=rec.status,
        exit_code=rec.exit_code,
        signal=rec.signal,
        unknown_reason=rec.unknown_reason,
        start_error=rec.start_error,
        started_unix_ms=rec.started_unix_ms,
        ended_unix_ms=rec.ended_unix_ms,
        observed_at_unix_ms=rec.observed_at_unix_ms,
        generation=rec.generation,
        rows=rec.rows or 0,
        cols=rec.cols or 0,
        runtime=None if rt is None else RuntimeView(
            runtime_id=rt.runtime_id, boot_id=rt.boot_id, guardian_pid=rt.guardian_pid,
            guardian_start_ticks=rt.guardian_start_ticks, child_pid=rt.child_pid),
        output=OutputView(
            total_bytes=rec.output_total_bytes,
            retained_start=rec.output_retained_start,
            retained_bytes=rec.output_stored_bytes,
            dropped_bytes=rec.output_dropped_bytes,
            activity_seq=rec.output_activity_seq,
            pending=pending,
            gaps=list(rec.gaps),
        ),
        recognized_state=rec.recognized_state,
        command_truncated=command_cut,
        argv_truncated=argv_cut,
    )


def compact_view(rec: ExecutionRecord, *, pending: bool) -> CompactExecution:
    return CompactExecution(
        execution_id=rec.execution_id, status=rec.status, exit_code=rec.exit_code,
        signal=rec.signal, recognized_state=rec.recognized_state, generation=rec.generation,
        observed_at_unix_ms=rec.observed_at_unix_ms, output_pending=pending,
        output_total_bytes=rec.output_total_bytes)


def recovery_of(rec: ExecutionRecord) -> RecoveryAdvice:
    """Conversation-recovery advice for the launch (seeds/000, "Recover an explicitly
    selected conversation"): a pure function of the recorded argv (or command) and cwd, so
    computing it from the record is the same as recording it at launch. Never acted on."""
    return advise(rec.argv, None if rec.argv else rec.command, rec.cwd)
