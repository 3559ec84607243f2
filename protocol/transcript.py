"""The exchange transcript's vocabulary (seeds/003): one `ExchangeEvent` per JSONL line.

A transcript file is `<state>/transcripts/<run_id>.jsonl`, one event a line, written by the
daemon's recorder (disk first, then fan-out) and read back by `vigil transcript`, `jq`, the
turn archives and anyone else; the `transcript` method carries the same events on the wire.
This module is the one place its shape is written down (in the protocol package: it is a
contract between the daemon, its clients and every tool that reads the files); the
recorder, the agent-log normalizers (`daemon/transcript/providers/`) and the readers all
build on it.

The shape is chosen for the seed's `jq` queries, which are tests:

* `type` is one of `EVENT_TYPES` (closed), `payload`'s shape is decided by `type`
  (`PAYLOAD_TYPES`). A reader decodes `type` as a plain string, so a line of a type it does
  not know (written by a newer vigil) is surfaced intact, never an error (`decode_event`).
* Content blocks are tagged by `type`, written first in the object:
  `.payload.blocks[] | select(.type == "text") | .text`.
* `fidelity` is on every block *and* on the payload of the four message/tool events:
  `select(.type == "tool.call" and .payload.fidelity == "router")`. `router` is what passed
  vigil's dispatch seam (ground truth); `agent_emitted` is what an agent wrote about itself
  in its own session log. The two never merge: a consumer tells them apart by this field.
* `step.started` carries the step's `kind` in its payload: `.payload.kind`.
* `step.call_workflow.started` / `.completed` carry `child_run_id` on the event itself, not
  in the payload, because the seed reads it there: `.child_run_id`.
* Every Struct omits the fields left at their default, so a line holds only what the event
  says (no `null` noise) and old readers ignore fields they do not know (msgspec's default).

Timestamps are UTC ISO-8601 strings ending in `Z` with milliseconds
(`2025-06-01T10:00:00.123Z`): `timestamp_from_unix_ms` makes one, `utc_timestamp` brings a
provider's spelling to that form.

Nothing here does I/O: `encode_event` returns the bytes of one line (LF included) for the
recorder's single `write()`, `decode_event` reads one line back.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Final, Literal, Union

import msgspec

__all__ = [
    "AGENT_EMITTED", "AgentSource", "Block", "CallWorkflowCompletedPayload",
    "CallWorkflowStartedPayload", "CommandBlock", "EVENT_TYPES", "EventLineError", "EventType",
    "ExchangeEvent", "Fidelity", "MessageAssistantPayload", "MessageUserPayload",
    "PAYLOAD_TYPES", "Payload", "ROUTER", "RunCompletedPayload", "RunStartedPayload",
    "StepCompletedPayload", "StepStartedPayload", "StreamBlock", "TextBlock", "ThinkingBlock",
    "ToolCallPayload", "ToolResultBlock", "ToolResultPayload", "ToolUseBlock", "decode_event",
    "encode_event", "timestamp_from_unix_ms", "timestamp_to_unix_ms", "utc_timestamp",
]

# --- vocabularies --------------------------------------------------------------------------

EventType = Literal[
    "run.started", "run.completed",
    "step.started", "step.completed",
    "step.call_workflow.started", "step.call_workflow.completed",
    "message.user", "message.assistant",
    "tool.call", "tool.result",
]
#: The closed vocabulary of `ExchangeEvent.type` (seeds/003, "Event Vocabulary").
EVENT_TYPES: Final[tuple[str, ...]] = EventType.__args__  # type: ignore[attr-defined]

Fidelity = Literal["router", "agent_emitted"]
ROUTER: Final = "router"
AGENT_EMITTED: Final = "agent_emitted"


# --- content blocks ------------------------------------------------------------------------


class _Block(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, tag_field="type"):
    """Base of the content blocks: tagged by `type`, which msgspec writes first."""


class TextBlock(_Block, tag="text"):
    """Plain text: a person's prompt, an assistant's reply."""

    text: str
    fidelity: Fidelity


class ThinkingBlock(_Block, tag="thinking"):
    """Reasoning output (Claude extended thinking, Codex reasoning summaries).

    `redacted` is true when the provider kept the reasoning encrypted (Claude's
    `redacted_thinking`, a Codex reasoning item with only `encrypted_content`): the block
    records that reasoning happened, `text` is then empty.
    """

    text: str
    fidelity: Fidelity
    redacted: bool = False


class ToolUseBlock(_Block, tag="tool_use"):
    """A tool invocation: `tool_id` pairs it with its `ToolResultBlock`.

    `tool_input` is the arguments as JSON (an object for Claude and Codex function calls, a
    string for tools whose input is raw text such as a Codex patch). When a provider's
    arguments should be JSON but do not parse, `tool_input` is the raw text as written and
    `input_error` says why (nothing is dropped).
    """

    tool_name: str
    tool_id: str
    tool_input: Any
    fidelity: Fidelity
    input_error: str | None = None


class ToolResultBlock(_Block, tag="tool_result"):
    """A tool's output. `is_error` is set only when the provider says so (Codex has no such
    flag); `exit_code` when the output reports one (a shell tool). Images in the output are
    not copied: `omitted_images` counts them."""

    tool_id: str
    tool_content: str
    fidelity: Fidelity
    is_error: bool | None = None
    exit_code: int | None = None
    omitted_images: int = 0


class CommandBlock(_Block, tag="command"):
    """A shell command a step ran (a persistent-shell command): its text, and its exit code
    once the step completed."""

    command: str
    fidelity: Fidelity
    exit_code: int | None = None


class StreamBlock(_Block, tag="stream"):
    """A provider stream chunk, for replays that keep partial output; `stream` names the
    channel when there is more than one (`stdout`, `stderr`)."""

    text: str
    fidelity: Fidelity
    stream: str | None = None


#: The closed vocabulary of content blocks (seeds/003, "Content Blocks").
Block = Union[TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, CommandBlock, StreamBlock]


# --- payloads ------------------------------------------------------------------------------


class _Payload(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """Base of the payloads."""


class AgentSource(_Payload):
    """Where an `agent_emitted` event was read: the agent's session log.

    Args:
        provider: `claude` or `codex`.
        session_id: the provider's session (Claude's `sessionId`, Codex's thread id).
        timestamp: the provider's own time for the (first) line, UTC `…Z`; the event's
            `timestamp` is when vigil recorded it.
        entry_ids: Claude's line `uuid`s the event was built from (several when one API
            response was spread over several lines).
        request_id: Claude's API `requestId`.
        turn_id: Codex's turn id, when the line names one.
        sidechain: the line belongs to a Claude side chain (a subagent's conversation).
    """

    provider: str
    session_id: str | None = None
    timestamp: str | None = None
    entry_ids: list[str] = []
    request_id: str | None = None
    turn_id: str | None = None
    sidechain: bool = False


class MessageUserPayload(_Payload):
    """`message.user`: a prompt.

    Router fidelity: a native prompt vigil delivered (`system_prompt` when one was composed).
    Agent-emitted: a user line of the agent's log. `injected` names context the agent's
    harness put on the user side that is not the person (`meta`, `compact_summary`,
    `developer`, `interrupted`, or the tag the text is wrapped in: `command-name`,
    `system-reminder`, `environment_context`, …); such messages are kept, marked, so a
    consumer that wants the person's words filters `select(.payload.injected == null)`.
    `cut_bytes` is set when the log line was longer than `transcript_line_max_bytes`: its
    content was not read (the blocks are then empty) and the figure is the line's length.
    """

    fidelity: Fidelity
    blocks: list[Block] = []
    system_prompt: str | None = None
    injected: str | None = None
    omitted_images: int = 0
    cut_bytes: int = 0
    source: AgentSource | None = None


class MessageAssistantPayload(_Payload):
    """`message.assistant`: one reply (one API response), its blocks in the order written
    (`thinking`, `text`, `tool_use`). `continued` is true when a later line added blocks to
    a reply already recorded under the same `message_id` (a merge can only wait so long).
    `cut_bytes` as in `MessageUserPayload`."""

    fidelity: Fidelity
    blocks: list[Block] = []
    message_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    continued: bool = False
    cut_bytes: int = 0
    source: AgentSource | None = None


class ToolCallPayload(_Payload):
    """`tool.call`: one tool invocation begins; `blocks` holds its single `tool_use` block.

    Router fidelity: a call that passed vigil's dispatch seam, its `usage_call_id` as the
    `tool_id`. Agent-emitted: a `tool_use` the agent reported; the same block also appears
    in the `message.assistant` it belongs to (the reply as written), `tool.call` is the
    index a tool query reads (`select(.type == "tool.call" or .type == "tool.result")`).
    """

    fidelity: Fidelity
    blocks: list[Block] = []
    source: AgentSource | None = None


class ToolResultPayload(_Payload):
    """`tool.result`: a tool invocation completes; `blocks` holds its `tool_result` block.
    A `tool_use` may have no result (timeout, crash): it is recorded as is."""

    fidelity: Fidelity
    blocks: list[Block] = []
    cut_bytes: int = 0
    source: AgentSource | None = None


class RunStartedPayload(_Payload):
    """`run.started`: a thread or an execution began. `kind` is `thread` or `execution`."""

    kind: str
    command: str | None = None
    cwd: str | None = None
    workspace_root: str | None = None
    name: str | None = None


class RunCompletedPayload(_Payload):
    """`run.completed`: the run ended, success or not: `status` is the execution's outcome
    (`exited`, `unknown`) or `closed` for a thread."""

    status: str
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None


class StepStartedPayload(_Payload):
    """`step.started`: `kind` is `command`, `agent` or `terminal` (read as `.payload.kind`);
    a command step carries its `command` block."""

    kind: str
    blocks: list[Block] = []


class StepCompletedPayload(_Payload):
    """`step.completed`: the step's `kind` again, its `status`, and for a command step the
    `command` block with the exit code."""

    kind: str
    status: str | None = None
    blocks: list[Block] = []


class CallWorkflowStartedPayload(_Payload):
    """`step.call_workflow.started`: the parent started a child run; the child's id is the
    event's own `child_run_id`. `kind` is what the child is (`execution`, `thread`)."""

    kind: str
    command: str | None = None


class CallWorkflowCompletedPayload(_Payload):
    """`step.call_workflow.completed`: the child run's outcome, as in `RunCompletedPayload`."""

    status: str
    exit_code: int | None = None
    signal: int | None = None


Payload = Union[
    RunStartedPayload, RunCompletedPayload, StepStartedPayload, StepCompletedPayload,
    CallWorkflowStartedPayload, CallWorkflowCompletedPayload, MessageUserPayload,
    MessageAssistantPayload, ToolCallPayload, ToolResultPayload,
]

#: The payload Struct of each event type.
PAYLOAD_TYPES: Final[dict[str, type[msgspec.Struct]]] = {
    "run.started": RunStartedPayload,
    "run.completed": RunCompletedPayload,
    "step.started": StepStartedPayload,
    "step.completed": StepCompletedPayload,
    "step.call_workflow.started": CallWorkflowStartedPayload,
    "step.call_workflow.completed": CallWorkflowCompletedPayload,
    "message.user": MessageUserPayload,
    "message.assistant": MessageAssistantPayload,
    "tool.call": ToolCallPayload,
    "tool.result": ToolResultPayload,
}
assert set(PAYLOAD_TYPES) == set(EVENT_TYPES)


# --- the event -----------------------------------------------------------------------------


class ExchangeEvent(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """One line of a transcript file.

    Args:
        seq: strictly monotonic from 1 within one file.
        run_id: the run the file belongs to (a thread id or an execution id, 32 hex).
        parent_run_id: on every event of a child run: the run that started it.
        path: the dot-separated step path (`turn.3`, `command.12`; empty for the run itself).
        timestamp: when vigil recorded the event, UTC `…Z`.
        type: one of `EVENT_TYPES` when written; any string when read (forward compatible).
        child_run_id: on `step.call_workflow.*` only: the child run (the seed reads it here).
        payload: the Struct `PAYLOAD_TYPES[type]` names; after `decode_event`, a plain dict
            for a type this version does not know.
    """

    seq: int
    run_id: str
    parent_run_id: str | None = None
    path: str
    timestamp: str
    type: str
    child_run_id: str | None = None
    payload: Any


class EventLineError(ValueError):
    """A transcript line that is not an event at all (not JSON, or no envelope). The
    message says what is wrong with it; a reader counts such lines and goes on."""


_ENCODER = msgspec.json.Encoder()
_EVENT = msgspec.json.Decoder(ExchangeEvent)


def encode_event(event: ExchangeEvent) -> bytes:
    """The bytes of one transcript line: compact JSON and a final LF. JSON escapes every
    newline inside strings, so the line is one line whatever the content."""
    return _ENCODER.encode(event) + b"\n"


def decode_event(line: bytes | str) -> ExchangeEvent:
    """Read one transcript line back (a trailing LF is allowed).

    The payload of a known type is its typed Struct. The payload of a type this version does
    not know, or of a known type in a shape it cannot read (written by a newer version), is
    the plain decoded JSON: the event is surfaced intact, never refused.

    Raises:
        EventLineError: the line is not JSON, or lacks the envelope (`seq`, `run_id`,
            `path`, `timestamp`, `type`).
    """
    try:
        event = _EVENT.decode(line)
    except msgspec.DecodeError as exc:
        raise EventLineError(f"not a transcript event: {exc}") from None
    payload_type = PAYLOAD_TYPES.get(event.type)
    if payload_type is None:
        return event
    try:
        typed = msgspec.convert(event.payload, payload_type)
    except msgspec.ValidationError:
        return event
    return msgspec.structs.replace(event, payload=typed)


# --- timestamps ----------------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
#: The form every transcript timestamp has (what JavaScript's `toISOString()` writes, which
#: is also Claude Code's and Codex's spelling).
_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")


def timestamp_from_unix_ms(unix_ms: int) -> str:
    """`2025-06-01T10:00:00.123Z` for a time in Unix milliseconds."""
    seconds, ms = divmod(unix_ms, 1000)
    moment = _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms:03d}Z"


def timestamp_to_unix_ms(value: str) -> int | None:
    """Unix milliseconds of an ISO-8601 timestamp; one without an offset is taken as UTC
    (both providers write UTC); None when it is not a timestamp."""
    try:
        moment = _dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def utc_timestamp(value: object) -> str | None:
    """A provider's timestamp in the transcript's form (UTC, milliseconds, `Z`), or None
    when it is missing or not a timestamp. The usual spelling is returned as is."""
    if not isinstance(value, str):
        return None
    if _CANONICAL.match(value):
        return value
    unix_ms = timestamp_to_unix_ms(value)
    return None if unix_ms is None else timestamp_from_unix_ms(unix_ms)
