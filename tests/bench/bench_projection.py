"""Benchmark: the UI projection (`subscribe`, issue 15 part B).

1. Flood: 100 executions print as fast as they can for a few seconds while one subscriber
   reads; figures: projection events delivered per second to that subscriber, and the
   events it was told were dropped. Peer: the same daemon's output ingest in the same run
   (bytes/s of all 100 floods together): what the projection summarizes, at a few events
   per execution a tick whatever the byte rate.
2. RPC ping p50 with 10 subscribers attached (each reading its stream in a thread) while 20
   executions print, vs none attached with the same 20 printing. Target (issue): ≤ 1.2×.

Run: python -m tests.bench.bench_projection [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from tests.bench.common import Table
from tests.support.daemon import VigilHome
from tests.support.executions import Session

#: A flood a few seconds long: `yes` cut to a bounded size, so it ends by itself.
FLOOD = "yes 'projection flood line' | head -c {size}"


class Reader(threading.Thread):
    """One subscriber reading its stream until stopped (the connection is closed)."""

    def __init__(self, home: VigilHome, ws):
        super().__init__(daemon=True)
        self.s = Session(home, ws)
        self.s.call("subscribe")
        self.events = 0
        self.dropped = 0
        self.ends = 0
        #: Set once this many executions ended (the flood's end events arrived).
        self.expected_ends = 0
        self.all_ended = threading.Event()
        self.stopping = False

    def run(self) -> None:
        try:
            while True:
                event = self.s.client.next_event()
                self.events += 1
                kind = event["kind"]
                if kind == "DROPPED":
                    self.dropped += event["dropped"]
                elif kind in ("EXECUTION_COMPLETE", "EXECUTION_FAILED", "EXECUTION_CANCELLED"):
                    self.ends += 1
                    if self.ends == self.expected_ends:
                        self.all_ended.set()
        except Exception:
            if not self.stopping:
                raise

    def stop(self) -> None:
        self.stopping = True
        self.s.close()


def _flood(s: Session, count: int, size: int) -> list[str]:
    return [e["execution_id"] for e in s.run_many(
        [{"command": FLOOD.format(size=size)} for _ in range(count)])]


def _ping_p50(s: Session, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        s.client.call("ping", {})
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="UI projection benchmarks (issue 15)")
    parser.add_argument("--quick", action="store_true", help="small sizes: only checks it runs")
    args = parser.parse_args(argv)
    executions = 10 if args.quick else 100
    size = 100_000 if args.quick else 300_000
    pings = 50 if args.quick else 500
    table = Table("projection (subscribe)")
    home = VigilHome()
    try:
        home.start_daemon()
        ws = home.root / "ws"
        ws.mkdir()
        s = Session(home, ws)
        try:
            # 1. the flood
            reader = Reader(home, ws)
            reader.expected_ends = executions
            reader.start()
            t0 = time.perf_counter()
            ids = _flood(s, executions, size)
            total = sum(s.wait_exit(eid, timeout=600)["output"]["total_bytes"] for eid in ids)
            reader.all_ended.wait(60)  # the end events may still be in flight
            elapsed = time.perf_counter() - t0
            reader.stop()
            table.add(f"events delivered, {executions} executions flooding",
                      f"{reader.events / elapsed:,.0f} events/s",
                      "output ingested (same run)", f"{total / elapsed / 1e6:,.1f} MB/s")
            table.add("events dropped for the subscriber", f"{reader.dropped}",
                      "events delivered", f"{reader.events}")
            print(f"flood: {table.rows[-2:]}", file=sys.stderr, flush=True)  # progress
            # 2. ping with 10 subscribers vs none, 20 executions printing each time
            results = {}
            for subscribers in (0, 10):
                readers = [Reader(home, ws) for _ in range(subscribers)]
                for r in readers:
                    r.start()
                running = _flood(s, 20, size)
                _ping_p50(s, max(5, pings // 10))  # warm up
                results[subscribers] = _ping_p50(s, pings)
                for eid in running:
                    s.wait_exit(eid, timeout=600)
                for r in readers:
                    r.stop()
            base, loaded = results[0], results[10]
            table.add("RPC ping p50, 10 subscribers, 20 executions printing",
                      f"{loaded * 1e3:.3f} ms", "no subscriber (same load)",
                      f"{base * 1e3:.3f} ms", f"{loaded / base:.2f}×", "≤ 1.2×")
        finally:
            s.close()
    finally:
        home.cleanup()
    table.print()
    return table


if __name__ == "__main__":
    main()
