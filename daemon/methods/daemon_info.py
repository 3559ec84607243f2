"""`ping` and `status`: the daemon describing itself."""

from __future__ import annotations

import os
import time

import trio

from vigil.protocol.api.daemon import PingParams, PingResult, StatusParams, StatusResult
from vigil.protocol.version import PROTOCOL_MAX, VERSION

from ..rpc.dispatch import CallContext, Dispatcher
from ..process.state import DaemonState


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


def install(dispatcher: Dispatcher, state: DaemonState) -> None:
    @dispatcher.route("ping", inline=True)
    async def ping(ctx: CallContext, params: PingParams) -> PingResult:
        return PingResult(payload=params.payload)

    @dispatcher.route("status", inline=True)
    async def status(ctx: CallContext, params: StatusParams) -> StatusResult:
        return StatusResult(
            version=VERSION,
            protocol=PROTOCOL_MAX,
            pid=os.getpid(),
            daemon_epoch=state.epoch,
            socket=str(state.socket_path),
            state_dir=str(state.state_dir),
            uptime_seconds=round(time.monotonic() - state.started_monotonic, 3),
            connections=state.connections,
            socket_activated=state.socket_activated,
            open_fds=count_fds(),
            tasks=count_tasks(),
        )
