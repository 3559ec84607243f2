"""`run`, `Execution` (list/get/read/observe/wait/explain), `signal` and `resolve`:
starting executions and reading their history, in the spec's JSON shapes (seeds/000, "List,
inspect, and explain", "Read bounded output pages", "Observe several executions in one
call", "Wait for changes across executions").

Every `Execution` answer is `{status, code, data}`; `data` is typed per action
(`ExecutionResult[ListData]`, `ExecutionResult[ReadData]`, …), and `RESULTS` names the
result of each action for clients that decode typed.
"""

from __future__ import annotations

from typing import Annotated, Generic, Literal, TypeVar

import msgspec
from msgspec import Meta

from ..settings import TERMINAL_SIZE_MAX, TERMINAL_SIZE_MIN
from .scope import Scoped

#: Rows or columns of a terminal a request may ask for.
TerminalSize = Annotated[int, Meta(ge=TERMINAL_SIZE_MIN, le=TERMINAL_SIZE_MAX)]

Status = Literal["running", "exited", "unknown"]
Source = Literal["output", "screen", "detection"]
WaitEvent = Literal["state", "output", "exited", "awaiting_input", "awaiting_approval", "busy",
                    "unknown"]
RecognizedState = Literal["awaiting_input", "awaiting_approval", "busy", "exited", "unknown"]

# --- run --------------------------------------------------------------------------------------


class RunParams(Scoped, kw_only=True):
    """Start a standalone execution under its own guardian; answered once it is connected."""

    argv: list[str] | None = None
    #: A shell string, run as `/bin/sh -c COMMAND` (exactly one of argv and command).
    command: str | None = None
    #: Defaults to the workspace root.
    cwd: str | None = None
    env: dict[str, str] = {}
    rows: TerminalSize | None = None
    cols: TerminalSize | None = None
    name: str = ""
    #: What `env` is laid over: `daemon`, the daemon's own environment (the spec's shape:
    #: `env` adds to it); `none`, nothing — `env` is the child's whole environment (what the
    #: CLI sends: the caller's environment at submit, as `pueue add` does). Either way the
    #: environment is kept private to the record (`Execution get` with `include_env`).
    env_base: Literal["daemon", "none"] = "daemon"
    #: Stream the output on this call as `follow` does, from the first byte (`vigil run
    #: --wait`): the answer comes first, then `FollowEvent`s until the execution ended. The
    #: stream is attached before the command starts, so none of a fast command's first
    #: bytes can be pruned by retention before a separate `follow` call would get there.
    follow: bool = False


# --- records as clients see them -------------------------------------------------------------


class RuntimeView(msgspec.Struct, kw_only=True):
    """The guardian an execution runs under, by its whole identity (a pid alone is never
    trusted: pid reuse)."""

    runtime_id: str
    boot_id: str
    guardian_pid: int
    guardian_start_ticks: int
    child_pid: int


class OutputView(msgspec.Struct, kw_only=True):
    """Retained-output availability: what exists, what is kept, what was lost and why.

    `activity_seq` counts the commits that persisted new output for this execution, so two
    observations with the same value saw the same capture. `pending` is true while output
    the daemon knows of is not yet persisted: bytes received but not committed, or a guardian
    re-attached after a restart whose ring holds more than the store (spec: "output_pending
    remains true when metadata advances without a complete capture, including after exit").
    """

    total_bytes: int
    retained_start: int
    retained_bytes: int
    dropped_bytes: int
    activity_seq: int
    pending: bool
    gaps: list[tuple[int, int]] = []


class ExecutionView(msgspec.Struct, kw_only=True):
    """One execution record. `unknown` is never a success; `observed_at_unix_ms` advances only
    when a persisted change happens, never on an unchanged poll.

    `command` and `argv` are bounded in views (a listing carries a short preview, `get` a
    larger cap): `command_truncated` / `argv_truncated` say when what is shown is cut.
    """

    execution_id: str
    name: str
    kind: Literal["standalone", "shell", "shell_command"]
    command: str
    argv: list[str] | None
    cwd: str
    status: Status
    exit_code: int | None
    signal: int | None
    unknown_reason: str | None
    started_unix_ms: int
    ended_unix_ms: int | None
    observed_at_unix_ms: int
    generation: int
    rows: int
    cols: int
    runtime: RuntimeView | None
    output: OutputView
    recognized_state: str | None = None
    command_truncated: bool = False
    argv_truncated: bool = False
    #: Why the command could not be started (`exited` with 127: not found, 126: not
    #: executable), as a shell would say it; null when it started.
    start_error: str | None = None


