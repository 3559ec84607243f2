"""Who may do what: the spec's authority table ("Discovery and authority"), declared where
each route is registered and enforced at the dispatch seam.

Every route states what it needs (a `Need`, or a function of its params for methods whose
actions differ); `Dispatcher.route` refuses to register a route without one, so a new method
can never be reachable by accident. The table, per thread (mode, profile, tool allowlist):

| need | granted when |
|---|---|
| `UNSCOPED` | always: the call names no thread (hello, ping, status, Initialize) |
| `EXECUTION` | the Execution tool |
| `AGENT` | the Agent tool (observation of agents) |
| `OBSERVE` | the Execution or the Agent tool (vigil's terminal views: screen, attach, resolve) |
| `SHELL` | the BashCommand tool, any mode (the shell's own views: BashCommand `screen`, `inspect`, `wait_for_turn`) |
| `RUN` | the BashCommand tool, and mode is not `architect` (run, signal, resize, commands) |
| `INPUT` | `RUN`, and mode `wcgw` (raw input, BashCommand `prompt`: restricted `code_writer` never delegates it) |
| `PROMPT` | the Agent tool, trusted BashCommand authority, and mode `wcgw` |

Profiles grant tools (`PROFILE_TOOLS`: every profile observes; `read-only` has no
BashCommand); an explicit allowlist only narrows them. A refusal is `forbidden` and names
the missing authority.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

from vigil.protocol.api.scope import PROFILE_TOOLS
from vigil.protocol.errors import ErrorCode, VigilError

from .scopes import ThreadRecord


class Need(enum.Enum):
    UNSCOPED = "unscoped"
    EXECUTION = "execution"
    AGENT = "agent"
    OBSERVE = "observe"
    SHELL = "shell"
    RUN = "run"
    INPUT = "input"
    PROMPT = "prompt"


#: A route's declaration: a fixed need, or one computed from its decoded params.
Authority = Need | Callable[[Any], Need]



def tools_of(thread: ThreadRecord) -> list[str]:
    """The tools `thread` may use: its profile's, narrowed by its allowlist."""
    granted = PROFILE_TOOLS.get(thread.profile, ())
    if thread.tools is None:
        return list(granted)
    allowed = set(thread.tools)
    return [tool for tool in granted if tool in allowed]


def need_of(authority: Authority, params: Any) -> Need:
    return authority if isinstance(authority, Need) else authority(params)


def _deny(what: str, thread: ThreadRecord, tools: list[str]) -> VigilError:
    return VigilError(ErrorCode.FORBIDDEN, f"{what} (mode {thread.mode!r}, profile "
                      f"{thread.profile!r}, tools {sorted(tools)})", {"missing_authority": what})


def check(thread: ThreadRecord, need: Need) -> None:
    """Raise `forbidden` unless `thread` has `need`."""
    tools = tools_of(thread)
    if need is Need.UNSCOPED:
        return
    if need is Need.EXECUTION:
        if "Execution" not in tools:
            raise _deny("the Execution tool is not granted", thread, tools)
    elif need is Need.AGENT:
        if "Agent" not in tools:
            raise _deny("the Agent tool is not granted", thread, tools)
    elif need is Need.OBSERVE:
        if "Execution" not in tools and "Agent" not in tools:
            raise _deny("observation needs the Execution or Agent tool", thread, tools)
    elif need is Need.SHELL:
        if "BashCommand" not in tools:
            raise _deny("the BashCommand tool is not granted", thread, tools)
    elif need is Need.PROMPT:
        if "Agent" not in tools:
            raise _deny("the Agent tool is not granted", thread, tools)
        if "BashCommand" not in tools:
            raise _deny("prompting needs trusted BashCommand authority", thread, tools)
        if thread.mode != "wcgw":
            raise _deny("prompting needs wcgw mode", thread, tools)
    elif need in (Need.RUN, Need.INPUT):
        if "BashCommand" not in tools:
            raise _deny("running commands and sending input need BashCommand authority",
                        thread, tools)
        if thread.mode == "architect":
            raise _deny("architect mode never runs commands or sends input", thread, tools)
        if need is Need.INPUT and thread.mode != "wcgw":
            raise _deny("sending raw input needs wcgw mode", thread, tools)
    else:  # pragma: no cover - every Need is handled above
        raise AssertionError(need)
