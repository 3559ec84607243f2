"""Debouncing transitions to idle (DESIGN: "Transitions to idle are debounced").

A TUI between two frames, or a shell between two commands of a script, can look idle for an
instant. Reporting that instant as `awaiting_input` would let a waiter or a prompt receipt
act on a terminal that is in fact working. So a change from a non-idle state (busy, unknown,
exited, or nothing reported yet) to an idle one (`awaiting_input`, `awaiting_approval`) is
reported only after `confirmations` consecutive observations of that same idle state, each
at least `interval` seconds after the previous counted one. Everything else is reported at
once: busy (work must never be hidden), unknown, exited, and idle→other idle.

Observations closer together than `interval` are neither counted nor a reset; any other
state resets the count. Pure: timestamps come in as arguments (the daemon passes
`trio.current_time()`), so tests need no sleeping. When the screen stops changing, nothing
new is observed: the caller re-evaluates at `next_due()` to confirm.

Defaults come from Settings.idle_debounce_confirmations (3) and
idle_debounce_interval_seconds (0.1 s): idle is reported ≥ 0.2 s after it first appeared.
"""

from __future__ import annotations

from ._model import IDLE_STATES

#: Float timestamps: 1.2 - 1.1 < 0.1. One nanosecond of slack makes "interval apart" mean
#: what the caller wrote, far below any clock's useful resolution.
_SLACK = 1e-9


class IdleDebouncer:
    """Turns raw per-observation states into reported states. One per runtime generation."""

    __slots__ = ("confirmations", "interval", "reported", "pending", "pending_count", "_last")

    def __init__(self, confirmations: int, interval: float) -> None:
        if confirmations < 1:
            raise ValueError(f"confirmations must be >= 1, got {confirmations}")
        if not interval >= 0:
            raise ValueError(f"interval must be >= 0, got {interval}")
        self.confirmations = confirmations
        self.interval = interval
        #: The state last reported. Starts `unknown`: the first idle is debounced too.
        self.reported: str = "unknown"
        #: The idle state being confirmed, or None.
        self.pending: str | None = None
        self.pending_count = 0
        self._last = 0.0

    @classmethod
    def from_settings(cls, settings) -> "IdleDebouncer":
        return cls(settings.idle_debounce_confirmations, settings.idle_debounce_interval_seconds)

    def observe(self, state: str, now: float) -> str:
        """Feed one observation made at `now` (monotonic seconds); return the reported state."""
        if state not in IDLE_STATES or self.reported in IDLE_STATES:
            self.reported = state
            self.pending = None
            self.pending_count = 0
            return state
        if state != self.pending:
            self.pending = state
            self.pending_count = 1
            self._last = now
        elif now - self._last >= self.interval - _SLACK:
            self.pending_count += 1
            self._last = now
        if self.pending_count >= self.confirmations:
            self.reported = state
            self.pending = None
            self.pending_count = 0
        return self.reported

    def next_due(self) -> float | None:
        """When the next confirming observation can count, or None if nothing is pending."""
        return self._last + self.interval if self.pending is not None else None

    def reset(self) -> None:
        """Forget everything (a new generation started in the runtime)."""
        self.reported = "unknown"
        self.pending = None
        self.pending_count = 0
