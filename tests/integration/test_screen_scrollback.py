"""Scrollback (issue 17), with tmux as the oracle: the same program at the same size with the
same keys under vigil and in a tmux pane; vigil's last N scrollback lines followed by its
screen must equal `tmux capture-pane -p -S -N` line for line, and with attributes (`-e`)
cell for cell.

Programs: an interactive shell, a pager writing on the main screen (`less -X`), the Python
REPL, a long coloured build log with wrapped lines, tabs and progress bars, and a shell
that runs a full-screen program (vim) in between — the alternate screen never feeds the
scrollback. Each program is left running when compared (tmux would add a "Pane is dead"
line after an exit; vigil keeps scrollback for live executions).
"""

from __future__ import annotations

from tests.support.screens import (  # noqa: F401  (fixtures)
    Screens,
    session,
    shared_home,
    workspace,
)
from tests.support.tmux import Both, last_is, needs_tmux, tmux  # noqa: F401

pytestmark = needs_tmux


def assert_scrolled(b: Both, history: int) -> None:
    assert b.pane.history_size() > 0, "the program scrolled nothing away: not a test"
    b.assert_same(history)


def test_shell_session(session, tmux, workspace):
    b = Both(session, tmux, workspace, "exec bash --norc --noprofile -i", rows=12, cols=50)
    b.wait(last_is("$"), "the prompt")
    b.send("seq 1 40\r")
    b.wait(last_is("$"), "the prompt after seq")
    b.send("printf '\\033[1;31mred\\033[0m plain \\033[44mblue bg\\033[0m\\n'; echo done\r")
    b.wait(last_is("$"), "the prompt after printf")
    b.send("for i in 1 2 3; do printf '%s\\n' \"$(printf 'x%.0s' $(seq 1 120))\"; done\r")
    b.wait(last_is("$"), "the prompt after wrapped lines")
    assert_scrolled(b, 200)


def test_pager_on_the_main_screen(session, tmux, workspace):
    """`less -X` pages on the main screen: what it scrolls up goes to the history."""
    (workspace / "f.txt").write_text("".join(f"line {i} " + "=" * (i % 30) + "\n" for i in range(1, 201)))
    b = Both(session, tmux, workspace, "less -X f.txt; read x", rows=10, cols=40,
             env={"LESS": "", "LESSHISTFILE": "-"})
    b.wait(lambda lines: lines[:1] == ["line 1 ="] and lines[-1:] == ["f.txt"], "the first page")
    b.send(" ")
    b.wait(lambda lines: any(line.startswith("line 18 ") for line in lines), "the second page")
    b.send("jjjj")
    b.wait(lambda lines: any(line.startswith("line 22 ") for line in lines), "four lines down")
    b.send("G")
    b.wait(lambda lines: any("(END)" in line for line in lines), "the end")
    assert_scrolled(b, 300)


def test_python_repl(session, tmux, workspace):
    b = Both(session, tmux, workspace, "exec python3 -q -i", rows=10, cols=60,
             env={"PYTHONSTARTUP": "", "PYTHONNOUSERSITE": "1"})
    b.wait(last_is(">>>"), "the prompt")
    b.send("for i in range(30): print(i, 'x' * i)\r\r")
    b.wait(last_is(">>>"), "the prompt after the loop")
    b.send("print('\\x1b[32mgreen\\x1b[0m', 'tab\\tstop', 'bar\\rBAR')\r")
    b.wait(last_is(">>>"), "the prompt after print")
    b.send("(1 +\r")
    b.wait(last_is("..."), "the continuation prompt")
    b.send("2)\r")
    b.wait(last_is(">>>"), "the prompt after (1 + 2)")
    assert_scrolled(b, 200)


BUILD_LOG = r"""
for i in $(seq 1 150); do
  printf '\033[1m[%3d/150]\033[0m Compiling \033[36msrc/module_%d.c\033[0m\n' "$i" "$i"
  if [ $((i % 17)) -eq 0 ]; then
    printf '\033[1;35mwarning:\033[0m unused variable in function_%d with a very long explanation that wraps past the right margin of this terminal\n' "$i"
  fi
  if [ $((i % 40)) -eq 0 ]; then
    for p in 10 40 70 100; do printf '\rlinking %3d%%' "$p"; done; printf '\n'
    printf 'col1\tcol2\tcol3\n'
  fi
done
printf '\033[1;32mBuild finished\033[0m\n'
read x
"""


def test_long_build_log(session, tmux, workspace):
    (workspace / "build.sh").write_text(BUILD_LOG)
    b = Both(session, tmux, workspace, "sh build.sh", rows=15, cols=70)
    b.wait(last_is("Build finished"), "the end of the build")
    assert_scrolled(b, 1000)


def test_full_screen_program_does_not_feed_the_scrollback(session, tmux, workspace):
    """A shell with history, then vim on the alternate screen (scrolling its own file), then
    back: the history is the shell's only, and the shell's screen comes back."""
    (workspace / "v.txt").write_text("".join(f"vim line {i}\n" for i in range(100)))
    b = Both(session, tmux, workspace, "exec bash --norc --noprofile -i", rows=10, cols=50)
    b.wait(last_is("$"), "the prompt")
    b.send("seq 101 130\r")
    b.wait(last_is("$"), "the prompt after seq")
    b.send("vim -u NONE -N -n v.txt\r")
    b.wait(lambda lines: lines[:1] == ["vim line 0"], "vim")
    b.send("50jG")
    b.wait(lambda lines: any(line == "vim line 99" for line in lines), "the end of the file in vim")
    b.send(":q\r")
    b.wait(last_is("$"), "the prompt after vim")
    b.send("echo back\r")
    b.wait(last_is("$"), "the prompt after echo")
    assert_scrolled(b, 100)


def test_a_flood_keeps_its_last_lines(session, tmux, workspace):
    """200,000 lines arrive faster than the keeper parses: the lines it skips are rendered by
    the fast plain path (and marked so) — the same text tmux has."""
    b = Both(session, tmux, workspace, "seq 1 200000; read x", rows=20, cols=60)
    b.wait(last_is("200000"), "the end of the flood")
    want = [line.rstrip(" ") for line in b.pane.capture(history=5000)]
    snap = b.sc.get(b.eid, history=5000)
    assert snap["scrollback"] + snap["text"].split("\n") == want
    assert snap["scrollback_total"] >= 200000 - 20 and snap["scrollback_first"] == snap["scrollback_total"] - 5000


def test_history_is_validated_and_printed_by_the_cli(session, workspace):
    from tests.support.executions import remote_error

    s = session
    eid = s.run(command="seq 1 30; read x", rows=10, cols=20)["execution_id"]
    Screens(s).wait(eid, [str(i) for i in range(22, 31)], fidelity="exact")
    err = remote_error(s.call, "screen", execution_id=eid, history=10_000_001)
    assert (err.code, err.message) == ("invalid_request", "history must be between 0 and 10000, got 10000001")
    assert err.data["field"] == "params.history"
    out = s.home.cli("screen", eid[:12], "--history", "5", env=dict(s.home.env, VIGIL_WORKSPACE=str(workspace)))
    assert (out.returncode, out.stdout, out.stderr) == (0, "".join(f"{i}\n" for i in range(17, 31)), "")
    s.call("input", execution_id=eid, text="\r")
    s.wait_exit(eid)
