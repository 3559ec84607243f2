"""Benchmark: time to recognize one screen with each built-in manifest.

Run: .venv/bin/python tests/bench/bench_recognize.py [--repeat N]

Screens are the fixtures (50 rows padded to 200 columns, as pyte renders them) plus a
worst case per manifest: a full 50×200 screen of text that no rule matches, so every rule
and region is evaluated. Each measurement builds a fresh RecognitionInput view, as the
daemon does per observation. Target (issue brief): p50 ≤ 1 ms per screen and manifest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from vigil.daemon.recognize import BUILTIN_ORDER, RecognitionInput, evaluate, load_builtins

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "screens"
TARGET_P50_MS = 1.0


def fixture_inputs() -> list[RecognitionInput]:
    out = []
    for path in sorted(FIXTURES.glob("*.txt")):
        rows = path.read_text(encoding="utf-8").split("\n")[:-1]
        cursor = (0, 0)
        for i, r in enumerate(rows):
            if "⌶" in r:
                cursor = (i, r.index("⌶"))
                rows[i] = r.replace("⌶", "")
        out.append(RecognitionInput(lines=[r.ljust(200) for r in rows], cursor=cursor))
    return out


def worst_case() -> RecognitionInput:
    text = "the quick brown fox jumps over the lazy dog, 0123456789 " * 4
    return RecognitionInput(lines=[text[i % 50 : i % 50 + 200] for i in range(50)], cursor=(49, 199))


def bench(manifest, inputs, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        for inp in inputs:
            t0 = time.perf_counter_ns()
            evaluate(manifest, inp)
            times.append((time.perf_counter_ns() - t0) / 1e6)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    manifests = load_builtins()
    fixtures, worst = fixture_inputs(), [worst_case()]
    ok = True
    print(f"{'manifest':<10} {'screens':<9} {'n':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name in BUILTIN_ORDER:
        for label, inputs in (("fixtures", fixtures), ("worst", worst)):
            t = sorted(bench(manifests[name], inputs, args.repeat))
            p50, p99 = statistics.median(t), t[int(len(t) * 0.99) - 1]
            ok &= p50 <= TARGET_P50_MS
            print(f"{name:<10} {label:<9} {len(t):>6} {p50:>8.3f} {p99:>8.3f} {t[-1]:>8.3f}")
    print(f"target p50 <= {TARGET_P50_MS} ms: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
