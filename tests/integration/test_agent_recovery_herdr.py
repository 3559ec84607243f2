"""Conversation-recovery advice and the Herdr backend, end to end through a real daemon
(their rules are unit-tested in tests/unit/test_recovery.py and test_herdr*.py; here: that
the daemon records and serves them)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.support.executions import Session, remote_error, session, workspace  # noqa: F401

UUID = "123e4567-e89b-42d3-a456-426614174000"
FAKE_HERDR = Path(__file__).resolve().parents[1] / "fixtures" / "fake_herdr"


def launch_recovery(s: Session, argv: list[str]) -> dict:
    """Launch argv (no such program here: the launch fails, the record stays) and return
    `Execution get`'s data.recovery for it."""
    from vigil.protocol.errors import RemoteError
    try:
        eid = s.run(argv=argv)["execution_id"]
    except RemoteError as err:  # the launch failed; the record exists all the same
        eid = err.data["execution_id"]
    return s.execution({"type": "get", "execution_id": eid})["data"]["recovery"]


def test_recovery_advice_rows(session):
    r = launch_recovery(session, ["claude", "--resume", UUID])
    assert r["advice"] == "explicit_target"
    assert r["source"] == "launch_argument"
    assert r["current_conversation_verified"] is False
    assert r["resume_argv"] == ["claude", "--resume", UUID]
    assert r["cwd"] == session.workspace_root
    assert launch_recovery(session, ["claude", "--session-id", UUID])["resume_argv"] == \
        ["claude", "--resume", UUID]
    assert launch_recovery(session, ["claude"])["advice"] == "best_effort"
    assert "resume_argv" not in launch_recovery(session, ["claude"]) or \
        launch_recovery(session, ["claude"])["resume_argv"] is None
    assert launch_recovery(session, ["env", "claude"])["advice"] == "unavailable"
    assert launch_recovery(session, ["claude", "--resume", "not-a-uuid"])["advice"] == "unavailable"


def test_herdr_status_hint_without_configuration(home, daemon, workspace):
    init = home.client().call("Initialize", {"workspace_root": str(workspace)})
    assert init["data"]["agent_backends"]["herdr"] == {
        "configuration_present": False, "availability": "disabled",
        "reason": "configuration_missing"}


def herdr_world(home, workspace, mode=0o600):
    ws = os.path.realpath(workspace)
    exe = home.root / "herdr"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_HERDR}" "$@"\n')
    exe.chmod(0o755)
    state = home.root / "herdr-state.json"
    state.write_text(json.dumps({"socket_path": "/run/fake-herdr/herdr.sock", "agents": [{
        "terminal_id": "term_a1", "pane_id": "w1:p1", "workspace_id": "w1", "tab_id": "w1:t1",
        "agent_status": "idle", "focused": False, "state_change_seq": 7, "revision": 0,
        "name": "writer", "agent": "claude", "text": "line 1\nline 2"}], "modes": {}}))
    cfg = home.root / "herdr.json"
    cfg.write_text(json.dumps({"executable": str(exe), "socket_path": "/run/fake-herdr/herdr.sock",
                               "deadline_ms": 5000, "bindings": [{
                                   "principal_key": "local", "workspace_root": ws,
                                   "targets": {"writer": "term_a1"}}]}))
    cfg.chmod(mode)
    return {"VIGIL_HERDR_CONFIG": str(cfg), "FAKE_HERDR_STATE": str(state),
            "FAKE_HERDR_LOG": str(home.root / "herdr-log.jsonl")}


def test_herdr_through_the_daemon(home, workspace):
    home.start_daemon(extra_env=herdr_world(home, workspace))
    s = Session(home, workspace)
    try:
        init = s.client.call("Initialize", {"workspace_root": str(workspace)})
        assert init["data"]["agent_backends"]["herdr"] == {
            "configuration_present": True, "availability": "unknown",
            "reason": "configuration_not_validated"}
        got = s.call("Agent", backend="herdr", action="get", target="writer")["data"]
        assert got["backend"] == "herdr" and got["agent"]["terminal_id"] == "term_a1"
        err = remote_error(s.call, "Agent", backend="herdr", action="prompt", target="writer",
                           prompt_id="p1", text="hi")
        assert err.code.value == "herdr_prompt_id_unsupported"
        assert err.data["input_sent"] is False
    finally:
        s.close()


def test_herdr_config_not_private_is_disabled(home, workspace):
    home.start_daemon(extra_env=herdr_world(home, workspace, mode=0o644))
    s = Session(home, workspace)
    try:
        err = remote_error(s.call, "Agent", backend="herdr", action="get", target="writer")
        assert err.code.value == "herdr_disabled"
        assert err.data["operator_action_required"] is True
        assert err.data["input_sent"] is False
    finally:
        s.close()
