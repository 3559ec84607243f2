"""`subscribe` and `trace_snapshot`: the UI projection over the socket (seeds/002).

A subscriber sees the executions of its scope, or with `all_workspaces` those of every scope
of its principal. `trace_snapshot` validates the id, then looks the execution up under the
caller's principal and scope only: another's execution, one that does not exist and one the
projection no longer holds read alike (`not_found`), except that an execution of the
caller's own scope that the projection does not hold is answered from its record.
"""

from __future__ import annotations

import trio

from vigil.daemon.methods.execution import execution_id_param, scoped_record
from vigil.daemon.projection.hub import ProjectionHub, view_of
from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import ANSWERED, CallContext, Dispatcher
from vigil.daemon.settings import Settings
from vigil.daemon.store import Store
from vigil.protocol.api.projection import (
    SubscribeParams,
    SubscribeResult,
    TraceSnapshotParams,
    TraceSnapshotResult,
)
from vigil.protocol.errors import invalid_request


def install(dispatcher: Dispatcher, *, hub: ProjectionHub, store: Store,
            settings: Settings) -> None:
    @dispatcher.route("subscribe", authority=Need.OBSERVE)
    async def subscribe(ctx: CallContext, params: SubscribeParams):
        """Answer with the executions covered now, then push events until the caller goes
        (or the daemon stops). Subscribed before the answer is built: nothing between."""
        sub, executions = hub.subscribe(ctx.scope, ctx.principal, params.all_workspaces)
        conn = ctx.connection
        try:
            await ctx.send(conn.send_result(ctx.request_id, SubscribeResult(
                executions=executions, buffer_events=settings.projection_buffer_events,
                progress_interval_seconds=settings.projection_progress_seconds)))
            while True:
                try:
                    event = await sub.receive()
                except trio.EndOfChannel:
                    return ANSWERED
                await ctx.send(conn.send_event(event))
        finally:
            sub.close()

    @dispatcher.route("trace_snapshot", authority=Need.OBSERVE)
    async def trace_snapshot(ctx: CallContext, params: TraceSnapshotParams):
        eid = execution_id_param(params.execution_id)
        if params.after_seq < 0:
            raise invalid_request("after_seq must be 0 or more", "params.after_seq")
        held = hub.snapshot(ctx.scope, ctx.principal, params.all_workspaces, eid,
                            params.after_seq)
        if held is not None:
            view, events, truncated = held
            return TraceSnapshotResult(execution=view, events=events, truncated=truncated)
        record = await scoped_record(store, ctx, eid)  # only ever the caller's own scope
        # Not held (forgotten, or before this daemon started): its state; events not held.
        return TraceSnapshotResult(execution=view_of(record), events=[], truncated=True)
