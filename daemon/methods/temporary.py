"""`Temporary`: the thread's managed helpers, listed or released (daemon/temporary/)."""

from __future__ import annotations

from vigil.daemon.rpc.authority import temporary_need
from vigil.daemon.rpc.dispatch import CallContext, Dispatcher
from vigil.daemon.temporary.service import TemporaryHelpers
from vigil.protocol.api.temporary import ListTemporary, TemporaryParams


def install(dispatcher: Dispatcher, *, helpers: TemporaryHelpers) -> None:
    @dispatcher.route("Temporary", authority=temporary_need)
    async def temporary(ctx: CallContext, params: TemporaryParams):
        action = params.action
        if isinstance(action, ListTemporary):
            return await helpers.listing(ctx.thread)
        return await helpers.release(ctx.thread, action.names, action.revision, ctx.peer.pid)