class CompactExecution(msgspec.Struct, kw_only=True):
    """The compact metadata `observe` and `wait` carry per execution."""

    execution_id: str
    status: Status
    exit_code: int | None
    signal: int | None
    recognized_state: str | None
    generation: int
    observed_at_unix_ms: int
    output_pending: bool
    output_total_bytes: int


class RunResult(msgspec.Struct, kw_only=True):
    execution: ExecutionView


# --- Execution actions -------------------------------------------------------------------------


class ListAction(msgspec.Struct, tag_field="type", tag="list", kw_only=True):
    """The scope's executions, newest first; `offset` skips that many of the newest (the
    next page of a listing longer than the largest `limit`)."""

    limit: int | None = None
    offset: Annotated[int, Meta(ge=0)] = 0


class GetAction(msgspec.Struct, tag_field="type", tag="get", kw_only=True):
    """One execution, with its conversation-recovery advice; `include_env` adds the
    environment it was started with (never shown unless asked: it may hold secrets)."""

    execution_id: str
    include_env: bool = False


class ReadAction(msgspec.Struct, tag_field="type", tag="read", kw_only=True):
    """One bounded page of a source; continue with the returned `next_cursor`."""

    execution_id: str
    source: Source = "output"
    cursor: str | None = None
    page_bytes: int | None = None
    #: vigil extension: when the page would be empty and the execution is still running,
    #: wait up to this long for new output or the exit (what `vigil logs -f` uses instead of
    #: polling). 0, the default, is the spec's plain read.
    wait_seconds: float = 0.0


class ObserveItem(msgspec.Struct, kw_only=True):
    execution_id: str
    source: Source = "output"
    page_bytes: int | None = None
    cursor: str | None = None


class ObserveAction(msgspec.Struct, tag_field="type", tag="observe", kw_only=True):
    """Compact status and a page for 1–32 items, in one catalog transaction."""

    items: list[ObserveItem]
    timeout_seconds: float | None = None


class WaitAction(msgspec.Struct, tag_field="type", tag="wait", kw_only=True):
    """Wait for changes of up to 32 executions after a catalog cursor."""

    execution_ids: list[str]
    after: str | None = None
    timeout_seconds: float | None = None
    events: list[WaitEvent] | None = None


class ExplainAction(msgspec.Struct, tag_field="type", tag="explain", kw_only=True):
    """How turn recognition sees an execution now."""

    execution_id: str
    recognizer: str = "auto"


ExecutionAction = ListAction | GetAction | ReadAction | ObserveAction | WaitAction | ExplainAction


class ExecutionParams(Scoped, kw_only=True):
    action: ExecutionAction


# --- Execution results ---------------------------------------------------------------------------

D = TypeVar("D")


class ExecutionResult(msgspec.Struct, Generic[D], kw_only=True):
    """Every `Execution` answer: a finite status, an optional fixed code, and the data.

    `completed_with_issues` (with code `execution_observation_issues`) is an observe whose
    items carry errors; every other answer is `ok` with `code` null.
    """

    status: Literal["ok", "completed_with_issues"] = "ok"
    code: str | None = None
    data: D


class ListData(msgspec.Struct, kw_only=True):
    executions: list[ExecutionView]
    #: Records retained in the scope (all of them, not only this page).
    total: int
    catalog_cursor: str
    #: The scope's record caps (retention): standalone runs, and the persistent shell's
    #: commands, which have a cap of their own so they never push runs out (0: unknown).
    retention_records: int = 0
    retention_shell_commands: int = 0


