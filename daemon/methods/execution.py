"""`run`, `Execution`, `follow`, `signal`, `resolve`: thin routes onto the runtime manager,
the Execution service and the output stream."""

from __future__ import annotations

import os

import trio

from vigil.daemon.history.follow import OutputStream
from vigil.daemon.history.service import ExecutionService
from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import CallContext, Dispatcher
from vigil.daemon.rpc.views import execution_view
from vigil.daemon.runtime.live import Follower
from vigil.daemon.runtime.manager import RuntimeManager, parse_signal
from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionNotFound, Store, parse_execution_id
from vigil.protocol.api.execution import (
    ExecutionParams,
    ExecutionResult,
    ExplainAction,
    FollowParams,
    GetAction,
    ListAction,
    ObserveAction,
    ReadAction,
    ResolveParams,
    ResolveResult,
    RunParams,
    RunResult,
    SignalParams,
    SignalResult,
    WaitAction,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request


def execution_id_param(value: str, field: str = "params.execution_id") -> str:
    """A request's execution id, or `invalid_request` naming the field."""
    try:
        return parse_execution_id(value)
    except VigilError as exc:
        raise invalid_request(exc.message, field) from None


async def scoped_record(store: Store, ctx: CallContext, execution_id: str,
                        field: str = "params.execution_id"):
    """The caller's execution `execution_id` (another scope's reads exactly as absent)."""
    eid = execution_id_param(execution_id, field)
    record = await trio.to_thread.run_sync(store.get, ctx.scope, eid)
    if record is None:
        raise ExecutionNotFound()
    return record


def install(dispatcher: Dispatcher, *, store: Store, runtimes: RuntimeManager,
            service: ExecutionService, outputs: OutputStream, settings: Settings) -> None:
    @dispatcher.route("run", authority=Need.RUN)
    async def run(ctx: CallContext, params: RunParams) -> RunResult:
        thread = ctx.thread
        if (params.argv is None) == (params.command is None):
            raise invalid_request("give exactly one of argv (a list) or command (a shell string)",
                                  "params.argv")
        if params.argv is not None:
            if not params.argv or not params.argv[0]:
                raise invalid_request("argv must name a program", "params.argv")
            argv, command = list(params.argv), " ".join(params.argv)
        else:
            if not params.command.strip():
                raise invalid_request("command is empty", "params.command")
            argv, command = ["/bin/sh", "-c", params.command], params.command
        if any("\0" in a for a in argv) or any("\0" in k + v or "=" in k for k, v in params.env.items()):
            raise invalid_request("argv and env must not contain NUL, and env names must not "
                                  "contain '='", "params.env")
        if len(params.name.encode("utf-8", "surrogateescape")) > settings.run_name_max_bytes:
            raise invalid_request(f"name must be at most {settings.run_name_max_bytes} bytes",
                                  "params.name")
        cwd = params.cwd or thread.workspace_root
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise invalid_request(f"cwd {cwd!r} is not an existing absolute directory", "params.cwd")
        follower = Follower(settings.follow_buffer_bytes, 0) if params.follow else None
        record = await runtimes.start(
            scope=thread.scope, thread_id=thread.thread_id, workspace_root=thread.workspace_root,
            argv=argv, command=command, cwd=cwd,
            env=runtimes.child_environment(params.env, params.env_base),
            rows=params.rows, cols=params.cols, name=params.name, keep_env=True,
            followers=(follower,) if follower else ())
        result = RunResult(execution=execution_view(
            record, command_bytes=settings.view_get_command_bytes,
            pending=runtimes.output_pending(record)))
        if follower is None:
            return result
        if record.execution_id not in runtimes.live:
            follower.close()  # it never ran (127/126): what there is comes from the store
        return await outputs.serve(ctx, record, 0, answer=result, follower=follower)

    def validate(params: ExecutionParams) -> None:
        service.validate(params.action)

    @dispatcher.route("Execution", authority=Need.EXECUTION, validate=validate)
    async def execution(ctx: CallContext, params: ExecutionParams) -> ExecutionResult:
        return await dispatch_action(service, ctx, params.action)

    @dispatcher.route("follow", authority=Need.OBSERVE)
    async def follow(ctx: CallContext, params: FollowParams):
        record = await scoped_record(store, ctx, params.execution_id)
        return await outputs.serve(ctx, record, params.from_offset, params.until_now)

    @dispatcher.route("signal", authority=Need.RUN)
    async def signal(ctx: CallContext, params: SignalParams) -> SignalResult:
        signum = parse_signal(params.signal)
        record = await scoped_record(store, ctx, params.execution_id)
        eid = record.execution_id
        if record.is_terminal:
            raise VigilError(ErrorCode.CONFLICT, f"the execution has already {record.status}"
                             if record.status == "exited" else "the execution's outcome is unknown",
                             {"execution_id": eid, "status": record.status})
        delivered, reason = await runtimes.signal(eid, signum)
        return SignalResult(execution_id=eid, signal=signum, delivered=delivered, reason=reason)

    @dispatcher.route("resolve", authority=Need.OBSERVE)
    async def resolve(ctx: CallContext, params: ResolveParams) -> ResolveResult:
        prefix = params.prefix.lower()
        if not 1 <= len(prefix) <= 32 or any(c not in "0123456789abcdef" for c in prefix):
            raise invalid_request(f"{params.prefix!r} is not an execution id or a prefix of one",
                                  "params.prefix")
        listing = await trio.to_thread.run_sync(store.list, ctx.scope, settings.list_limit_max)
        matches = [r.execution_id for r in listing.records if r.execution_id.startswith(prefix)]
        if not matches:
            raise ExecutionNotFound()
        if len(matches) > 1:
            raise VigilError(ErrorCode.CONFLICT,
                             f"prefix {params.prefix!r} matches {len(matches)} executions; "
                             "give more characters", {"matches": matches[:10]})
        return ResolveResult(execution_id=matches[0])


async def dispatch_action(service: ExecutionService, ctx: CallContext, action
                          ) -> ExecutionResult:
    """One `Execution` action (also what a native `Agent` observation runs)."""
    scope = ctx.scope
    match action:
        case ListAction():
            return await service.list(scope, action)
        case GetAction():
            return await service.get(scope, action)
        case ReadAction():
            return await service.read(scope, action)
        case ObserveAction():
            return await service.observe(scope, action, ctx.started)
        case WaitAction():
            return await service.wait(scope, action, ctx.started, ctx.wait_profile)
        case ExplainAction():
            return await service.explain(scope, action)
    raise AssertionError(f"unrouted action {action!r}")  # the tagged union admits no other
