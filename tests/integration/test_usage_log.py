"""The usage log of a real daemon (seeds/000, "Workflow telemetry", "Usage metrics"): every
call leaves tool_started / tool_phase / tool_call events sharing a usage_call_id; at most 16
phase pairs and one truncation marker per call; the spec's counters; and never a secret —
no command or prompt text, output, cursor, path or token the test run used appears in it.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tests.integration.test_agent_prompt import Agent
from tests.support.daemon import wait_for
from tests.support.executions import Session, workspace  # noqa: F401 (fixture)
from tests.support.mcp import mcp_stdio, run, usage_events

SECRET_COMMAND = "sekrit-command-9f1c"
SECRET_OUTPUT = "sekrit-output-77ab"
SECRET_PROMPT = "sekrit-prompt-3e5d"
SECRET_DIR = "sekrit-dir-c0ffee"


def terminal(events: list[dict], **match) -> list[dict]:
    return [e for e in events if e["event"] == "tool_call"
            and all(e.get(k) == v for k, v in match.items())]


def test_the_log_has_every_call_and_no_secret(home, daemon, tmp_path):
    ws = home.root / SECRET_DIR
    ws.mkdir()
    s = Session(home, ws)
    secrets_used: list[str] = [SECRET_COMMAND, SECRET_OUTPUT, SECRET_PROMPT, SECRET_DIR, str(ws)]
    try:
        ran = s.call("BashCommand", action={
            "type": "command", "command": f"echo {SECRET_OUTPUT} # {SECRET_COMMAND}"})
        eid = ran["execution_id"]
        page = s.read(eid, page_bytes=8)
        secrets_used.append(page["next_cursor"])
        s.read(eid, cursor=page["next_cursor"])
        listing = s.list()
        secrets_used.append(listing["catalog_cursor"])
        observed = s.execution({"type": "observe", "items": [
            {"execution_id": eid}, {"execution_id": "0" * 32, "source": "screen"}]})
        secrets_used += [i["page"]["next_cursor"] for i in observed["data"]["items"] if i.get("page")]
        s.execution({"type": "wait", "execution_ids": [eid], "after": listing["catalog_cursor"],
                     "timeout_seconds": 0})
        agent = Agent(s, home.root, control=False)
        s.call("Agent", action="prompt", target=agent.eid, prompt_id="p1", text=SECRET_PROMPT,
               recognizer="claude", timeout_seconds=10)
        s.call("Agent", action="prompt", target=agent.eid, prompt_id="p1", text=SECRET_PROMPT,
               recognizer="claude", timeout_seconds=10)
        s.call("BashCommand", action={"type": "command", "command": "true"}, wait_policy="task")
        # A chatty execution and a wait that never matches it: many looks, many phases.
        chatty = s.run(command="for i in $(seq 1 60); do echo $i; sleep 0.02; done")
        s.execution({"type": "wait", "execution_ids": [chatty["execution_id"]],
                     "events": ["awaiting_approval"], "timeout_seconds": 1.5})
    finally:
        s.close()

    async def mcp_calls():
        async with mcp_stdio(home) as m:
            await m.initialize(ws, thread_name="cli")
            await m.ok("Execution", action={"type": "get", "execution_id": eid})
            await m.error("Execution", action={"type": "get", "execution_id": "nope"})
    run(mcp_calls)

    # Written within usage_log_flush_seconds; the daemon's own exit flushes the rest.
    events = wait_for(lambda: (ev := usage_events(home)) and terminal(ev, client="vigil-mcp",
                                                                        error_code="invalid_request") and ev,
                      what="the MCP calls in the usage log")
    text = (home.state / "usage.jsonl").read_text()
    assert (home.state / "usage.jsonl").stat().st_mode & 0o777 == 0o600
    for secret in secrets_used:
        assert secret not in text, secret
    assert eid not in text and agent.eid not in text and s.thread_id not in text

    by_call: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        by_call[e["usage_call_id"]].append(e)
    for call_events in by_call.values():
        ends = [e for e in call_events if e["event"] == "tool_call"]
        assert len(ends) == 1
        end = ends[0]
        assert (end["usage_schema"], end["workflow_schema"]) == (1, 1)
        starts = [e for e in call_events if e["event"] == "tool_phase" and e["edge"] == "start"]
        finishes = [e for e in call_events if e["event"] == "tool_phase" and e["edge"] == "finish"]
        markers = [e for e in call_events if e["event"] == "tool_phase" and e["edge"] == "truncated"]
        assert len(starts) == len(finishes) <= 16 and len(markers) <= 1
        assert bool(markers) == end.get("phases_truncated", False)
        if markers:
            # Suppressed phases still count in the summary.
            assert sum(p["count"] for p in end["phases"].values()) > len(starts)

    truncated = terminal(events, tool="Execution", action="wait", phases_truncated=True)
    assert truncated, "the chatty wait should have passed 16 phase pairs"
    assert truncated[0]["phases"]["wait_sleep"]["count"] >= 8

    observe = terminal(events, action="observe")[0]
    assert {k: observe[k] for k in ("outcome", "error_code", "observe_schema", "batch_items",
                                    "observe_requested_items", "observe_returned_items",
                                    "observe_items_with_issues")} == {
        "outcome": "partial", "error_code": "execution_observation_issues", "observe_schema": 1,
        "batch_items": 2, "observe_requested_items": 2, "observe_returned_items": 2,
        "observe_items_with_issues": 1}
    reads = terminal(events, action="read", backend="native", tool="Execution")
    assert reads[0]["read_source"] == "output" and reads[0]["read_requested_bytes"] == 8
    assert reads[0]["read_has_more"] is True and reads[1]["read_has_more"] is False
    prompts = terminal(events, tool="Agent", action="prompt")
    assert [p["receipt_replayed"] for p in prompts] == [False, True]
    assert prompts[0]["receipt_delivery"] == "delivered"
    assert "native_prompt_rpc" in prompts[0]["phases"]
    catalog = terminal(events, tool="Execution", action="wait")
    assert catalog[0]["catalog_outcome"] == "timeout" and catalog[0]["wait_timeout_ms"] == 0
    bash = terminal(events, tool="BashCommand")
    assert [(b["effective_wait_mode"], b["effective_wait_ms"]) for b in bash] == [
        ("synchronous", 5000), ("task", 0)]
    assert "requested_wait_policy" not in bash[0] and bash[1]["requested_wait_policy"] == "task"
    init = terminal(events, tool="Initialize")[0]
    assert "workspace_validation" in init["phases"]
    errors = terminal(events, client="vigil-mcp", error_code="invalid_request")
    assert errors[0]["outcome"] == "error" and errors[0]["principal_kind"] == "local"

    # vigil report reads it back.
    out = home.cli("report", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["linesSeen"] == len(text.splitlines())
    assert report["observations"]["partialResults"] == 1
    assert report["workflows"]["Agent/prompt/native"]["receipts"]["observations"] == 2


def test_the_log_can_be_turned_off(home, workspace):
    home.write_config("usage_log_enabled = false\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        s.list()
    finally:
        s.close()
    home.daemons[0].stop()
    assert not (home.state / "usage.jsonl").exists()
