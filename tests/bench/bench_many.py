"""The daemon with many running executions (issue 10, Many executions): is it still
responsive with 500, each printing a line a second?

    python -m tests.bench.bench_many [--executions 500] [--baseline 10] [--quick]

One daemon; first BASELINE executions run, then EXECUTIONS. Each is bash printing a line
and waiting a second (`read -t 1`, a builtin: no process per line), under its own guardian.
At each size, with every execution attached and printing:

- ping: sequential `ping` round trips from one connection, spaced by 20 ms, over a window
  of seconds (so every second's burst of lines falls into it); p50 and p99. Target p99
  ≤ 20 ms at 500.
- `vigil ls`: wall time of the whole CLI process (median of 5). Target: at 500 ≤ 2× its
  time at the baseline.
- the daemon's RSS, and its CPU use over the ping window (share of one core).
- the guardians' PSS, summed (what the executions cost beyond their children).

The peer of each figure is the same figure with BASELINE executions, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from tests.bench.common import Table, bench_home, percentile, pss_kib, rss_kib
from tests.support.daemon import wait_for

#: A line a second, forever; `read -t 1` waits in bash itself (no `sleep` process per line).
CHILD = ['bash', '--norc', '--noprofile', '-c',
         'i=0; while :; do echo "line $i of $$"; i=$((i+1)); read -t 1 _ || :; done']
START_BATCH = 25  # `run` requests pipelined at once while ramping up
PING_SPACING = 0.02
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def vigil_argv(*args: str) -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "vigil")
    base = [exe] if os.path.exists(exe) else [sys.executable, "-m", "vigil.client.cli"]
    return base + ["--no-autostart", *args]


class Fleet:
    """The executions of one scope in one daemon, and the measurements taken at each size."""

    def __init__(self, home, client):
        self.home = home
        self.client = client
        init = client.call("Initialize", workspace_root=str(home.root), thread_name="cli")
        self.scope = {"thread_id": init["thread_id"], "workspace_root": init["workspace_root"]}
        self.started: list[dict] = []
        self.env = dict(home.env, VIGIL_WORKSPACE=str(home.root))

    def grow_to(self, count: int) -> float:
        """Start executions until `count` run; returns the seconds it took."""
        t0 = time.perf_counter()
        while len(self.started) < count:
            n = min(START_BATCH, count - len(self.started))
            ids = [self.client.send("run", dict(self.scope, argv=CHILD)) for _ in range(n)]
            self.started += [self.client.receive(i)["execution"] for i in ids]
        not_running = [e for e in self.started if e["status"] != "running"]
        if not_running:
            raise AssertionError(f"{len(not_running)} executions did not start: {not_running[0]}")
        # Every one has printed (so every guardian is attached and streaming) before measuring.
        def all_printing() -> bool:
            listing = self.client.call("Execution", dict(self.scope, action={
                "type": "list", "limit": len(self.started)}))["data"]["executions"]
            return sum(1 for e in listing if e["output"]["total_bytes"] > 0) >= count
        wait_for(all_printing, timeout=120, what=f"{count} executions printing")
        return time.perf_counter() - t0

    def measure(self, daemon_pid: int, window: float) -> dict:
        pings = []
        cpu0, t0 = cpu_seconds(daemon_pid), time.perf_counter()
        end = t0 + window
        while time.perf_counter() < end:
            p0 = time.perf_counter()
            self.client.call("ping")
            pings.append(time.perf_counter() - p0)
            time.sleep(PING_SPACING)  # a client's pace, not a synchronisation
        cpu = (cpu_seconds(daemon_pid) - cpu0) / (time.perf_counter() - t0)
        ls = []
        for _ in range(5):
            p0 = time.perf_counter()
            subprocess.run(vigil_argv("ls"), env=self.env, stdout=subprocess.DEVNULL, check=True)
            ls.append(time.perf_counter() - p0)
        guardians = 0
        for e in self.started:
            try:
                guardians += pss_kib(e["runtime"]["guardian_pid"])
            except (FileNotFoundError, ProcessLookupError, RuntimeError):
                pass
        return {"p50": percentile(pings, 50), "p99": percentile(pings, 99), "max": max(pings),
                "pings": len(pings), "ls": statistics.median(ls), "rss": rss_kib(daemon_pid),
                "cpu": cpu, "guardians_pss": guardians}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def mb(kib: float) -> str:
    return f"{kib / 1024:.0f} MB"


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--baseline", type=int, default=10)
    parser.add_argument("--window", type=float, default=10.0, help="seconds of pings at each size")
    parser.add_argument("--quick", action="store_true", help="10 and 20 executions, 2 s windows")
    args = parser.parse_args(argv)
    many, base, window = (20, 10, 2.0) if args.quick else (args.executions, args.baseline, args.window)
    with bench_home() as home:
        daemon = home.daemons[0]
        with home.client() as client:
            fleet = Fleet(home, client)
            fleet.grow_to(base)
            small = fleet.measure(daemon.pid, window)
            ramp = fleet.grow_to(many)
            big = fleet.measure(daemon.pid, window)
    table = Table("many executions")
    peer = f"{base} executions"
    table.add(f"ping p99, {many} executions ({big['pings']} pings)", ms(big["p99"]), peer, ms(small["p99"]),
              f"{big['p99'] / small['p99']:.1f}×", "≤ 20 ms")
    table.add(f"ping p50, {many} executions", ms(big["p50"]), peer, ms(small["p50"]))
    table.add(f"ping max, {many} executions", ms(big["max"]), peer, ms(small["max"]))
    table.add(f"`vigil ls` wall, {many} executions", ms(big["ls"]), peer, ms(small["ls"]),
              f"{big['ls'] / small['ls']:.2f}×", "≤ 2× baseline")
    table.add(f"daemon RSS, {many} executions", mb(big["rss"]), peer, mb(small["rss"]),
              f"+{(big['rss'] - small['rss']) / (many - base):.0f} KiB each")
    table.add(f"daemon CPU, {many} executions printing 1 line/s", f"{big['cpu'] * 100:.0f}% of a core", peer,
              f"{small['cpu'] * 100:.0f}% of a core")
    table.add(f"guardians' PSS, {many} executions", mb(big["guardians_pss"]), peer, mb(small["guardians_pss"]),
              f"{big['guardians_pss'] / many / 1024:.2f} MB each")
    table.add(f"starting {many - base} more executions", f"{ramp:.1f} s", "",
              "", f"{ramp / (many - base) * 1000:.0f} ms each")
    table.print()
    return table


if __name__ == "__main__":
    main()
