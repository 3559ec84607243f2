"""Execution logs in the store (store/events.py): consecutive seqs, the oldest dropped past
the bound, pages by seq that never shift, a level filter, scope checks, and removal with the
record."""

from __future__ import annotations

import pytest

from tests.unit.test_store_support import T0, FakeClock, new_record, open_store
from vigil.daemon.store import ExecutionNotFound
from vigil.daemon.store.events import StoredEvent

SCOPE = "local\0t1\0/w"


def ev(n: int, level: int = 1) -> StoredEvent:
    return StoredEvent(at_unix_ms=T0 + n, level=level, kind="k", message=f"m{n}", data={"n": n})


def messages(page) -> list[tuple[int, str]]:
    return [(seq, e.message) for seq, e in page.entries]


def test_bounded_paged_filtered_and_removed_with_the_record(tmp_path):
    store = open_store(tmp_path, FakeClock(), execution_events_max=16,
                       retention_records_per_scope=1)
    rec = store.create_execution(new_record())
    eid = rec.execution_id
    assert store.append_events({eid: [ev(n, level=3 if n % 5 == 0 else 1) for n in range(10)]}) == []
    assert store.append_events({eid: [ev(n, level=3 if n % 5 == 0 else 1) for n in range(10, 20)],
                                "0" * 32: [ev(0)]}) == ["0" * 32]

    _, page = store.read_events(SCOPE, eid, 0, 100, 0)
    assert messages(page) == [(n, f"m{n}") for n in range(4, 20)]  # the oldest 4 dropped
    assert (page.next_offset, page.has_more, page.first_offset) == (20, False, 4)

    _, page = store.read_events(SCOPE, eid, 5, 3, 0)
    assert messages(page) == [(5, "m5"), (6, "m6"), (7, "m7")]
    assert (page.next_offset, page.has_more) == (8, True)

    _, page = store.read_events(SCOPE, eid, 0, 1, 3)  # errors only: 5, 10, 15
    assert messages(page) == [(5, "m5")] and (page.next_offset, page.has_more) == (10, True)
    _, page = store.read_events(SCOPE, eid, 10, 5, 3)
    assert messages(page) == [(10, "m10"), (15, "m15")]
    assert (page.next_offset, page.has_more) == (20, False)
    _, page = store.read_events(SCOPE, eid, 50, 5, 0)
    assert (messages(page), page.next_offset, page.has_more) == ([], 50, False)

    with pytest.raises(ExecutionNotFound):
        store.read_events("local\0other\0/w", eid, 0, 5, 0)  # another scope reads as absent

    # Retention removes the record, and its log with it.
    store.update(eid, status="exited", exit_code=0)
    newer = store.create_execution(new_record(started=T0 + 1))
    assert store.get(SCOPE, eid) is None
    assert store.append_events({newer.execution_id: [ev(0)]}) == []
    _, page = store.read_events(SCOPE, newer.execution_id, 0, 5, 0)
    assert messages(page) == [(0, "m0")]
    with store.catalog() as view:
        cur = view.tx.txn.cursor(db=view.tx.dbs["events"])
        assert [bytes(k[:16]).hex() for k, _ in cur] == [newer.execution_id]
    store.close()
