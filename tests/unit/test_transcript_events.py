"""The transcript vocabulary: exact JSON lines, reading back (unknown types intact), the
timestamp form, and the seed's jq queries run by jq over lines this module wrote."""

from __future__ import annotations

import shutil
import subprocess

import msgspec
import pytest

from vigil.protocol.transcript import (
    EVENT_TYPES, PAYLOAD_TYPES, AgentSource, CallWorkflowCompletedPayload,
    CallWorkflowStartedPayload, CommandBlock, EventLineError, ExchangeEvent,
    MessageAssistantPayload, MessageUserPayload, RunCompletedPayload, RunStartedPayload,
    StepCompletedPayload, StepStartedPayload, StreamBlock, TextBlock, ThinkingBlock,
    ToolCallPayload, ToolResultBlock, ToolResultPayload, ToolUseBlock, decode_event,
    encode_event, timestamp_from_unix_ms, timestamp_to_unix_ms, utc_timestamp,
)

RUN = "a" * 32
CHILD = "b" * 32
TS = "2025-06-01T10:00:00.000Z"


def event(seq, type, payload, **kw) -> ExchangeEvent:
    return ExchangeEvent(seq=seq, run_id=RUN, path=kw.pop("path", "turn.1"), timestamp=TS,
                         type=type, payload=payload, **kw)


def test_closed_vocabularies():
    assert EVENT_TYPES == (
        "run.started", "run.completed", "step.started", "step.completed",
        "step.call_workflow.started", "step.call_workflow.completed",
        "message.user", "message.assistant", "tool.call", "tool.result")
    assert set(PAYLOAD_TYPES) == set(EVENT_TYPES)
    tags = sorted(cls.__struct_config__.tag for cls in (
        TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, CommandBlock, StreamBlock))
    assert tags == ["command", "stream", "text", "thinking", "tool_result", "tool_use"]


def test_tool_call_line_is_exact():
    e = event(3, "tool.call", ToolCallPayload(fidelity="router", blocks=[
        ToolUseBlock(tool_name="BashCommand", tool_id="call-7", tool_input={"command": "ls"},
                     fidelity="router")]))
    assert encode_event(e) == (
        b'{"seq":3,"run_id":"' + RUN.encode() + b'","path":"turn.1","timestamp":"' + TS.encode()
        + b'","type":"tool.call","payload":{"fidelity":"router","blocks":[{"type":"tool_use",'
        b'"tool_name":"BashCommand","tool_id":"call-7","tool_input":{"command":"ls"},'
        b'"fidelity":"router"}]}}\n')


def test_child_run_id_and_parent_run_id_sit_on_the_event():
    e = ExchangeEvent(seq=1, run_id=RUN, parent_run_id=CHILD, path="command.2", timestamp=TS,
                      type="step.call_workflow.started", child_run_id=CHILD,
                      payload=CallWorkflowStartedPayload(kind="execution", command="make"))
    assert msgspec.json.decode(encode_event(e)) == {
        "seq": 1, "run_id": RUN, "parent_run_id": CHILD, "path": "command.2", "timestamp": TS,
        "type": "step.call_workflow.started", "child_run_id": CHILD,
        "payload": {"kind": "execution", "command": "make"}}


def test_agent_emitted_assistant_line_omits_defaults():
    e = event(4, "message.assistant", MessageAssistantPayload(
        fidelity="agent_emitted", message_id="msg_1", model="m",
        blocks=[ThinkingBlock(text="t", fidelity="agent_emitted"),
                TextBlock(text="hi", fidelity="agent_emitted")],
        source=AgentSource(provider="claude", session_id="S", timestamp=TS, entry_ids=["a1"])))
    assert msgspec.json.decode(encode_event(e))["payload"] == {
        "fidelity": "agent_emitted",
        "blocks": [{"type": "thinking", "text": "t", "fidelity": "agent_emitted"},
                   {"type": "text", "text": "hi", "fidelity": "agent_emitted"}],
        "message_id": "msg_1", "model": "m",
        "source": {"provider": "claude", "session_id": "S", "timestamp": TS, "entry_ids": ["a1"]}}


def test_a_line_with_a_newline_in_its_text_stays_one_line():
    e = event(1, "message.user", MessageUserPayload(fidelity="router", blocks=[
        TextBlock(text="a\nb\r\n\x00", fidelity="router")]))
    line = encode_event(e)
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    assert decode_event(line) == e


@pytest.mark.parametrize("payload", [
    RunStartedPayload(kind="thread", cwd="/w", workspace_root="/w"),
    RunCompletedPayload(status="exited", exit_code=0),
    StepStartedPayload(kind="command", blocks=[CommandBlock(command="make", fidelity="router")]),
    StepCompletedPayload(kind="command", status="exited",
                         blocks=[CommandBlock(command="make", exit_code=2, fidelity="router")]),
    CallWorkflowCompletedPayload(status="exited", exit_code=1),
    ToolResultPayload(fidelity="agent_emitted", blocks=[ToolResultBlock(
        tool_id="t", tool_content="out", is_error=True, exit_code=1, fidelity="agent_emitted")]),
    MessageUserPayload(fidelity="agent_emitted", blocks=[
        StreamBlock(text="partial", stream="stdout", fidelity="agent_emitted")], injected="meta"),
])
def test_every_known_payload_reads_back_typed(payload):
    kind = next(k for k, t in PAYLOAD_TYPES.items() if t is type(payload))
    e = event(9, kind, payload)
    assert decode_event(encode_event(e)) == e


