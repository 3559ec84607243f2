"""`vigil run` as a person runs it (issue 12), through the real CLI and daemon: the caller's
environment, working directory and terminal size; every byte streamed by `run --wait`, or
an exact gap when the reader stalls; plain text into pipes and files (`--raw` for the
bytes); Ctrl-C interrupting the job and Ctrl-\\ detaching; `ls` fitted to the terminal and
coloured unless NO_COLOR."""

import json
import os
import re
import subprocess
import sys

from tests.support.executions import (  # noqa: F401  (fixtures)
    EXIT_TIMEOUT,
    Session,
    cli_bytes,
    cli_env,
    python_child,
    session,
    workspace,
)
from tests.support.screens import Terminal

CLI = [sys.executable, "-m", "vigil.client.cli"]
GAP = re.compile(rb"vigil: (\d+) bytes of output were lost \(([^;]+); bytes (\d+)-(\d+)\)\n")


def test_a_run_gets_the_callers_environment_and_directory(session, home, cli_env, workspace):
    sub = workspace / "sub"
    sub.mkdir()
    env = dict(cli_env, MYVAR="from-the-caller")
    got = subprocess.run(CLI + ["run", "--wait", "--", "sh", "-c", 'echo "$MYVAR|$(pwd)"'],
                         env=env, cwd=sub, capture_output=True, timeout=EXIT_TIMEOUT)
    assert (got.returncode, got.stdout, got.stderr) == (
        0, f"from-the-caller|{os.path.realpath(sub)}\n".encode(), b"")

    clean = cli_bytes(env, "run", "--wait", "--clean-env", "--env", "ONLY=1", "--", "env")
    assert (clean.returncode, sorted(clean.stdout.decode().splitlines())) == (
        0, ["ONLY=1", "TERM=xterm-256color"])

    # Kept private to the record: shown only when asked for.
    started = subprocess.run(CLI + ["run", "--", "true"], env=env, capture_output=True,
                             text=True, timeout=EXIT_TIMEOUT)
    eid = started.stdout.strip()
    session.wait_exit(eid)
    for args in (["show", eid], ["--json", "show", eid], ["--json", "ls"], ["logs", eid]):
        shown = cli_bytes(cli_env, *args)
        assert shown.returncode == 0 and b"from-the-caller" not in shown.stdout, args
    assert "env" not in session.execution({"type": "get", "execution_id": eid})["data"] or \
        session.execution({"type": "get", "execution_id": eid})["data"]["env"] is None
    shown = cli_bytes(cli_env, "show", eid, "--env").stdout.decode().splitlines()
    assert "  MYVAR=from-the-caller" in shown
    as_json = json.loads(cli_bytes(cli_env, "--json", "show", eid, "--env").stdout)
    assert as_json["env"]["MYVAR"] == "from-the-caller"
    assert b"from-the-caller" not in home.daemons[0].log.read_bytes()


def test_the_program_sees_the_callers_terminal_size(session, cli_env):
    term = Terminal.vigil(cli_env, "run", "--wait", "--", "sh", "-c", "tput cols; tput lines",
                          rows=33, cols=97)
    try:
        assert term.wait_exit() == 0
        # A terminal gets the bytes as written (its own onlcr then adds a CR to each LF).
        assert b"97\r\r\n33\r\r\n" in term.seen
    finally:
        term.close()
    term = Terminal.vigil(cli_env, "run", "--wait", "--size", "20x77", "--", "sh", "-c",
                          "tput cols; tput lines", rows=33, cols=97)
    try:
        assert term.wait_exit() == 0
        assert b"77\r\r\n20\r\r\n" in term.seen
    finally:
        term.close()
    # `vigil sh` gives the persistent shell this terminal's size before the command.
    term = Terminal.vigil(cli_env, "sh", "tput cols; tput lines", rows=31, cols=91)
    try:
        assert term.wait_exit() == 0
        assert b"91\r\r\n31\r\r\n" in term.seen
    finally:
        term.close()
    piped = cli_bytes(cli_env, "run", "--wait", "--", "sh", "-c", "tput cols; tput lines")
    assert (piped.returncode, piped.stdout) == (0, b"200\n50\n")  # no terminal: the default
    bad = cli_bytes(cli_env, "run", "--size", "9000x1", "--", "true")
    assert (bad.returncode, bad.stderr) == (
        2, b"vigil: error: --size: rows must be from 2 to 1000, got 9000\n")


def test_run_wait_streams_every_byte_of_a_fast_command(session, cli_env):
    got = cli_bytes(cli_env, "run", "--wait", "--", "seq", "1", "300000")
    assert (got.returncode, got.stderr) == (0, b"")
    assert got.stdout == "".join(f"{i}\n" for i in range(1, 300001)).encode()


