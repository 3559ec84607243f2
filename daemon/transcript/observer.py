"""The transcript's view of the lifecycle seam: each lifecycle event an execution goes
through becomes what the recorder writes (runs, steps, call_workflow links), and a
recognizer naming an agent starts following that agent's own log.

A persistent-shell command runs on its shell's runtime, whose id is the shell execution's
id (a runtime is named after the execution that launched it): that is where its `command`
step is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vigil.daemon.runtime.lifecycle import LifecycleEvent

from .agents import AgentLogs
from .recorder import Recorder

if TYPE_CHECKING:
    from vigil.daemon.runtime.manager import RuntimeManager


class TranscriptObserver:
    def __init__(self, recorder: Recorder, agents: AgentLogs, runtimes: "RuntimeManager"):
        self.recorder = recorder
        self.agents = agents
        self.runtimes = runtimes

    def __call__(self, event: LifecycleEvent) -> None:
        rec = event.record
        if rec is None:
            return
        shell = rec.runtime.runtime_id if rec.kind == "shell_command" and rec.runtime else None
        if event.kind == "started":
            self.recorder.execution_started(rec, shell)
        elif event.kind == "exited" or (event.kind == "state" and rec.is_terminal):
            self.agents.state_reported(rec.execution_id, rec.recognized_state)
            self.recorder.execution_ended(rec, shell)
        elif event.kind == "state":
            live = self.runtimes.live.get(rec.execution_id)
            detection = live.recognition.last_detection if live and live.recognition else None
            if detection is not None:
                self.agents.consider(live, detection.recognizer)
            self.agents.state_reported(rec.execution_id, rec.recognized_state)
