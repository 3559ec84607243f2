"""The projection's pure parts: a subscriber's bounded queue (drop-newest, one marker where
the gap is, counts), the last line of output as a terminal shows it, and the hub's ring and
ownership (another principal's or scope's execution is not found)."""

from __future__ import annotations

import trio

from vigil.daemon.projection.hub import ProjectionHub, last_line
from vigil.daemon.projection.subscriber import Subscriber
from vigil.daemon.runtime.lifecycle import LifecycleEvent
from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord
from vigil.protocol.api.projection import DroppedEvent, ExecutionProgress


def _progress(eid: str, seq: int) -> ExecutionProgress:
    return ExecutionProgress(execution_id=eid, seq=seq, at_unix_ms=0, reason="output",
                             status="running")


def test_a_full_queue_drops_the_newest_and_reports_the_gap_where_it_was():
    hub = ProjectionHub(Settings(), lambda tid: "local")
    sub = Subscriber(hub, "scope", "local", False, capacity=3)
    for seq in range(1, 7):
        sub.offer(_progress("a" * 32, seq))

    async def drain():
        got = [await sub.receive() for _ in range(4)]
        sub.offer(_progress("b" * 32, 1))  # room again: after the marker
        got.append(await sub.receive())
        return got

    got = trio.run(drain)
    assert [e.seq for e in got[:3]] == [1, 2, 3]
    assert got[3] == DroppedEvent(dropped=3, dropped_total=3, execution_ids=["a" * 32])
    assert (got[4].execution_id, got[4].seq) == ("b" * 32, 1)
    assert hub.dropped == 3


def test_the_last_line_is_what_a_terminal_shows():
    assert last_line(b"one\r\ntwo\r\n\r\n") == "two"
    assert last_line(b"progress 10%\rprogress 100%\n") == "progress 100%"
    assert last_line(b"abcdef\rXY\n") == "XYcdef"
    assert last_line(b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07done\n") == "red done"
    assert last_line(b"x" * 300) == "x" * 200
    assert last_line(b"\n \n") == ""


def _record(eid: str, scope: str, thread: str, **kw) -> ExecutionRecord:
    return ExecutionRecord(execution_id=eid, scope=scope, thread_id=thread, workspace_root="/w",
                           command="c", cwd="/w", started_unix_ms=1, **kw)


def test_snapshots_are_found_only_under_the_callers_principal_and_scope():
    owners = {"t1": "local", "t2": "agent"}
    hub = ProjectionHub(Settings(projection_snapshot_events=2), owners.get)
    for eid, scope, thread in (("a" * 32, "s1", "t1"), ("b" * 32, "s2", "t2")):
        rec = _record(eid, scope, thread)
        hub.lifecycle(LifecycleEvent(kind="started", scope=scope, execution_id=eid,
                                     at_unix_ms=1, record=rec))
        for n in range(3):
            hub.lifecycle(LifecycleEvent(kind="state", scope=scope, execution_id=eid,
                                         at_unix_ms=2, record=_record(
                                             eid, scope, thread, recognized_state=f"s{n}")))
    view, events, truncated = hub.snapshot("s1", "local", False, "a" * 32, 0)
    assert (view.seq, [e.seq for e in events], truncated) == (4, [3, 4], True)
    assert hub.snapshot("s1", "local", False, "a" * 32, 2)[2] is False
    assert hub.snapshot("s1", "local", False, "b" * 32, 0) is None  # another principal's
    assert hub.snapshot("s9", "local", False, "a" * 32, 0) is None  # another scope's
    assert hub.snapshot("s9", "local", True, "a" * 32, 0) is not None  # --all: same principal
    assert hub.snapshot("s2", "local", True, "b" * 32, 0) is None
