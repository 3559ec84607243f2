"""Codex's rollout → agent-emitted events: the schematic fixtures of
tests/fixtures/agent_logs/ (written from the reference page), and each quirk of the page."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vigil.protocol.transcript import (
    AgentSource, MessageAssistantPayload, MessageUserPayload, TextBlock, ThinkingBlock,
    ToolCallPayload, ToolResultBlock, ToolResultPayload, ToolUseBlock,
)
from vigil.daemon.transcript.providers import AgentEvent, CodexNormalizer, NormalizerStats, TurnEnded

from tests.support.agent_logs import normalize as normalize_with

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agent_logs"
SESSION = FIXTURES / "codex_session.jsonl"
QUIRKS = FIXTURES / "codex_quirks.jsonl"
C = "0197a000-0000-7000-8000-00000000c0de"
A = "agent_emitted"
MODEL = "gpt-5-codex"


def ts(second: int) -> str:
    return f"2025-06-01T10:01:{second:02d}.000Z"


def nth_line(data: bytes, n: int) -> int:
    """The offset of line `n` (1-based)."""
    offset = 0
    for _ in range(n - 1):
        offset = data.index(b"\n", offset) + 1
    return offset


def src(second, turn="turn-1") -> AgentSource:
    return AgentSource(provider="codex", session_id=C, timestamp=ts(second), turn_id=turn)


def text(t: str) -> TextBlock:
    return TextBlock(text=t, fidelity=A)


def normalize(data: bytes, sizes=None, **settings) -> tuple[list, CodexNormalizer]:
    return normalize_with(CodexNormalizer, data, sizes, **settings)


def rollout(*lines: tuple[str, dict]) -> bytes:
    return b"".join(json.dumps({"timestamp": ts(i), "type": kind, "payload": payload},
                               separators=(",", ":")).encode() + b"\n"
                    for i, (kind, payload) in enumerate(lines))


def ri(**payload) -> tuple[str, dict]:
    return ("response_item", payload)


def ev(**payload) -> tuple[str, dict]:
    return ("event_msg", payload)


# --- the session fixture -------------------------------------------------------------------


def expected_session(data: bytes) -> list:
    L = lambda n: nth_line(data, n)  # noqa: E731
    shell1 = ToolUseBlock(tool_name="shell", tool_id="call_1", fidelity=A,
                          tool_input={"command": ["pytest", "-q"], "workdir": "/work/project"})
    patch = ToolUseBlock(tool_name="apply_patch", tool_id="call_2", fidelity=A, tool_input=(
        "*** Begin Patch\n*** Update File: test_x.py\n-assert 1 == 2\n+assert 1 == 1\n*** End Patch"))
    bad = ToolUseBlock(tool_name="shell", tool_id="call_3", fidelity=A, tool_input='{"command":["pytest"',
                       input_error="arguments are not JSON (Input data was truncated); "
                                   "tool_input is the text as written")
    shell4 = ToolUseBlock(tool_name="shell", tool_id="call_4", fidelity=A,
                          tool_input={"command": ["ruff", "check"]})
    no_turn = AgentSource(provider="codex", session_id=C, timestamp=ts(0))
    return [
        AgentEvent(type="message.user", offset=L(2), payload=MessageUserPayload(
            fidelity=A, injected="developer", source=no_turn, blocks=[
                text("<permissions instructions>sandbox: workspace-write</permissions instructions>")])),
        AgentEvent(type="message.user", offset=L(3), payload=MessageUserPayload(
            fidelity=A, injected="environment_context", source=no_turn, blocks=[
                text("<environment_context>\n  <cwd>/work/project</cwd>\n</environment_context>")])),
        # The prompt is written twice (response_item, then user_message): taken once.
        AgentEvent(type="message.user", offset=L(6), payload=MessageUserPayload(
            fidelity=A, source=src(1), blocks=[text("run the tests")])),
        # reasoning + function_call of one response: one reply (agent_reasoning is the echo).
        AgentEvent(type="message.assistant", offset=L(9), payload=MessageAssistantPayload(
            fidelity=A, model=MODEL, source=src(2), blocks=[
                ThinkingBlock(text="Run pytest.", fidelity=A), shell1])),
        AgentEvent(type="tool.call", offset=L(9), payload=ToolCallPayload(
            fidelity=A, source=src(2), blocks=[shell1])),
        AgentEvent(type="tool.result", offset=L(12), payload=ToolResultPayload(
            fidelity=A, source=src(4), blocks=[ToolResultBlock(
                tool_id="call_1", exit_code=1, fidelity=A,
                tool_content="Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed")])),
        AgentEvent(type="message.assistant", offset=L(13), payload=MessageAssistantPayload(
            fidelity=A, model=MODEL, source=src(5), blocks=[
                ThinkingBlock(text="", redacted=True, fidelity=A), patch])),
        AgentEvent(type="tool.call", offset=L(13), payload=ToolCallPayload(
            fidelity=A, source=src(5), blocks=[patch])),
        AgentEvent(type="tool.result", offset=L(16), payload=ToolResultPayload(
            fidelity=A, source=src(6), blocks=[ToolResultBlock(
                tool_id="call_2", exit_code=0, fidelity=A,
                tool_content='{"output":"Success.","metadata":{"exit_code":0,"duration_seconds":0.0}}')])),
        AgentEvent(type="message.assistant", offset=L(17), payload=MessageAssistantPayload(
            fidelity=A, model=MODEL, source=src(7), blocks=[bad])),
        AgentEvent(type="tool.call", offset=L(17), payload=ToolCallPayload(
            fidelity=A, source=src(7), blocks=[bad])),
        AgentEvent(type="tool.result", offset=L(19), payload=ToolResultPayload(
            fidelity=A, source=src(8), blocks=[ToolResultBlock(
                tool_id="call_3", tool_content="failed to parse function arguments", fidelity=A)])),
        AgentEvent(type="message.assistant", offset=L(21), payload=MessageAssistantPayload(
            fidelity=A, model=MODEL, message_id="msg_c1", source=src(9), blocks=[text("All green.")])),
        TurnEnded(provider="codex", reason="task_complete", timestamp=ts(10), offset=L(23),
                  session_id=C, turn_id="turn-1", last_message="All green."),
        AgentEvent(type="message.user", offset=L(24), payload=MessageUserPayload(
            fidelity=A, injected="compact_summary", source=src(11, turn=None),
            blocks=[text("Summary: the tests pass now.")])),
        # This time user_message comes first: it is the one taken.
        AgentEvent(type="message.user", offset=L(28), payload=MessageUserPayload(
            fidelity=A, source=src(13, turn=None), blocks=[text("and the linter")])),
        AgentEvent(type="message.assistant", offset=L(30), payload=MessageAssistantPayload(
            fidelity=A, model=MODEL, source=src(14, turn=None), blocks=[shell4])),
        # Dangling: the turn was aborted before the call's output.
        AgentEvent(type="tool.call", offset=L(30), payload=ToolCallPayload(
            fidelity=A, source=src(14, turn=None), blocks=[shell4])),
        TurnEnded(provider="codex", reason="aborted", timestamp=ts(15), offset=L(31),
                  session_id=C, turn_id="turn-2"),
    ]


SESSION_STATS = NormalizerStats(
    lines=31, events=17, duplicates=4,
    unknown_types={"response_item:ghost_snapshot": 1, "future_line": 1},
    ignored_types={"session_meta": 1, "turn_context": 1, "event_msg:task_started": 1,
                   "event_msg:token_count": 4, "event_msg:context_compacted": 1})


@pytest.mark.parametrize("chunking", ["whole", "bytewise", "random"])
def test_session_fixture(chunking):
    data = SESSION.read_bytes()
    rng = random.Random(5)
    sizes = {"whole": None, "bytewise": [1] * len(data),
             "random": [rng.randint(1, 200) for _ in range(len(data))]}[chunking]
    items, n = normalize(data, sizes)
    assert items == expected_session(data)
    assert n.stats == SESSION_STATS
    assert n.unanswered_tool_ids == ["call_4"]


def test_quirks_fixture_nul_escaped_and_raw_interleaved_line_no_final_lf():
    data = QUIRKS.read_bytes()
    assert b'"shell\\u0000"' in data and b'"a\x00b"' in data and not data.endswith(b"\n")
    items, n = normalize(data)
    shell = ToolUseBlock(tool_name="shell\x00", tool_id="call_n", tool_input={"command": ["ls"]}, fidelity=A)
    plain = lambda s: AgentSource(provider="codex", session_id=C, timestamp=ts(s))  # noqa: E731
    assert items == [
        AgentEvent(type="message.assistant", offset=nth_line(data, 2), payload=MessageAssistantPayload(
            fidelity=A, source=plain(1), blocks=[shell])),
        AgentEvent(type="tool.call", offset=nth_line(data, 2), payload=ToolCallPayload(
            fidelity=A, source=plain(1), blocks=[shell])),
        AgentEvent(type="tool.result", offset=nth_line(data, 3), payload=ToolResultPayload(
            fidelity=A, source=plain(2), blocks=[ToolResultBlock(
                tool_id="call_n", tool_content="a\x00b", fidelity=A)])),
        AgentEvent(type="message.user", offset=nth_line(data, 4), payload=MessageUserPayload(
            fidelity=A, source=plain(3), blocks=[text("interleaved")])),
        TurnEnded(provider="codex", reason="task_complete", timestamp=ts(4),
                  offset=nth_line(data, 5), session_id=C, turn_id="t"),
    ]
    assert n.stats == NormalizerStats(lines=5, events=4, repaired_lines=2,
                                      ignored_types={"session_meta": 1})


# --- duplicated visible content ------------------------------------------------------------


def test_a_prompt_written_only_as_user_message_is_kept():
    items, n = normalize(rollout(ev(type="user_message", message="only here")))
    assert [i.payload.blocks for i in items] == [[text("only here")]]
    assert n.stats.duplicates == 0


def test_a_prompt_written_only_as_a_response_item_is_kept():
    items, n = normalize(rollout(ri(type="message", role="user",
                                    content=[{"type": "input_text", "text": "only here"}])))
    assert [i.payload.blocks for i in items] == [[text("only here")]]


def test_the_same_prompt_twice_is_two_prompts():
    msg = ri(type="message", role="user", content=[{"type": "input_text", "text": "continue"}])
    echo = ev(type="user_message", message="continue")
    items, n = normalize(rollout(msg, echo, msg, echo))
    assert [i.type for i in items] == ["message.user", "message.user"]
    assert n.stats.duplicates == 2


def test_agent_message_is_the_echo_of_the_assistant_message():
    items, n = normalize(rollout(
        ev(type="agent_message", message="Done."),
        ri(type="message", role="assistant", content=[{"type": "output_text", "text": "Done."}])))
    assert [i.payload.blocks for i in items] == [[text("Done.")]]
    assert n.stats.duplicates == 1


# --- tool outputs --------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "content", "exit_code", "is_error", "images"), [
    ("Exit code: 0\nOutput:\nok", "Exit code: 0\nOutput:\nok", 0, None, 0),
    ("Process exited\nExit code: 127\n", "Process exited\nExit code: 127\n", 127, None, 0),
    ('{"output":"x","metadata":{"exit_code":3}}', '{"output":"x","metadata":{"exit_code":3}}', 3, None, 0),
    ("plain text", "plain text", None, None, 0),
    ([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "data:"},
      {"type": "input_text", "text": "b"}], "a\nb", None, None, 1),
    ({"content": "denied", "success": False}, "denied", None, True, 0),
    (None, "", None, None, 0),
])
def test_tool_output_shapes(output, content, exit_code, is_error, images):
    [result] = normalize(rollout(ri(type="function_call_output", call_id="c", output=output)))[0]
    assert result.payload.blocks == [ToolResultBlock(
        tool_id="c", tool_content=content, exit_code=exit_code, is_error=is_error,
        omitted_images=images, fidelity=A)]


def test_local_shell_and_web_search_calls():
    items, _ = normalize(rollout(
        ri(type="local_shell_call", call_id="ls1", status="completed",
           action={"type": "exec", "command": ["ls"], "working_directory": "/w"}),
        ri(type="web_search_call", id="ws1", action={"type": "search", "query": "msgspec"})))
    assert items[0].payload.blocks == [
        ToolUseBlock(tool_name="local_shell", tool_id="ls1", fidelity=A,
                     tool_input={"type": "exec", "command": ["ls"], "working_directory": "/w"}),
        ToolUseBlock(tool_name="web_search", tool_id="ws1", fidelity=A,
                     tool_input={"type": "search", "query": "msgspec"})]
    assert [i.type for i in items] == ["message.assistant", "tool.call", "tool.call"]


# --- bad lines -----------------------------------------------------------------------------


def test_a_payload_of_the_wrong_shape_is_invalid_with_the_reason():
    items, n = normalize(rollout(ri(type="message", role="user", content="not a list")))
    assert items == []
    assert n.stats.invalid_lines == 1
    assert n.stats.last_problem == ("line at byte 0: unexpected response_item payload: Expected "
                                    "`array | null`, got `str` - at `$.content`")


def test_a_bom_before_the_first_line():
    items, n = normalize(b"\xef\xbb\xbf" + rollout(ev(type="user_message", message="hi")))
    assert [i.payload.blocks for i in items] == [[text("hi")]]
    assert n.stats.repaired_lines == 1


# --- lines past the limit ------------------------------------------------------------------


def test_lines_past_the_limit_are_recorded_cut():
    big = "z" * (300 * 1024)
    data = rollout(
        ri(type="function_call_output", call_id="c_big", output=big),
        ri(type="custom_tool_call", call_id="c_patch", name="apply_patch", input=big),
        ri(type="message", role="user", content=[{"type": "input_image", "image_url": big}]),
        ("compacted", {"message": big, "replacement_history": []}),
        ev(type="token_count", info=big),
        ev(type="user_message", message=big),
        ev(type="task_complete", turn_id="turn-9", last_agent_message=big))
    sizes = [len(x) + 1 for x in data.split(b"\n")[:-1]]
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    items, n = normalize(data, transcript_line_max_bytes=256 * 1024)
    assert items == [
        AgentEvent(type="tool.result", offset=0, payload=ToolResultPayload(
            fidelity=A, cut_bytes=sizes[0] - 1, source=AgentSource(
                provider="codex", timestamp=ts(0)),
            blocks=[ToolResultBlock(tool_id="c_big", tool_content="", fidelity=A)])),
        AgentEvent(type="message.assistant", offset=offsets[1], payload=MessageAssistantPayload(
            fidelity=A, cut_bytes=sizes[1] - 1, source=AgentSource(provider="codex", timestamp=ts(1)),
            blocks=[ToolUseBlock(
                tool_name="apply_patch", tool_id="c_patch", tool_input=None, fidelity=A,
                input_error=f"the log line ({sizes[1] - 1} bytes) is longer than "
                            f"transcript_line_max_bytes: input not read")])),
        AgentEvent(type="tool.call", offset=offsets[1], payload=ToolCallPayload(
            fidelity=A, source=AgentSource(provider="codex", timestamp=ts(1)), blocks=[ToolUseBlock(
                tool_name="apply_patch", tool_id="c_patch", tool_input=None, fidelity=A,
                input_error=f"the log line ({sizes[1] - 1} bytes) is longer than "
                            f"transcript_line_max_bytes: input not read")])),
        AgentEvent(type="message.user", offset=offsets[2], payload=MessageUserPayload(
            fidelity=A, cut_bytes=sizes[2] - 1, source=AgentSource(provider="codex", timestamp=ts(2)))),
        TurnEnded(provider="codex", reason="task_complete", timestamp=ts(6), offset=offsets[6],
                  turn_id="turn-9"),
    ]
    assert n.stats.cut_lines == 7
    assert n.stats.duplicates == 1
    assert n.stats.ignored_types == {"compacted": 1, "event_msg:token_count": 1}
    assert n.stats.unknown_types == {}
