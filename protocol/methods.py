"""The registry of RPC methods: name → params type, result type(s), one-line summary.

The daemon (to validate params before dispatch), the client (to decode a result typed) and
`vigil protocol schema` (to export JSON Schema for plugin authors and MCP tools) read this
one table, so the three cannot drift apart.

Most methods have one result type. `Execution` and `Agent` answer with a different `data`
per action: their entry lists every result by action (`results`), and `result_type(params)`
picks the one a given request is answered with.
"""

from __future__ import annotations

from typing import Any, Callable

import msgspec

from .api import agent, daemon, execution, scope, shell, terminal


class Method(msgspec.Struct, frozen=True):
    name: str
    params: Any
    #: The result type, or None when it depends on the action (see `results`).
    result: Any
    summary: str
    #: Action name → result type, for methods whose result depends on the action.
    results: dict[str, Any] | None = None
    #: params → key of `results` (only with `results`).
    select: Callable[[Any], str] | None = None

    def result_type(self, params: Any) -> Any:
        """The type of the answer to `params` (a decoded params Struct)."""
        if self.results is None:
            return self.result
        return self.results[self.select(params)]

    def all_results(self) -> list[Any]:
        return [self.result] if self.results is None else list(self.results.values())


_REGISTRY: dict[str, Method] = {}


def register(name: str, params: Any, result: Any, summary: str, *,
             results: dict[str, Any] | None = None,
             select: Callable[[Any], str] | None = None) -> Method:
    if name in _REGISTRY:
        raise ValueError(f"method {name!r} registered twice")
    if (results is None) == (result is None) or (results is None) != (select is None):
        raise ValueError(f"method {name!r}: give either one result or results with select")
    method = _REGISTRY[name] = Method(name, params, result, summary, results, select)
    return method


def lookup(name: str) -> Method | None:
    return _REGISTRY.get(name)


def all_methods() -> list[Method]:
    return sorted(_REGISTRY.values(), key=lambda m: m.name)


def _execution_action(params: execution.ExecutionParams) -> str:
    return type(params.action).__struct_config__.tag


def _agent_action(params: agent.AgentParams) -> str:
    return "/".join(agent.result_key(params))


register("hello", daemon.HelloParams, daemon.HelloResult,
         "Handshake: must be the first frame; negotiates protocol and encoding.")
register("ping", daemon.PingParams, daemon.PingResult, "Liveness check.")
register("status", daemon.StatusParams, daemon.StatusResult,
         "Daemon version, pid, epoch, socket, state dir, uptime, load and store health.")
register("Initialize", scope.InitializeParams, scope.InitializeResult,
         "Open or resume a thread scoped to a canonical workspace.")
register("run", execution.RunParams, execution.RunResult,
         "Start a standalone execution under its own PTY guardian.")
register("Execution", execution.ExecutionParams, None,
         "Read execution history: list, get, read, observe, wait, explain.",
         results=execution.RESULTS, select=_execution_action)
register("follow", execution.FollowParams, execution.FollowResult,
         "Stream an execution's output from an offset, live, until it ended: gaps explicit.")
register("signal", execution.SignalParams, execution.SignalResult,
         "Send a signal to an execution's process group.")
register("resolve", execution.ResolveParams, execution.ResolveResult,
         "Expand a unique prefix of an execution id.")
register("screen", terminal.ScreenParams, terminal.ScreenResult,
         "The current screen of an execution (text, or with colours).")
register("BashCommand", shell.BashCommandParams, shell.BashCommandResult,
         "Run a command in the thread's persistent shell, check it, or send it input.")
register("input", terminal.InputParams, terminal.InputResult,
         "Send text, named keys or bytes to an execution's terminal.")
register("resize", terminal.ResizeParams, terminal.ResizeResult,
         "Resize an execution's terminal.")
register("attach", terminal.AttachParams, terminal.AttachResult,
         "Watch an execution live: repaint, then output events until it exits.")
register("Agent", agent.AgentParams, None,
         "Observe agent executions and submit native prompts once, with receipts.",
         results={"/".join(key): value for key, value in agent.RESULTS.items()},
         select=_agent_action)

#: Events the daemon pushes, by the method whose call streams them.
EVENTS: dict[str, Any] = {"attach": terminal.AttachEvent, "follow": execution.FollowEvent,
                          "run": execution.FollowEvent}
