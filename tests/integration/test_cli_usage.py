"""The habits of the field (issue 12), through the real CLI and daemon: bad usage exits 2
(and says so in JSON with --json), tmux's key names, `wait` that answers at once and waits
past the wire's 30 s limit, retention that `ls` explains and the shell cannot abuse,
`explain` in words, `vigil sh` speaking CLI, help for everything, completion scripts."""

import json
import shutil
import subprocess
import sys
import time

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    EXIT_TIMEOUT,
    Gate,
    Session,
    cli_bytes,
    cli_env,
    python_child,
    session,
    workspace,
)


def run_id(env: dict, *command: str) -> str:
    got = cli_bytes(env, "run", "--", *command)
    assert got.returncode == 0, got.stderr
    return got.stdout.decode().strip()


# --- bad usage ----------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["run"], "nothing to run: vigil run [options] -- CMD [ARGS...]"),
    (["run", "--env", "NOEQUALS", "--", "true"], "--env expects KEY=VALUE, got 'NOEQUALS'"),
    (["kill", "-s", "FOO", "abc"],
     "unknown signal 'FOO' (a name such as TERM, INT, KILL, HUP, or a number)"),
    (["attach", "--detach-key", "bogus", "abc"],
     "detach key must look like Ctrl-\\ or ^], got 'bogus'"),
    (["attach", "abc"], "attach needs a terminal on stdin and stdout (it puts it in raw mode); "
                        "to read output use `vigil logs -f ID`, to type use `vigil send` or "
                        "`vigil keys`"),
    (["ls", "--limit", "0"], "--limit must be at least 1, got 0"),
    (["wait", "abc", "--timeout", "-1"], "--timeout must be a number of seconds >= 0, got -1.0"),
    (["keys", "abc", "Hyper-x"], None),
    (["status", "--bogus"], "unrecognized arguments: --bogus"),
    (["frobnicate"], None),
])
def test_every_usage_error_exits_2_also_in_json(home, args, message):
    """Found by the CLI before it talks to the daemon (--no-autostart: none is running)."""
    env = home.env
    got = cli_bytes(env, "--no-autostart", *args)
    assert got.returncode == 2, got.stderr
    assert got.stdout == b""
    if message:
        assert got.stderr.decode().endswith(f"vigil: error: {message}\n")
    as_json = cli_bytes(env, "--no-autostart", "--json", *args)
    assert (as_json.returncode, as_json.stderr) == (2, b"")
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "usage"
    if message:
        assert error["message"] == message


def test_json_errors_keep_the_exit_codes(home, daemon, cli_env):
    missing = cli_bytes(cli_env, "--json", "show", "abcdef")
    assert (missing.returncode, missing.stderr) == (1, b"")
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "not_found" and "vigil ls --all" in error["message"]
    refused = cli_bytes(cli_env, "--json", "show", "zz")  # the daemon's own invalid_request
    assert refused.returncode == 2
    assert json.loads(refused.stdout) == {"error": {
        "code": "invalid_request", "message": "'zz' is not an execution id or a prefix of one"}}
    down = cli_bytes(dict(cli_env, VIGIL_SOCKET=str(home.root / "nobody.sock")),
                     "--json", "--no-autostart", "ls")
    assert down.returncode == 3
    assert json.loads(down.stdout)["error"] == {
        "code": "unavailable",
        "message": f"vigild is not running (no one listens on {home.root / 'nobody.sock'})"}


# --- keys ---------------------------------------------------------------------------------

RAW_ECHO = ("import os, sys, tty\n"
            "tty.setraw(0)\n"
            "os.write(1, b'ready')\n"
            "data = b''\n"
            "while not data.endswith(b'END'):\n"
            "    data += os.read(0, 100)\n"
            "os.write(1, repr(data).encode())\n")


def test_keys_takes_tmux_names_and_single_characters(session, cli_env):
    eid = session.run(argv=python_child(RAW_ECHO))["execution_id"]
    session.read_until(eid, lambda p: "ready" in p["text"])
    names = ["q", "C-c", "Up", "F1", "M-x", "BTab", "PPage", "DC", "BSpace", "Escape",
             "Space", "Tab", "Enter", "F12", "C-Up", "Key-up", "Ctrl-d", "E", "N", "D"]
    got = cli_bytes(cli_env, "keys", eid[:12], *names)
    assert (got.returncode, got.stderr) == (0, b"")
    session.wait_exit(eid)
    logs = cli_bytes(cli_env, "logs", eid, "--raw").stdout.decode()
    expected = (b"q\x03\x1b[A\x1bOP\x1bx\x1b[Z\x1b[5~\x1b[3~\x7f\x1b \t\r\x1b[24~\x1b[1;5A"
                b"\x1b[A\x04END")
    assert logs == "ready" + repr(expected)
    helped = cli_bytes(cli_env, "keys", "--help").stdout.decode()
    for name in ("BTab", "PPage", "NPage", "IC", "DC", "BSpace", "F12", "C-c", "M-x"):
        assert name in helped, name