class RecoveryAdvice(msgspec.Struct, kw_only=True):
    """Conversation-recovery advice for one launch (seeds/000, "Recover an explicitly
    selected conversation"). Never acted on by vigil: nothing is re-run."""

    advice: Literal["explicit_target", "best_effort", "unavailable"]
    #: Present only for `explicit_target`: the evidence is the launch argument itself.
    source: Literal["launch_argument"] | None = None
    #: Always false: backend acceptance and later in-TUI switches are never verified.
    current_conversation_verified: bool = False
    agent: Literal["claude", "codex"] | None = None
    #: The selector seen at launch (`--session-id`, `--resume`, `-r`, `resume`).
    selector: str | None = None
    conversation_id: str | None = None
    #: Literal argument vector to run (in `cwd`) to resume; explicit_target only.
    resume_argv: list[str] | None = None
    #: `resume_argv` as a shell-quoted string for humans; explicit_target only.
    recommendation: str | None = None
    cwd: str | None = None
    #: Why there is no explicit target (`not_an_agent_launch`, `extra_arguments`, …).
    reason: str | None = None


class GetData(msgspec.Struct, kw_only=True):
    execution: ExecutionView
    recovery: RecoveryAdvice
    #: The environment the execution was started with: only with `include_env` (null when
    #: not asked for, or for a record made before vigil kept it).
    env: dict[str, str] | None = None


class Gap(msgspec.Struct, kw_only=True):
    """Bytes that are no longer retained between the cursor and the page."""

    bytes_skipped: int
    from_offset: int
    to_offset: int


class DetectionSummary(msgspec.Struct, kw_only=True):
    """What the recognizer concluded from the detection snapshot a `detection` page shows."""

    recognizer: str
    state: RecognizedState
    rule: str | None = None


class Page(msgspec.Struct, kw_only=True):
    """A bounded page of retained text; continue with `next_cursor` while `has_more`.

    Output pages are byte ranges of the output stream and may report a retention `gap`.
    Screen and detection pages are byte ranges of one snapshot's text (`snapshot`); a cursor
    of an older snapshot gets `resync_required` and the first page of the current one.
    """

    source: Source
    text: str
    start_offset: int
    end_offset: int
    next_cursor: str
    has_more: bool
    gap: Gap | None = None
    resync_required: bool = False
    #: Screen and detection pages: the snapshot number the offsets belong to.
    snapshot: int | None = None
    #: Screen and detection pages: `exact` or `fast_forwarded` ('' before any screen).
    fidelity: str | None = None
    #: Detection pages: what the recognizer concluded from this snapshot.
    detection: DetectionSummary | None = None


class ReadData(msgspec.Struct, kw_only=True):
    page: Page


class ItemError(msgspec.Struct, kw_only=True):
    """One failure of one observe item; `stage` tells a refresh from a read."""

    stage: Literal["refresh", "read"]
    code: str
    message: str


class ObservedItem(msgspec.Struct, kw_only=True):
    """One observe item, in request order. A nonzero exit is a successful observation."""

    execution_id: str
    source: Source
    status: Literal["ok", "error"]
    errors: list[ItemError]
    execution: CompactExecution | None = None
    page: Page | None = None


class ObserveData(msgspec.Struct, kw_only=True):
    items: list[ObservedItem]
    #: Usable as `wait.after`; separate from page cursors.
    catalog_cursor: str


class Change(msgspec.Struct, kw_only=True):
    """One persisted change a wait reports; `events` are the wait events it satisfies."""

    execution_id: str
    what: str
    state: str | None
    at_unix_ms: int
    events: list[WaitEvent]


class WaitData(msgspec.Struct, kw_only=True):
    """`changed`, `timeout` (no change: not evidence that anything completed) or `resync`
    (the change log was trimmed past `after`: re-read current state)."""

    outcome: Literal["changed", "timeout", "resync"]
    catalog_cursor: str
    changes: list[Change]
    executions: list[CompactExecution]
    #: The timeout this wait applied (after the default and the cap), in seconds.
    effective_timeout_seconds: float
    #: The event selection it applied (null: every change).
    events: list[WaitEvent] | None


class Observation(msgspec.Struct, kw_only=True):
    """What an explanation was computed from."""

    screen_revision: int
    fidelity: str
    observed_at_unix_ms: int
    foreground: str | None
    foreground_argv: list[str]
    rows: int
    #: Manifests that failed to load (file and line), so a rule that is missing says why.
    errors: list[str]


