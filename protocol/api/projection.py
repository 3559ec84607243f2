"""`subscribe` and `trace_snapshot`: the UI projection of executions (seeds/002, "The UI
trace projection").

The projection is the third view of an execution, beside its archive (`get_trace`) and the
model-context summary: a live stream of what happens, for a dashboard (`vigil top`). It is
transient — held in the daemon's memory, bounded, never written — and its events name an
execution, never carry its output (a progress event carries the last line, cut).

`subscribe` answers with the executions the caller may see now (`executions`), then pushes
`ProjectionEvent`s until the caller closes the connection:

* `EXECUTION_START` — an execution began;
* `EXECUTION_PROGRESS` — output activity (at most one per execution per
  `progress_interval_seconds`: the latest size and last line) or a change of state (at once);
* `NODE_COMPLETE` / `NODE_FAILED` — a step ended: a persistent shell's command (its exit
  code), an agent's turn (how it ended);
* `TOOL_CALL` / `TOOL_RESULT` — an agent reported a tool call or its result (from its own
  log: names, ids and statuses only);
* `EXECUTION_COMPLETE` (exit 0) / `EXECUTION_FAILED` (another exit, or an unknown
  outcome) / `EXECUTION_CANCELLED` (`cancel` asked for it, or ended by SIGINT, SIGTERM, SIGKILL or SIGHUP);
* `DROPPED` — the subscriber's buffer (`buffer_events`, 256) was full: that many newer
  events were dropped for it (never for others, never blocking the daemon). It comes before
  the next event delivered; `trace_snapshot` fills the gap.

Every event of one execution has a `seq` (1, 2, … per execution, daemon lifetime), so a
client that reconnects, or that was told of drops, calls `trace_snapshot {execution_id,
after_seq}` and merges: the snapshot holds the execution's current state and its recent
events (at most `snapshot_events`; `truncated` when older ones after `after_seq` are no longer
held). Its ownership is checked before any lookup: another scope's execution reads exactly
like one that does not exist.
"""

from __future__ import annotations

from typing import Literal, Union

import msgspec

from .scope import Scoped

__all__ = [
    "DroppedEvent", "ExecutionCancelled", "ExecutionComplete", "ExecutionEvent", "ExecutionFailed",
    "ExecutionProgress", "ExecutionStart", "NodeComplete", "NodeFailed", "PROJECTION_KINDS",
    "ProjectionEvent", "ProjectionExecution", "SubscribeParams", "SubscribeResult",
    "ToolCallEvent", "ToolResultEvent", "TraceSnapshotParams", "TraceSnapshotResult",
]


class ProjectionExecution(msgspec.Struct, kw_only=True):
    """One execution as the projection folds it from its events: what a dashboard row shows.

    Args:
        seq: the execution's latest event (`ProjectionEvent.seq`); 0 before any.
        status / recognized_state: the record's (`running`, `exited`, `unknown`) and the
            recognizer's (`busy`, `awaiting_input`, `awaiting_approval`, …) state.
        outcome: once ended, `complete`, `failed` or `cancelled` (as the terminal event).
        last_line: the last non-empty line of output seen, escape sequences removed, at most
            200 characters.
        pid: the command's process id (for CPU figures read from /proc), null when unknown.
    """

    execution_id: str
    workspace_root: str
    command: str
    kind: str
    started_unix_ms: int
    status: str
    seq: int = 0
    recognized_state: str | None = None
    ended_unix_ms: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    outcome: Literal["complete", "failed", "cancelled"] | None = None
    output_bytes: int = 0
    last_line: str = ""
    pid: int | None = None


class _Event(msgspec.Struct, kw_only=True, tag_field="kind"):
    """Base of the pushed events: which execution, its event number, when (unix ms)."""

    execution_id: str
    seq: int
    at_unix_ms: int


class ExecutionStart(_Event, tag="EXECUTION_START"):
    execution: ProjectionExecution


class ExecutionProgress(_Event, tag="EXECUTION_PROGRESS"):
    """`reason` `output`: new output (size, last line); `state`: status or recognized state
    changed."""

    reason: Literal["output", "state"]
    status: str
    recognized_state: str | None = None
    output_bytes: int = 0
    last_line: str = ""


class _Node(_Event):
    """A step ended. `path` is the transcript's step path (`command.3`, `turn.2`), `node`
    its kind (`command`, `agent`), `status` how it ended."""

    path: str
    node: str
    status: str | None = None
    exit_code: int | None = None


class NodeComplete(_Node, tag="NODE_COMPLETE"):
    pass


class NodeFailed(_Node, tag="NODE_FAILED"):
    pass


class ToolCallEvent(_Event, tag="TOOL_CALL"):
    path: str
    tool_name: str
    tool_id: str


class ToolResultEvent(_Event, tag="TOOL_RESULT"):
    path: str
    tool_id: str
    is_error: bool | None = None


class _Terminal(_Event):
    status: str
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None


class ExecutionComplete(_Terminal, tag="EXECUTION_COMPLETE"):
    pass


class ExecutionFailed(_Terminal, tag="EXECUTION_FAILED"):
    pass


class ExecutionCancelled(_Terminal, tag="EXECUTION_CANCELLED"):
    pass


class DroppedEvent(msgspec.Struct, kw_only=True, tag_field="kind", tag="DROPPED"):
    """Events dropped for this subscriber since the last report (its buffer was full), and
    in all; the executions they were about are listed (at most 64) for `trace_snapshot`."""

    dropped: int
    dropped_total: int
    execution_ids: list[str] = []


#: An event about one execution (what `trace_snapshot` holds).
ExecutionEvent = Union[ExecutionStart, ExecutionProgress, NodeComplete, NodeFailed,
                       ToolCallEvent, ToolResultEvent, ExecutionComplete, ExecutionFailed,
                       ExecutionCancelled]
#: What `subscribe` pushes.
ProjectionEvent = Union[ExecutionEvent, DroppedEvent]

#: Every pushed event kind, in the order of the union.
PROJECTION_KINDS = tuple(t.__struct_config__.tag for t in ProjectionEvent.__args__)


class SubscribeParams(Scoped, kw_only=True):
    """Subscribe to the executions of this scope, or with `all_workspaces` of every scope of
    the caller's principal (`vigil top --all`)."""

    all_workspaces: bool = False


class SubscribeResult(msgspec.Struct, kw_only=True):
    """The executions the subscription covers now (running first, then the most recently
    ended, at most `snapshot_executions`), before any pushed event.

    Args:
        buffer_events: the subscriber's buffer; past it newer events are dropped (`DROPPED`).
        progress_interval_seconds: output progress comes at most this often per execution.
    """

    executions: list[ProjectionExecution]
    buffer_events: int
    progress_interval_seconds: float


class TraceSnapshotParams(Scoped, kw_only=True):
    """An execution's projection now, and its events with a greater `seq` than `after_seq`
    (0: all that are held). `all_workspaces` as in `subscribe`."""

    execution_id: str
    after_seq: int = 0
    all_workspaces: bool = False


class TraceSnapshotResult(msgspec.Struct, kw_only=True):
    """Args:
        events: the held events after `after_seq`, oldest first (at most the daemon's
            `projection_snapshot_events`).
        truncated: events after `after_seq` older than `events[0]` are no longer held (the
            state in `execution` is still current).
    """

    execution: ProjectionExecution
    events: list[ExecutionEvent]
    truncated: bool
