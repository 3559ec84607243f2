"""Native prompts end to end (seeds/000, "Submit a native prompt once"): a real daemon, the
scripted fake agent TUI (tests/fixtures/fake_agent/claude) in a real PTY.

The fake logs every submitted line to FAKE_AGENT_LOG (what "sent once" is checked against)
and, while "working", blocks on the FIFO FAKE_AGENT_CONTROL: the test releases it with a
`Gate`, so "work never ends within the timeout" is decided by the test, not by timing.

The recognizer is named explicitly (`claude`): the fake runs as `python3` through its
shebang, so `auto` (which goes by process name) would pick the shell manifest.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import Gate, Session, remote_error, session, workspace  # noqa: F401

FAKE_AGENT = str(Path(__file__).resolve().parents[1] / "fixtures" / "fake_agent" / "claude")


class Agent:
    """One fake agent execution plus its log and control gate."""

    def __init__(self, session: Session, root: Path, name: str = "a", control: bool = True):
        """control=False: no gate, each piece of work lasts the fake's own 1 s."""
        self.s = session
        self.log = root / f"{name}.log"
        env = {"FAKE_AGENT_LOG": str(self.log)}
        if control:
            self.gate = Gate(root / f"{name}.ctl")
            env["FAKE_AGENT_CONTROL"] = str(self.gate.path)
        ex = session.run(argv=[FAKE_AGENT], env=env)
        self.eid = ex["execution_id"]
        self.ready()

    def ready(self) -> None:
        """Until the daemon reports the prompt box (its debounced state `awaiting_input`):
        before that the reported state can still be a stale `busy` from start-up."""
        wait_for(lambda: self.s.get(self.eid)["recognized_state"] == "awaiting_input",
                 timeout=20, what="the fake agent's prompt box")

    def lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def prompt(self, prompt_id: str, text: str, **params) -> dict:
        params.setdefault("recognizer", "claude")
        return self.s.call("Agent", action="prompt", target=self.eid, prompt_id=prompt_id,
                           text=text, **params)["data"]

    def release_during(self, fn):
        """Run fn() while a thread releases the gate once the daemon has *observed* the
        work (reported state `busy`): released any earlier, the spinner and the redrawn box
        can reach the screen in one batch, and strict activity rightly never sees work."""
        def release():
            watcher = Session(self.s.home, self.s.workspace)
            try:
                wait_for(lambda: watcher.get(self.eid)["recognized_state"] == "busy",
                         timeout=20, what="the daemon to observe the fake agent working")
            finally:
                watcher.close()
            self.gate.open()

        t = threading.Thread(target=release)
        t.start()
        try:
            return fn()
        finally:
            t.join()


@pytest.fixture
def agent(home, daemon, workspace):
    s = Session(home, workspace)
    try:
        yield Agent(s, home.root)
    finally:
        s.close()


def assert_receipt(r: dict, eid: str, prompt_id: str, **expected) -> None:
    assert r["execution_id"] == eid and r["prompt_id"] == prompt_id
    assert r["generation"] == 0 and r["runtime_id"]
    assert r["bracketed_paste"] is True  # the fake enabled DECSET 2004
    for key, value in expected.items():
        assert r[key] == value, (key, r)


def test_delivered_confirmed_awaiting_input_then_replayed(agent):
    data = agent.release_during(lambda: agent.prompt("p1", "hello there", timeout_seconds=20))
    assert data["replayed"] is False
    assert_receipt(data["receipt"], agent.eid, "p1", delivery="delivered", activity="confirmed",
                   condition="awaiting_input")
    assert agent.lines() == ["hello there"]
    again = agent.prompt("p1", "hello there", timeout_seconds=20)
    assert again["replayed"] is True
    assert again["receipt"] == data["receipt"]
    assert agent.lines() == ["hello there"]  # nothing sent the second time
    # Agent wait observes the receipt, never sends.
    waited = agent.s.call("Agent", action="wait", target=agent.eid, prompt_id="p1",
                          timeout_seconds=1)["data"]
    assert waited["receipt"] == data["receipt"]
    assert agent.lines() == ["hello there"]
    # A changed payload under the same id is refused, and nothing is sent.
    err = remote_error(agent.prompt, "p1", "something else")
    assert err.code.value == "conflict" and "p1" in err.message
    assert agent.lines() == ["hello there"]


def test_busy_refused_then_timed_out_receipt_settles_by_wait(agent):
    data = agent.prompt("work", "do some work", timeout_seconds=1)
    assert_receipt(data["receipt"], agent.eid, "work", delivery="delivered",
                   activity="confirmed", condition="timed_out")
    # Still working (held at the gate): a new prompt is refused before any byte is sent.
    err = remote_error(agent.prompt, "other", "next please")
    assert err.code.value == "busy"
    assert err.data["input_sent"] is False and err.data["state"] == "busy"
    assert agent.lines() == ["do some work"]
    # Release the work: `wait {target, prompt_id}` sees the receipt reach awaiting_input.
    waited = agent.release_during(lambda: agent.s.call(
        "Agent", action="wait", target=agent.eid, prompt_id="work", timeout_seconds=20))
    assert waited["data"]["receipt"]["condition"] == "awaiting_input"
    assert waited["data"]["receipt"]["delivery"] == "delivered"
    assert agent.lines() == ["do some work"]


