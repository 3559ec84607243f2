"""Starting, finding and stopping the daemon: private dirs, the single-instance lock, stale
and live sockets, autostart races, systemd readiness, graceful SIGTERM."""

import json
import os
import signal
import socket
import stat
import subprocess
import sys

import pytest

from tests.support.daemon import wait_for


def run_daemon_once(home, timeout=15, env=None):
    return subprocess.run([sys.executable, "-m", "vigil.daemon"], env=env or home.env,
                          capture_output=True, text=True, timeout=timeout)


def test_socket_and_dirs_are_private(home, daemon):
    st = os.stat(home.socket)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home.socket.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(home.state).st_mode) == 0o700
    with home.client() as c:
        st = c.call("status")
    assert st["pid"] == daemon.pid and st["socket"] == str(home.socket)
    assert st["state_dir"] == str(home.state) and st["socket_activated"] is False


def test_group_readable_runtime_dir_is_refused(home):
    home.socket.parent.mkdir(mode=0o700)
    os.chmod(home.socket.parent, 0o750)
    proc = run_daemon_once(home)
    assert proc.returncode == 1
    assert f"refusing {home.socket.parent}: mode 0750 lets other users in" in proc.stderr
    assert not home.socket.exists()


def test_runtime_dir_owned_by_another_user_is_refused(home):
    if os.getuid() != 0:
        pytest.skip("needs root to chown a directory to another user")
    home.socket.parent.mkdir(mode=0o700)
    os.chown(home.socket.parent, 65534, 65534)
    proc = run_daemon_once(home)
    assert proc.returncode == 1
    assert f"refusing {home.socket.parent}: owned by uid 65534, not by uid 0" in proc.stderr


def test_second_daemon_refused_while_first_lives(home, daemon):
    proc = run_daemon_once(home)
    assert proc.returncode == 1
    assert f"vigild is already running (pid {daemon.pid}) for this socket" in proc.stderr
    with home.client() as c:
        assert c.call("status")["pid"] == daemon.pid


def test_stale_socket_replaced(home):
    home.socket.parent.mkdir(mode=0o700)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(home.socket))
    s.close()  # leaves the path behind with nobody listening: ECONNREFUSED
    d = home.start_daemon()
    with home.client() as c:
        assert c.call("status")["pid"] == d.pid


def test_live_socket_never_stolen(home):
    home.socket.parent.mkdir(mode=0o700)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(str(home.socket))
    squatter.listen(1)
    try:
        proc = run_daemon_once(home)
        assert proc.returncode == 1
        assert "does not hold" in proc.stderr and "refusing to steal it" in proc.stderr
        assert home.socket.exists()
    finally:
        squatter.close()


def test_stale_lock_and_socket_from_killed_daemon(home):
    first = home.start_daemon()
    first.kill()
    assert home.socket.exists()
    second = home.start_daemon()
    with home.client() as c:
        assert c.call("status")["pid"] == second.pid


def test_sigterm_stops_gracefully_and_unlinks_own_socket(home):
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify_path = home.root / "notify"
    notify.bind(str(notify_path))
    notify.settimeout(10)
    d = home.start_daemon(extra_env={"NOTIFY_SOCKET": str(notify_path)})
    assert notify.recv(100) == b"READY=1"
    d.proc.send_signal(signal.SIGTERM)
    assert notify.recv(100) == b"STOPPING=1"
    assert d.proc.wait(10) == 0
    assert not home.socket.exists()
    notify.close()


def test_twenty_clis_start_exactly_one_daemon(home):
    procs = [subprocess.Popen([sys.executable, "-m", "vigil.client.cli", "--json", "status"],
                              env=home.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(20)]
    pids = set()
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        pids.add(json.loads(out)["pid"])
    assert len(pids) == 1
    (pid,) = pids
    # The racers that lost the lock exit on their own; what must remain is the one winner.
    wait_for(lambda: vigilds_for(home) == {pid}, what="only the winning daemon left")
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not vigilds_for(home), what="daemon exit")


def vigilds_for(home) -> set[int]:
    """Live vigild processes serving this test's socket (read from /proc)."""
    found = set()
    needle = f"VIGIL_SOCKET={home.socket}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            if b"vigil.daemon" not in cmd:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle + b"\0" not in f.read() + b"\0":
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        found.add(int(entry))
    return found
