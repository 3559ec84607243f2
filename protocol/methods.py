"""The registry of RPC methods: name → params type, result type, one-line summary.

Both the daemon (to validate params before dispatch) and `vigil protocol schema` (to export
JSON Schema for plugin authors) read this one table, so the two cannot drift apart.
"""

from __future__ import annotations


import msgspec
from typing import Any

from .api import agent as agent_api, daemon as daemon_api, execution as execution_api, scope as scope_api, shell as shell_api


class Method(msgspec.Struct, frozen=True):
    name: str
    params: Any
    result: Any
    summary: str


_REGISTRY: dict[str, Method] = {}


def register(name: str, params: Any, result: Any, summary: str) -> Method:
    if name in _REGISTRY:
        raise ValueError(f"method {name!r} registered twice")
    method = _REGISTRY[name] = Method(name, params, result, summary)
    return method


def lookup(name: str) -> Method | None:
    return _REGISTRY.get(name)


def all_methods() -> list[Method]:
    return sorted(_REGISTRY.values(), key=lambda m: m.name)


register("hello", daemon_api.HelloParams, daemon_api.HelloResult,
         "Handshake: must be the first frame; negotiates protocol and encoding.")
register("ping", daemon_api.PingParams, daemon_api.PingResult, "Liveness check.")
register("status", daemon_api.StatusParams, daemon_api.StatusResult,
         "Daemon version, pid, epoch, socket, state dir, uptime and load.")
register("Initialize", scope_api.InitializeParams, scope_api.InitializeResult,
         "Open or resume a thread scoped to a canonical workspace.")
register("run", execution_api.RunParams, execution_api.RunResult,
         "Start a standalone execution under its own PTY guardian.")
register("Execution", execution_api.ExecutionParams, execution_api.ExecutionResult,
         "Read execution history: list, get, read (and observe, wait, explain).")
register("signal", execution_api.SignalParams, execution_api.SignalResult,
         "Send a signal to an execution's process group.")
register("resolve", execution_api.ResolveParams, execution_api.ResolveResult,
         "Expand a unique execution id prefix within a scope.")
register("screen", execution_api.ScreenParams, execution_api.ScreenResult,
         "The current screen of an execution, as text or with ANSI attributes.")
register("BashCommand", shell_api.BashCommandParams, shell_api.BashCommandResult,
         "Run a command in the thread's persistent shell, check it, or send it input.")
register("input", execution_api.InputParams, execution_api.InputResult,
         "Send text, named keys or bytes to an execution's terminal.")
register("resize", execution_api.ResizeParams, execution_api.ResizeResult,
         "Resize an execution's terminal.")
register("attach", execution_api.AttachParams, execution_api.AttachResult,
         "Watch an execution live: repaint, then output events until it exits.")
register("Agent", agent_api.AgentParams, agent_api.AgentResult,
         "Observe agent executions and submit native prompts once, with receipts.")