# --- wait ---------------------------------------------------------------------------------


def test_wait_answers_at_once_when_it_already_holds(session, cli_env):
    done = run_id(cli_env, "true")
    session.wait_exit(done)
    t0 = time.monotonic()
    got = cli_bytes(cli_env, "wait", done, "--timeout", "60")  # longer than the wire's 30 s
    assert (got.returncode, got.stdout, got.stderr) == (0, f"{done[:12]} exited 0\n".encode(), b"")
    assert time.monotonic() - t0 < 20  # at once, not after the timeout

    repl = session.run(argv=[sys.executable, "-S", "-q", "-i"])["execution_id"]
    wait_for(lambda: session.get(repl)["recognized_state"] == "awaiting_input", timeout=30,
             what="the REPL's prompt")
    got = cli_bytes(cli_env, "wait", repl, "--for", "awaiting_input", "--timeout", "60")
    assert (got.returncode, got.stdout) == (0, f"{repl[:12]} awaiting_input\n".encode())
    # A state an ended execution can never reach: said at once, exit 1.
    never = cli_bytes(cli_env, "wait", done, "--for", "awaiting_input")
    assert (never.returncode, never.stdout) == (
        1, f"{done[:12]} exited 0 (will not change again)\n".encode())
    session.call("input", execution_id=repl, text="raise SystemExit(4)\r")
    session.wait_exit(repl)


