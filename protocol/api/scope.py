"""`Initialize`: open or resume a thread scoped to one canonical workspace, and `Scoped`,
the pair every later call quotes.

Every later `Execution`/`Agent`/`BashCommand`/`run` call carries the exact `thread_id` and
`workspace_root` returned here; a mismatch reads exactly like a thread that does not exist.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Mode = Literal["wcgw", "architect", "code_writer"]
Profile = Literal["full", "coding", "terminal", "read-only"]
Tool = Literal["BashCommand", "Execution", "Agent"]
#: The tools each profile grants when no allowlist narrows it (spec: "Discovery and
#: authority": every profile observes; `read-only` has no BashCommand). The daemon enforces
#: it per thread; `vigil mcp --profile` advertises from it. The order is Initialize's.
PROFILE_TOOLS: dict[str, tuple[str, ...]] = {
    "full": ("BashCommand", "Execution", "Agent"),
    "coding": ("BashCommand", "Execution", "Agent"),
    "terminal": ("BashCommand", "Execution", "Agent"),
    "read-only": ("Execution", "Agent"),
}
InitializeType = Literal["first_call", "status", "user_asked_mode_change",
                         "user_asked_change_workspace", "reset_shell"]


class Scoped(msgspec.Struct, kw_only=True):
    """Every scoped call carries the exact pair `Initialize` returned."""

    thread_id: str
    workspace_root: str


class InitializeParams(msgspec.Struct, kw_only=True):
    """Open a thread (new, resumed by id, or resumed by name) for a workspace."""

    workspace_root: str
    type: InitializeType = "first_call"
    thread_id: str = ""
    #: A stable name (for example "cli") resumes the same thread for this workspace every
    #: time, so a tool without storage of its own keeps one scope per workspace.
    thread_name: str = ""
    mode: Mode = "wcgw"
    profile: Profile = "full"
    #: An explicit tool allowlist (for example ["Execution", "Agent"]); None means the
    #: profile's default set. It only narrows the profile, never widens it; names of tools
    #: vigil does not serve (a wcgw client's "ReadFiles") are accepted and grant nothing.
    tools: list[str] | None = None


class HerdrHint(msgspec.Struct, kw_only=True):
    """Whether the Herdr backend is configured (seeds/000, "Operator configuration"): from
    the environment alone — no file read, no subprocess, no path; it grants nothing."""

    configuration_present: bool
    availability: Literal["disabled", "unknown"]
    reason: Literal["configuration_missing", "configuration_not_validated"]


class AgentBackends(msgspec.Struct, kw_only=True):
    herdr: HerdrHint


class InitializeData(msgspec.Struct, kw_only=True):
    agent_backends: AgentBackends


class InitializeResult(msgspec.Struct, kw_only=True):
    """The scope to quote back on every later call, and the authority it carries."""

    thread_id: str
    workspace_root: str
    mode: Mode
    profile: Profile
    #: The tools this thread may call: the profile's set, narrowed by the allowlist.
    tools: list[Tool]
    resumed: bool
    data: InitializeData
