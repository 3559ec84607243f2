"""RPC figures (issue: foundation): ping round trip in-process through vigil.client,
requests/s with 8 concurrent clients, and `vigil status` as a whole process against the
interpreter floor `python3 -I -c pass`.

Run: python -m tests.bench.bench_rpc [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

from tests.bench.common import Table, bench_home, percentile, wall
from vigil.client.connection import Client


def ping_latency(home, calls: int) -> list[float]:
    with home.client() as c:
        for _ in range(min(500, calls)):  # warm-up
            c.call("ping")
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            c.call("ping")
            times.append(time.perf_counter() - t0)
    return times


def _worker(path: str, calls: int, start, results) -> None:
    with Client(path) as c:
        c.call("ping")
        start.wait()
        for _ in range(calls):
            c.call("ping")
    results.put(calls)


def concurrent_rate(home, clients: int, calls: int) -> float:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(home.socket), calls, start, results))
             for _ in range(clients)]
    for p in procs:
        p.start()
    t0 = time.perf_counter()
    start.set()
    total = sum(results.get(timeout=300) for _ in procs)
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join()
    return total / elapsed


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    calls = 500 if args.quick else 10_000
    table = Table("RPC (foundation)")
    with bench_home() as home:
        lat = ping_latency(home, calls)
        p50, p99 = percentile(lat, 50) * 1e6, percentile(lat, 99) * 1e6
        table.add(f"ping p50 ({calls} calls)", f"{p50:.0f} µs", target="≤ 100 µs")
        table.add(f"ping p99 ({calls} calls)", f"{p99:.0f} µs")
        rate = concurrent_rate(home, 8, 200 if args.quick else 4000)
        table.add("ping req/s, 8 client processes", f"{rate:,.0f}/s", target="≥ 15,000/s")
        runs = 3 if args.quick else 20
        vigil_cmd = [os.path.join(os.path.dirname(sys.executable), "vigil"), "--no-autostart", "status"]
        if not os.path.exists(vigil_cmd[0]):
            vigil_cmd = [sys.executable, "-m", "vigil.client.cli", "--no-autostart", "status"]
        t_status = wall(vigil_cmd, env=home.env, runs=runs)
        t_floor = wall([sys.executable, "-I", "-c", "pass"], runs=runs)
        table.add("`vigil status` wall (median)", f"{t_status * 1e3:.1f} ms",
                  "python3 -I -c pass", f"{t_floor * 1e3:.1f} ms",
                  f"{t_status / t_floor:.2f}×", "≤ 3×")
    table.print()
    return table


if __name__ == "__main__":
    main()
