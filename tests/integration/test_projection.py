"""The UI projection through the real daemon: `subscribe`'s events in order and exactly,
an agent's turn as NODE and TOOL events (checked against the schema), a stalled subscriber
losing events (counted, told with DROPPED, merged back from trace_snapshot), a
reconnecting subscriber merging trace_snapshot without a gap, and trace_snapshot's refusals
(malformed id, another scope's execution read exactly as a missing one)."""

from __future__ import annotations

import json
import uuid

import jsonschema
import msgspec

from tests.integration.test_archives import DEPLOY, Agent
from tests.support.executions import (  # noqa: F401 (fixture)
    Gate,
    Session,
    remote_error,
    workspace,
)
from vigil.client.projection import ProjectionView
from vigil.protocol.api.projection import ProjectionEvent, TraceSnapshotResult
from vigil.protocol.schema import export_schema

SCHEMA = export_schema()
EVENTS = jsonschema.Draft202012Validator({**SCHEMA["methods"]["subscribe"]["events"],
                                          "$defs": SCHEMA["$defs"]})
_DECODE = msgspec.convert


def watching(home, workspace) -> Session:
    """A session whose reads fail after 30 s instead of hanging (a missing event is a
    failure, not a stuck run)."""
    s = Session(home, workspace)
    s.client.close()
    s.client = home.client(timeout=30.0)
    return s


def events_of(s: Session, eid: str, last_kinds: tuple[str, ...]) -> list[dict]:
    """The pushed events about `eid`, each valid against the schema, up to one whose kind
    is in `last_kinds`."""
    got: list[dict] = []
    while True:
        event = s.client.next_event()
        errors = list(EVENTS.iter_errors(json.loads(json.dumps(event))))
        assert not errors, errors[0].message
        if event.get("execution_id") == eid:
            got.append(event)
            if event["kind"] in last_kinds:
                return got


def shape(events: list[dict]) -> list[tuple]:
    out = []
    for e in events:
        extra = {k: e[k] for k in ("reason", "last_line", "status", "exit_code", "signal",
                                   "path", "node", "tool_name", "tool_id", "is_error")
                 if k in e and e[k] is not None}
        out.append((e["seq"], e["kind"], extra))
    return out


ENDS = ("EXECUTION_COMPLETE", "EXECUTION_FAILED", "EXECUTION_CANCELLED")


def test_an_execution_streams_start_progress_and_its_end(home, daemon, workspace):
    s, watcher = Session(home, workspace), watching(home, workspace)
    try:
        answer = watcher.call("subscribe")
        assert answer == {"executions": [], "buffer_events": 256,
                          "progress_interval_seconds": 0.25}
        gate = Gate(home.root / "gate")
        eid = s.run(command=f"echo one; read x < {gate.path}; printf 'two\\r\\033[1mTWO\\033[0m\\n'"
                            "; exit 3")["execution_id"]
        first = events_of(watcher, eid, ("EXECUTION_PROGRESS",))
        gate.open()
        rest = events_of(watcher, eid, ENDS)
        got = shape(first + rest)
        assert got[0][:2] == (1, "EXECUTION_START")
        assert (first[0]["execution"]["command"], first[0]["execution"]["status"]) == (
            s.get(eid)["command"], "running")
        assert [g[0] for g in got] == list(range(1, len(got) + 1))  # numbered, no gap
        progress = [g[2] for g in got if g[1] == "EXECUTION_PROGRESS"]
        assert {"reason": "output", "last_line": "one", "status": "running"} in progress
        assert progress[-1]["last_line"] == "TWO"  # the CR's overwrite, escapes removed
        assert got[-1][1:] == ("EXECUTION_FAILED", {"status": "exited", "exit_code": 3})
        # A kill is a cancellation.
        killed = s.run(argv=["sleep", "60"])["execution_id"]
        events_of(watcher, killed, ("EXECUTION_START",))
        s.call("signal", execution_id=killed, signal="TERM")
        assert shape(events_of(watcher, killed, ENDS))[-1][1:] == (
            "EXECUTION_CANCELLED", {"status": "exited", "signal": 15})
        ok = s.run(argv=["true"])["execution_id"]
        assert shape(events_of(watcher, ok, ENDS))[-1][1:] == (
            "EXECUTION_COMPLETE", {"status": "exited", "exit_code": 0})
        # A new subscriber is answered with what it covers now: the three, ended.
        again = Session(home, workspace)
        rows = {e["execution_id"]: e for e in again.call("subscribe")["executions"]}
        again.close()
        assert {k: (v["outcome"], v["exit_code"], v["signal"]) for k, v in rows.items()} == {
            eid: ("failed", 3, None), killed: ("cancelled", None, 15), ok: ("complete", 0, None)}
    finally:
        s.close()
        watcher.close()


