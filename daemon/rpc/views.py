"""Records as clients see them: the store's `ExecutionRecord` → the protocol's
`ExecutionView`. One place, so every method shows an execution the same way."""

from __future__ import annotations

from vigil.daemon.store import ExecutionRecord
from vigil.protocol.api.execution import ExecutionView, OutputView, RuntimeView


def execution_view(rec: ExecutionRecord) -> ExecutionView:
    rt = rec.runtime
    return ExecutionView(
        execution_id=rec.execution_id,
        name=rec.name or "",
        kind=rec.kind,
        command=rec.command,
        argv=rec.argv,
        cwd=rec.cwd,
        status=rec.status,
        exit_code=rec.exit_code,
        signal=rec.signal,
        unknown_reason=rec.unknown_reason,
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
            pending=rec.output_pending,
            gaps=list(rec.gaps),
        ),
        recognized_state=rec.recognized_state,
    )


def recovery_of(rec: ExecutionRecord) -> dict:
    """Conversation-recovery advice for the launch (seeds/000, "Recover an explicitly
    selected conversation"): a pure function of the recorded argv (or command) and cwd, so
    computing it from the record is the same as recording it at launch. Never acted on."""
    import msgspec

    from vigil.daemon.agent.recovery import advise

    return msgspec.to_builtins(advise(rec.argv, None if rec.argv else rec.command, rec.cwd))
