"""Following a log as it grows: appends, the hold time of a split reply, truncation,
replacement, a vanished file, the read budget, and resuming where a previous follower
stopped without repeating or missing an event."""

from __future__ import annotations

import json
import os

import pytest

from vigil.daemon.settings import Settings
from vigil.protocol.transcript import TextBlock
from vigil.daemon.transcript.providers import (
    Candidate, ClaudeNormalizer, LogFollower, LogReset, follow_log, normalizer_for,
)

S = "5e1f0c3a-0000-4000-8000-00000000f011"


def user(uuid: str, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": S, "timestamp": "2025-06-01T10:00:00.000Z",
                       "message": {"role": "user", "content": text}}).encode() + b"\n"


def reply(uuid: str, mid: str, text: str, stop=None) -> bytes:
    return json.dumps({"type": "assistant", "uuid": uuid, "sessionId": S,
                       "timestamp": "2025-06-01T10:00:01.000Z",
                       "message": {"id": mid, "role": "assistant", "model": "m", "stop_reason": stop,
                                   "content": [{"type": "text", "text": text}]}}).encode() + b"\n"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def texts(items) -> list[str]:
    return [b.text for i in items if hasattr(i, "payload") for b in i.payload.blocks
            if isinstance(b, TextBlock)]


def follower(path, clock=None, offset=0, **settings) -> LogFollower:
    s = Settings(**settings)
    return LogFollower(path, ClaudeNormalizer(offset=offset, settings=s), offset=offset, settings=s,
                       clock=clock or Clock())


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_appended_lines_come_out_and_a_half_line_waits(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"")
    f = follower(log)
    assert f.poll() == []
    second = user("u2", "two")
    append(log, user("u1", "one") + second[:10])
    assert texts(f.poll()) == ["one"]
    assert f.resume_offset == len(user("u1", "one"))
    append(log, second[10:])
    assert texts(f.poll()) == ["two"]
    assert (f.offset, f.caught_up, f.missing) == (log.stat().st_size, True, False)


def test_a_split_reply_is_released_after_the_hold_time(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(reply("a1", "m1", "first block"))
    clock = Clock()
    f = follower(log, clock, transcript_agent_hold_seconds=5)
    assert f.poll() == []
    clock.now += 4.5
    assert f.poll() == []
    append(log, reply("a2", "m1", "second block"))  # growth restarts the hold
    assert f.poll() == []
    clock.now += 4.5
    assert f.poll() == []
    clock.now += 0.5
    [item] = f.poll()
    assert texts([item]) == ["first block", "second block"]
    assert f.poll() == []


def test_explicit_release(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(reply("a1", "m1", "done"))
    f = follower(log)
    assert f.poll() == []
    assert texts(f.release()) == ["done"]


def test_truncation_restarts_at_zero_and_says_so(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(user("u1", "one") + user("u2", "two") + b'{"type":"us')
    f = follower(log)
    assert texts(f.poll()) == ["one", "two"]
    previous = f.offset
    with open(log, "r+b") as fh:  # same inode, shorter
        fh.truncate(0)
        fh.write(user("u3", "three"))
    items = f.poll()
    assert items[0] == LogReset(reason="truncated", previous_offset=previous, dropped_bytes=11)
    assert texts(items[1:]) == ["three"]
    assert f.stats.truncated_lines == 1


def test_replacement_by_rename_restarts_at_zero(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(user("u1", "one"))
    f = follower(log)
    assert texts(f.poll()) == ["one"]
    fresh = tmp_path / "new.jsonl"
    fresh.write_bytes(user("u1", "one") + user("u2", "two"))  # longer: only the inode tells
    os.replace(fresh, log)
    items = f.poll()
    assert items[0] == LogReset(reason="replaced", previous_offset=len(user("u1", "one")), dropped_bytes=0)
    assert texts(items[1:]) == ["one", "two"]


def test_a_vanished_file_is_not_an_error(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(reply("a1", "m1", "held"))
    clock = Clock()
    f = follower(log, clock, transcript_agent_hold_seconds=1)
    assert f.poll() == []
    log.unlink()
    assert f.poll() == [] and f.missing
    clock.now += 1
    assert texts(f.poll()) == ["held"]  # the hold still runs out
    assert f.close() == []


def test_read_budget_and_caught_up(tmp_path):
    log = tmp_path / "s.jsonl"
    lines = [user(f"u{i}", f"line {i:03d}") for i in range(60)]
    log.write_bytes(b"".join(lines))
    f = follower(log, transcript_follow_read_bytes=4096)
    got = texts(f.poll())
    assert f.offset == 4096 and not f.caught_up
    while not f.caught_up:
        got += texts(f.poll())
    assert got == [f"line {i:03d}" for i in range(60)]


def test_a_new_follower_at_the_resume_offset_repeats_nothing_and_misses_nothing(tmp_path):
    log = tmp_path / "s.jsonl"
    whole = (user("u1", "one") + reply("a1", "m1", "r1") + reply("a2", "m1", "r1b")
             + user("u2", "two") + reply("a3", "m2", "r2"))
    cut = len(user("u1", "one") + reply("a1", "m1", "r1")) + 7  # mid-line, mid-reply
    log.write_bytes(whole[:cut])
    first = follower(log)
    before = first.poll()
    assert texts(before) == ["one"]
    resume = first.resume_offset
    assert resume == len(user("u1", "one"))  # the held reply's first line
    append(log, whole[cut:])
    second = follower(log, offset=resume)  # e.g. after a daemon restart
    after = second.close()
    assert texts(before + after) == ["one", "r1", "r1b", "two", "r2"]


def test_close_reads_an_unterminated_last_line(tmp_path):
    log = tmp_path / "s.jsonl"
    log.write_bytes(user("u1", "one") + user("u2", "last").rstrip(b"\n"))
    f = follower(log)
    assert texts(f.poll()) == ["one"]
    assert texts(f.close()) == ["last"]


def test_offsets_must_agree(tmp_path):
    with pytest.raises(ValueError) as exc:
        LogFollower(tmp_path / "x", ClaudeNormalizer(offset=5), offset=0)
    assert str(exc.value) == "the normalizer starts at byte 5, the follower at 0: create it with offset=0"


def test_follow_log_starts_at_the_candidates_offset(tmp_path):
    log = tmp_path / "s.jsonl"
    old = user("u1", "before the start")
    log.write_bytes(old + user("u2", "ours"))
    candidate = Candidate(path=str(log), session_id=S, resumed=True, start_offset=len(old),
                          first_timestamp=None, reason="")
    f = follow_log("claude", candidate)
    items = f.poll()
    assert texts(items) == ["ours"] and items[0].offset == len(old)
    assert items[0].payload.source.session_id == S


def test_normalizer_for_refuses_an_unknown_provider():
    with pytest.raises(ValueError) as exc:
        normalizer_for("gemini")
    assert str(exc.value) == "no normalizer for 'gemini': claude or codex"
