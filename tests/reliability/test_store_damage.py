"""A damaged store is refused at start with a sentence, never mapped (issue 10, Degraded).

A truncated `data.mdb` used to kill the daemon with SIGBUS (LMDB maps pages past the end of
the file) and log nothing; garbage over its pages gave a traceback; a zero-length file
silently became an empty store; and the CLI said only "did not start within 10 s". Now the
daemon reads the file's two meta pages itself before LMDB maps it (size against the last
committed page, the page headers of every database root), refuses with the file, what is
wrong and what to do, leaves the file exactly as it was, and the CLI that autostarted it
prints that sentence — or, for a daemon that died without a word, its last log line."""

import os
import re
import shutil
import struct

import pytest

from tests.support.daemon import start_once
from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    python_child,
    workspace,
)

#: LMDB 0.9 on 64-bit: a page header is 16 bytes, the meta that follows it starts with
#: magic and version; FREE's md_pad (the page size) sits 24 bytes in, last_pg 120 bytes in.
META_MAGIC = 0xBEEFC0DE


def page_size_and_need(data: bytes) -> tuple[int, int]:
    """(page size, bytes the newest meta's last page reaches): the test's own oracle."""
    psize = struct.unpack_from("<I", data, 16 + 24)[0]
    metas = [struct.unpack_from("<QQ", data, i * psize + 16 + 120) for i in (0, 1)]
    last_pg, _ = max(metas, key=lambda m: m[1])
    return psize, (last_pg + 1) * psize


@pytest.fixture
def store_file(home, workspace):
    """A store with history in it (one execution with output), its daemon stopped."""
    d = home.start_daemon()
    s = Session(home, workspace)
    eid = s.run(argv=python_child("print('history worth keeping\\n' * 2000)"))["execution_id"]
    s.wait_exit(eid)
    s.close()
    assert d.stop() == 0
    return home.state / "store" / "data.mdb"


def advice(path) -> str:
    store = path.parent
    return (f"vigil left it untouched and will not start on it: move the store aside "
            f"(mv {store} {store}.damaged) to start with an empty one, or restore it from a backup")


def refused(home, path, damage: str) -> None:
    before = path.read_bytes()
    answer, proc = start_once(home.env)
    message = f"the vigil store file {path} is damaged: {damage}; {advice(path)}"
    assert answer == f"ERROR {message}\n".encode()
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert path.read_bytes() == before  # untouched, not "repaired", not reset


def test_truncated_file_is_refused_before_it_is_mapped(home, store_file):
    data = store_file.read_bytes()
    psize, need = page_size_and_need(data)
    assert need > 4 * psize, "the store is too small to truncate meaningfully"
    keep = 3 * psize
    os.truncate(store_file, keep)
    refused(home, store_file, f"it is {keep} bytes, but its last transaction needs {need} "
                              f"bytes (it was truncated)")
    # Following the advice gives a daemon again (with an empty store), the damaged one kept.
    store = store_file.parent
    os.rename(store, f"{store}.damaged")
    home.start_daemon()
    assert os.path.getsize(f"{store}.damaged/data.mdb") == keep


def test_zero_length_file_is_not_an_empty_store(home, store_file):
    os.truncate(store_file, 0)
    refused(home, store_file, "it is empty (0 bytes), so it holds no history (an interrupted "
                              "first start, or a truncation)")


def test_damaged_meta_page_is_refused(home, store_file):
    data = bytearray(store_file.read_bytes())
    psize, _ = page_size_and_need(data)
    struct.pack_into("<I", data, psize + 16, 0x12345678)  # meta page 1's magic
    store_file.write_bytes(data)
    refused(home, store_file, "meta page 1 is not an LMDB meta page (bad magic 0x12345678)")


def test_garbage_over_the_pages_is_refused(home, store_file):
    data = bytearray(store_file.read_bytes())
    psize, need = page_size_and_need(data)
    rng = __import__("random").Random(10)
    data[2 * psize:need] = bytes(rng.getrandbits(8) for _ in range(need - 2 * psize))
    store_file.write_bytes(data)
    before = bytes(data)
    answer, proc = start_once(home.env)
    assert proc.returncode == 1
    text = answer.decode()
    assert re.fullmatch(
        rf"ERROR the vigil store file {re.escape(str(store_file))} is damaged: page \d+, the root "
        rf"of the (free-page|main) database, is not a tree page \(header says page \d+, flags "
        rf"0x[0-9a-f]+\); {re.escape(advice(store_file))}\n", text), text
    assert "Traceback" not in proc.stderr, proc.stderr
    assert store_file.read_bytes() == before


def test_garbage_over_a_named_database_root_is_refused(home, store_file):
    """The main database's leaf names every vigil database; each of their roots is checked."""
    import lmdb

    env = lmdb.open(str(store_file.parent), readonly=True, lock=False, max_dbs=32)
    with env.begin() as txn:
        names = [bytes(k) for k, _ in txn.cursor()]
    env.close()
    assert b"executions" in names
    data = bytearray(store_file.read_bytes())
    psize, _ = page_size_and_need(data)
    # The executions db's root page, from its MDB_db record (root 40 bytes in) right after its
    # name in the main database's leaf, whose page the newest meta names (MAIN's md_root).
    newest = max((0, 1), key=lambda i: struct.unpack_from("<Q", data, i * psize + 16 + 128)[0])
    main_root = struct.unpack_from("<Q", data, newest * psize + 16 + 72 + 40)[0]
    leaf = bytes(data[main_root * psize:(main_root + 1) * psize])
    at = leaf.index(b"executions")
    root = struct.unpack_from("<Q", leaf, at + len(b"executions") + 40)[0]
    data[root * psize:(root + 1) * psize] = b"\xa5" * psize
    store_file.write_bytes(data)
    refused(home, store_file, f"page {root}, the root of the database 'executions', is not a "
                              f"tree page (header says page {0xa5a5a5a5a5a5a5a5}, flags 0xa5a5)")


def test_cli_shows_why_the_store_was_refused(home, store_file):
    os.truncate(store_file, 0)
    proc = home.cli("ls")
    assert proc.returncode == 3
    assert proc.stderr == (f"vigil: vigild failed to start: the vigil store file {store_file} "
                           f"is damaged: it is empty (0 bytes), so it holds no history (an "
                           f"interrupted first start, or a truncation); {advice(store_file)}\n")


def test_cli_shows_the_last_log_line_of_a_daemon_that_died_silently(home):
    # A broken install of one of the daemon's dependencies: the CLI never imports trio, the
    # daemon dies importing it, before it could say anything on its readiness pipe.
    broken = home.root / "broken"
    (broken / "trio").mkdir(parents=True)
    (broken / "trio" / "__init__.py").write_text("raise ImportError('trio is broken here')\n")
    env = dict(home.env, PYTHONPATH=str(broken))
    proc = home.cli("ls", env=env)
    assert proc.returncode == 3, proc
    log = home.state / "vigild.log"
    assert proc.stderr == (f"vigil: vigild exited before it was ready; its last log line: "
                           f"ImportError: trio is broken here (see {log})\n")
    shutil.rmtree(broken)
