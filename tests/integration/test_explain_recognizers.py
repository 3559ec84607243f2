"""Turn recognition driven by real programs under `vigil run`, awaited with `vigil wait
--for STATE` and confirmed by `explain` (manifest, rule, state); a malformed user manifest
is reported with its file and line while the built-ins keep working.
"""

from __future__ import annotations

import json

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    cli_bytes,
    cli_env,
    session,
    workspace,
)

BASH_ENV = {"PS1": "$ ", "HISTFILE": "/dev/null", "LESS": "", "LESSHISTFILE": "-"}


def explain(s: Session, eid: str) -> dict:
    return s.execution({"type": "explain", "execution_id": eid})["data"]


def wait_for_state(env: dict, eid: str, state: str, timeout: float = 10) -> None:
    r = cli_bytes(env, "wait", eid, "--for", state, "--timeout", str(timeout))
    assert r.returncode == 0, (r.stdout, r.stderr)


def run(s: Session, command: str) -> str:
    return s.run(command=command, env=BASH_ENV)["execution_id"]


def test_bash_prompt_then_sleep_is_busy(session, cli_env):
    s = session
    eid = s.run(argv=["bash", "--norc", "--noprofile", "-i"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    e = explain(s, eid)
    assert (e["recognizer"], e["state"], e["rule"], e["source"]) == \
        ("shell", "awaiting_input", "prompt", "rule")
    assert e["detection_source"] == "live_screen" and e["reported_state"] == "awaiting_input"
    ls = cli_bytes(cli_env, "ls")
    assert b"running (awaiting_input)" in ls.stdout, ls.stdout



def reaches(s: Session, eid: str, cursor: str, state: str, timeout: float) -> bool:
    """Whether `state` is reported after `cursor` within `timeout` (the wait action)."""
    data = s.execution({"type": "wait", "execution_ids": [eid], "after": cursor,
                        "events": [state], "timeout_seconds": timeout})["data"]
    return data["outcome"] == "changed"


def test_long_sleep_in_bash_is_busy_not_unknown(session, cli_env):
    s = session
    eid = s.run(argv=["bash", "--norc", "--noprofile", "-i"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    cursor = s.list()["catalog_cursor"]
    s.call("input", execution_id=eid, text="sleep 100\r")
    s.read_until(eid, lambda p: "sleep 100" in p["text"])
    assert not reaches(s, eid, cursor, "unknown", 1.5)
    e = explain(s, eid)
    assert (e["state"], e["reported_state"]) == ("busy", "busy"), e

def test_python_repl(session, cli_env):
    eid = session.run(argv=["python3", "-i", "-q"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    e = explain(session, eid)
    assert (e["state"], e["rule"]) == ("awaiting_input", "python_repl"), e


def test_rm_confirmation(session, cli_env, workspace):
    (workspace / "somefile").write_text("x")
    eid = run(session, "exec rm -i somefile")
    wait_for_state(cli_env, eid, "awaiting_approval")
    e = explain(session, eid)
    assert (e["recognizer"], e["state"], e["rule"], e["source"]) == \
        ("generic", "awaiting_approval", "file_confirm", "rule"), e



def test_password_prompt(session):
    s = session
    cursor = s.list()["catalog_cursor"]
    eid = run(s, "exec bash -c 'read -s -p \"Password: \" x'")
    assert reaches(s, eid, cursor, "awaiting_input", 3.0)
    e = explain(s, eid)
    assert (e["state"], e["rule"]) == ("awaiting_input", "password"), e


@pytest.fixture
def pager(session, workspace) -> str:
    (workspace / "somefile").write_text("".join(f"line {i}\n" for i in range(200)))
    return session.run(command="exec less somefile", env=BASH_ENV, rows=10,
                       cols=40)["execution_id"]


def test_less_first_screen(session, pager):
    s = session
    s.read_until(pager, lambda p: "somefile" in p["text"])
    e = explain(s, pager)
    assert e["state"] == "awaiting_input", e


def test_less_pager_prompts(session, cli_env, pager):
    s = session
    s.read_until(pager, lambda p: "somefile" in p["text"])
    s.call("input", execution_id=pager, text=" ")
    wait_for_state(cli_env, pager, "awaiting_input")
    e = explain(s, pager)
    assert (e["recognizer"], e["state"], e["rule"]) == ("pager", "awaiting_input", "pager_colon")
    s.call("input", execution_id=pager, text="G")
    s.read_until(pager, lambda p: "(END)" in p["text"])
    e = explain(s, pager)
    assert (e["state"], e["rule"]) == ("awaiting_input", "pager_end"), e

def test_explain_cli(session, cli_env):
    eid = session.run(argv=["bash", "--norc", "--noprofile", "-i"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    r = cli_bytes(cli_env, "--json", "explain", eid)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert (data["recognizer"], data["state"], data["rule"]) == \
        ("shell", "awaiting_input", "prompt")
    human = cli_bytes(cli_env, "explain", eid)
    assert human.returncode == 0
    assert b"state       awaiting_input (reported: awaiting_input)" in human.stdout


def test_wait_cli_timeout_exits_1(session, cli_env):
    eid = session.run(argv=["bash", "--norc", "--noprofile", "-i"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    r = cli_bytes(cli_env, "wait", eid, "--for", "exited", "--timeout", "0.2")
    assert r.returncode == 1, (r.stdout, r.stderr)


def test_malformed_user_manifest_reported_builtins_kept(home, session, cli_env):
    d = home.config / "vigil" / "recognizers"
    d.mkdir(parents=True)
    (d / "bad.toml").write_text('name = "bad"\nversion = "1"\n[[rules]\nstate = \n')
    eid = session.run(argv=["bash", "--norc", "--noprofile", "-i"], env=BASH_ENV)["execution_id"]
    wait_for_state(cli_env, eid, "awaiting_input")
    e = explain(session, eid)
    assert (e["recognizer"], e["state"], e["rule"]) == ("shell", "awaiting_input", "prompt")
    errors = e["observation"]["errors"]
    assert len(errors) == 1, errors
    assert "bad.toml" in errors[0] and "line 3" in errors[0], errors
