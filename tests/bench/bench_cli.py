"""The CLI as people use it (issue 12), each figure next to a peer measured in the same run:

- `vigil run --wait` of N MB of 100-column lines into a pipe: the bytes that reach the
  reader (they must be every one: the expected count is the same pipeline's own output,
  measured with `wc -c`), and the wall time against
  - the same child under vigil with no reader (`vigil run` + `vigil wait`): the output
    path's floor — guardian, daemon, store, screen — which `--wait` adds its stream to
    (target ≤ 1.3×);
  - a bare Python PTY reader: a small program that forks the child on a PTY and reads the
    master until EIO (what any terminal program costs at least; `script -qfc` is slower).
  Rounds are interleaved (the machine is shared) and the median kept.
- `vigil ls` and `vigil status` wall time against `python -I -c pass` with the same
  interpreter (target ≤ 2×): the CLI must start in about what the interpreter costs.

Run: python -m tests.bench.bench_cli [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

from tests.bench.common import Table, bench_home
from tests.bench.bench_exec import COLS, ROWS, flood_command, vigil_argv

#: The CLI's stderr line for bytes it could not deliver (client/follow.py, gap_message).
LOST = re.compile(r"(\d+) bytes of output were lost")

#: The bare peer: fork the child on a PTY, read everything, reap it. Prints the byte count.
PTY_READER = r"""
import os, pty, struct, sys, fcntl, termios
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", sys.argv[1]])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", int(sys.argv[2]), int(sys.argv[3]), 0, 0))
n = 0
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:  # EIO: the child and everything it started closed the PTY
        break
    if not data:
        break
    n += len(data)
