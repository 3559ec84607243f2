"""Who may do what: the spec's authority table ("Discovery and authority"), enforced at the
dispatch seam for every scoped method.

| profile | observe (Execution, Agent reads) | prompt / send input |
|---|---|---|
| full, coding, terminal | yes | yes, in `wcgw` mode with BashCommand authority |
| read-only | yes | no |

An explicit tool allowlist narrows the profile: `Agent` may be exposed for observation
without `BashCommand`, but prompting needs trusted BashCommand authority as well.
`architect` mode never sends input or runs commands; restricted `code_writer` may run
commands in its shell but never delegates unrestricted input (no prompts, no raw input).
A refusal is `forbidden` and names the missing authority.
"""

from __future__ import annotations

from typing import Any

from vigil.protocol.errors import ErrorCode, VigilError

from .scopes import ThreadRecord

_PROFILE_TOOLS = {
    "full": {"BashCommand", "Execution", "Agent"},
    "coding": {"BashCommand", "Execution", "Agent"},
    "terminal": {"BashCommand", "Execution", "Agent"},
    "read-only": {"Execution", "Agent"},
}

#: Scoped methods and what each needs: ("tool", name) or ("input", None) or ("run", None).
_OBSERVE = {"Execution": "Execution", "resolve": "Execution", "screen": "Execution",
            "attach": "Execution"}


def tools_of(thread: ThreadRecord) -> set[str]:
    granted = set(_PROFILE_TOOLS.get(thread.profile, set()))
    if thread.tools is not None:
        granted &= set(thread.tools)
    return granted


def _deny(what: str, thread: ThreadRecord) -> VigilError:
    return VigilError(ErrorCode.FORBIDDEN, f"{what} (mode {thread.mode!r}, profile "
                      f"{thread.profile!r}, tools {sorted(tools_of(thread))})",
                      {"missing_authority": what})


def check(thread: ThreadRecord, method: str, params: Any) -> None:
    """Raise `forbidden` unless `thread` may call `method` with `params`."""
    tools = tools_of(thread)
    if method in _OBSERVE:
        if "Execution" not in tools and "Agent" not in tools:
            raise _deny("observation needs the Execution or Agent tool", thread)
        return
    if method == "Agent":
        if "Agent" not in tools:
            raise _deny("the Agent tool is not granted", thread)
        if getattr(params, "action", None) == "prompt":
            if "BashCommand" not in tools:
                raise _deny("prompting needs trusted BashCommand authority", thread)
            if thread.mode != "wcgw":
                raise _deny("prompting needs wcgw mode", thread)
        return
    if method in ("BashCommand", "run", "signal", "input", "resize"):
        if "BashCommand" not in tools:
            raise _deny("running commands and sending input need BashCommand authority", thread)
        if thread.mode == "architect":
            raise _deny("architect mode never runs commands or sends input", thread)
        # A tagged Struct keeps its tag in its class config, not as an attribute.
        sends_input = method == "input" or (
            method == "BashCommand" and type(params.action).__struct_config__.tag in
            ("send_text", "send_specials", "send_ascii"))
        if sends_input and thread.mode != "wcgw":
            raise _deny("sending raw input needs wcgw mode", thread)
        return
