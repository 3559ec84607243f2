"""`get_trace` (an `Agent` action): read the durable archive of one agent turn (seeds/002,
"The durable execution archive", "Reading a trace from inside a workflow").

An **archive** is the structured record of one agent turn — the prompt, then one step per
reply of the agent (seq, agent-loop iteration, the assistant action, the tool results, a
timestamp) — built by the daemon from the turn's transcript events, redacted when it is
written, and immutable once the turn ended. Three views of an execution are kept apart:

* the archive itself, read with `get_trace` (this module's `TraceData`);
* the **model-context projection**, `TurnSummary`: counts, tool names, statuses and the
  terminal state, never an argument or a payload. `Agent get` and prompt receipts carry it
  (`turn`), so a model sees what happened and asks `get_trace` only for detail;
* the UI projection (the live event stream), which is not an archive.

A reference is either `archive_ref` (`ArchiveRef`: 32 lowercase hex characters, a UUIDv4 with
no hyphens; opaque: it names no path, scope or turn) or `trace_key` (`{execution_id}:{turn}`,
readable while the execution's record is kept). Anything else is refused by
`parse_archive_ref` / `parse_trace_key` before anything is looked up.

Modes (`TRACE_MODES`): `summary` (the default: the summary, no steps), `tool_calls` (each
step's tool calls: names, call ids, policy-allowed arguments, and each result's status — no
result payloads), `detail` (everything the archive's redaction kept). A mode this version
does not know falls back to `summary` (`mode_fallback`), never to something wider. The
answer is bounded by the daemon, whatever the caller asks: its compact JSON is at most
`WireLimits.trace_render_chars_max` characters (24,000, seeds/002); steps that do not fit
are counted (`omitted_steps`) and the next one named (`next_seq`, to pass as `from_seq`).
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, Union

import msgspec

__all__ = [
    "ArchiveStamp", "CallStatus", "POLICY_VERSION", "REDACTION_MODES", "RETENTION_CLASSES",
    "RedactionMode", "RetentionClass", "TRACE_MODES", "ToolCount", "TraceBlock", "TraceData",
    "TraceMode", "TracePrompt", "TraceResult", "TraceStep", "TraceText", "TraceThinking",
    "TraceToolUse", "TurnSummary", "parse_archive_ref", "parse_trace_key",
]

TraceMode = Literal["summary", "tool_calls", "detail"]
TRACE_MODES: Final[tuple[str, ...]] = TraceMode.__args__  # type: ignore[attr-defined]
RetentionClass = Literal["ephemeral", "standard", "extended"]
RETENTION_CLASSES: Final[tuple[str, ...]] = RetentionClass.__args__  # type: ignore[attr-defined]
RedactionMode = Literal["strict", "balanced", "diagnostic"]
REDACTION_MODES: Final[tuple[str, ...]] = RedactionMode.__args__  # type: ignore[attr-defined]
CallStatus = Literal["ok", "error"]

#: Version of the meaning of the redaction decisions stamped on an archive. Bumped when what
#: a mode keeps or masks changes, so an old archive keeps its original interpretation.
POLICY_VERSION: Final = 1

# --- references ------------------------------------------------------------------------------

#: A UUIDv4 as 32 lowercase hex digits: version nibble 4, variant 8-b.
_ARCHIVE_REF = re.compile(r"[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}\Z")
_TRACE_KEY = re.compile(r"([0-9a-f]{32}):([1-9][0-9]{0,17})\Z")


def parse_archive_ref(value: object) -> str | None:
    """`value` if it is an `ArchiveRef`, else None. Nothing else — upper case, hyphens, a
    path, another length — is ever turned into one, so no caller text reaches a lookup."""
    if isinstance(value, str) and len(value) == 32 and _ARCHIVE_REF.match(value):
        return value
    return None


def parse_trace_key(value: object) -> tuple[str, int] | None:
    """(execution id, turn) of a `trace_key` (`{execution_id}:{turn}`, turn from 1), else
    None."""
    if not isinstance(value, str) or len(value) > 51:
        return None
    match = _TRACE_KEY.match(value)
    return None if match is None else (match[1], int(match[2]))


# --- the stamp and the summary ---------------------------------------------------------------


class ArchiveStamp(msgspec.Struct, kw_only=True, frozen=True):
    """The policy an archive was written under, stamped on it when it opened, so it stays
    interpretable after the configuration changes.

    Args:
        retention_class: `ephemeral` (the base TTL capped at 1 h), `standard` (the base TTL)
            or `extended` (the base TTL × 12).
        redaction: `strict` (names, statuses, sizes; no payload bytes), `balanced` (bounded
            payloads, sensitive argument keys and token-like values masked) or `diagnostic`
            (payloads at their limit, nothing masked).
        policy_version: `POLICY_VERSION` of the daemon that wrote it.
        ttl_completed_seconds / ttl_failed_seconds: the archive's lifetime after its turn
            ended, for a completed and a failed turn, the class applied: decided here, once,
            so a later configuration never shortens nor extends it.
        payload_chars: the longest payload the redaction kept (0 under `strict`).
    """

    retention_class: RetentionClass
    redaction: RedactionMode
    policy_version: int
    ttl_completed_seconds: float
    ttl_failed_seconds: float
    payload_chars: int


class ToolCount(msgspec.Struct, kw_only=True, frozen=True):
    """One tool of a turn: how often it was called and how many results were errors."""

    name: str
    calls: int
    errors: int = 0


class TurnSummary(msgspec.Struct, kw_only=True, frozen=True):
    """The model-context projection of a turn: what a model needs to know happened, never
    an argument or a payload. Detail is one `get_trace` away (`archive_ref`).

    Args:
        state: `open` while the turn runs, `committed` once it ended (immutable).
        status: how the turn ended (`awaiting_input`, `end_turn`, `task_complete`,
            `interrupted`, `exited`, …); null while open.
        failed: the turn did not end at the agent's input (its process ended, it was
            interrupted): it is kept for the failed-turn lifetime.
        steps / iterations: replies of the agent, and model calls they came from.
        tool_calls / tool_errors: calls made, and results that were errors.
        results_missing: calls that got no result.
        replay_blocked_steps: steps whose capture was ambiguous (never replayed).
        tools: every tool called, in first-use order.
    """

    archive_ref: str
    trace_key: str
    turn: int
    state: Literal["open", "committed"]
    status: str | None = None
    failed: bool = False
    steps: int = 0
    iterations: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    results_missing: int = 0
    replay_blocked_steps: int = 0
    tools: list[ToolCount] = []


# --- steps -----------------------------------------------------------------------------------


class _Part(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, tag_field="type"):
    """A block of an assistant action, tagged by `type` as the transcript's blocks are."""


