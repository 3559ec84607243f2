"""`vigil mcp`: the spec's tools over MCP, on the official SDK's low-level server, as a
client of the daemon's socket.

A tool call is one RPC call of the same name (the spec's tools are vigil's methods), made
on a connection of its own (`daemon.DaemonPool`), so calls of one session run side by side
and a cancelled call cancels its daemon-side work. Answers go back as structured content
(the daemon's typed result, which the advertised output schema describes) plus a short text
rendering; a refusal or bad argument is a tool error (`isError`) with the daemon's code,
message and data — never a dead server.

What this server may do is narrowed twice: `--profile`/`--tools` decide which tools it
advertises and serves at all, and every thread it opens carries that narrowing into the
daemon, which enforces the authority table per call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import mcp_types as types
from mcp.server.lowlevel import Server

from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.version import VERSION

from .daemon import DaemonPool
from .render import render, render_error
from .tools import SPECS, served_tools, tool_schemas

INSTRUCTIONS = (
    "vigil runs commands under PTY guardians that outlive the daemon and keeps their history. "
    "Call Initialize with the absolute workspace path first, then quote its thread_id and "
    "workspace_root on every call. BashCommand runs commands in the thread's persistent "
    "shell; Execution reads what ran; Agent observes and prompts agent TUIs.")


@dataclass
class Caller:
    """Who a call acts for: the daemon principal and the wait profile."""

    principal: str = "local"
    wait_profile: str = "local"


@dataclass
class VigilMCP:
    """The tools of one `vigil mcp` process.

    `caller_of(ctx)` tells who an MCP request acts for (stdio: local; HTTP: the token's
    principal and the client's wait profile).
    """

    pool: DaemonPool
    profile: str = "full"
    allowlist: list[str] | None = None
    caller_of: Callable[[Any], Caller] = field(default=lambda ctx: Caller())

    def __post_init__(self) -> None:
        self.served = served_tools(self.profile, self.allowlist)
        self._tools = [self._tool(name) for name in self.served]

    def _tool(self, name: str) -> types.Tool:
        spec = SPECS[name]
        input_schema, output_schema = tool_schemas(name)
        return types.Tool(
            name=name, description=spec.description, input_schema=input_schema,
            output_schema=output_schema,
            annotations=types.ToolAnnotations(
                title=name, read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                open_world_hint=spec.open_world))

    def server(self) -> Server:
        return Server("vigil", version=VERSION, instructions=INSTRUCTIONS,
                      on_list_tools=self.list_tools, on_call_tool=self.call_tool)

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        args = dict(params.arguments or {})
        if name not in SPECS:
            return _error(ErrorCode.METHOD_NOT_FOUND, f"unknown tool {name!r}",
                          {"tools": self.served})
        if name not in self.served:
            return _error(ErrorCode.FORBIDDEN,
                          f"the {name} tool is not served by this vigil mcp (profile "
                          f"{self.profile!r}, tools {self.served})",
                          {"missing_authority": f"the {name} tool"})
        if name == "Initialize":
            args = self._narrowed(args)
        caller = self.caller_of(ctx)
        try:
            result = await self.pool.call(SPECS[name].method, args, principal=caller.principal,
                                          wait_profile=caller.wait_profile)
        except VigilError as exc:
            return _error(exc.code, exc.message, exc.data)
        return types.CallToolResult(content=[types.TextContent(text=render(name, result))],
                                    structured_content=result)

    def _narrowed(self, args: dict[str, Any]) -> dict[str, Any]:
        """Initialize as this server allows it: the thread's tools are at most the served
        ones, and the profile is this server's unless the caller names one."""
        granted = [t for t in self.served if t != "Initialize"]
        asked = args.get("tools")
        if asked is None:
            args["tools"] = granted
        elif isinstance(asked, list):
            args["tools"] = [t for t in asked if t in granted]
        args.setdefault("profile", self.profile)
        return args


def _error(code: Any, message: str, data: dict) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=render_error(str(code), message, data))],
        is_error=True)


async def serve_stdio(app: VigilMCP) -> None:
    from .stdio import stdio_streams

    server = app.server()
    try:
        async with stdio_streams() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await app.pool.aclose()

