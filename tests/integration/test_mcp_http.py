"""`vigil mcp --http`: bearer tokens as principals (issue 13). Each token is `http:<name>`;
two tokens cannot see each other's threads, executions or cursors (answered exactly like
absent ones); a missing, wrong or revoked token is refused; a non-loopback bind is refused
without --allow-remote; an HTTP client declaring itself Codex gets the spec's 50 s wait
default (capped at a wait's 30 s maximum), never raising an explicit timeout.
"""

from __future__ import annotations

import json

import pytest

from tests.support.executions import workspace  # noqa: F401 (fixture)
from tests.support.mcp import HttpServer, mcp_http, run


def token(home, name: str) -> str:
    out = home.cli("token", "create", name, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["token"]


@pytest.fixture
def tokens(home, daemon):
    return {"alice": token(home, "alice"), "bob": token(home, "bob")}


@pytest.fixture
def server(home, tokens):
    s = HttpServer(home)
    try:
        yield s
    finally:
        s.stop()


def test_token_file_keeps_only_hashes(home, tokens):
    path = home.state / "mcp-tokens.json"
    assert path.stat().st_mode & 0o777 == 0o600
    stored = path.read_text()
    assert all(t not in stored for t in tokens.values())
    listed = home.cli("token", "list")
    assert listed.stdout.splitlines() == ["alice  http:alice", "bob  http:bob"]
    again = home.cli("token", "create", "alice")
    assert again.returncode == 1 and "exists" in again.stderr
    bad = home.cli("token", "create", "no spaces")
    assert bad.returncode == 2 and "token names are" in bad.stderr  # bad usage (issue 12)


def test_two_tokens_cannot_see_each_other(home, server, tokens, workspace):
    async def body():
        async with mcp_http(server.url, tokens["alice"]) as alice:
            await alice.initialize(workspace)
            done = await alice.ok("BashCommand", action={"type": "command", "command": "echo a"})
            eid = done["execution_id"]
            page = (await alice.execution({"type": "read", "execution_id": eid}))["page"]
            alice_thread = alice.thread_id
        async with mcp_http(server.url, tokens["bob"]) as bob:
            await bob.initialize(workspace)
            assert bob.thread_id != alice_thread
            assert (await bob.execution({"type": "list"}))["total"] == 0
            absent = await bob.error("Execution", action={"type": "get", "execution_id": "1" * 32})
            theirs = await bob.error("Execution", action={"type": "get", "execution_id": eid})
            assert theirs == absent and theirs[0] == "not_found"
            cursor = await bob.error("Execution", action={"type": "read", "execution_id": eid,
                                                          "cursor": page["next_cursor"]})
            assert cursor[0] in ("not_found", "invalid_cursor")
            # Alice's thread id is no authority for bob: like a thread that does not exist.
            stolen = await bob.error("Initialize", workspace_root=str(workspace),
                                     thread_id=alice_thread)
            made_up = await bob.error("Initialize", workspace_root=str(workspace),
                                      thread_id="e" * 32)
            assert stolen == made_up and stolen[0] == "not_found"
            bob.thread_id = alice_thread
            assert await bob.error("Execution", action={"type": "list"}) == (
                "not_found", "not_found: no such thread for this workspace; call Initialize\n"
                '{"field":"params.thread_id"}')
    run(body)


def test_missing_wrong_and_revoked_tokens_are_refused(home, server, tokens):
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as http:
        for auth in ({}, {"Authorization": "Bearer vigil_wrong"},
                     {"Authorization": f"Basic {tokens['alice']}"}):
            r = http.post(server.url, json=body, headers={**headers, **auth})
            assert r.status_code == 401, (auth, r.status_code, r.text)
            assert r.json()["error"] == "invalid_token"
        ok = http.post(server.url, json=body,
                       headers={**headers, "Authorization": f"Bearer {tokens['bob']}"})
        assert ok.status_code == 200
        assert home.cli("token", "revoke", "bob").returncode == 0
        r = http.post(server.url, json=body,
                      headers={**headers, "Authorization": f"Bearer {tokens['bob']}"})
        assert r.status_code == 401


def test_non_loopback_binds_are_refused_without_allow_remote(home, tokens):
    out = home.cli("mcp", "--http", "0.0.0.0:0", timeout=60)
    assert out.returncode == 1
    assert "not a loopback address" in out.stderr and "--allow-remote" in out.stderr


def test_http_without_tokens_refuses_to_start(home, daemon):
    out = home.cli("mcp", "--http", "127.0.0.1:0", timeout=60)
    assert out.returncode == 1 and "vigil token create" in out.stderr


def test_codex_clients_get_the_long_wait_default(home, server, tokens, workspace):
    async def body():
        async with mcp_http(server.url, tokens["alice"], client_name="codex-mcp-client") as m:
            await m.initialize(workspace)
            done = await m.ok("BashCommand", action={"type": "command", "command": "true"})
            assert (done["requested_wait_ms"], done["effective_wait_ms"]) == (None, 50000)
            waited = await m.execution({"type": "wait", "execution_ids": [done["execution_id"]],
                                        "after": (await m.execution({"type": "list"}))["catalog_cursor"],
                                        "timeout_seconds": 0.2})
            assert waited["effective_timeout_seconds"] == 0.2  # an explicit one is kept
        async with mcp_http(server.url, tokens["alice"], client_name="claude-code") as m:
            await m.initialize(workspace)
            done = await m.ok("BashCommand", action={"type": "command", "command": "true"})
            assert done["effective_wait_ms"] == 5000
    run(body)
