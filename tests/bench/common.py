"""Shared pieces of the benchmarks: a private daemon, timing helpers, a printed table.

Benchmarks are not timed tests: they print figures next to a peer measured in the same run
(bare PTY, tmux, the interpreter floor) and the issue's target, and never fail on a number.
"""

from __future__ import annotations

import os
import select
import signal
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager

from tests.support.daemon import VigilHome


@contextmanager
def bench_home(config: str | None = None):
    home = VigilHome()
    if config:
        home.write_config(config)
    try:
        home.start_daemon()
        yield home
    finally:
        home.cleanup()


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def wall(argv: list[str], env=None, runs: int = 20) -> float:
    """Median wall time of a whole process, in seconds."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Table:
    """Rows of (what, vigil figure, peer, peer figure, target) printed as one aligned table."""

    def __init__(self, title: str):
        self.title = title
        self.rows: list[tuple[str, ...]] = []

    def add(self, what: str, figure: str, peer: str = "", peer_figure: str = "",
            ratio: str = "", target: str = "") -> None:
        self.rows.append((what, figure, peer, peer_figure, ratio, target))

    def print(self, out=sys.stdout) -> None:
        header = ("measure", "vigil", "peer", "peer figure", "ratio", "target")
        rows = [header] + self.rows
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        print(f"\n== {self.title} ==", file=out)
        for i, r in enumerate(rows):
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)
            if i == 0:
                print("  ".join("-" * w for w in widths), file=out)
        out.flush()


def rss_kib(pid: int) -> int:
    """VmRSS of a live process, in KiB (from /proc: no sampling tool needed)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid} (a kernel thread or a zombie?)")


def pss_kib(pid: int) -> int:
    """Proportional set size in KiB: shared pages (the interpreter, libraries) divided among
    the processes sharing them, so a sum over many processes is not inflated by them."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    raise RuntimeError(f"no Pss for pid {pid}")


class Held:
    """pidfds of processes this benchmark started, opened while they are known to be alive:
    waiting on them and killing them can never hit a process that reused the pid."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}  # pidfd -> pid

    def hold(self, pid: int) -> None:
        self.fds[os.pidfd_open(pid)] = pid

    def wait_gone(self, pids: list[int], timeout: float) -> list[int]:
        """Wait until each of `pids` (held) has exited; returns those still alive."""
        waiting = {fd for fd, pid in self.fds.items() if pid in pids}
        deadline = time.monotonic() + timeout
        while waiting and (left := deadline - time.monotonic()) > 0:
            waiting -= set(select.select(list(waiting), [], [], left)[0])
        return [self.fds[fd] for fd in waiting]

    def kill_all(self) -> None:
        for fd in self.fds:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # already gone: the normal case
            os.close(fd)
        self.fds.clear()
