"""Exit records: what a guardian leaves behind when no daemon took its exit in person.

Two private files per runtime in the guardian's records dir, both msgpack, both written
write → fsync → rename (→ fsync dir), so a reader sees a whole file or none:

- `<runtime_id>.tail`: the output the daemon had not acknowledged, with its start offset and
  the range lost from the ring before it (if any). Written first.
- `<runtime_id>.exit`: identity, exit status, final offset. Written last: its presence means
  the tail (if any) is complete.

The guardian writes both as soon as its child has exited and the PTY is drained, *before*
telling a connected daemon, so a guardian killed while waiting for ExitAck still leaves its
exit behind; after ExitAck it deletes them. The daemon reads them with `read_exit_records`
once the guardian is gone (`identity_alive` is False), persists what it needs, then calls
`delete_exit_records`. Stdlib + msgspec only (the guardian writes these).
"""

from __future__ import annotations

import os
import re

import msgspec
from msgspec import Struct

from .wire import ExitStatus, Gap, RuntimeIdentity

#: Records format version; bump only if an old reader could misread a new record.
RECORDS_VERSION = 1

#: Runtime ids become file and socket names: keep them to a safe, bounded alphabet.
RUNTIME_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


def check_runtime_id(runtime_id: str) -> str:
    """Return `runtime_id` if it is safe as a file name, else raise ValueError."""
    if not isinstance(runtime_id, str) or not RUNTIME_ID_RE.fullmatch(runtime_id):
        raise ValueError(
            f"invalid runtime id {runtime_id!r}: 1-64 characters of [A-Za-z0-9_.-], "
            "starting with a letter or digit"
        )
    return runtime_id


def exit_path(records_dir: str, runtime_id: str) -> str:
    return os.path.join(records_dir, check_runtime_id(runtime_id) + ".exit")


def tail_path(records_dir: str, runtime_id: str) -> str:
    return os.path.join(records_dir, check_runtime_id(runtime_id) + ".tail")


_encoder = msgspec.msgpack.Encoder()
_exit_decoder = msgspec.msgpack.Decoder(ExitRecord)
_tail_decoder = msgspec.msgpack.Decoder(TailRecord)


def _write_private(path: str, body: bytes) -> None:
    """Atomically replace `path` with `body`, mode 0600, durable once this returns."""
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_exit_records(
    records_dir: str,
    identity: RuntimeIdentity,
    status: ExitStatus,
    end_offset: int,
    tail: TailRecord | None,
) -> None:
    """Write the tail (when there is one) and then the exit record. Guardian side."""
    tpath = tail_path(records_dir, identity.runtime_id)
    if tail is not None:
        _write_private(tpath, _encoder.encode(tail))
    else:
        _unlink_quiet(tpath)
    record = ExitRecord(version=RECORDS_VERSION, identity=identity, status=status, end_offset=end_offset)
    _write_private(exit_path(records_dir, identity.runtime_id), _encoder.encode(record))
    _fsync_dir(records_dir)


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


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


def delete_exit_records(records_dir: str, runtime_id: str) -> None:
    """Delete a runtime's records (missing files are fine). Daemon side, after persisting.

    The tail goes first: an interrupted delete leaves at worst the exit record, which is
    idempotent to read again, and never an orphan tail that no listing would find.
    """
    _unlink_quiet(tail_path(records_dir, runtime_id))
    _unlink_quiet(exit_path(records_dir, runtime_id))


def list_exit_records(records_dir: str) -> list[str]:
    """Runtime ids that have an exit record in `records_dir`, sorted. Daemon side."""
    try:
        names = os.listdir(records_dir)
    except FileNotFoundError:
        return []
    ids = []
    for name in names:
        stem, dot, ext = name.rpartition(".")
        if dot and ext == "exit" and RUNTIME_ID_RE.fullmatch(stem):
            ids.append(stem)
    return sorted(ids)
