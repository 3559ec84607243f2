"""What a normalizer hands the recorder: events to append, turn ends, log resets, counters.

A normalizer turns an agent's session log into `AgentEvent`s, each one transcript event of
`agent_emitted` fidelity that the recorder wraps in an `ExchangeEvent` (it owns `seq`,
`run_id`, `path` and the recording time). Next to them come two signals that are not
transcript events: `TurnEnded` (the agent says it finished a turn; turn archives need it)
and `LogReset` (the log shrank or was replaced; the execution's logs should say so).
"""

from __future__ import annotations

from typing import Literal, Union

import msgspec

from vigil.protocol.transcript import (
    MessageAssistantPayload, MessageUserPayload, ToolCallPayload, ToolResultPayload,
)

__all__ = ["AgentEvent", "AgentEventType", "Item", "LogReset", "NormalizerStats", "TurnEnded"]

AgentEventType = Literal["message.user", "message.assistant", "tool.call", "tool.result"]


class AgentEvent(msgspec.Struct, kw_only=True, frozen=True):
    """One transcript event read from the agent's log.

    Args:
        type: the event type; `payload` is the matching payload Struct, its `fidelity`
            `agent_emitted` and its `source` saying where and when the agent wrote it.
        offset: the log offset of the (first) line it was built from.

    An in-process value handed to the recorder (it encodes, for logs and tests, but is
    never decoded: the payload union is untagged, `type` says which it is).
    """

    type: AgentEventType
    payload: Union[MessageUserPayload, MessageAssistantPayload, ToolCallPayload, ToolResultPayload]
    offset: int


class TurnEnded(msgspec.Struct, kw_only=True, frozen=True):
    """The agent's own word that a turn is over (it is back at its input).

    `reason` is the provider's signal: `end_turn` (Claude: an assistant reply with
    `stop_reason: end_turn`), `interrupted` (Claude: the person interrupted the reply),
    `task_complete` / `aborted` (Codex: `task_complete` / `turn_aborted`). Claude Code often
    leaves `stop_reason` null in its log, so a turn's end may come without this signal: the
    screen recognizer's `awaiting_input` remains the other witness.
    """

    provider: str
    reason: Literal["end_turn", "interrupted", "task_complete", "aborted"]
    timestamp: str | None
    offset: int
    session_id: str | None = None
    turn_id: str | None = None
    message_id: str | None = None
    last_message: str | None = None


class LogReset(msgspec.Struct, kw_only=True, frozen=True):
    """The followed log is shorter than what was read (`truncated`) or is another file now
    (`replaced`); reading starts again at its beginning. `dropped_bytes` of a half-written
    line were discarded."""

    reason: Literal["truncated", "replaced"]
    previous_offset: int
    dropped_bytes: int


Item = Union[AgentEvent, TurnEnded, LogReset]


class NormalizerStats(msgspec.Struct, kw_only=True):
    """Everything a normalizer read and did not turn into events, counted (nothing is
    dropped silently; `explain` shows these).

    Args:
        lines: non-empty lines read.
        events: `AgentEvent`s produced.
        unknown_types: skipped lines by type, types this version does not know (a newer
            agent's): `{"progress-v2": 3}`; Codex `event_msg` and `response_item` kinds are
            named `event_msg:<type>` / `response_item:<type>`.
        ignored_types: skipped lines by type, known to carry no conversation (`summary`,
            `token_count`, `session_meta`, …).
        unknown_blocks: content blocks of kinds this version does not map, by kind.
        duplicates: Codex lines that repeat visible content taken once from another line
            (`agent_message`, `agent_reasoning` echo the `response_item`s; a prompt is
            written both as `user_message` and as a user `message`).
        repaired_lines: lines read only after a repair: a byte-order mark, NUL or other raw
            control bytes, a line another write was interleaved into.
        invalid_lines: lines that are not JSON even after the repairs, or not the shape of
            a line of their type; `last_problem` says where and why for the latest.
        cut_lines: lines longer than `transcript_line_max_bytes`, recorded cut.
        truncated_lines: half-written lines that never completed (the log ended or was reset
            mid-line).
    """

    lines: int = 0
    events: int = 0
    unknown_types: dict[str, int] = {}
    ignored_types: dict[str, int] = {}
    unknown_blocks: dict[str, int] = {}
    duplicates: int = 0
    repaired_lines: int = 0
    invalid_lines: int = 0
    cut_lines: int = 0
    truncated_lines: int = 0
    last_problem: str = ""
