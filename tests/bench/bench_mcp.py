"""Benchmark: the MCP server and usage telemetry (issue 13).

- MCP `Execution list` round trip: `vigil mcp` over stdio, driven by the MCP SDK's own
  `stdio_client` + `ClientSession` (JSON-RPC over pipes, the SDK's validation of the result
  against the tool's output schema, the server's call to the daemon), p50 and p99. Peer: the
  same call over the daemon's socket with the blocking client. Target: ≤ 3 ms p50.
- RPC `ping` p50 with the usage log on and off, two daemons of the same build measured in
  the same run, interleaved in rounds so drift hits both. Target: on/off ≤ 1.15×. `ping`
  (like `hello` and `status`) is a probe, not work, and leaves no usage events: the figure
  is what the seam costs every call. A logged call pays for its events too: `Execution get`
  is measured the same way beside it (our own bar: the same ≤ 1.15×).
- `vigil report` over a 100,000-line usage log (every kind of event, phases, counters), as
  a whole process (`--json`). Peer: the floor — splitting the file and decoding every line
  with msgspec in this process. Target: ≤ 2 s.

Run: python -m tests.bench.bench_mcp [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import msgspec

from tests.bench.common import Table, bench_home, percentile
from tests.support.executions import Session
from tests.support.mcp import mcp_stdio


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def mcp_list_round_trips(home, workspace: Path, calls: int) -> list[float]:
    async def body() -> list[float]:
        async with mcp_stdio(home) as m:
            await m.initialize(workspace, thread_name="cli")
            args = {"thread_id": m.thread_id, "workspace_root": m.workspace_root,
                    "action": {"type": "list"}}
            for _ in range(min(50, calls)):  # warm-up (schema validators compiled, pool filled)
                await m.session.call_tool("Execution", args)
            times = []
            for _ in range(calls):
                t0 = time.perf_counter()
                result = await m.session.call_tool("Execution", args)
                times.append(time.perf_counter() - t0)
                assert not result.is_error
            return times

    return anyio.run(body)


def socket_list_round_trips(s: Session, calls: int) -> list[float]:
    params = s.scoped(action={"type": "list"})
    for _ in range(min(50, calls)):
        s.client.call_typed("Execution", params)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        s.client.call_typed("Execution", params)
        times.append(time.perf_counter() - t0)
    return times


def on_off_p50s(on_call, off_call, calls: int, rounds: int) -> tuple[float, float]:
    """Median of each daemon's call, measured in alternating rounds."""
    on, off = [], []
    for call in (on_call, off_call):
        for _ in range(min(300, calls // 4)):
            call()
    for _ in range(rounds):
        for call, sink in ((on_call, on), (off_call, off)):
            for _ in range(calls // rounds):
                t0 = time.perf_counter()
                call()
                sink.append(time.perf_counter() - t0)
    return percentile(on, 50), percentile(off, 50)


def get_call(home, ws: Path):
    """`Execution get` of one finished execution, on a session of its own."""
    s = Session(home, ws)
    eid = s.run(argv=["true"])["execution_id"]
    params = s.scoped(action={"type": "get", "execution_id": eid})
    return s, lambda: s.client.call("Execution", params)


def synthetic_log(path: Path, lines: int) -> int:
    """A usage log of about `lines` lines as the daemon writes them: per call a start, one
    to four phase pairs and a terminal event with counters."""
    rng = random.Random(13)
    enc = msgspec.json.Encoder()
    tools = [("Execution", "list", "native"), ("Execution", "read", "native"),
             ("Execution", "observe", "native"), ("Execution", "wait", "native"),
             ("Agent", "prompt", "native"), ("BashCommand", "command", None), ("ping", None, None)]
    out, n, ts = bytearray(), 0, 1_700_000_000_000
    while n < lines:
        tool, action, backend = rng.choice(tools)
        cid = f"{rng.getrandbits(64):016x}"
        ts += rng.randint(1, 50)
        out += enc.encode({"event": "tool_started", "usage_call_id": cid, "ts_ms": ts,
                           "tool": tool, "action": action, "backend": backend,
                           "usage_schema": 1}) + b"\n"
        phases = {}
        for phase in rng.sample(["session_admission", "catalog", "wait_sleep",
                                 "response_finalization"], rng.randint(1, 4)):
            ms = rng.randint(0, 3)
            phases[phase] = {"count": 1, "ms": ms}
            out += enc.encode({"event": "tool_phase", "usage_call_id": cid, "ts_ms": ts,
                               "edge": "start", "phase": phase, "usage_schema": 1}) + b"\n"
            out += enc.encode({"event": "tool_phase", "usage_call_id": cid, "ts_ms": ts,
                               "edge": "finish", "phase": phase, "ms": ms,
                               "usage_schema": 1}) + b"\n"
        end = {"event": "tool_call", "usage_call_id": cid, "ts_ms": ts, "tool": tool,
               "action": action, "backend": backend, "outcome": "ok",
               "duration_ms": rng.randint(0, 40), "usage_schema": 1, "workflow_schema": 1,
               "client": "vigil-mcp", "principal_kind": "local", "response_bytes": 900,
               "phases": phases}
        if action == "observe":
            end.update(observe_schema=1, batch_items=3, observe_requested_items=3,
                       observe_returned_items=3, observe_items_with_issues=rng.randint(0, 1))
        elif action == "command":
            end.update(effective_wait_policy="synchronous", effective_wait_ms=5000,
                       effective_wait_mode="synchronous")
        elif action == "read":
            end.update(read_source="output", read_returned_bytes=2048, read_has_more=True)
        out += enc.encode(end) + b"\n"
        n += 2 + 2 * len(phases)
    path.write_bytes(out)
    return n


def report_wall(path: Path, runs: int) -> tuple[float, float]:
    """(median wall of `vigil report --json` over the log, median in-process decode floor)."""
    walls, floors = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "vigil.client.cli", "report", "--log",
                              str(path), "--json", "--last", "0"], capture_output=True, check=True)
        walls.append(time.perf_counter() - t0)
        assert json.loads(out.stdout)["linesSeen"] > 0
        t0 = time.perf_counter()
        decode = msgspec.json.Decoder().decode
        for line in path.read_bytes().splitlines():
            decode(line)
        floors.append(time.perf_counter() - t0)
    return sorted(walls)[len(walls) // 2], sorted(floors)[len(floors) // 2]


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    calls = 30 if args.quick else 2000
    table = Table("mcp (MCP server and usage telemetry)")
    with bench_home() as home, bench_home("usage_log_enabled = false\n") as off_home:
        ws = home.root / "ws"
        ws.mkdir()
        s = Session(home, ws)
        try:
            for i in range(5):
                s.run(argv=["true"], name=f"r{i}")
            sock = socket_list_round_trips(s, calls)
        finally:
            s.close()
        mcp = mcp_list_round_trips(home, ws, calls)
        p50, sp50 = percentile(mcp, 50), percentile(sock, 50)
        table.add(f"MCP Execution list p50 (stdio, SDK client, {calls} calls)", _ms(p50),
                  "same call over the socket", _ms(sp50), f"{p50 / sp50:.1f}×", "≤ 3 ms")
        table.add("MCP Execution list p99", _ms(percentile(mcp, 99)),
                  "socket p99", _ms(percentile(sock, 99)))
        n = 600 if args.quick else 20000
        with home.client() as c_on, off_home.client() as c_off:
            on, off = on_off_p50s(lambda: c_on.call("ping"), lambda: c_off.call("ping"), n, 10)
        table.add("ping p50, usage log on", f"{on * 1e6:.0f} µs", "usage log off",
                  f"{off * 1e6:.0f} µs", f"{on / off:.2f}×", "≤ 1.15×")
        off_ws = off_home.root / "ws"
        off_ws.mkdir()
        s_on, get_on = get_call(home, ws)
        s_off, get_off = get_call(off_home, off_ws)
        try:
            on, off = on_off_p50s(get_on, get_off, n // 2, 10)
        finally:
            s_on.close()
            s_off.close()
        table.add("Execution get p50 (logged), usage log on", f"{on * 1e6:.0f} µs",
                  "usage log off", f"{off * 1e6:.0f} µs", f"{on / off:.2f}×", "≤ 1.15× (ours)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "usage.jsonl"
        n = synthetic_log(path, 5_000 if args.quick else 100_000)
        wall_s, floor_s = report_wall(path, 1 if args.quick else 5)
        table.add(f"`vigil report --json`, {n:,} lines (wall)", f"{wall_s:.2f} s",
                  "decode every line (floor)", f"{floor_s:.2f} s", f"{wall_s / floor_s:.1f}×",
                  "≤ 2 s" if not args.quick else "")
    table.print()
    return table


if __name__ == "__main__":
    main()
