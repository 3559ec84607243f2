"""The usage log's format: the events the daemon appends for every call, and the names
`vigil report` reads back (seeds/000, "Workflow telemetry and latency diagnostics", "Usage
metrics for plugin workflows").

It lives beside the wire contract because it is one: two processes (the daemon writing,
the report reading, possibly of different versions) agree on it, and neither may need the
other's code. stdlib + msgspec only.

One JSON object per line. Per call:

- `tool_started` once the call's tool and action are known;
- `tool_phase` start/finish pairs (at most `PHASE_PAIRS_MAX` per call, then one
  `truncated` marker; suppressed phases still count in the terminal summary);
- `tool_call`, the terminal event: outcome, duration, inclusive phase totals and the
  call's counters.

All three share a random `usage_call_id` and carry `usage_schema` (the terminal event also
`workflow_schema`), always written: the Structs give them no default. A start without a
terminal means completion was not observed (process loss, log rotation, an early exit),
not that the call still runs.

What is never written: command or prompt text, output, cursors, raw paths, ids of
executions or threads. Every counter is optional: an absent one is unknown, never zero
(`omit_defaults` drops the `None`s), and a measured zero is written as 0.
"""

from __future__ import annotations

from typing import Literal

import msgspec

USAGE_SCHEMA = 1
WORKFLOW_SCHEMA = 1
OBSERVE_SCHEMA = 1

#: The spec's phases, by the name they carry in the log.
PHASES = (
    "workspace_validation",   # Initialize: canonicalize the workspace
    "session_admission",      # resolve the thread, check authority
    "catalog",                # store reads and the catalog transaction
    "runtime_inspection",     # live screens taken, pending output committed (capture)
    "native_prompt_rpc",      # input to a guardian for a native prompt
    "herdr_adapter",          # the Herdr CLI
    "wait_sleep",             # a deliberate wait (lifecycle long-poll, inline waits)
    "temporary_file_audit",   # the shell's private command files
    "response_finalization",  # encoding the answer
)
#: Phase start/finish pairs written per call before the one truncation marker (spec: 16).
PHASE_PAIRS_MAX = 16

Outcome = Literal["ok", "partial", "error", "abandoned"]


class PhaseTotal(msgspec.Struct, kw_only=True, gc=False):
    """Inclusive total of one phase in one call: invocations and whole milliseconds (a
    submillisecond phase has ms 0 with a positive count)."""

    count: int
    ms: int


class ToolStarted(msgspec.Struct, tag_field="event", tag="tool_started", kw_only=True,
                  omit_defaults=True, gc=False):
    usage_call_id: str
    ts_ms: int
    tool: str
    action: str | None = None
    backend: str | None = None
    usage_schema: int


class ToolPhase(msgspec.Struct, tag_field="event", tag="tool_phase", kw_only=True,
                omit_defaults=True, gc=False):
    """`edge` start/finish of one phase (`ms` on finish), or the call's one `truncated`
    marker after `PHASE_PAIRS_MAX` pairs."""

    usage_call_id: str
    ts_ms: int
    edge: Literal["start", "finish", "truncated"]
    phase: str | None = None
    ms: int | None = None
    usage_schema: int


class ToolCall(msgspec.Struct, tag_field="event", tag="tool_call", kw_only=True,
               omit_defaults=True, gc=False):
    """The terminal event of one call."""

    usage_call_id: str
    ts_ms: int
    tool: str
    outcome: Outcome
    duration_ms: int
    usage_schema: int
    workflow_schema: int
    action: str | None = None
    backend: str | None = None
    #: The client's self-declared name (`vigil`, `vigil-mcp`, …) and transport kind.
    client: str | None = None
    principal_kind: Literal["local", "http"] | None = None
    #: The error code when `outcome` is error; `execution_observation_issues` for partial.
    error_code: str | None = None
    response_bytes: int | None = None
    phases: dict[str, PhaseTotal] = {}
    phases_truncated: bool = False

    # --- Execution/Agent list ---------------------------------------------------------------
    listed: int | None = None
    # --- read (Execution/Agent read) --------------------------------------------------------
    read_source: str | None = None
    read_requested_bytes: int | None = None
    read_returned_bytes: int | None = None
    read_has_more: bool | None = None
    read_gap: bool | None = None
    read_resync: bool | None = None
    # --- observe (spec: "Usage metrics") ----------------------------------------------------
    observe_schema: int | None = None
    batch_items: int | None = None
    observe_requested_items: int | None = None
    observe_returned_items: int | None = None
    observe_items_with_issues: int | None = None
    # --- catalog waits ----------------------------------------------------------------------
    catalog_outcome: Literal["changed", "timeout", "resync"] | None = None
    catalog_changes: int | None = None
    wait_timeout_ms: int | None = None
    wait_events: int | None = None
    # --- BashCommand inline waits (spec: "Usage metrics") -----------------------------------
    requested_wait_policy: str | None = None
    requested_wait_ms: int | None = None
    effective_wait_policy: str | None = None
    effective_wait_ms: int | None = None
    effective_wait_mode: Literal["synchronous", "task_inline", "task"] | None = None
    # --- native prompt receipts -------------------------------------------------------------
    receipt_delivery: str | None = None
    receipt_activity: str | None = None
    receipt_condition: str | None = None
    receipt_replayed: bool | None = None
    # --- Herdr ------------------------------------------------------------------------------
    herdr_delivery: str | None = None
    herdr_input_sent: Literal["true", "false", "unknown"] | None = None
    herdr_error_code: str | None = None


UsageEvent = ToolStarted | ToolPhase | ToolCall
AUXILIARY_EVENTS = frozenset({"tool_started", "tool_phase"})
