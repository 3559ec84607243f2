"""The UI projection (seeds/002): executions as a dashboard sees them, folded from the
lifecycle seam and the transcript, pushed to bounded subscribers.

The hub is an observer of the lifecycle bus (started, output, state, exited) and a listener
of the transcript recorder (steps ending, an agent's tool calls). Both call it synchronously
on the daemon's thread, so it must never block or wait: it updates one execution's fold
(`ProjectionExecution`), numbers the event (`seq`, per execution), keeps it in that
execution's ring for `trace_snapshot`, and offers it to the subscribers that may see it.

Output is the only frequent input, so it is not an event by itself: an output batch marks
its execution dirty and keeps its last bytes; a task pushes one `EXECUTION_PROGRESS` per dirty
execution every `projection_progress_seconds` (a flood of 100 executions costs 100 events a
tick, whatever their byte rate). A state change or the end pushes the pending output first,
so a subscriber sees them in order.

Everything is bounded: each execution's ring (`projection_snapshot_events`), the ended
executions held (`projection_executions_kept`, least recently changed forgotten first), each
subscriber's buffer (`projection_buffer_events`, drop-newest: a slow dashboard loses its own
events, counted and told, never the daemon's time).
"""

from __future__ import annotations

import re
import signal as signals
import time
from collections import OrderedDict, deque
from typing import Any, Callable, Iterable

import msgspec
import trio

from vigil.daemon.runtime.lifecycle import LifecycleEvent
from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord
from vigil.protocol.api.projection import (
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
)
from vigil.protocol.transcript import CommandBlock, ExchangeEvent, ToolResultBlock, ToolUseBlock

from .subscriber import Subscriber

#: Signals that mean "stopped from outside" (a person, `vigil kill`, a supervisor): the
#: execution was cancelled, not failed by itself.
_CANCEL_SIGNALS = frozenset({signals.SIGINT, signals.SIGTERM, signals.SIGKILL, signals.SIGHUP})
_LINE_CHARS = 200
#: CSI, OSC (ended by BEL or ST), and two-byte escapes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _tail(output: list[tuple[int, bytes]], size: int) -> bytes:
    """The last `size` bytes of a batch's output (what the UI projection finds the last line
    in), without joining the whole batch; ingest hands the batch over as it committed it."""
    parts: list[bytes] = []
    need = size
    for _, data in reversed(output):
        parts.append(data[-need:])
        need -= len(parts[-1])
        if need <= 0:
            break
    return b"".join(reversed(parts))


def last_line(tail: bytes) -> str:
    """The last non-blank line of some output as a terminal would show it: escape sequences
    removed, a carriage return's overwrite applied (the text after the last CR wins where
    it is longer), at most 200 characters."""
    text = _ESCAPES.sub("", tail.decode("utf-8", "replace"))
    for line in reversed(text.split("\n")):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part):]
        shown = _CONTROLS.sub("", shown).strip()
        if shown:
            return shown[:_LINE_CHARS]
    return ""


class Held:
    """One execution's projection: its fold, its recent events, its pending output."""

    __slots__ = ("view", "scope", "principal", "events", "tail", "dirty", "ended")

    def __init__(self, view: ProjectionExecution, scope: str, principal: str, ring: int):
        self.view = view
        self.scope = scope
        self.principal = principal
        self.events: deque[Any] = deque(maxlen=ring)
        self.tail = b""
        self.dirty = False
        self.ended = False


def _view(rec: ExecutionRecord) -> ProjectionExecution:
    return ProjectionExecution(
        execution_id=rec.execution_id, workspace_root=rec.workspace_root, command=rec.command,
        kind=rec.kind, started_unix_ms=rec.started_unix_ms, status=rec.status,
        recognized_state=rec.recognized_state, output_bytes=rec.output_total_bytes,
        pid=rec.runtime.child_pid if rec.runtime else None)


def view_of(rec: ExecutionRecord) -> ProjectionExecution:
    """An execution's projection from its record alone (one the hub does not hold)."""
    view = _view(rec)
    if rec.is_terminal:
        _end(view, rec)
    return view


def _end(view: ProjectionExecution, rec: ExecutionRecord) -> type:
    """Fold the outcome into `view`; the terminal event's type."""
    view.status = rec.status
    view.recognized_state = rec.recognized_state
    view.ended_unix_ms = rec.ended_unix_ms
    view.exit_code = rec.exit_code
    view.signal = rec.signal
    if rec.cancelled:  # `vigil cancel` asked for it, however the program chose to end
        view.outcome = "cancelled"
        return ExecutionCancelled
    if rec.status == "exited" and rec.exit_code == 0 and rec.signal is None:
        view.outcome = "complete"
        return ExecutionComplete
    if rec.signal in _CANCEL_SIGNALS:
        view.outcome = "cancelled"
        return ExecutionCancelled
    view.outcome = "failed"
    return ExecutionFailed


