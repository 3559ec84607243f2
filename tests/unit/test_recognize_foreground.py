"""`Foreground` (daemon/recognize/live.py): the foreground's argv is read again after every
exec, even one that keeps the pid, the name and the start time — a pyenv shim (a bash script
named python3) exec-ing the real python3 looked like bash to recognition for
the argv refresh interval, so an agent started through it was taken for a shell and
its session log was never followed."""

import os
import sys
import time

from tests.support.pty_child import end_pty_child, spawn_on_pty
from vigil.daemon.recognize.live import Foreground


def test_an_exec_that_keeps_pid_name_and_start_time_is_seen_at_once(tmp_path):
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    real = os.path.realpath(sys.executable)
    shim = tmp_path / os.path.basename(real)  # the shim and the program it execs share a name
    shim.write_text(f"#!/bin/bash\nread x < {gate}\nexec {real} \"$@\"\n")
    shim.chmod(0o755)
    program = "import sys; sys.stdin.read()"
    pid, fd = spawn_on_pty([str(shim), "-c", program])
    try:
        fg = Foreground(pid, refresh_seconds=3600.0)  # only a change of key reads argv again
        deadline = time.monotonic() + 10
        while fg.read()[2] != ("/bin/bash", str(shim), "-c", program):
            assert time.monotonic() < deadline, fg.read()
        with open(gate, "w") as g:  # the shim goes on: exec of the real interpreter
            g.write("go\n")
        deadline = time.monotonic() + 10
        while fg.read()[2] != (real, "-c", program):
            assert time.monotonic() < deadline, f"argv still {fg.read()[2]}"
        assert fg.read()[1] == os.path.basename(real)[:15]  # comm: the same before and after
    finally:
        end_pty_child(pid, fd)
