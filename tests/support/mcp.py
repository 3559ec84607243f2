"""Driving `vigil mcp` the way an MCP client does: the SDK's own `stdio_client` (or its
streamable HTTP client) and `ClientSession`, against a real daemon of a `VigilHome`.

Tests are plain functions that call `anyio.run` (the SDK is anyio-based; the suite's
pytest-trio mode is for the daemon's own trio tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.support.daemon import VigilHome, wait_for


class McpScope:
    """A `ClientSession` plus the thread `Initialize` returned, quoted on every call."""

    def __init__(self, session: ClientSession):
        self.session = session
        self.thread_id = ""
        self.workspace_root = ""

    async def initialize(self, workspace: Path | str, **params) -> dict:
        init = await self.ok("Initialize", workspace_root=str(workspace), **params)
        self.thread_id, self.workspace_root = init["thread_id"], init["workspace_root"]
        return init

    async def call(self, tool: str, **args) -> types.CallToolResult:
        if tool != "Initialize":
            args = {"thread_id": self.thread_id, "workspace_root": self.workspace_root, **args}
        return await self.session.call_tool(tool, args)

    async def ok(self, tool: str, **args) -> Any:
        result = await self.call(tool, **args)
        assert not result.is_error, result.content[0].text
        assert result.content[0].type == "text" and result.content[0].text
        return result.structured_content

    async def error(self, tool: str, **args) -> tuple[str, str]:
        """(code, whole text) of a tool error."""
        result = await self.call(tool, **args)
        assert result.is_error, result
        text = result.content[0].text
        return text.split(":", 1)[0], text

    async def execution(self, action: dict) -> dict:
        return (await self.ok("Execution", action=action))["data"]


@asynccontextmanager
async def mcp_stdio(home: VigilHome, *args: str, errlog=None):
    """`vigil mcp ARGS` over stdio, initialized (the MCP handshake, not vigil's)."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "vigil.client.cli", "mcp", *args], env=home.env)
    with open(home.root / "mcp-stderr.log", "a") as log:
        async with stdio_client(params, errlog=errlog or log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield McpScope(session)


class HttpServer:
    """`vigil mcp --http 127.0.0.1:0 ARGS` as a child process; `url` once it listens."""

    def __init__(self, home: VigilHome, *args: str):
        self.log = home.root / "mcp-http.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vigil.client.cli", "mcp", "--http", "127.0.0.1:0", *args],
            env=home.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.log, "w"))
        self.url = self._wait_url()

    def _wait_url(self, timeout: float = 30.0) -> str:
        def listening() -> str | None:
            text = self.log.read_text()
            for line in text.splitlines():
                if line.startswith("vigil mcp: serving MCP on "):
                    return line.rsplit(" ", 1)[1]
            if self.proc.poll() is not None:
                raise AssertionError(f"vigil mcp --http exited {self.proc.returncode}: {text}")
            return None

        return wait_for(listening, timeout, "vigil mcp --http to listen")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@asynccontextmanager
async def mcp_http(url: str, token: str | None, client_name: str = "vigil-tests"):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(
                    name=client_name, version="1")) as session:
                await session.initialize()
                yield McpScope(session)


def run(fn, *args) -> Any:
    """Run an async test body on anyio's default backend."""
    return anyio.run(fn, *args)


def usage_events(home: VigilHome) -> list[dict]:
    path = home.state / "usage.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
