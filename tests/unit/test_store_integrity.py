"""`check_data_file` passes every healthy LMDB file, whatever its shape: brand new (only the
meta pages), after many transactions, with one or many named databases, with a main
database deep enough to need branch pages. Its refusals run through the real daemon in
tests/reliability/test_store_damage.py."""

import lmdb
import pytest

from vigil.daemon.store.integrity import DataFileDamaged, check_data_file


def open_env(path, **kw):
    return lmdb.open(str(path), map_size=1 << 26, max_dbs=600, **kw)


def test_brand_new_file_passes(tmp_path):
    open_env(tmp_path).close()
    check_data_file(str(tmp_path / "data.mdb"))


@pytest.mark.parametrize("names", [1, 10, 500])
def test_named_databases_pass(tmp_path, names):
    env = open_env(tmp_path)
    for i in range(names):
        db = env.open_db(f"db{i:03d}".encode())
        with env.begin(write=True) as txn:
            for k in range(50):
                txn.put(b"k%05d" % k, b"v" * (k * 40), db=db)
    env.close()
    check_data_file(str(tmp_path / "data.mdb"))


def test_many_transactions_and_deletes_pass(tmp_path):
    env = open_env(tmp_path)
    db = env.open_db(b"output")
    for round_ in range(30):
        with env.begin(write=True) as txn:
            for k in range(200):
                txn.put(b"%03d%05d" % (round_, k), b"x" * 3000, db=db)
            if round_ % 3 == 2:
                for k in range(200):
                    txn.delete(b"%03d%05d" % (round_ - 1, k), db=db)
    env.close()
    check_data_file(str(tmp_path / "data.mdb"))


def test_one_byte_short_is_truncated(tmp_path):
    env = open_env(tmp_path)
    with env.begin(write=True) as txn:
        for k in range(500):
            txn.put(b"%05d" % k, b"v" * 500)
    env.close()
    path = tmp_path / "data.mdb"
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 1)
    with pytest.raises(DataFileDamaged) as info:
        check_data_file(str(path))
    assert str(info.value).startswith(f"it is {size - 1} bytes, but its last transaction needs ")
