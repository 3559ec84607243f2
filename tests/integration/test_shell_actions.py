"""BashCommand's remaining actions and the inline-wait policy (issue 13; seeds/000, "Usage
metrics"): `screen`, `inspect`, `wait_for_turn`, `prompt` with their own timeouts; commands
as Tasks (`adaptive` promoted after its allowance, `task` at once); the requested and
effective wait an answer reports; and the bad inputs each refuses whole."""

from __future__ import annotations

import pytest

from tests.integration.test_agent_prompt import Agent
from tests.support.executions import Session, remote_error, session, workspace  # noqa: F401
from tests.support.screens import Shell


@pytest.fixture
def shell(session):
    return Shell(session)


def test_task_policies_and_the_reported_allowance(shell):
    s = shell.s
    done = s.call("BashCommand", action={"type": "command", "command": "echo one; exit 3"},
                  wait_policy="adaptive", wait_for_seconds=20)
    assert (done["status"], done["exit_code"], done["output"], done["promoted"]) == (
        "completed", 3, "one\r\n", False)
    assert {k: done[k] for k in ("requested_wait_policy", "requested_wait_ms",
                                 "effective_wait_policy", "effective_wait_ms",
                                 "effective_wait_mode")} == {
        "requested_wait_policy": "adaptive", "requested_wait_ms": 20000,
        "effective_wait_policy": "adaptive", "effective_wait_ms": 20000,
        "effective_wait_mode": "task_inline"}
    record = s.get(done["execution_id"])
    assert (record["kind"], record["status"], record["exit_code"]) == ("standalone", "exited", 3)
    # The shell stayed free: a synchronous command right away, in the same directory.
    sync = shell.command("pwd")
    assert sync["status"] == "completed" and sync["effective_wait_mode"] == "synchronous"
    assert sync["requested_wait_policy"] is None and sync["requested_wait_ms"] == 10000
    promoted = s.call("BashCommand", action={"type": "command", "command": "sleep 30"},
                      wait_policy="adaptive", wait_for_seconds=0.1)
    assert (promoted["status"], promoted["promoted"], promoted["effective_wait_ms"]) == (
        "background", True, 100)
    assert s.get(promoted["execution_id"])["status"] == "running"
    at_once = s.call("BashCommand", action={"type": "command", "command": "sleep 30",
                                            "is_background": True})
    assert (at_once["status"], at_once["promoted"], at_once["requested_wait_policy"],
            at_once["effective_wait_ms"], at_once["effective_wait_mode"]) == (
        "background", False, "task", 0, "task")
    s.call("signal", execution_id=promoted["execution_id"], signal="KILL")
    s.call("signal", execution_id=at_once["execution_id"], signal="KILL")


def test_views_of_the_shell_and_of_a_named_execution(shell):
    s = shell.s
    first = shell.command("echo hello-screen")
    screen = s.call("BashCommand", action={"type": "screen"})
    assert screen["execution_id"] == first["shell_execution_id"] and "hello-screen" in screen["text"]
    done = s.run(command="echo named-output")
    s.wait_exit(done["execution_id"])
    named = s.call("BashCommand", action={"type": "screen", "execution_id": done["execution_id"]})
    assert named["execution_id"] == done["execution_id"] and "named-output" in named["text"]
    inspected = s.call("BashCommand", action={"type": "inspect"})
    assert (inspected["target"], inspected["running"], inspected["generation"]) == (
        "shell", False, first["generation"])
    assert inspected["explanation"]["execution_id"] == first["shell_execution_id"]
    of_named = s.call("BashCommand", action={"type": "inspect", "execution_id": done["execution_id"]})
    assert (of_named["target"], of_named["running"], of_named["explanation"]["state"]) == (
        "execution", False, "exited")
    turn = s.call("BashCommand", action={"type": "wait_for_turn", "timeout_seconds": 10})
    assert (turn["condition"], turn["wait_for"]) == (
        "awaiting_input", ["awaiting_input", "awaiting_approval", "exited"])
    ended = s.call("BashCommand", action={"type": "wait_for_turn",
                                          "execution_id": done["execution_id"]})
    assert (ended["condition"], ended["effective_timeout_seconds"]) == ("exited", 5.0)
    running = shell.command("sleep 30", wait=0)
    waited = s.call("BashCommand", action={"type": "wait_for_turn", "timeout_seconds": 0.3,
                                           "wait_for": ["awaiting_approval"]})
    assert waited["condition"] == "timed_out"
    shell.specials("Ctrl-c", generation=running["generation"])


