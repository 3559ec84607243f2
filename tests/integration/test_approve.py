"""`approve` through the real daemon (seeds/002, `POST /executions/:id/approve`): for an
execution recognized as awaiting approval, the manifest's approve keys are pressed once per
`approval_id`, with a receipt; a repeat is answered from the receipt and sends nothing;
approving an execution that is not asking is refused before any byte is sent."""

from tests.integration.test_agent_prompt import agent  # noqa: F401  (fixture)
from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    cli_env,
    remote_error,
    workspace,
)


def approve(agent, approval_id: str, **params) -> dict:
    params.setdefault("recognizer", "claude")
    return agent.s.call("Agent", action="approve", target=agent.eid, approval_id=approval_id,
                        **params)["data"]


def test_approve_presses_the_keys_once_per_approval_id(agent, home, cli_env):
    err = remote_error(approve, agent, "a1")
    assert (err.code, err.message) == (
        "conflict", "the target is not awaiting approval: recognizer 'claude' says "
                    "'awaiting_input'")
    assert err.data["input_sent"] is False

    asked = agent.prompt("ap", "please approve the cleanup", timeout_seconds=20)
    assert asked["receipt"]["condition"] == "awaiting_approval"
    wait_for(lambda: agent.s.get(agent.eid)["recognized_state"] == "awaiting_approval",
             timeout=20, what="the approval dialog reported")

    first = approve(agent, "a1", timeout_seconds=20)
    r = first["receipt"]
    assert (first["replayed"], first["keys"], first["action"]) == (False, ["1"], "approve")
    assert (r["prompt_id"], r["execution_id"], r["delivery"], r["activity"], r["condition"]) == \
        ("a1", agent.eid, "delivered", "confirmed", "busy")  # working, held at the gate

    again = approve(agent, "a1", timeout_seconds=20)
    assert again["replayed"] is True and again["receipt"] == r and again["keys"] == ["1"]
    by_cli = home.cli("approve", agent.eid[:10], "a1", env=cli_env)
    assert (by_cli.returncode, by_cli.stderr) == (0, "")
    assert by_cli.stdout == f"{agent.eid} approval a1: delivered (from the receipt: not sent again)\n"

    # Nothing was pressed again: the next prompt's line is exactly its text.
    agent.gate.open()
    agent.ready()
    agent.release_during(lambda: agent.prompt("p2", "next", timeout_seconds=20))
    assert agent.lines() == ["please approve the cleanup", "next"]
    log = agent.s.execution({"type": "events", "execution_id": agent.eid})["data"]["events"]
    assert [e["message"] for e in log if e["kind"] == "approve"] == \
        ["approval a1: pressed 1 (delivered; then busy)"]


def test_bad_approvals_are_refused(agent):
    for params, field in (({"approval_id": ""}, "params.approval_id"),
                          ({"approval_id": "has space"}, "params.approval_id"),
                          ({"approval_id": "ok", "target": "nope"}, "params.target")):
        call = {"action": "approve", "target": agent.eid, "recognizer": "claude", **params}
        err = remote_error(agent.s.call, "Agent", **call)
        assert (err.code, err.data["field"]) == ("invalid_request", field), err
    err = remote_error(agent.s.call, "Agent", action="approve", backend="herdr",
                       target="writer", approval_id="x")
    assert (err.code, err.data["field"]) == ("invalid_request", "params.backend")
    err = remote_error(agent.s.call, "Agent", action="approve", target="0" * 32,
                       approval_id="x")
    assert err.code == "not_found"
    assert agent.lines() == []
