"""`ping` and `status`: the daemon describing itself."""

from __future__ import annotations

import os
import time

import trio

from vigil.daemon.process.state import DaemonState
from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import CallContext, Dispatcher
from vigil.daemon.runtime.ingest import Ingest
from vigil.daemon.transcript.recorder import Recorder
from vigil.protocol.api.daemon import (
    PingParams,
    PingResult,
    StatusParams,
    StatusResult,
    StoreHealth,
    TranscriptStats,
)
from vigil.protocol.version import VERSION


def count_tasks() -> int:
    """Live trio tasks, walked from the root: a leak shows up as a number that only grows."""
    count = 0
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def count_fds() -> int:
    return len(os.listdir("/proc/self/fd")) - 1  # minus the fd listdir itself holds open


def install(dispatcher: Dispatcher, *, state: DaemonState, ingest: Ingest,
            transcripts: Recorder | None = None) -> None:
    def transcript_stats() -> TranscriptStats | None:
        if transcripts is None:
            return None
        fan = transcripts.fanout.stats()
        return TranscriptStats(written=transcripts.written, subscribers=fan.subscribers,
                               delivered=fan.delivered, dropped=fan.dropped)

    @dispatcher.route("ping", authority=Need.UNSCOPED, inline=True)
    async def ping(ctx: CallContext, params: PingParams) -> PingResult:
        return PingResult(payload=params.payload)

    @dispatcher.route("status", authority=Need.UNSCOPED, inline=True)
    async def status(ctx: CallContext, params: StatusParams) -> StatusResult:
        health = ingest.health
        return StatusResult(
            version=VERSION,
            protocol=ctx.connection.protocol,
            pid=os.getpid(),
            daemon_epoch=state.epoch,
            socket=str(state.socket_path),
            state_dir=str(state.state_dir),
            uptime_seconds=round(time.monotonic() - state.started_monotonic, 3),
            connections=state.connections,
            socket_activated=state.socket_activated,
            open_fds=count_fds(),
            tasks=count_tasks(),
            store=StoreHealth(ok=health.ok, failing_since_unix_ms=health.failing_since_unix_ms,
                              last_error=health.last_error, failed_commits=health.failed_rounds),
            transcripts=transcript_stats(),
        )
