"""The recorder's files and fan-out (seeds/003: file properties, drop-newest, idempotent
close), retention, and the masking hook."""

from __future__ import annotations

import json
import logging
import os
import stat
import time

import pytest
import trio

from vigil.daemon.settings import Settings
from vigil.daemon.transcript.fanout import FanOut
from vigil.daemon.transcript.files import RunFile, TranscriptFiles
from vigil.daemon.transcript.recorder import Recorder
from vigil.protocol.transcript import RunStartedPayload, StepStartedPayload

RUN = "a" * 32
CHILD = "b" * 32


def recorder(tmp_path, capacity=256, **settings) -> Recorder:
    s = Settings(**settings)
    return Recorder(TranscriptFiles(tmp_path / "t", s), FanOut(capacity), s)


def lines(tmp_path, run_id=RUN) -> list[dict]:
    return [json.loads(x) for x in (tmp_path / "t" / f"{run_id}.jsonl").read_text().splitlines()]


def test_file_properties_and_monotonic_seq(tmp_path):
    r = recorder(tmp_path)
    for i in range(3):
        r.emit(RUN, "step.started", StepStartedPayload(kind="command"), path=f"command.{i}")
    path = tmp_path / "t" / f"{RUN}.jsonl"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "t").st_mode) == 0o700
    assert [e["seq"] for e in lines(tmp_path)] == [1, 2, 3]
    assert os.read(os.open(path, os.O_RDONLY), 1 << 20).endswith(b"\n")
    r.close()
    r.close()  # idempotent


def test_a_reopened_file_continues_its_seq_and_cuts_a_half_written_line(tmp_path, caplog):
    r = recorder(tmp_path)
    r.emit(RUN, "run.started", RunStartedPayload(kind="execution"), parent_run_id=CHILD)
    r.emit(RUN, "step.started", StepStartedPayload(kind="agent"), path="turn.1")
    r.close()
    path = tmp_path / "t" / f"{RUN}.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"seq":3,"run_id":"')  # a crash mid-write
    with caplog.at_level(logging.WARNING):
        run = RunFile.open(path)
    assert "cut a half-written last line (19 bytes)" in caplog.text
    assert (run.state.last_seq, run.state.open_steps, run.state.turns) == (2, {"turn.1": "agent"}, 1)
    assert run.state.parent_run_id == CHILD
    run.close()
    r2 = recorder(tmp_path)
    event = r2.emit(RUN, "step.completed", StepStartedPayload(kind="agent"), path="turn.1")
    assert (event.seq, event.parent_run_id) == (3, CHILD)  # every later event keeps it
    assert [e["seq"] for e in lines(tmp_path)] == [1, 2, 3]


def test_a_symlink_in_place_of_a_file_is_refused(tmp_path, caplog):
    r = recorder(tmp_path)
    (tmp_path / "t").mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (tmp_path / "t" / f"{RUN}.jsonl").symlink_to(target)
    with caplog.at_level(logging.ERROR):
        assert r.emit(RUN, "run.started", RunStartedPayload(kind="thread")) is None
    assert target.read_text() == "keep me"
    assert f"transcript of {RUN} cannot be written" in caplog.text


async def test_fan_out_drops_newest_for_a_full_subscriber_only(tmp_path, caplog):
    r = recorder(tmp_path, capacity=4)
    stalled = r.fanout.subscribe()
    reader = r.fanout.subscribe(frozenset({RUN}))
    other_run = r.fanout.subscribe(frozenset({CHILD}))
    got = []
    with caplog.at_level(logging.WARNING):
        for i in range(10):
            r.emit(RUN, "step.started", StepStartedPayload(kind="command"), path=f"c.{i}")
            got.append((await reader.receive()).seq)
    assert got == list(range(1, 11))  # a subscriber that reads loses nothing
    assert [(await stalled.receive()).seq for _ in range(4)] == [1, 2, 3, 4]  # drop-newest
    assert stalled.dropped_total == 6 and stalled.take_dropped() == 6 and stalled.take_dropped() == 0
    assert r.fanout.stats().dropped == 6
    assert caplog.text.count("transcript subscriber is not keeping up") == 1  # once a second
    assert [e["seq"] for e in lines(tmp_path)] == list(range(1, 11))  # the file is complete
    other_run.close()
    other_run.close()
    r.close()
    with pytest.raises(trio.EndOfChannel):
        await stalled.receive()


def test_retention_by_age_then_by_total_size_oldest_first(tmp_path, caplog):
    r = recorder(tmp_path, transcript_total_bytes_max=1 << 20,
                 transcript_retention_seconds=3600.0)
    files = r.files
    for run_id in ("1" * 32, "2" * 32, "3" * 32, "4" * 32):
        r.emit(run_id, "run.started", RunStartedPayload(kind="thread"))
    files.close()
    now = time.time()
    os.utime(files.path("1" * 32), (now - 7200, now - 7200))  # past retention
    for i, run_id in enumerate(("2" * 32, "3" * 32, "4" * 32)):
        with open(files.path(run_id), "ab") as f:
            f.write(b"x" * (400 * 1024) + b"\n")
        os.utime(files.path(run_id), (now - 300 + i, now - 300 + i))
    with caplog.at_level(logging.INFO):
        removed = files.prune(now, force=True)
    assert removed == ["1" * 32, "2" * 32]  # expired; then the oldest until under the cap
    assert "removed (retention" in caplog.text and "removed (total size cap" in caplog.text
    assert files.prune(now) == []  # lazy: not again within the interval


async def test_retention_keeps_running_for_the_daemons_life(tmp_path):
    """Not only at start-up: a file that expires while the daemon runs is removed by a later
    round (a worker thread, every transcript_prune_interval_seconds)."""
    r = recorder(tmp_path, transcript_retention_seconds=3600.0,
                 transcript_prune_interval_seconds=0.05)
    files = r.files
    r.emit("1" * 32, "run.started", RunStartedPayload(kind="thread"))
    files.close()
    async with trio.open_nursery() as nursery:
        await nursery.start(files.keep_pruned)
        assert files.path("1" * 32).exists()  # the first round kept it: not expired
        old = time.time() - 7200
        os.utime(files.path("1" * 32), (old, old))  # now past retention
        with trio.fail_after(10):
            while files.path("1" * 32).exists():
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


def test_the_masking_hook_sees_every_event_before_it_is_written(tmp_path):
    r = recorder(tmp_path)
    import msgspec

    def mask(event):
        if event.type == "run.started":
            return msgspec.structs.replace(event, payload=msgspec.structs.replace(
                event.payload, command="[masked]"))
        return event

    r.masker = mask
    r.emit(RUN, "run.started", RunStartedPayload(kind="execution", command="secret --token x"))
    assert lines(tmp_path)[0]["payload"] == {"kind": "execution", "command": "[masked]"}
