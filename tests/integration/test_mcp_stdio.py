"""`vigil mcp` over stdio, driven by the MCP SDK's own client (issue 13, "Tests"): the tools
and their schemas; a command run, read with cursors, observed, waited on and explained; a
native prompt to the fake agent once per prompt_id; bad arguments as tool errors with the
server alive; `--profile`/`--tools`; long waits beside other calls, and a cancelled call
cancelling its daemon-side wait.
"""

from __future__ import annotations

import json
import time

import anyio
import jsonschema
import pytest

from tests.integration.test_agent_prompt import FAKE_AGENT
from tests.support.daemon import wait_for
from tests.support.executions import workspace  # noqa: F401 (fixture)
from tests.support.mcp import mcp_stdio, run, usage_events

EID = "0" * 32


def refs_resolve(schema: dict) -> None:
    """Every `$ref` of a tool schema points into its own `$defs` (strict clients resolve
    nothing outside the document)."""
    defs = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node:
                assert node["$ref"].startswith("#/$defs/"), node["$ref"]
                assert node["$ref"][len("#/$defs/"):] in defs, node["$ref"]
            assert "discriminator" not in node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def test_tools_annotations_and_schemas(home, daemon):
    async def body():
        async with mcp_stdio(home) as m:
            tools = {t.name: t for t in (await m.session.list_tools()).tools}
            assert list(tools) == ["Initialize", "BashCommand", "Execution", "Agent", "Temporary"]
            ex, ag, bash = tools["Execution"].annotations, tools["Agent"].annotations, \
                tools["BashCommand"].annotations
            assert (ex.read_only_hint, ex.open_world_hint) == (True, False)
            assert (ag.read_only_hint, ag.destructive_hint, ag.open_world_hint) == (False, True, True)
            assert (bash.read_only_hint, bash.destructive_hint) == (False, True)
            for tool in tools.values():
                for schema in (tool.input_schema, tool.output_schema):
                    assert schema["type"] == "object"
                    jsonschema.Draft202012Validator.check_schema(schema)
                    refs_resolve(schema)
                # Input schemas are one object at the top (no anyOf/oneOf there: some model
                # APIs refuse it), carrying the spec's parameter names.
                assert not {"anyOf", "oneOf", "allOf", "$ref"} & set(tool.input_schema)
            assert set(tools["Execution"].input_schema["required"]) == {
                "thread_id", "workspace_root", "action"}
            assert {"action", "target", "prompt_id", "backend", "approval_id"} <= set(
                tools["Agent"].input_schema["properties"])
            assert "approve" in json.dumps(tools["Agent"].input_schema["properties"]["action"])
            # The actions of issue 15 follow from the protocol's registry.
            for tool, tags in (("Execution", {"events", "iterations"}),
                               ("BashCommand", {"rerun"})):
                schema = json.dumps(tools[tool].input_schema["properties"]["action"])
                assert all(f'"{tag}"' in schema for tag in tags), (tool, tags)
    run(body)


