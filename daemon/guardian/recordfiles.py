"""The exit record files on disk: their names, atomic writes, deletion, listing.

Two private files per runtime in the guardian's records dir (records.py describes their
content and reads them, daemon side):

- `<runtime_id>.tail`: the output the daemon had not acknowledged. Written first.
- `<runtime_id>.exit`: identity, exit status, final offset. Written last: its presence means
  the tail (if any) is complete.

Both are written write → fsync → rename (→ fsync dir), so a reader sees a whole file or
none, and opened without following links. Standard library only: the guardian process
writes them (it takes the bodies already encoded, lite.py's codec), the daemon deletes and
lists them.
"""

from __future__ import annotations

import os

#: Records format version; bump only if an old reader could misread a new record.
RECORDS_VERSION = 1

#: Runtime ids become file and socket names: a safe, bounded alphabet (checked by hand: the
#: guardian process does not import `re`, which costs it a MiB).
_ID_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ID_REST = _ID_FIRST | frozenset("_.-")


def is_runtime_id(text: str) -> bool:
    return (isinstance(text, str) and 1 <= len(text) <= 64 and text[0] in _ID_FIRST
            and all(c in _ID_REST for c in text))


def check_runtime_id(runtime_id: str) -> str:
    """Return `runtime_id` if it is safe as a file name, else raise ValueError."""
    if not is_runtime_id(runtime_id):
        raise ValueError(
            f"invalid runtime id {runtime_id!r}: 1-64 characters of [A-Za-z0-9_.-], "
            "starting with a letter or digit"
        )
    return runtime_id


def exit_path(records_dir: str, runtime_id: str) -> str:
    return os.path.join(records_dir, check_runtime_id(runtime_id) + ".exit")


def tail_path(records_dir: str, runtime_id: str) -> str:
    return os.path.join(records_dir, check_runtime_id(runtime_id) + ".tail")


def _write_private(path: str, body: bytes) -> None:
    """Atomically replace `path` with `body`, mode 0600, durable once this returns."""
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
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


def write_record_files(records_dir: str, runtime_id: str, exit_body: bytes,
                       tail_body: bytes | None) -> None:
    """Write the tail (or remove a stale one) and then the exit record. Guardian side.

    Raises:
        OSError: the dir is missing or not writable (the caller decides what that means).
    """
    tpath = tail_path(records_dir, runtime_id)
    if tail_body is not None:
        _write_private(tpath, tail_body)
    else:
        _unlink_quiet(tpath)
    _write_private(exit_path(records_dir, runtime_id), exit_body)
    _fsync_dir(records_dir)


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def delete_exit_records(records_dir: str, runtime_id: str) -> None:
    """Delete a runtime's records (missing files, or a missing dir, are fine).

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
        if dot and ext == "exit" and is_runtime_id(stem):
            ids.append(stem)
    return sorted(ids)