os.waitpid(pid, 0)
print(n)
"""


class Round:
    def __init__(self, seconds: float, received: int = 0, lost: int = 0, error: str = "",
                 why: str = ""):
        self.seconds, self.received, self.lost, self.error = seconds, received, lost, error
        #: The reasons the CLI gave for what it lost.
        self.why = why


def run_wait(env: dict, cmd: str) -> Round:
    """`vigil run --wait` into a pipe that `wc -c` reads (a C reader: it keeps up)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(vigil_argv("run", "--wait", "--", "sh", "-c", cmd), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    wc = subprocess.Popen(["wc", "-c"], stdin=proc.stdout, stdout=subprocess.PIPE, text=True)
    proc.stdout.close()  # wc holds the read end now
    err = proc.stderr.read().decode(errors="replace")
    proc.wait()
    counter = [int(wc.communicate()[0])]
    dt = time.perf_counter() - t0
    lost = sum(int(n) for n in LOST.findall(err))
    why = ", ".join(sorted(set(re.findall(r"were lost \(([^;]+);", err))))
    if proc.returncode != 0:
        return Round(dt, counter[0], lost, f"exit {proc.returncode}: {err[-200:]}")
    return Round(dt, counter[0], lost, why=why)


def no_reader(env: dict, cmd: str) -> Round:
    """The same child under vigil, nobody reading its output: `run`, then `wait`."""
    t0 = time.perf_counter()
    started = subprocess.run(vigil_argv("run", "--", "sh", "-c", cmd), env=env,
                             capture_output=True, text=True)
    if started.returncode != 0:
        return Round(0.0, error=f"run: {started.stderr.strip()}")
    eid = started.stdout.strip()
    done = subprocess.run(vigil_argv("wait", eid), env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if done.returncode != 0:
        return Round(dt, error=f"wait: {done.stdout.strip()}")
    # Bytes the output path itself lost (its guardian's ring overran while the daemon was
    # late): what no reader could have had. Retention's pruning is not a loss here.
    shown = subprocess.run(vigil_argv("--json", "show", eid), env=env, capture_output=True,
                           text=True)
    gaps = json.loads(shown.stdout)["output"]["gaps"]
    return Round(dt, lost=sum(end - start for start, end in gaps))


def bare_pty(cmd: str) -> Round:
    t0 = time.perf_counter()
    got = subprocess.run([sys.executable, "-I", "-c", PTY_READER, cmd, str(ROWS), str(COLS)],
                         capture_output=True, text=True)
    dt = time.perf_counter() - t0
    return Round(dt, int(got.stdout or 0), error="" if got.returncode == 0 else got.stderr[-200:])


def expected_bytes(cmd: str) -> int:
    """What the pipeline writes (LF line ends): what `run --wait` must deliver into a pipe."""
    out = subprocess.run(["sh", "-c", f"{cmd} | wc -c"], capture_output=True, text=True,
                         check=True)
    return int(out.stdout)


def bench_stream(table: Table, size_mb: int, rounds: int) -> None:
    cmd = flood_command(size_mb)
    expected = expected_bytes(cmd)
    results: dict[str, list[Round]] = {"wait": [], "floor": [], "pty": []}
    with bench_home() as home:
        env = dict(home.env, VIGIL_WORKSPACE=str(home.root))
        runners = {"wait": lambda: run_wait(env, cmd), "floor": lambda: no_reader(env, cmd),
                   "pty": lambda: bare_pty(cmd)}
        order = list(runners)
        for r in range(rounds):
            for name in order[r % 3:] + order[: r % 3]:  # rotate: no runner always first
                results[name].append(runners[name]())
    errors = [f"{n}: {x.error}" for n, rs in results.items() for x in rs if x.error]
    what = f"run --wait, {size_mb} MB of lines into a pipe (median of {rounds})"
    if errors:
        table.add(what, "FAILED", "", "", "", "; ".join(errors)[:160])
        return
    med = {n: statistics.median(x.seconds for x in rs) for n, rs in results.items()}
    lost = max(expected - x.received for x in results["wait"])
    said = max(x.lost for x in results["wait"])
    table.add(f"  bytes lost by run --wait (worst of {rounds})", f"{lost}",
              "bytes expected", f"{expected}", "", "0")
    table.add("  bytes the CLI reported as gaps (worst)", f"{said}", "lost by the output path, "
              "no reader (worst)", f"{max(x.lost for x in results['floor'])}")
    for x in results["wait"]:
        if x.why:
            table.add(f"  why the CLI said it lost {x.lost} bytes", x.why[:60])
    table.add(f"  (load average during the run: {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores)", "")
    table.add(what, f"{med['wait']:.2f} s", "same child, vigil, no reader", f"{med['floor']:.2f} s",
              f"{med['wait'] / med['floor']:.2f}×", "≤ 1.3×")
    table.add(what, f"{med['wait']:.2f} s", "bare Python PTY reader", f"{med['pty']:.2f} s",
              f"{med['wait'] / med['pty']:.2f}×")


def wall_ms(argv: list[str], env: dict, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def bench_startup(table: Table, runs: int) -> None:
    floor_argv = [sys.executable, "-I", "-c", "pass"]
    with bench_home() as home:
        env = dict(home.env, VIGIL_WORKSPACE=str(home.root))
        # As installed: a wheel's modules are byte-compiled when pip installs it. Here the
        # sources may never have been (PYTHONDONTWRITEBYTECODE in this sandbox), which
        # would time the compiler: the first run below writes the caches.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for command in ("ls", "status"):
            subprocess.run(vigil_argv(command), env=env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(vigil_argv("run", "--wait", "--", "true"), env=env, check=True,
                       stdout=subprocess.DEVNULL)  # a row to list
        codec_argv = [sys.executable, "-I", "-c", "import msgspec"]
        samples: dict[str, list[float]] = {"pass": [], "msgspec": [], "ls": [], "status": []}
        for _ in range(runs):  # interleaved, one of each per turn
            samples["pass"] += wall_ms(floor_argv, env, 1)
            samples["msgspec"] += wall_ms(codec_argv, env, 1)
            samples["ls"] += wall_ms(vigil_argv("ls"), env, 1)
            samples["status"] += wall_ms(vigil_argv("status"), env, 1)
    floor = statistics.median(samples["pass"])
    for name in ("ls", "status"):
        ms = statistics.median(samples[name])
        table.add(f"vigil {name} wall time (median of {runs})", f"{ms:.1f} ms",
                  "python -I -c pass", f"{floor:.1f} ms", f"{ms / floor:.2f}×", "≤ 2×")
    codec = statistics.median(samples["msgspec"])
    table.add("  the wire codec's own import", f"{codec:.1f} ms", "python -I -c pass",
              f"{floor:.1f} ms", f"{codec / floor:.2f}×", "(msgspec: part of every call)")
    table.add("  (fastest of each: pass / import msgspec / ls / status)",
              " / ".join(f"{min(samples[k]):.1f}" for k in ("pass", "msgspec", "ls", "status"))
              + " ms")


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="CLI benchmarks (issue 12)")
    parser.add_argument("--quick", action="store_true", help="small sizes: only checks it runs")
    args = parser.parse_args(argv)
    size_mb, rounds, runs = (10, 1, 5) if args.quick else (100, 3, 30)
    table = Table("cli (the CLI as people use it)")
    bench_startup(table, runs)
    bench_stream(table, size_mb, rounds)
    table.print()
    return table


if __name__ == "__main__":
    main()
    os._exit(0)
