"""`Initialize`: open or resume a thread scoped to one canonical workspace.

Every later `Execution`/`Agent`/`BashCommand`/`run` call carries the exact `thread_id` and
`workspace_root` returned here; a mismatch reads exactly like a thread that does not exist.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Mode = Literal["wcgw", "architect", "code_writer"]
Profile = Literal["full", "coding", "terminal", "read-only"]
InitializeType = Literal["first_call", "status", "user_asked_mode_change",
                         "user_asked_change_workspace", "reset_shell"]


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
    #: profile's default set.
    tools: list[str] | None = None


class InitializeResult(msgspec.Struct, kw_only=True):
    """The scope to quote back on every later call."""

    thread_id: str
    workspace_root: str
    mode: str
    profile: str
    tools: list[str]
    resumed: bool
    data: dict[str, Any] = {}
