"""Benchmark: the screen keeper against pyte, and its behaviour under floods and streams.

Run: .venv/bin/python -m tests.bench.bench_screen [--flood-mb 100] [--parse-kib 2048]

Figures printed (targets from the issue briefs):
- parse throughput of plain pyte (`pyte.Screen` + `ByteStream`) vs the keeper's parser, by
  content (plain lines, coloured lines, cursor-addressed TUI cells, a `yes` flood), in CPU
  time of the thread;
- `feed` cost in MiB/s next to a bare `bytearray +=` (target: about a memcpy);
- time from the end of a flood to an exact, current screen (issue 17: ≤ 1 s for every
  shape) for nine shapes — line floods, TUI floods with and without full clears, on either
  screen, a log under a status line (scroll region, save/restore), DECALN — fed at 32 MiB/s
  through a ScreenTask with the default settings; with the CPU time the thread spent, the
  longest hold of the trio thread and the longest `feed`;
- the longest time the screen keeper holds the trio thread (one `process` slice and its
  snapshot, or one `feed`) while hostile output streams in — DECALN, control sequences with
  10,000 parameters or 100,000 digits, whole-screen sequences with huge counts — at the
  default size and the largest (1000×1000), next to the same for plain text (issue 10;
  target ≤ 20 ms), in wall and CPU time;
- staleness while a program streams 100 KB/s: time from feeding a line to a snapshot that
  shows it (target ≤ 50 ms), with the keeper held to its default CPU budget.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

import pyte
import trio

from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.screen.driver import ScreenTask

MiB = 1024 * 1024
ROWS, COLS = 50, 200


def corpus() -> dict[str, bytes]:
    rnd = random.Random(1)
    tui = []
    for i in range(60000):
        tui.append(b"\x1b[%d;%dH\x1b[3%dm%s" % (rnd.randrange(ROWS) + 1, rnd.randrange(180) + 1, i % 8,
                                                 "ab中cd".encode() * 2))
    return {
        "plain": b"".join(b"%06d the quick brown fox jumps over the lazy dog\r\n" % i for i in range(60000)),
        "colour": b"".join(b"\x1b[1;31m%06d\x1b[0m quick \x1b[32mbrown\x1b[m fox jumps\r\n" % i for i in range(60000)),
        "tui": b"".join(tui),
        "yes": b"y\r\n" * 600000,
    }


def mibps(n: int, seconds: float) -> float:
    return n / seconds / MiB if seconds > 0 else float("inf")


def bench_parse(data: dict[str, bytes], size: int) -> None:
    """Times are CPU time of this thread (`time.thread_time`): other work on a shared machine
    then slows neither side."""
    clock = time.thread_time
    print(f"{'content':<8} {'pyte MiB/s':>11} {'keeper MiB/s':>13} {'feed MiB/s':>11} {'memcpy MiB/s':>13}")
    for name, blob in data.items():
        n = min(len(blob), size)
        blob = blob[:n]
        screen = pyte.Screen(COLS, ROWS)
        stream = pyte.ByteStream(screen)
        t0 = clock()
        stream.feed(blob)
        t_pyte = clock() - t0
        k = ScreenKeeper(ROWS, COLS)
        k.feed(blob)
        t0 = clock()
        while k.process(60.0, backlog_seconds=1e9):
            pass
        t_keeper = clock() - t0
        # feed alone, in 4 KiB reads as the PTY delivers them, with the screen never parsing
        pieces = [blob[i:i + 4096] for i in range(0, n, 4096)]
        k = ScreenKeeper(ROWS, COLS)
        t0 = clock()
        for p in pieces:
            k.feed(p)
        t_feed = clock() - t0
        buf = bytearray()
        t0 = clock()
        for p in pieces:
            buf += p
        t_copy = clock() - t0
        print(f"{name:<8} {mibps(n, t_pyte):>11.2f} {mibps(n, t_keeper):>13.2f} "
              f"{mibps(n, t_feed):>11.0f} {mibps(n, t_copy):>13.0f}")


#: Arrival rate of the floods: about what the daemon's ingest hands the screen here (a PTY
#: through the guardian; bench_shell measures the real path).
FLOOD_RATE = 32 * MiB


def flood_shapes() -> dict[str, tuple[bytes, bytes, bytes]]:
    """Each shape: (what comes first, a block repeated for the whole flood, the tail written
    after it). One block already leaves the screen the whole flood leaves (line output
    scrolls everything older away; a TUI block redraws the same cells), so the expected
    screen is the one a full parse of `head + block + tail` gives."""
    rnd = random.Random(3)
    status = b"".join(b"\x1b7\x1b[%d;1H\x1b[7m step %d/400 \x1b[m\x1b[K\x1b8line %05d of the log\r\n"
                      % (ROWS, i % 400, i) for i in range(4000))
    alt = b"\x1b[?1049h"
    done = b"\x1b[%d;1Hdone" % ROWS
    return {
        "yes": (b"", b"y\r\n" * 20000, b"$ "),
        "100-column lines": (b"", b"".join(b"%05d " % i + b"x" * 94 + b"\r\n" for i in range(3000)), b"$ "),
        "coloured log lines": (b"", b"".join(b"\x1b[1;3%dm%06d\x1b[0m quick \x1b[32mbrown\x1b[m fox\r\n"
                                             % (i % 8, i) for i in range(6000)), b"$ "),
        "TUI, a full clear every ~0.1 MB": (alt, tui_block(rnd, 5000, clear=True), done),
        "TUI, a full clear every ~0.4 MB": (alt, tui_block(rnd, 20000, clear=True), done),
        "TUI, no clear at all": (alt, tui_block(rnd, 20000, clear=False), done),
        "TUI on the main screen, no clear": (b"", tui_block(rnd, 20000, clear=False), done),
        "log under a status line (scroll region)": (b"\x1b[1;%dr" % (ROWS - 1), status, b"$ "),
        "DECALN (ESC # 8)": (b"", b"\x1b#8" * 20000, b"\x1b[Hdone"),
    }


def tui_block(rnd: random.Random, cells: int, clear: bool) -> bytes:
    """Cursor-addressed coloured writes at random cells, never in the last column or row (so
    nothing scrolls); with `clear`, the block starts with a full clear."""
    out = [b"\x1b[?25l" + (b"\x1b[H\x1b[2J" if clear else b"")]
    for i in range(cells):
        out.append(b"\x1b[%d;%dH\x1b[3%dm%s" % (rnd.randrange(ROWS - 1) + 1, rnd.randrange(COLS - 12) + 1,
                                                 i % 8, "ab中cd".encode()))
    out.append(b"\x1b[0m")
    return b"".join(out)


def parsed_screen(data: bytes):
    k = ScreenKeeper(ROWS, COLS)
    k.feed(data)
    while k.process(60.0, backlog_seconds=1e9):
        pass
    return k.snapshot()


async def time_to_exact(head: bytes, block: bytes, total: int, tail: bytes) -> tuple[float, float, float, float]:
    """Feed `head`, then `block` repeatedly up to `total` bytes at FLOOD_RATE in 64 KiB reads,
    then `tail`, through a ScreenTask with the default settings. Returns (seconds from the
    last byte to an exact screen equal to the parsed one, the CPU time this thread spent in
    them, longest hold of the trio thread by the task, longest `feed`)."""
    want = parsed_screen(head + block + tail)
    task = ScreenTask(ScreenKeeper(ROWS, COLS))
    feed = TimedFeed(task)
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)
        feed(head)
        t0 = trio.current_time()
        fed = 0
        piece = 64 * 1024
        while fed < total:
            for i in range(0, len(block), piece):
                feed(block[i:i + piece])
                fed += len(block[i:i + piece])
                await trio.sleep_until(t0 + fed / FLOOD_RATE)  # the flood's pace
        feed(tail)
        t_end = time.perf_counter()
        cpu_end = time.thread_time()
        cpu_exact = float("nan")
        rev = 0
        t_exact = float("nan")
        with trio.move_on_after(30):
            while True:
                snap = await task.wait_revision(rev)
                rev = snap.revision
                if snap.fidelity == "exact" and (snap.lines, snap.cursor) == (want.lines, want.cursor):
                    t_exact = time.perf_counter()
                    cpu_exact = time.thread_time()
                    break
        nursery.cancel_scope.cancel()
    return t_exact - t_end, cpu_exact - cpu_end, max(task.longest_hold, feed.longest), feed.longest


class TimedFeed:
    """`task.feed`, timed: the ingest calls it on the trio thread, so it holds the thread too
    (wall time, and CPU time of the thread)."""

    def __init__(self, task: ScreenTask):
        self.task = task
        self.longest = self.longest_cpu = 0.0

    def __call__(self, data: bytes) -> None:
        t, c = time.perf_counter(), time.thread_time()
        self.task.feed(data)
        self.longest = max(self.longest, time.perf_counter() - t)
        self.longest_cpu = max(self.longest_cpu, time.thread_time() - c)


def bench_floods(mb: int) -> None:
    print(f"{'shape':<45} {'MB':>4} {'exact after':>12} {'(CPU)':>9} {'longest hold':>13} {'longest feed':>13}")
    for name, (head, block, tail) in flood_shapes().items():
        exact_s, cpu_s, hold, feed = trio.run(time_to_exact, head, block, mb * MiB, tail)
        shown = f"{exact_s * 1000:9.0f} ms" if exact_s == exact_s else "  never (30 s)"
        print(f"flood {name:<39} {mb:>4} {shown:>12} {cpu_s * 1000:6.0f} ms {hold * 1000:10.1f} ms "
              f"{feed * 1000:10.1f} ms")


async def staleness(rate_bytes: int, seconds: float) -> list[float]:
    """Stream `rate_bytes`/s of numbered lines (1 KiB every 10 ms); latency per line until a
    snapshot shows it."""
    task = ScreenTask(ScreenKeeper(ROWS, COLS))
    latencies: list[float] = []
    sent: dict[str, float] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)

        async def watch():
            rev = 0
            while True:
                snap = await task.wait_revision(rev)
                rev = snap.revision
                now = time.perf_counter()
                for line in snap.lines:
                    t = sent.pop(line[:10], None) if line.startswith("L") else None
                    if t is not None:
                        latencies.append(now - t)

        nursery.start_soon(watch)
        per_tick = rate_bytes // 100
        line_len = 100
        n = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            chunk = []
            for _ in range(per_tick // line_len):
                tag = f"L{n:09d}"
                chunk.append((tag + " " + "x" * (line_len - 13) + "\r\n").encode())
                sent[tag] = time.perf_counter()
                n += 1
            task.feed(b"".join(chunk))
            await trio.sleep(0.01)  # the stream's pace, not a synchronisation
        nursery.cancel_scope.cancel()
    # Lines scrolled past between two snapshots are never seen: they count as not measured.
    return latencies


def hold_corpus(size: int = 256 * 1024) -> dict[str, bytes]:
    """Hostile output for the hold measurement, `size` bytes each, and plain text as the peer."""
    whole_screen = (b"\x1b[2J\x1b[9999S\x1b[9999T\x1b[9999L\x1b[9999M\x1b[9999@\x1b[9999P"
                    b"\x1b[9999X\x1b[1J\x1b[0J\x1b[2K\x1bM\x1bD\x1b[?1049h\x1b[?1049l\x1bc")
    items = {
        "plain text": b"".join(b"%06d the quick brown fox jumps over the lazy dog\r\n" % i
                               for i in range(size // 50)),
        "DECALN (ESC # 8)": b"\x1b#8",
        "CSI with 10,000 parameters": b"\x1b[" + b"1;" * 10000 + b"H",
        "CSI with 100,000 digits": b"\x1b[" + b"1" * 100000 + b"m",
        "whole-screen sequences, huge counts": whole_screen,
    }
    return {name: (blob * (size // len(blob) + 1))[:size] for name, blob in items.items()}


async def longest_hold(rows: int, cols: int, data: bytes) -> tuple[float, float, float, str]:
    """Feed `data` in 4 KiB reads as fast as the loop turns through a ScreenTask; returns
    (longest hold of the trio thread — one `process` slice and its snapshot, or one `feed` —
    in wall time and in CPU time of the thread, seconds until up to date and quiet,
    fidelity then)."""
    quiet = trio.Event()
    task = ScreenTask(ScreenKeeper(rows, cols), on_snapshot=lambda s, q: quiet.set() if q else None)
    feed = TimedFeed(task)
    async with trio.open_nursery() as nursery:
        await nursery.start(task.run)
        t0 = time.perf_counter()
        for i in range(0, len(data), 4096):
            feed(data[i:i + 4096])
            await trio.lowlevel.checkpoint()
        with trio.move_on_after(60):
            await quiet.wait()
        done = time.perf_counter() - t0
        fidelity = task.snapshot().fidelity
        nursery.cancel_scope.cancel()
    return (max(task.longest_hold, feed.longest), max(task.longest_hold_cpu, feed.longest_cpu),
            done, fidelity)


def bench_holds(size: int) -> None:
    """Wall time is what the rest of the daemon waits; on a shared machine it includes time
    the thread was not running at all, so the CPU time of the thread is printed beside it."""
    print(f"{'content':<42} {'size':>9} {'longest hold':>13} {'(CPU)':>9} {'up to date':>11} {'fidelity':>15}")
    for (rows, cols) in ((50, 200), (1000, 1000)):
        for name, blob in hold_corpus(size).items():
            hold, cpu, done, fidelity = trio.run(longest_hold, rows, cols, blob)
            print(f"hold {name:<37} {rows}x{cols:<5} {hold * 1000:10.1f} ms {cpu * 1000:6.1f} ms "
                  f"{done:9.2f} s {fidelity:>15}")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flood-mb", type=int, default=100)
    ap.add_argument("--stream-seconds", type=float, default=5.0)
    ap.add_argument("--parse-kib", type=int, default=2048)
    ap.add_argument("--hold-kib", type=int, default=256, help="hostile output fed per hold case")
    args = ap.parse_args(argv)
    data = corpus()
    print(f"== parse throughput ({args.parse_kib} KiB of each, CPU time) ==")
    bench_parse(data, args.parse_kib * 1024)

    print(f"\n== floods at {FLOOD_RATE // MiB} MiB/s, then a prompt: time from the last byte to an exact "
          f"screen (target ≤ 1 s, every shape) ==")
    bench_floods(args.flood_mb)

    print("\n== longest hold of the trio thread by the keeper (target ≤ 20 ms; peer: plain text) ==")
    bench_holds(args.hold_kib * 1024)

    print("\n== staleness while streaming 100 KB/s (target p50 ≤ 50 ms) ==")
    lat = trio.run(staleness, 100 * 1000, args.stream_seconds)
    if lat:
        print(f"lines measured {len(lat)}: p50 {pct(lat, 50) * 1000:.1f} ms, p90 {pct(lat, 90) * 1000:.1f} ms, "
              f"p99 {pct(lat, 99) * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms, "
              f"mean {statistics.mean(lat) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
