"""A client's copy of the UI projection (`subscribe`): one row per execution, folded from
the pushed events, with what a dashboard needs to stay truthful — which executions missed
events (a `DROPPED` report, a gap in an execution's `seq`, a reconnect) and so need a
`trace_snapshot` merged.

Plain data in (the protocol's Structs), no I/O: `vigil top` drives it, tests read it.
"""

from __future__ import annotations

import msgspec

from vigil.protocol.api.projection import (
    DroppedEvent,
    ExecutionCancelled,
    ExecutionComplete,
    ExecutionFailed,
    ExecutionProgress,
    ExecutionStart,
    NodeComplete,
    NodeFailed,
    ProjectionExecution,
    ToolCallEvent,
    ToolResultEvent,
    TraceSnapshotResult,
)

_OUTCOME = {ExecutionComplete: "complete", ExecutionFailed: "failed",
            ExecutionCancelled: "cancelled"}


class ProjectionView:
    """Rows by execution id. `stale`: executions whose events were (or may have been) missed,
    to be merged from `trace_snapshot`; `activity`: the latest step or tool event per
    execution, one line."""

    def __init__(self) -> None:
        self.rows: dict[str, ProjectionExecution] = {}
        self.activity: dict[str, str] = {}
        self.stale: set[str] = set()
        self.dropped_total = 0

    def reset(self, executions: list[ProjectionExecution]) -> None:
        """The `subscribe` answer: rows it names replace older knowledge of them."""
        for view in executions:
            row = self.rows.get(view.execution_id)
            if row is None or view.seq >= row.seq:
                self.rows[view.execution_id] = msgspec.structs.replace(view)

    def apply(self, event) -> str | None:
        """Fold one pushed event; the execution it changed, if any."""
        if isinstance(event, DroppedEvent):
            self.dropped_total = event.dropped_total
            self.stale.update(event.execution_ids or self.rows)  # ids cut at 64: all rows
            return None
        eid = event.execution_id
        row = self.rows.get(eid)
        if isinstance(event, ExecutionStart):
            if row is None or row.seq < event.seq:
                self.rows[eid] = row = msgspec.structs.replace(event.execution, seq=event.seq)
            return eid
        if row is None:
            self.stale.add(eid)  # started before we looked, and not in the answer
            return None
        if event.seq <= row.seq:
            return None  # already folded (a snapshot and the stream overlap)
        if event.seq > row.seq + 1:
            self.stale.add(eid)
        row.seq = event.seq
        if isinstance(event, ExecutionProgress):
            row.status, row.recognized_state = event.status, event.recognized_state
            row.output_bytes, row.last_line = event.output_bytes, event.last_line
        elif type(event) in _OUTCOME:
            row.status, row.exit_code, row.signal = event.status, event.exit_code, event.signal
            row.outcome = _OUTCOME[type(event)]
            row.ended_unix_ms = event.at_unix_ms
        elif isinstance(event, (NodeComplete, NodeFailed)):
            mark = "failed" if isinstance(event, NodeFailed) else "done"
            self.activity[eid] = f"{event.path} {mark}" + (
                f" ({event.exit_code})" if event.exit_code is not None else "")
        elif isinstance(event, ToolCallEvent):
            self.activity[eid] = f"tool {event.tool_name}"
        elif isinstance(event, ToolResultEvent):
            self.activity[eid] = "tool error" if event.is_error else "tool done"
        return eid

    def merge(self, snapshot: TraceSnapshotResult) -> str:
        """Fold a `trace_snapshot`: its events first (those not seen yet), then its state,
        which is current. The execution is no longer stale."""
        eid = snapshot.execution.execution_id
        row = self.rows.get(eid)
        if row is None:
            self.rows[eid] = row = msgspec.structs.replace(snapshot.execution, seq=0)
        for event in snapshot.events:
            if event.seq > row.seq:
                row.seq = event.seq - 1  # held events are contiguous from the first
                self.apply(event)
        if snapshot.execution.seq >= row.seq:
            self.rows[eid] = msgspec.structs.replace(snapshot.execution)
        self.stale.discard(eid)
        return eid


def state_text(row: ProjectionExecution) -> str:
    """What a person reads as the execution's state: the recognizer's while it runs, the
    outcome once it ended."""
    if row.outcome == "complete":
        return "exited 0"
    if row.outcome == "cancelled" or (row.outcome and row.signal is not None):
        return f"killed ({row.signal})" if row.signal is not None else "cancelled"
    if row.outcome == "failed":
        return f"failed {row.exit_code}" if row.exit_code is not None else f"failed ({row.status})"
    return row.recognized_state or row.status
