"""`vigil mcp` (the MCP server, stdio or HTTP) and `vigil token create|list|revoke` (its
HTTP bearer tokens). The MCP SDK is imported only when `vigil mcp` runs, so every other
command stays fast."""

from __future__ import annotations

import argparse

from vigil.protocol.api.scope import PROFILE_TOOLS
from vigil.protocol.errors import ErrorCode, VigilError

from .. import output
from .common import json_flag

TOOL_NAMES = ("BashCommand", "Execution", "Agent")


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from ..autostart import connect
    from ..mcp.daemon import DaemonPool
    from ..mcp.server import VigilMCP, serve_stdio

    allowlist = None
    if args.tools is not None:
        allowlist = [t.strip() for t in args.tools.split(",") if t.strip()]
        unknown = sorted(set(allowlist) - set(TOOL_NAMES))
        if unknown:
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"--tools: unknown tool(s) {', '.join(unknown)}; choose from "
                             f"{', '.join(TOOL_NAMES)}")
    # Start the daemon now (as every command does), so the first tool call does not wait.
    connect(autostart=not args.no_autostart).close()
    pool = DaemonPool(client_name="vigil-mcp-http" if args.http else "vigil-mcp",
                      autostart=not args.no_autostart)
    app = VigilMCP(pool, profile=args.profile, allowlist=allowlist)
    if args.http is None:
        anyio.run(serve_stdio, app)
        return output.OK
    from ..mcp.http import serve_http
    from ..mcp.tokens import TokenStore

    anyio.run(lambda: serve_http(app, args.http, allow_remote=args.allow_remote,
                                 tokens=TokenStore(), wait_profile=args.wait_profile))
    return output.OK


def _tokens():
    from ..mcp.tokens import TokenStore

    return TokenStore()


def _guard(fn):
    """Token store errors (bad name, duplicate, unknown, state dir not private) as CLI errors."""
    def run(args: argparse.Namespace) -> int:
        from vigil.protocol.paths import PrivateDirError

        from ..mcp.tokens import TokenError

        try:
            return fn(args)
        except TokenError as exc:
            raise VigilError(exc.code, str(exc)) from None
        except PrivateDirError as exc:
            raise VigilError(ErrorCode.FORBIDDEN, str(exc)) from None
    return run


@_guard
def cmd_token_create(args: argparse.Namespace) -> int:
    token = _tokens().create(args.name)
    output.emit({"name": args.name, "principal": f"http:{args.name}", "token": token},
                args.json, lambda r: f"{r['token']}\n(shown once; the principal is "
                                     f"{r['principal']}; only its hash is stored)")
    return output.OK


@_guard
def cmd_token_list(args: argparse.Namespace) -> int:
    entries = _tokens().entries()
    rows = [{"name": e.name, "principal": e.principal, "created_unix_ms": e.created_unix_ms}
            for e in entries]
    output.emit({"tokens": rows}, args.json, lambda r: "\n".join(
        f"{t['name']}  {t['principal']}" for t in r["tokens"]) or "no tokens")
    return output.OK


@_guard
def cmd_token_revoke(args: argparse.Namespace) -> int:
    _tokens().revoke(args.name)
    output.emit({"revoked": args.name}, args.json, lambda r: f"revoked {r['revoked']}")
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "mcp", help="serve the MCP tools (Initialize, BashCommand, Execution, Agent)",
        description="Serve vigil's MCP tools on stdio (for Claude Code, Codex, any MCP client), "
                    "or on streamable HTTP with --http (bearer tokens: vigil token create).")
    p.add_argument("--profile", choices=sorted(PROFILE_TOOLS), default="full",
                   help="tools to serve: full/coding/terminal all three, read-only no "
                        "BashCommand (default: full)")
    p.add_argument("--tools", default=None, metavar="LIST",
                   help="comma-separated allowlist that narrows the profile, e.g. "
                        "Execution,Agent (Agent without BashCommand observes only)")
    p.add_argument("--http", default=None, metavar="HOST:PORT",
                   help="serve streamable HTTP on HOST:PORT (loopback only unless "
                        "--allow-remote; port 0 picks one and prints it)")
    p.add_argument("--allow-remote", action="store_true",
                   help="with --http: allow a non-loopback address (tokens still required)")
    p.add_argument("--wait-profile", choices=("auto", "local", "claude", "chatgpt", "codex"),
                   default="auto",
                   help="with --http: whose default omitted waits take (auto: 50 s for "
                        "ChatGPT/Codex clients by their declared name, else 5 s)")
    p.set_defaults(handler=cmd_mcp)

    p = sub.add_parser("token", help="bearer tokens of `vigil mcp --http`")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    q = tsub.add_parser("create", help="create a token NAME (principal http:NAME); printed once")
    q.add_argument("name", help="the token's name; its principal is http:NAME")
    json_flag(q)
    q.set_defaults(handler=cmd_token_create)
    q = tsub.add_parser("list", help="list token names (never the tokens)")
    json_flag(q)
    q.set_defaults(handler=cmd_token_list)
    q = tsub.add_parser("revoke", help="revoke token NAME (effective at the next request)")
    q.add_argument("name", help="the name given at `vigil token create`")
    json_flag(q)
    q.set_defaults(handler=cmd_token_revoke)
