"""What the terminal `tool_call` event says about a call, read from its typed params and
result (never from text, output, cursors or paths): its action and backend, and the
spec's counters for observe, reads, catalog waits, receipts, Herdr and BashCommand waits.

Counters that a call does not establish are left out (unknown), never written as zero: an
`observe` that failed validation has no item counts; a BashCommand action without an
inline allowance (`screen`, `inspect`, `wait_for_turn`, `prompt`) has no effective wait.
"""

from __future__ import annotations

from typing import Any

from vigil.protocol.api.agent import (
    AgentParams,
    HerdrPromptData,
    NativeListData,
    NativeReadData,
    NativeWaitData,
    PromptData,
    ReceiptData,
)
from vigil.protocol.api.execution import (
    ExecutionParams,
    ListData,
    ObserveAction,
    ObserveData,
    ReadAction,
    ReadData,
    WaitData,
)
from vigil.protocol.api.shell import BashCommandParams, BashCommandResult
from vigil.protocol.usage import OBSERVE_SCHEMA


# Every call passes here: the functions below pick by exact type (a dict lookup), so a call
# of another method (ping, status, …) pays for one lookup, not a chain of isinstance checks.

def action_of(params: Any) -> tuple[str | None, str | None]:
    """(action, backend) of a tool call, for grouping; (None, None) for other methods."""
    kind = type(params)
    if kind is ExecutionParams:
        return type(params.action).__struct_config__.tag, "native"
    if kind is AgentParams:
        return params.action, params.backend
    if kind is BashCommandParams:
        return type(params.action).__struct_config__.tag, None
    return None, None


def request_metrics(params: Any) -> dict[str, Any]:
    """Counters known from the request alone (kept even when the call fails)."""
    if type(params) not in (ExecutionParams, AgentParams):
        return {}
    out: dict[str, Any] = {}
    action = params.action if isinstance(params, ExecutionParams) else None
    if isinstance(action, ObserveAction):
        out.update(observe_schema=OBSERVE_SCHEMA, batch_items=len(action.items),
                   observe_requested_items=len(action.items))
    elif isinstance(action, ReadAction):
        out.update(read_source=action.source)
        if action.page_bytes is not None:
            out["read_requested_bytes"] = action.page_bytes
    elif isinstance(params, AgentParams) and params.action == "read" and params.backend == "native":
        out.update(read_source=params.source)
        if params.page_bytes is not None:
            out["read_requested_bytes"] = params.page_bytes
    return out


#: The data types with counters (the native Agent data subclass Execution's).
_COUNTED = frozenset({ListData, NativeListData, ReadData, NativeReadData, ObserveData, WaitData,
                      NativeWaitData, PromptData, ReceiptData, HerdrPromptData})


def result_metrics(result: Any) -> dict[str, Any]:
    """Counters read from a successful answer."""
    data = getattr(result, "data", None)
    if type(data) not in _COUNTED and type(result) is not BashCommandResult:
        return {}
    out: dict[str, Any] = {}
    if isinstance(data, ListData):
        out["listed"] = len(data.executions)
    elif isinstance(data, ReadData):
        page = data.page
        out.update(read_returned_bytes=len(page.text.encode("utf-8", "surrogateescape")),
                   read_has_more=page.has_more, read_gap=page.gap is not None,
                   read_resync=page.resync_required)
    elif isinstance(data, ObserveData):
        out.update(observe_returned_items=len(data.items),
                   observe_items_with_issues=sum(1 for item in data.items if item.errors))
    elif isinstance(data, WaitData):
        out.update(catalog_outcome=data.outcome, catalog_changes=len(data.changes),
                   wait_timeout_ms=round(data.effective_timeout_seconds * 1000),
                   wait_events=len(data.events) if data.events is not None else None)
    elif isinstance(data, (PromptData, ReceiptData)):
        r = data.receipt
        out.update(receipt_delivery=r.delivery, receipt_activity=r.activity,
                   receipt_condition=r.condition)
        if isinstance(data, PromptData):
            out["receipt_replayed"] = data.replayed
    elif isinstance(data, HerdrPromptData):
        sent = data.input_sent
        out.update(herdr_delivery=data.delivery,
                   herdr_input_sent=sent if isinstance(sent, str) else str(sent).lower(),
                   herdr_error_code=data.herdr_error_code)
    elif isinstance(result, BashCommandResult):
        for name in ("requested_wait_policy", "requested_wait_ms", "effective_wait_policy",
                     "effective_wait_ms", "effective_wait_mode"):
            out[name] = getattr(result, name)
    return {k: v for k, v in out.items() if v is not None}


def error_metrics(code: str, error_data: dict[str, Any]) -> dict[str, Any]:
    """Counters an error answer still establishes (a Herdr error's `input_sent`; a
    BashCommand's selected allowance after a structured runtime rejection)."""
    out: dict[str, Any] = {}
    if code.startswith("herdr_"):
        sent = error_data.get("input_sent")
        if sent is not None:
            out["herdr_input_sent"] = sent if isinstance(sent, str) else str(bool(sent)).lower()
        herdr_code = error_data.get("herdr_error_code")
        if isinstance(herdr_code, str):
            out["herdr_error_code"] = herdr_code
    for name in ("effective_wait_policy", "effective_wait_ms", "effective_wait_mode"):
        if name in error_data:
            out[name] = error_data[name]
    return out