class AgentLogView(msgspec.Struct, kw_only=True):
    """The agent's own session log, as the transcript follows it: `searching` (not found
    yet), `found` (followed: `path`), `ambiguous` (two or more logs cannot be told apart:
    none attached) or `none`; `reasons` say why, line by line."""

    provider: str
    verdict: Literal["searching", "found", "ambiguous", "none"]
    path: str | None = None
    reasons: list[str] = []


class ExplainData(msgspec.Struct, kw_only=True):
    """How turn recognition sees an execution, evaluated over the complete screen."""

    execution_id: str
    recognizer: str
    state: RecognizedState
    #: `rule`, `fallback` (nothing matched: state unknown, never a guess) or `exit_status`.
    source: str
    rule: str | None
    priority: int | None
    reason: str
    evaluated_lines: int
    region_text_bytes: int
    region: str | None
    manifest_version: str
    selected_by: str
    exit_code: int | None
    #: `live_screen` or `persisted_screen`.
    detection_source: str
    #: The debounced state persisted on the record (what `list` and `wait` see).
    reported_state: str | None
    recovery: RecoveryAdvice
    observation: Observation
    #: Set when the execution is an agent whose session log the transcript follows.
    agent_log: AgentLogView | None = None


#: The result type of each `Execution` action, by its `type` tag.
RESULTS = {
    "list": ExecutionResult[ListData],
    "get": ExecutionResult[GetData],
    "read": ExecutionResult[ReadData],
    "observe": ExecutionResult[ObserveData],
    "wait": ExecutionResult[WaitData],
    "explain": ExecutionResult[ExplainData],
}

# --- follow: the output stream, live -----------------------------------------------------------


class FollowParams(Scoped, kw_only=True):
    """Stream an execution's output from `from_offset`: what the store retains, then live
    from the output path as the guardian delivers it, until the execution has ended and
    everything was sent (`vigil run --wait`, `vigil logs -f`). The answer comes first, then
    events (`FollowEvent`). Nothing is lost silently: every byte the stream cannot deliver
    (no longer retained, lost in a guardian's ring, or dropped because this reader stalled
    for longer than its buffer holds) is a `gap` event with the exact range."""

    execution_id: str
    from_offset: Annotated[int, Meta(ge=0)] = 0
    #: Send what is retained now and end there, even if the execution still runs
    #: (`vigil logs` without `-f`): the stream's end is then not the execution's.
    until_now: bool = False


class FollowResult(msgspec.Struct, kw_only=True):
    execution_id: str
    #: True when the stream goes on live (the execution runs and its guardian is attached).
    live: bool


class FollowOutput(msgspec.Struct, tag_field="kind", tag="output", kw_only=True):
    """Output bytes exactly as the program wrote them, starting at `offset`."""

    execution_id: str
    offset: int
    data: bytes


class FollowGap(msgspec.Struct, tag_field="kind", tag="gap", kw_only=True):
    """Output in [from_offset, to_offset) that this stream cannot deliver. `reason`:
    `retention` (no longer stored), `ring` (lost in the guardian's ring while nobody read
    it) or `slow_reader` (this reader fell further behind than its buffer holds)."""

    execution_id: str
    from_offset: int
    to_offset: int
    reason: Literal["retention", "ring", "slow_reader"]


class FollowEnd(msgspec.Struct, tag_field="kind", tag="end", kw_only=True):
    """The stream is over: the execution has ended and every byte up to its end was sent
    (or reported as a gap) — or, with `until_now`, everything retained when it was asked.
    `execution` is its record at that point (final once it ended)."""

    execution_id: str
    execution: ExecutionView


FollowEvent = FollowOutput | FollowGap | FollowEnd

# --- signal and resolve ---------------------------------------------------------------------------


class SignalParams(Scoped, kw_only=True):
    """Send a signal to an execution's process group (`vigil kill`)."""

    execution_id: str
    signal: int | str = "TERM"


class SignalResult(msgspec.Struct, kw_only=True):
    """`delivered` is what the guardian reported: false when the process group was already
    gone (ESRCH), with the reason."""

    execution_id: str
    signal: int
    delivered: bool
    reason: str | None = None


class ResolveParams(Scoped, kw_only=True):
    """Expand a unique id prefix (CLI convenience); ambiguous or unknown is an error."""

    prefix: str


class ResolveResult(msgspec.Struct, kw_only=True):
    execution_id: str
