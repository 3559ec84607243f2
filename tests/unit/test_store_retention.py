"""Retention: per-execution output, per-scope bytes, records per scope, 24 h expiry.

Each test checks exact numbers and then `check_invariants()` (scope usage, stored bytes,
retained start) recomputed from scratch.
"""

from __future__ import annotations

import pytest

from tests.unit.test_store_support import T0, FakeClock, new_record, open_store
from vigil.daemon.store import ExecutionUpdate, StoredScreen, read_output_page, scope_hash

SCOPE = "local\0t1\0/w"
KiB = 1024


@pytest.fixture
def clock():
    return FakeClock()


def _append(store, rec, data: bytes, offset: int | None = None):
    cur = store.get(rec.scope, rec.execution_id)
    offset = cur.output_total_bytes if offset is None else offset
    return store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(offset, data)])]).records.get(
        rec.execution_id
    )


def test_output_per_execution_keeps_exactly_the_tail(tmp_path, clock):
    store = open_store(tmp_path, clock, retention_output_bytes=8 * KiB, output_chunk_bytes=4 * KiB)
    rec = store.create_execution(new_record())
    data = bytes(i % 128 for i in range(20_000))  # ASCII, so the cut is exact
    for i in range(0, len(data), 3000):
        got = _append(store, rec, data[i : i + 3000])
    assert got.output_total_bytes == 20_000
    assert got.output_dropped_bytes == 20_000 - 8 * KiB
    assert got.output_retained_start == 20_000 - 8 * KiB
    page = read_output_page(store, SCOPE, rec.execution_id, None, 65536)
    assert page.gap.bytes_skipped == 20_000 - 8 * KiB
    assert page.text.encode() == data[-8 * KiB :]
    store.check_invariants()
    store.close()


def test_pruning_never_starts_the_tail_inside_a_character(tmp_path, clock):
    store = open_store(tmp_path, clock, retention_output_bytes=4 * KiB, output_chunk_bytes=4 * KiB)
    rec = store.create_execution(new_record())
    text = "€" * 3000  # 3 bytes each
    got = _append(store, rec, text.encode())
    # 9,000 bytes, keep 4,096: cutting at 4,904 lands inside a character (4,904 % 3 == 2),
    # so the cut moves forward one byte to the next character: 4,095 bytes kept.
    assert (got.output_retained_start, got.output_dropped_bytes) == (4905, 4905)
    page = read_output_page(store, SCOPE, rec.execution_id, None, 65536)
    assert page.text == "€" * 1365 and page.gap.bytes_skipped == 4905
    store.check_invariants()
    store.close()


def test_scope_bytes_prune_terminal_records_first_oldest_first(tmp_path, clock):
    store = open_store(
        tmp_path, clock, retention_output_bytes=64 * KiB, retention_scope_bytes=64 * KiB, output_chunk_bytes=4 * KiB
    )
    old_done = store.create_execution(new_record(started=T0))
    active = store.create_execution(new_record(started=T0 + 1))
    new_done = store.create_execution(new_record(started=T0 + 2))
    _append(store, old_done, b"a" * 20 * KiB)
    _append(store, active, b"b" * 20 * KiB)
    _append(store, new_done, b"c" * 20 * KiB)
    store.update(old_done.execution_id, status="exited", exit_code=0)
    store.update(new_done.execution_id, status="exited", exit_code=1)
    # 60 KiB used; 8 KiB more makes 68 KiB > 64 KiB: the oldest terminal record pays, whole.
    _append(store, active, b"b" * 8 * KiB)
    od, ac, nd = (store.get(SCOPE, r.execution_id) for r in (old_done, active, new_done))
    assert (od.output_stored_bytes, od.output_dropped_bytes, od.output_retained_start) == (0, 20 * KiB, 20 * KiB)
    assert ac.output_stored_bytes == 28 * KiB and nd.output_stored_bytes == 20 * KiB
    assert [e.what for e in store.changes_since(0, SCOPE, [od.execution_id]).entries][-1] == "pruned"
    # Then the next terminal one; then, with no terminal bytes left, the active one's oldest.
    _append(store, active, b"b" * 30 * KiB)  # 58 + 20 = 78 KiB > 64
    nd = store.get(SCOPE, new_done.execution_id)
    ac = store.get(SCOPE, active.execution_id)
    assert nd.output_stored_bytes == 0 and ac.output_stored_bytes == 58 * KiB
    _append(store, active, b"b" * 10 * KiB)  # 68 KiB, all active: the oldest 4 KiB go
    ac = store.get(SCOPE, active.execution_id)
    assert (ac.output_stored_bytes, ac.output_retained_start) == (64 * KiB, 4 * KiB)
    assert ac.status == "running"  # metadata of active records is never evicted
    with store.catalog() as view:
        assert view.tx.usage(scope_hash(SCOPE)).bytes == 64 * KiB
    store.check_invariants()
    store.close()


