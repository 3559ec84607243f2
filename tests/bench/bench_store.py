"""Store figures (issue: store): output append throughput with ingest-sized batches against
one transaction per 4 KiB record (the DESIGN table's two LMDB rows, measured through the
store and through bare py-lmdb as the peer), list latency over 10,000 records, page reads,
and the file size per byte stored (chunking vs 4 KiB overflow values).

Run: python -m tests.bench.bench_store [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import lmdb
import msgspec

from tests.bench.common import Table, percentile
from vigil.daemon.store import ExecutionRecord, ExecutionUpdate, Store, new_execution_id, read_output_page
from vigil.daemon.store import keys
from vigil.daemon.store.records import scope_hash
from vigil.daemon.settings import Settings

MiB = 1 << 20
SCOPE = "local\0bench\0/w"
RECORD = 4096


def _record(started: int) -> ExecutionRecord:
    return ExecutionRecord(execution_id=new_execution_id(), scope=SCOPE, thread_id="t", workspace_root="/w",
                           command="bench", cwd="/w", started_unix_ms=started)


def _open(base: Path, name: str, **over) -> Store:
    return Store.open(base / name, Settings(**{"store_initial_map_bytes": 256 * MiB, **over}))


def append_rate(base: Path, name: str, total: int, per_commit: int, marks: bool = False,
                **over) -> tuple[float, int]:
    """MiB/s appending `total` bytes of 4 KiB records, `per_commit` bytes per commit_batch;
    `marks`: with an arrival mark per record (store/timings.py; ingest writes at most one per
    10 ms, so one per 4 KiB is the worst case)."""
    store = _open(base, name, **over)
    rec = store.create_execution(_record(1))
    payload = os.urandom(RECORD)
    offset = 0
    t0 = time.perf_counter()
    while offset < total:
        appends, arrivals = [], []
        for _ in range(max(1, per_commit // RECORD)):
            appends.append((offset, payload))
            if marks:
                arrivals.append((offset, time.time_ns() // 1000))
            offset += RECORD
        store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=appends,
                                            arrivals=arrivals)])
    dt = time.perf_counter() - t0
    stored = store.get(SCOPE, rec.execution_id).output_stored_bytes
    store.close()
    return offset / MiB / dt, stored


def raw_lmdb_per_record(base: Path, total: int) -> float:
    """The peer: bare py-lmdb, one synced txn per 4 KiB value (DESIGN: ~16 MiB/s here)."""
    env = lmdb.open(str(base / "raw"), map_size=1 << 30, max_dbs=2)
    db = env.open_db(b"output")
    payload = os.urandom(RECORD)
    t0 = time.perf_counter()
    for i in range(total // RECORD):
        with env.begin(write=True) as txn:
            txn.put(i.to_bytes(8, "big"), payload, db=db)
    dt = time.perf_counter() - t0
    env.close()
    return total / MiB / dt


def list_latency(base: Path, n: int) -> tuple[list[float], list[float]]:
    store = _open(base, "list", retention_records_per_scope=n + 1)
    recs = [_record(1_700_000_000_000 + i) for i in range(n)]

    def bulk(tx):
        for rec in recs:
            eid = bytes.fromhex(rec.execution_id)
            rec = msgspec.structs.replace(rec, observed_at_unix_ms=tx.now_ms)
            tx.put_record(rec)
            tx.txn.put(keys.by_scope_key(scope_hash(SCOPE), rec.started_unix_ms, eid), b"", db=tx.dbs["by_scope"])
            tx.add_usage(scope_hash(SCOPE), records=1)
            tx.add_change(rec, "created")

    store._write(bulk)
    lists, pages = [], []
    for _ in range(200):
        t0 = time.perf_counter()
        store.list(SCOPE, 20)
        lists.append(time.perf_counter() - t0)
    rec = store.create_execution(_record(1))
    store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(0, os.urandom(MiB))])])
    for _ in range(200):
        t0 = time.perf_counter()
        read_output_page(store, SCOPE, rec.execution_id, None, 16384)
        pages.append(time.perf_counter() - t0)
    store.close()
    return lists, pages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="vigil-bench-store-"))
    try:
        per_record_total = (2 if args.quick else 8) * MiB
        batch_total = (32 if args.quick else 256) * MiB
        table = Table("store")
        peer = raw_lmdb_per_record(base, per_record_total)
        one, _ = append_rate(base, "one", per_record_total, RECORD)
        table.add("append, one txn per 4 KiB record", f"{one:.1f} MiB/s", "bare lmdb, same", f"{peer:.1f} MiB/s",
                  f"{one / peer:.2f}x", "~16 MiB/s (DESIGN)")
        big = dict(retention_output_bytes=1 << 30, retention_scope_bytes=4 << 30)
        batched, stored = append_rate(base, "batched", batch_total, MiB, **big)
        table.add("append, 1 MiB batches (no pruning)", f"{batched:.0f} MiB/s", "per-record, above", f"{one:.1f} MiB/s",
                  f"{batched / one:.0f}x", "~341 MiB/s (DESIGN)")
        size = (base / "batched" / "data.mdb").stat().st_size
        table.add("file bytes per stored byte", f"{size / stored:.2f}", "4 KiB values", "~2 (DESIGN)", "", "close to 1")
        pruned, _ = append_rate(base, "pruned", batch_total, MiB)
        table.add("append, 1 MiB batches, 1 MiB retention", f"{pruned:.0f} MiB/s", "", "", "", "")
        tick, _ = append_rate(base, "tick", batch_total // 4, 64 * 1024)
        table.add("append, 64 KiB batches, 1 MiB retention", f"{tick:.0f} MiB/s", "", "", "", "")
        # Half the bytes (a rate does not depend on them): quick runs stay within their minute.
        marked, _ = append_rate(base, "marked", batch_total // 8, 64 * 1024, marks=True)
        table.add("  the same with an arrival mark per 4 KiB", f"{marked:.0f} MiB/s", "without marks, above",
                  f"{tick:.0f} MiB/s", f"{marked / tick:.2f}x", "close to 1x")
        lists, pages = list_latency(base, 2000 if args.quick else 10_000)
        table.add("list limit 20 of 10k records, p50", f"{statistics.median(lists) * 1e3:.3f} ms",
                  "p99", f"{percentile(lists, 99) * 1e3:.3f} ms", "", "< 30 ms")
        table.add("16 KiB output page, p50", f"{statistics.median(pages) * 1e3:.3f} ms",
                  "p99", f"{percentile(pages, 99) * 1e3:.3f} ms", "", "")
        table.print()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
