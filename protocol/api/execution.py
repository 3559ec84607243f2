"""`run`, `Execution` (list/get/read/…), `signal` and `resolve`: starting executions and
reading their history, in the spec's JSON shapes (seeds/000, "List, inspect, and explain",
"Read bounded output pages")."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Scoped(msgspec.Struct, kw_only=True):
    """Every scoped call carries the exact pair `Initialize` returned."""

    thread_id: str
    workspace_root: str


# --- run --------------------------------------------------------------------------------------


class RunParams(Scoped, kw_only=True):
    """Start a standalone execution under its own guardian; answered at once."""

    argv: list[str] | None = None
    command: str | None = None  # a shell string, run as `/bin/sh -c COMMAND`
    cwd: str | None = None  # defaults to the workspace root
    env: dict[str, str] = {}
    rows: int | None = None
    cols: int | None = None
    name: str = ""


# --- records as clients see them -------------------------------------------------------------


class RuntimeView(msgspec.Struct, kw_only=True):
    runtime_id: str
    boot_id: str
    guardian_pid: int
    guardian_start_ticks: int
    child_pid: int


class OutputView(msgspec.Struct, kw_only=True):
    """Retained-output availability: what exists, what is kept, what was lost and why."""

    total_bytes: int
    retained_start: int
    retained_bytes: int
    dropped_bytes: int
    activity_seq: int
    pending: bool
    gaps: list[tuple[int, int]] = []


class ExecutionView(msgspec.Struct, kw_only=True):
    """One execution record. `unknown` is never a success; `observed_at_unix_ms` advances only
    when a persisted change happens, never on an unchanged poll."""

    execution_id: str
    name: str
    kind: str
    command: str
    argv: list[str] | None
    cwd: str
    status: Literal["running", "exited", "unknown"]
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


class RunResult(msgspec.Struct, kw_only=True):
    execution: ExecutionView


# --- Execution actions -------------------------------------------------------------------------


class ListAction(msgspec.Struct, tag_field="type", tag="list", kw_only=True):
    limit: int | None = None


class GetAction(msgspec.Struct, tag_field="type", tag="get", kw_only=True):
    execution_id: str


class ReadAction(msgspec.Struct, tag_field="type", tag="read", kw_only=True):
    execution_id: str
    source: Literal["output", "screen", "detection"] = "output"
    cursor: str | None = None
    page_bytes: int | None = None
    #: vigil extension: when the page would be empty and the execution is still running,
    #: wait up to this long for new output or the exit (what `vigil logs -f` uses instead of
    #: polling). 0, the default, is the spec's plain read.
    wait_seconds: float = 0.0


class ObserveItem(msgspec.Struct, kw_only=True):
    execution_id: str
    source: Literal["output", "screen", "detection"] = "output"
    page_bytes: int | None = None
    cursor: str | None = None


class ObserveAction(msgspec.Struct, tag_field="type", tag="observe", kw_only=True):
    """Compact status and a page for 1–32 items, in one catalog transaction."""

    items: list[ObserveItem]
    timeout_seconds: float | None = None


WaitEvent = Literal["state", "output", "exited", "awaiting_input", "awaiting_approval", "busy",
                    "unknown"]


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


class Gap(msgspec.Struct, kw_only=True):
    """Bytes that are no longer retained between the cursor and the page."""

    bytes_skipped: int
    from_offset: int
    to_offset: int


class Page(msgspec.Struct, kw_only=True):
    """A bounded page of retained text; continue with `next_cursor` while `has_more`."""

    source: str
    text: str
    start_offset: int
    end_offset: int
    next_cursor: str
    has_more: bool
    gap: Gap | None = None
    resync_required: bool = False


class ExecutionResult(msgspec.Struct, kw_only=True):
    """Every `Execution` answer: a finite status, an optional fixed code, and the data."""

    status: Literal["ok", "completed_with_issues"] = "ok"
    code: str | None = None
    data: dict[str, Any] = {}


# --- signal and resolve ---------------------------------------------------------------------------


class SignalParams(Scoped, kw_only=True):
    """Send a signal to an execution's process group (`vigil kill`)."""

    execution_id: str
    signal: int | str = "TERM"


class SignalResult(msgspec.Struct, kw_only=True):
    execution_id: str
    signal: int
    delivered: bool


class ResolveParams(Scoped, kw_only=True):
    """Expand a unique id prefix (CLI convenience); ambiguous or unknown is an error."""

    prefix: str


class ResolveResult(msgspec.Struct, kw_only=True):
    execution_id: str


# --- screen ------------------------------------------------------------------------------------


class ScreenParams(Scoped, kw_only=True):
    """The current screen of an execution (`vigil screen`); `ansi` adds colours and modes
    (live executions only: an exited one keeps its text). `history` also returns up to that
    many scrollback lines — the rows that scrolled off the top of the main screen, newest
    last — at most `screen_history_lines_max` (live executions only for now)."""

    execution_id: str
    ansi: bool = False
    history: int = 0


class ScreenResult(msgspec.Struct, kw_only=True):
    execution_id: str
    text: str
    rows: int
    cols: int
    cursor: tuple[int, int]
    fidelity: str
    title: str
    live: bool
    revision: int = 0
    alt_screen: bool = False
    #: With `ansi`: a repaint (clear, each row placed, cursor and modes restored); with
    #: `history` too, the rows one per CRLF without cursor motion, to follow the scrollback.
    ansi: str | None = None
    #: Scrollback lines just above the screen, oldest first (up to `history` of them).
    scrollback: list[str] = []
    #: The same lines with SGR attributes, when `ansi` was asked.
    scrollback_ansi: list[str] | None = None
    #: Indexes into `scrollback` of lines the keeper rendered by its fast path while it was
    #: behind: they may differ from what a terminal showed.
    scrollback_fast_forwarded: list[int] = []
    #: Absolute number of `scrollback[0]` (0 = the first line the execution scrolled away).
    scrollback_first: int = 0
    #: Lines scrolled away so far (kept or dropped); the next one gets this number.
    scrollback_total: int = 0


# --- input, resize, attach --------------------------------------------------------------------------


class InputParams(Scoped, kw_only=True):
    """Send bytes to an execution's terminal: `text` (UTF-8), then named `keys`, then `data`."""

    execution_id: str
    text: str = ""
    keys: list[str] = []
    data: bytes = b""
    #: When set, refused as stale unless it is the execution's current generation.
    generation: int | None = None


class InputResult(msgspec.Struct, kw_only=True):
    execution_id: str
    bytes_sent: int


class ResizeParams(Scoped, kw_only=True):
    execution_id: str
    rows: int
    cols: int


class ResizeResult(msgspec.Struct, kw_only=True):
    execution_id: str
    rows: int
    cols: int


class AttachParams(Scoped, kw_only=True):
    """Become a live viewer: the answer repaints the screen, then `event`s carry output
    (`{kind: "output", data}`) until `{kind: "exited"}` or `{kind: "dropped"}` (a viewer
    that stops reading is dropped, never slowing the child). Close the connection to detach."""

    execution_id: str
    rows: int | None = None
    cols: int | None = None


class AttachResult(msgspec.Struct, kw_only=True):
    execution_id: str
    repaint: str
    rows: int
    cols: int
