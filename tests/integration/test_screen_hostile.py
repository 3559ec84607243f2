"""Hostile output through the whole path (issue 10): output that costs the screen keeper a lot
per byte must not stall the daemon, a fast-forward must never claim an exact screen it does
not have, and over-long or unterminated sequences are consumed without drawing anything.

The stall check measures what a user would: `ping` and `Execution list` round trips on a
second connection while the flood is processed, against a bound far above a healthy daemon's
(milliseconds) and far below what the faults cost (56 s for `ping`, 61 s for `ls`).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import Session, python_child
from tests.support.screens import (  # noqa: F401  (fixtures)
    SCREEN_TIMEOUT,
    Screens,
    session,
    shared_home,
    workspace,
)

#: Longest `ping`/`list` round trip accepted while a hostile flood is processed: a healthy
#: daemon answers in milliseconds; the bound leaves room for a loaded 2-core CI machine.
STALL_BOUND = 1.0


class RoundTrips:
    """`ping` and `Execution list` back to back on their own connection, in a thread, until
    stopped; keeps the longest round trip of each."""

    def __init__(self, session: Session):
        self.client = session.home.client()
        self.scope = session.scoped()
        self.longest = {"ping": 0.0, "list": 0.0}
        self.calls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for method, params in (("ping", {}), ("Execution", {**self.scope, "action": {"type": "list"}})):
                t0 = time.monotonic()
                self.client.call(method, params)
                took = time.monotonic() - t0
                key = "ping" if method == "ping" else "list"
                self.longest[key] = max(self.longest[key], took)
                self.calls += 1

    def __enter__(self) -> "RoundTrips":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
        self.client.close()


def _wait_exact(sc: Screens, eid: str, rows: list[str], **fields) -> dict:
    return sc.wait(eid, rows, fidelity="exact", **fields)


@pytest.mark.parametrize("rows,cols,size", [(50, 200, 60_000), (1000, 1000, 900)])
def test_decaln_flood_does_not_stall_the_daemon(session, rows, cols, size):
    """`ESC # 8` (each fills every cell with `E`) written in 600-byte pieces a few ms apart,
    so that the keeper parses them rather than skipping them; then a clear and `done`."""
    s, sc = session, Screens(session)
    child = python_child(
        "import os, sys, time\n"
        f"for _ in range({size} // 600):\n"
        "    os.write(1, b'\\x1b#8' * 200)\n"
        "    time.sleep(0.005)\n"
        "os.write(1, b'\\x1b[H\\x1b[2Jdone')\n"
        "sys.stdin.read(1)\n")
    with RoundTrips(s) as trips:
        eid = s.run(argv=child, rows=rows, cols=cols)["execution_id"]
        _wait_exact(sc, eid, ["done"], cursor=[0, 4])
    print(f"\n{rows}x{cols}: longest ping {trips.longest['ping'] * 1000:.1f} ms, "
          f"list {trips.longest['list'] * 1000:.1f} ms over {trips.calls} calls")
    assert trips.calls > 0
    assert trips.longest["ping"] < STALL_BOUND and trips.longest["list"] < STALL_BOUND, trips.longest
    s.call("input", execution_id=eid, text="\r")
    assert s.wait_exit(eid)["exit_code"] == 0


def test_costly_sequences_in_bulk_do_not_stall_the_daemon(session):
    """Every kind of whole-screen sequence with huge counts, in bulk, on the largest screen."""
    s, sc = session, Screens(session)
    bomb = (b"\x1b[2J\x1b[9999S\x1b[9999T\x1b[9999L\x1b[9999M\x1b[9999@\x1b[9999P\x1b[9999X"
            b"\x1b[1J\x1b[0J\x1b[2K\x1bM\x1bD\x1b[?1049h\x1b[?1049l\x1bc") * 500
    child = python_child(
        "import os, sys\n"
        f"os.write(1, {bomb!r})\n"
        "os.write(1, b'\\x1b[H\\x1b[2Jdone')\n"
        "sys.stdin.read(1)\n")
    with RoundTrips(s) as trips:
        eid = s.run(argv=child, rows=1000, cols=1000)["execution_id"]
        _wait_exact(sc, eid, ["done"], cursor=[0, 4])
    assert trips.longest["ping"] < STALL_BOUND and trips.longest["list"] < STALL_BOUND, trips.longest
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)


def test_clear_after_a_flood_homes_the_cursor_and_is_exact(session):
    """`seq` floods (the keeper skips), then `clear` (`ESC [ H ESC [ 2 J ESC [ 3 J`): the
    screen is `after-clear` on row 0. No snapshot may claim `exact` with anything else once
    `after-clear` is on screen."""
    s, sc = session, Screens(session)
    eid = s.run(command="seq 1 300000; clear; echo after-clear; read x", rows=50, cols=200)["execution_id"]
    deadline = time.monotonic() + SCREEN_TIMEOUT
    while True:
        snap = sc.get(eid)
        if snap["fidelity"] == "exact" and "after-clear" in snap["text"]:
            assert snap["text"] == "after-clear" and list(snap["cursor"]) == [1, 0], snap
            break
        assert time.monotonic() < deadline, f"never exact: {snap}"
        time.sleep(0.01)
    s.call("input", execution_id=eid, text="\r")
    assert s.wait_exit(eid)["exit_code"] == 0


def test_unterminated_osc_is_aborted_by_the_next_escape(session):
    """xterm: an ESC that does not start ST aborts the string; the string is never drawn."""
    s, sc = session, Screens(session)
    eid = s.run(command=r"printf '\033]0;title-without-terminator\n\033]2;t2\007visible\n'; read x",
                rows=10, cols=60)["execution_id"]
    snap = _wait_exact(sc, eid, ["visible"], cursor=[1, 0])
    assert snap["title"] == "t2"
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)


def test_a_10_mb_unterminated_osc_hides_nothing_after_it(session):
    """10 MB of OSC body, then the next OSC aborts it. The child writes it a megabyte at a
    time and waits for the test to see each megabyte stored, so the guardian's 4 MiB ring
    never overflows (a ring gap would rightly make the screen inexact)."""
    s, sc = session, Screens(session)
    child = python_child(
        "import os, sys\n"
        "os.write(1, b'\\x1b]0;')\n"
        "for _ in range(10):\n"
        "    os.write(1, b'x' * 1_000_000)\n"
        "    sys.stdin.readline()\n"
        "os.write(1, b'\\x1b]2;t2\\x07visible\\r\\n')\n"
        "sys.stdin.read(1)\n")
    eid = s.run(argv=child, rows=10, cols=60)["execution_id"]
    for i in range(1, 11):
        wait_for(lambda: s.get(eid)["output"]["total_bytes"] >= 4 + i * 1_000_000 + (i - 1) * 2,
                 timeout=SCREEN_TIMEOUT, what=f"megabyte {i} stored")
        s.call("input", execution_id=eid, text="\r")  # its echo is part of the string too
    snap = _wait_exact(sc, eid, ["visible"], cursor=[1, 0])
    assert snap["title"] == "t2"
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)


def test_overlong_control_sequences_are_consumed_and_ignored(session):
    """A CSI with 10,000 parameters or 100,000 digits is ignored whole, as xterm and tmux do:
    none of its digits are drawn."""
    s, sc = session, Screens(session)
    child = python_child(
        "import os, sys\n"
        "os.write(1, b'x\\x1b[' + b'1;' * 10000 + b'Hy')\n"
        "os.write(1, b'\\x1b[' + b'1' * 100000 + b'mz\\r\\n')\n"
        "sys.stdin.read(1)\n")
    eid = s.run(argv=child, rows=10, cols=60)["execution_id"]
    _wait_exact(sc, eid, ["xyz"], cursor=[1, 0])
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)