def test_an_agent_turn_streams_its_tool_events_and_its_node(home, workspace):
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    s, watcher = Session(home, workspace), watching(home, workspace)
    try:
        watcher.call("subscribe")
        agent = Agent(s, home.root, "deploy", DEPLOY)
        agent.prompt("deploy it")
        got = [g for g in shape(events_of(watcher, agent.eid, ("NODE_COMPLETE", "NODE_FAILED")))
               if g[1] in ("TOOL_CALL", "TOOL_RESULT", "NODE_COMPLETE", "NODE_FAILED")]
        assert [g[1:] for g in got] == [
            ("TOOL_CALL", {"path": "turn.1", "tool_name": "Bash", "tool_id": "toolu_1"}),
            ("TOOL_RESULT", {"path": "turn.1", "tool_id": "toolu_1"}),
            ("TOOL_CALL", {"path": "turn.1", "tool_name": "Read", "tool_id": "toolu_2"}),
            ("TOOL_RESULT", {"path": "turn.1", "tool_id": "toolu_2", "is_error": True}),
            ("NODE_COMPLETE", {"path": "turn.1", "node": "agent", "status": "end_turn"}),
        ]
    finally:
        s.close()
        watcher.close()


def test_a_shell_command_that_fails_is_a_failed_node(home, daemon, workspace):
    s, watcher = Session(home, workspace), watching(home, workspace)
    try:
        watcher.call("subscribe")
        done = s.call("BashCommand", action={"type": "command", "command": "sh -c 'exit 4'"})
        assert done["exit_code"] == 4
        shell = done["shell_execution_id"]
        node = shape(events_of(watcher, shell, ("NODE_COMPLETE", "NODE_FAILED")))[-1]
        assert node[1:] == ("NODE_FAILED", {"path": "command.1", "node": "command",
                                            "status": "exited", "exit_code": 4})
        done = s.call("BashCommand", action={"type": "command", "command": "true"})
        node = shape(events_of(watcher, shell, ("NODE_COMPLETE", "NODE_FAILED")))[-1]
        assert node[1:] == ("NODE_COMPLETE", {"path": "command.2", "node": "command",
                                              "status": "exited", "exit_code": 0})
    finally:
        s.close()
        watcher.close()


def test_a_stalled_subscriber_loses_events_counted_told_and_merged_back(home, workspace):
    # A small buffer so that a flood surely passes it past the connection's socket buffer
    # (the queue's own drop-newest order is checked in tests/unit/test_projection_hub.py).
    home.write_config("projection_buffer_events = 4\nprojection_progress_seconds = 0.01\n")
    daemon = home.start_daemon()
    s = Session(home, workspace)
    stalled = watching(home, workspace)
    try:
        stalled.call("subscribe")
        gates = [Gate(home.root / f"gate{i}") for i in range(10)]
        ids = [e["execution_id"] for e in s.run_many([
            {"command": f"cat {gate.path} >/dev/null; for i in $(seq 1 300); do echo line-$i; "
                        "sleep 0.01; done; echo end"} for gate in gates])]
        for gate in gates:
            gate.open()
        for eid in ids:
            s.wait_exit(eid)
        # The stalled one reads now: what it was sent, then DROPPED, then later events.
        view = ProjectionView()
        while (raw := stalled.client.next_event())["kind"] != "DROPPED":
            view.apply(_DECODE(raw, ProjectionEvent))
        assert 0 < raw["dropped"] <= raw["dropped_total"]  # the total: until now, in all
        assert set(raw["execution_ids"]) <= set(ids)
        view.apply(_DECODE(raw, ProjectionEvent))
        assert view.stale == set(raw["execution_ids"])
        # It merges the snapshots: each execution's state is the daemon's.
        for eid in ids:
            row = view.rows.get(eid)
            snap = s.call("trace_snapshot", execution_id=eid, after_seq=row.seq if row else 0)
            view.merge(_DECODE(snap, TraceSnapshotResult))
        assert view.stale == set()
        assert {eid: (view.rows[eid].outcome, view.rows[eid].last_line) for eid in ids} == {
            eid: ("complete", "end") for eid in ids}
        assert "projection subscriber is not keeping up" in daemon.log.read_text()
    finally:
        s.close()
        stalled.close()


