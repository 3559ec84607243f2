"""Benchmark: turn archives and `get_trace` (issue 15, part A).

A real daemon follows the fake agent's Claude-format log of one turn of 200 steps (each a
reply with text and a tool call, and a ~1 KB result), archives it (balanced redaction, the
default), and `get_trace` reads it back through the socket in each mode. Each mode's p50 is
printed next to `Execution get` of the same execution measured in the same run, interleaved
(the peer: one scoped catalog read through the same seam). Target (issue): ≤ 5 ms.

Run: python -m tests.bench.bench_archive [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from tests.bench.common import Table
from tests.integration.test_agent_prompt import FAKE_AGENT
from tests.support.daemon import VigilHome, wait_for
from tests.support.executions import Session

STEPS = 200


def _script(steps: int) -> dict:
    begin = []
    for n in range(steps - 1):
        begin.append({"type": "assistant", "message": {
            "id": f"msg_{n}", "role": "assistant", "model": "claude-fake", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": f"Step {n}: looking at the next file. " * 4},
                        {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                         "input": {"command": f"sed -n 1,40p src/module_{n}.py"}}]}})
        begin.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}",
             "content": f"line {n}: def function_{n}(x): return x\n" * 28}]}})
    end = [{"type": "assistant", "message": {
        "id": "msg_end", "role": "assistant", "model": "claude-fake", "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "All modules read."}]}}]
    return {"begin": begin, "end": end}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="turn archive benchmarks (issue 15)")
    parser.add_argument("--quick", action="store_true", help="few calls: only checks it runs")
    args = parser.parse_args(argv)
    calls = 20 if args.quick else 300
    table = Table("archive (turn archives and get_trace)")
    home = VigilHome()
    try:
        home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
        ws = home.root / "ws"
        ws.mkdir()
        script = home.root / "script.json"
        script.write_text(json.dumps(_script(STEPS)))
        s = Session(home, ws)
        try:
            eid = s.run(argv=[FAKE_AGENT], env={"FAKE_AGENT_SCRIPT": str(script)})["execution_id"]
            wait_for(lambda: s.get(eid)["recognized_state"] == "awaiting_input", timeout=60,
                     what="the fake agent's prompt box")
            receipt = s.call("Agent", action="prompt", target=eid, prompt_id="b1", text="read all",
                             recognizer="claude", timeout_seconds=30)["data"]["receipt"]
            ref = receipt["archive_ref"]
            summary = wait_for(lambda: (t := s.call("Agent", action="get", target=eid)["data"][
                "turn"]) and t["state"] == "committed" and t, timeout=60,
                what="the 200-step turn to be committed")
            size = (home.state / "archives" / ref[:2] / ref[2:4] / ref).stat().st_size
            table.add(f"archive of {summary['steps']} steps on disk", f"{size / 1024:.0f} KiB")
            for mode in ("summary", "tool_calls", "detail"):
                params = dict(action="get_trace", archive_ref=ref, mode=mode)
                for _ in range(max(3, calls // 10)):  # warm up
                    s.call("Agent", **params)
                traced, got = [], []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    data = s.call("Agent", **params)["data"]
                    t1 = time.perf_counter()
                    s.execution({"type": "get", "execution_id": eid})
                    t2 = time.perf_counter()
                    traced.append(t1 - t0)
                    got.append(t2 - t1)
                p50, peer = statistics.median(traced), statistics.median(got)
                table.add(f"get_trace p50, {mode} ({STEPS} steps, {len(data['steps'])} shown, "
                          f"{data['rendered_chars']} chars)", _ms(p50), "Execution get p50",
                          _ms(peer), f"{p50 / peer:.2f}×", "≤ 5 ms")
        finally:
            s.close()
    finally:
        home.cleanup()
    table.print()
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