def test_a_stalled_reader_is_told_exactly_what_it_lost(home, workspace):
    """The CLI's stdout is a pipe nobody reads until the command has ended: the daemon
    keeps 64 KiB for it and drops the oldest beyond that. Every byte is then either on
    stdout, at its place, or inside a gap said on stderr with its exact byte counts."""
    home.write_config("follow_buffer_bytes = 65536\nfollow_stall_seconds = 0.2\n")
    home.start_daemon()
    env = dict(home.env, VIGIL_WORKSPACE=str(workspace))
    s = Session(home, workspace)
    child = python_child("import sys\nfor i in range(400000): sys.stdout.write('%07d\\n' % i)\n")
    proc = subprocess.Popen(CLI + ["run", "--wait", "--raw", "--", *child], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        from tests.support.daemon import wait_for

        eid = wait_for(lambda: [e["execution_id"] for e in s.list()["executions"]],
                       what="the run to be recorded")[0]
        record = s.wait_exit(eid)  # ended while our reader was stalled
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        s.close()
    assert proc.returncode == 0
    gaps = GAP.findall(err)
    assert gaps and GAP.sub(b"", err) == b"", err
    assert any(reason == b"dropped while this reader's output was stalled"
               for _, reason, _, _ in gaps)
    lost = 0
    for n, _, start, end in gaps:
        assert int(n) == int(end) - int(start)
        lost += int(n)
    total = record["output"]["total_bytes"]
    assert total == 400000 * 9  # "0000000\r\n" per line
    assert len(out) + lost == total
    # What arrived is the stream with exactly those ranges cut out.
    stream = b"".join(b"%07d\r\n" % i for i in range(400000))
    kept, at = [], 0
    for _, _, start, end in gaps:
        kept.append(stream[at:int(start)])
        at = int(end)
    kept.append(stream[at:])
    assert out == b"".join(kept)


def test_pipes_and_files_get_plain_text_and_raw_gets_the_bytes(session, cli_env, workspace):
    script = "printf '\\033[1;31mred\\033[0m plain\\n\\033]0;title\\007done\\n'"
    plain = cli_bytes(cli_env, "run", "--wait", "--", "sh", "-c", script)
    assert (plain.returncode, plain.stdout) == (0, b"red plain\ndone\n")
    raw = cli_bytes(cli_env, "run", "--wait", "--raw", "--", "sh", "-c", script)
    assert raw.stdout == b"\x1b[1;31mred\x1b[0m plain\r\n\x1b]0;title\x07done\r\n"
    eid = session.list()["executions"][0]["execution_id"]
    assert cli_bytes(cli_env, "logs", eid).stdout == b"red plain\ndone\n"
    assert cli_bytes(cli_env, "logs", eid, "--raw").stdout == raw.stdout
    with open(workspace / "log", "wb") as f:  # a file, as `> log` makes it
        subprocess.run(CLI + ["run", "--wait", "--", "sh", "-c", script], env=cli_env,
                       stdout=f, check=True, timeout=EXIT_TIMEOUT)
    assert (workspace / "log").read_bytes() == b"red plain\ndone\n"
    shell = cli_bytes(cli_env, "sh", script)
    assert (shell.returncode, shell.stdout) == (0, b"red plain\ndone\n")


TRAP = ("import signal, sys, time\n"
        "def stop(*_):\n"
        "    print('got INT', flush=True)\n"
        "    sys.exit(7)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n")


def test_ctrl_c_interrupts_the_job_and_waits_for_its_status(session, cli_env):
    term = Terminal.vigil(cli_env, "run", "--wait", "--", *python_child(TRAP))
    try:
        term.expect(b"ready\r")
        term.write(b"\x03")  # the terminal sends SIGINT to the CLI, which passes it on
        assert term.wait_exit() == 7
        assert b"got INT\r" in term.seen
    finally:
        term.close()
    eid = session.list()["executions"][0]["execution_id"]
    assert session.get(eid)["exit_code"] == 7


def test_ctrl_backslash_detaches_and_the_job_runs_on(session, cli_env):
    term = Terminal.vigil(cli_env, "run", "--wait", "--", *python_child(TRAP))
    try:
        term.expect(b"ready\r")
        term.write(b"\x1c")
        assert term.wait_exit() == 0
        eid = session.list()["executions"][0]["execution_id"]
        assert (f"vigil: detached from {eid[:12]}; it keeps running. Follow it again with: "
                f"vigil logs -f {eid[:12]}\r\n").encode() in term.seen
        assert session.get(eid)["status"] == "running"
    finally:
        term.close()
    session.call("signal", execution_id=eid, signal="INT")
    assert session.wait_exit(eid)["exit_code"] == 7


def test_ls_fits_the_terminal_and_colours_states_unless_no_color(session, cli_env):
    long = "echo " + "x" * 300
    session.wait_exit(session.run(command=long)["execution_id"])
    session.wait_exit(session.run(command="exit 3")["execution_id"])
    term = Terminal.vigil(cli_env, "ls", rows=24, cols=70)
    try:
        assert term.wait_exit() == 0
        lines = bytes(term.seen).decode().splitlines()
        assert all(len(re.sub(r"\x1b\[[0-9;]*m", "", line)) <= 70 for line in lines), lines
        assert any(line.endswith("…") and "echo xxx" in line for line in lines)
        assert "\x1b[32mexited 0" in term.seen.decode()  # success in green
        assert "\x1b[31mexited 3" in term.seen.decode()  # failure in red
    finally:
        term.close()
    term = Terminal.vigil(dict(cli_env, NO_COLOR="1"), "ls", rows=24, cols=70)
    try:
        assert term.wait_exit() == 0
        assert b"\x1b[" not in term.seen and b"exited 3" in term.seen
    finally:
        term.close()
    piped = cli_bytes(cli_env, "ls")  # not a terminal: whole commands, no colours
    assert b"x" * 300 in piped.stdout and b"\x1b[" not in piped.stdout
