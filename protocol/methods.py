"""The registry of RPC methods: name → params type, result type(s), one-line summary.

The daemon (to validate params before dispatch), the client (to decode a result typed) and
`vigil protocol schema` (to export JSON Schema for plugin authors and MCP tools) read this
one table, so the three cannot drift apart.

Most methods have one result type. `Execution`, `Agent` and `BashCommand` answer with a
different result per action: their entry lists every result by action (`results`), and
`result_type(params)` picks the one a given request is answered with.

The table is filled one method family at a time, when a method of that family is first
looked up (`lookup` imports `protocol/api/<family>.py` then): `vigil ls` imports the
execution family, not the agent's. `all_methods()` and `events()` load every family.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import msgspec


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
    """The method `name`, its family's module imported on first use (a CLI command pays
    for the families it calls, not for all of them)."""
    family = FAMILY.get(name)
    if family is not None:
        _load(family)
    return _REGISTRY.get(name)


def all_methods() -> list[Method]:
    for family in _FAMILIES:
        _load(family)
    return sorted(_REGISTRY.values(), key=lambda m: m.name)


def events() -> dict[str, Any]:
    """Event types the daemon pushes, by the method whose call streams them."""
    all_methods()
    return EVENTS


#: Events the daemon pushes, by the method whose call streams them (complete once every
#: family is loaded: use `events()`).
EVENTS: dict[str, Any] = {}

# --- the table, one family (protocol/api/<family>.py) at a time -------------------------------


def _daemon(daemon) -> None:
    register("hello", daemon.HelloParams, daemon.HelloResult,
             "Handshake: must be the first frame; negotiates protocol and encoding.")
    register("ping", daemon.PingParams, daemon.PingResult, "Liveness check.")
    register("status", daemon.StatusParams, daemon.StatusResult,
             "Daemon version, pid, epoch, socket, state dir, uptime, load and store health.")


def _scope(scope) -> None:
    register("Initialize", scope.InitializeParams, scope.InitializeResult,
             "Open or resume a thread scoped to a canonical workspace.")


def _action_tag(params: Any) -> str:
    """The tag of `params.action` (the `type` of a tagged action Struct): the key of
    `results` for methods whose actions are tagged Structs."""
    return type(params.action).__struct_config__.tag


def _execution(execution) -> None:
    register("run", execution.RunParams, execution.RunResult,
             "Start a standalone execution under its own PTY guardian (with `follow`: and "
             "stream its output).")
    register("Execution", execution.ExecutionParams, None,
             "Read execution history: list, get, read, observe, wait, explain, events, "
             "iterations.",
             results=execution.RESULTS, select=_action_tag)
    register("follow", execution.FollowParams, execution.FollowResult,
             "Stream an execution's output from an offset, live, until it ended: gaps explicit.")
    register("signal", execution.SignalParams, execution.SignalResult,
             "Send a signal to an execution's process group.")
    register("resolve", execution.ResolveParams, execution.ResolveResult,
             "Expand a unique prefix of an execution id.")
    register("cancel", execution.ControlParams, execution.ControlResult,
             "Cancel an execution: SIGTERM to its process group, SIGKILL after the grace.")
    register("pause", execution.ControlParams, execution.ControlResult,
             "Pause an execution: SIGSTOP to its process group.")
    register("resume", execution.ControlParams, execution.ControlResult,
             "Resume a paused execution: SIGCONT to its process group.")
    register("rerun", execution.RerunParams, execution.RerunResult,
             "Start a new execution like an old one (same argv, cwd, env, size), linked both ways.")
    EVENTS["follow"] = EVENTS["run"] = execution.FollowEvent


def _terminal(terminal) -> None:
    register("screen", terminal.ScreenParams, terminal.ScreenResult,
             "The current screen of an execution (text, or with colours).")
    register("input", terminal.InputParams, terminal.InputResult,
             "Send text, named keys or bytes to an execution's terminal.")
    register("resize", terminal.ResizeParams, terminal.ResizeResult,
             "Resize an execution's terminal.")
    register("attach", terminal.AttachParams, terminal.AttachResult,
             "Watch an execution live: repaint, then output events until it exits.")
    register("recording", terminal.RecordingParams, terminal.RecordingResult,
             "A page of an execution's recording: output with arrival times, sizes, gaps.")
    EVENTS["attach"] = terminal.AttachEvent


def _shell(shell) -> None:
    register("BashCommand", shell.BashCommandParams, None,
             "Run a command in the thread's persistent shell (or as a Task), check it, send it "
             "input, show its screen, inspect it, wait for its turn, or prompt it.",
             results=shell.RESULTS, select=_action_tag)


def _agent(agent) -> None:
    def action(params: agent.AgentParams) -> str:
        return "/".join(agent.result_key(params))

    register("Agent", agent.AgentParams, None,
             "Observe agent executions and submit native prompts once, with receipts.",
             results={"/".join(key): value for key, value in agent.RESULTS.items()},
             select=action)


def _transcript(transcript) -> None:
    register("transcript", transcript.TranscriptParams, transcript.TranscriptResult,
             "Read a run's exchange transcript (a thread or an execution), and follow it live.")
    EVENTS["transcript"] = transcript.TranscriptStreamEvent


def _temporary(temporary) -> None:
    register("Temporary", temporary.TemporaryParams, None,
             "List the thread's managed temporary helpers (revision, budget) or release "
             "named ones that nothing of the thread uses.",
             results=temporary.RESULTS, select=_action_tag)


def _projection(projection) -> None:
    register("subscribe", projection.SubscribeParams, projection.SubscribeResult,
             "Stream the UI projection of executions (start, progress, steps, tools, end), "
             "bounded per subscriber.")
    register("trace_snapshot", projection.TraceSnapshotParams, projection.TraceSnapshotResult,
             "An execution's projection now and its recent events, to merge after a reconnect.")
    EVENTS["subscribe"] = projection.ProjectionEvent


#: Each family's registrations, by its module name under `vigil.protocol.api`.
_FAMILIES: dict[str, Callable[[Any], None]] = {
    "daemon": _daemon, "scope": _scope, "execution": _execution, "terminal": _terminal,
    "shell": _shell, "agent": _agent, "transcript": _transcript, "temporary": _temporary,
    "projection": _projection,
}
#: Method → family. A test checks it against the families' registrations.
FAMILY = {
    "hello": "daemon", "ping": "daemon", "status": "daemon", "Initialize": "scope",
    "run": "execution", "Execution": "execution", "follow": "execution", "signal": "execution",
    "resolve": "execution", "cancel": "execution", "pause": "execution",
    "resume": "execution", "rerun": "execution", "screen": "terminal", "input": "terminal",
    "resize": "terminal", "attach": "terminal", "recording": "terminal", "BashCommand": "shell",
    "Agent": "agent", "transcript": "transcript", "Temporary": "temporary",
    "subscribe": "projection", "trace_snapshot": "projection",
}
_LOADED: set[str] = set()


def _load(family: str) -> None:
    if family not in _LOADED:
        _LOADED.add(family)
        _FAMILIES[family](importlib.import_module(f".api.{family}", __package__))
