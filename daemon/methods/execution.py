"""`run`, `Execution` (list/get/read), `signal`, `resolve`."""

from __future__ import annotations

import os

import trio

from vigil.daemon.store import (
    ExecutionNotFound,
    Store,
    encode_catalog_cursor,
    parse_execution_id,
    read_output_page,
    read_screen_page,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.api.execution import (
    ExecutionParams,
    ExecutionResult,
    GetAction,
    ExplainAction,
    ListAction,
    ObserveAction,
    ReadAction,
    WaitAction,
    ResolveParams,
    ResolveResult,
    ScreenParams,
    ScreenResult,
    RunParams,
    RunResult,
    SignalParams,
    SignalResult,
)
from vigil.daemon.settings import Settings

from ..rpc.dispatch import CallContext, Dispatcher
from ..runtime.lifecycle import LifecycleBus
from ..runtime.manager import RuntimeManager, parse_signal
from ..rpc.scopes import Scopes
from ..rpc.views import execution_view, recovery_of


def _execution_id(value: str, field: str = "params.action.execution_id") -> str:
    try:
        return parse_execution_id(value)
    except VigilError as exc:
        raise invalid_request(exc.message, field) from None


def _dimension(value: int | None, field: str) -> int | None:
    if value is not None and not 2 <= value <= 1000:
        raise invalid_request(f"{field.rsplit('.', 1)[-1]} must be between 2 and 1000, got {value}", field)
    return value


def install(dispatcher: Dispatcher, *, scopes: Scopes, store: Store, runtimes: RuntimeManager,
            bus: LifecycleBus, settings: Settings, observer) -> None:
    async def in_thread(fn, *args):
        return await trio.to_thread.run_sync(fn, *args)

    @dispatcher.route("run")
    async def run(ctx: CallContext, params: RunParams) -> RunResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        if (params.argv is None) == (params.command is None):
            raise invalid_request("give exactly one of argv (a list) or command (a shell string)", "params.argv")
        if params.argv is not None:
            if not params.argv or not params.argv[0]:
                raise invalid_request("argv must name a program", "params.argv")
            argv, command = list(params.argv), " ".join(params.argv)
        else:
            if not params.command.strip():
                raise invalid_request("command is empty", "params.command")
            argv, command = ["/bin/sh", "-c", params.command], params.command
        if any("\0" in a for a in argv) or any("\0" in k + v or "=" in k for k, v in params.env.items()):
            raise invalid_request("argv and env must not contain NUL, and env names must not contain '='",
                       "params.env")
        cwd = params.cwd or thread.workspace_root
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise invalid_request(f"cwd {cwd!r} is not an existing absolute directory", "params.cwd")
        record = await runtimes.start(
            scope=thread.scope, thread_id=thread.thread_id, workspace_root=thread.workspace_root,
            argv=argv, command=command, cwd=cwd, env=dict(params.env),
            rows=_dimension(params.rows, "params.rows"), cols=_dimension(params.cols, "params.cols"),
            name=params.name)
        return RunResult(execution=execution_view(record))

    @dispatcher.route("Execution")
    async def execution(ctx: CallContext, params: ExecutionParams) -> ExecutionResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        scope = thread.scope
        action = params.action
        if isinstance(action, ListAction):
            limit = action.limit if action.limit is not None else settings.list_limit_default
            if not 1 <= limit <= settings.list_limit_max:
                raise invalid_request(f"limit must be between 1 and {settings.list_limit_max}, got {limit}",
                           "params.action.limit")
            listing = await in_thread(store.list, scope, limit)
            return ExecutionResult(data={
                "executions": [execution_view(r) for r in listing.records],
                "total": listing.total,
                "catalog_cursor": encode_catalog_cursor(store.mac_key, store.store_epoch, scope,
                                                        listing.change_seq),
            })
        if isinstance(action, GetAction):
            eid = _execution_id(action.execution_id)
            record = await in_thread(store.get, scope, eid)
            if record is None:
                raise ExecutionNotFound()
            return ExecutionResult(data={"execution": execution_view(record),
                                         "recovery": recovery_of(record)})
        if isinstance(action, ReadAction):
            return ExecutionResult(data={"page": await _read(scope, action)})
        if isinstance(action, ObserveAction):
            return await observer.observe(scope, action)
        if isinstance(action, WaitAction):
            return await observer.wait(scope, action)
        if isinstance(action, ExplainAction):
            return await observer.explain(scope, action)
        raise invalid_request(f"unsupported action {type(action).__name__}", "params.action.type")

    async def _read(scope: str, action: ReadAction) -> dict:
        eid = _execution_id(action.execution_id)
        if not 0 <= action.wait_seconds <= settings.wait_timeout_max:
            raise invalid_request(f"wait_seconds must be between 0 and {settings.wait_timeout_max:g}",
                       "params.action.wait_seconds")
        if action.source == "output":
            reader = read_output_page
        elif action.source == "screen":
            reader = read_screen_page
        else:
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"source {action.source!r} is not available yet",
                             {"field": "params.action.source"})

        def read():
            return reader(store, scope, eid, action.cursor, action.page_bytes)

        page = await in_thread(read)
        if action.wait_seconds > 0 and not page.text and page.has_more:
            # Long poll: register before each re-read, so output committed in between wakes
            # us; screen or state events also wake us, so loop until text, the end, or time.
            waiter = bus.register([eid])
            try:
                with trio.move_on_after(action.wait_seconds):
                    while True:
                        waiter.event = trio.Event()
                        page = await in_thread(read)
                        if page.text or not page.has_more:
                            break
                        await waiter.event.wait()
            finally:
                bus.unregister(waiter)
        out = {f: getattr(page, f) for f in page.__struct_fields__}
        out["source"] = action.source
        if page.__struct_fields__ and "gap" in out and out["gap"] is not None:
            gap = out["gap"]
            out["gap"] = {"bytes_skipped": gap.bytes_skipped, "from_offset": gap.from_offset,
                          "to_offset": gap.to_offset}
        return out

    @dispatcher.route("signal")
    async def signal(ctx: CallContext, params: SignalParams) -> SignalResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        eid = _execution_id(params.execution_id, "params.execution_id")
        signum = parse_signal(params.signal)
        record = await in_thread(store.get, thread.scope, eid)
        if record is None:
            raise ExecutionNotFound()
        if record.is_terminal:
            raise VigilError(ErrorCode.CONFLICT, f"the execution has already {record.status}"
                             if record.status == "exited" else "the execution's outcome is unknown",
                             {"execution_id": eid, "status": record.status})
        await runtimes.signal(eid, signum)
        return SignalResult(execution_id=eid, signal=signum, delivered=True)

    @dispatcher.route("resolve")
    async def resolve(ctx: CallContext, params: ResolveParams) -> ResolveResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        prefix = params.prefix.lower()
        if not 1 <= len(prefix) <= 32 or any(c not in "0123456789abcdef" for c in prefix):
            raise invalid_request(f"{params.prefix!r} is not an execution id or a prefix of one",
                       "params.prefix")
        listing = await in_thread(store.list, thread.scope, settings.list_limit_max)
        matches = [r.execution_id for r in listing.records if r.execution_id.startswith(prefix)]
        if not matches:
            raise ExecutionNotFound()
        if len(matches) > 1:
            raise VigilError(ErrorCode.CONFLICT,
                             f"prefix {params.prefix!r} matches {len(matches)} executions; "
                             "give more characters", {"matches": matches[:10]})
        return ResolveResult(execution_id=matches[0])

    @dispatcher.route("screen")
    async def screen(ctx: CallContext, params: ScreenParams) -> ScreenResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        eid = _execution_id(params.execution_id, "params.execution_id")
        record = await in_thread(store.get, thread.scope, eid)
        if record is None:
            raise ExecutionNotFound()
        if not 0 <= params.history <= settings.screen_history_lines_max:
            raise invalid_request(f"history must be between 0 and {settings.screen_history_lines_max}, "
                                  f"got {params.history}", "params.history")
        live = runtimes.live.get(eid)
        if live is not None and live.screen is not None:
            snap = live.screen.snapshot()
            history = live.screen.keeper.scrollback_tail(params.history)
            return ScreenResult(
                execution_id=eid, text=snap.text, rows=snap.rows, cols=snap.cols,
                cursor=snap.cursor, fidelity=snap.fidelity, title=snap.title, live=True,
                revision=snap.revision, alt_screen=snap.alt_screen,
                # With history the rows follow the scrollback, so no repaint (it would clear).
                ansi=live.screen.keeper.ansi(repaint=not params.history) if params.ansi else None,
                scrollback=[line.text for line in history.lines],
                scrollback_ansi=[line.ansi or line.text for line in history.lines] if params.ansi else None,
                scrollback_fast_forwarded=[i for i, line in enumerate(history.lines) if line.fast_forwarded],
                scrollback_first=history.first_number, scrollback_total=history.total)
        stored = await in_thread(store.get_screen, thread.scope, eid)
        if stored is None:
            return ScreenResult(execution_id=eid, text="", rows=record.rows or 0,
                                cols=record.cols or 0, cursor=(0, 0), fidelity="exact",
                                title="", live=False)
        return ScreenResult(execution_id=eid, text=stored.text, rows=stored.rows,
                            cols=stored.cols, cursor=(stored.cursor_row, stored.cursor_col),
                            fidelity=stored.fidelity, title=stored.title or "", live=False,
                            revision=stored.snapshot)
