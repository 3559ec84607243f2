"""The spec's authority table ("Discovery and authority") enforced by a real daemon for every
mode, profile and tool allowlist: observation (`Execution`, `Agent` reads) for every mode;
prompting only with BashCommand authority in `wcgw`; `architect` never runs or sends
input; `code_writer` runs commands but never sends raw input. A refusal is `forbidden` and
names the missing authority (message and data.missing_authority)."""

from __future__ import annotations

import pytest

from tests.support.executions import Session, remote_error, workspace  # noqa: F401 (fixture)

# Every refusal below is decided at the dispatch seam, before the method looks at its target:
# a well-formed id that names no execution shows the difference between "forbidden" and
# "allowed, then not found / invalid".
NO_SUCH = "0" * 32


class ModeSession(Session):
    """A Session whose Initialize chooses mode, profile and tool allowlist (each on its
    own thread name, so the threads never share a scope)."""

    def __init__(self, home, workspace, name: str, mode: str, profile: str,
                 tools: list[str] | None):
        self.home = home
        self.workspace = workspace
        self.client = home.client()
        params = {"workspace_root": str(workspace), "thread_name": name, "mode": mode,
                  "profile": profile}
        if tools is not None:
            params["tools"] = tools
        init = self.client.call("Initialize", params)
        self.thread_id = init["thread_id"]
        self.workspace_root = init["workspace_root"]
        self.init = init


# (mode, profile, tools, Agent granted, prompt allowed, run allowed, raw input allowed)
CASES = [
    ("wcgw", "full", None, True, True, True, True),
    ("wcgw", "coding", None, True, True, True, True),
    ("wcgw", "terminal", None, True, True, True, True),
    ("wcgw", "read-only", None, True, False, False, False),
    ("wcgw", "full", ["Execution", "Agent"], True, False, False, False),
    ("wcgw", "full", ["Agent"], True, False, False, False),
    ("wcgw", "full", ["Execution"], False, False, False, False),
    ("wcgw", "full", ["Execution", "Agent", "BashCommand"], True, True, True, True),
    ("architect", "full", None, True, False, False, False),
    ("code_writer", "full", None, True, False, True, False),
]


@pytest.fixture
def sessions(home, daemon, workspace):
    made = []

    def make(i, mode, profile, tools):
        s = ModeSession(home, workspace, f"auth{i}", mode, profile, tools)
        made.append(s)
        return s

    try:
        yield make
    finally:
        for s in made:
            s.close()


def assert_forbidden(err, *words: str) -> None:
    assert err.code.value == "forbidden", err
    for word in words:
        assert word in err.message, (word, err.message)
    assert err.data["missing_authority"]
    assert err.data["missing_authority"] in err.message


@pytest.mark.parametrize("i,mode,profile,tools,agent,prompt,run,raw", [
    (i, *case) for i, case in enumerate(CASES)],
    ids=[f"{c[0]}-{c[1]}-{'+'.join(c[2]) if c[2] is not None else 'default'}" for c in CASES])
def test_authority_table(sessions, home, workspace, i, mode, profile, tools, agent, prompt,
                         run, raw):
    s = sessions(i, mode, profile, tools)
    assert s.init["mode"] == mode and s.init["profile"] == profile

    # Execution observation: every mode and profile, unless an allowlist leaves the tool out.
    if tools is None or "Execution" in tools:
        assert s.list()["executions"] == []
    else:
        assert_forbidden(remote_error(s.execution, {"type": "list"}), "Execution")

    # Agent observation.
    if agent:
        listing = s.call("Agent", action="list")
        assert listing["data"]["backend"] == "native"
        assert listing["data"]["action"] == "list"
    else:
        assert_forbidden(remote_error(s.call, "Agent", action="list"), "Agent")

    # Agent prompt: authorised means the request reaches validation (unknown target).
    err = remote_error(s.call, "Agent", action="prompt", target=NO_SUCH, prompt_id="p1",
                       text="hello")
    if prompt:
        assert err.code.value == "not_found", err
    elif not agent:
        assert_forbidden(err, "Agent")
    elif mode == "wcgw":
        assert_forbidden(err, "BashCommand")
    else:
        assert_forbidden(err)
        assert ("wcgw" in err.message) or ("BashCommand" in err.message)

    # run.
    if run:
        ex = s.run(argv=["true"])
        assert s.wait_exit(ex["execution_id"])["exit_code"] == 0
    else:
        err = remote_error(s.call, "run", argv=["true"])
        assert_forbidden(err, "architect" if mode == "architect" else "BashCommand")
        if agent:  # nothing was started
            assert s.call("Agent", action="list")["data"]["executions"] == []

    # Raw input: method `input` and BashCommand send_text.
    err = remote_error(s.call, "input", execution_id=NO_SUCH, text="x")
    if raw:
        assert err.code.value == "not_found", err
    else:
        assert_forbidden(err)
    if raw:
        result = s.call("BashCommand", action={"type": "send_text", "text": "echo hi"})
        assert result["shell_execution_id"]
    elif mode != "code_writer":  # code_writer: test_code_writer_refuses_bash_send_text
        assert_forbidden(remote_error(s.call, "BashCommand",
                                      action={"type": "send_text", "text": "echo hi"}))


def test_architect_refuses_bash_command(sessions):
    s = sessions(90, "architect", "full", None)
    err = remote_error(s.call, "BashCommand", action={"type": "command", "command": "true"})
    assert_forbidden(err, "architect")


@pytest.mark.parametrize("action", [
    {"type": "send_text", "text": "echo hi"},
    {"type": "send_specials", "keys": ["Enter"]},
    {"type": "send_ascii", "codes": [3]},
])
def test_code_writer_refuses_bash_send_text(sessions, action):
    s = sessions(93, "code_writer", "full", None)
    assert_forbidden(remote_error(s.call, "BashCommand", action=action), "wcgw")


def test_code_writer_refuses_input_to_its_own_execution(sessions):
    """code_writer may start a command, but may not type into it (nor prompt it)."""
    s = sessions(91, "code_writer", "full", None)
    ex = s.run(argv=["cat"])
    eid = ex["execution_id"]
    assert_forbidden(remote_error(s.call, "input", execution_id=eid, text="x\n"), "wcgw")
    assert_forbidden(remote_error(s.call, "Agent", action="prompt", target=eid,
                                  prompt_id="p1", text="x"), "wcgw")
    # Observation of that same execution is allowed.
    assert s.call("Agent", action="get", target=eid)["data"]["execution"]["execution_id"] == eid
    s.call("signal", execution_id=eid, signal=9)
    assert s.wait_exit(eid)["status"] == "exited"


def test_wcgw_input_reaches_the_execution(sessions):
    s = sessions(92, "wcgw", "full", None)
    ex = s.run(argv=["head", "-n1"])
    eid = ex["execution_id"]
    assert s.call("input", execution_id=eid, text="ping\n")["bytes_sent"] == 5
    record = s.wait_exit(eid)
    assert record["exit_code"] == 0
