"""`vigil mcp --http HOST:PORT`: the same tools over MCP streamable HTTP, for remote-style
clients, behind bearer tokens (`tokens.py`).

- Every request must carry `Authorization: Bearer <token>` of a token that exists now; the
  SDK's bearer middleware answers 401 otherwise. The token's name is the principal
  (`http:<name>`) every daemon call of that request acts for, so two tokens never see each
  other's threads, executions, cursors or receipts. The SDK binds each MCP session to the
  principal that opened it.
- Loopback binds only, unless `--allow-remote`; tokens are required either way (there is
  no unauthenticated mode), and the SDK's DNS-rebinding protection is on for loopback hosts.
- Wait defaults follow the spec's profiles: `--wait-profile auto` picks `codex` or
  `chatgpt` (50 s) from the client's declared name, anything else the local 5 s.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from vigil.protocol.errors import ErrorCode, VigilError

from .server import Caller, VigilMCP
from .tokens import TokenStore


class TokenVerifier:
    """The SDK's `TokenVerifier`: a token of the store, as an access token whose client id
    is the principal."""

    def __init__(self, store: TokenStore):
        self.store = store

    async def verify_token(self, token: str) -> AccessToken | None:
        entry = self.store.verify(token)
        if entry is None:
            return None
        return AccessToken(token=token, client_id=entry.principal, scopes=[])


def parse_bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise VigilError(ErrorCode.INVALID_REQUEST, f"--http expects HOST:PORT, not {value!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def wait_profile_of(client_name: str) -> str:
    """The spec's wait profile of an HTTP client, from the name it declared."""
    name = client_name.lower()
    if "codex" in name:
        return "codex"
    if "chatgpt" in name or "openai" in name:
        return "chatgpt"
    if "claude" in name:
        return "claude"
    return "local"


def caller_for(wait_profile: str):
    def caller_of(ctx: Any) -> Caller:
        token = get_access_token()
        if token is None:  # the route refuses unauthenticated requests before this
            raise VigilError(ErrorCode.FORBIDDEN, "no authenticated principal")
        profile = wait_profile
        if profile == "auto":
            params = ctx.session.client_params
            profile = wait_profile_of(params.client_info.name if params is not None else "")
        return Caller(principal=token.client_id, wait_profile=profile)

    return caller_of


async def serve_http(app: VigilMCP, bind: str, *, allow_remote: bool, tokens: TokenStore,
                     wait_profile: str = "auto") -> None:
    import uvicorn

    host, port = parse_bind(bind)
    if not is_loopback(host) and not allow_remote:
        raise VigilError(ErrorCode.FORBIDDEN,
                         f"refusing to serve on {host}: not a loopback address (add "
                         "--allow-remote to serve other hosts; bearer tokens are always required)")
    if not tokens.entries():
        raise VigilError(ErrorCode.UNAVAILABLE,
                         f"no tokens in {tokens.path}: create one with `vigil token create NAME`")
    app.caller_of = caller_for(wait_profile)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    port = sock.getsockname()[1]
    url_host = f"[{host}]" if family == socket.AF_INET6 else host
    origin = f"http://{url_host}:{port}"
    # AuthSettings wants an issuer; vigil issues its own tokens (`vigil token`), so the
    # issuer is this server and no OAuth routes are mounted (no auth_server_provider).
    starlette_app = app.server().streamable_http_app(
        host=host, token_verifier=TokenVerifier(tokens),
        auth=AuthSettings(issuer_url=origin, resource_server_url=None))
    config = uvicorn.Config(starlette_app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    sys.stderr.write(f"vigil mcp: serving MCP on {origin}/mcp\n")
    sys.stderr.flush()
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
        with anyio.CancelScope(shield=True):
            await app.pool.aclose()