def test_unknown_type_is_surfaced_intact():
    line = (b'{"seq":5,"run_id":"r","path":"","timestamp":"' + TS.encode()
            + b'","type":"tool.progress","payload":{"percent":50},"extra":1}')
    assert decode_event(line) == ExchangeEvent(seq=5, run_id="r", path="", timestamp=TS,
                                               type="tool.progress", payload={"percent": 50})


def test_known_type_in_a_newer_shape_is_surfaced_as_a_dict():
    line = (b'{"seq":6,"run_id":"r","path":"","timestamp":"' + TS.encode()
            + b'","type":"tool.call","payload":{"fidelity":"router","blocks":[{"type":"video"}]}}\n')
    assert decode_event(line).payload == {"fidelity": "router", "blocks": [{"type": "video"}]}


@pytest.mark.parametrize(("line", "message"), [
    (b'{"seq":1,', "not a transcript event: Input data was truncated"),
    (b'{"seq":1,"run_id":"r","path":"","timestamp":"t"}',
     "not a transcript event: Object missing required field `type`"),
    (b'[1]', "not a transcript event: Expected `object`, got `array`"),
])
def test_a_line_that_is_no_event_is_refused_with_the_reason(line, message):
    with pytest.raises(EventLineError) as exc:
        decode_event(line)
    assert str(exc.value) == message


def test_timestamps():
    assert timestamp_from_unix_ms(1748772000123) == "2025-06-01T10:00:00.123Z"
    assert timestamp_from_unix_ms(0) == "1970-01-01T00:00:00.000Z"
    assert timestamp_to_unix_ms("2025-06-01T10:00:00.123Z") == 1748772000123
    assert timestamp_to_unix_ms("2025-06-01T12:00:00.123456+02:00") == 1748772000123
    assert timestamp_to_unix_ms("2025-06-01T10:00:00") == 1748772000000
    assert timestamp_to_unix_ms("yesterday") is None
    assert utc_timestamp("2025-06-01T10:00:00.123Z") == "2025-06-01T10:00:00.123Z"
    assert utc_timestamp("2025-06-01T12:00:00.5+02:00") == "2025-06-01T10:00:00.500Z"
    assert utc_timestamp("2025-06-01T10:00:00Z") == "2025-06-01T10:00:00.000Z"
    assert utc_timestamp("soon") is None
    assert utc_timestamp(12) is None


# --- the seed's jq queries, over lines written by this module ------------------------------


@pytest.fixture
def transcript(tmp_path):
    events = [
        event(1, "run.started", RunStartedPayload(kind="thread", cwd="/w"), path=""),
        event(2, "step.started", StepStartedPayload(kind="command", blocks=[
            CommandBlock(command="make", fidelity="router")]), path="command.1"),
        ExchangeEvent(seq=3, run_id=RUN, path="command.1", timestamp=TS,
                      type="step.call_workflow.started", child_run_id=CHILD,
                      payload=CallWorkflowStartedPayload(kind="execution", command="make")),
        event(4, "tool.call", ToolCallPayload(fidelity="router", blocks=[ToolUseBlock(
            tool_name="BashCommand", tool_id="c1", tool_input={"command": "make"},
            fidelity="router")])),
        event(5, "message.assistant", MessageAssistantPayload(fidelity="agent_emitted", blocks=[
            ThinkingBlock(text="hmm", fidelity="agent_emitted"),
            TextBlock(text="Running make.", fidelity="agent_emitted"),
            ToolUseBlock(tool_name="Bash", tool_id="t1", tool_input={}, fidelity="agent_emitted")])),
        event(6, "tool.call", ToolCallPayload(fidelity="agent_emitted", blocks=[ToolUseBlock(
            tool_name="Bash", tool_id="t1", tool_input={}, fidelity="agent_emitted")])),
        event(7, "tool.result", ToolResultPayload(fidelity="router", blocks=[ToolResultBlock(
            tool_id="c1", tool_content="ok", fidelity="router")])),
        event(8, "step.started", StepStartedPayload(kind="agent"), path="turn.2"),
        event(9, "x.future", {"anything": True}),
    ]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(encode_event(e) for e in events))
    return path


def jq(args: list[str], path) -> str:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    return subprocess.run(["jq", *args, str(path)], check=True, capture_output=True,
                          text=True).stdout


def test_jq_pretty_print_reads_every_line(transcript):
    assert jq(["-c", ".seq"], transcript).split() == [str(i) for i in range(1, 10)]


def test_jq_tool_calls_with_results(transcript):
    assert jq(["-c", 'select(.type == "tool.call" or .type == "tool.result") | .seq'],
              transcript).split() == ["4", "6", "7"]


def test_jq_assistant_text(transcript):
    assert jq(["-r", 'select(.type == "message.assistant") | .payload.blocks[] '
                     '| select(.type == "text") | .text'], transcript) == "Running make.\n"


def test_jq_router_fidelity_tool_events(transcript):
    assert jq(["-c", 'select(.type == "tool.call" and .payload.fidelity == "router") | .seq'],
              transcript) == "4\n"


def test_jq_step_path_tree(transcript):
    assert jq(["-r", 'select(.type == "step.started") | "\\(.seq)\\t\\(.path)\\t\\(.payload.kind)"'],
              transcript) == "2\tcommand.1\tcommand\n8\tturn.2\tagent\n"


def test_jq_child_run_ids(transcript):
    assert jq(["-r", 'select(.type == "step.call_workflow.started") | .child_run_id'],
              transcript) == CHILD + "\n"
