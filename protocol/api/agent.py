"""`Agent`: observe native executions (and configured Herdr targets), and submit a native
prompt exactly once per prompt id (seeds/000, "Submit a native prompt once", "Optional
Herdr backend"). Parameters are flat, as in the spec's examples.

Native observation answers carry the `Execution` data of the same action plus `backend` and
`action`; Herdr answers carry Herdr's data; `RESULTS` names each. `get_trace` reads the
durable archive of one agent turn (`vigil.protocol.api.trace`); `get` and the prompt answers
carry the turn's compact summary (`turn`: its `archive_ref`, counts, tool names, statuses).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

from .execution import GetData, ExplainData, ListData, ReadData, Source, WaitData, WaitEvent
from .scope import Scoped
from .trace import TraceData, TurnSummary

AgentActionName = Literal["list", "get", "read", "explain", "wait", "prompt", "approve",
                          "get_trace"]
#: herdr's lifecycle states (reference/herdr-cli.md), the values `until` accepts.
HerdrState = Literal["idle", "working", "blocked", "done", "unknown"]
WaitFor = Literal["awaiting_input", "awaiting_approval", "exited"]


class AgentParams(Scoped, kw_only=True):
    action: AgentActionName
    backend: Literal["native", "herdr"] = "native"
    #: An execution id (native) or a configured target alias (herdr).
    target: str | None = None
    prompt_id: str | None = None
    #: approve: the caller's id for this approval; the approve keys are pressed once per id
    #: (seeds/002, `POST /executions/:id/approve`), a repeat is answered from the receipt.
    approval_id: str | None = None
    text: str | None = None
    recognizer: str = "auto"
    timeout_seconds: float | None = None
    #: prompt: which states end the inline wait (default: any of these three).
    wait_for: list[WaitFor] | None = None
    # read / list passthrough
    source: Source = "output"
    cursor: str | None = None
    page_bytes: int | None = None
    limit: int | None = None
    #: herdr read: rendered rows of recent text (spec: default 100, at most 1000).
    lines: int | None = None
    #: herdr wait: the lifecycle states that end it (herdr's default: idle, done, blocked).
    until: list[HerdrState] | None = None
    #: native wait: the events that end it (as `Execution wait`).
    events: list[WaitEvent] | None = None
    after: str | None = None
    #: get_trace: exactly one of the two references (both or neither: invalid_request).
    archive_ref: str | None = None
    trace_key: str | None = None
    #: get_trace: `summary` (default), `tool_calls` or `detail`; any other value is
    #: answered as `summary` (a plain string, so an unknown mode never fails validation).
    mode: str | None = None
    #: get_trace: the first step shown (from 1), to read past what one answer holds.
    from_seq: int | None = None


class PromptOutcome(msgspec.Struct, kw_only=True):
    """What happened to one prompt (text and Enter typed into a program waiting for input).

    delivery: `delivered` (text and Enter accepted by the guardian), `refused` (the guardian
    refused the text: nothing of it reached the terminal) or `uncertain` (a write may or may
    not have reached the terminal: never resent automatically).
    activity: `confirmed` (work or approval observed after the baseline), `unconfirmed`
    (none yet, or the text itself resembles a work/approval marker, for the receipt's
    lifetime). condition: the wait's end — `awaiting_input`, `awaiting_approval`, `exited`,
    `timed_out`, `generation_changed`, or `pending` while nothing decided it yet.
    """

    execution_id: str
    generation: int
    delivery: Literal["delivered", "refused", "uncertain"]
    activity: Literal["confirmed", "unconfirmed"]
    activity_reason: str
    condition: str
    bracketed_paste: bool
    #: Why delivery is not `delivered` (the guardian's refusal, a timeout), else null.
    delivery_reason: str | None = None


class Receipt(PromptOutcome, kw_only=True):
    """A native prompt's outcome, stored once per (execution, generation, prompt_id) and
    bound to the runtime; a stored one is returned again, never resent."""

    prompt_id: str
    runtime_id: str
    payload_digest: str
    submitted_at_unix_ms: int
    updated_at_unix_ms: int
    recognizer: str = "auto"
    wait_for: list[str] = []
    schema: int = 1
    #: The agent turn the prompt opened (when the daemon archives turns): its archive and
    #: its `trace_key` (`{execution_id}:{turn}`), for `get_trace`.
    archive_ref: str | None = None
    trace_key: str | None = None


D = TypeVar("D")


class AgentResult(msgspec.Struct, Generic[D], kw_only=True):
    """Every `Agent` answer: as `ExecutionResult`, `{status, code, data}`."""

    status: Literal["ok", "completed_with_issues"] = "ok"
    code: str | None = None
    data: D


# --- native ----------------------------------------------------------------------------------


class NativeListData(ListData, kw_only=True):
    backend: Literal["native"] = "native"
    action: Literal["list"] = "list"


class NativeGetData(GetData, kw_only=True):
    #: The execution's latest agent turn (open or committed), if it had one.
    turn: TurnSummary | None = None
    backend: Literal["native"] = "native"
    action: Literal["get"] = "get"


class NativeReadData(ReadData, kw_only=True):
    backend: Literal["native"] = "native"
    action: Literal["read"] = "read"


class NativeExplainData(ExplainData, kw_only=True):
    backend: Literal["native"] = "native"
    action: Literal["explain"] = "explain"


class NativeWaitData(WaitData, kw_only=True):
    backend: Literal["native"] = "native"
    action: Literal["wait"] = "wait"


class PromptData(msgspec.Struct, kw_only=True):
    """A native prompt's receipt; `replayed` when it was stored already (nothing sent)."""

    receipt: Receipt
    replayed: bool
    #: The turn the prompt opened, as it stands when the answer is sent.
    turn: TurnSummary | None = None
    backend: Literal["native"] = "native"
    action: Literal["prompt"] = "prompt"


