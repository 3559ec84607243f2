"""One daemon per state directory, and no file of vigil's opened through a planted link
(issue 10, items 6 and "symlink at vigil.sock.lock").

A second daemon with its own runtime dir but the same state dir used to start, write
`unknown` over the first one's exited records and wedge ingest for good. Now the state dir
carries an exclusive lock for the daemon's life; the second daemon refuses to start and
says which pid holds it, and the CLI that autostarted it prints that sentence. Lock and
store files are opened without following symbolic links and must be regular files of ours:
a link planted at one of them is refused and its target left untouched."""

import os
import signal

import pytest

from tests.support.daemon import processes_with_env, start_once, wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    workspace,
)


def second_runtime(home) -> dict:
    """The home's environment with another runtime dir (socket) and the same state dir."""
    return dict(home.env, VIGIL_SOCKET=str(home.root / "run2" / "vigil.sock"))


def in_use_message(home, pid: int) -> str:
    return (f"the state directory {home.state} is in use by vigild pid {pid} (serving "
            f"{home.socket}); two daemons on one state would overwrite each other's history: "
            f"stop that one, or give this one its own VIGIL_STATE_DIR")


def test_second_daemon_on_the_same_state_refuses_and_names_the_holder(home, daemon, workspace):
    s = Session(home, workspace)
    done = s.run(argv=["sh", "-c", "exit 7"])["execution_id"]
    assert s.wait_exit(done)["exit_code"] == 7
    answer, proc = start_once(second_runtime(home))
    assert proc.returncode == 1
    assert answer == f"ERROR {in_use_message(home, daemon.pid)}\n".encode()
    assert in_use_message(home, daemon.pid) in proc.stderr
    assert not (home.root / "run2" / "vigil.sock").exists()
    # The first daemon's history is untouched and it still runs executions.
    assert s.get(done)["status"] == "exited" and s.get(done)["exit_code"] == 7
    later = s.run(argv=["sh", "-c", "exit 3"])["execution_id"]
    assert s.wait_exit(later)["exit_code"] == 3
    s.close()


def test_cli_that_autostarted_the_second_daemon_shows_why(home, daemon):
    env = second_runtime(home)
    try:
        proc = home.cli("ls", env=env)
        assert proc.returncode == 3, proc
        assert proc.stderr == f"vigil: vigild failed to start: {in_use_message(home, daemon.pid)}\n"
        # The refused daemon leaves: nothing serves the second runtime dir.
        wait_for(lambda: not processes_with_env(f"VIGIL_SOCKET={env['VIGIL_SOCKET']}"),
                 what="the refused daemon to exit")
        assert not (home.root / "run2" / "vigil.sock").exists()
    finally:  # home.cleanup only knows the home's own socket
        for pid in processes_with_env(f"VIGIL_SOCKET={env['VIGIL_SOCKET']}"):
            os.kill(pid, signal.SIGKILL)


def test_same_socket_and_state_is_already_running(home, daemon):
    answer, proc = start_once(home.env)
    assert answer == b"EXISTS\n" and proc.returncode == 0
    assert f"vigild is already running (pid {daemon.pid}) for this socket" in proc.stderr


# --- planted links and foreign files -------------------------------------------------------


def victim(home):
    path = home.root / "victim"
    path.write_bytes(b"precious\n")
    return path


def plant(home, path, target) -> None:
    for parent in reversed(path.relative_to(home.root).parents[:-1]):
        (home.root / parent).mkdir(mode=0o700, exist_ok=True)  # private, as vigil wants them
    os.symlink(target, path)


@pytest.mark.parametrize("where", ["socket_lock", "state_lock", "data.mdb", "lock.mdb"])
def test_planted_symlink_is_refused_and_its_target_untouched(home, where):
    target = victim(home)
    path = {"socket_lock": home.socket.with_name("vigil.sock.lock"),
            "state_lock": home.state / "vigild.lock",
            "data.mdb": home.state / "store" / "data.mdb",
            "lock.mdb": home.state / "store" / "lock.mdb"}[where]
    plant(home, path, target)
    answer, proc = start_once(home.env)
    message = (f"refusing {path}: it is a symbolic link; vigil opens its own files only "
               f"(remove it)")
    assert answer == f"ERROR {message}\n".encode(), answer
    assert proc.returncode == 1
    assert target.read_bytes() == b"precious\n"
    assert os.path.islink(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_lock_file_of_another_user_is_refused(home):
    lock = home.state / "vigild.lock"
    lock.parent.mkdir(mode=0o700)
    lock.write_bytes(b"")
    os.chown(lock, 65534, 65534)
    answer, proc = start_once(home.env)
    assert answer == (f"ERROR refusing {lock}: owned by uid 65534, not by uid 0 "
                      f"(remove it)\n").encode()
    assert proc.returncode == 1


def test_fifo_in_place_of_the_socket_lock_is_refused(home):
    lock = home.socket.with_name("vigil.sock.lock")
    lock.parent.mkdir(mode=0o700)
    os.mkfifo(lock, 0o600)
    answer, proc = start_once(home.env)
    assert answer == f"ERROR refusing {lock}: it is not a regular file (remove it)\n".encode()
    assert proc.returncode == 1


def test_autostart_log_is_not_written_through_a_link(home):
    target = victim(home)
    plant(home, home.state / "vigild.log", target)
    proc = home.cli("ls")
    assert proc.returncode == 3, proc
    assert proc.stderr == (f"vigil: cannot start vigild: refusing {home.state / 'vigild.log'}: "
                           f"it is a symbolic link; vigil opens its own files only (remove it)\n")
    assert target.read_bytes() == b"precious\n"
