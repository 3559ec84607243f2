"""Normalizing an agent's session log (issue 14): a Claude-format log of 100 MB, generated
here, fed to `ClaudeNormalizer` in follower-sized chunks; its MB/s next to the floor of any
line-by-line reader measured in the same run: `json.loads` of its lines alone (and
msgspec's untyped decode of them, the faster floor).

The log mixes what a working session writes: prompts, replies spread over several lines
(thinking, text, tool_use) with the usual metadata and usage, tool results of a few KiB,
progress and snapshot lines the normalizer skips.

Run: python -m tests.bench.bench_transcript_providers [--quick] [--mb N]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

import msgspec

from tests.bench.common import Table
from vigil.daemon.transcript.providers import ClaudeNormalizer

MB = 1_000_000
CHUNK = 4 * 1024 * 1024  # the follower's default read (transcript_follow_read_bytes)
SESSION = "5e1f0c3a-0000-4000-8000-00000000be11"
WORDS = ("the tests fail because the fixture opens the file twice and the second handle "
         "sees a truncated buffer so the parser reads half a line").split()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _line(kind: str, seq: int, rng: random.Random, **fields) -> bytes:
    obj = {"parentUuid": f"u{seq - 1}", "isSidechain": False, "userType": "external",
           "cwd": "/work/project", "sessionId": SESSION, "version": "2.0.0", "gitBranch": "main",
           "type": kind, **fields, "uuid": f"u{seq}",
           "timestamp": f"2025-06-01T10:{seq // 60 % 60:02d}:{seq % 60:02d}.000Z"}
    return json.dumps(obj, separators=(",", ":")).encode()


def generate(total: int, seed: int = 14) -> bytes:
    """A Claude-format log of about `total` bytes."""
    rng = random.Random(seed)
    out: list[bytes] = []
    size = seq = turn = 0
    while size < total:
        turn += 1
        lines = [_line("user", seq := seq + 1, rng, message={"role": "user", "content": _text(rng, 20)})]
        for step in range(rng.randint(2, 5)):
            mid = f"msg_{turn}_{step}"
            usage = {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(10, 900),
                     "cache_read_input_tokens": 1200}
            head = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "stop_reason": None, "usage": usage}
            lines.append(_line("assistant", seq := seq + 1, rng, requestId=f"req_{turn}_{step}", message={
                **head, "content": [{"type": "thinking", "thinking": _text(rng, 120), "signature": "s" * 200}]}))
            lines.append(_line("assistant", seq := seq + 1, rng, requestId=f"req_{turn}_{step}", message={
                **head, "content": [{"type": "text", "text": _text(rng, 60)}]}))
            tool_id = f"toolu_{turn}_{step}"
            lines.append(_line("assistant", seq := seq + 1, rng, requestId=f"req_{turn}_{step}", message={
                **head, "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                     "input": {"command": "pytest -q tests/unit", "timeout": 120000}}]}))
            lines.append(_line("progress", seq := seq + 1, rng, data={"type": "bash_progress", "output": "..."}))
            output = _text(rng, rng.randint(100, 1500))
            lines.append(_line("user", seq := seq + 1, rng, message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": output}]},
                toolUseResult={"stdout": output, "stderr": "", "interrupted": False}))
        lines.append(_line("assistant", seq := seq + 1, rng, requestId=f"req_{turn}_end", message={
            "id": f"msg_{turn}_end", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": _text(rng, 40)}], "stop_reason": "end_turn", "usage": {}}))
        lines.append(json.dumps({"type": "file-history-snapshot", "messageId": f"u{seq}",
                                 "snapshot": {"trackedFileBackups": {}}}).encode())
        for line in lines:
            out.append(line)
            size += len(line) + 1
    return b"\n".join(out) + b"\n"


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def normalize(log: bytes) -> int:
    normalizer = ClaudeNormalizer()
    events = 0
    view = memoryview(log)
    for start in range(0, len(log), CHUNK):
        events += len(normalizer.feed(bytes(view[start:start + CHUNK])))
    events += len(normalizer.close())
    return events


def json_loads_lines(log: bytes) -> None:
    loads = json.loads
    for line in log.split(b"\n"):
        if line:
            loads(line)


def msgspec_lines(log: bytes) -> None:
    decode = msgspec.json.decode
    for line in log.split(b"\n"):
        if line:
            decode(line)


def main(argv: list[str] | None = None) -> Table:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 MB, one run: only check it still runs")
    ap.add_argument("--mb", type=int, default=None, help="log size in MB (default 100)")
    ap.add_argument("--runs", type=int, default=None, help="best of N runs (default 3)")
    args = ap.parse_args(argv)
    mb = args.mb or (5 if args.quick else 100)
    runs = args.runs or (1 if args.quick else 3)
    log = generate(mb * MB)
    lines = log.count(b"\n")
    events = normalize(log)
    ours = best_of(runs, lambda: normalize(log))
    loads = best_of(runs, lambda: json_loads_lines(log))
    floor = best_of(runs, lambda: msgspec_lines(log))
    size = len(log) / MB
    table = Table("transcript providers (agent logs)")
    table.add(f"normalize {size:.0f} MB Claude log ({lines} lines, {events} events)",
              f"{size / ours:.0f} MB/s", "json.loads of its lines", f"{size / loads:.0f} MB/s",
              f"{loads / ours:.2f}×", "≥ 1× json.loads (ours)")
    table.add("  the same, msgspec untyped decode of its lines", f"{size / ours:.0f} MB/s",
              "msgspec.json.decode", f"{size / floor:.0f} MB/s", f"{floor / ours:.2f}×", "")
    table.print()
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
