"""`screen`, `input`, `resize`, `attach` and `recording`: an execution's terminal, directly."""

from __future__ import annotations

import trio

from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import ANSWERED, CallContext, Dispatcher
from vigil.daemon.runtime.live import Live, Viewer
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import Settings
from vigil.daemon.shell.manager import keys_to_bytes
from vigil.daemon.store import Store
from vigil.daemon.store.recording import read_recording_page
from vigil.daemon.telemetry.phases import phase
from vigil.protocol.api.terminal import (
    AttachDropped,
    AttachExited,
    AttachOutput,
    AttachParams,
    AttachRepaint,
    AttachResult,
    InputParams,
    InputResult,
    RecordingParams,
    RecordingResult,
    ResizeParams,
    ResizeResult,
    ScreenParams,
    ScreenResult,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request

from .execution import execution_id_param, scoped_record


async def screen_of(store: Store, runtimes: RuntimeManager, scope: str, record, *,
                    ansi: bool = False, history: int = 0) -> ScreenResult:
    """The screen of `record` as it is now (live, with up to `history` scrollback lines), or
    as it was last kept (ended)."""
    eid = record.execution_id
    live = runtimes.live.get(eid)
    if live is not None and live.screen is not None:
        with phase("runtime_inspection"):
            snap = live.screen.snapshot()
            # With history the rows follow the scrollback, so no repaint (it would clear).
            colours = live.screen.keeper.ansi(repaint=not history) if ansi else None
            lines = live.screen.keeper.scrollback_tail(history)
        return ScreenResult(
            execution_id=eid, text=snap.text, rows=snap.rows, cols=snap.cols,
            cursor=snap.cursor, fidelity=snap.fidelity, title=snap.title, live=True,
            revision=snap.revision, alt_screen=snap.alt_screen, ansi=colours,
            scrollback=[line.text for line in lines.lines],
            scrollback_ansi=[line.ansi or line.text for line in lines.lines] if ansi else None,
            scrollback_fast_forwarded=[i for i, line in enumerate(lines.lines) if line.fast_forwarded],
            scrollback_first=lines.first_number, scrollback_total=lines.total)
    with phase("catalog"):
        stored, (first, total, lines) = await trio.to_thread.run_sync(
            store.get_screen_and_scrollback, scope, eid, history)
    # An ended execution keeps its scrollback as plain text (store/scrollback.py).
    kept = dict(scrollback=[text for text, _ in lines],
                scrollback_ansi=[text for text, _ in lines] if ansi else None,
                scrollback_fast_forwarded=[i for i, (_, ff) in enumerate(lines) if ff],
                scrollback_first=first, scrollback_total=total)
    if stored is None:
        return ScreenResult(execution_id=eid, text="", rows=record.rows or 0,
                            cols=record.cols or 0, cursor=(0, 0), fidelity="exact",
                            title="", live=False, **kept)
    return ScreenResult(execution_id=eid, text=stored.text, rows=stored.rows,
                        cols=stored.cols, cursor=(stored.cursor_row, stored.cursor_col),
                        fidelity=stored.fidelity, title=stored.title or "", live=False,
                        revision=stored.snapshot, **kept)


def install(dispatcher: Dispatcher, *, store: Store, runtimes: RuntimeManager,
            settings: Settings) -> None:
    async def running(ctx: CallContext, execution_id: str) -> tuple[str, Live]:
        record = await scoped_record(store, ctx, execution_id)
        return record.execution_id, await runtimes.connected(record.execution_id)

    @dispatcher.route("screen", authority=Need.OBSERVE)
    async def screen(ctx: CallContext, params: ScreenParams) -> ScreenResult:
        if not 0 <= params.history <= settings.screen_history_lines_max:
            raise invalid_request(f"history must be between 0 and {settings.screen_history_lines_max}, "
                                  f"got {params.history}", "params.history")
        record = await scoped_record(store, ctx, params.execution_id)
        return await screen_of(store, runtimes, ctx.scope, record, ansi=params.ansi,
                               history=params.history)

    @dispatcher.route("input", authority=Need.INPUT)
    async def input_(ctx: CallContext, params: InputParams) -> InputResult:
        eid, live = await running(ctx, params.execution_id)
        if params.generation is not None and params.generation != live.record.generation:
            raise VigilError(ErrorCode.STALE_GENERATION,
                             f"generation {params.generation} is stale; the execution is at "
                             f"generation {live.record.generation}",
                             {"generation": live.record.generation})
        data = (params.text.encode("utf-8", "surrogateescape")
                + keys_to_bytes(params.keys, "params.keys") + params.data)
        if not data:
            raise invalid_request("nothing to send", "params.text")
        if len(data) > settings.bash_text_max_bytes:
            raise invalid_request(f"input must be at most {settings.bash_text_max_bytes} bytes",
                                  "params.text")
        outcome = await runtimes.send_input(eid, data)
        return InputResult(execution_id=eid, bytes_sent=outcome.accepted,
                           confirmed=outcome.confirmed)

    @dispatcher.route("resize", authority=Need.RUN)
    async def resize(ctx: CallContext, params: ResizeParams) -> ResizeResult:
        eid, live = await running(ctx, params.execution_id)
        await runtimes.resize(eid, params.rows, params.cols)
        return ResizeResult(execution_id=eid, rows=params.rows, cols=params.cols)

    @dispatcher.route("recording", authority=Need.OBSERVE)
    async def recording(ctx: CallContext, params: RecordingParams) -> RecordingResult:
        eid = execution_id_param(params.execution_id)
        with phase("catalog"):
            return await trio.to_thread.run_sync(
                read_recording_page, store, ctx.scope, eid, params.offset, params.page_bytes)

    @dispatcher.route("attach", authority=Need.OBSERVE)
    async def attach(ctx: CallContext, params: AttachParams):
        eid, live = await running(ctx, params.execution_id)
        if params.rows is not None and params.cols is not None:
            await runtimes.resize(eid, params.rows, params.cols)
        keeper = live.screen.keeper
        # Parse everything already received before taking the repaint: no await between this
        # and registering the viewer, so no byte is in neither the repaint nor the stream.
        keeper.catch_up()
        repaint = keeper.ansi()
        viewer = Viewer(settings.viewer_buffer_bytes)
        live.viewers.add(viewer)
        conn = ctx.connection
        try:
            snap = keeper.snapshot()
            await ctx.send(conn.send_result(ctx.request_id, AttachResult(
                execution_id=eid, repaint=repaint, rows=snap.rows, cols=snap.cols)))
            while True:
                data = await viewer.get()
                if viewer.repaint:
                    # Everything queued was dropped with the flag; the keeper has been fed
                    # every byte up to now, so its screen is exactly what follows joins to.
                    viewer.repaint = False
                    viewer.clear()
                    keeper.catch_up()
                    await ctx.send(conn.send_event(AttachRepaint(
                        execution_id=eid, data=keeper.ansi().encode("utf-8", "surrogateescape"))))
                    continue
                if data is None:
                    ended = AttachDropped if viewer.closed == "dropped" else AttachExited
                    await ctx.send(conn.send_event(ended(execution_id=eid)))
                    return ANSWERED
                await ctx.send(conn.send_event(AttachOutput(execution_id=eid, data=data)))
        finally:
            live.viewers.discard(viewer)
