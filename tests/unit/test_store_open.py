"""Opening the store: privacy, identity, refusals, read-only files, map growth, disk full."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import lmdb
import pytest

from tests.unit.test_store_support import FakeClock, new_record, open_store
from vigil.daemon.store import ExecutionUpdate, Store, StoreError, read_output_page
from vigil.daemon.store.env import MAGIC, STORE_SCHEMA, U64
from vigil.daemon.settings import Settings


def test_new_store_is_private_and_keeps_its_identity(tmp_path):
    store = open_store(tmp_path)
    epoch, key = store.store_epoch, store.mac_key
    assert len(epoch) == 16 and len(key) == 32
    store.close()
    path = tmp_path / "state"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for name in ("data.mdb", "lock.mdb"):
        assert stat.S_IMODE((path / name).stat().st_mode) == 0o600
    again = open_store(tmp_path)
    assert (again.store_epoch, again.mac_key) == (epoch, key)  # created once, never again
    again.close()
    other = Store.open(tmp_path / "other", Settings(store_initial_map_bytes=1 << 20))
    assert other.store_epoch != epoch and other.mac_key != key
    other.close()


def test_too_open_directory_is_made_private(tmp_path):
    path = tmp_path / "state"
    path.mkdir(mode=0o755)
    os.chmod(path, 0o755)
    open_store(tmp_path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_files_are_0600_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        open_store(tmp_path).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "state" / "data.mdb").stat().st_mode) == 0o600


def _set_schema(path: Path, schema: int) -> None:
    env = lmdb.open(str(path), max_dbs=16)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as txn:
        txn.put(b"schema", U64.pack(schema), db=meta)
    env.close()


def test_newer_store_schema_is_refused_and_left_untouched(tmp_path):
    store = open_store(tmp_path)
    rec = store.create_execution(new_record())
    store.close()
    path = tmp_path / "state"
    _set_schema(path, STORE_SCHEMA + 1)
    before = (path / "data.mdb").read_bytes()
    with pytest.raises(StoreError) as info:
        open_store(tmp_path)
    assert info.value.message == (
        f"the vigil store {path} has schema {STORE_SCHEMA + 1}, newer than this vigil supports "
        f"({STORE_SCHEMA}); upgrade vigil (the store was left untouched)"
    )
    assert info.value.code.value == "storage_error"
    assert (path / "data.mdb").read_bytes() == before
    _set_schema(path, STORE_SCHEMA)  # back to ours: the data is all there
    store = open_store(tmp_path)
    assert store.get(rec.scope, rec.execution_id) == rec
    store.close()


def test_a_foreign_file_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "state"
    path.mkdir(mode=0o700)
    junk = b"this is not an LMDB file at all\n" * 512
    (path / "data.mdb").write_bytes(junk)
    with pytest.raises(StoreError) as info:
        open_store(tmp_path)
    assert info.value.message == (
        f"{path} holds a file that is not a vigil store (its first page is not an LMDB meta "
        "page); it was left untouched: "
        "move it away or point VIGIL_STATE_DIR elsewhere"
    )
    assert (path / "data.mdb").read_bytes() == junk


def test_an_lmdb_environment_of_someone_else_is_refused(tmp_path):
    path = tmp_path / "state"
    env = lmdb.open(str(path), max_dbs=4)
    with env.begin(write=True) as txn:
        txn.put(b"hello", b"world")
    env.close()
    with pytest.raises(StoreError) as info:
        open_store(tmp_path)
    assert info.value.message == (
        f"{path} is an LMDB environment but not a vigil store; it was left untouched: "
        "move it away or point VIGIL_STATE_DIR elsewhere"
    )


def test_an_lmdb_with_a_meta_db_but_no_magic_is_refused(tmp_path):
    path = tmp_path / "state"
    env = lmdb.open(str(path), max_dbs=4)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as txn:
        txn.put(b"magic", b"other-app", db=meta)
    env.close()
    with pytest.raises(StoreError) as info:
        open_store(tmp_path)
    assert "is an LMDB environment but not a vigil store" in info.value.message
    env = lmdb.open(str(path), max_dbs=4)
    with env.begin() as txn:
        assert txn.get(b"magic", db=env.open_db(b"meta", txn=txn, create=False)) == b"other-app"
    env.close()
    assert MAGIC == b"vigil-store"


def test_a_file_where_the_directory_should_be_is_refused(tmp_path):
    (tmp_path / "state").write_bytes(b"x")
    with pytest.raises(StoreError) as info:
        open_store(tmp_path)
    assert info.value.message == f"{tmp_path / 'state'} is not a directory, so it is not a vigil store; move it away"


def test_map_grows_from_a_tiny_initial_map(tmp_path):
    clock = FakeClock()
    store = Store.open(
        tmp_path / "state",
        Settings(store_initial_map_bytes=1 << 20, retention_output_bytes=8 << 20, retention_scope_bytes=64 << 20),
        clock,
    )
    assert store.map_size() == 1 << 20
    rec = store.create_execution(new_record())
    payload = bytes(range(256)) * 4096  # 1 MiB per batch
    for i in range(6):
        store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(i * len(payload), payload)])])
    assert store.map_size() >= 8 << 20
    got = store.get(rec.scope, rec.execution_id)
    assert got.output_total_bytes == 6 << 20 and got.output_dropped_bytes == 0
    page = read_output_page(store, rec.scope, rec.execution_id, None, 65536)
    assert page.end_offset == 65536
    store.check_invariants()
    store.close()


def test_map_full_at_the_maximum_is_a_clear_error_and_loses_nothing(tmp_path):
    store = Store.open(
        tmp_path / "state",
        Settings(store_initial_map_bytes=1 << 20, store_max_map_bytes=2 << 20, retention_output_bytes=64 << 20,
                 retention_scope_bytes=64 << 20),
        FakeClock(),
    )
    rec = store.create_execution(new_record())
    chunk = b"x" * (256 << 10)
    offset = 0
    with pytest.raises(StoreError) as info:
        for _ in range(100):
            store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(offset, chunk)])])
            offset += len(chunk)
    assert info.value.message == (
        f"the vigil store {tmp_path / 'state'} reached its maximum size ({2 << 20} bytes, "
        "store_max_map_bytes); the last change was not saved"
    )
    assert store.get(rec.scope, rec.execution_id).output_total_bytes == offset  # all committed kept
    store.check_invariants()
    store.close()


_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from test_store_support import FakeClock, new_record
    from vigil.daemon.store import ExecutionUpdate, Store, StoreError
    from vigil.daemon.settings import Settings
    out = {}
    store = Store.open(Path(sys.argv[1]), Settings(store_initial_map_bytes=1 << 20), FakeClock())
    {body}
    print(json.dumps(out))
    """
)


