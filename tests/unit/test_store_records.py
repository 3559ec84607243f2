"""Persisted record formats: ids, schema evolution, and the checked-in fixtures.

pueue's rule: "We have to be able to restore from that state at all costs." Each schema
version of ExecutionRecord has a fixture written by that version; it must keep decoding to
exactly these values.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from vigil.daemon.store import InvalidArgument, StoreError, new_execution_id, parse_execution_id
from vigil.daemon.store.records import RECORD_SCHEMA, ExecutionRecord, RuntimeIdentity, decode_record, encode

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_record_v1_fixture_decodes_exactly():
    rec = decode_record((FIXTURES / "store_record_v1.msgpack").read_bytes())
    assert rec == ExecutionRecord(
        schema=1,
        execution_id="0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        scope="local\x00thread-1\x00/home/u/proj",
        thread_id="thread-1",
        workspace_root="/home/u/proj",
        command="pytest -q",
        argv=["pytest", "-q"],
        cwd="/home/u/proj/sub",
        name="tests",
        kind="shell",
        status="exited",
        exit_code=1,
        signal=None,
        unknown_reason=None,
        started_unix_ms=1700000000000,
        ended_unix_ms=1700000005000,
        terminal_at_unix_ms=1700000005001,
        observed_at_unix_ms=1700000005001,
        runtime=RuntimeIdentity(
            runtime_id="rt-1",
            boot_id="b0a7e3c1-6b55-4a4e-9a52-1f0e8d7c6b5a",
            guardian_pid=4242,
            guardian_start_ticks=987654,
            child_pid=4243,
        ),
        generation=3,
        output_total_bytes=2_000_000,
        output_retained_start=951_424,
        output_dropped_bytes=951_524,
        gaps=[(1_500_000, 1_500_100)],
        output_activity_seq=17,
        output_pending=False,
        rows=50,
        cols=200,
        recognized_state="awaiting_input",
        screen_bytes=1234,
        screen_snapshot=9,
        output_change_seq=77,
    )


def test_every_schema_version_has_a_fixture():
    for version in range(1, RECORD_SCHEMA + 1):
        assert (FIXTURES / f"store_record_v{version}.msgpack").is_file()


def test_minimal_old_record_gets_defaults_for_later_fields():
    # A record holding only the required fields (as an older writer might have) decodes,
    # with every optional field at its default.
    raw = msgspec.msgpack.encode(
        {
            "execution_id": "ab" * 16,
            "scope": "s",
            "thread_id": "t",
            "workspace_root": "/w",
            "command": "c",
            "cwd": "/w",
            "started_unix_ms": 5,
        }
    )
    rec = decode_record(raw)
    assert (rec.schema, rec.status, rec.output_total_bytes, rec.gaps, rec.runtime) == (1, "running", 0, [], None)


def test_unknown_fields_from_a_newer_minor_writer_are_ignored():
    raw = msgspec.msgpack.encode(
        {"execution_id": "ab" * 16, "scope": "s", "thread_id": "t", "workspace_root": "/w", "command": "c",
         "cwd": "/w", "started_unix_ms": 5, "some_future_field": [1, 2]}
    )
    assert decode_record(raw).execution_id == "ab" * 16


def test_newer_record_schema_is_refused_with_a_message():
    rec = decode_record((FIXTURES / "store_record_v1.msgpack").read_bytes())
    raw = encode(msgspec.structs.replace(rec, schema=RECORD_SCHEMA + 1))
    with pytest.raises(StoreError) as info:
        decode_record(raw)
    assert info.value.message == (
        f"execution record schema {RECORD_SCHEMA + 1} is newer than this vigil supports ({RECORD_SCHEMA})"
    )


def test_garbage_record_is_a_store_error():
    with pytest.raises(StoreError) as info:
        decode_record(b"\xc1garbage")
    assert info.value.message.startswith("unreadable execution record: ")


def test_new_execution_ids_parse():
    for _ in range(100):
        eid = new_execution_id()
        assert parse_execution_id(eid) == eid and len(eid) == 32


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "AB" * 16,  # upper case: one execution has exactly one spelling
        "ab" * 15,
        "ab" * 17,
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
        "{0f1e2d3c4b5a69788796a5b4c3d2e1f0}",
        "g" * 32,
        " " + "a" * 31,
        "a" * 31 + "\n",
        None,
        12,
        b"a" * 32,
        "é" * 32,
    ],
)
def test_parse_execution_id_rejects_everything_else(bad):
    with pytest.raises(InvalidArgument) as info:
        parse_execution_id(bad)
    assert info.value.message == "execution_id must be 32 lowercase hexadecimal characters"
    assert info.value.code.value == "invalid_request"
