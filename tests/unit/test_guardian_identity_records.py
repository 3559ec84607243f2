"""/proc identity parsing, identity_alive, and the exit records files."""

import os
import stat

import msgspec
import pytest

from vigil.daemon.guardian import records, wire
from vigil.daemon.guardian.identity import (
    identity_alive,
    parse_stat,
    read_boot_id,
    read_pgrp,
    read_start_ticks,
)

# --- identity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comm",
    ["python3", "a b", "(sd-pam)", "x) S 1 2 3 (y", ") )) ("],
)
def test_parse_stat_survives_any_comm(comm):
    rest = "S 1 77 77 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10"
    text = f"4242 ({comm}) {rest}\n".encode()
    parsed_comm, fields = parse_stat(text)
    assert parsed_comm == comm
    assert fields[0] == b"S"
    assert fields[2] == b"77"  # pgrp, field 5
    assert fields[19] == b"123456"  # starttime, field 22


def test_parse_stat_rejects_garbage():
    with pytest.raises(ValueError, match="not a /proc/PID/stat line"):
        parse_stat(b"no parentheses here")


def test_start_ticks_of_self_match_proc():
    with open("/proc/self/stat", "rb") as f:
        expected = int(parse_stat(f.read())[1][19])
    assert read_start_ticks(os.getpid()) == expected
    assert read_pgrp(os.getpid()) == os.getpgrp()


def test_missing_process_has_no_ticks():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    assert read_start_ticks(pid_max + 1) is None
    assert read_pgrp(pid_max + 1) is None


def _own_identity(**changes) -> wire.RuntimeIdentity:
    ident = wire.RuntimeIdentity(
        runtime_id="self",
        boot_id=read_boot_id(),
        guardian_pid=os.getpid(),
        guardian_start_ticks=read_start_ticks(os.getpid()),
        child_pid=os.getpid(),
    )
    return msgspec.structs.replace(ident, **changes)


def test_identity_alive_compares_pid_ticks_and_boot():
    assert identity_alive(_own_identity())
    # Same pid, different start time: a reused pid is not that guardian.
    assert not identity_alive(_own_identity(guardian_start_ticks=read_start_ticks(os.getpid()) + 1))
    assert not identity_alive(_own_identity(boot_id="00000000-0000-0000-0000-000000000000"))
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    assert not identity_alive(_own_identity(guardian_pid=pid_max + 1))


# --- records -------------------------------------------------------------------------------

IDENTITY = wire.RuntimeIdentity(
    runtime_id="rt-1", boot_id="b", guardian_pid=10, guardian_start_ticks=20, child_pid=11
)
STATUS = wire.ExitStatus(exit_code=None, signal=9, ended_unix_ms=1)


@pytest.fixture
def rdir(tmp_path):
    d = tmp_path / "records"
    d.mkdir(mode=0o700)
    return str(d)


def test_records_round_trip_private_files(rdir):
    tail = records.TailRecord(
        version=1, runtime_id="rt-1", start_offset=100, data=b"xyz", gap=wire.Gap(start=40, end=100)
    )
    records.write_exit_records(rdir, IDENTITY, STATUS, 103, tail)
    assert sorted(os.listdir(rdir)) == ["rt-1.exit", "rt-1.tail"]
    for name in os.listdir(rdir):
        assert stat.S_IMODE(os.stat(os.path.join(rdir, name)).st_mode) == 0o600
    got = records.read_exit_records(rdir, "rt-1")
    assert got == records.GuardianRecords(
        exit=records.ExitRecord(version=1, identity=IDENTITY, status=STATUS, end_offset=103), tail=tail
    )
    assert records.list_exit_records(rdir) == ["rt-1"]
    records.delete_exit_records(rdir, "rt-1")
    assert os.listdir(rdir) == []
    assert records.read_exit_records(rdir, "rt-1") is None
    records.delete_exit_records(rdir, "rt-1")  # idempotent


def test_rewrite_without_tail_removes_old_tail(rdir):
    tail = records.TailRecord(version=1, runtime_id="rt-1", start_offset=0, data=b"a")
    records.write_exit_records(rdir, IDENTITY, STATUS, 1, tail)
    records.write_exit_records(rdir, IDENTITY, STATUS, 1, None)
    assert os.listdir(rdir) == ["rt-1.exit"]
    assert records.read_exit_records(rdir, "rt-1").tail is None


def test_corrupt_record_names_the_file(rdir):
    path = os.path.join(rdir, "rt-1.exit")
    with open(path, "wb") as f:
        f.write(b"\x93garbage")
    with pytest.raises(records.RecordsError, match=rf"^{path}: "):
        records.read_exit_records(rdir, "rt-1")


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "x" * 65, "sp ace"])
def test_bad_runtime_ids_are_refused(rdir, bad):
    with pytest.raises(ValueError, match="invalid runtime id"):
        records.read_exit_records(rdir, bad)


def test_list_ignores_other_files(rdir):
    for name in ["a.exit", "b.tail", "c.exit.tmp.5", "..exit", "d.sock"]:
        open(os.path.join(rdir, name), "wb").close()
    assert records.list_exit_records(rdir) == ["a"]
    assert records.list_exit_records(os.path.join(rdir, "missing")) == []