def test_events_and_rerun_through_mcp(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            done = await m.ok("BashCommand", action={"type": "command", "command": "echo once"})
            again = await m.ok("BashCommand", action={"type": "rerun",
                                                      "execution_id": done["execution_id"]})
            assert again["rerun_of"] == done["execution_id"]
            log = await m.execution({"type": "events", "execution_id": done["execution_id"]})
            assert [e["message"] for e in log["events"] if e["kind"] == "rerun"] == \
                [f"rerun as {again['execution']['execution_id']}"]
            its = await m.execution({"type": "iterations", "execution_id": done["execution_id"]})
            assert [i["command"] for i in its["iterations"]] == ["echo once", "echo once"]
    run(body)


def test_run_read_with_cursors_observe_wait_explain(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            done = await m.ok("BashCommand", action={
                "type": "command", "command": "for i in $(seq 1 300); do echo line $i; done"})
            assert (done["status"], done["exit_code"]) == ("completed", 0)
            eid = done["execution_id"]
            expected = "".join(f"line {i}\r\n" for i in range(1, 301))
            text, cursor, pages = "", None, 0
            while True:
                action = {"type": "read", "execution_id": eid, "page_bytes": 512}
                if cursor:
                    action["cursor"] = cursor
                page = (await m.execution(action))["page"]
                text, cursor, pages = text + page["text"], page["next_cursor"], pages + 1
                if not page["has_more"]:
                    break
            assert text == expected and pages == -(-len(expected) // 512)
            listed = await m.execution({"type": "list"})
            assert eid in [e["execution_id"] for e in listed["executions"]]
            observed = await m.ok("Execution", action={"type": "observe", "items": [
                {"execution_id": eid, "page_bytes": 64}, {"execution_id": EID}]})
            assert (observed["status"], observed["code"]) == (
                "completed_with_issues", "execution_observation_issues")
            items = observed["data"]["items"]
            assert items[0]["execution"]["exit_code"] == 0 and items[0]["page"]["text"] == expected[:64]
            assert items[1]["errors"] == [{"stage": "refresh", "code": "not_found",
                                           "message": "execution not found"}]
            waited = await m.execution({"type": "wait", "execution_ids": [eid],
                                        "after": observed["data"]["catalog_cursor"],
                                        "timeout_seconds": 0})
            assert (waited["outcome"], waited["effective_timeout_seconds"]) == ("timeout", 0)
            explained = await m.execution({"type": "explain", "execution_id": eid})
            assert explained["execution_id"] == eid and explained["state"] == "exited"
            got = await m.execution({"type": "get", "execution_id": eid})
            assert got["execution"]["command"].startswith("for i in")
    run(body)


def test_prompt_the_fake_agent_once_per_prompt_id(home, daemon, workspace):
    log = home.root / "agent.log"

    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            task = await m.ok("BashCommand", action={
                "type": "command", "command": f"FAKE_AGENT_LOG={log} exec {FAKE_AGENT}"},
                wait_policy="task")
            assert (task["status"], task["effective_wait_mode"], task["effective_wait_ms"]) == (
                "background", "task", 0)
            agent = task["execution_id"]
            # Until the daemon reports the prompt box (a wait, not a poll).
            cursor, deadline = None, time.monotonic() + 60
            while True:
                action = {"type": "wait", "execution_ids": [agent], "timeout_seconds": 20,
                          "events": ["awaiting_input"]}
                if cursor:
                    action["after"] = cursor
                got = await m.execution({"type": "get", "execution_id": agent})
                state = got["execution"]["recognized_state"]
                if state == "awaiting_input":
                    break
                assert time.monotonic() < deadline, f"the fake agent is still {state!r} after 60 s"
                cursor = (await m.execution(action))["catalog_cursor"]
            args = dict(action="prompt", target=agent, prompt_id="p1", text="hello there",
                        recognizer="claude", timeout_seconds=20)
            first = (await m.ok("Agent", **args))["data"]
            assert first["replayed"] is False and first["receipt"]["delivery"] == "delivered"
            again = (await m.ok("Agent", **args))["data"]
            assert again["replayed"] is True and again["receipt"] == first["receipt"]
            code, text = await m.error("Agent", **{**args, "text": "something else"})
            assert code == "conflict" and "p1" in text
            receipt = (await m.ok("Agent", action="wait", target=agent, prompt_id="p1",
                                  timeout_seconds=0))["data"]["receipt"]
            assert receipt["prompt_id"] == "p1"
        assert log.read_text().splitlines() == ["hello there"]  # sent exactly once
    run(body)


def test_bad_arguments_are_tool_errors_and_the_server_lives_on(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            code, text = await m.error("Initialize", workspace_root="relative/path")
            assert code == "invalid_request" and "absolute path" in text
            await m.initialize(workspace)
            assert (await m.error("Nope"))[0] == "method_not_found"
            code, text = await m.error("Execution", action={"type": "list", "limit": "ten"})
            assert code == "invalid_request" and "$.params.action.limit" in text
            code, text = await m.error("Execution", action={"type": "get", "execution_id": "x"})
            assert code == "invalid_request" and '"field":"params.action.execution_id"' in text
            code, _ = await m.error("Execution", action={"type": "get", "execution_id": EID})
            assert code == "not_found"
            result = await m.session.call_tool("Execution", {"action": {"type": "list"}})
            assert result.is_error and "thread_id" in result.content[0].text
            # The spec's detail: a bad request is refused whole before admission — a wrong
            # thread with bad items is invalid_request, never not_found.
            result = await m.session.call_tool("Execution", {
                "thread_id": "f" * 32, "workspace_root": m.workspace_root,
                "action": {"type": "observe", "items": []}})
            assert result.is_error and result.content[0].text.startswith("invalid_request")
            result = await m.session.call_tool("Execution", {
                "thread_id": "f" * 32, "workspace_root": m.workspace_root,
                "action": {"type": "wait", "execution_ids": [EID], "timeout_seconds": 31}})
            assert result.is_error and result.content[0].text.startswith("invalid_request")
            # Still serving.
            assert (await m.execution({"type": "list"}))["total"] == 0
    run(body)


@pytest.mark.parametrize("flags,served", [
    (("--tools", "Execution,Agent"), ["Initialize", "Execution", "Agent"]),
    (("--profile", "read-only"), ["Initialize", "Execution", "Agent"]),
    (("--tools", "Agent"), ["Initialize", "Agent"]),
])
def test_profile_and_tools_narrow_what_is_advertised_and_callable(home, daemon, workspace,
                                                                  flags, served):
    async def body():
        async with mcp_stdio(home, *flags) as m:
            assert [t.name for t in (await m.session.list_tools()).tools] == served
            init = await m.initialize(workspace, tools=["BashCommand", "Execution", "Agent"])
            assert init["tools"] == [t for t in served if t != "Initialize"]
            code, text = await m.error("BashCommand", action={"type": "status_check"})
            assert code == "forbidden" and "the BashCommand tool" in text
            # The daemon enforces the narrowed thread too: prompting needs BashCommand.
            code, text = await m.error("Agent", action="prompt", target=EID, prompt_id="p",
                                       text="t")
            assert code == "forbidden"
            assert ("prompting needs trusted BashCommand authority" in text
                    or "the Agent tool is not granted" in text)
    run(body)


def test_long_waits_do_not_block_and_cancel_reaches_the_daemon(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            task = await m.ok("BashCommand", action={"type": "command", "command": "sleep 60"},
                              wait_policy="task")
            eid = task["execution_id"]
            t0 = time.monotonic()

            async def long_wait():
                with anyio.CancelScope() as scope:
                    waiting_scope.append(scope)
                    await m.execution({"type": "wait", "execution_ids": [eid],
                                       "events": ["exited"], "timeout_seconds": 30})

            waiting_scope: list = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_wait)
                # Other calls of the same session go on while the wait runs (were they
                # queued behind it, they would answer after its 30 s, past the bound below).
                for _ in range(3):
                    assert (await m.execution({"type": "list"}))["total"] >= 1
                waiting_scope[0].cancel()
            assert time.monotonic() - t0 < 20
        return eid

    run(body)
    # The daemon saw the wait abandoned (its connection closed, the handler cancelled) long
    # before its 30 s deadline.
    abandoned = wait_for(lambda: [e for e in usage_events(home)
                                  if e["event"] == "tool_call" and e.get("action") == "wait"
                                  and e["outcome"] == "abandoned"],
                         what="the abandoned wait in the usage log")
    assert abandoned[0]["duration_ms"] < 20_000


def test_bash_command_views_and_policies_through_mcp(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            quick = await m.ok("BashCommand", action={"type": "command", "command": "echo quick"},
                               wait_policy="adaptive", wait_for_seconds=20)
            assert (quick["status"], quick["exit_code"], quick["output"]) == (
                "completed", 0, "quick\r\n")
            assert (quick["requested_wait_policy"], quick["requested_wait_ms"],
                    quick["effective_wait_mode"], quick["effective_wait_ms"]) == (
                "adaptive", 20000, "task_inline", 20000)
            slow = await m.ok("BashCommand", action={"type": "command", "command": "sleep 30"},
                              wait_policy="adaptive", wait_for_seconds=0.2)
            assert (slow["status"], slow["promoted"]) == ("background", True)
            got = await m.execution({"type": "get", "execution_id": slow["execution_id"]})
            assert got["execution"]["status"] == "running"
            screen = await m.ok("BashCommand", action={"type": "screen"})
            assert screen["execution_id"] == quick["shell_execution_id"] and screen["live"]
            inspected = await m.ok("BashCommand", action={"type": "inspect"})
            assert inspected["target"] == "shell" and inspected["running"] is False
            turn = await m.ok("BashCommand", action={"type": "wait_for_turn", "timeout_seconds": 10})
            assert (turn["condition"], turn["effective_timeout_seconds"]) == ("awaiting_input", 10)
            assert "requested_wait_policy" not in json.dumps(turn)
    run(body)
