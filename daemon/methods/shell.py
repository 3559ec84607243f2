"""`BashCommand`: the thread's persistent shell."""

from __future__ import annotations

from vigil.protocol.errors import ErrorCode, VigilError
from vigil.daemon.rpc.authority import Need
from vigil.daemon.settings import Settings
from vigil.protocol.api.shell import (
    BashCommandParams,
    BashCommandResult,
    CommandAction,
    SendAsciiAction,
    SendSpecialsAction,
    SendTextAction,
    StatusCheckAction,
)

from ..rpc.dispatch import CallContext, Dispatcher
from ..runtime.manager import RuntimeManager
from ..shell.manager import ShellManager, keys_to_bytes

#: Actions that type into the shell: raw input (wcgw mode); the others run or check.
_INPUT_ACTIONS = (SendTextAction, SendSpecialsAction, SendAsciiAction)


def authority(params: BashCommandParams) -> Need:
    return Need.INPUT if isinstance(params.action, _INPUT_ACTIONS) else Need.RUN


def install(dispatcher: Dispatcher, *, shells: ShellManager, runtimes: RuntimeManager,
            settings: Settings) -> None:
    @dispatcher.route("BashCommand", authority=authority)
    async def bash_command(ctx: CallContext, params: BashCommandParams) -> BashCommandResult:
        thread = ctx.thread
        wait = params.wait_for_seconds
        if wait is None:
            wait = settings.bash_wait_default_seconds
        if not 0 <= wait <= settings.bash_wait_max_seconds:
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"wait_for_seconds must be between 0 and {settings.bash_wait_max_seconds:g}",
                             {"field": "params.wait_for_seconds"})
        action = params.action
        if isinstance(action, CommandAction):
            if action.is_background:
                session = await shells.session(thread)
                record = await runtimes.start(
                    scope=thread.scope, thread_id=thread.thread_id,
                    workspace_root=thread.workspace_root, argv=["bash", "-c", action.command],
                    command=action.command, cwd=session.cwd, env=runtimes.child_environment({}),
                    rows=None, cols=None,
                    name="background")
                return BashCommandResult(
                    status="background", generation=session.generation,
                    execution_id=record.execution_id, shell_execution_id=session.shell_eid,
                    cwd=session.cwd)
            if params.generation is not None:
                raise VigilError(ErrorCode.INVALID_REQUEST,
                                 "generation is for input actions; a command starts a new one",
                                 {"field": "params.generation"})
            session = await shells.command(thread, action.command)
            await shells.wait(session, wait)
            return await answer(session)
        if isinstance(action, StatusCheckAction):
            session = await shells.session(thread)
            await shells.wait(session, wait)
            return await answer(session)
        if isinstance(action, SendTextAction):
            data = action.text.encode("utf-8", "surrogateescape")
            if len(data) > settings.bash_text_max_bytes:
                raise VigilError(ErrorCode.INVALID_REQUEST,
                                 f"text must be at most {settings.bash_text_max_bytes} bytes",
                                 {"field": "params.action.text"})
        elif isinstance(action, SendSpecialsAction):
            if not action.keys:
                raise VigilError(ErrorCode.INVALID_REQUEST, "keys is empty",
                                 {"field": "params.action.keys"})
            data = keys_to_bytes(action.keys, "params.action.keys")
        elif isinstance(action, SendAsciiAction):
            if not action.codes or any(not 0 <= c <= 255 for c in action.codes):
                raise VigilError(ErrorCode.INVALID_REQUEST,
                                 "codes must be a non-empty list of integers 0..255",
                                 {"field": "params.action.codes"})
            data = bytes(action.codes)
        else:  # pragma: no cover - the tagged union admits nothing else
            raise VigilError(ErrorCode.INVALID_REQUEST, "unknown action", {"field": "params.action"})
        session = await shells.send(thread, data, params.generation)
        await shells.wait(session, wait)
        return await answer(session)

    async def answer(session) -> BashCommandResult:
        # What the answer says must already be what Execution get reads.
        await runtimes.ingest.flush()
        return shells.result(session)