def test_awaiting_approval(agent):
    data = agent.prompt("ap", "please approve the cleanup", timeout_seconds=20)
    assert_receipt(data["receipt"], agent.eid, "ap", delivery="delivered", activity="confirmed",
                   condition="awaiting_approval")
    assert agent.lines() == ["please approve the cleanup"]


def test_exited_during_wait(agent):
    data = agent.prompt("bye", "/exit", timeout_seconds=20, wait_for=["awaiting_input"])
    assert_receipt(data["receipt"], agent.eid, "bye", delivery="delivered", condition="exited")
    assert agent.s.wait_exit(agent.eid)["exit_code"] == 0
    assert agent.lines() == ["/exit"]


def test_text_resembling_a_marker_leaves_activity_unconfirmed(agent):
    data = agent.release_during(lambda: agent.prompt("m", "esc to interrupt", timeout_seconds=20))
    r = data["receipt"]
    assert r["delivery"] == "delivered" and r["activity"] == "unconfirmed"
    assert "resembles" in r["activity_reason"]


def test_bad_requests_refused_with_the_field(agent):
    cases = [
        (dict(target=agent.eid, text="x"), "params.prompt_id"),
        (dict(prompt_id="p", text="x"), "params.target"),
        (dict(target=agent.eid, prompt_id="p", text="x" * (16 * 1024 + 1)), "params.text"),
        (dict(target=agent.eid, prompt_id="p", text="x", timeout_seconds=31), "params.timeout_seconds"),
    ]
    for params, field in cases:
        err = remote_error(agent.s.call, "Agent", action="prompt", recognizer="claude", **params)
        assert err.code.value == "invalid_request", (field, err)
        assert err.data["field"] == field
    # None of the refused requests sent anything.
    assert agent.lines() == []


def test_receipt_limit_per_generation(home, workspace):
    home.write_config("receipts_per_generation = 3\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        a = Agent(s, home.root, control=False)
        for i in range(3):
            r = a.prompt(f"p{i}", f"line {i}", timeout_seconds=20)["receipt"]
            assert r["condition"] == "awaiting_input", r
        err = remote_error(a.prompt, "p3", "line 3")
        assert err.code.value == "limit_exceeded"
        assert a.lines() == ["line 0", "line 1", "line 2"]
        # The stored ones still replay.
        assert a.prompt("p0", "line 0")["replayed"] is True
    finally:
        s.close()


def test_same_prompt_id_after_daemon_restart_is_replayed(home, workspace):
    home.start_daemon()
    s = Session(home, workspace)
    try:
        a = Agent(s, home.root)
        first = a.release_during(lambda: a.prompt("r1", "survive me", timeout_seconds=20))
        assert first["replayed"] is False
        assert first["receipt"]["condition"] == "awaiting_input", first
    finally:
        s.close()
    assert home.daemons[0].stop() == 0
    home.start_daemon()
    s2 = Session(home, workspace)
    try:
        a.s = s2
        again = a.prompt("r1", "survive me", timeout_seconds=20)
        assert again["replayed"] is True
        assert again["receipt"] == first["receipt"]
        assert a.lines() == ["survive me"]
        err = remote_error(a.prompt, "r1", "changed")
        assert err.code.value == "conflict"
        assert a.lines() == ["survive me"]
    finally:
        s2.close()


# --- generation change: the only generation-changing runtime is a thread's shell -----------


def shell_at_generation(session, generation: int) -> str:
    """Run `true` in the thread's shell; return the shell's id once its *stored* record
    and its screen are at the new generation's prompt (see the race in the report)."""
    result = session.call("BashCommand", action={"type": "command", "command": "true"})
    sh = result["shell_execution_id"]
    assert result["generation"] == generation
    wait_for(lambda: session.get(sh)["generation"] == generation, timeout=10,
             what="the stored shell generation")
    wait_for(lambda: session.call("screen", execution_id=sh)["text"].rstrip().endswith("$"),
             timeout=10, what="the shell prompt")
    return sh


def test_prompt_to_the_shell(session):
    sh = shell_at_generation(session, 1)
    data = session.call("Agent", action="prompt", target=sh, prompt_id="g1", text="echo hi",
                        recognizer="shell", wait_for=["awaiting_input"],
                        timeout_seconds=1)["data"]
    r = data["receipt"]
    assert r["generation"] == 1 and r["delivery"] == "delivered"
    assert r["condition"] in ("awaiting_input", "timed_out"), r


def test_generation_change_while_waiting(home, session):
    sh = shell_at_generation(session, 1)
    out = {}

    def change_generation():
        other = Session(home, session.workspace)
        try:
            # The receipt exists (stored before the first byte is sent): the prompt is in
            # flight; now a BashCommand command starts generation 2.
            def receipt_stored():
                try:
                    return other.call("Agent", action="wait", target=sh, prompt_id="g2",
                                      timeout_seconds=0)
                except Exception:
                    return None
            wait_for(receipt_stored, timeout=10, what="the prompt's receipt")
            out["r"] = other.call("BashCommand", action={"type": "command", "command": "true"})
        finally:
            other.close()

    t = threading.Thread(target=change_generation)
    t.start()
    try:
        data = session.call("Agent", action="prompt", target=sh, prompt_id="g2",
                            text="sleep 2", recognizer="shell", wait_for=["awaiting_input"],
                            timeout_seconds=20)["data"]
    finally:
        t.join()
    assert out["r"]["generation"] == 2
    r = data["receipt"]
    assert r["generation"] == 1 and r["delivery"] == "delivered"
    assert r["condition"] == "generation_changed", r
