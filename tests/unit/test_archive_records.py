"""Stored formats of the turn archives — the catalog's entries, the turn records, the archive
file's lines — read from checked-in fixtures (pueue's rule: "We have to be able to restore
from that state at all costs"), and the catalog's scoping and expiry in a real LMDB store."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vigil.daemon.archive.format import FORMAT_VERSION, ArchiveFormatError, parse
from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord, Store, StoreError
from vigil.daemon.store.records import (
    ARCHIVE_SCHEMA,
    TURN_SCHEMA,
    ArchiveEntry,
    TurnRecord,
    decode_archive,
    decode_turn,
    encode,
)
from vigil.protocol.api.trace import (
    ArchiveStamp,
    ToolCount,
    TracePrompt,
    TraceResult,
    TraceText,
    TraceThinking,
    TraceToolUse,
    TurnSummary,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REF = "0f1e2d3c4b5a49788796a5b4c3d2e1f0"
EID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
STAMP = ArchiveStamp(retention_class="extended", redaction="balanced", policy_version=1,
                     ttl_completed_seconds=7257600.0, ttl_failed_seconds=31104000.0,
                     payload_chars=2048)
SUMMARY = TurnSummary(
    archive_ref=REF, trace_key=f"{EID}:3", turn=3, state="committed", status="end_turn",
    failed=False, steps=3, iterations=2, tool_calls=3, tool_errors=1, results_missing=1,
    replay_blocked_steps=1,
    tools=[ToolCount(name="Bash", calls=2, errors=1), ToolCount(name="Read", calls=1)])


def test_archive_entry_v1_fixture_decodes_exactly():
    assert decode_archive((FIXTURES / "store_archive_v1.msgpack").read_bytes()) == ArchiveEntry(
        schema=1, archive_ref=REF, scope="local\x00thread-1\x00/home/u/proj", execution_id=EID,
        turn=3, stamp=STAMP, opened_at_unix_ms=1700000000000,
        committed_at_unix_ms=1700000060000, expires_at_unix_ms=1707257660000, summary=SUMMARY)


def test_turn_record_v1_fixture_decodes_exactly():
    assert decode_turn((FIXTURES / "store_turn_v1.msgpack").read_bytes()) == \
        TurnRecord(schema=1, archive_ref=REF, opened_at_unix_ms=1700000000000)


def test_every_schema_version_has_a_fixture():
    for version in range(1, ARCHIVE_SCHEMA + 1):
        assert (FIXTURES / f"store_archive_v{version}.msgpack").is_file()
    for version in range(1, TURN_SCHEMA + 1):
        assert (FIXTURES / f"store_turn_v{version}.msgpack").is_file()
    for version in range(1, FORMAT_VERSION + 1):
        assert (FIXTURES / f"archive_v{version}.jsonl").is_file()


def test_a_newer_schema_is_refused_not_misread():
    newer = msgspec.structs.replace(decode_archive(
        (FIXTURES / "store_archive_v1.msgpack").read_bytes()), schema=ARCHIVE_SCHEMA + 1)
    with pytest.raises(StoreError, match="archive catalog entry schema 2 is newer"):
        decode_archive(encode(newer))
    with pytest.raises(StoreError, match="turn record schema 2 is newer"):
        decode_turn(encode(TurnRecord(schema=TURN_SCHEMA + 1, archive_ref=REF,
                                      opened_at_unix_ms=1)))


def test_archive_file_v1_fixture_reads_exactly():
    archive = parse((FIXTURES / "archive_v1.jsonl").read_bytes())
    o = archive.opened
    assert (o.format, o.archive_ref, o.execution_id, o.turn, o.opened_at_unix_ms, o.stamp) == \
        (1, REF, EID, 3, 1700000000000, STAMP)
    assert archive.prompts == [
        TracePrompt(fidelity="router", timestamp="2023-11-14T22:13:20.000Z", text="deploy it",
                    bytes=9),
        TracePrompt(fidelity="agent_emitted", timestamp="2023-11-14T22:13:20.500Z",
                    text="deploy it", bytes=9)]
    assert archive.early_results == [TraceResult(tool_id="toolu_0", status="ok", content="early",
                                                 bytes=5)]
    one, two, three = archive.steps
    assert (one.action.seq, one.action.iteration, one.action.message_id, one.action.model,
            one.action.stop_reason) == (1, 1, "msg_1", "claude-x", "tool_use")
    assert one.action.action == [
        TraceThinking(text="Use the Bearer [masked] token.", bytes=46, masked=1),
        TraceThinking(redacted=True),
        TraceText(text="Calling.", bytes=8),
        TraceToolUse(tool_id="toolu_1", name="Bash", input={"command": "ls", "password": "[masked]"},
                     input_bytes=38, masked=1),
        TraceToolUse(tool_id="toolu_2", name="Bash", input='{"command":"cat', input_bytes=5000,
                     input_truncated=True, input_error="arguments are not JSON")]
    assert one.results == [
        TraceResult(tool_id="toolu_1", status="error", content="boom", bytes=4, is_error=True,
                    exit_code=2),
        TraceResult(tool_id="toolu_1", status="ok", content="x" * 10, bytes=3000, truncated=True,
                    omitted_images=1)]
    assert (two.action.iteration, two.action.continued, two.results) == (1, True, [
        TraceResult(tool_id="toolu_3", status="ok", bytes=70000, cut_bytes=70000)])
    assert (three.action.seq, three.action.iteration, three.action.cut_bytes,
            three.action.action, three.results) == (3, 2, 9000000, [], [])
    c = archive.committed
    assert (c.committed_at_unix_ms, c.status, c.expires_at_unix_ms, c.summary, c.blocked) == (
        1700000060000, "end_turn", 1707257660000, SUMMARY,
        {1: ["second_result", "call_without_result"]})
    assert archive.unreadable == 0


def test_a_half_written_last_line_is_counted_and_the_rest_read():
    data = (FIXTURES / "archive_v1.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    archive = parse(b"".join(lines[:-1]) + lines[-1][:40])
    assert (archive.committed, archive.unreadable, len(archive.steps)) == (None, 1, 3)
    with pytest.raises(ArchiveFormatError):
        parse(b"".join(lines[1:]))
    with pytest.raises(ArchiveFormatError):
        parse(b"")


# --- the catalog in a real store ---------------------------------------------------------------


class Clock:
    def __init__(self, now: int = 1_700_000_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def entry(ref: str, scope: str, eid: str = EID, turn: int = 1, expires: int = 1_700_000_100_000,
          **extra) -> ArchiveEntry:
    return ArchiveEntry(archive_ref=ref, scope=scope, execution_id=eid, turn=turn, stamp=STAMP,
                        opened_at_unix_ms=1_700_000_000_000, expires_at_unix_ms=expires, **extra)


@pytest.fixture
def store(tmp_path):
    clock = Clock()
    with Store.open(tmp_path / "store", Settings(), clock) as s:
        s.test_clock = clock
        yield s


def test_another_scopes_archive_cannot_be_read(store):
    mine, theirs = "local\x00t1\x00/w", "local\x00t2\x00/w"
    store.put_archives([entry(REF, mine)])
    assert store.get_archive(mine, REF).scope == mine
    assert store.get_archive(theirs, REF) is None
    assert store.get_turn_archive(mine, EID, 1).archive_ref == REF
    assert store.get_turn_archive(theirs, EID, 1) is None
    assert store.get_turn_archive(mine, EID, 2) is None
    assert store.latest_turn_archive(theirs, EID) is None


def test_latest_turn_and_uncommitted(store):
    scope = "local\x00t1\x00/w"
    refs = [f"{n:x}" * 32 for n in (1, 2, 3)]
    refs = [r[:12] + "4" + r[13:16] + "8" + r[17:] for r in refs]
    store.put_archives([entry(refs[0], scope, turn=1, committed_at_unix_ms=5),
                        entry(refs[1], scope, turn=2), entry(refs[2], scope, turn=10)])
    assert store.latest_turn_archive(scope, EID).archive_ref == refs[2]
    assert {e.archive_ref for e in store.uncommitted_archives()} == {refs[1], refs[2]}


def test_expiry_is_read_from_the_entry_and_an_update_moves_it(store):
    scope = "local\x00t1\x00/w"
    store.put_archives([entry(REF, scope, expires=1_700_000_100_000)])
    # The commit decides the real expiry: the provisional one is forgotten with its index.
    store.put_archives([entry(REF, scope, expires=1_700_000_200_000, committed_at_unix_ms=1)])
    store.test_clock.now = 1_700_000_150_000
    assert store.archives_due() == []
    store.test_clock.now = 1_700_000_200_000
    (due,) = store.archives_due()
    assert due.archive_ref == REF
    store.delete_archives([due])
    assert store.archives_due() == [] and store.get_archive(scope, REF) is None


def test_turn_records_go_with_their_execution_and_archives_stay(store):
    scope = "local\x00t1\x00/w"
    store.create_execution(ExecutionRecord(
        execution_id=EID, scope=scope, thread_id="t1", workspace_root="/w", command="claude",
        cwd="/w", started_unix_ms=1_700_000_000_000, status="exited", exit_code=0))
    store.put_archives([entry(REF, scope)])
    assert store.get_turn_archive(scope, EID, 1) is not None
    store.test_clock.now += int(Settings().retention_terminal_seconds * 1000) + 1
    assert store.get(scope, EID) is None  # expired, and its turn records with it
    assert store.get_turn_archive(scope, EID, 1) is None
    assert store.get_archive(scope, REF) is not None  # the archive lives by its own expiry
