"""`Initialize`: open or resume a thread for a workspace."""

from __future__ import annotations

import os

from vigil.daemon.agent.herdr_config import herdr_status_hint
from vigil.protocol.api.scope import InitializeParams, InitializeResult

from ..rpc.dispatch import CallContext, Dispatcher
from ..rpc.scopes import Scopes

#: What each profile may call when no explicit tool allowlist is given (spec: "Discovery
#: and authority"); enforcement lands at the dispatch seam with the Agent workflows.
PROFILE_TOOLS = {
    "full": ["BashCommand", "Execution", "Agent"],
    "coding": ["BashCommand", "Execution", "Agent"],
    "terminal": ["BashCommand", "Execution", "Agent"],
    "read-only": ["Execution", "Agent"],
}


def install(dispatcher: Dispatcher, scopes: Scopes) -> None:
    @dispatcher.route("Initialize")
    async def initialize(ctx: CallContext, params: InitializeParams) -> InitializeResult:
        thread, resumed = scopes.open(
            params.workspace_root, thread_id=params.thread_id, thread_name=params.thread_name,
            mode=params.mode, profile=params.profile, tools=params.tools,
            change_mode=params.type == "user_asked_mode_change")
        return InitializeResult(
            thread_id=thread.thread_id, workspace_root=thread.workspace_root, mode=thread.mode,
            profile=thread.profile,
            tools=thread.tools if thread.tools is not None else PROFILE_TOOLS[thread.profile],
            resumed=resumed,
            # No file read, no subprocess, no path: only whether the variable is present.
            data={"agent_backends": {"herdr": herdr_status_hint(os.environ)}},
        )
