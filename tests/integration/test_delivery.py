"""Delivery is confirmed, never assumed; values on the wire are measurements, not constants;
one bad ingest item never holds back another execution. All through a real daemon."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.integration.test_agent_prompt import Agent
from tests.integration.test_agent_recovery_herdr import herdr_world
from tests.support.daemon import wait_for
from tests.support.executions import Session, remote_error, session, workspace  # noqa: F401
from vigil.daemon.settings import Settings
from vigil.daemon.store import Store
from vigil.protocol.methods import all_methods


@pytest.fixture
def small_input(home, workspace):
    """A daemon whose guardians refuse input beyond 4 KiB not yet read by the child."""
    home.write_config("guardian_input_buffer_bytes = 4096\nguardian_command_timeout_seconds = 1.0\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        yield s
    finally:
        s.close()


def test_refused_input_is_reported_refused(small_input):
    s = small_input
    eid = s.run(argv=["sleep", "100"])["execution_id"]
    accepted = s.call("input", execution_id=eid, text="x" * 100)
    assert (accepted["bytes_sent"], accepted["confirmed"]) == (100, True)
    err = remote_error(s.call, "input", execution_id=eid, text="y" * 5000)
    assert err.code == "limit_exceeded"
    assert err.message.startswith("the guardian did not take the input: input of 5000 bytes "
                                  "refused:")
    assert err.data == {"execution_id": eid}
    s.call("signal", execution_id=eid, signal="KILL")


def test_refused_prompt_is_never_delivered(small_input, home):
    agent = Agent(small_input, home.root)
    receipt = agent.prompt("big", "z" * 5000, timeout_seconds=1)["receipt"]
    assert receipt["delivery"] == "refused"
    assert receipt["delivery_reason"].startswith("the guardian did not take the input: input "
                                                 "of 5012 bytes refused")  # 5000 + the paste marks
    assert receipt["condition"] == "pending" and receipt["activity"] == "unconfirmed"
    assert agent.lines() == []  # nothing of it reached the agent
    # The stored receipt says the same: the same id and text are not sent again.
    again = agent.prompt("big", "z" * 5000, timeout_seconds=1)
    assert again["replayed"] is True and again["receipt"]["delivery"] == "refused"


def test_a_stopped_guardian_is_reported_and_others_are_unaffected(small_input):
    s = small_input
    stuck = s.run(argv=["cat"])
    other = s.run(argv=["cat"])["execution_id"]
    os.kill(stuck["runtime"]["guardian_pid"], signal.SIGSTOP)
    try:
        start = time.monotonic()
        err = remote_error(s.call, "input", execution_id=stuck["execution_id"], text="hi\n")
        assert err.code == "timeout"
        assert "did not answer within 1 s" in err.message
        err = remote_error(s.call, "signal", execution_id=stuck["execution_id"], signal="INT")
        assert err.code == "timeout"
        assert time.monotonic() - start < 2 * 1.0 + 3.0  # two deadlines, not a hang
        # Another execution answers at once meanwhile.
        t0 = time.monotonic()
        assert s.call("input", execution_id=other, text="ok\n")["bytes_sent"] == 3
        assert time.monotonic() - t0 < 1.0
    finally:
        os.kill(stuck["runtime"]["guardian_pid"], signal.SIGCONT)
    # Resumed, the stopped one applies what it was sent, in order: the line, then SIGINT.
    record = s.wait_exit(stuck["execution_id"])
    assert record["signal"] == signal.SIGINT
    assert "hi" in s.follow(stuck["execution_id"]).text
    s.call("signal", execution_id=other, signal="KILL")


def test_capabilities_and_status_are_what_this_daemon_does(home, daemon, workspace):
    s = Session(home, workspace)
    try:
        # Every method callable after the handshake, no more, no less.
        assert s.client.welcome.capabilities == sorted(
            m.name for m in all_methods() if m.name != "hello")
        status = s.client.call("status", {})
        assert status["protocol"] == s.client.welcome.protocol == 1
        assert status["store"] == {"ok": True, "failing_since_unix_ms": None,
                                   "last_error": None, "failed_commits": 0}
    finally:
        s.close()


def test_activity_seq_counts_persisted_output(session):
    s = session
    eid = s.run(command="printf first; read x; printf second")["execution_id"]
    s.read_until(eid, lambda p: "first" in p["text"])
    first = s.get(eid)["output"]["activity_seq"]
    assert first >= 1
    assert s.get(eid)["output"]["activity_seq"] == first  # unchanged polls change nothing
    s.call("input", execution_id=eid, text="\r")
    record = s.wait_exit(eid)
    assert record["output"]["activity_seq"] > first
    assert record["output"]["pending"] is False


def test_detection_pages_have_cursors(session):
    s = session
    eid = s.run(command="printf 'hello world'; read x")["execution_id"]
    s.read_until(eid, lambda p: "hello" in p["text"])
    wait_for(lambda: "hello world" in s.call("screen", execution_id=eid)["text"],
             what="the screen")
    page = s.execution({"type": "read", "execution_id": eid, "source": "detection",
                        "page_bytes": 5})["data"]["page"]
    assert (page["source"], page["text"], page["has_more"]) == ("detection", "hello", True)
    assert page["detection"]["state"] in ("awaiting_input", "busy", "unknown")
    snapshot = page["snapshot"]
    nxt = s.execution({"type": "read", "execution_id": eid, "source": "detection",
                       "page_bytes": 6, "cursor": page["next_cursor"]})["data"]["page"]
    assert (nxt["text"], nxt["snapshot"], nxt["resync_required"]) == (" world", snapshot, False)
    # A detection cursor is not a screen cursor, nor the other way round.
    err = remote_error(s.execution, {"type": "read", "execution_id": eid, "source": "screen",
                                     "cursor": page["next_cursor"]})
    assert err.code == "invalid_cursor"
    # The screen changes: the old cursor asks for a resync and gets the new snapshot's start.
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)
    again = s.execution({"type": "read", "execution_id": eid, "source": "detection",
                         "cursor": page["next_cursor"]})["data"]["page"]
    assert again["resync_required"] is True and again["start_offset"] == 0
    assert again["snapshot"] > snapshot


def test_herdr_until_events_and_config_keys_through_the_daemon(home, workspace):
    home.write_config("herdr_read_lines_default = 3\n")
    home.start_daemon(extra_env=herdr_world(home, workspace))
    s = Session(home, workspace)
    try:
        read = s.call("Agent", backend="herdr", action="read", target="writer")["data"]
        assert read["lines"] == 3  # the config key reached the adapter
        waited = s.call("Agent", backend="herdr", action="wait", target="writer",
                        until=["idle", "done"], timeout_seconds=1)["data"]
        assert waited["condition_met"] is True and waited["agent"]["agent_status"] == "idle"
        err = remote_error(s.call, "Agent", backend="herdr", action="wait", target="writer",
                           until="idle")
        assert err.code == "invalid_request" and err.data == {"field": "params.until"}
        err = remote_error(s.call, "Agent", backend="herdr", action="wait", target="writer",
                           until=["sleeping"])
        assert err.code == "invalid_request" and err.data == {"field": "params.until[0]"}
        err = remote_error(s.call, "Agent", action="wait", target="0" * 32, events=["bogus"])
        assert err.code == "invalid_request" and err.data == {"field": "params.events[0]"}
    finally:
        s.close()


def test_a_poisoned_ingest_item_never_delays_another_execution(home, daemon, workspace):
    """An impossible status move (exited → unknown, as two daemons on one store once made)
    is dropped with a log line; the other execution's output keeps landing at once."""
    s = Session(home, workspace)
    try:
        victim = s.run(argv=["sleep", "100"])
        other = s.run(argv=["cat"])["execution_id"]
        # Another writer marks the victim exited behind the daemon's back ...
        outside = Store.open(home.state / "store", Settings())
        try:
            outside.update(victim["execution_id"], status="exited", exit_code=0)
        finally:
            outside.close()
        # ... and its guardian dies: the daemon now settles it `unknown`, which the record
        # can no longer become.
        os.kill(victim["runtime"]["guardian_pid"], signal.SIGKILL)
        wait_for(lambda: "ingest dropped an impossible update" in daemon.log.read_text(),
                 what="the impossible update to be dropped")
        for i in range(3):
            t0 = time.monotonic()
            s.call("input", execution_id=other, text=f"line{i}\n")
            s.read_until(other, lambda p, i=i: f"line{i}\r\nline{i}" in p["text"])
            assert time.monotonic() - t0 < 2.0  # one commit round, not a stall
        assert s.get(victim["execution_id"])["status"] == "exited"
        s.call("signal", execution_id=other, signal="KILL")
    finally:
        s.close()
