"""Rerun through the real daemon (seeds/002, "Replay and rerun"): a new execution with the
same argv, cwd, environment and terminal size, linked both ways, the old record intact; a
persistent shell's commands are its iterations, listed, and one reruns in the shell as a
new generation."""

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    cli_env,
    python_child,
    remote_error,
    session,
    workspace,
)

REPORT = python_child(
    "import os, sys\n"
    "rows, cols = os.get_terminal_size(0).lines, os.get_terminal_size(0).columns\n"
    "print(sys.argv[1:], os.getcwd(), os.environ.get('RERUN_FOO'), rows, cols)\n")


def test_rerun_reproduces_argv_cwd_env_and_size_and_links_both_records(session, home,
                                                                       cli_env, workspace):
    sub = workspace / "sub"
    sub.mkdir()
    old = session.run(argv=REPORT + ["a b", "c"], cwd=str(sub), env={"RERUN_FOO": "bar"},
                      rows=30, cols=90, name="report")
    oid = old["execution_id"]
    first = session.follow(oid)
    expected = f"['a b', 'c'] {sub} bar 30 90\r\n"
    assert first.text == expected
    before = first.record

    again = session.call("rerun", execution_id=oid)
    new = again["execution"]
    nid = new["execution_id"]
    assert again["rerun_of"] == oid and new["rerun_of"] == oid and nid != oid
    assert (new["argv"], new["cwd"], new["rows"], new["cols"], new["name"]) == \
        (old["argv"], str(sub), 30, 90, "report")
    second = session.follow(nid)
    assert second.text == expected
    env_old = session.execution({"type": "get", "execution_id": oid, "include_env": True})
    env_new = session.execution({"type": "get", "execution_id": nid, "include_env": True})
    assert env_new["data"]["env"] == env_old["data"]["env"]
    assert env_old["data"]["reruns"] == [nid] and env_new["data"]["reruns"] == []
    # The old record is as it was: the same outcome, output and observation time.
    assert session.get(oid) == before

    by_cli = home.cli("rerun", oid[:10], env=cli_env)
    assert by_cli.returncode == 0, by_cli.stderr
    third = by_cli.stdout.strip()
    assert len(third) == 32 and session.follow(third).text == expected
    shown = home.cli("show", oid, env=cli_env).stdout.splitlines()
    assert [line for line in shown if line.startswith("rerun")] == \
        [f"rerun as  {nid}", f"rerun as  {third}"]
    assert f"rerun of  {oid}" in home.cli("show", third, env=cli_env).stdout.splitlines()
    events = session.execution({"type": "events", "execution_id": oid})["data"]["events"]
    assert [e["message"] for e in events if e["kind"] == "rerun"] == \
        [f"rerun as {nid}", f"rerun as {third}"]


def test_iterations_of_the_persistent_shell_and_rerunning_one(session, home, cli_env):
    first = session.call("BashCommand", action={"type": "command", "command": "echo one-$((0+1))"})
    second = session.call("BashCommand", action={"type": "command", "command": "sh -c 'exit 4'"})
    shell = first["shell_execution_id"]
    data = session.execution({"type": "iterations", "execution_id": shell})["data"]
    assert data["shell_execution_id"] == shell
    got = [(i["execution_id"], i["generation"], i["command"], i["status"], i["exit_code"])
           for i in data["iterations"]]
    assert got == [(first["execution_id"], 1, "echo one-$((0+1))", "exited", 0),
                   (second["execution_id"], 2, "sh -c 'exit 4'", "exited", 4)]

    again = session.call("rerun", execution_id=first["execution_id"])
    new = again["execution"]
    assert (new["kind"], new["generation"], new["command"], new["rerun_of"]) == \
        ("shell_command", 3, "echo one-$((0+1))", first["execution_id"])
    wait_for(lambda: session.get(new["execution_id"])["status"] == "exited",
             what="the rerun iteration to end")
    assert session.get(new["execution_id"])["exit_code"] == 0
    data = session.execution({"type": "iterations", "execution_id": shell})["data"]
    assert [(i["generation"], i["rerun_of"]) for i in data["iterations"]] == \
        [(1, None), (2, None), (3, first["execution_id"])]
    status = session.call("BashCommand", action={"type": "status_check"})
    assert "one-1" in status["output"]

    # The same through BashCommand (what an MCP client has): the fourth generation.
    by_tool = session.call("BashCommand", action={"type": "rerun",
                                                  "execution_id": second["execution_id"]})
    assert (by_tool["rerun_of"], by_tool["execution"]["generation"],
            by_tool["execution"]["command"]) == (second["execution_id"], 4, "sh -c 'exit 4'")
    err = remote_error(session.call, "BashCommand", action={"type": "rerun",
                                                            "execution_id": "nope"})
    assert (err.code, err.data["field"]) == ("invalid_request", "params.action.execution_id")
    err = remote_error(session.call, "BashCommand", wait_for_seconds=1,
                       action={"type": "rerun", "execution_id": second["execution_id"]})
    assert (err.code, err.message) == ("invalid_request", "rerun answers once started, with "
                                       "no inline wait: wait_for_seconds does not apply")


def test_bad_reruns_are_refused(session):
    ran = session.call("BashCommand", action={"type": "command", "command": "true"})
    err = remote_error(session.call, "rerun", execution_id=ran["shell_execution_id"])
    assert (err.code, err.message) == ("conflict", "a persistent shell is not rerun: rerun one "
                                       "of its iterations (`Execution iterations`)")
    standalone = session.run(argv=["true"])["execution_id"]
    err = remote_error(session.execution, {"type": "iterations", "execution_id": standalone})
    assert (err.code, err.message) == (
        "conflict", "iterations belong to a persistent shell: this execution is "
                    "'standalone', not a shell or its command")
    err = remote_error(session.execution, {"type": "iterations", "execution_id": "0" * 32})
    assert err.code == "not_found"