def test_scope_bytes_count_screens(tmp_path, clock):
    store = open_store(tmp_path, clock, retention_scope_bytes=64 * KiB, retention_screen_bytes=16 * KiB)
    done = store.create_execution(new_record(started=T0))
    store.commit_batch(
        [ExecutionUpdate(execution_id=done.execution_id, screen=StoredScreen(snapshot=0, text="s" * 10 * KiB, rows=1, cols=1))]
    )
    store.update(done.execution_id, status="exited", exit_code=0)
    active = store.create_execution(new_record(started=T0 + 1))
    _append(store, active, b"x" * 60 * KiB)  # 70 KiB > 64: the terminal record's screen goes
    d = store.get(SCOPE, done.execution_id)
    assert (d.screen_bytes, d.output_stored_bytes) == (0, 0)
    assert store.get_screen(SCOPE, done.execution_id) is None
    assert store.get(SCOPE, active.execution_id).output_stored_bytes == 60 * KiB
    store.check_invariants()
    store.close()


def test_record_count_evicts_oldest_terminal_never_active(tmp_path, clock):
    store = open_store(tmp_path, clock, retention_records_per_scope=3)
    a = store.create_execution(new_record(started=T0))  # stays active
    b = store.create_execution(new_record(started=T0 + 1))
    c = store.create_execution(new_record(started=T0 + 2))
    store.update(b.execution_id, status="exited", exit_code=0)
    store.update(c.execution_id, status="unknown")
    d = store.create_execution(new_record(started=T0 + 3))  # 4 > 3: b (oldest terminal) goes
    ids = [r.execution_id for r in store.list(SCOPE).records]
    assert ids == [d.execution_id, c.execution_id, a.execution_id]
    assert store.get(SCOPE, b.execution_id) is None
    e = store.create_execution(new_record(started=T0 + 4))  # c goes; a is active, never evicted
    f = store.create_execution(new_record(started=T0 + 5))  # nothing terminal left: 4 active kept
    ids = [r.execution_id for r in store.list(SCOPE).records]
    assert ids == [f.execution_id, e.execution_id, d.execution_id, a.execution_id]
    # One of them ends: it stays readable (its outcome is not lost the moment it is
    # recorded) until the next creation needs its place.
    assert store.update(e.execution_id, status="exited", exit_code=0).exit_code == 0
    assert len(store.list(SCOPE).records) == 4
    g = store.create_execution(new_record(started=T0 + 6))
    ids = [r.execution_id for r in store.list(SCOPE).records]
    assert ids == [g.execution_id, f.execution_id, d.execution_id, a.execution_id]
    removed = [x.execution_id for x in store.changes_since(0, SCOPE).entries if x.what == "removed"]
    assert removed == [b.execution_id, c.execution_id, e.execution_id]
    store.check_invariants()
    store.close()


def test_the_persistent_shell_has_a_record_pool_of_its_own(tmp_path, clock):
    """Shell commands (and the shell) never push standalone runs out, and runs never push
    shell commands out: each pool is capped on its own (issue 12)."""
    store = open_store(tmp_path, clock, retention_records_per_scope=2,
                       retention_shell_commands_per_scope=3)
    t = iter(range(T0, T0 + 100))

    def done(**fields):
        rec = store.create_execution(new_record(started=next(t), **fields))
        store.update(rec.execution_id, status="exited", exit_code=0)
        return rec.execution_id

    runs = [done(), done()]
    shell = store.create_execution(new_record(started=next(t), kind="shell")).execution_id
    commands = [done(kind="shell_command") for _ in range(6)]
    kept = {r.execution_id for r in store.list(SCOPE).records}
    # Runs untouched; the shell (active) plus the two newest commands fill the shell pool.
    assert kept == {*runs, shell, *commands[-2:]}
    newer = [done(), done()]
    kept = {r.execution_id for r in store.list(SCOPE).records}
    assert kept == {*newer, shell, *commands[-2:]}
    assert store.list(SCOPE).total == 5
    store.check_invariants()
    store.close()


