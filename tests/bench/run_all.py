"""Every benchmark of the project in one command and one process tree, then one summary.

Run: python -m tests.bench.run_all [--quick]      (make bench / make bench-quick)

Each benchmark prints its own figures; the summary repeats every figure that has a target
from the issues, with the peer measured in the same run (bare PTY, tmux pane, the
interpreter floor, bare LMDB, plain pyte) and the ratio. Benchmarks never fail on a number
(issue 7: the report is for reading); the command exits 1 only when a benchmark no longer
runs — it crashed, or its output lacks the title that proves it got to the end.

In a full run the benchmarks run one at a time (so none disturbs another's figures);
those with `main(argv) -> Table` in this process, the others as child processes
(`python -m tests.bench.X ARGS`) whose printed output is passed through and read back for
the summary. `--quick` only checks that each still runs: every benchmark is then a child
process and they all run at once, so the check takes as long as the slowest one.

Budget (issue 7): the full run ≤ 3 minutes on 2 cores. Where a benchmark's own full run
does not fit in that, it runs here with smaller sizes and the summary says so (`note`).
"""

from __future__ import annotations

import argparse
import importlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.bench.common import Table

REPO = Path(__file__).resolve().parents[2]

Row = tuple[str, str, str, str, str, str]  # what, figure, peer, peer figure, ratio, target


def table_rows(printed: str, title: str) -> list[Row]:
    """Rows of a `common.Table` printed under `== title ==`, cut at the columns its dash
    line draws (cells may contain single spaces, never two)."""
    lines = printed.splitlines()
    try:
        start = lines.index(f"== {title} ==")
    except ValueError:
        return []
    dashes = lines[start + 2]
    cols = [m.start() for m in re.finditer(r"-+", dashes)] + [None]
    rows = []
    for line in lines[start + 3:]:
        if not line.strip() or line.startswith("== "):
            break
        cells = [line[a:b].strip() for a, b in zip(cols, cols[1:])]
        rows.append(tuple((cells + [""] * 6)[:6]))
    return rows


def _find(pattern: str, text: str) -> re.Match | None:
    return re.search(pattern, text, re.MULTILINE)


def screen_rows(out: str) -> list[Row]:
    rows: list[Row] = []
    if m := _find(r"^plain\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)", out):
        pyte, keeper, feed, copy = (float(x) for x in m.groups())
        rows.append(("keeper parse, plain lines", f"{keeper:.2f} MiB/s", "plain pyte", f"{pyte:.2f} MiB/s",
                     f"{keeper / pyte:.1f}×", ""))
        rows.append(("keeper feed (hot path), plain", f"{feed:.0f} MiB/s", "bytearray +=", f"{copy:.0f} MiB/s",
                     f"{feed / copy:.2f}×", "about a memcpy"))
    for name, mb, exact, cpu in re.findall(
            r"^flood (.+?)\s+(\d+)\s+(\d+ ms|never \(30 s\))\s+(-?\d+|nan) ms", out, re.MULTILINE):
        rows.append((f"exact screen after a {mb} MB flood: {name.strip()}", exact, "CPU time",
                     f"{cpu} ms", "", "≤ 1 s"))
    holds = re.findall(r"^hold (.+?)\s+(\d+x\d+)\s+([\d.]+) ms\s+([\d.]+) ms", out, re.MULTILINE)
    peers = {size: ms for name, size, ms, _ in holds if name.strip() == "plain text"}
    for name, size, ms, cpu in holds:
        if name.strip() != "plain text":
            rows.append((f"keeper longest hold, {name.strip()}, {size} (CPU {float(cpu):.1f} ms)",
                         f"{float(ms):.1f} ms", "plain text", f"{float(peers.get(size, 'nan')):.1f} ms",
                         "", "≤ 20 ms"))
    if m := _find(r"streaming (\d+) KB/s.*\n.*p50 ([\d.]+) ms.*p99 ([\d.]+) ms", out):
        rows.append((f"screen staleness at {m[1]} KB/s, p50", f"{m[2]} ms", "p99", f"{m[3]} ms", "", "≤ 50 ms"))
    return rows


def guardian_rows(out: str) -> list[Row]:
    g = _find(r"^guardian start \(launch_guardian\)\s+median\s+([\d.]+) ms", out)
    p = _find(r"^python -I -c pass\s+median\s+([\d.]+) ms", out)
    if not (g and p):
        return []
    g_ms, p_ms = float(g[1]), float(p[1])
    return [("guardian start (median)", f"{g_ms:.1f} ms", "python -I -c pass", f"{p_ms:.1f} ms",
             f"{g_ms / p_ms:.2f}×", "well under 100 ms")]


