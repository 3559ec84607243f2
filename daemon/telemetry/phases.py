"""Phases of the call in progress: `with phase("catalog"): ...` anywhere in the daemon.

The dispatcher opens one `CallRecord` per call and makes it current (a context variable,
which trio hands to the tasks and worker threads a call starts), so code deep in a service
can time a phase without the record being passed down: the seam stays the only place that
knows about telemetry, and a service called outside a call (recovery, ingest) records
nothing. Stdlib only: no trio, so any module may import it.

Phase totals are inclusive: phases may nest or repeat (a wait's sleeps, each catalog look),
so they must not be summed as exclusive parts of the call's duration.
"""

from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from vigil.protocol.usage import PHASE_PAIRS_MAX, PHASES, USAGE_SCHEMA, PhaseTotal, ToolPhase

#: The record of the call this code runs for, or None outside a call (or with the log off).
CURRENT: contextvars.ContextVar["CallRecord | None"] = contextvars.ContextVar(
    "vigil_usage_call", default=None)

_KNOWN = frozenset(PHASES)


class CallRecord:
    """What one call has done so far: phase totals and counters for its terminal event.

    `emit(event)` appends an auxiliary event to the usage log (never blocks).
    """

    __slots__ = ("usage_call_id", "started_ns", "emit", "totals", "pairs", "truncated",
                 "metrics")

    def __init__(self, usage_call_id: str, emit: Callable[[Any], None]):
        self.usage_call_id = usage_call_id
        self.started_ns = time.monotonic_ns()
        self.emit = emit
        #: phase → [count, nanoseconds]
        self.totals: dict[str, list[int]] = {}
        self.pairs = 0
        self.truncated = False
        self.metrics: dict[str, Any] = {}

    def phase_totals(self) -> dict[str, PhaseTotal]:
        return {name: PhaseTotal(count=c, ms=ns // 1_000_000) for name, (c, ns) in self.totals.items()}

    def _edge(self, edge: str, name: str | None, ms: int | None = None) -> None:
        self.emit(ToolPhase(usage_call_id=self.usage_call_id, ts_ms=time.time_ns() // 1_000_000,
                            edge=edge, phase=name, ms=ms, usage_schema=USAGE_SCHEMA))


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time `name` for the current call (nothing outside a call). Start and finish are
    written as a pair while the call has pairs left; past `PHASE_PAIRS_MAX` one
    truncation marker is written and later phases only count in the summary."""
    record = CURRENT.get()
    if record is None:
        yield
        return
    assert name in _KNOWN, f"unknown phase {name!r}"
    written = record.pairs < PHASE_PAIRS_MAX
    if written:
        record.pairs += 1
        record._edge("start", name)
    elif not record.truncated:
        record.truncated = True
        record._edge("truncated", None)
    t0 = time.monotonic_ns()
    try:
        yield
    finally:
        elapsed = time.monotonic_ns() - t0
        total = record.totals.get(name)
        if total is None:
            record.totals[name] = [1, elapsed]
        else:
            total[0] += 1
            total[1] += elapsed
        if written:
            record._edge("finish", name, elapsed // 1_000_000)


def note(**metrics: Any) -> None:
    """Add counters to the current call's terminal event (no-op outside a call)."""
    record = CURRENT.get()
    if record is not None:
        record.metrics.update(metrics)
