"""One call's usage events, as the dispatch seam sees it: opened when the call is taken,
`tool_started` once its params are decoded, `tool_call` when it is answered — or
`abandoned` when its caller went away first (the connection closed and the call was
cancelled: observed abandonment; work already handed to a thread may still finish).
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

from vigil.protocol.usage import USAGE_SCHEMA, WORKFLOW_SCHEMA, ToolCall, ToolStarted

from . import metrics
from .phases import CallRecord
from .usage_log import UsageLog


class CallUsage:
    """The usage record of one call in the dispatcher."""

    __slots__ = ("log", "record", "tool", "action", "backend", "client", "principal_kind")

    def __init__(self, log: UsageLog, tool: str, client: str, principal: str, call_id: str):
        self.log = log
        self.record = CallRecord(call_id, log.emit)
        self.tool = tool
        self.action: str | None = None
        self.backend: str | None = None
        self.client = client or None
        self.principal_kind = "http" if principal.startswith("http:") else "local"

    def started(self, params: Any) -> None:
        """The params are decoded: the call's action is known."""
        self.action, self.backend = metrics.action_of(params)
        self.record.metrics.update(metrics.request_metrics(params))
        self.log.emit(ToolStarted(usage_call_id=self.record.usage_call_id, ts_ms=_now_ms(),
                                  tool=self.tool, action=self.action, backend=self.backend,
                                  usage_schema=USAGE_SCHEMA))

    def answered(self, result: Any, response_bytes: int) -> None:
        self.record.metrics.update(metrics.result_metrics(result))
        status = getattr(result, "status", "ok")
        self._close("partial" if status == "completed_with_issues" else "ok",
                    getattr(result, "code", None) if status == "completed_with_issues" else None,
                    response_bytes)

    def failed(self, code: str, data: dict[str, Any], response_bytes: int) -> None:
        self.record.metrics.update(metrics.error_metrics(code, data))
        self._close("error", code, response_bytes)

    def abandoned(self) -> None:
        self._close("abandoned", None, None)

    def _close(self, outcome: str, code: str | None, response_bytes: int | None) -> None:
        r = self.record
        self.log.emit(ToolCall(
            usage_call_id=r.usage_call_id, ts_ms=_now_ms(), tool=self.tool, outcome=outcome,
            usage_schema=USAGE_SCHEMA, workflow_schema=WORKFLOW_SCHEMA,
            duration_ms=(time.monotonic_ns() - r.started_ns) // 1_000_000,
            action=self.action, backend=self.backend, client=self.client,
            principal_kind=self.principal_kind, error_code=code, response_bytes=response_bytes,
            phases=r.phase_totals(), phases_truncated=r.truncated, **r.metrics))


#: usage_call_id: a random prefix per daemon and a counter — unique in a log, random across
#: daemons, and no identifier of anything but the call (it only ties a call's events).
_ID_PREFIX = f"{random.getrandbits(32):08x}"
_ids = itertools.count(1)


def new_call_id() -> str:
    """A fresh `usage_call_id` (also the `tool_id` of the call's transcript events)."""
    return f"{_ID_PREFIX}{next(_ids):08x}"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