def test_wait_on_several_says_which_changed_and_to_what(session, cli_env, workspace):
    gate = Gate(workspace / "go")
    slow = session.run(argv=["sleep", "100"])["execution_id"]
    gated = session.run(argv=python_child(gate.wait_source() + "import sys; sys.exit(5)\n"))
    waiter = subprocess.Popen([sys.executable, "-m", "vigil.client.cli", "wait", slow,
                               gated["execution_id"]], env=cli_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        gate.open()
        out, err = waiter.communicate(timeout=EXIT_TIMEOUT)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert (waiter.returncode, out, err) == (
        0, f"{gated['execution_id'][:12]} exited 5\n".encode(), b"")
    timeout = cli_bytes(cli_env, "wait", slow, "--timeout", "0.5")
    assert (timeout.returncode, timeout.stdout) == (1, b"timeout\n")
    session.call("signal", execution_id=slow, signal="KILL")
    got = cli_bytes(cli_env, "wait", slow)
    assert (got.returncode, got.stdout) == (0, f"{slow[:12]} killed (SIGKILL)\n".encode())


# --- retention and ls ---------------------------------------------------------------------


def test_ls_says_what_it_shows_and_shell_commands_never_push_runs_out(home, workspace):
    home.write_config("retention_records_per_scope = 4\nretention_shell_commands_per_scope = 3\n")
    home.start_daemon()
    env = dict(home.env, VIGIL_WORKSPACE=str(workspace))
    s = Session(home, workspace)
    try:
        runs = [s.wait_exit(s.run(argv=["true"])["execution_id"])["execution_id"]
                for _ in range(4)]
        for i in range(6):
            assert cli_bytes(env, "sh", f"echo {i}").returncode == 0
        listing = json.loads(cli_bytes(env, "--json", "ls", "--all").stdout)
        kinds = [e["kind"] for e in listing["executions"]]
        ids = {e["execution_id"] for e in listing["executions"]}
        assert set(runs) <= ids  # six shell commands pushed no run out
        assert sorted(kinds) == ["shell", "shell_command", "shell_command"] + ["standalone"] * 4
        assert (listing["total"], listing["retention_records"],
                listing["retention_shell_commands"]) == (7, 4, 3)
        short = cli_bytes(env, "ls", "--limit", "2")
        assert len(short.stdout.decode().splitlines()) == 3  # the header and two rows
        assert short.stderr == (b"vigil: 2 of 7 retained executions shown, newest first; "
                                b"`vigil ls --all` lists them all\n")
        assert cli_bytes(env, "ls").stderr == b""  # all shown: nothing to say
        big = cli_bytes(env, "ls", "--limit", "100000")  # more than one call's worth: paged
        assert (big.returncode, len(big.stdout.decode().splitlines())) == (0, 8)
        # A fifth run takes the oldest run's place; its id then says where to look.
        s.wait_exit(s.run(argv=["true"])["execution_id"])
        gone = cli_bytes(env, "show", runs[0])
        assert gone.returncode == 1
        assert gone.stderr.decode() == (
            f"vigil: not_found: no execution {runs[0]!r} in {workspace} (`vigil ls --all` "
            "lists the ones kept: older ones are removed by retention, and each workspace "
            "has its own)\n")
    finally:
        s.close()


# --- explain and sh -----------------------------------------------------------------------


def test_explain_prints_words_not_none(session, cli_env):
    eid = session.run(argv=["sleep", "100"])["execution_id"]
    running = cli_bytes(cli_env, "explain", eid)
    session.call("signal", execution_id=eid, signal="KILL")
    session.wait_exit(eid)
    ended = cli_bytes(cli_env, "explain", eid)
    for got in (running, ended):
        assert got.returncode == 0 and b"None" not in got.stdout, got.stdout
    assert b"foreground  not known (the program has ended)\n" in ended.stdout


def test_vigil_sh_speaks_cli_and_says_when_the_shell_ends(session, cli_env):
    slow = cli_bytes(cli_env, "sh", "--timeout", "0", "sleep 100")
    assert slow.returncode == 1
    shell = session.call("BashCommand", action={"type": "status_check"},
                         wait_for_seconds=0)
    command, shell_id = shell["execution_id"][:12], shell["shell_execution_id"][:12]
    assert slow.stderr.decode() == (
        f"vigil: still running after 0 s: follow it with `vigil logs -f {command}`, "
        f"interrupt it with `vigil keys {shell_id} C-c`\n")
    busy = cli_bytes(cli_env, "sh", "echo hi")
    assert busy.returncode == 1
    assert busy.stderr.decode() == (
        f"vigil: busy: the shell is still running a command ({command}): follow it with "
        f"`vigil logs -f {command}`, interrupt it with `vigil keys {shell_id} C-c`, or type "
        "into it with `vigil sh` (attach)\n")
    assert b"status_check" not in busy.stderr and b"send_text" not in busy.stderr
    assert cli_bytes(cli_env, "keys", shell_id, "C-c").returncode == 0
    wait_for(lambda: session.call("BashCommand", action={"type": "status_check"},
                                  wait_for_seconds=0)["status"] != "running",
             what="the interrupted command to end")
    ended = cli_bytes(cli_env, "sh", "exit 3")
    assert ended.returncode == 3
    assert ended.stderr == (b"vigil: the command ended the shell (exit status 3); the next "
                            b"`vigil sh` starts a new one, in the workspace root, without "
                            b"this one's variables\n")
    again = cli_bytes(cli_env, "sh", "echo back")
    assert (again.returncode, again.stdout) == (0, b"back\n")


# --- help and completion ------------------------------------------------------------------


def test_every_option_and_argument_has_help_and_commands_are_grouped():
    import argparse

    from vigil.client.cli import GROUPS, build_parser

    parser = build_parser()
    missing = []

    def walk(p, path):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
            elif not action.help and action.help is not argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(parser, "vigil")
    assert missing == []
    text = parser.format_help()
    for title, names in GROUPS.items():
        section = text[text.index(f"{title}:\n"):]
        for name in names:
            assert f"\n  {name} " in section, (title, name)


@pytest.mark.parametrize("shell, check", [
    ("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])])
def test_completion_scripts_are_generated_for_every_command(tmp_path, shell, check):
    got = subprocess.run([sys.executable, "-m", "vigil.client.cli", "completion", shell],
                         capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    assert got.returncode == 0, got.stderr
    for command in ("run", "ls", "attach", "keys", "wait", "completion", "detach-key",
                    "clean-env"):
        assert command in got.stdout, command
    if shutil.which(check[0]) is None:
        pytest.skip(f"{check[0]} is not installed: the script's syntax is not checked")
    script = tmp_path / f"vigil.{shell}"
    script.write_text(got.stdout)
    checked = subprocess.run(check + [str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
