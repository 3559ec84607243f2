"""Execution figures (issue 3: executions under PTY guardians), each next to a peer measured
in the same run:

- flood: wall time for a child to write N MB of 100-column lines to completion under
  `vigil run --wait` (output to /dev/null), under a bare PTY (`script -qfc CMD /dev/null`)
  and in a detached tmux pane (completion signalled by the command itself through a
  `tmux wait-for` channel, so no fixed sleep). Rounds are interleaved and the median kept,
  because the machine is shared. Targets: vigil ≤ 1.3× the bare PTY, faster than tmux.
  `vigil run --wait` streams live from the output path and exits when the child has ended
  and every byte was delivered; bytes it could not deliver are reported by the CLI as lost
  (a guardian ring overrun; the child never waits for a reader) — printed as "gap".
- `Execution list` over RPC with 10k records in the scope (target ≤ 30 ms), next to the
  store's own `list` in-process. The records are written into the daemon's store while the
  daemon is stopped (one transaction, checked with `Store.check_invariants`), in the scope
  of a thread the daemon itself created (`Initialize`); then the daemon is restarted on it.
- guardian RSS (target ≤ 15 MB) next to an idle bare interpreter, and the daemon's RSS with
  N running executions (`sleep 300`) next to the same daemon idle and a tmux server
  holding N panes of the same command.

Run: python -m tests.bench.bench_exec [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from tests.bench.common import Held, Table, bench_home, percentile, pss_kib, rss_kib
from tests.support.daemon import VigilHome, wait_for
from vigil.daemon.rpc.scopes import LOCAL_PRINCIPAL, scope_key
from vigil.daemon.store import ExecutionRecord, Store, keys, new_execution_id, scope_hash
from vigil.daemon.settings import Settings

KiB = 1024
MiB = 1024 * 1024
#: Terminal size of every peer: vigil's default PTY (spec: 200×50).
COLS, ROWS = 200, 50
#: Matches the CLI's stderr line for output it could not deliver (client/follow.py).
GAP_LINE = re.compile(r"(\d+) bytes of output were lost")


def flood_command(mb: int) -> str:
    """`mb` MiB of 'x' folded into 100-column lines (the issue's workload)."""
    return f"head -c {mb}M /dev/zero | tr '\\0' x | fold -w 100"


def vigil_argv(*args: str) -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "vigil")
    base = [exe] if os.path.exists(exe) else [sys.executable, "-m", "vigil.client.cli"]
    return base + ["--no-autostart", *args]


def mb(kib: float) -> str:
    return f"{kib / 1024:.1f} MB"


# --- flood ----------------------------------------------------------------------------------


class FloodResult:
    def __init__(self, seconds: float, gap_bytes: int = 0, error: str = ""):
        self.seconds = seconds
        self.gap_bytes = gap_bytes
        self.error = error


