"""Claude Code's session log → agent-emitted events: the schematic fixtures of
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
from vigil.daemon.transcript.providers import (
    AgentEvent, ClaudeNormalizer, LogReset, NormalizerStats, TurnEnded,
)

from tests.support.agent_logs import normalize as normalize_with

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agent_logs"
SESSION = FIXTURES / "claude_session.jsonl"
QUIRKS = FIXTURES / "claude_quirks.jsonl"
S = "5e1f0c3a-0000-4000-8000-00000000c1a0"
S2 = "5e1f0c3a-0000-4000-8000-00000000c1a1"
A = "agent_emitted"
MODEL = "claude-sonnet-4-5"


def ts(second: int) -> str:
    return f"2025-06-01T10:00:{second:02d}.000Z"


def at(data: bytes, uuid: str) -> int:
    """The offset of the line of `uuid`."""
    i = data.index(f'"uuid":"{uuid}"'.encode())
    return data.rfind(b"\n", 0, i) + 1


def src(second, *entry_ids, session=S, **kw) -> AgentSource:
    return AgentSource(provider="claude", session_id=session, timestamp=ts(second),
                       entry_ids=list(entry_ids), **kw)


def text(t: str) -> TextBlock:
    return TextBlock(text=t, fidelity=A)


def normalize(data: bytes, sizes=None, **settings) -> tuple[list, ClaudeNormalizer]:
    return normalize_with(ClaudeNormalizer, data, sizes, **settings)


def line(**obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def assistant(uuid, mid, content, stop=None, second=1, **kw) -> bytes:
    return line(type="assistant", uuid=uuid, sessionId=S, timestamp=ts(second), requestId="r",
                message={"id": mid, "role": "assistant", "model": MODEL, "content": content,
                         "stop_reason": stop}, **kw)


def user(uuid, content, second=0, **kw) -> bytes:
    return line(type="user", uuid=uuid, sessionId=S, timestamp=ts(second),
                message={"role": "user", "content": content}, **kw)


# --- the session fixture -------------------------------------------------------------------


def expected_session(data: bytes) -> list:
    bash1 = ToolUseBlock(tool_name="Bash", tool_id="toolu_1", tool_input={"command": "pytest -q"}, fidelity=A)
    read = ToolUseBlock(tool_name="Read", tool_id="toolu_2",
                        tool_input={"file_path": "/work/project/test_x.py"}, fidelity=A)
    bash3 = ToolUseBlock(tool_name="Bash", tool_id="toolu_3", tool_input={"command": "ruff check"}, fidelity=A)
    m1 = src(1, "a1", "a2", "a3", request_id="req_1")
    m2 = src(6, "a4", request_id="req_2")
    m4 = src(15, "a6", request_id="req_4")
    return [
        AgentEvent(type="message.user", offset=at(data, "u1"), payload=MessageUserPayload(
            fidelity=A, blocks=[text("fix the tests")], source=src(0, "u1"))),
        # One API response over three lines, merged by message id, blocks in order.
        AgentEvent(type="message.assistant", offset=at(data, "a1"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_1", model=MODEL, stop_reason="tool_use", source=m1, blocks=[
                ThinkingBlock(text="The tests fail; run them first.", fidelity=A),
                text("Running the tests."), bash1])),
        AgentEvent(type="tool.call", offset=at(data, "a1"), payload=ToolCallPayload(
            fidelity=A, blocks=[bash1], source=m1)),
        AgentEvent(type="tool.result", offset=at(data, "u2"), payload=ToolResultPayload(
            fidelity=A, source=src(5, "u2"), blocks=[ToolResultBlock(
                tool_id="toolu_1", tool_content="1 failed", is_error=True, omitted_images=1,
                fidelity=A)])),
        AgentEvent(type="message.assistant", offset=at(data, "a4"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_2", model=MODEL, source=m2, blocks=[read])),
        AgentEvent(type="tool.call", offset=at(data, "a4"), payload=ToolCallPayload(
            fidelity=A, blocks=[read], source=m2)),
        AgentEvent(type="tool.result", offset=at(data, "u3"), payload=ToolResultPayload(
            fidelity=A, source=src(7, "u3"), blocks=[ToolResultBlock(
                tool_id="toolu_2", tool_content="def test_x(): assert 1 == 2", fidelity=A)])),
        AgentEvent(type="message.assistant", offset=at(data, "a5"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_3", model=MODEL, stop_reason="end_turn",
            source=src(8, "a5", request_id="req_3"), blocks=[text("Fixed: the assertion was wrong.")])),
        TurnEnded(provider="claude", reason="end_turn", timestamp=ts(8), offset=at(data, "a5"),
                  session_id=S, message_id="msg_3"),
        AgentEvent(type="message.user", offset=at(data, "u4"), payload=MessageUserPayload(
            fidelity=A, injected="meta", source=src(9, "u4"), blocks=[
                text("<local-command-caveat>Caveat: generated by local commands.</local-command-caveat>")])),
        AgentEvent(type="message.user", offset=at(data, "u5"), payload=MessageUserPayload(
            fidelity=A, injected="command-name", source=src(10, "u5"), blocks=[
                text("<command-name>/compact</command-name>\n<command-message>compact</command-message>")])),
        AgentEvent(type="message.user", offset=at(data, "u6"), payload=MessageUserPayload(
            fidelity=A, injected="compact_summary", source=src(12, "u6"), blocks=[
                text("This session is being continued from a previous conversation. Summary: tests fixed.")])),
        AgentEvent(type="message.user", offset=at(data, "u7"), payload=MessageUserPayload(
            fidelity=A, omitted_images=1, source=src(14, "u7"), blocks=[text("now run the linter")])),
        AgentEvent(type="message.assistant", offset=at(data, "a6"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_4", model=MODEL, stop_reason="tool_use", source=m4, blocks=[
                ThinkingBlock(text="", redacted=True, fidelity=A), bash3])),
        # A dangling tool_use: no result ever comes; recorded as is.
        AgentEvent(type="tool.call", offset=at(data, "a6"), payload=ToolCallPayload(
            fidelity=A, blocks=[bash3], source=m4)),
        AgentEvent(type="message.user", offset=at(data, "u8"), payload=MessageUserPayload(
            fidelity=A, injected="interrupted", source=src(16, "u8"), blocks=[
                text("[Request interrupted by user for tool use]")])),
        TurnEnded(provider="claude", reason="interrupted", timestamp=ts(16), offset=at(data, "u8"),
                  session_id=S),
        # An API error Claude Code writes as a reply of model <synthetic>.
        AgentEvent(type="message.assistant", offset=at(data, "a7"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_5", model="<synthetic>", stop_reason="stop_sequence",
            source=src(17, "a7"), blocks=[text("API Error: 529 overloaded")])),
    ]


SESSION_STATS = NormalizerStats(
    lines=20, events=16, unknown_types={"future-thing": 1},
    ignored_types={"file-history-snapshot": 1, "progress": 1, "system:compact_boundary": 1, "summary": 1})


def test_session_fixture_whole():
    data = SESSION.read_bytes()
    items, n = normalize(data)
    assert items == expected_session(data)
    assert n.stats == SESSION_STATS
    assert n.unanswered_tool_ids == ["toolu_3"]
    assert n.resume_offset == len(data)


@pytest.mark.parametrize("chunking", ["bytewise", "random"])
def test_session_fixture_in_pieces_gives_the_same_items(chunking):
    data = SESSION.read_bytes()
    rng = random.Random(3)
    sizes = [1] * len(data) if chunking == "bytewise" else [rng.randint(1, 300) for _ in range(len(data))]
    items, n = normalize(data, sizes)
    assert items == expected_session(data)
    assert n.stats == SESSION_STATS


# --- quirks --------------------------------------------------------------------------------


def test_quirks_fixture_bom_nul_bytes_nul_padding_half_written_last_line():
    data = QUIRKS.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"nul:\x00here" in data and not data.endswith(b"\n")
    items, n = normalize(data)
    assert items == [
        AgentEvent(type="message.user", offset=0, payload=MessageUserPayload(
            fidelity=A, blocks=[text("hello")], source=src(0, "q1", session=S2))),
        AgentEvent(type="message.assistant", offset=at(data, "q2"), payload=MessageAssistantPayload(
            fidelity=A, message_id="msg_q", model=MODEL, stop_reason="end_turn",
            source=src(1, "q2", session=S2, request_id="req_q"), blocks=[text("nul:\x00here")])),
        TurnEnded(provider="claude", reason="end_turn", timestamp=ts(1), offset=at(data, "q2"),
                  session_id=S2, message_id="msg_q"),
    ]
    last = data.rindex(b"\n") + 1
    assert n.stats == NormalizerStats(
        lines=4, events=2, repaired_lines=2, invalid_lines=1, truncated_lines=1,
        last_problem=f"line at byte {last}: the log ended inside it (60 bytes, not complete JSON: "
                     f"Input data was truncated)")


def test_nul_padding_alone_is_counted_with_its_reason():
    items, n = normalize(b"\x00" * 8 + b"\n")
    assert items == []
    assert n.stats == NormalizerStats(lines=1, invalid_lines=1,
                                      last_problem="line at byte 0: 8 bytes of NUL padding or blanks")


def test_half_written_last_line_is_held_until_completed():
    first = user("u1", "hello")
    second = user("u2", "again", second=1)
    n = ClaudeNormalizer()
    assert len(n.feed(first + second[:30])) == 1
    assert n.resume_offset == len(first)  # the held line starts there
    items = n.feed(second[30:])
    assert [i.payload.blocks for i in items] == [[text("again")]]
    assert n.resume_offset == len(first) + len(second)


def test_unterminated_last_line_that_is_whole_json_is_read_when_the_log_ends():
    n = ClaudeNormalizer()
    assert n.feed(user("u1", "no newline").rstrip(b"\n")) == []
    items = n.close()
    assert [i.payload.blocks for i in items] == [[text("no newline")]]
    assert n.stats.truncated_lines == 0


def test_interleaved_write_keeps_the_whole_line_it_ends_with():
    good = user("u2", "second")
    items, n = normalize(b'{"parentUuid":"x","type":"us' + good)
    assert [i.payload.source.entry_ids for i in items] == [["u2"]]
    assert n.stats.repaired_lines == 1 and n.stats.invalid_lines == 0


def test_garbage_line_is_counted_not_raised():
    items, n = normalize(b"not json at all\n" + user("u1", "ok"))
    assert len(items) == 1
    assert n.stats.invalid_lines == 1
    assert n.stats.last_problem == "line at byte 0: not JSON: JSON is malformed: invalid character (byte 4)"


def test_known_type_in_an_unexpected_shape_is_invalid_unknown_type_is_skipped():
    data = (line(type="user", uuid="u1", message={"role": "user", "content": 42})
            + line(type="brand-new", message="a string where we expect an object"))
    items, n = normalize(data)
    assert items == []
    assert n.stats.invalid_lines == 1
    assert n.stats.last_problem == ("line at byte 0: unexpected shape: Expected `str | array | null`, "
                                    "got `int` - at `$.message.content`")
    assert n.stats.unknown_types == {"brand-new": 1}


def test_unknown_content_blocks_are_counted():
    data = assistant("a1", "m1", [{"type": "text", "text": "hi"}, {"type": "web_search_tool_result"}],
                     stop="end_turn")
    items, n = normalize(data)
    assert items[0].payload.blocks == [text("hi")]
    assert n.stats.unknown_blocks == {"web_search_tool_result": 1}


# --- split replies -------------------------------------------------------------------------


def test_split_reply_waits_and_release_brings_it_out():
    first = assistant("a1", "m1", [{"type": "thinking", "thinking": "think", "signature": "s"}])
    second = assistant("a2", "m1", [{"type": "text", "text": "said"}], second=2)
    n = ClaudeNormalizer()
    assert n.feed(first) == []
    assert n.holding and n.resume_offset == 0
    assert n.feed(second) == []
    [reply] = n.release()
    assert reply.payload.blocks == [ThinkingBlock(text="think", fidelity=A), text("said")]
    assert reply.payload.source.entry_ids == ["a1", "a2"]
    assert not n.holding and n.resume_offset == len(first) + len(second)


def test_a_line_of_a_reply_already_released_comes_out_continued():
    n = ClaudeNormalizer()
    n.feed(assistant("a1", "m1", [{"type": "text", "text": "part one"}]))
    [first] = n.release()
    assert first.payload.continued is False
    n.feed(assistant("a2", "m1", [{"type": "tool_use", "id": "t9", "name": "Bash", "input": {}}]))
    late, call = n.release()
    assert (late.type, late.payload.message_id, late.payload.continued) == ("message.assistant", "m1", True)
    assert call.type == "tool.call" and call.payload.blocks[0].tool_id == "t9"


def test_a_reply_of_another_id_releases_the_first():
    n = ClaudeNormalizer()
    assert n.feed(assistant("a1", "m1", [{"type": "text", "text": "one"}])) == []
    [one] = n.feed(assistant("a2", "m2", [{"type": "text", "text": "two"}]))
    assert one.payload.message_id == "m1"
    [two] = n.close()
    assert two.payload.message_id == "m2"


# --- lines of several MB -------------------------------------------------------------------


def test_a_several_mb_line_under_the_limit_is_read_whole():
    output = "x" * (3 * 1024 * 1024)
    [result] = normalize(user("u1", [{"type": "tool_result", "tool_use_id": "t1", "content": output}]))[0]
    assert result.payload.blocks[0].tool_content == output and result.payload.cut_bytes == 0


def claude_ordered(kind: str, uuid: str, message: dict) -> bytes:
    """A line in the key order Claude Code writes: `uuid` and `timestamp` after `message`."""
    return line(parentUuid=None, isSidechain=False, sessionId=S, type=kind, requestId="r",
                message=message, uuid=uuid, timestamp=ts(0))


def test_a_line_past_the_limit_is_recorded_cut():
    big = "y" * (2 * 1024 * 1024)
    tool_line = claude_ordered("user", "u1", {"role": "user", "content": [
        {"tool_use_id": "toolu_big", "type": "tool_result", "content": big}]})
    prompt_line = claude_ordered("user", "u2", {"role": "user", "content": [
        {"type": "image", "source": {"data": big}}]})
    reply_line = claude_ordered("assistant", "a3", {"model": MODEL, "id": "msg_big", "content": [
        {"type": "text", "text": big}]})
    other = line(type="file-history-snapshot", blob=big)
    data = tool_line + prompt_line + reply_line + other
    items, n = normalize(data, sizes=[1 << 20] * 8, transcript_line_max_bytes=1 << 20)
    # uuid and timestamp come after the bulky content: only what the head says is kept.
    cut_source = AgentSource(provider="claude", session_id=S)
    assert items == [
        AgentEvent(type="tool.result", offset=0, payload=ToolResultPayload(
            fidelity=A, cut_bytes=len(tool_line) - 1, source=cut_source,
            blocks=[ToolResultBlock(tool_id="toolu_big", tool_content="", fidelity=A)])),
        AgentEvent(type="message.user", offset=len(tool_line), payload=MessageUserPayload(
            fidelity=A, cut_bytes=len(prompt_line) - 1, source=cut_source)),
        AgentEvent(type="message.assistant", offset=len(tool_line) + len(prompt_line),
                   payload=MessageAssistantPayload(
                       fidelity=A, message_id="msg_big", cut_bytes=len(reply_line) - 1,
                       source=AgentSource(provider="claude", session_id=S, request_id="r"))),
    ]
    assert n.stats.cut_lines == 4
    assert n.stats.ignored_types == {"file-history-snapshot": 1}
    assert n.stats.lines == 0 and n.stats.events == 3


# --- reset ---------------------------------------------------------------------------------


def test_reset_releases_the_reply_drops_the_partial_line_and_says_so():
    n = ClaudeNormalizer()
    whole = assistant("a1", "m1", [{"type": "text", "text": "hi"}])
    n.feed(whole + b'{"type":"us')
    reply, reset = n.reset("truncated")
    assert reply.type == "message.assistant"
    assert reset == LogReset(reason="truncated", previous_offset=len(whole) + 11, dropped_bytes=11)
    assert n.offset == 0 and n.stats.truncated_lines == 1
    assert [i.type for i in n.feed(user("u9", "fresh"))] == ["message.user"]
