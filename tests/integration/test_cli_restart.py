"""Screens and recognized states survive a daemon SIGKILL (issue 12): a re-attaching daemon
gives each runtime its screen back — the guardian's ring replayed into a fresh screen when
it holds the whole output, else the persisted screen plus the ring from the offset that
screen was current at — and recognition runs on it at once. Checked through the CLI: the
live explanation (not the persisted record) says the REPL waits for input again, and
`vigil screen` shows what it showed before, with no new output from the program.
"""

import json
import sys

from tests.support.daemon import wait_for
from tests.support.executions import Session, cli_bytes, cli_env, workspace  # noqa: F401

#: The smallest ring the settings allow: 200 KB of output overruns it for certain.
SMALL_RING = "guardian_ring_bytes = 65536\n"


def live_state(env: dict, eid: str) -> str | None:
    """The recognizer's state on the live screen (`vigil explain`), or None when the
    daemon is not evaluating a live screen for it (yet)."""
    got = cli_bytes(env, "--json", "explain", eid)
    if got.returncode != 0:
        return None
    data = json.loads(got.stdout)
    return data["state"] if data["detection_source"] == "live_screen" else None


def screen_text(env: dict, eid: str) -> str:
    got = cli_bytes(env, "screen", eid)
    assert got.returncode == 0, got.stderr
    return got.stdout.decode()


def repl_after_sigkill(home, workspace, env, argv: list[str]) -> None:
    """Start `argv` (a Python REPL), use it once, SIGKILL the daemon, start another: the
    screen and the awaiting_input state come back without the program printing a byte."""
    daemon = home.start_daemon()
    s = Session(home, workspace)
    try:
        eid = s.run(argv=argv)["execution_id"]
        wait_for(lambda: live_state(env, eid) == "awaiting_input", timeout=30,
                 what="the REPL's prompt")
        s.call("input", execution_id=eid, text="print(6 * 7)\r")
        wait_for(lambda: screen_text(env, eid).endswith("42\n>>>\n"), timeout=30,
                 what="the answer and the next prompt")
        wait_for(lambda: live_state(env, eid) == "awaiting_input", timeout=30,
                 what="the REPL waiting again")
        before = screen_text(env, eid)
        total = s.get(eid)["output"]["total_bytes"]
    finally:
        s.close()
    daemon.kill()
    home.start_daemon()
    wait_for(lambda: live_state(env, eid) == "awaiting_input", timeout=30,
             what="the re-attached REPL's prompt, recognized on its restored screen")
    assert screen_text(env, eid) == before
    listed = cli_bytes(env, "ls").stdout.decode().splitlines()
    wait_for(lambda: any(line.startswith(eid[:12]) and "running (awaiting_input)" in line
                         for line in cli_bytes(env, "ls").stdout.decode().splitlines()),
             timeout=30, what=f"ls to show the REPL waiting for input: {listed}")
    s = Session(home, workspace)
    try:
        assert s.get(eid)["output"]["total_bytes"] == total  # restored, not redrawn
        s.call("input", execution_id=eid, text="raise SystemExit(0)\r")  # -S: no exit()
        assert s.wait_exit(eid)["exit_code"] == 0
    finally:
        s.close()


def test_a_repl_whose_ring_holds_everything_comes_back_exact(home, workspace, cli_env):
    repl_after_sigkill(home, workspace, cli_env, [sys.executable, "-S", "-q", "-i"])


def test_a_repl_past_its_ring_comes_back_from_the_persisted_screen(home, workspace, cli_env):
    """200 KB of output before the prompt: the ring (64 KiB) no longer starts at 0, so the
    screen comes from the store plus the ring's tail from the persisted screen's offset."""
    home.write_config(SMALL_RING)
    flood = "for i in range(3000): print('line', i, 'x' * 60)"
    repl_after_sigkill(home, workspace, cli_env,
                       [sys.executable, "-S", "-q", "-i", "-c", flood])


def test_an_idle_persistent_shell_is_idle_after_a_daemon_sigkill(home, workspace, cli_env):
    daemon = home.start_daemon()
    done = cli_bytes(cli_env, "sh", "cd / && echo ready")
    assert (done.returncode, done.stdout) == (0, b"ready\n")
    s = Session(home, workspace)
    try:
        shell = s.call("BashCommand", action={"type": "status_check"},
                       wait_for_seconds=0)["shell_execution_id"]
    finally:
        s.close()
    wait_for(lambda: live_state(cli_env, shell) == "awaiting_input", timeout=30,
             what="the shell's prompt")
    daemon.kill()
    home.start_daemon()
    wait_for(lambda: live_state(cli_env, shell) == "awaiting_input", timeout=30,
             what="the re-attached shell at its prompt (not busy)")
    wait_for(lambda: any(line.startswith(shell[:12]) and "running (awaiting_input)" in line
                         for line in cli_bytes(cli_env, "ls").stdout.decode().splitlines()),
             timeout=30, what="ls to show the shell idle")
    again = cli_bytes(cli_env, "sh", "pwd")
    assert (again.returncode, again.stdout) == (0, b"/\n")  # the same shell: cd persisted
