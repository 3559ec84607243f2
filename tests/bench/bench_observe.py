"""Benchmark: observe and wait (issue 5).

- wake latency, child write → waiter return: a waiter is parked (`Execution wait`, events
  `output`, `after` the previous answer's cursor) while the child, echo off, answers each line
  sent with `input`; measured from the `input` call to the waiter's reply. This includes the
  input round trip and the ingest batch (`ingest_batch_seconds`, 10 ms): it is what a client
  sees. Peer: a bare `input` round trip on the same daemon (the floor of this measurement).
- `observe` of 32 items (32 finished executions, 2 KiB pages each, ~2 KiB of output each):
  p50 of the whole call. Target (issue): ≤ 5 ms p50. Peer: one `get` round trip.

Recognizer evaluation per screen is bench_recognize's.

Run: python -m tests.bench.bench_observe [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from tests.bench.common import Table, bench_home, percentile
from tests.support.executions import Session, python_child

RESPONDER = (
    "import sys, termios\n"
    "a = termios.tcgetattr(0); a[3] &= ~termios.ECHO; termios.tcsetattr(0, termios.TCSANOW, a)\n"
    "print('ready')\n"
    "for n, line in enumerate(sys.stdin):\n"
    "    print('got', n)\n"
)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def bench_wake(table: Table, s: Session, wakes: int) -> None:
    eid = s.run(argv=python_child(RESPONDER))["execution_id"]
    s.read_until(eid, lambda p: "ready" in p["text"])
    waiter = s.home.client()
    cursor = s.execution({"type": "wait", "execution_ids": [eid],
                          "timeout_seconds": 0})["data"]["catalog_cursor"]
    times, floor = [], []
    for _ in range(wakes):
        rid = waiter.send("Execution", s.scoped(action={
            "type": "wait", "execution_ids": [eid], "after": cursor, "events": ["output"],
            "timeout_seconds": 10}))
        t0 = time.perf_counter()
        s.call("input", execution_id=eid, text="x\n")
        floor.append(time.perf_counter() - t0)
        data = waiter.receive(rid)["data"]
        times.append(time.perf_counter() - t0)
        assert data["outcome"] == "changed", data
        cursor = data["catalog_cursor"]
    waiter.close()
    table.add(f"wait wake latency p50 ({wakes} wakes)", _ms(statistics.median(times)),
              "input round trip p50", _ms(statistics.median(floor)), "", "≤ 10 ms")
    table.add("wait wake latency p99", _ms(percentile(times, 99)),
              "input round trip p99", _ms(percentile(floor, 99)))


def bench_observe32(table: Table, s: Session, calls: int) -> None:
    ids = [s.run(argv=python_child("print('x' * 2100)"))["execution_id"] for _ in range(32)]
    for eid in ids:
        s.wait_exit(eid)
    items = [{"execution_id": eid, "page_bytes": 2048} for eid in ids]
    times, peer = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        r = s.execution({"type": "observe", "items": items})
        times.append(time.perf_counter() - t0)
        assert r.get("status", "ok") == "ok"
        assert all(len(i["page"]["text"]) == 2048 for i in r["data"]["items"])
        t0 = time.perf_counter()
        s.get(ids[0])
        peer.append(time.perf_counter() - t0)
    table.add(f"observe 32 items × 2 KiB p50 ({calls} calls)", _ms(statistics.median(times)),
              "get (1 record) p50", _ms(statistics.median(peer)),
              f"{statistics.median(times) / statistics.median(peer):.1f}×", "≤ 5 ms")
    table.add("observe 32 items × 2 KiB p99", _ms(percentile(times, 99)))


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="observe and wait benchmarks (issue 5)")
    parser.add_argument("--quick", action="store_true", help="small sizes: only checks it runs")
    args = parser.parse_args(argv)
    wakes, calls = (10, 10) if args.quick else (200, 200)
    table = Table("observe (observe and wait)")
    with bench_home() as home:
        ws = home.root / "ws"
        ws.mkdir()
        s = Session(home, ws)
        try:
            bench_wake(table, s, wakes)
            bench_observe32(table, s, calls)
        finally:
            s.close()
    table.print()
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