def test_a_reconnecting_subscriber_merges_the_snapshot_without_a_gap(home, daemon, workspace):
    s = Session(home, workspace)
    gates = [Gate(home.root / f"gate{i}") for i in range(2)]
    try:
        first = watching(home, workspace)
        first.call("subscribe")
        eid = s.run(command=f"echo a; read x < {gates[0].path}; echo b; "
                            f"read x < {gates[1].path}; echo c")["execution_id"]
        seen = events_of(first, eid, ("EXECUTION_PROGRESS",))
        view = ProjectionView()
        for raw in seen:
            view.apply(_DECODE(raw, ProjectionEvent))
        first.close()  # the dashboard goes away
        gates[0].open()  # what happens meanwhile: output b
        second = watching(home, workspace)
        answer = second.call("subscribe")
        (row,) = [e for e in answer["executions"] if e["execution_id"] == eid]
        snap = second.call("trace_snapshot", execution_id=eid, after_seq=view.rows[eid].seq)
        assert snap["truncated"] is False
        assert [e["seq"] for e in snap["events"]] == list(range(view.rows[eid].seq + 1,
                                                                 row["seq"] + 1))
        view.merge(_DECODE(snap, TraceSnapshotResult))
        gates[1].open()
        for raw in events_of(second, eid, ENDS):
            assert raw["seq"] == view.rows[eid].seq + 1, "a gap after the merge"
            view.apply(_DECODE(raw, ProjectionEvent))
        assert view.stale == set()
        assert (view.rows[eid].outcome, view.rows[eid].last_line) == ("complete", "c")
        second.close()
    finally:
        s.close()


def test_trace_snapshot_refuses_bad_ids_and_hides_other_scopes(home, daemon, workspace):
    s = Session(home, workspace)
    other_ws = home.root / "other"
    other_ws.mkdir()
    other = Session(home, other_ws)
    try:
        mine = s.run(argv=["true"])["execution_id"]
        s.wait_exit(mine)
        for bad in ("../x", mine.upper(), str(uuid.UUID(mine)), mine[:31]):
            err = remote_error(s.call, "trace_snapshot", execution_id=bad)
            assert (err.code, err.data.get("field")) == ("invalid_request",
                                                         "params.execution_id"), bad
        theirs = remote_error(other.call, "trace_snapshot", execution_id=mine)
        missing = remote_error(other.call, "trace_snapshot", execution_id=uuid.uuid4().hex)
        assert (theirs.code, theirs.message, theirs.data) == (
            missing.code, missing.message, missing.data) == ("not_found", "execution not found",
                                                             missing.data)
        assert s.call("trace_snapshot", execution_id=mine)["execution"]["outcome"] == "complete"
        # Another scope's subscriber is not told of this scope's executions.
        watcher = watching(home, other_ws)
        watcher.call("subscribe")
        s.wait_exit(s.run(argv=["true"])["execution_id"])
        flag = other.run(argv=["true"])["execution_id"]
        told = set()
        while (event := watcher.client.next_event())["kind"] not in ENDS or (
                event["execution_id"] != flag):
            told.add(event["execution_id"])
        assert told == {flag}
        watcher.close()
    finally:
        s.close()
        other.close()


def test_a_cancel_is_a_cancellation_however_the_program_ends(home, daemon, workspace):
    """`cancel` asked for it: EXECUTION_CANCELLED even when the program catches SIGTERM and
    exits 0 (its exit alone would read as complete)."""
    s, watcher = Session(home, workspace), watching(home, workspace)
    try:
        watcher.call("subscribe")
        eid = s.run(command="trap 'exit 0' TERM; echo armed; while :; do sleep 0.05; done"
                    )["execution_id"]
        s.read_until(eid, lambda p: "armed" in p["text"])
        s.call("cancel", execution_id=eid)
        assert shape(events_of(watcher, eid, ENDS))[-1][1:] == (
            "EXECUTION_CANCELLED", {"status": "exited", "exit_code": 0})
    finally:
        s.close()
        watcher.close()