class TraceText(_Part, tag="text"):
    """Text the agent wrote. `text` is null under `strict` redaction; `bytes` is the size
    of the original; `truncated` when the kept text is shorter than the original; `masked`
    counts token-like values replaced by `[masked]`."""

    text: str | None = None
    bytes: int = 0
    truncated: bool = False
    masked: int = 0


class TraceThinking(_Part, tag="thinking"):
    """Reasoning the agent reported (as `TraceText`); `redacted` when the provider kept it
    encrypted (nothing to show whatever the policy)."""

    text: str | None = None
    bytes: int = 0
    truncated: bool = False
    masked: int = 0
    redacted: bool = False


class TraceToolUse(_Part, tag="tool_use"):
    """A tool call. `input` is the arguments as the policy allows them: null under `strict`;
    the JSON value with sensitive keys masked (`masked` counts them) when it fits the
    payload limit; else the first characters of its JSON text and `input_truncated`.
    `input_bytes` is the size of the original arguments' JSON."""

    tool_id: str
    name: str
    input: Any = None
    input_bytes: int = 0
    input_truncated: bool = False
    masked: int = 0
    input_error: str | None = None


TraceBlock = Union[TraceText, TraceThinking, TraceToolUse]


class TraceResult(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """One tool result. `status` is `error` when the provider flagged it or a shell tool's
    exit code is not 0. `content` is null under `strict` and in `tool_calls` mode; `bytes`
    is the size of the original. `cut_bytes`: the agent's log line was too long to read, so
    the content is unknown (the figure is the line's length)."""

    tool_id: str
    status: CallStatus
    content: str | None = None
    bytes: int = 0
    truncated: bool = False
    masked: int = 0
    is_error: bool | None = None
    exit_code: int | None = None
    omitted_images: int = 0
    cut_bytes: int = 0


class TraceStep(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """One reply of the agent and the results of the calls it made.

    Args:
        seq: from 1 within the archive.
        iteration: the agent-loop iteration (model call) it came from: a reply the agent's
            log spread over several lines keeps its iteration.
        timestamp: when vigil recorded the reply (UTC `…Z`).
        action: the reply's blocks in the order written (`tool_calls` mode: its calls).
        results: the results paired with its calls.
        replay_blocked: the capture was ambiguous (`blocked_reasons`: `duplicate_call_id`,
            `second_result`, `result_without_call`, `call_without_result`): archived as it
            was, never replayed.
        cut_bytes: the reply's log line was too long to read: its blocks are unknown.
    """

    seq: int
    iteration: int
    timestamp: str
    action: list[TraceBlock] = []
    results: list[TraceResult] = []
    replay_blocked: bool = False
    blocked_reasons: list[str] = []
    message_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    cut_bytes: int = 0


class TracePrompt(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A prompt of the turn: the one vigil delivered (`router`) and the agent's own record of
    it (`agent_emitted`), redacted as `TraceText`."""

    fidelity: str
    timestamp: str
    text: str | None = None
    bytes: int = 0
    truncated: bool = False
    masked: int = 0


class TraceData(msgspec.Struct, kw_only=True):
    """A turn's archive at the width of `mode`, bounded (module docstring).

    Args:
        mode: the mode answered; `mode_fallback` when the one asked for is unknown.
        state: `open` (the turn runs, or its daemon stopped before it ended) or `committed`.
        stamp: the policy the archive was written under.
        expires_at_unix_ms: when the cleanup removes it (stamped, never recomputed).
        prompts: `detail` only.
        steps: `tool_calls` and `detail`, from `from_seq`, as many as fit.
        next_seq: the first step left out for room (null: none was).
        omitted_steps: steps from `from_seq` on that were left out for room.
        rendered_chars: characters of this answer's compact JSON (≤ the cap).
    """

    archive_ref: str
    trace_key: str
    execution_id: str
    turn: int
    mode: TraceMode
    mode_fallback: bool = False
    state: Literal["open", "committed"]
    stamp: ArchiveStamp
    opened_at_unix_ms: int
    committed_at_unix_ms: int | None = None
    expires_at_unix_ms: int
    summary: TurnSummary
    prompts: list[TracePrompt] = []
    steps: list[TraceStep] = []
    from_seq: int = 1
    next_seq: int | None = None
    omitted_steps: int = 0
    truncated: bool = False
    rendered_chars: int = 0
    backend: Literal["native"] = "native"
    action: Literal["get_trace"] = "get_trace"
