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
from typing import Any, Callable

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


class _Phase:
    """One timed phase of a call (a plain class: this runs on every call's path, where a
    generator-based context manager costs several times more)."""

    __slots__ = ("record", "name", "written", "t0")

    def __init__(self, record: CallRecord, name: str):
        self.record = record
        self.name = name

    def __enter__(self) -> None:
        record = self.record
        self.written = record.pairs < PHASE_PAIRS_MAX
        if self.written:
            record.pairs += 1
            record._edge("start", self.name)
        elif not record.truncated:
            record.truncated = True
            record._edge("truncated", None)
        self.t0 = time.monotonic_ns()

    def __exit__(self, *exc: object) -> None:
        elapsed = time.monotonic_ns() - self.t0
        record = self.record
        total = record.totals.get(self.name)
        if total is None:
            record.totals[self.name] = [1, elapsed]
        else:
            total[0] += 1
            total[1] += elapsed
        if self.written:
            record._edge("finish", self.name, elapsed // 1_000_000)


class _NoPhase:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


_NO_PHASE = _NoPhase()


def phase(name: str) -> _Phase | _NoPhase:
    """`with phase(name):` times `name` for the current call (nothing outside a call).
    Start and finish are written as a pair while the call has pairs left; past
    `PHASE_PAIRS_MAX` one truncation marker is written and later phases only count in the
    summary."""
    record = CURRENT.get()
    if record is None:
        return _NO_PHASE
    assert name in _KNOWN, f"unknown phase {name!r}"
    return _Phase(record, name)


def note(**metrics: Any) -> None:
    """Add counters to the current call's terminal event (no-op outside a call)."""
    record = CURRENT.get()
    if record is not None:
        record.metrics.update(metrics)
