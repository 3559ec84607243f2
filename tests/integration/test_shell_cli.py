"""The CLI verbs of the shell and the screen, as subprocesses against a real daemon:
`vigil sh COMMAND` (exit code passed through, cwd persists between invocations: they share
the workspace's CLI thread), `vigil send`, `vigil keys` and `vigil screen [--ansi]`."""

import os

import pytest

from tests.support.executions import cli_bytes, python_child
from tests.support.screens import (  # noqa: F401  (fixtures)
    Screens,
    session,
    shared_home,
    workspace,
)


@pytest.fixture
def cli_env(shared_home, workspace, session) -> dict:
    """The CLI's environment: this test's workspace, so the CLI's thread is the session's
    ("cli"), whose teardown ends what the test left running."""
    return dict(shared_home.env, VIGIL_WORKSPACE=str(workspace))


def test_vigil_sh_passes_output_and_exit_codes_through_and_keeps_cwd(cli_env, workspace):
    hi = cli_bytes(cli_env, "sh", "echo", "hi")
    assert (hi.returncode, hi.stdout, hi.stderr) == (0, b"hi\n", b"")
    assert cli_bytes(cli_env, "sh", "false").returncode == 1
    assert cli_bytes(cli_env, "sh", "(exit 5)").returncode == 5
    made = cli_bytes(cli_env, "sh", "mkdir -p d && cd d")
    assert made.returncode == 0
    pwd = cli_bytes(cli_env, "sh", "pwd")
    assert pwd.stdout == os.path.join(os.path.realpath(workspace), "d").encode() + b"\n"


def test_vigil_sh_shares_the_thread_shell_with_bashcommand(session, cli_env):
    """The CLI's thread is the session's thread ("cli"): a variable set through the API is
    seen by `vigil sh`."""
    r = session.call("BashCommand", action={"type": "command", "command": "V=shared"},
                     wait_for_seconds=10)
    assert (r["status"], r["exit_code"]) == ("completed", 0)
    got = cli_bytes(cli_env, "sh", "echo $V")
    assert (got.returncode, got.stdout) == (0, b"shared\n")


def test_vigil_send_keys_and_screen(session, cli_env):
    s = session
    eid = s.run(argv=python_child(
        "import sys\n"
        "print('\\x1b[1;31mred\\x1b[0m plain')\n"
        "for line in sys.stdin:\n"
        "    print('got', line.strip())\n"
        "print('eof')\n"), rows=6, cols=30)["execution_id"]
    sc = Screens(s)
    sc.wait(eid, ["red plain"], cursor=[1, 0])
    sent = cli_bytes(cli_env, "send", eid[:10], "one", "--enter")
    assert (sent.returncode, sent.stdout) == (0, b"")
    sc.wait(eid, ["red plain", "one", "got one"])
    shown = cli_bytes(cli_env, "screen", eid[:10])
    assert (shown.returncode, shown.stdout) == (0, b"red plain\none\ngot one\n")
    ansi = cli_bytes(cli_env, "screen", eid[:10], "--ansi")
    assert ansi.returncode == 0
    # Bold red on "red", then back to plain: the exact SGR encoding is the renderer's, but
    # both attributes (1 and 31) are set before "red" and reset before " plain".
    before, _, after = ansi.stdout.partition(b"red")
    sgr = before[before.rfind(b"\x1b["):]
    assert sgr.startswith(b"\x1b[") and sgr.endswith(b"m")
    assert set(sgr[2:-1].split(b";")) >= {b"1", b"31"}
    assert after.startswith(b"\x1b[0m plain") or after.startswith(b"\x1b[m plain")
    unknown = cli_bytes(cli_env, "keys", eid[:10], "Hyper-x")
    assert unknown.returncode == 2  # bad usage, found before anything is sent
    assert unknown.stderr.startswith(b"vigil: error: unknown key 'Hyper-x'; known: Enter, ")
    keys = cli_bytes(cli_env, "keys", eid[:10], "Ctrl-d")
    assert keys.returncode == 0
    rec = s.wait_exit(eid)
    assert rec["exit_code"] == 0
    sc.wait(eid, ["red plain", "one", "got one", "eof"], live=False)
    late = cli_bytes(cli_env, "keys", eid[:10], "Enter")
    assert (late.returncode, late.stderr) == (1, b"vigil: conflict: the execution is not running\n")
