"""`BashCommand`: the thread's persistent shell, its Tasks, and its views."""

from __future__ import annotations

import math

import trio

from vigil.daemon.agent.prompts import PromptService
from vigil.daemon.history.service import ExecutionService
from vigil.daemon.rpc.authority import Need
from vigil.daemon.settings import Settings
from vigil.daemon.store import Store, read_output_tail
from vigil.protocol.api.execution import ExplainAction
from vigil.protocol.api.shell import (
    BashCommandParams,
    BashCommandResult,
    CommandAction,
    InspectAction,
    InspectResult,
    PromptAction,
    ScreenAction,
    SendAsciiAction,
    SendSpecialsAction,
    SendTextAction,
    StatusCheckAction,
    WaitForTurnAction,
)
from vigil.protocol.errors import VigilError, invalid_request
from vigil.protocol.settings import omitted_wait

from ..rpc.dispatch import CallContext, Dispatcher
from ..runtime.manager import RuntimeManager
from ..shell.manager import ShellManager, keys_to_bytes
from .execution import scoped_record
from .terminal import screen_of

#: Actions that type into the shell: raw input (wcgw mode).
_INPUT_ACTIONS = (SendTextAction, SendSpecialsAction, SendAsciiAction, PromptAction)
#: The shell's own views: the BashCommand tool in any mode.
_VIEW_ACTIONS = (ScreenAction, InspectAction, WaitForTurnAction)
#: Inline-wait modes by effective policy (seeds/000, "Usage metrics").
_MODES = {"synchronous": "synchronous", "adaptive": "task_inline", "task": "task"}


def authority(params: BashCommandParams) -> Need:
    if isinstance(params.action, _INPUT_ACTIONS):
        return Need.INPUT
    if isinstance(params.action, _VIEW_ACTIONS):
        return Need.SHELL
    return Need.RUN


class InlineWait:
    """A wait-consuming action's allowance: the client's request as given, and the server's
    selection after defaults and caps (configuration, not elapsed time)."""

    def __init__(self, params: BashCommandParams, settings: Settings, profile: str):
        action = params.action
        requested = params.wait_policy
        if requested is None and isinstance(action, CommandAction) and action.is_background:
            requested = "task"
        if requested is not None and not isinstance(action, CommandAction) and requested != "synchronous":
            raise invalid_request(f"wait_policy {requested!r} is for commands; "
                                  f"{type(action).__struct_config__.tag} waits synchronously",
                                  "params.wait_policy")
        seconds = params.wait_for_seconds
        if seconds is not None and not (math.isfinite(seconds) and
                                        0 <= seconds <= settings.bash_wait_max_seconds):
            raise invalid_request(f"wait_for_seconds must be between 0 and "
                                  f"{settings.bash_wait_max_seconds:g}", "params.wait_for_seconds")
        self.requested_policy = requested
        self.requested_ms = None if seconds is None else round(seconds * 1000)
        self.policy = requested or "synchronous"
        self.mode = _MODES[self.policy]
        if self.policy == "task":
            self.seconds = 0.0
        elif seconds is not None:
            self.seconds = seconds
        else:
            self.seconds = omitted_wait(settings, profile, settings.bash_wait_default_seconds,
                                        settings.bash_wait_max_seconds)

    def fields(self) -> dict:
        return {"requested_wait_policy": self.requested_policy,
                "requested_wait_ms": self.requested_ms, "effective_wait_policy": self.policy,
                "effective_wait_ms": round(self.seconds * 1000), "effective_wait_mode": self.mode}


