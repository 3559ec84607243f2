"""The usage log writer (rotation, privacy of the file, the memory cap), the phase cap of one
call, the wait profiles' defaults, and the principal a hello may name."""

from __future__ import annotations

import json

import msgspec
import pytest

from vigil.daemon.settings import Settings
from vigil.daemon.telemetry import phases
from vigil.daemon.telemetry.usage_log import UsageLog
from vigil.protocol.connection import ConnectionFailed, HelloReceived, ServerConnection
from vigil.protocol.frames import encode_frame
from vigil.protocol.settings import WIRE_DEFAULTS, omitted_wait
from vigil.protocol.usage import ToolCall


def event(i: int) -> ToolCall:
    return ToolCall(usage_call_id=f"{i:016x}", ts_ms=i, tool="ping", outcome="ok",
                    duration_ms=0, usage_schema=1, workflow_schema=1)


async def test_rotation_keeps_the_configured_backups(tmp_path):
    settings = Settings(usage_log_max_bytes=64 * 1024, usage_log_files=2)
    log = UsageLog(tmp_path / "usage.jsonl", settings)
    line = len(msgspec.json.encode(event(0))) + 1
    per_file = settings.usage_log_max_bytes // line
    for round_ in range(4):
        for i in range(per_file):
            log.emit(event(round_ * per_file + i))
        await log.flush()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["usage.jsonl", "usage.jsonl.1", "usage.jsonl.2"]
    for p in tmp_path.iterdir():
        assert p.stat().st_mode & 0o777 == 0o600
        assert p.stat().st_size <= settings.usage_log_max_bytes
    # Oldest first: .2, .1, current; the first round was rotated away.
    ids = [json.loads(l)["ts_ms"] for name in files[::-1] for l in (tmp_path / name).read_text().splitlines()]
    assert ids == sorted(ids) and ids[0] >= per_file


async def test_a_full_buffer_drops_newer_events_and_counts_them(tmp_path):
    settings = Settings(usage_log_buffer_events=100)
    log = UsageLog(tmp_path / "usage.jsonl", settings)
    for i in range(1000):
        log.emit(event(i))
    assert log.dropped == 900
    kept = 100
    await log.flush()
    assert len((tmp_path / "usage.jsonl").read_text().splitlines()) == kept


def test_phase_pairs_stop_at_16_with_one_marker():
    written = []
    record = phases.CallRecord("c", written.append)
    token = phases.CURRENT.set(record)
    try:
        for _ in range(20):
            with phases.phase("catalog"):
                pass
    finally:
        phases.CURRENT.reset(token)
    edges = [e.edge for e in written]
    assert edges.count("start") == edges.count("finish") == 16 and edges.count("truncated") == 1
    assert record.phase_totals()["catalog"].count == 20  # suppressed ones still count
    assert record.truncated
    with phases.phase("catalog"):  # outside a call: nothing, no error
        pass


def test_omitted_waits_follow_the_wait_profile_and_the_cap():
    s = WIRE_DEFAULTS
    assert omitted_wait(s, "local", s.wait_timeout_default, s.wait_timeout_max) == 5.0
    assert omitted_wait(s, "claude", s.wait_timeout_default, s.wait_timeout_max) == 5.0
    # 50 s for ChatGPT/Codex, never above the action's maximum (a wait's is 30 s).
    assert omitted_wait(s, "codex", s.wait_timeout_default, s.wait_timeout_max) == 30.0
    assert omitted_wait(s, "chatgpt", s.bash_wait_default_seconds, s.bash_wait_max_seconds) == 50.0


@pytest.mark.parametrize("principal,accepted", [
    ("local", True), ("http:alice", True), ("http:a.b-c_9", True), ("root", False),
    ("http:", False), ("http:../x", False), ("http:" + "a" * 65, False)])
def test_hello_names_a_principal(principal, accepted):
    conn = ServerConnection()
    body = msgspec.json.encode({"id": 1, "method": "hello", "params": {
        "protocol": [1, 1], "encoding": "json", "principal": principal}})
    conn.receive_data(encode_frame(body))
    got = conn.next_event()
    if accepted:
        assert isinstance(got, HelloReceived) and conn.principal == principal
    else:
        assert isinstance(got, ConnectionFailed)
        assert got.error.code == "handshake_required" and "principal" in got.error.message
