"""`Agent`: native observation (the same semantics as `Execution`), native prompts with
receipts, and the optional Herdr backend."""

from __future__ import annotations

import os

import msgspec

from vigil.daemon.agent.herdr import herdr_backend_from_environ
from vigil.daemon.agent.prompts import PromptService
from vigil.protocol.api.agent import AgentParams, AgentResult
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.api.execution import (
    ExecutionParams,
    ExplainAction,
    GetAction,
    ListAction,
    ReadAction,
    WaitAction,
)

from ..rpc.dispatch import CallContext, Dispatcher
from ..rpc.scopes import LOCAL_PRINCIPAL, Scopes


def install(dispatcher: Dispatcher, *, scopes: Scopes, prompts: PromptService) -> None:
    execution = dispatcher.get("Execution")

    async def as_execution(ctx: CallContext, params: AgentParams, action) -> AgentResult:
        result = await execution.handler(ctx, ExecutionParams(
            thread_id=params.thread_id, workspace_root=params.workspace_root, action=action))
        return AgentResult(status=result.status, code=result.code,
                           data=dict(result.data, backend="native", action=params.action))

    def target(params: AgentParams) -> str:
        if not params.target:
            raise invalid_request(f"action {params.action!r} needs a target", "params.target")
        return params.target

    @dispatcher.route("Agent")
    async def agent(ctx: CallContext, params: AgentParams) -> AgentResult:
        thread = scopes.check(params.thread_id, params.workspace_root)
        if params.backend == "herdr":
            return await herdr(thread, params)
        a = params.action
        if a == "prompt":
            receipt, replayed = await prompts.prompt(thread.scope, params)
            return AgentResult(data={"backend": "native", "action": "prompt",
                                     "receipt": receipt, "replayed": replayed})
        if a == "wait" and params.prompt_id is not None:
            receipt = await prompts.wait_receipt(thread.scope, params)
            return AgentResult(data={"backend": "native", "action": "wait", "receipt": receipt})
        if a == "list":
            return await as_execution(ctx, params, ListAction(limit=params.limit))
        if a == "get":
            return await as_execution(ctx, params, GetAction(execution_id=target(params)))
        if a == "read":
            return await as_execution(ctx, params, ReadAction(
                execution_id=target(params), source=params.source, cursor=params.cursor,
                page_bytes=params.page_bytes))
        if a == "explain":
            result = await as_execution(ctx, params, ExplainAction(
                execution_id=target(params), recognizer=params.recognizer))
            return result
        if a == "wait":
            return await as_execution(ctx, params, WaitAction(
                execution_ids=[target(params)], after=params.after,
                timeout_seconds=params.timeout_seconds, events=params.events))
        raise invalid_request(f"unknown action {a!r}", "params.action")

    async def herdr(thread, params: AgentParams) -> AgentResult:
        # HerdrError is a VigilError with a herdr_* code (protocol ErrorCode): it passes
        # through the dispatch seam as is, data (input_sent, …) included.
        if params.action == "prompt" and params.prompt_id is not None:
            raise VigilError(ErrorCode.HERDR_PROMPT_ID_UNSUPPORTED,
                             "Herdr has no prompt-id deduplication: omit prompt_id",
                             {"field": "params.prompt_id", "input_sent": False})
        backend = herdr_backend_from_environ(os.environ)
        scope = backend.scope(LOCAL_PRINCIPAL, thread.workspace_root)
        a = params.action
        if a == "list":
            data = await scope.list()
        elif a == "get":
            data = await scope.get(target(params))
        elif a == "read":
            data = await scope.read(target(params), lines=params.lines)
        elif a == "explain":
            data = await scope.explain(target(params))
        elif a == "prompt":
            if not params.text:
                raise invalid_request("text is required", "params.text")
            data = await scope.prompt(target(params), params.text)
        else:
            data = await scope.wait(target(params), until=params.until,
                                    timeout_seconds=params.timeout_seconds)
        return AgentResult(data=msgspec.to_builtins(data) if not isinstance(data, dict) else data)