def recognize_rows(out: str) -> list[Row]:
    lines = re.findall(r"^(\w+)\s+(fixtures|worst)\s+\d+\s+([\d.]+)\s+([\d.]+)", out, re.MULTILINE)
    if not lines:
        return []
    name, kind, p50, p99 = max(lines, key=lambda r: float(r[2]))
    return [(f"recognizer eval p50, slowest ({name}, {kind})", f"{float(p50):.3f} ms", "p99",
             f"{float(p99):.3f} ms", "", "≤ 1 ms")]


@dataclass(frozen=True)
class Bench:
    """One benchmark: how to run it in each mode and how to read its figures."""

    module: str
    #: Text its output contains once it has got to the end (its table title).
    marker: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ("--quick",)
    #: True: `main(argv) -> Table` (run in this process in a full run).
    in_process: bool = False
    #: Exit codes meaning "it ran" (bench_recognize exits 1 when a target is missed).
    ran_codes: frozenset[int] = frozenset({0})
    #: Reads the summary rows from its printed output; default: its printed `Table`.
    extract: Callable[[str], list[Row]] | None = None
    #: Printed under the summary (e.g. why a full run uses smaller sizes).
    note: str = ""

    def rows(self, printed: str) -> list[Row]:
        if self.extract is not None:
            return self.extract(printed)
        return table_rows(printed, self.marker.removeprefix("== ").removesuffix(" =="))


BENCHMARKS: list[Bench] = [
    Bench("bench_rpc", "== RPC (foundation) ==", in_process=True),
    Bench("bench_store", "== store =="),
    Bench("bench_guardian_start", "guardian start (launch_guardian)", ("--runs", "20"), ("--runs", "3"),
          extract=guardian_rows),
    Bench("bench_exec", "== exec (executions) ==", in_process=True),
    Bench("bench_guardian_memory", "== guardian memory (idle) ==", in_process=True),
    Bench("bench_many", "== many executions ==", in_process=True),
    Bench("bench_screen", "== staleness while streaming", ("--flood-mb", "100", "--stream-seconds", "3"),
          ("--flood-mb", "2", "--stream-seconds", "0.5", "--parse-kib", "128", "--hold-kib", "64"), extract=screen_rows),
    Bench("bench_recognize", "target p50 <=", ("--repeat", "200"), ("--repeat", "5"),
          ran_codes=frozenset({0, 1}), extract=recognize_rows),
    Bench("bench_kernel", "== kernel evidence (issue 18) ==", in_process=True),
    Bench("bench_observe", "== observe (observe and wait) ==", in_process=True),
    Bench("bench_transcript_providers", "== transcript providers (agent logs) ==", in_process=True),
    Bench("bench_mcp", "== mcp (MCP server and usage telemetry) ==", in_process=True),
    Bench("bench_transcripts", "== transcripts (recording and fan-out) ==", in_process=True),
    Bench("bench_archive", "== archive (turn archives and get_trace) ==", in_process=True),
    Bench("bench_projection", "== projection (subscribe) ==", in_process=True),
    Bench("bench_cli", "== cli (the CLI as people use it) ==", in_process=True),
    Bench("bench_temporary", "== temporary (managed helpers) ==", in_process=True),
    # Its own full run (3 rounds of 50 MB `yes` and 100 MB floods, three 100 MB TUI floods)
    # takes over 2.5 minutes alone: here it runs with its --quick sizes.
    Bench("bench_shell", "== shell (screens and the persistent shell) ==", ("--quick",), in_process=True,
          note="bench_shell ran with its --quick sizes (5 MB yes, 10 MB floods, 1 round): its own full "
               "run (`python -m tests.bench.bench_shell`) takes > 2.5 min alone"),
]


@dataclass
class Outcome:
    bench: Bench
    seconds: float = 0.0
    rows: list[Row] = field(default_factory=list)
    failure: str = ""


def run_in_process(bench: Bench, argv: list[str]) -> Outcome:
    out = Outcome(bench)
    try:
        table = importlib.import_module(f"tests.bench.{bench.module}").main(argv)
    except Exception:
        traceback.print_exc()
        out.failure = "raised (traceback above)"
        return out
    if not isinstance(table, Table) or f"== {table.title} ==" != bench.marker:
        out.failure = f"main() did not return the table {bench.marker!r}"
    else:
        out.rows = list(table.rows)
        out.failure = failed_rows(out.rows)
    return out


