"""The store from several threads at once, as the daemon uses it (trio worker threads):
readers keep reading while a writer grows the map from a tiny initial size."""

from __future__ import annotations

import threading

from tests.unit.test_store_support import FakeClock, new_record
from vigil.daemon.store import ExecutionUpdate, Store, read_output_page
from vigil.daemon.settings import Settings

SCOPE = "local\0t1\0/w"


def test_readers_and_a_growing_writer(tmp_path):
    store = Store.open(
        tmp_path / "state",
        Settings(store_initial_map_bytes=1 << 20, retention_output_bytes=16 << 20, retention_scope_bytes=64 << 20),
        FakeClock(),
    )
    rec = store.create_execution(new_record())
    # Readers are woken by each commit (not spinning: four threads spinning on the GIL
    # starve the writer, which is not how the daemon's few worker threads behave) and read
    # while the writer goes on to its next batch and grows the map.
    cond = threading.Condition()
    state = {"commits": 0, "done": False}
    errors: list[BaseException] = []
    reads = [0]

    def reader():
        try:
            seen = last = 0
            while True:
                with cond:
                    cond.wait_for(lambda: state["commits"] > seen or state["done"])
                    if state["done"]:
                        return
                    seen = state["commits"]
                for _ in range(3):
                    got = store.get(SCOPE, rec.execution_id)
                    assert got.output_total_bytes >= last  # commits are seen in order, never torn
                    last = got.output_total_bytes
                    page = read_output_page(store, SCOPE, rec.execution_id, None, 4096)
                    assert page.text == "x" * (page.end_offset - page.start_offset)
                    reads[0] += 1
        except BaseException as exc:  # reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        offset = 0
        for _ in range(24):
            data = b"x" * (512 << 10)
            store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(offset, data)])])
            offset += len(data)
            with cond:
                state["commits"] += 1
                cond.notify_all()
    finally:
        with cond:
            state["done"] = True
            cond.notify_all()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors
    assert reads[0] > 0
    assert store.map_size() >= 16 << 20
    assert store.get(SCOPE, rec.execution_id).output_total_bytes == 12 << 20
    store.check_invariants()
    store.close()