def test_a_scope_counted_before_the_shell_pool_is_counted_once(tmp_path, clock):
    """Scope usage written by an older vigil has no shell-pool count (it decodes as -1):
    the first look counts the scope's shell records, and the count is kept from then on."""
    import msgspec

    from vigil.daemon.store.tx import ScopeUsage

    store = open_store(tmp_path, clock, retention_shell_commands_per_scope=2)
    for kind in ("shell", "shell_command", "standalone"):
        store.create_execution(new_record(kind=kind))

    def rewrite_as_old(tx):
        shash = scope_hash(SCOPE)
        usage = tx.usage(shash)
        tx.txn.put(shash, msgspec.msgpack.encode([usage.records, usage.bytes]),
                   db=tx.dbs["scopes"])

    store._write(rewrite_as_old)

    def usage(tx):
        return tx.usage(scope_hash(SCOPE))

    assert store._write(usage) == ScopeUsage(records=3, bytes=0, shell_pool=2)
    store.create_execution(new_record(kind="shell_command"))  # 3 > 2, all active: kept
    assert store._write(usage).shell_pool == 3
    store.check_invariants()
    store.close()


def test_terminal_records_expire_after_24h_from_their_outcome(tmp_path, clock):
    store = open_store(tmp_path, clock)
    done = store.create_execution(new_record())
    _append(store, done, b"output")
    clock.advance(3600)
    store.update(done.execution_id, status="exited", exit_code=0)  # terminal_at = T0 + 1 h
    active = store.create_execution(new_record())
    clock.advance(24 * 3600 - 1)  # 1 s before the deadline
    assert store.get(SCOPE, done.execution_id) is not None
    clock.advance(1)  # exactly 24 h after the outcome: due
    assert store.get(SCOPE, done.execution_id) is None  # pruned lazily by this catalog op
    assert [r.execution_id for r in store.list(SCOPE).records] == [active.execution_id]
    clock.advance(365 * 86400)
    assert store.get(SCOPE, active.execution_id) is not None  # active never expires
    store.check_invariants()
    store.close()


def test_expiry_also_happens_during_appends(tmp_path, clock):
    store = open_store(tmp_path, clock)
    done = store.create_execution(new_record())
    store.update(done.execution_id, status="unknown", unknown_reason="gone")
    active = store.create_execution(new_record())
    clock.advance(24 * 3600)
    result = store.commit_batch([ExecutionUpdate(execution_id=active.execution_id, output=[(0, b"x")])])
    assert result.records[active.execution_id].output_total_bytes == 1
    with store.catalog() as view:  # read directly: nothing is due any more
        assert view.tx.get_record(bytes.fromhex(done.execution_id)) is None
    store.check_invariants()
    store.close()


def test_guardian_gaps_are_counted_and_listed(tmp_path, clock):
    store = open_store(tmp_path, clock, store_gaps_kept=2)
    rec = store.create_execution(new_record())
    got = store.commit_batch(
        [ExecutionUpdate(execution_id=rec.execution_id, output=[(0, b"ab"), (10, b"cd"), (20, b"ef"), (30, b"gh")])]
    ).records[rec.execution_id]
    assert (got.output_total_bytes, got.output_dropped_bytes, got.output_stored_bytes) == (32, 24, 8)
    assert got.gaps == [(12, 20), (22, 30)]  # capped at store_gaps_kept: the newest kept
    # A replay of bytes already stored (daemon restarted) stores only what is new.
    got = store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(28, b"xxghij")])]).records[
        rec.execution_id
    ]
    assert (got.output_total_bytes, got.output_stored_bytes) == (34, 10)
    page = read_output_page(store, SCOPE, rec.execution_id, None, 100)
    assert page.text == "ab"
    store.check_invariants()
    store.close()
