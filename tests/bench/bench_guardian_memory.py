"""An idle guardian's memory, next to the bare interpreter it starts from (issue 10, Many
executions: target ≤ 4 MB PSS, where a guardian used to hold ~10 MB).

    python -m tests.bench.bench_guardian_memory [--count 20] [--quick]

- guardian: `launch_guardian` (the daemon's own launcher: `python -I -S boot.py`) for a
  child `sleep`, COUNT of them alive together, PSS of each from /proc/PID/smaps_rollup,
  median. PSS divides the pages processes share (the interpreter, libc) among them, so the
  figure is what one more guardian costs, not what the first one maps.
- peer: COUNT of `python -I -S` alive together, each blocked reading a pipe (nothing
  imported beyond what the interpreter loads to start), PSS median.
- why: what importing each module a guardian used to import costs that bare interpreter
  (PSS added, median of 5), the figures lite.py's design rests on.

A first guardian is started and ended before measuring, so bytecode is compiled and cached.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import msgspec

from tests.bench.common import Held, Table, pss_kib
from vigil.daemon.guardian.launch import launch_guardian, make_launch_spec
from vigil.daemon.settings import DEFAULTS

TARGET = "≤ 4 MB"
#: Modules the guardian no longer imports, and what lite.py / libc.py / the loop use instead.
WHY = ["msgspec", "enum", "socket", "signal", "selectors", "ctypes", "re", "typing"]


def mib(kib: float) -> str:
    return f"{kib / 1024:.2f} MB"


def idle_pythons(count: int, code: str = "") -> tuple[list[int], list[subprocess.Popen]]:
    """COUNT `python -I -S` that ran `code`, then block reading stdin: (PSS, processes)."""
    source = f"{code}\nimport os\nos.write(1, b'r')\nos.read(0, 1)"
    procs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", source], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE) for _ in range(count)]
    for p in procs:
        p.stdout.read(1)  # started, about to block
    return [pss_kib(p.pid) for p in procs], procs


def end(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.stdin.close()
        p.wait(10)


def guardians(count: int, root: str, held: Held, name: str = "m") -> list[int]:
    """Start COUNT guardians of `sleep 600`; the PSS of each, all alive together."""
    identities = []
    for i in range(count):
        spec = make_launch_spec(runtime_id=f"{name}{i}", argv=["sleep", "600"], cwd="/",
                                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                socket_path=os.path.join(root, f"{name}{i}.sock"),
                                records_dir=root, settings=DEFAULTS)
        identity = launch_guardian(msgspec.structs.replace(spec, exit_linger_seconds=0.0), DEFAULTS)
        held.hold(identity.guardian_pid)
        held.hold(identity.child_pid)
        identities.append(identity)
    return [pss_kib(i.guardian_pid) for i in identities]


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 of each: only checks it runs")
    args = parser.parse_args(argv)
    count = 3 if args.quick else args.count
    root = tempfile.mkdtemp(prefix="vgm", dir="/tmp")
    os.chmod(root, 0o700)
    held = Held()
    try:
        warm = Held()
        guardians(1, root, warm, "warm")  # compiles and caches the guardian's bytecode
        warm.kill_all()
        g_pss = guardians(count, root, held)
        p_pss, procs = idle_pythons(count)
        end(procs)
    finally:
        held.kill_all()
        shutil.rmtree(root, ignore_errors=True)
    why = {}
    for module in WHY:
        path = f"import sys; sys.path.extend({sys.path!r})"  # where msgspec is installed
        base, procs = idle_pythons(5, path)
        end(procs)
        added, procs = idle_pythons(5, f"{path}\nimport {module}")
        end(procs)
        why[module] = statistics.median(added) - statistics.median(base)
    table = Table("guardian memory (idle)")
    g, p = statistics.median(g_pss), statistics.median(p_pss)
    table.add(f"guardian PSS, idle (median of {count})", mib(g), f"python3 -I -S idle (median of {count})",
              mib(p), f"{g / p:.2f}×", TARGET)
    table.add("guardian PSS over the bare interpreter", f"+{mib(g - p)}")
    for module, kib in why.items():
        table.add(f"`import {module}` in python3 -I -S, PSS added", f"+{mib(kib)}", "not imported by the guardian")
    table.print()
    return table


if __name__ == "__main__":
    main()