def _run_child(body: str, path: Path, *, prefix: list[str] = (), preexec=None) -> dict:
    """Run `body` in a fresh interpreter with `store` opened on `path`; return its `out`."""
    code = _CHILD.replace("{body}", textwrap.dedent(body))
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", code, str(path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_read_only_store_reads_work_and_writes_say_why(tmp_path):
    """Files 0400 in a 0500 directory, opened by a process without capabilities (so that
    even root is subject to file permissions): reads work, writes say why they cannot."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is needed to drop capabilities")
    path = tmp_path / "state"
    store = Store.open(path, Settings(store_initial_map_bytes=1 << 20), FakeClock())
    rec = store.create_execution(new_record())
    store.commit_batch([ExecutionUpdate(execution_id=rec.execution_id, output=[(0, b"kept")])])
    store.close()
    for name in ("data.mdb", "lock.mdb"):
        os.chmod(path / name, 0o400)
    os.chmod(path, 0o500)
    body = f"""
        out["readonly"] = store.readonly
        rec = store.get({rec.scope!r}, {rec.execution_id!r})
        out["bytes"] = rec.output_total_bytes
        from vigil.daemon.store import read_output_page
        out["text"] = read_output_page(store, {rec.scope!r}, {rec.execution_id!r}).text
        try:
            store.commit_batch([ExecutionUpdate(execution_id={rec.execution_id!r}, output=[(4, b"more")])])
        except StoreError as exc:
            out["error"] = exc.message
    """
    try:
        out = _run_child(body, path, prefix=["setpriv", "--bounding-set=-all", "--inh-caps=-all"])
    finally:
        os.chmod(path, 0o700)
    assert out == {
        "readonly": True,
        "bytes": 4,
        "text": "kept",
        "error": f"the vigil store {path} is read-only here; reads work, changes cannot be saved",
    }


def test_disk_full_is_a_clear_error_and_loses_nothing(tmp_path):
    """RLIMIT_FSIZE makes the kernel refuse to grow data.mdb (EFBIG), as a full disk would."""
    path = tmp_path / "state"
    store = Store.open(path, Settings(store_initial_map_bytes=64 << 20), FakeClock())
    rec = store.create_execution(new_record())
    store.close()
    limit = (path / "data.mdb").stat().st_size + (512 << 10)
    body = f"""
        import signal
        chunk = bytes(range(256)) * 1024
        offset = 0
        try:
            for _ in range(64):
                store.commit_batch([ExecutionUpdate(execution_id={rec.execution_id!r}, output=[(offset, chunk)])])
                offset += len(chunk)
        except StoreError as exc:
            out["error"] = exc.message
        out["committed"] = offset
        out["seen"] = store.get({rec.scope!r}, {rec.execution_id!r}).output_total_bytes
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        store.commit_batch([ExecutionUpdate(execution_id={rec.execution_id!r}, output=[(offset, chunk)])])
        out["after_space_freed"] = store.get({rec.scope!r}, {rec.execution_id!r}).output_total_bytes
    """
    def preexec():
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    out = _run_child(body, path, preexec=preexec)
    assert out["error"] == (
        f"could not write the vigil store {path}: the disk is full (or a quota/file-size limit "
        "was hit, or the disk failed); the last change was not saved, nothing saved before is "
        "lost; free space and retry"
    )
    assert 0 < out["committed"] < 64 * 256 * 1024
    assert out["seen"] == out["committed"]
    assert out["after_space_freed"] == out["committed"] + 256 * 1024  # the same store goes on
    store = Store.open(path, Settings(store_initial_map_bytes=64 << 20), FakeClock())
    got = store.get(rec.scope, rec.execution_id)
    assert got.output_total_bytes == out["after_space_freed"]
    page = read_output_page(store, rec.scope, rec.execution_id, None, 1024)
    assert page.end_offset == 1024
    store.check_invariants()
    store.close()
