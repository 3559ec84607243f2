"""`Agent`: observe native executions (and configured Herdr targets), and submit a native
prompt exactly once per prompt id (seeds/000, "Submit a native prompt once", "Optional
Herdr backend"). Parameters are flat, as in the spec's examples."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .execution import Scoped

AgentActionName = Literal["list", "get", "read", "explain", "wait", "prompt"]


class AgentParams(Scoped, kw_only=True):
    action: AgentActionName
    backend: Literal["native", "herdr"] = "native"
    target: str | None = None
    prompt_id: str | None = None
    text: str | None = None
    recognizer: str = "auto"
    timeout_seconds: float | None = None
    #: prompt: which states end the inline wait (default: any of these three).
    wait_for: list[Literal["awaiting_input", "awaiting_approval", "exited"]] | None = None
    # read / list passthrough
    source: Literal["output", "screen", "detection"] = "output"
    cursor: str | None = None
    page_bytes: int | None = None
    limit: int | None = None
    lines: int | None = None
    until: str | None = None
    events: list[str] | None = None
    after: str | None = None


class Receipt(msgspec.Struct, kw_only=True):
    """What happened to one native prompt, bound to execution, runtime and generation.

    delivery: `delivered` (text and Enter written) or `uncertain` (a write may or may not
    have reached the terminal: never resent automatically).
    activity: `confirmed` (work or approval observed after the baseline), `unconfirmed`
    (none yet, or the text itself resembles a work/approval marker, for the receipt's
    lifetime). condition: the wait's end — `awaiting_input`, `awaiting_approval`, `exited`,
    `timed_out`, `generation_changed`, or `pending` while nothing decided it yet.
    """

    prompt_id: str
    execution_id: str
    generation: int
    runtime_id: str
    payload_digest: str
    delivery: Literal["delivered", "uncertain"]
    activity: Literal["confirmed", "unconfirmed"]
    activity_reason: str
    condition: str
    bracketed_paste: bool
    submitted_at_unix_ms: int
    updated_at_unix_ms: int
    recognizer: str = "auto"
    wait_for: list[str] = []
    schema: int = 1


class AgentResult(msgspec.Struct, kw_only=True):
    status: Literal["ok", "completed_with_issues"] = "ok"
    code: str | None = None
    data: dict[str, Any] = {}
