"""Exit records, daemon side: what a guardian leaves behind when no daemon took its exit in
person, decoded into wire.py's Structs.

The files, their names and their atomic writing are in recordfiles.py (standard library
only, which the guardian process uses; this module imports msgspec). The guardian writes
both as soon as its child has exited and the PTY is drained, *before* telling a connected
daemon, so a guardian killed while waiting for ExitAck still leaves its exit behind; after
ExitAck it deletes them. The daemon reads them with `read_exit_records` once the guardian is
gone (`identity_alive` is False), persists what it needs, then calls `delete_exit_records`.
"""

from __future__ import annotations

import msgspec
from msgspec import Struct

from .recordfiles import (  # noqa: F401  (re-exported: the daemon's one import for records)
    RECORDS_VERSION,
    check_runtime_id,
    delete_exit_records,
    exit_path,
    list_exit_records,
    tail_path,
    write_record_files,
)
from .wire import ExitStatus, Gap, RuntimeIdentity


class ExitRecord(Struct, kw_only=True):
    """`<runtime_id>.exit`: how the child ended and where its output ended."""

    version: int
    identity: RuntimeIdentity
    status: ExitStatus
    end_offset: int


class TailRecord(Struct, kw_only=True):
    """`<runtime_id>.tail`: unacknowledged output, `data` starting at `start_offset`.

    `gap` is set when bytes after the last acknowledged offset had already been overwritten
    in the ring: [gap.start, gap.end) is lost and `start_offset == gap.end`.
    """

    version: int
    runtime_id: str
    start_offset: int
    data: bytes
    gap: Gap | None = None


class GuardianRecords(Struct, kw_only=True):
    """What `read_exit_records` returns."""

    exit: ExitRecord
    tail: TailRecord | None


class RecordsError(ValueError):
    """A records file exists but cannot be decoded; the message names the file."""


_encoder = msgspec.msgpack.Encoder()
_exit_decoder = msgspec.msgpack.Decoder(ExitRecord)
_tail_decoder = msgspec.msgpack.Decoder(TailRecord)


def write_exit_records(
    records_dir: str,
    identity: RuntimeIdentity,
    status: ExitStatus,
    end_offset: int,
    tail: TailRecord | None,
) -> None:
    """Write the tail (when there is one) and then the exit record (what a guardian does,
    with msgspec's encoder: for tests and tools; the guardian itself uses lite.py's)."""
    record = ExitRecord(version=RECORDS_VERSION, identity=identity, status=status, end_offset=end_offset)
    write_record_files(records_dir, identity.runtime_id, _encoder.encode(record),
                       None if tail is None else _encoder.encode(tail))


def read_exit_records(records_dir: str, runtime_id: str) -> GuardianRecords | None:
    """The records a guardian left, or None if it left no exit record. Daemon side.

    Call only for a guardian that is gone (`identity_alive` False): a live guardian may still
    be rewriting them. Check `records.exit.identity` against the identity you expected.

    Raises:
        RecordsError: a file is present but corrupt (the message names it).
        ValueError: `runtime_id` is not a valid runtime id.
    """
    epath = exit_path(records_dir, runtime_id)
    try:
        with open(epath, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        record = _exit_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise RecordsError(f"{epath}: {exc}") from None
    tpath = tail_path(records_dir, runtime_id)
    try:
        with open(tpath, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return GuardianRecords(exit=record, tail=None)
    try:
        tail = _tail_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise RecordsError(f"{tpath}: {exc}") from None
    return GuardianRecords(exit=record, tail=tail)