def test_prompt_types_into_a_waiting_program_and_waits_for_its_turn(home, session):
    agent = Agent(session, home.root, control=False)
    s = session
    result = s.call("BashCommand", action={"type": "prompt", "text": "hello agent",
                                           "execution_id": agent.eid, "recognizer": "claude",
                                           "timeout_seconds": 20})
    assert (result["delivery"], result["activity"], result["condition"]) == (
        "delivered", "confirmed", "awaiting_input")
    assert result["bracketed_paste"] is True and result["effective_timeout_seconds"] == 20
    assert agent.lines() == ["hello agent"]
    # No receipt, no deduplication: the same text again is typed again.
    agent.ready()
    s.call("BashCommand", action={"type": "prompt", "text": "hello agent",
                                  "execution_id": agent.eid, "recognizer": "claude"})
    assert agent.lines() == ["hello agent", "hello agent"]


def test_prompt_to_a_busy_program_sends_nothing(home, session):
    agent = Agent(session, home.root)
    session.call("Agent", action="prompt", target=agent.eid, prompt_id="w", text="work",
                 recognizer="claude", timeout_seconds=1)
    err = remote_error(session.call, "BashCommand", action={
        "type": "prompt", "text": "more", "execution_id": agent.eid, "recognizer": "claude"})
    assert err.code.value == "busy" and err.data["input_sent"] is False
    agent.gate.open()
    assert agent.lines() == ["work"]


@pytest.mark.parametrize("params,field,message", [
    ({"action": {"type": "status_check"}, "wait_policy": "task"}, "params.wait_policy",
     "wait_policy 'task' is for commands"),
    ({"action": {"type": "screen"}, "wait_for_seconds": 1}, "params.wait_for_seconds",
     "screen has its own timeout"),
    ({"action": {"type": "wait_for_turn"}, "wait_policy": "adaptive"}, "params.wait_policy",
     "wait_for_turn has its own timeout"),
    ({"action": {"type": "wait_for_turn", "timeout_seconds": 31}},
     "params.action.timeout_seconds", "from 0 through 30"),
    ({"action": {"type": "prompt", "text": ""}}, "params.action.text", "text must be 1 to"),
    ({"action": {"type": "command", "command": "true"}, "wait_for_seconds": -1},
     "params.wait_for_seconds", "between 0 and 300"),
    ({"action": {"type": "inspect", "execution_id": "nope"}}, "params.action.execution_id",
     "execution_id must be 32 lowercase hexadecimal characters"),
])
def test_bad_requests_are_refused_whole(session, params, field, message):
    err = remote_error(session.call, "BashCommand", **params)
    assert err.code.value == "invalid_request" and err.data["field"] == field
    assert message in err.message


def test_architect_mode_sees_its_shell_but_runs_nothing(home, daemon, workspace):
    s = Session(home, workspace, thread_name="architect")
    try:
        s.client.call("Initialize", {"workspace_root": str(workspace), "thread_id": s.thread_id,
                                     "type": "user_asked_mode_change", "mode": "architect"})
        assert s.call("BashCommand", action={"type": "screen"})["live"] is True
        err = remote_error(s.call, "BashCommand", action={"type": "command", "command": "true"})
        assert err.code.value == "forbidden" and "architect" in err.message
        err = remote_error(s.call, "BashCommand", action={"type": "prompt", "text": "x"})
        assert err.code.value == "forbidden"
    finally:
        s.close()
