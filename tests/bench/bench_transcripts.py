"""Benchmark: exchange transcripts (issue 14).

- What recording costs a call: a recorded call (`Execution get`: its `tool.call` and
  `tool.result` lines written and fanned out) p50 on a daemon with transcripts on, next to
  the same call on a daemon with them off, in the same run; `ping` (a probe, never recorded)
  on both as the control. Target (issue): ≤ 1.2×.
- The writer with a stalled subscriber: events/s a recorder appends while 8 subscribers
  drain as fast as they can, next to the same with one of the 8 never reading (its buffer
  fills, then every event is dropped for it alone). Target (issue): ≥ 0.95×.

Agent-log normalizing is bench_transcript_providers'.

Run: python -m tests.bench.bench_transcripts [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from tests.bench.common import Table, bench_home
from tests.support.executions import Session
from vigil.daemon.settings import Settings
from vigil.daemon.transcript.fanout import FanOut
from vigil.daemon.transcript.files import TranscriptFiles
from vigil.daemon.transcript.recorder import Recorder
from vigil.protocol.transcript import StepStartedPayload


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def _call_p50(s: Session, calls: int, eid: str) -> tuple[float, float]:
    """p50 of a recorded call (Execution get) and of ping, interleaved."""
    got, pinged = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        s.execution({"type": "get", "execution_id": eid})
        t1 = time.perf_counter()
        s.client.call("ping", {})
        t2 = time.perf_counter()
        got.append(t1 - t0)
        pinged.append(t2 - t1)
    return statistics.median(got), statistics.median(pinged)


def bench_calls(table: Table, calls: int) -> None:
    figures = {}
    for config in ("transcripts_enabled = true\n", "transcripts_enabled = false\n"):
        with bench_home(config) as home:
            ws = home.root / "ws"
            ws.mkdir()
            s = Session(home, ws)
            try:
                eid = s.run(argv=["true"])["execution_id"]
                s.wait_exit(eid)
                _call_p50(s, calls // 10, eid)  # warm up
                figures[config] = _call_p50(s, calls, eid)
            finally:
                s.close()
    on, off = figures["transcripts_enabled = true\n"], figures["transcripts_enabled = false\n"]
    table.add(f"recorded call (Execution get) p50, transcripts on ({calls} calls)", _us(on[0]),
              "transcripts off", _us(off[0]), f"{on[0] / off[0]:.2f}×", "≤ 1.2×")
    table.add("ping p50 (never recorded), transcripts on", _us(on[1]), "transcripts off",
              _us(off[1]), f"{on[1] / off[1]:.2f}×", "")


async def _append_rate(events: int, stalled: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="vgb") as tmp:
        s = Settings()
        recorder = Recorder(TranscriptFiles(Path(tmp), s), FanOut(s.subscriber_buffer_events), s)
        run_id = "c" * 32
        readers = [recorder.fanout.subscribe() for _ in range(7 if stalled else 8)]
        if stalled:
            recorder.fanout.subscribe()  # never read
        payload = StepStartedPayload(kind="command")
        async with trio.open_nursery() as nursery:
            for sub in readers:
                async def drain(sub=sub):
                    try:
                        while True:
                            await sub.receive()
                    except trio.EndOfChannel:
                        pass
                nursery.start_soon(drain)
            t0 = time.perf_counter()
            for i in range(events):
                recorder.emit(run_id, "step.started", payload, path=f"command.{i}")
                if i % 64 == 63:
                    await trio.lowlevel.checkpoint()  # the readers run as a trio task would let them
            elapsed = time.perf_counter() - t0
            recorder.close()
        return events / elapsed


def bench_fanout(table: Table, events: int) -> None:
    rates = {}
    for stalled in (False, True, False, True):  # interleaved: drift hits both alike
        rates.setdefault(stalled, []).append(trio.run(_append_rate, events, stalled))
    free, with_stalled = max(rates[False]), max(rates[True])
    table.add(f"events appended/s, 8 subscribers, one stalled ({events} events)",
              f"{with_stalled:,.0f}/s", "8 subscribers all reading", f"{free:,.0f}/s",
              f"{with_stalled / free:.2f}×", "≥ 0.95×")


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="transcript benchmarks (issue 14)")
    parser.add_argument("--quick", action="store_true", help="small sizes: only checks it runs")
    args = parser.parse_args(argv)
    calls, events = (100, 2000) if args.quick else (3000, 100_000)
    table = Table("transcripts (recording and fan-out)")
    bench_calls(table, calls)
    bench_fanout(table, events)
    table.print()
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
