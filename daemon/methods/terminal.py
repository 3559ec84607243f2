"""`input`, `resize` and `attach`: talking to an execution's terminal directly."""

from __future__ import annotations

from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.api.execution import (
    AttachParams,
    AttachResult,
    InputParams,
    InputResult,
    ResizeParams,
    ResizeResult,
)
from vigil.daemon.settings import Settings

from ..rpc.dispatch import ANSWERED, CallContext, Dispatcher
from ..runtime.manager import RuntimeManager, Viewer
from ..rpc.scopes import Scopes
from ..shell.manager import special_key
from .execution import _execution_id

import trio

from vigil.daemon.store import ExecutionNotFound, Store


def install(dispatcher: Dispatcher, *, scopes: Scopes, store: Store, runtimes: RuntimeManager,
            settings: Settings) -> None:
    async def running(params, field="params.execution_id"):
        thread = scopes.check(params.thread_id, params.workspace_root)
        eid = _execution_id(params.execution_id, field)
        record = await trio.to_thread.run_sync(store.get, thread.scope, eid)
        if record is None:
            raise ExecutionNotFound()
        return eid, await runtimes.connected(eid)

    def dimensions(rows: int, cols: int) -> None:
        if not (2 <= rows <= 1000 and 2 <= cols <= 1000):
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"rows and cols must be between 2 and 1000, got {rows}x{cols}",
                             {"field": "params.rows"})

    @dispatcher.route("input")
    async def input_(ctx: CallContext, params: InputParams) -> InputResult:
        eid, live = await running(params)
        if params.generation is not None and params.generation != live.record.generation:
            raise VigilError(ErrorCode.STALE_GENERATION,
                             f"generation {params.generation} is stale; the execution is at "
                             f"generation {live.record.generation}",
                             {"generation": live.record.generation})
        data = params.text.encode("utf-8", "surrogateescape") + \
            b"".join(special_key(k) for k in params.keys) + params.data
        if not data:
            raise VigilError(ErrorCode.INVALID_REQUEST, "nothing to send", {"field": "params.text"})
        if len(data) > settings.bash_text_max_bytes:
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"input must be at most {settings.bash_text_max_bytes} bytes",
                             {"field": "params.text"})
        await runtimes.send_input(eid, data)
        return InputResult(execution_id=eid, bytes_sent=len(data))

    @dispatcher.route("resize")
    async def resize(ctx: CallContext, params: ResizeParams) -> ResizeResult:
        dimensions(params.rows, params.cols)
        eid, live = await running(params)
        await runtimes.resize(eid, params.rows, params.cols)
        return ResizeResult(execution_id=eid, rows=params.rows, cols=params.cols)

    @dispatcher.route("attach")
    async def attach(ctx: CallContext, params: AttachParams):
        eid, live = await running(params)
        if params.rows is not None and params.cols is not None:
            dimensions(params.rows, params.cols)
            await runtimes.resize(eid, params.rows, params.cols)
        keeper = live.screen.keeper
        # Parse everything already received before taking the repaint: no await between this
        # and registering the viewer, so no byte is in neither the repaint nor the stream.
        while keeper.process(0.05):
            pass
        repaint = keeper.ansi()
        viewer = Viewer(settings.viewer_buffer_bytes)
        live.viewers.add(viewer)
        try:
            snap = keeper.snapshot()
            await ctx.send(ctx.connection.send_result(ctx.request_id, AttachResult(
                execution_id=eid, repaint=repaint, rows=snap.rows, cols=snap.cols)))
            while True:
                data = await viewer.get()
                if viewer.repaint:
                    # Everything queued was dropped with the flag; the keeper has been fed
                    # every byte up to now, so its screen is exactly what follows joins to.
                    viewer.repaint = False
                    viewer.chunks.clear()
                    viewer.size = 0
                    while keeper.process(0.05):
                        pass
                    await ctx.send(ctx.connection.send_event(
                        {"kind": "repaint", "execution_id": eid,
                         "data": keeper.ansi().encode("utf-8", "surrogateescape")}))
                    continue
                if data is None:
                    await ctx.send(ctx.connection.send_event(
                        {"kind": viewer.closed, "execution_id": eid}))
                    return ANSWERED
                await ctx.send(ctx.connection.send_event(
                    {"kind": "output", "execution_id": eid, "data": data}))
        finally:
            live.viewers.discard(viewer)