def failed_rows(rows: list[Row]) -> str:
    """A benchmark marks a measurement that could not be taken with the figure FAILED."""
    broken = [r[0].strip() for r in rows if r[1] == "FAILED"]
    return f"measurement failed: {'; '.join(broken)}" if broken else ""


class Child:
    """A benchmark running as a child process, its output going to temp files (so a big
    output can never fill a pipe while nobody reads it)."""

    def __init__(self, bench: Bench, argv: list[str]):
        self.bench = bench
        self.cmd = [sys.executable, "-m", f"tests.bench.{bench.module}", *argv]
        self.stdout = tempfile.TemporaryFile("w+")
        self.stderr = tempfile.TemporaryFile("w+")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, cwd=REPO, stdin=subprocess.DEVNULL,
                                     stdout=self.stdout, stderr=self.stderr, text=True)

    def finish(self, timeout: float) -> Outcome:
        out = Outcome(self.bench)
        print(f"$ {' '.join(self.cmd[1:])}", flush=True)
        try:
            self.proc.wait(max(0.0, self.started + timeout - time.perf_counter()))
        except subprocess.TimeoutExpired:
            # SIGINT first: KeyboardInterrupt runs the benchmark's cleanup (its daemons and
            # guardians live in sessions of their own, a kill of this child would orphan them).
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            out.failure = f"did not finish within {timeout:.0f} s"
        self.stdout.seek(0)
        self.stderr.seek(0)
        stdout, stderr = self.stdout.read(), self.stderr.read()
        self.stdout.close()
        self.stderr.close()
        sys.stdout.write(stdout)
        if out.failure:
            pass
        elif self.proc.returncode not in self.bench.ran_codes:
            out.failure = f"exit code {self.proc.returncode}"
        elif self.bench.marker not in stdout:
            out.failure = f"its output lacks {self.bench.marker!r}"
        else:
            out.rows = self.bench.rows(stdout)
            out.failure = failed_rows(out.rows) or ("" if out.rows else
                "ran, but its figures could not be read for the summary (output format changed?)")
        if out.failure:
            sys.stdout.write(stderr)
        sys.stdout.flush()
        out.seconds = time.perf_counter() - self.started
        return out


def summary(outcomes: list[Outcome], quick: bool, seconds: float) -> Table:
    table = Table("summary" + (" (--quick: small sizes, figures not meaningful)" if quick else ""))
    for o in outcomes:
        name = o.bench.module.removeprefix("bench_")
        if o.failure:
            table.add(f"{name}: DID NOT RUN", o.failure[:70])
        for what, figure, peer, peer_figure, ratio, target in o.rows:
            if target and figure:
                table.add(f"{name}: {what.strip()}", figure, peer, peer_figure, ratio, target)
    table.add("run_all wall time", f"{seconds:.0f} s", target="≤ 180 s" if not quick else "seconds")
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run every vigil benchmark and print a summary")
    parser.add_argument("--quick", action="store_true", help="small sizes: only check each still runs")
    parser.add_argument("--only", action="append", metavar="MODULE", help="run only these (repeatable)")
    args = parser.parse_args(argv)
    timeout = 120.0 if args.quick else 300.0
    t0 = time.perf_counter()
    selected = [b for b in BENCHMARKS if not args.only or b.module in args.only]
    # --quick: every benchmark a child, all at once (see the module doc).
    children = {b.module: Child(b, list(b.quick)) for b in selected} if args.quick else {}
    outcomes = []
    for bench in selected:
        print(f"\n######## {bench.module}", flush=True)
        if bench.in_process and not args.quick:
            b0 = time.perf_counter()
            outcome = run_in_process(bench, list(bench.quick if args.quick else bench.full))
            outcome.seconds = time.perf_counter() - b0
        else:
            child = children.pop(bench.module, None) or Child(bench, list(bench.full))
            outcome = child.finish(timeout)
        print(f"######## {bench.module}: {'FAILED: ' + outcome.failure if outcome.failure else 'ran'}"
              f" in {outcome.seconds:.1f} s", flush=True)
        outcomes.append(outcome)
    summary(outcomes, args.quick, time.perf_counter() - t0).print()
    for o in outcomes:
        if o.bench.note and not args.quick:
            print(f"note: {o.bench.note}")
    failed = [o.bench.module for o in outcomes if o.failure]
    if failed:
        print(f"\nbenchmarks that did not run: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