def install(dispatcher: Dispatcher, *, shells: ShellManager, runtimes: RuntimeManager,
            settings: Settings, store: Store, service: ExecutionService,
            prompts: PromptService) -> None:
    @dispatcher.route("BashCommand", authority=authority)
    async def bash_command(ctx: CallContext, params: BashCommandParams):
        action = params.action
        if isinstance(action, _VIEW_ACTIONS + (PromptAction,)):
            if params.wait_for_seconds is not None or params.wait_policy is not None:
                field = "wait_for_seconds" if params.wait_for_seconds is not None else "wait_policy"
                raise invalid_request(f"{action.__struct_config__.tag} has its own timeout "
                                      f"(action.timeout_seconds), not {field}", f"params.{field}")
            return await view(ctx, params)
        wait = InlineWait(params, settings, ctx.wait_profile)
        try:
            result = await inline(ctx, params, wait)
        except VigilError as exc:
            # A structured runtime rejection still reports the allowance it was given.
            exc.data = {**exc.data, **{k: v for k, v in wait.fields().items() if v is not None}}
            raise
        for name, value in wait.fields().items():
            setattr(result, name, value)
        return result

    async def inline(ctx: CallContext, params: BashCommandParams, wait: InlineWait
                     ) -> BashCommandResult:
        thread = ctx.thread
        action = params.action
        if isinstance(action, CommandAction):
            if params.generation is not None:
                raise invalid_request("generation is for input actions; a command starts a new one",
                                      "params.generation")
            if wait.policy != "synchronous":
                return await task(ctx, action.command, wait)
            session = await shells.command(thread, action.command)
            await shells.wait(session, wait.seconds)
            return await answer(session)
        if isinstance(action, StatusCheckAction):
            session = await shells.session(thread)
            await shells.wait(session, wait.seconds)
            return await answer(session)
        if isinstance(action, SendTextAction):
            data = action.text.encode("utf-8", "surrogateescape")
            if len(data) > settings.bash_text_max_bytes:
                raise invalid_request(f"text must be at most {settings.bash_text_max_bytes} bytes",
                                      "params.action.text")
        elif isinstance(action, SendSpecialsAction):
            if not action.keys:
                raise invalid_request("keys is empty", "params.action.keys")
            data = keys_to_bytes(action.keys, "params.action.keys")
        else:
            if not action.codes or any(not 0 <= c <= 255 for c in action.codes):
                raise invalid_request("codes must be a non-empty list of integers 0..255",
                                      "params.action.codes")
            data = bytes(action.codes)
        session = await shells.send(thread, data, params.generation)
        await shells.wait(session, wait.seconds)
        return await answer(session)

    async def task(ctx: CallContext, command: str, wait: InlineWait) -> BashCommandResult:
        """A command as a Task: inline for its allowance (`adaptive`), then promoted."""
        session, record = await shells.start_task(ctx.thread, command)
        eid = record.execution_id
        base = dict(generation=session.generation, execution_id=eid,
                    shell_execution_id=session.shell_eid, cwd=record.cwd)
        if wait.seconds > 0 and await shells.wait_task(eid, wait.seconds):
            final = await scoped_record(store, ctx, eid)
            if final.status != "running":
                text, cut = await trio.to_thread.run_sync(
                    read_output_tail, store, ctx.scope, eid, settings.bash_output_max_bytes)
                code = final.exit_code if final.signal is None else 128 + final.signal
                return BashCommandResult(status="completed", exit_code=code, output=text,
                                         output_truncated=cut, **base)
        return BashCommandResult(status="background", promoted=wait.seconds > 0, **base)

    async def answer(session) -> BashCommandResult:
        # What the answer says must already be what Execution get reads.
        await runtimes.ingest.flush()
        return shells.result(session)

    async def target(ctx: CallContext, execution_id: str | None):
        """The record a view acts on: `execution_id` of this scope, else the thread's shell."""
        if execution_id is not None:
            return await scoped_record(store, ctx, execution_id, "params.action.execution_id"), None
        session = await shells.session(ctx.thread)
        await runtimes.ingest.flush()
        return await scoped_record(store, ctx, session.shell_eid), session

    def turn_timeout(ctx: CallContext, given: float | None, maximum: float) -> float:
        if given is None:
            return omitted_wait(settings, ctx.wait_profile, settings.wait_timeout_default, maximum)
        if not (math.isfinite(given) and 0 <= given <= maximum):
            raise invalid_request(f"timeout_seconds must be a finite number from 0 through "
                                  f"{maximum:g}", "params.action.timeout_seconds")
        return given

    async def view(ctx: CallContext, params: BashCommandParams):
        action = params.action
        if isinstance(action, PromptAction):
            size = len(action.text.encode("utf-8", "surrogateescape"))
            if not action.text or size > settings.prompt_text_max_bytes:
                raise invalid_request(f"text must be 1 to {settings.prompt_text_max_bytes} bytes",
                                      "params.action.text")
        if isinstance(action, (WaitForTurnAction, PromptAction)):
            maximum = (settings.wait_timeout_max if isinstance(action, WaitForTurnAction)
                       else settings.prompt_wait_max_seconds)
            timeout = turn_timeout(ctx, action.timeout_seconds, maximum)
        record, session = await target(ctx, action.execution_id)
        eid = record.execution_id
        if isinstance(action, ScreenAction):
            return await screen_of(store, runtimes, ctx.scope, record)
        if isinstance(action, InspectAction):
            explained = await service.explain(ctx.scope, ExplainAction(
                execution_id=eid, recognizer=action.recognizer))
            return InspectResult(
                target="shell" if session is not None else "execution", execution_id=eid,
                generation=session.generation if session is not None else record.generation,
                running=(session.cmd_eid is not None) if session is not None
                else record.status == "running",
                cwd=session.cwd if session is not None else record.cwd,
                explanation=explained.data)
        if isinstance(action, WaitForTurnAction):
            return await prompts.wait_for_turn(ctx.scope, eid, recognizer=action.recognizer,
                                               wait_for=action.wait_for, timeout=timeout)
        return await prompts.submit(ctx.scope, eid, action.text, recognizer=action.recognizer,
                                    wait_for=action.wait_for, timeout=timeout)