class ApproveData(msgspec.Struct, kw_only=True):
    """A native approval's receipt (`prompt_id` holds the `approval_id`; `payload_digest`
    digests the keys pressed); `replayed` when it was stored already (nothing sent).
    `condition`: the state the program reached after the keys (`busy`, `awaiting_input`,
    `exited`), `timed_out` while it still asked, or `pending` when not delivered."""

    receipt: Receipt
    replayed: bool
    #: The manifest's approve keys that were (or, replayed, had been) pressed.
    keys: list[str]
    backend: Literal["native"] = "native"
    action: Literal["approve"] = "approve"


class ReceiptData(msgspec.Struct, kw_only=True):
    """A native `wait` with `prompt_id`: the receipt observed, nothing sent."""

    receipt: Receipt
    turn: TurnSummary | None = None
    backend: Literal["native"] = "native"
    action: Literal["wait"] = "wait"


# --- herdr -----------------------------------------------------------------------------------


class HerdrAgent(msgspec.Struct, kw_only=True):
    """The AgentInfo fields of a Herdr target a caller sees: identity, lifecycle, labels."""

    agent_status: HerdrState
    agent: str | None
    display_agent: str | None
    name: str | None
    title: str | None
    cwd: str | None
    terminal_id: str
    pane_id: str
    tab_id: str
    workspace_id: str
    focused: bool
    state_change_seq: int


class HerdrTarget(msgspec.Struct, kw_only=True):
    target: str
    found: bool
    agent: HerdrAgent | None


class HerdrListData(msgspec.Struct, kw_only=True):
    """Configured targets of the caller's binding only, with their live state."""

    targets: list[HerdrTarget]
    truncated: bool
    backend: Literal["herdr"] = "herdr"
    action: Literal["list"] = "list"


class HerdrGetData(msgspec.Struct, kw_only=True):
    target: str
    agent: HerdrAgent
    backend: Literal["herdr"] = "herdr"
    action: Literal["get"] = "get"


class HerdrReadData(msgspec.Struct, kw_only=True):
    """Recent text (no retained-output pagination: that is the native catalog's promise)."""

    target: str
    source: Literal["recent"]
    lines: int
    text: str
    truncated: bool
    backend: Literal["herdr"] = "herdr"
    action: Literal["read"] = "read"


class HerdrExplainData(msgspec.Struct, kw_only=True):
    """Herdr's own recognizer explanation, as Herdr shaped it (an object with `state`)."""

    target: str
    explain: dict[str, Any]
    backend: Literal["herdr"] = "herdr"
    action: Literal["explain"] = "explain"


class HerdrPromptData(msgspec.Struct, kw_only=True):
    """`submitted` is acknowledgement of submission, not completion. `uncertain` (with
    `input_sent: "unknown"` and a reason) must never be resent automatically."""

    target: str
    delivery: Literal["submitted", "uncertain"]
    input_sent: bool | Literal["unknown"]
    reason: str | None = None
    herdr_error_code: str | None = None
    agent: HerdrAgent | None = None
    backend: Literal["herdr"] = "herdr"
    action: Literal["prompt"] = "prompt"


class HerdrWaitData(msgspec.Struct, kw_only=True):
    """`capped`: the operation deadline cut the requested timeout."""

    target: str
    capped: bool
    condition_met: bool
    reason: Literal["timeout"] | None
    agent: HerdrAgent | None
    backend: Literal["herdr"] = "herdr"
    action: Literal["wait"] = "wait"


#: The result type of each (backend, action); see `result_key`.
RESULTS = {
    ("native", "list"): AgentResult[NativeListData],
    ("native", "get"): AgentResult[NativeGetData],
    ("native", "read"): AgentResult[NativeReadData],
    ("native", "explain"): AgentResult[NativeExplainData],
    ("native", "wait"): AgentResult[NativeWaitData],
    #: a native `wait` that names a `prompt_id`
    ("native", "wait_receipt"): AgentResult[ReceiptData],
    ("native", "prompt"): AgentResult[PromptData],
    ("native", "approve"): AgentResult[ApproveData],
    ("native", "get_trace"): AgentResult[TraceData],
    ("herdr", "list"): AgentResult[HerdrListData],
    ("herdr", "get"): AgentResult[HerdrGetData],
    ("herdr", "read"): AgentResult[HerdrReadData],
    ("herdr", "explain"): AgentResult[HerdrExplainData],
    ("herdr", "wait"): AgentResult[HerdrWaitData],
    ("herdr", "prompt"): AgentResult[HerdrPromptData],
}


def result_key(params: AgentParams) -> tuple[str, str]:
    """Which `RESULTS` entry answers `params`."""
    if params.backend == "native" and params.action == "wait" and params.prompt_id is not None:
        return ("native", "wait_receipt")
    if params.action == "approve":
        return ("native", "approve")  # native only: a herdr approve is refused
    return (params.backend, params.action)
