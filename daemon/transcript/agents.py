"""Following the session logs of agents running under vigil (agent-emitted fidelity).

When an execution's recognizer is `claude` or `codex`, one task per execution finds the
agent's own session log (providers/discovery.py: the tool's directory for the execution's
cwd, files written since it started; two candidates that cannot be told apart are
*ambiguous*: neither is attached, and `explain` says so) and follows it while the execution
runs, handing what it normalizes to the recorder. Discovery is retried every
`transcript_agent_poll_seconds` (the tools create their log when the first prompt is saved)
for at most `transcript_discovery_seconds`; reading is wakened by the execution's output
activity (an agent writes its log as it works) and at least every poll interval. File
reads run in a worker thread; nothing here touches the ingest path.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import msgspec
import trio

from vigil.daemon.settings import Settings
from vigil.daemon.transcript.providers import Discovery, find_session_log, follow_log

from .recorder import Recorder

if TYPE_CHECKING:
    from vigil.daemon.runtime.live import Live
    from vigil.daemon.runtime.lifecycle import LifecycleBus

log = logging.getLogger("vigild.transcript")

PROVIDERS = ("claude", "codex")


class AgentLogStatus(msgspec.Struct, kw_only=True):
    """What `explain` says about an execution's agent log."""

    provider: str
    verdict: str  # searching | found | ambiguous | none
    path: str | None = None
    reasons: list[str] = []


class AgentLogs:
    def __init__(self, recorder: Recorder, bus: "LifecycleBus", settings: Settings):
        self.recorder = recorder
        self.bus = bus
        self.settings = settings
        self.status: dict[str, AgentLogStatus] = {}
        #: Executions whose log is being followed → the state reported since the last read
        #: (the follower task releases the held reply before the turn is closed).
        self._pending_state: dict[str, str | None] = {}
        self._wake: dict[str, trio.Event] = {}
        #: Executions whose log is still looked for → set when a state waits for a look.
        self._searching: dict[str, trio.Event] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def consider(self, live: "Live", provider: str) -> None:
        """A live execution whose recognizer is `provider`: follow its log (once)."""
        eid = live.record.execution_id
        if provider not in PROVIDERS or eid in self.status or self._nursery is None:
            return
        self.status[eid] = AgentLogStatus(provider=provider, verdict="searching")
        self._nursery.start_soon(self._follow, live, provider)

    def state_reported(self, eid: str, state: str | None) -> None:
        """The recognizer's debounced state. Back at the input ends the open turn — after
        the reply the agent's log holds is released, when its log is followed.

        While the log is still being looked for (an agent may create it only with its first
        reply, and reply within one poll), the state waits for one more look: found, the
        reply lands in the turn before it is closed; not found, the turn closes at once."""
        if eid in self._wake:
            self._pending_state[eid] = state
            self._wake[eid].set()
        elif eid in self._searching:
            self._pending_state[eid] = state
            self._searching[eid].set()
        else:
            self.recorder.state_reported(eid, state)

    async def _follow(self, live: "Live", provider: str) -> None:
        rec = live.record
        eid = rec.execution_id
        s = self.settings
        env = dict(os.environ)
        env.update(getattr(rec, "env", None) or {})
        found: Discovery | None = None
        self._searching[eid] = trio.Event()
        try:
            with trio.move_on_after(s.transcript_discovery_seconds):
                while not live.done.is_set():
                    found = await trio.to_thread.run_sync(lambda: find_session_log(
                        provider, cwd=rec.cwd, started_unix_ms=rec.started_unix_ms, env=env,
                        settings=s))
                    status = self.status[eid]
                    status.verdict, status.reasons = found.verdict, found.explain()
                    if found.verdict in ("found", "ambiguous"):
                        break
                    if eid in self._pending_state:
                        # Looked once more since the state came: no log yet, so the state
                        # goes on (the turn closes) and the search continues.
                        self.recorder.state_reported(eid, self._pending_state.pop(eid))
                    self._searching[eid] = wake = trio.Event()
                    with trio.move_on_after(s.transcript_agent_poll_seconds):
                        await wake.wait()
        finally:
            self._searching.pop(eid, None)
        if found is None or found.verdict != "found":
            if found is not None and found.verdict == "ambiguous":
                log.info("agent log of %s is ambiguous: none attached", eid)
            if eid in self._pending_state:
                self.recorder.state_reported(eid, self._pending_state.pop(eid))
            return
        self.status[eid].path = str(found.log.path)
        follower = follow_log(provider, found.log, settings=s)
        waiter = self.bus.register([eid])
        self._wake[eid] = waiter.event
        try:
            while True:
                waiter.event = self._wake[eid] = trio.Event()
                ended = live.done.is_set()
                await self._drain(eid, follower)
                if eid in self._pending_state:
                    state = self._pending_state.pop(eid)
                    if state in ("awaiting_input", "exited", "unknown"):
                        self.recorder.agent_items(eid, follower.release())
                    self.recorder.state_reported(eid, state)
                if ended:
                    break
                with trio.move_on_after(s.transcript_agent_poll_seconds):
                    await waiter.event.wait()
        finally:
            self.bus.unregister(waiter)
            self._wake.pop(eid, None)
            self._pending_state.pop(eid, None)
            with trio.CancelScope(shield=True):
                items = await trio.to_thread.run_sync(follower.close)
            self.recorder.agent_items(eid, items)

    async def _drain(self, eid: str, follower) -> None:
        while True:
            items = await trio.to_thread.run_sync(follower.poll)
            if items:
                self.recorder.agent_items(eid, items)
            if follower.caught_up:
                return
