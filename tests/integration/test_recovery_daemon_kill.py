"""THE recovery test: the daemon is SIGKILLed while ten executions print steadily; half of
them end while it is down (one after a burst larger than its guardian's ring); a new daemon
re-attaches or settles all ten. Every byte each child printed is then either present at its
exact offset, in order, or inside a reported gap (whose bounds are exact), and the exit
codes of the ones that ended meanwhile are recovered.

Run twice: with the guardians lingering for a restarting daemon (they hand over in person:
re-attach, `Exited`, `ExitAck`) and with `guardian_exit_linger_seconds = 0` (they leave
exit and tail records and are gone before the daemon comes back).

Children are paced by `select` on a FIFO gate (5 ms per line) and end when the test opens
their gate, so "while the daemon is down" is decided by the test, not by timing.
"""

import time

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Gate,
    Session,
    python_child,
    wait_pid_exit,
    workspace,
)

#: The smallest ring the settings allow, so a 200 KB burst overruns it for certain.
RING = 65536
BURST_LINES = 12_000  # 12,000 × 17 bytes = 204 KB > RING

CHILD = """
import os, select, sys
PACE = 0.005  # a line every 5 ms: 2,000 lines/s from the ten together
tag, code, gate, burst = sys.argv[1].encode(), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
fd = os.open(gate, os.O_RDONLY | os.O_NONBLOCK)  # readable (HUP) once the test opened it
i = 0
while True:
    os.write(1, b"%s %08d\\n" % (tag, i))
    i += 1
    if select.select([fd], [], [], PACE)[0]:
        break
lines = [b"%s %08d\\n" % (tag, j) for j in range(i, i + burst)]
for k in range(0, len(lines), 256):
    os.write(1, b"".join(lines[k:k + 256]))
os.write(1, b"%s END %d\\n" % (tag, i + burst))
sys.exit(code)
"""


def expected_stream(tag: str, count: int) -> bytes:
    """What child `tag` printed in all, as the PTY delivered it (\\n → \\r\\n)."""
    body = b"".join(b"%s %08d\r\n" % (tag.encode(), j) for j in range(count))
    return body + b"%s END %d\r\n" % (tag.encode(), count)


def line_count(tag: str, text: str) -> int:
    """The count from the child's END line."""
    end = [line for line in text.splitlines() if line.startswith(f"{tag} END ")]
    assert len(end) == 1, f"{tag}: END line missing or repeated"
    return int(end[0].split()[-1])


def check_stream(tag: str, transcript, record: dict) -> list[dict]:
    """Every retained byte at its exact offset, gaps exactly the missing ranges, nothing
    else missing, nothing repeated; returns the gaps."""
    pages = transcript.pages
    out = record["output"]
    expected = expected_stream(tag, line_count(tag, transcript.text))
    assert out["total_bytes"] == len(expected), tag
    at, gaps = 0, []
    for p in pages:
        if p["gap"]:
            g = p["gap"]
            assert (g["from_offset"], g["bytes_skipped"]) == (at, g["to_offset"] - at), tag
            gaps.append(g)
            at = g["to_offset"]
        body = p["text"].encode()
        assert p["start_offset"] == at, tag
        assert body == expected[at:at + len(body)], f"{tag}: bytes differ at offset {at}"
        at += len(body)
    assert at == len(expected), tag
    assert out["dropped_bytes"] == sum(g["bytes_skipped"] for g in gaps), tag
    assert [tuple(g) for g in out["gaps"]] == [(g["from_offset"], g["to_offset"]) for g in gaps]
    return gaps


@pytest.mark.parametrize("linger", [None, 0], ids=["guardians-linger", "exit-records"])
def test_daemon_sigkill_with_ten_printing(home, workspace, linger):
    config = f"guardian_ring_bytes = {RING}\n"
    if linger is not None:
        config += f"guardian_exit_linger_seconds = {linger}\n"
    home.write_config(config)
    first = home.start_daemon()
    s = Session(home, workspace)
    early, late = Gate(workspace / "early"), Gate(workspace / "late")
    plan = {}
    for n in range(10):
        ends_while_down = n < 5
        plan[f"e{n}"] = dict(code=20 + n, ends_while_down=ends_while_down,
                             gate=early if ends_while_down else late,
                             burst=BURST_LINES if n == 0 else 0)
    started = s.run_many([
        {"argv": python_child(CHILD) + [tag, str(p["code"]), str(p["gate"].path), str(p["burst"])]}
        for tag, p in plan.items()])
    runs = {tag: dict(plan[tag], eid=e["execution_id"], runtime=e["runtime"])
            for tag, e in zip(plan, started)}
    # All ten print, and the daemon has persisted output of each, before it dies.
    for r in runs.values():
        r["page"] = s.read_until(r["eid"], lambda p: p["text"])
    s.close()
    first.kill()

    # While it is down: half of them finish (one after overrunning its ring).
    early.open()
    for r in runs.values():
        if r["ends_while_down"]:
            wait_pid_exit(r["runtime"]["child_pid"])
            if linger == 0:  # nobody to hand over to: records written, guardian gone
                wait_pid_exit(r["runtime"]["guardian_pid"])

    home.start_daemon()
    s = Session(home, workspace)
    try:
        assert s.list()["total"] == 10
        for tag, r in runs.items():
            # A cursor the dead daemon issued is still this store's: it continues exactly
            # where it was (or right after a gap that starts exactly there).
            page = s.read(r["eid"], cursor=r["page"]["next_cursor"], page_bytes=64)
            resumed = page["gap"]["from_offset"] if page["gap"] else page["start_offset"]
            assert resumed == r["page"]["end_offset"], tag
            rec = s.get(r["eid"])
            assert rec["runtime"] == r["runtime"], tag  # the same guardian, not a re-run
            if not r["ends_while_down"]:
                assert rec["status"] == "running", tag  # re-attached, never settled as lost
        released_ms = time.time_ns() // 1_000_000
        late.open()
        for tag, r in runs.items():
            transcript = s.follow(r["eid"])
            rec = transcript.record
            assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
                ("exited", r["code"], None, None), tag
            if r["ends_while_down"]:
                # The child's own end time, from its guardian, not when the new daemon
                # learned of it (which was after its restart and the checks above).
                assert rec["ended_unix_ms"] < released_ms, tag
            gaps = check_stream(tag, transcript, rec)
            if tag == "e0":
                # The burst overran the ring while nobody read it: exactly the bytes before
                # the ring's last RING bytes, back to what the dead daemon had persisted.
                assert len(gaps) == 1
                assert gaps[0]["to_offset"] == rec["output"]["total_bytes"] - RING
    finally:
        s.close()
