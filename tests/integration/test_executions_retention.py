"""Per-scope retention through a real daemon: the record cap evicts the oldest finished
records when new ones are created (newest first in `list`, running ones never), and finished
records expire after `retention_terminal_seconds` (its floor, 1 s, stands in for 24 h)."""

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    Gate,
    Session,
    remote_error,
    workspace,
)


def scoped_daemon(home, workspace, config: str) -> Session:
    home.write_config(config)
    home.start_daemon()
    return Session(home, workspace)


@pytest.fixture
def capped(home, workspace):
    s = scoped_daemon(home, workspace, "retention_records_per_scope = 3\n")
    try:
        yield s
    finally:
        s.close()


def run_to_end(s: Session, command: str) -> str:
    eid = s.run(command=command)["execution_id"]
    s.wait_exit(eid)
    return eid


def test_record_cap_keeps_the_newest_three(capped):
    ids = [run_to_end(capped, f"exit {i}") for i in range(5)]
    listing = capped.list()
    assert listing["total"] == 3
    assert [e["execution_id"] for e in listing["executions"]] == ids[:1:-1]  # 4, 3, 2
    assert [e["exit_code"] for e in listing["executions"]] == [4, 3, 2]
    for evicted in ids[:2]:
        err = remote_error(capped.get, evicted)
        assert (err.code.value, err.message) == ("not_found", "execution not found")


def test_record_cap_never_evicts_a_running_execution(capped, workspace):
    gate = Gate(workspace / "gate")
    running = capped.run(command=f"cat {gate.path} >/dev/null; exit 7")["execution_id"]
    ids = [run_to_end(capped, f"exit {i}") for i in range(4)]
    listing = capped.list()
    # The running one is the oldest, yet it stays; the finished ones make room.
    assert [e["execution_id"] for e in listing["executions"]] == [ids[3], ids[2], running]
    assert listing["executions"][2]["status"] == "running"
    gate.open()
    rec = capped.wait_exit(running)
    assert (rec["status"], rec["exit_code"]) == ("exited", 7)


def test_finished_records_expire(home, workspace):
    s = scoped_daemon(home, workspace, "retention_terminal_seconds = 1\n")
    try:
        gate = Gate(workspace / "gate")
        running = s.run(command=f"cat {gate.path} >/dev/null")["execution_id"]
        done = run_to_end(s, "echo soon gone")
        # Expiry is lazy and counted from the outcome: a condition, no event to wait for.
        wait_for(lambda: [e["execution_id"] for e in s.list()["executions"]] == [running],
                 timeout=10, what="the finished record to expire")
        err = remote_error(s.get, done)
        assert (err.code.value, err.message) == ("not_found", "execution not found")
        assert s.get(running)["status"] == "running"  # active records never expire
        gate.open()
        assert s.wait_exit(running)["status"] == "exited"
    finally:
        s.close()
