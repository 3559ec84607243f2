"""Exchange transcripts through a real daemon (seeds/003; issue 14's "Done when"): a scripted
session through the MCP server, agents that write Claude- and Codex-format session logs, the
seed's `jq` queries, a subscriber that never reads, and a daemon SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_agent_prompt import FAKE_AGENT
from tests.support.daemon import VigilHome, wait_for
from tests.support.executions import Gate, Session, workspace  # noqa: F401 (fixture)
from tests.support.mcp import mcp_stdio, run
from vigil.protocol.codec import Encoding
from vigil.protocol.connection import ClientConnection

FAKE_CODEX = str(Path(FAKE_AGENT).with_name("codex"))


def events(home: VigilHome, run_id: str) -> list[dict]:
    path = home.state / "transcripts" / f"{run_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_file_properties(path: Path) -> None:
    """0600, UTF-8 JSON lines ending in LF, strictly monotonic seq from 1, one run."""
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\r\n" not in data
    lines = [json.loads(line) for line in data.decode("utf-8").split("\n")[:-1]]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert {e["run_id"] for e in lines} == {path.stem}


def shape(evs: list[dict]) -> list[tuple]:
    """What a test compares exactly: type, path, and the fidelity of message/tool events."""
    return [(e["type"], e["path"], e["payload"].get("fidelity")) for e in evs]


def jq(query: str, path: Path, raw: bool = False) -> list:
    out = subprocess.run(["jq", "-c"] + (["-r"] if raw else []) + [query, str(path)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return out if raw else [json.loads(line) for line in out]


@pytest.fixture
def agent_home(home):
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude"),
                                 "CODEX_HOME": str(home.root / "codex")})
    return home


AGENT_TURN = [
    ("step.started", "turn.1", None),
    ("message.user", "turn.1", "router"),
    ("message.user", "turn.1", "agent_emitted"),
    ("message.assistant", "turn.1", "agent_emitted"),
    ("tool.call", "turn.1", "agent_emitted"),
    ("tool.result", "turn.1", "agent_emitted"),
    ("message.assistant", "turn.1", "agent_emitted"),
    ("step.completed", "turn.1", None),
]


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is installed by .ci/run")
def test_a_session_through_mcp_makes_linked_transcripts(agent_home, workspace):
    home = agent_home

    async def body():
        async with mcp_stdio(home) as m:
            await m.initialize(workspace)
            one = await m.ok("BashCommand", action={"type": "command", "command": "echo one"})
            two = await m.ok("BashCommand", action={"type": "command", "command": "(exit 3)"})
            task = await m.ok("BashCommand", action={"type": "command",
                                                     "command": f"exec {FAKE_AGENT}"},
                              wait_policy="task")
            agent = task["execution_id"]
            wait_for(lambda: Session(home, workspace, thread_id=m.thread_id).get(agent)[
                "recognized_state"] == "awaiting_input", timeout=20, what="the agent's box")
            receipt = (await m.ok("Agent", action="prompt", target=agent, prompt_id="p1",
                                  text="hello agent", recognizer="claude",
                                  timeout_seconds=20))["data"]["receipt"]
            assert (receipt["delivery"], receipt["condition"]) == ("delivered", "awaiting_input")
            wait_for(lambda: ("step.completed", "turn.1", None) in shape(events(home, agent)),
                     what="the agent's turn to be complete in its transcript")
            await m.ok("Agent", action="read", target=agent)
            return m.thread_id, one, two, agent

    thread, one, two, agent = run(body)
    shell = one["shell_execution_id"]
    tdir = home.state / "transcripts"
    for path in tdir.iterdir():
        assert_file_properties(path)

    # The thread: every call at the seam, each child run linked when it starts and ends.
    t = events(home, thread)
    assert t[0]["type"] == "run.started" and t[0]["payload"]["kind"] == "thread"
    calls = [e for e in t if e["type"] == "tool.call"]
    results = [e for e in t if e["type"] == "tool.result"]
    names = [c["payload"]["blocks"][0]["tool_name"] for c in calls]
    # The test's own polls (Execution get, on the same thread) are recorded too.
    polls = [c for c in calls if c["payload"]["blocks"][0]["tool_name"] == "Execution"]
    assert {p["payload"]["blocks"][0]["tool_input"]["action"]["type"] for p in polls} == {"get"}
    assert [n for n in names if n != "Execution"] == \
        ["BashCommand", "BashCommand", "BashCommand", "Agent", "Agent"]
    assert [c["payload"]["blocks"][0]["tool_id"] for c in calls] == \
        [r["payload"]["blocks"][0]["tool_id"] for r in results]
    assert {e["payload"]["fidelity"] for e in calls + results} == {"router"}
    started = [e["child_run_id"] for e in t if e["type"] == "step.call_workflow.started"]
    assert started == [shell, one["execution_id"], two["execution_id"], agent]
    completed = {e["child_run_id"]: e["payload"] for e in t
                 if e["type"] == "step.call_workflow.completed"}
    assert completed[one["execution_id"]] == {"status": "exited", "exit_code": 0}
    assert completed[two["execution_id"]] == {"status": "exited", "exit_code": 3}
    assert all(e.get("parent_run_id") is None for e in t)

    # The shell: its commands are steps with command blocks.
    s = events(home, shell)
    assert all(e["parent_run_id"] == thread for e in s)
    steps = [(e["type"], e["path"], e["payload"].get("blocks")) for e in s if e["path"].startswith("command.")]
    assert steps == [
        ("step.started", "command.1", [{"type": "command", "command": "echo one", "fidelity": "router"}]),
        ("step.completed", "command.1", [{"type": "command", "command": "echo one", "fidelity": "router", "exit_code": 0}]),
        ("step.started", "command.2", [{"type": "command", "command": "(exit 3)", "fidelity": "router"}]),
        ("step.completed", "command.2", [{"type": "command", "command": "(exit 3)", "fidelity": "router", "exit_code": 3}]),
    ]

    # The agent: the turn, the router prompt, then the agent's own account of it.
    a = events(home, agent)
    assert all(e["parent_run_id"] == thread for e in a)
    assert shape(a)[:2] == [("run.started", "", None), ("step.started", "terminal", None)]
    assert shape(a)[2:] == AGENT_TURN
    reply = a[5]["payload"]
    assert [b["type"] for b in reply["blocks"]] == ["thinking", "text", "tool_use"]
    assert reply["message_id"] == "msg_1a"

    # The seed's queries.
    agent_file, thread_file = tdir / f"{agent}.jsonl", tdir / f"{thread}.jsonl"
    assert len(jq(".", agent_file)) == len(a)
    assert [e["type"] for e in jq('select(.type == "tool.call" or .type == "tool.result")',
                                  agent_file)] == ["tool.call", "tool.result"]
    assert jq('select(.type == "message.assistant") | .payload.blocks[] | '
              'select(.type == "text") | .text', agent_file, raw=True) == \
        ["Running it.", "Done: hello agent"]
    assert len(jq('select(.type == "tool.call" and .payload.fidelity == "router")',
                  thread_file)) == len(calls)
    assert jq('select(.type == "step.started") | "\\(.seq)\\t\\(.path)\\t\\(.payload.kind)"',
              agent_file, raw=True) == ["2\tterminal\tterminal", "3\tturn.1\tagent"]
    assert jq('select(.type == "step.call_workflow.started") | .child_run_id', thread_file,
              raw=True) == started


def test_a_codex_agent_log_is_normalized(agent_home, workspace):
    s = Session(agent_home, workspace)
    try:
        eid = s.run(argv=[FAKE_CODEX])["execution_id"]
        wait_for(lambda: s.get(eid)["recognized_state"] == "awaiting_input", timeout=20,
                 what="the fake codex composer")
        receipt = s.call("Agent", action="prompt", target=eid, prompt_id="c1", text="list it",
                         recognizer="codex", timeout_seconds=20)["data"]["receipt"]
        assert receipt["condition"] == "awaiting_input"
        wait_for(lambda: ("step.completed", "turn.1", None) in shape(events(agent_home, eid)),
                 what="the turn in the transcript")
        a = events(agent_home, eid)
        assert shape(a)[2:] == AGENT_TURN
        # The prompt and the reply appear once each, though Codex writes both twice.
        user = a[4]["payload"]
        assert user["blocks"] == [{"type": "text", "text": "list it", "fidelity": "agent_emitted"}]
        assert user["source"]["provider"] == "codex"
        think, call = a[5]["payload"]["blocks"]
        assert think["type"] == "thinking" and think["text"].startswith("Plan for list it")
        assert (call["tool_name"], call["tool_id"], call["tool_input"]) == \
            ("shell", "call_1", {"command": ["echo", "list it"]})
        result = a[7]["payload"]["blocks"][0]
        assert (result["tool_id"], result["exit_code"]) == ("call_1", 0)
        assert a[8]["payload"]["blocks"] == [
            {"type": "text", "text": "Done: list it", "fidelity": "agent_emitted"}]
        assert a[9]["payload"] == {"kind": "agent", "status": "task_complete"}
        explain = s.execution({"type": "explain", "execution_id": eid})["data"]["agent_log"]
        assert explain["provider"] == "codex" and explain["verdict"] == "found"
        assert explain["path"].startswith(str(agent_home.root / "codex" / "sessions"))
    finally:
        s.close()


def test_a_subscriber_that_never_reads_loses_events_counted_and_the_file_stays_complete(
        home, daemon, workspace):
    s = Session(home, workspace)
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stalled.connect(str(home.socket))
        conn = ClientConnection(encoding=Encoding.MSGPACK)
        stalled.sendall(conn.hello()[1])
        while conn.welcome is None:
            conn.receive_data(stalled.recv(65536))
            conn.next_message()
        stalled.sendall(conn.request("transcript", s.scoped(run_id=s.thread_id, follow=True))[1])
        wait_for(lambda: s.client.call("status", {})["transcripts"]["subscribers"] == 1,
                 what="the follow to subscribe")
        s.wait_exit(s.run(argv=["true"])["execution_id"])
        for _ in range(400):  # each call: a tool.call and a tool.result of ~2 KB
            s.list()
        status = s.client.call("status", {})["transcripts"]
        assert status["dropped"] > 0  # counted, never blocking the calls above
        path = home.state / "transcripts" / f"{s.thread_id}.jsonl"
        assert_file_properties(path)
        assert sum(1 for e in events(home, s.thread_id) if e["type"] == "tool.call") > 400
    finally:
        stalled.close()
        s.close()
    assert "transcript subscriber is not keeping up" in daemon.log.read_text()


def test_a_daemon_sigkill_leaves_every_file_parseable_and_the_run_continues(home, workspace):
    d = home.start_daemon()
    s = Session(home, workspace)
    gate = Gate(home.root / "gate")
    eid = s.run(command=f"read x < {gate.path}; echo done")["execution_id"]
    s.read_until(eid, lambda p: True)
    before = events(home, eid)
    d.kill()
    for path in (home.state / "transcripts").iterdir():
        assert_file_properties(path)
    home.start_daemon()
    s2 = Session(home, workspace)
    try:
        gate.open()
        record = s2.wait_exit(eid)
        assert record["exit_code"] == 0
        # The recorder writes the end after the exit is persisted (it observes the change).
        after = wait_for(lambda: (e := events(home, eid)) and e[-1]["type"] == "run.completed"
                         and e, what="the run's end in its transcript")
        assert after[:len(before)] == before
        assert [e["type"] for e in after[len(before):]] == ["step.completed", "run.completed"]
        assert_file_properties(home.state / "transcripts" / f"{eid}.jsonl")
        # The thread's file goes on with the next seq after the restart.
        t = events(home, s2.thread_id)
        assert t[-1]["type"] == "tool.result" and t[-1]["seq"] == len(t)
    finally:
        s.close()
        s2.close()


def test_vigil_transcript_renders_a_tree_and_raw_lines(home, daemon, workspace):
    s = Session(home, workspace)
    try:
        eid = s.run(command="exit 4")["execution_id"]
        s.wait_exit(eid)
        out = home.cli("--workspace", str(workspace), "transcript", "--tree")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].endswith(f"run.started: thread {s.workspace_root}")
        assert any(line.startswith("     1 ") and "run.started: execution exit 4" in line
                   for line in lines)  # the child, indented
        assert any("step.call_workflow.completed: exited 4" in line for line in lines)
        raw = home.cli("--workspace", str(workspace), "transcript", eid[:10], "--json")
        assert [json.loads(line)["type"] for line in raw.stdout.splitlines()] == [
            "run.started", "step.started", "step.completed", "run.completed"]
    finally:
        s.close()