def flood_vigil(home: VigilHome, cmd: str) -> FloodResult:
    env = dict(home.env, VIGIL_WORKSPACE=str(home.root))
    t0 = time.perf_counter()
    proc = subprocess.run(vigil_argv("run", "--wait", "--", "sh", "-c", cmd), env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    gap = sum(int(n) for n in GAP_LINE.findall(proc.stderr))
    if proc.returncode != 0:
        last = [line for line in proc.stderr.splitlines() if not GAP_LINE.search(line)][-1:]
        return FloodResult(dt, gap, f"exit {proc.returncode}: {' '.join(last)}")
    return FloodResult(dt, gap)


def flood_bare_pty(cmd: str) -> FloodResult:
    t0 = time.perf_counter()
    proc = subprocess.run(["script", "-qfc", cmd, "/dev/null"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=dict(os.environ, COLUMNS=str(COLS), LINES=str(ROWS)))
    dt = time.perf_counter() - t0
    return FloodResult(dt, error="" if proc.returncode == 0 else f"exit {proc.returncode}")


class Tmux:
    """A tmux server on a private socket, kept alive by a `cat` session that waits on its
    PTY forever (so the server does not exit between measurements)."""

    def __init__(self, root: Path):
        self.exe = shutil.which("tmux") or "tmux"
        self.socket = str(root / "tmux.sock")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self.channels = 0

    def __call__(self, *args: str, capture: bool = False) -> str:
        proc = subprocess.run([self.exe, "-f", "/dev/null", "-S", self.socket, *args],
                              env=self.env, stdin=subprocess.DEVNULL, check=True,
                              stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
        return proc.stdout.decode() if capture else ""

    def start(self) -> None:
        self("new-session", "-d", "-s", "hold", "-x", str(COLS), "-y", str(ROWS), "cat")

    def server_pid(self) -> int:
        return int(self("display-message", "-p", "-t", "hold", "#{pid}", capture=True))

    def flood(self, cmd: str) -> FloodResult:
        """A new detached window runs `cmd` then signals a fresh channel; `wait-for` returns
        on that signal (tmux remembers a signal sent before anyone waits)."""
        self.channels += 1
        channel = f"vigil-bench-{self.channels}"
        t0 = time.perf_counter()
        signal_done = shlex.join([self.exe, "-S", self.socket, "wait-for", "-S", channel])
        self("new-window", "-d", "-t", "hold", f"{cmd}; {signal_done}")
        self("wait-for", channel)
        return FloodResult(time.perf_counter() - t0)

    def stop(self) -> None:
        subprocess.run([self.exe, "-S", self.socket, "kill-server"], env=self.env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bench_flood(table: Table, home: VigilHome, size_mb: int, rounds: int) -> None:
    cmd = flood_command(size_mb)
    tmux = Tmux(home.root)
    tmux.start()
    results: dict[str, list[FloodResult]] = {"vigil": [], "pty": [], "tmux": []}
    runners = {"vigil": lambda: flood_vigil(home, cmd), "pty": lambda: flood_bare_pty(cmd),
               "tmux": lambda: tmux.flood(cmd)}
    try:
        order = list(runners)
        for r in range(rounds):
            for name in order[r % 3:] + order[: r % 3]:  # rotate: no runner always goes first
                results[name].append(runners[name]())
    finally:
        tmux.stop()
    errors = [f"{n}: {x.error}" for n, rs in results.items() for x in rs if x.error]
    med = {n: statistics.median(x.seconds for x in rs) for n, rs in results.items()}
    what = f"{size_mb} MB of lines, `run --wait` (median of {rounds})"
    if errors:
        table.add(what, "FAILED", "", "", "", "; ".join(errors)[:160])
        log = home.daemons[0].log
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no daemon log)"
        print(f"bench_exec: flood failed; daemon log tail ({log}):\n{tail}", file=sys.stderr)
        return
    gap = statistics.median(x.gap_bytes for x in results["vigil"])
    table.add(what, f"{med['vigil']:.2f} s", "script -qfc (bare PTY)", f"{med['pty']:.2f} s",
              f"{med['vigil'] / med['pty']:.2f}×", "≤ 1.3×")
    table.add(what, f"{med['vigil']:.2f} s", "tmux detached pane", f"{med['tmux']:.2f} s",
              f"{med['vigil'] / med['tmux']:.2f}×", "< 1× (faster)")
    table.add("  child MB/s under vigil / bare PTY", f"{size_mb / med['vigil']:.0f} MB/s", "bare PTY",
              f"{size_mb / med['pty']:.0f} MB/s")
    table.add("  output the `--wait` reader skipped (median)", f"{gap / MiB:.1f} MB of {size_mb}",
              "(beyond retention: the child never waits for a reader)")


# --- list over 10k records ------------------------------------------------------------------


def bulk_create(store: Store, records: list[ExecutionRecord]) -> None:
    """Insert terminal records in ONE transaction, writing what `Store.create_execution`
    writes for each (record, by_scope index, expiry entry, scope usage, change entry) —
    the way bench_store fills its 10k. `create_execution` commits (and fsyncs) once per
    record: 10k of them took 5 to 28 s on this shared disk, too much of the 3-minute
    budget. The daemon's `total` is checked against n afterwards."""

    def fill(tx) -> None:
        for rec in records:
            eid = bytes.fromhex(rec.execution_id)
            shash = scope_hash(rec.scope)
            rec = msgspec.structs.replace(rec, observed_at_unix_ms=tx.now_ms, terminal_at_unix_ms=tx.now_ms)
            tx.put_record(rec)
            tx.txn.put(keys.by_scope_key(shash, rec.started_unix_ms, eid), b"", db=tx.dbs["by_scope"])
            tx.txn.put(keys.expiry_key(tx.now_ms, eid), b"", db=tx.dbs["expiry"])
            tx.add_usage(shash, records=1)
            tx.add_change(rec, "created")

    store._write(fill)
    store.check_invariants()  # the fill kept every count the store keeps


def bench_list(table: Table, records: int, calls: int) -> None:
    # The daemon must keep them all: raise the per-scope cap (spec default 128) above n.
    cap = records + 1000
    home = VigilHome()
    home.write_config(f"retention_records_per_scope = {cap}\n")
    try:
        workspace = str(home.root)
        daemon = home.start_daemon()
        with home.client() as c:
            thread = c.call("Initialize", workspace_root=workspace, thread_name="bench")
        daemon.stop()
        scope = scope_key(LOCAL_PRINCIPAL, thread["thread_id"], thread["workspace_root"])
        store = Store.open(home.state / "store", Settings(retention_records_per_scope=cap))
        t0 = time.perf_counter()
        now = int(time.time() * 1000)
        try:
            bulk_create(store, [ExecutionRecord(
                execution_id=new_execution_id(), scope=scope, thread_id=thread["thread_id"],
                workspace_root=thread["workspace_root"], command=f"echo {i}", argv=["echo", str(i)],
                cwd=workspace, started_unix_ms=now - records + i, ended_unix_ms=now - records + i + 1,
                status="exited", exit_code=0, rows=ROWS, cols=COLS) for i in range(records)])
            fill = time.perf_counter() - t0
            local = []
            for _ in range(calls):
                t0 = time.perf_counter()
                store.list(scope, 20)
                local.append(time.perf_counter() - t0)
        finally:
            store.close()
        home.start_daemon()
        params = {"thread_id": thread["thread_id"], "workspace_root": thread["workspace_root"]}
        with home.client() as c:
            c.call("Initialize", workspace_root=workspace, thread_id=thread["thread_id"])
            first = c.call("Execution", dict(params, action={"type": "list", "limit": 20}))["data"]
            if first["total"] != records or len(first["executions"]) != 20:
                raise AssertionError(f"expected {records} records, daemon lists {first['total']}")
            for limit, n in ((20, calls), (1000, max(5, calls // 10))):
                times = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    c.call("Execution", dict(params, action={"type": "list", "limit": limit}))
                    times.append(time.perf_counter() - t0)
                label = f"Execution list limit {limit}, {records // 1000}k records"
                if limit == 20:
                    table.add(f"{label}, p50", f"{percentile(times, 50) * 1e3:.2f} ms",
                              "Store.list in-process", f"{percentile(local, 50) * 1e3:.2f} ms",
                              f"{percentile(times, 50) / percentile(local, 50):.1f}×", "≤ 30 ms")
                    table.add(f"{label}, p99", f"{percentile(times, 99) * 1e3:.2f} ms")
                else:
                    table.add(f"{label}, p50", f"{percentile(times, 50) * 1e3:.2f} ms", "(the largest page)")
        table.add(f"  ({records} records written in one store transaction in {fill:.2f} s)", "")
    finally:
        home.cleanup()


# --- memory ---------------------------------------------------------------------------------


def python_floor_rss() -> int:
    """VmRSS of this interpreter started with -I and idle (blocked reading stdin)."""
    p = subprocess.Popen([sys.executable, "-I", "-c", "import os; os.write(1, b'r'); os.read(0, 1)"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        p.stdout.read(1)  # it has started and is about to block
        return rss_kib(p.pid)
    finally:
        p.stdin.close()
        p.wait(10)


def bench_memory(table: Table, count: int, flood_mb: int) -> None:
    held = Held()
    with bench_home() as home:
        daemon = home.daemons[0]
        try:
            with home.client() as c:
                thread = c.call("Initialize", workspace_root=str(home.root), thread_name="bench")
                params = {"thread_id": thread["thread_id"], "workspace_root": thread["workspace_root"]}
                c.call("Execution", dict(params, action={"type": "list"}))  # warm every path once
                idle = rss_kib(daemon.pid)

                def start(**what) -> dict:
                    e = c.call("run", dict(params, **what))["execution"]
                    held.hold(e["runtime"]["guardian_pid"])
                    held.hold(e["runtime"]["child_pid"])
                    return e

                # One guardian whose ring has been filled (flood, then it stays alive).
                started = [start(command=f"{flood_command(flood_mb)}; exec sleep 300")]
                full = started[0]
                run_times = []
                for _ in range(count - 1):
                    t0 = time.perf_counter()
                    started.append(start(argv=["sleep", "300"]))
                    run_times.append(time.perf_counter() - t0)

                def flooded():
                    e = c.call("Execution", dict(params, action={"type": "get", "execution_id": full["execution_id"]}))
                    return e["data"]["execution"]["output"]["total_bytes"] >= flood_mb * MiB

                wait_for(flooded, timeout=120, what=f"{flood_mb} MB ingested")
                busy = rss_kib(daemon.pid)
                guardians = [rss_kib(e["runtime"]["guardian_pid"]) for e in started]
                total_pss = pss_kib(daemon.pid) + sum(pss_kib(e["runtime"]["guardian_pid"]) for e in started)
                floor = python_floor_rss()
                for e in started:
                    c.call("signal", dict(params, execution_id=e["execution_id"], signal="KILL"))
                left = held.wait_gone([e["runtime"]["guardian_pid"] for e in started], 60)
                if left:
                    raise AssertionError(f"{len(left)} guardians still alive 60 s after SIGKILL of their child")
                listing = c.call("Execution", dict(params, action={"type": "list", "limit": count}))["data"]
                not_exited = [e for e in listing["executions"] if e["status"] != "exited"]
                if not_exited:
                    raise AssertionError(f"{len(not_exited)} executions not exited after SIGKILL")
        finally:
            held.kill_all()  # never leave `sleep 300`s behind, whatever failed above
    tmux_pss = tmux_panes_pss(count)
    sleeping = guardians[1:]
    table.add(f"`run` round trip (p50 of {count - 1})", f"{percentile(run_times, 50) * 1e3:.0f} ms",
              "p99", f"{percentile(run_times, 99) * 1e3:.0f} ms")
    table.add("guardian RSS, child `sleep` (median)", mb(statistics.median(sleeping)),
              "python3 -I, idle", mb(floor), f"{statistics.median(sleeping) / floor:.2f}×", "≤ 15 MB")
    table.add(f"guardian RSS, ring filled by {flood_mb} MB", mb(guardians[0]), "python3 -I, idle", mb(floor),
              f"{guardians[0] / floor:.2f}×", "≤ 15 MB")
    table.add(f"daemon RSS, {count} running executions", mb(busy), "same daemon, idle", mb(idle),
              f"+{(busy - idle) / count:.0f} KiB each", "(none set)")
    table.add(f"daemon + {count} guardians, PSS", mb(total_pss), f"tmux server, {count} panes, PSS",
              mb(tmux_pss), f"{total_pss / tmux_pss:.1f}×")


def tmux_panes_pss(count: int) -> int:
    d = Path(tempfile.mkdtemp(prefix="vgbt", dir="/tmp"))
    tmux = Tmux(d)
    try:
        tmux.start()
        for _ in range(count - 1):
            tmux("new-window", "-d", "-t", "hold", "sleep 300")
        return pss_kib(tmux.server_pid())
    finally:
        tmux.stop()  # SIGHUPs every pane's process group
        shutil.rmtree(d, ignore_errors=True)


# --- main -----------------------------------------------------------------------------------


def main(argv=None) -> Table:
    parser = argparse.ArgumentParser(description="execution benchmarks (issue 3)")
    parser.add_argument("--quick", action="store_true", help="small sizes: only checks it runs")
    args = parser.parse_args(argv)
    if args.quick:
        flood_mb, rounds, records, calls, executions, ring_mb = 10, 1, 1000, 50, 10, 1
    else:
        flood_mb, rounds, records, calls, executions, ring_mb = 100, 3, 10_000, 200, 100, 8
    table = Table("exec (executions)")
    with bench_home() as home:
        bench_flood(table, home, flood_mb, rounds)
    bench_list(table, records, calls)
    bench_memory(table, executions, ring_mb)
    table.print()
    return table


if __name__ == "__main__":
    main()
