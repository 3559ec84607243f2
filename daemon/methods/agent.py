"""`Agent`: native observation (the Execution service, same semantics), native prompts with
receipts, turn archives (`get_trace`; `get` and prompt answers carry the turn's summary),
and the optional Herdr backend."""

from __future__ import annotations

import os

import msgspec

from vigil.daemon.agent.herdr import herdr_backend_from_environ
from vigil.daemon.agent.prompts import PromptService
from vigil.daemon.archive.service import TraceService, check_trace_params
from vigil.daemon.history.service import ExecutionService
from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import CallContext, Dispatcher
from vigil.daemon.settings import Settings
from vigil.daemon.telemetry.phases import phase
from vigil.protocol.api.agent import (
    AgentParams,
    AgentResult,
    NativeExplainData,
    NativeGetData,
    NativeListData,
    NativeReadData,
    NativeWaitData,
    ApproveData,
    PromptData,
    ReceiptData,
)
from vigil.protocol.api.execution import (
    ExplainAction,
    GetAction,
    ListAction,
    ReadAction,
    WaitAction,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request

from .execution import dispatch_action

#: The Agent data of each native observation, by action: the Execution data plus its tags.
_NATIVE = {"list": NativeListData, "get": NativeGetData, "read": NativeReadData,
           "explain": NativeExplainData, "wait": NativeWaitData}


def _archives_off() -> VigilError:
    return VigilError(ErrorCode.UNAVAILABLE, "turn archives are off on this daemon "
                      "(archives_enabled or transcripts_enabled is false in its config)")


def authority(params: AgentParams) -> Need:
    return Need.PROMPT if params.action in ("prompt", "approve") else Need.AGENT


def _target(params: AgentParams) -> str:
    if not params.target:
        raise invalid_request(f"action {params.action!r} needs a target", "params.target")
    return params.target


def native_action(params: AgentParams):
    """The `Execution` action a native observation is (None for prompts and receipt waits)."""
    a = params.action
    if a == "list":
        return ListAction(limit=params.limit)
    if a == "get":
        return GetAction(execution_id=_target(params))
    if a == "read":
        return ReadAction(execution_id=_target(params), source=params.source,
                          cursor=params.cursor, page_bytes=params.page_bytes)
    if a == "explain":
        return ExplainAction(execution_id=_target(params), recognizer=params.recognizer)
    if a == "wait" and params.prompt_id is None:
        return WaitAction(execution_ids=[_target(params)], after=params.after,
                          timeout_seconds=params.timeout_seconds, events=params.events)
    return None


def install(dispatcher: Dispatcher, *, service: ExecutionService, prompts: PromptService,
            settings: Settings, traces: TraceService | None = None) -> None:
    def validate(params: AgentParams) -> None:
        if params.action == "get_trace":
            if params.backend != "native":
                raise invalid_request("get_trace reads vigil's own turn archives: backend "
                                      "must be native", "params.backend")
            check_trace_params(params)
        elif params.backend == "native":
            action = native_action(params)
            if action is not None:
                service.validate(action, where="params")

    async def turn_of(ctx: CallContext, receipt, settle: bool):
        """The summary of the turn a receipt opened; `settle`: first give its archive a
        moment to be committed (the agent is back at its input)."""
        if traces is None or receipt.archive_ref is None:
            return None
        if settle:
            turn = int(receipt.trace_key.rsplit(":", 1)[1])
            await traces.builder.wait_committed(receipt.execution_id, turn,
                                                settings.archive_commit_wait_seconds)
        return await traces.summary_of(ctx.scope, receipt.execution_id, receipt.archive_ref)

    @dispatcher.route("Agent", authority=authority, validate=validate)
    async def agent(ctx: CallContext, params: AgentParams) -> AgentResult:
        if params.action == "approve":
            receipt, replayed, keys = await prompts.approve(ctx.scope, params)
            return AgentResult(data=ApproveData(receipt=receipt, replayed=replayed, keys=keys))
        if params.backend == "herdr":
            return await herdr(ctx, params)
        if params.action == "get_trace":
            if traces is None:
                raise _archives_off()
            return AgentResult(data=await traces.get_trace(ctx.scope, params))
        action = native_action(params)
        if action is not None:
            result = await dispatch_action(service, ctx, action)
            data = _NATIVE[params.action](**msgspec.structs.asdict(result.data))
            if params.action == "get" and traces is not None:
                data.turn = await traces.latest_summary(ctx.scope, data.execution.execution_id)
            return AgentResult(status=result.status, code=result.code, data=data)
        if params.action == "prompt":
            receipt, replayed = await prompts.prompt(ctx.scope, params)
            turn = await turn_of(ctx, receipt, not replayed and receipt.condition == "awaiting_input")
            return AgentResult(data=PromptData(receipt=receipt, replayed=replayed, turn=turn))
        receipt = await prompts.wait_receipt(ctx.scope, params)
        return AgentResult(data=ReceiptData(receipt=receipt, turn=await turn_of(ctx, receipt, False)))

    async def herdr(ctx: CallContext, params: AgentParams) -> AgentResult:
        # HerdrError is a VigilError with a herdr_* code (protocol ErrorCode): it passes
        # through the dispatch seam as is, data (input_sent, …) included.
        if params.action == "prompt" and params.prompt_id is not None:
            raise VigilError(ErrorCode.HERDR_PROMPT_ID_UNSUPPORTED,
                             "Herdr has no prompt-id deduplication: omit prompt_id",
                             {"field": "params.prompt_id", "input_sent": False})
        with phase("herdr_adapter"):
            return AgentResult(data=await _herdr_action(params, ctx))

    async def _herdr_action(params: AgentParams, ctx: CallContext):
        backend = herdr_backend_from_environ(os.environ, settings)
        scope = backend.scope(ctx.thread.principal, ctx.thread.workspace_root)
        a = params.action
        if a == "list":
            data = await scope.list()
        elif a == "get":
            data = await scope.get(_target(params))
        elif a == "read":
            data = await scope.read(_target(params), lines=params.lines)
        elif a == "explain":
            data = await scope.explain(_target(params))
        elif a == "prompt":
            if not params.text:
                raise invalid_request("text is required", "params.text")
            data = await scope.prompt(_target(params), params.text)
        else:
            data = await scope.wait(_target(params), until=params.until,
                                    timeout_seconds=params.timeout_seconds)
        return data
