"""The turn summary as clients show it: the MCP text rendering carries it on one line
beside `Agent get` and prompt answers (counts, tools, how it ended, the ref); the CLI offers the
protocol's trace modes."""
from __future__ import annotations

import msgspec

from vigil.client.mcp.render import render
from vigil.protocol.api.trace import ToolCount, TurnSummary

REF = "0f1e2d3c4b5a49788796a5b4c3d2e1f0"


def _turn(**kw) -> dict:
    return msgspec.to_builtins(TurnSummary(archive_ref=REF, trace_key="abc:2", turn=2, **kw))


def test_a_prompt_receipt_ends_with_its_committed_turn():
    receipt = {"prompt_id": "p1", "delivery": "delivered", "activity": "idle",
               "activity_reason": "awaiting_input", "condition": "met"}
    text = render("Agent", {"status": "ok", "data": {
        "receipt": receipt, "turn": _turn(state="committed", status="end_turn", steps=3,
                                          tool_calls=2, tool_errors=1, replay_blocked_steps=1,
                                          tools=[ToolCount(name="Bash", calls=2, errors=1)])}})
    assert text == ("receipt p1: delivery delivered, activity idle (awaiting_input), condition met"
                    f"\nturn 2 (committed, end_turn): 3 steps, 2 tool calls, 1 errors [Bash×2]"
                    f", 1 replay-blocked; archive_ref={REF}")


def test_an_open_turn_without_tools_has_neither_status_nor_tool_list():
    receipt = {"prompt_id": "p1", "delivery": "delivered", "activity": "busy",
               "activity_reason": "output", "condition": "pending"}
    text = render("Agent", {"status": "ok", "data": {"receipt": receipt,
                                                      "turn": _turn(state="open")}})
    assert text.endswith(f"\nturn 2 (open): 0 steps, 0 tool calls, 0 errors; archive_ref={REF}")


def test_an_answer_without_a_turn_renders_as_before():
    receipt = {"prompt_id": "p1", "delivery": "delivered", "activity": "busy",
               "activity_reason": "output", "condition": "pending"}
    assert render("Agent", {"status": "ok", "data": {"receipt": receipt}}) == (
        "receipt p1: delivery delivered, activity busy (output), condition pending")


def test_the_cli_spells_the_protocols_trace_modes():
    from vigil.client.commands.trace import MODES
    from vigil.protocol.api.trace import TRACE_MODES

    assert MODES == TRACE_MODES
