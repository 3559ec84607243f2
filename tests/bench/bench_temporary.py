"""Managed temporary helpers (issue 16): what a thread's managed directory costs.

- `Initialize` of a resumed thread (it makes sure the directory is there and private) next
  to `ping` on the same connection: the whole call against the RPC floor;
- `Temporary list` of a directory of 100 helpers next to listing and lstat-ing the same
  directory in this process (`os.scandir` + `lstat`: the floor of any listing);
- `Temporary release_temporary` of one helper, with no execution running and with 8 (2
  with --quick) running executions of the thread whose processes /proc is read for, next to `list`
  (the release measures the directory twice and then checks activity).

Run: python -m tests.bench.bench_temporary [--quick]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from tests.bench.common import Table, bench_home, percentile
from tests.support.executions import Session, kill_leftover_children


def timed(fn, calls: int) -> float:
    """p50 of `fn()` in µs, after a few warm-up calls."""
    for _ in range(min(20, calls)):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return percentile(times, 50) * 1e6


def release_p50(s: Session, d: Path, calls: int) -> float:
    times = []
    for i in range(calls):
        (d / f"r{i}").write_text("r")
        revision = s.call("Temporary", action={"type": "list"})["revision"]
        t0 = time.perf_counter()
        result = s.call("Temporary", action={"type": "release_temporary", "names": [f"r{i}"],
                                             "revision": revision})
        times.append(time.perf_counter() - t0)
        assert result["results"][0]["status"] == "released", result
    return percentile(times, 50) * 1e6


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    calls = 5 if args.quick else 300
    running = 2 if args.quick else 8
    table = Table("temporary (managed helpers)")
    with bench_home() as home:
        ws = home.root / "ws"
        ws.mkdir()
        s = Session(home, ws)
        try:
            init = {"workspace_root": str(ws), "thread_name": "cli"}
            t_init = timed(lambda: s.client.call("Initialize", init), calls)
            t_ping = timed(lambda: s.client.call("ping"), calls)
            table.add("Initialize (resumed) p50", f"{t_init:.0f} µs", "ping", f"{t_ping:.0f} µs",
                      f"{t_init / t_ping:.1f}×")
            d = Path(s.call("Temporary", action={"type": "list"})["directory"])
            for i in range(100):
                (d / f"helper-{i:03}.py").write_text("x" * i)
            t_list = timed(lambda: s.call("Temporary", action={"type": "list"}), calls)

            def scan() -> None:
                with os.scandir(d) as it:
                    for entry in it:
                        entry.stat(follow_symlinks=False)

            t_scan = timed(scan, calls)
            table.add("Temporary list, 100 helpers, p50", f"{t_list:.0f} µs",
                      "os.scandir + lstat in-process", f"{t_scan:.0f} µs",
                      f"{t_list / t_scan:.1f}×")
            t_release = release_p50(s, d, calls)
            table.add("release 1 helper, 0 running, p50", f"{t_release:.0f} µs", "list",
                      f"{t_list:.0f} µs", f"{t_release / t_list:.1f}×")
            for _ in range(running):
                s.run(argv=["sleep", "600"])
            t_busy = release_p50(s, d, calls)
            table.add(f"release 1 helper, {running} running, p50", f"{t_busy:.0f} µs", "list",
                      f"{t_list:.0f} µs", f"{t_busy / t_list:.1f}×")
        finally:
            s.close()
            kill_leftover_children()
    table.print()
    return table


if __name__ == "__main__":
    main()
