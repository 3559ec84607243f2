"""Which scope a CLI command acts in.

The CLI opens a thread named "cli" in the workspace it is run from, so every `vigil`
command run in a project sees that project's executions, across daemon restarts too. The
workspace is `--workspace`, else `$VIGIL_WORKSPACE`, else the nearest enclosing directory
with a `.git`, else the current directory — the way editors decide what a project is.
"""

from __future__ import annotations

import os
from typing import Any


def default_workspace() -> str:
    explicit = os.environ.get("VIGIL_WORKSPACE")
    if explicit:
        return os.path.realpath(explicit)
    here = os.path.realpath(os.getcwd())
    probe = here
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return here
        probe = parent


class Scope:
    """The CLI's thread in one workspace; every call quotes its pair and returns the
    method's typed result (vigil.protocol.api)."""

    def __init__(self, client, workspace: str | None = None):
        self.client = client
        result = client.call_typed("Initialize", {
            "workspace_root": workspace or default_workspace(), "thread_name": "cli"})
        self.thread_id = result.thread_id
        self.workspace_root = result.workspace_root

    def params(self, **extra: Any) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "workspace_root": self.workspace_root, **extra}

    def call(self, method: str, **params: Any) -> Any:
        return self.client.call_typed(method, self.params(**params))

    def execution(self, action: dict[str, Any]) -> Any:
        return self.client.call_typed("Execution", self.params(action=action))

    def resolve(self, prefix: str) -> str:
        """The execution id that `prefix` names in this workspace. Not found says where to
        look: an id of another workspace, or one removed by retention, is not found."""
        from vigil.protocol.errors import ErrorCode, RemoteError

        try:
            return self.call("resolve", prefix=prefix).execution_id
        except RemoteError as exc:
            if exc.code != ErrorCode.NOT_FOUND:
                raise
            raise RemoteError(exc.code, f"no execution {prefix!r} in {self.workspace_root} "
                              "(`vigil ls --all` lists the ones kept: older ones are removed "
                              "by retention, and each workspace has its own)", exc.data) from None
