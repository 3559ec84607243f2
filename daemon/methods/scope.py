"""`Initialize`: open or resume a thread for a workspace."""

from __future__ import annotations

import os

import msgspec

from vigil.daemon.agent.herdr_config import herdr_status_hint
from vigil.daemon.rpc.authority import Need, tools_of
from vigil.daemon.rpc.dispatch import CallContext, Dispatcher
from vigil.daemon.rpc.scopes import Scopes
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.shell.manager import ShellManager
from vigil.daemon.transcript.recorder import Recorder
from vigil.daemon.telemetry.phases import phase
from vigil.protocol.api.scope import (
    AgentBackends,
    HerdrHint,
    InitializeData,
    InitializeParams,
    InitializeResult,
)


def install(dispatcher: Dispatcher, *, scopes: Scopes, runtimes: RuntimeManager,
            shells: ShellManager, transcripts: Recorder | None) -> None:
    def caller_execution(pid: int) -> str | None:
        """The execution the caller runs under (a shell's running command, if it runs in
        a persistent shell), or None."""
        eid = runtimes.execution_of_process(pid)
        return eid and (shells.running_command(eid) or eid)

    @dispatcher.route("Initialize", authority=Need.UNSCOPED)
    async def initialize(ctx: CallContext, params: InitializeParams) -> InitializeResult:
        with phase("workspace_validation"):
            thread, resumed = scopes.open(
                params.workspace_root, thread_id=params.thread_id,
                thread_name=params.thread_name, mode=params.mode, profile=params.profile,
                tools=params.tools, change_mode=params.type == "user_asked_mode_change",
                principal=ctx.principal)
        if not resumed:
            parent = caller_execution(ctx.peer.pid)
            if parent is not None:
                thread = scopes.update(thread, parent_run_id=parent)
            if transcripts is not None:
                transcripts.thread_opened(thread.thread_id, thread.workspace_root, thread.name,
                                          parent)
        # No file read, no subprocess, no path: only whether the variable is present.
        hint = msgspec.convert(herdr_status_hint(os.environ), HerdrHint)
        return InitializeResult(
            thread_id=thread.thread_id, workspace_root=thread.workspace_root, mode=thread.mode,
            profile=thread.profile, tools=tools_of(thread), resumed=resumed,
            data=InitializeData(agent_backends=AgentBackends(herdr=hint)))
