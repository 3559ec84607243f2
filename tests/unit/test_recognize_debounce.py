"""IdleDebouncer: busy at once, idle only after N confirmations `interval` apart."""

from __future__ import annotations

import pytest

from vigil.daemon.recognize import IdleDebouncer
from vigil.daemon.settings import DEFAULTS


def run(deb, observations):
    return [deb.observe(state, t) for t, state in observations]


def test_busy_to_idle_needs_n_spaced_confirmations():
    deb = IdleDebouncer(3, 0.1)
    got = run(deb, [(0.0, "busy"), (1.0, "awaiting_input"), (1.05, "awaiting_input"),  # too close: not counted
                    (1.1, "awaiting_input"), (1.15, "awaiting_input"), (1.2, "awaiting_input")])
    assert got == ["busy", "busy", "busy", "busy", "busy", "awaiting_input"]
    assert deb.pending is None and deb.next_due() is None


def test_busy_is_reported_immediately_and_resets_the_count():
    deb = IdleDebouncer(3, 0.1)
    got = run(deb, [(0.0, "busy"), (0.1, "awaiting_input"), (0.2, "awaiting_input"), (0.25, "busy"),
                    (0.3, "awaiting_input"), (0.4, "awaiting_input"), (0.5, "awaiting_input")])
    assert got == ["busy", "busy", "busy", "busy", "busy", "busy", "awaiting_input"]
    assert run(deb, [(0.51, "busy")]) == ["busy"]


def test_pending_state_switch_restarts_counting():
    deb = IdleDebouncer(2, 0.1)
    got = run(deb, [(0.0, "busy"), (0.1, "awaiting_input"), (0.2, "awaiting_approval"), (0.3, "awaiting_approval")])
    assert got == ["busy", "busy", "busy", "awaiting_approval"]


def test_first_idle_is_debounced_and_idle_to_idle_is_not():
    deb = IdleDebouncer(2, 0.5)
    assert run(deb, [(10.0, "awaiting_input")]) == ["unknown"]
    assert (deb.pending, deb.pending_count, deb.next_due()) == ("awaiting_input", 1, 10.5)
    assert run(deb, [(10.5, "awaiting_input"), (10.6, "awaiting_approval")]) == ["awaiting_input", "awaiting_approval"]


@pytest.mark.parametrize("state", ["unknown", "exited", "busy"])
def test_non_idle_states_are_never_delayed(state):
    deb = IdleDebouncer(5, 1.0)
    assert run(deb, [(0.0, state)]) == [state]


def test_one_confirmation_reports_at_once():
    assert run(IdleDebouncer(1, 0.1), [(0.0, "busy"), (0.0, "awaiting_input")]) == ["busy", "awaiting_input"]


def test_reset_and_settings():
    deb = IdleDebouncer.from_settings(DEFAULTS)
    assert (deb.confirmations, deb.interval) == (3, 0.1)
    run(deb, [(0.0, "awaiting_input")])
    deb.reset()
    assert (deb.reported, deb.pending, deb.next_due()) == ("unknown", None, None)


@pytest.mark.parametrize(("n", "interval"), [(0, 0.1), (1, -1.0), (1, float("nan"))])
def test_bad_parameters(n, interval):
    with pytest.raises(ValueError):
        IdleDebouncer(n, interval)
