"""Kernel evidence for recognition (issue 18): what one look at a terminal's foreground
costs, and what a recognition tick over 500 executions costs.

    python -m tests.bench.bench_kernel [--executions 500] [--samples 2000] [--quick]

Each execution is a program on its own PTY, its session leader, as under a guardian: half
`cat` (blocked in read(0) on the terminal: awaiting input, the look that reads the most
files) and half `sleep` (blocked in clock_nanosleep: busy). Measured in this process with
the daemon's own code (`KernelSampler.look()`, then `Registry.decide` with the screen's
detection, as `Recognition._with_kernel` does; the screen's detection is cached between
ticks while the screen is unchanged, so it is not part of a tick's cost):

- one sample of one execution, p50 and p99, for each kind; peer: reading its
  /proc/PID/stat alone (the floor of any look: one small file);
- one tick over all executions (each looked at once), per execution and in total; peer:
  reading every /proc/PID/stat once. Target: ≤ 0.1 ms per execution per tick.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.common import Table, percentile
from tests.support.pty_child import end_pty_child, spawn_on_pty
from vigil.daemon.recognize import RecognitionInput, Registry, load_builtins
from vigil.daemon.recognize.kernel import KernelSampler

TARGET_MS = 0.1


def read_stat(pid: int) -> bytes:
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def settled(sampler: KernelSampler, verdict: str, timeout: float = 30.0) -> None:
    """Wait until a freshly started program is in its wait (no event says when)."""
    deadline = time.monotonic() + timeout
    while sampler.look().verdict != verdict:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{sampler.child_pid} never reached {verdict}: {sampler.look().text}")
        time.sleep(0.01)


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=500)
    parser.add_argument("--samples", type=int, default=2000, help="single samples per kind")
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="20 executions, 100 samples, 3 ticks")
    args = parser.parse_args(argv)
    count, samples, ticks = (20, 100, 3) if args.quick else (args.executions, args.samples, args.ticks)
    registry = Registry(Path(tempfile.mkdtemp(prefix="vigil-bench-kernel-")), builtins=load_builtins())
    screen = registry.detect("auto", RecognitionInput(lines=["~~ "] + [""] * 49, cursor=(0, 3), foreground="cat"))
    children: list[tuple[int, int]] = []
    try:
        kinds = [("cat", ["cat"], "awaiting_input"), ("sleep", ["sleep", "100000"], "busy")]
        samplers: dict[str, list[KernelSampler]] = {k: [] for k, _, _ in kinds}
        for i in range(count):
            name, argv_, _ = kinds[i % 2]
            pid, fd = spawn_on_pty(argv_)
            children.append((pid, fd))
            samplers[name].append(KernelSampler(pid))
        for name, _, verdict in kinds:
            for s in samplers[name]:
                settled(s, verdict)

        def tick_look(s: KernelSampler) -> None:
            registry.decide(screen, s.look())

        table = Table("kernel evidence (issue 18)")
        for name, _, verdict in kinds:
            s = samplers[name][0]
            look = sorted(timed(lambda: tick_look(s), samples))
            floor = sorted(timed(lambda: read_stat(s.child_pid), samples))
            table.add(f"one sample, `{name}` ({verdict}), p50", f"{statistics.median(look) * 1000:.0f} µs",
                      "read /proc/PID/stat", f"{statistics.median(floor) * 1000:.1f} µs",
                      f"{statistics.median(look) / statistics.median(floor):.1f}×", f"≤ {TARGET_MS * 1000:.0f} µs")
            table.add(f"one sample, `{name}`, p99", f"{percentile(look, 99) * 1000:.0f} µs",
                      "read /proc/PID/stat", f"{percentile(floor, 99) * 1000:.1f} µs")
        everyone = [s for ss in samplers.values() for s in ss]
        tick = timed(lambda: [tick_look(s) for s in everyone], ticks)
        floor_tick = timed(lambda: [read_stat(s.child_pid) for s in everyone], ticks)
        per, per_floor = statistics.median(tick) / count, statistics.median(floor_tick) / count
        table.add(f"tick over {count} executions, per execution", f"{per * 1000:.0f} µs",
                  "read each /proc/PID/stat", f"{per_floor * 1000:.1f} µs", f"{per / per_floor:.1f}×",
                  f"≤ {TARGET_MS * 1000:.0f} µs")
        table.add(f"tick over {count} executions, total (median of {ticks})",
                  f"{statistics.median(tick):.1f} ms", "read each /proc/PID/stat",
                  f"{statistics.median(floor_tick):.2f} ms")
    finally:
        for pid, fd in children:
            end_pty_child(pid, fd)
    table.print()
    return table


if __name__ == "__main__":
    main()
