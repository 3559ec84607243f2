"""The transcript recorder: what happens to threads and executions, as exchange events.

A **run** is a thread or an execution (`run_id` = its id). What is written where:

| happening | the run's own file | its parent's file |
|---|---|---|
| a thread opens (Initialize, new) | `run.started {kind: thread}` | (an execution, when the caller runs under one) `step.call_workflow.started` |
| an execution starts for a thread | `run.started {kind: execution}`, `step.started terminal` | the thread: `step.call_workflow.started {child_run_id}` |
| a persistent-shell command starts | `run.started` | the thread: `call_workflow.started`; the shell: `step.started command.N` with its `command` block |
| an execution ends | open steps completed, `run.completed` | `step.call_workflow.completed`; the shell: `step.completed command.N` with the exit code |
| a scoped call passes the dispatch seam | | the thread: `tool.call` / `tool.result`, router fidelity, `tool_id` = the call's `usage_call_id` |
| a native prompt is delivered | `step.started turn.N {kind: agent}`, `message.user` (router) | |
| the agent is back at its input | `step.completed turn.N` | |
| the agent's own log says something | `message.*`, `tool.*` (agent_emitted), turns as above | |

Every event of a child run carries `parent_run_id`. Disk first, then the archive builder
(`vigil.daemon.archive`: the events of agent turns become turn archives), then fan-out
(`fanout.py`). A transcript that cannot be written (a full disk) is logged once per run and
never fails the call or the execution it describes: the transcript is an observer.

Masking: the seed ships no masking by default (files are 0600; treat them as command logs);
`masker` is the opt-in hook point, a function from event to event applied before writing.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Protocol

import msgspec

from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord
from vigil.daemon.transcript.providers import AgentEvent, TurnEnded
from vigil.protocol.transcript import (
    ROUTER,
    CallWorkflowCompletedPayload,
    CallWorkflowStartedPayload,
    CommandBlock,
    ExchangeEvent,
    MessageUserPayload,
    RunCompletedPayload,
    RunStartedPayload,
    StepCompletedPayload,
    StepStartedPayload,
    TextBlock,
    ToolCallPayload,
    ToolResultBlock,
    ToolResultPayload,
    ToolUseBlock,
    timestamp_from_unix_ms,
)

from .fanout import FanOut
from .files import TranscriptFiles

log = logging.getLogger("vigild.transcript")

Masker = Callable[[ExchangeEvent], ExchangeEvent]


class EventObserver(Protocol):
    """What is handed every event once it is on disk (the archive builder, the UI
    projection), before the subscribers. It must never raise nor block: it is told, it does
    not decide."""

    def observe(self, event: ExchangeEvent) -> None: ...

_JSON = msgspec.json.Encoder()


def _outcome(rec: ExecutionRecord) -> dict[str, Any]:
    return {"status": rec.status, "exit_code": rec.exit_code, "signal": rec.signal}


class Recorder:
    def __init__(self, files: TranscriptFiles, fanout: FanOut, settings: Settings,
                 masker: Masker | None = None, archives: EventObserver | None = None,
                 observers: tuple[EventObserver, ...] = ()):
        self.files = files
        self.fanout = fanout
        self.settings = settings
        self.masker = masker
        self.observers = ((archives,) if archives is not None else ()) + observers
        self.written = 0
        self._failing: set[str] = set()
        self.closed = False

    # --- the one way in -------------------------------------------------------------------------

    def emit(self, run_id: str, type: str, payload: Any, *, path: str = "",
             parent_run_id: str | None = None, child_run_id: str | None = None
             ) -> ExchangeEvent | None:
        """Write one event to `run_id`'s file, then offer it to subscribers. Returns it, or
        None when the file cannot be written (logged once per run)."""
        if self.closed:
            return None
        now = time.time_ns() // 1_000_000

        def build(seq: int) -> ExchangeEvent:
            event = ExchangeEvent(
                seq=seq, run_id=run_id,
                parent_run_id=parent_run_id or run.state.parent_run_id, path=path,
                timestamp=timestamp_from_unix_ms(now), type=type, child_run_id=child_run_id,
                payload=payload)
            return self.masker(event) if self.masker is not None else event

        try:
            run = self.files.get(run_id)
            event = run.append(build)
        except OSError as exc:
            if run_id not in self._failing:
                self._failing.add(run_id)
                log.error("transcript of %s cannot be written: %s", run_id, exc)
            return None
        self._failing.discard(run_id)
        self.written += 1
        for observer in self.observers:
            observer.observe(event)
        self.fanout.publish(event)
        return event

    def state(self, run_id: str):
        """The run's file state (last seq, open steps, turns), opening it if needed."""
        return self.files.get(run_id).state

    def close(self) -> None:
        """Idempotent: files closed, subscribers ended."""
        if not self.closed:
            self.closed = True
            self.fanout.close()
            self.files.close()

    # --- threads --------------------------------------------------------------------------------

    def thread_opened(self, thread_id: str, workspace_root: str, name: str,
                      parent_run_id: str | None) -> None:
        """A new thread; `parent_run_id` is the execution it was opened from, if any."""
        self.emit(thread_id, "run.started",
                  RunStartedPayload(kind="thread", workspace_root=workspace_root, name=name or None),
                  parent_run_id=parent_run_id)
        if parent_run_id is not None:
            self.emit(parent_run_id, "step.call_workflow.started",
                      CallWorkflowStartedPayload(kind="thread"), child_run_id=thread_id)

    # --- executions -----------------------------------------------------------------------------

    def execution_started(self, rec: ExecutionRecord, shell_execution_id: str | None = None
                          ) -> None:
        eid, parent = rec.execution_id, rec.thread_id
        self.emit(eid, "run.started",
                  RunStartedPayload(kind="execution", command=rec.command, cwd=rec.cwd,
                                    name=rec.name), parent_run_id=parent)
        if rec.kind != "shell_command":
            self.emit(eid, "step.started", StepStartedPayload(kind="terminal"), path="terminal")
        self.emit(parent, "step.call_workflow.started",
                  CallWorkflowStartedPayload(kind="execution", command=rec.command),
                  child_run_id=eid)
        if rec.kind == "shell_command" and shell_execution_id is not None:
            self.emit(shell_execution_id, "step.started", StepStartedPayload(
                kind="command", blocks=[CommandBlock(command=rec.command, fidelity=ROUTER)]),
                path=f"command.{rec.generation}")

    def execution_ended(self, rec: ExecutionRecord, shell_execution_id: str | None = None
                        ) -> None:
        eid = rec.execution_id
        state = self.state(eid)
        if state.completed:
            self.files.release(eid)
            return  # already written (a restart re-settles nothing twice)
        for path, kind in list(state.open_steps.items()):
            self.emit(eid, "step.completed", StepCompletedPayload(kind=kind, status=rec.status),
                      path=path)
        self.emit(eid, "run.completed", RunCompletedPayload(
            status=rec.status, exit_code=rec.exit_code, signal=rec.signal,
            reason=rec.unknown_reason))
        self.files.release(eid)
        self.emit(rec.thread_id, "step.call_workflow.completed",
                  CallWorkflowCompletedPayload(**_outcome(rec)), child_run_id=eid)
        if rec.kind == "shell_command" and shell_execution_id is not None:
            self.emit(shell_execution_id, "step.completed", StepCompletedPayload(
                kind="command", status=rec.status,
                blocks=[CommandBlock(command=rec.command, fidelity=ROUTER,
                                     exit_code=rec.exit_code)]),
                path=f"command.{rec.generation}")

    # --- the dispatch seam ----------------------------------------------------------------------

    def tool_call(self, thread_id: str, call_id: str, method: str, params: Any) -> None:
        """The call's params as its tool input, verbatim (the scope pair included): encoded
        straight from the Struct, no intermediate copy."""
        self.emit(thread_id, "tool.call", ToolCallPayload(fidelity=ROUTER, blocks=[
            ToolUseBlock(tool_name=method, tool_id=call_id, tool_input=params, fidelity=ROUTER)]))

    def tool_result(self, thread_id: str, call_id: str, result: Any, *, error: bool) -> None:
        content = _JSON.encode(result).decode("utf-8", "replace")
        self.emit(thread_id, "tool.result", ToolResultPayload(fidelity=ROUTER, blocks=[
            ToolResultBlock(tool_id=call_id, tool_content=content, fidelity=ROUTER,
                            is_error=error)]))

    # --- agent turns ----------------------------------------------------------------------------

    def _open_turn(self, eid: str) -> str:
        state = self.state(eid)
        for path, kind in state.open_steps.items():
            if kind == "agent":
                return path
        path = f"turn.{state.turns + 1}"
        self.emit(eid, "step.started", StepStartedPayload(kind="agent"), path=path)
        return path

    def _close_turn(self, eid: str, status: str) -> None:
        state = self.state(eid)
        for path, kind in list(state.open_steps.items()):
            if kind == "agent":
                self.emit(eid, "step.completed", StepCompletedPayload(kind="agent", status=status),
                          path=path)

    def prompt_delivered(self, eid: str, text: str) -> None:
        """A native prompt reached the agent: a turn starts with the person's words."""
        path = self._open_turn(eid)
        self.emit(eid, "message.user", MessageUserPayload(
            fidelity=ROUTER, blocks=[TextBlock(text=text, fidelity=ROUTER)]), path=path)

    def state_reported(self, eid: str, state: str | None) -> None:
        """The recognizer's debounced state: back at the input ends the open turn."""
        if state in ("awaiting_input", "exited", "unknown") and eid in self.files._open:
            self._close_turn(eid, state)

    def agent_items(self, eid: str, items: list) -> None:
        """What the agent's own log said (providers/), in order."""
        for item in items:
            if isinstance(item, AgentEvent):
                payload = item.payload
                opens = (item.type == "message.user" and getattr(payload, "injected", None) is None)
                path = self._open_turn(eid) if opens or item.type != "message.user" else ""
                self.emit(eid, item.type, payload, path=path)
            elif isinstance(item, TurnEnded):
                self._close_turn(eid, item.reason)