class ProjectionHub:
    """Args:
        settings: the `projection_*` limits.
        principal_of: a thread id → its principal (None when the thread is unknown).
        live_records: the records of the executions the daemon is attached to now (ones
            recovered at start that have not spoken since are shown from these).
    """

    def __init__(self, settings: Settings, principal_of: Callable[[str], str | None],
                 live_records: Callable[[], Iterable[ExecutionRecord]] = tuple):
        self.settings = settings
        self._principal_of = principal_of
        self._live_records = live_records
        self._held: dict[str, Held] = {}
        #: The same, keyed by (principal, execution id): what readers look up, so that the
        #: caller's principal is part of the key and another's execution is never found.
        self._owned: dict[tuple[str, str], Held] = {}
        #: Ended executions, in the order they ended (the first ones are forgotten first).
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._dirty: list[Held] = []
        self._wake = trio.Event()
        self._by_scope: dict[str, set[Subscriber]] = {}
        self._by_principal: dict[str, set[Subscriber]] = {}
        self.subscribers = 0
        self.published = 0
        self.dropped = 0
        self.closed = False

    # --- inputs (synchronous, on the daemon's thread) ----------------------------------------

    def lifecycle(self, event: LifecycleEvent) -> None:
        """A lifecycle observer (wired in main.py)."""
        rec = event.record
        if rec is None or event.kind not in ("started", "output", "state", "exited"):
            return
        held = self._held.get(rec.execution_id) or self._hold(rec, event.at_unix_ms)
        if held is None or held.ended:
            return
        view = held.view
        if event.kind == "output":
            tail = _tail(event.data.get("output", ()), self.settings.projection_tail_bytes)
            held.tail = (held.tail + tail)[-self.settings.projection_tail_bytes:]
            view.output_bytes = rec.output_total_bytes
            if not held.dirty:
                held.dirty = True
                self._dirty.append(held)
                self._wake.set()
            return
        if rec.is_terminal:
            self._flush(held, event.at_unix_ms)
            kind = _end(view, rec)
            self._emit(held, kind(execution_id=rec.execution_id, seq=0, at_unix_ms=event.at_unix_ms,
                                  status=rec.status, exit_code=rec.exit_code, signal=rec.signal,
                                  reason=rec.unknown_reason))
            held.ended = True
            self._ended[rec.execution_id] = None
            self._forget_old()
            return
        if rec.runtime is not None and view.pid is None:
            view.pid = rec.runtime.child_pid
        if (rec.status, rec.recognized_state) != (view.status, view.recognized_state):
            self._flush(held, event.at_unix_ms)
            view.status, view.recognized_state = rec.status, rec.recognized_state
            self._emit(held, ExecutionProgress(
                execution_id=rec.execution_id, seq=0, at_unix_ms=event.at_unix_ms,
                reason="state", status=rec.status, recognized_state=rec.recognized_state,
                output_bytes=view.output_bytes, last_line=view.last_line))

    def observe(self, event: ExchangeEvent) -> None:
        """A transcript observer: steps ending and tool events of the executions held."""
        held = self._held.get(event.run_id)
        if held is None or held.ended:
            return
        p = event.payload
        at = _unix_ms()
        eid = event.run_id
        if event.type == "step.completed":
            node = getattr(p, "kind", None)
            if node not in ("command", "agent"):
                return  # the terminal step is the execution itself: its end is EXECUTION_*
            status = getattr(p, "status", None)
            code = next((b.exit_code for b in getattr(p, "blocks", ())
                         if isinstance(b, CommandBlock)), None)
            failed = (code not in (None, 0) or status in ("unknown", "interrupted")
                      or (node == "agent" and status == "exited"))
            kind = NodeFailed if failed else NodeComplete
            self._emit(held, kind(execution_id=eid, seq=0, at_unix_ms=at, path=event.path,
                                  node=node, status=status, exit_code=code))
        elif event.type in ("tool.call", "tool.result"):
            for b in getattr(p, "blocks", ()):
                if isinstance(b, ToolUseBlock):
                    self._emit(held, ToolCallEvent(execution_id=eid, seq=0, at_unix_ms=at,
                                                   path=event.path, tool_name=b.tool_name,
                                                   tool_id=b.tool_id))
                elif isinstance(b, ToolResultBlock):
                    self._emit(held, ToolResultEvent(execution_id=eid, seq=0, at_unix_ms=at,
                                                     path=event.path, tool_id=b.tool_id,
                                                     is_error=b.is_error))

    # --- the progress task -------------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Push the output progress of dirty executions, once per interval at most."""
        task_status.started()
        while not self.closed:
            await self._wake.wait()
            await trio.sleep(self.settings.projection_progress_seconds)  # the rate limit
            self._wake = trio.Event()
            dirty, self._dirty = self._dirty, []
            for held in dirty:
                self._flush(held, None)

    def _flush(self, held: Held, at_unix_ms: int | None) -> None:
        """Push the pending output progress of `held`, if any."""
        if not held.dirty:
            return
        held.dirty = False
        view = held.view
        view.last_line = last_line(held.tail) or view.last_line
        at = at_unix_ms if at_unix_ms is not None else _unix_ms()
        self._emit(held, ExecutionProgress(
            execution_id=view.execution_id, seq=0, at_unix_ms=at, reason="output",
            status=view.status, recognized_state=view.recognized_state,
            output_bytes=view.output_bytes, last_line=view.last_line))

    # --- holding executions ------------------------------------------------------------------

    def _hold(self, rec: ExecutionRecord, at_unix_ms: int) -> Held | None:
        principal = self._principal_of(rec.thread_id)
        if principal is None:
            return None
        held = self._held[rec.execution_id] = self._owned[principal, rec.execution_id] = Held(
            _view(rec), rec.scope, principal, self.settings.projection_snapshot_events)
        self._emit(held, ExecutionStart(execution_id=rec.execution_id, seq=0,
                                        at_unix_ms=at_unix_ms, execution=held.view))
        return held

    def _forget_old(self) -> None:
        while len(self._ended) > self.settings.projection_executions_kept:
            eid, _ = self._ended.popitem(last=False)
            held = self._held.pop(eid, None)
            if held is not None:
                self._owned.pop((held.principal, eid), None)

    def _emit(self, held: Held, event: Any) -> None:
        held.view.seq += 1
        event.seq = held.view.seq
        if isinstance(event, ExecutionStart):
            event.execution = _copy(held.view)
        held.events.append(event)
        self.published += 1
        for sub in self._by_scope.get(held.scope, ()):
            sub.offer(event)
        for sub in self._by_principal.get(held.principal, ()):
            sub.offer(event)

    # --- readers -----------------------------------------------------------------------------

    def visible(self, held: Held, scope: str, principal: str, all_workspaces: bool) -> bool:
        return held.principal == principal and (all_workspaces or held.scope == scope)

    def subscribe(self, scope: str, principal: str, all_workspaces: bool
                  ) -> tuple[Subscriber, list[ProjectionExecution]]:
        """A new subscriber, and the executions it covers now (running first, then the most
        recently ended; at most projection_executions_kept of each)."""
        for rec in self._live_records():
            if rec.execution_id not in self._held and not rec.is_terminal:
                self._hold(rec, rec.observed_at_unix_ms)
        sub = Subscriber(self, scope, principal, all_workspaces,
                         self.settings.projection_buffer_events)
        index = self._by_principal if all_workspaces else self._by_scope
        index.setdefault(principal if all_workspaces else scope, set()).add(sub)
        self.subscribers += 1
        if self.closed:
            sub.close()
        shown = [h for h in self._held.values() if self.visible(h, scope, principal, all_workspaces)]
        running = [_copy(h.view) for h in shown if not h.ended]
        ended = [_copy(h.view) for h in reversed(shown) if h.ended]
        limit = self.settings.projection_executions_kept
        return sub, running[:limit] + ended[:limit]

    def unsubscribe(self, sub: Subscriber) -> None:
        index = self._by_principal if sub.all_workspaces else self._by_scope
        key = sub.principal if sub.all_workspaces else sub.scope
        bucket = index.get(key)
        if bucket is not None and sub in bucket:
            bucket.discard(sub)
            self.subscribers -= 1
            if not bucket:
                del index[key]

    def snapshot(self, scope: str, principal: str, all_workspaces: bool, execution_id: str,
                 after_seq: int) -> tuple[ProjectionExecution, list[Any], bool] | None:
        """(execution, events after `after_seq`, truncated), or None when the caller may not
        see it or it is not held: both read alike."""
        held = self._owned.get((principal, execution_id))
        if held is None or not (all_workspaces or held.scope == scope):
            return None
        events = [e for e in held.events if e.seq > after_seq]
        first = events[0].seq if events else held.view.seq + 1
        truncated = first > after_seq + 1
        return _copy(held.view), events, truncated

    def close(self) -> None:
        """Idempotent: every subscriber ends."""
        if not self.closed:
            self.closed = True
            for index in (self._by_scope, self._by_principal):
                for bucket in list(index.values()):
                    for sub in list(bucket):
                        sub.close()
            self._wake.set()


def _copy(view: ProjectionExecution) -> ProjectionExecution:
    return msgspec.structs.replace(view)


def _unix_ms() -> int:
    return time.time_ns() // 1_000_000
