"""Lifecycle controls of one execution (seeds/002, `POST /executions/:id/cancel|pause|
resume`): signals to its whole process group, each recorded on the execution and in its log.

- `pause`: SIGSTOP; the record says `paused` until `resume` (SIGCONT) or the end.
- `cancel`: the record is marked `cancelled` first (so the outcome that follows reads as
  cancelled, however the process ends), then SIGTERM — and SIGCONT, for a paused group
  cannot act on it while stopped — then SIGKILL if it has not ended after
  `cancel_grace_seconds`. Answered once the outcome is recorded.

They act on executions that own their runtime (a standalone run, a persistent shell); a
command inside a shell shares the shell's process group, so it is refused with the reason:
BashCommand's Ctrl-C is the way to stop it. Misuse (already ended, paused twice, resume when
not paused) is `conflict` with the execution's status in `data`; nothing is sent then.
"""

from __future__ import annotations

import signal

import trio

from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord, Store
from vigil.protocol.errors import ErrorCode, VigilError

from .manager import RuntimeManager


def _conflict(rec: ExecutionRecord, message: str) -> VigilError:
    return VigilError(ErrorCode.CONFLICT, message,
                      {"execution_id": rec.execution_id, "status": rec.status,
                       "paused": rec.paused})


class Controls:
    def __init__(self, store: Store, runtimes: RuntimeManager, settings: Settings) -> None:
        self.store = store
        self.runtimes = runtimes
        self.settings = settings

    def _check_controllable(self, rec: ExecutionRecord, what: str) -> None:
        if rec.kind == "shell_command":
            raise _conflict(rec, f"cannot {what} a command of a persistent shell: it shares "
                                 "the shell's process group (BashCommand's Ctrl-C stops it)")
        if rec.status == "exited":
            raise _conflict(rec, f"cannot {what}: the execution has already exited")
        if rec.status == "unknown":
            raise _conflict(rec, f"cannot {what}: the execution's outcome is unknown")

    async def _record(self, rec: ExecutionRecord, **fields) -> ExecutionRecord:
        """Set `fields` on the record and return it once durable."""
        ingest = self.runtimes.ingest
        ingest.set_fields(rec.execution_id, **fields)
        await ingest.durable()
        return await trio.to_thread.run_sync(self.store.get, rec.scope, rec.execution_id) or rec

    async def _send(self, rec: ExecutionRecord, signum: int, what: str) -> None:
        delivered, reason = await self.runtimes.signal(rec.execution_id, signum)
        if not delivered:
            raise _conflict(rec, f"cannot {what}: the process group is gone ({reason})")

    async def pause(self, rec: ExecutionRecord) -> ExecutionRecord:
        self._check_controllable(rec, "pause")
        if rec.paused:
            raise _conflict(rec, "the execution is already paused")
        await self._send(rec, signal.SIGSTOP, "pause")
        self.runtimes.events.add(rec.execution_id, "info", "paused",
                                 "paused: SIGSTOP sent to the process group")
        return await self._record(rec, paused=True)

    async def resume(self, rec: ExecutionRecord) -> ExecutionRecord:
        self._check_controllable(rec, "resume")
        if not rec.paused:
            raise _conflict(rec, "the execution is not paused")
        await self._send(rec, signal.SIGCONT, "resume")
        self.runtimes.events.add(rec.execution_id, "info", "resumed",
                                 "resumed: SIGCONT sent to the process group")
        return await self._record(rec, paused=False)

    async def cancel(self, rec: ExecutionRecord) -> tuple[ExecutionRecord, bool]:
        """(the record with its outcome, whether SIGKILL was needed)."""
        self._check_controllable(rec, "cancel")
        eid = rec.execution_id
        grace = self.settings.cancel_grace_seconds
        events = self.runtimes.events
        live = await self.runtimes.connected(eid)
        events.add(eid, "info", "cancel", f"cancel: SIGTERM to the process group, SIGKILL "
                   f"after {grace:g} s", grace_seconds=grace)
        rec = await self._record(rec, cancelled=True)
        await self._send(rec, signal.SIGTERM, "cancel")
        if rec.paused:
            await self._send(rec, signal.SIGCONT, "cancel")
        killed = False
        with trio.move_on_after(grace):
            await live.done.wait()
        if not live.done.is_set():
            killed = True
            events.add(eid, "warn", "cancel", f"still running {grace:g} s after SIGTERM: "
                       "SIGKILL to the process group")
            delivered, _reason = await self.runtimes.signal(eid, signal.SIGKILL)
            killed = delivered
            s = self.settings
            with trio.move_on_after(s.guardian_drain_grace_seconds
                                    + s.guardian_command_timeout_seconds):
                await live.done.wait()
        record = await trio.to_thread.run_sync(self.store.get, rec.scope, eid)
        return record or rec, killed
