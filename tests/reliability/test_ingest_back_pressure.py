"""Back-pressure from the store never strands a runtime.

The bug: 100 executions flooding at once on a loaded machine left some `running` for ever,
each with its guardian alive in epoll_wait, its child reaped, its exit records not written
and a full socket to the daemon (the guardian will not send `Exited` before the daemon has
every byte). The daemon had stopped reading them: each runtime waits in
`Ingest.wait_room` while pending output is above the high-water mark, and every waiter
made itself a new event there, so a second waiter orphaned the event the first one slept
on and the commit that made room woke only the last. The first runtime never read its
guardian again — with 0 bytes stored when that was its first Output.

The first test is the race itself, deterministic: stand-ins for the runtimes on the real
Ingest and Store, output handed over up to the high-water mark with the ingest task not yet
running, so every waiter is parked in `wait_room` (trio says so: all tasks blocked) before
the one commit round that must wake them all. The second is the flood through the real
daemon, with the smallest batch so that the high-water mark is passed all the time (before
the fix it stranded 19 of 20 such floods).
"""

from __future__ import annotations

import trio
import trio.testing

from tests.support.executions import Session, workspace  # noqa: F401 (fixture)
from tests.unit.test_store_support import new_record, open_store
from vigil.daemon.runtime.ingest import Ingest
from vigil.daemon.runtime.lifecycle import LifecycleBus

RUNTIMES = 3
#: The smallest batch the settings allow: the high-water mark is four of them.
BATCH = 4096


async def test_one_commit_wakes_every_runtime_waiting_for_room(tmp_path):
    store = open_store(tmp_path, ingest_batch_bytes=BATCH)
    ingest = Ingest(store, store.settings, LifecycleBus(), lambda record: None)
    records = [store.create_execution(new_record()) for _ in range(RUNTIMES)]
    ids = [r.execution_id for r in records]
    for eid in ids:
        ingest.add_output(eid, 0, b"x" * (ingest.high_water // RUNTIMES + 1))
    assert ingest._pending_bytes >= ingest.high_water

    resumed: list[str] = []

    async def runtime(eid: str) -> None:
        await ingest.wait_room()  # as the runtime does before handing over each Output
        resumed.append(eid)

    with trio.fail_after(30):  # a guard against a hang, not a synchronisation
        async with trio.open_nursery() as nursery:
            for eid in ids:
                nursery.start_soon(runtime, eid)
            await trio.testing.wait_all_tasks_blocked()
            assert resumed == []  # every one is parked in wait_room, one after the other

            await nursery.start(ingest.run)
            await ingest.durable()  # the round that made room has committed
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(resumed) == sorted(ids), (
                f"{RUNTIMES - len(resumed)} of {RUNTIMES} runtimes were never woken")
            nursery.cancel_scope.cancel()
    assert [store.get(r.scope, r.execution_id).output_total_bytes for r in records] == \
        [ingest.high_water // RUNTIMES + 1] * RUNTIMES
    store.close()


FLOODS = 10
#: `yes` writes "y\n"; the terminal turns each into "y\r\n".
FLOOD_INPUT_BYTES = 1_000_000
FLOOD_OUTPUT_BYTES = FLOOD_INPUT_BYTES // 2 * 3


def test_floods_past_the_high_water_mark_all_end(home, workspace):
    home.write_config(f"ingest_batch_bytes = {BATCH}\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        ids = [e["execution_id"] for e in s.run_many(
            [{"command": f"yes | head -c {FLOOD_INPUT_BYTES}"} for _ in range(FLOODS)])]
        ended = [s.wait_exit(eid, timeout=120) for eid in ids]
        assert [(r["status"], r["exit_code"], r["output"]["total_bytes"]) for r in ended] == \
            [("exited", 0, FLOOD_OUTPUT_BYTES)] * FLOODS
    finally:
        s.close()
