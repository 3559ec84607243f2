"""The systemd units verify, and a real socket-activated start serves clients."""

import os
import shutil
import subprocess
import sys

import pytest

from vigil.client import service

needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze not installed (.ci/run installs it)")
needs_activate = pytest.mark.skipif(shutil.which("systemd-socket-activate") is None,
                                    reason="systemd-socket-activate not installed")


@needs_analyze
def test_units_verify(home):
    target = home.root / "units"
    written = service.install(target)
    assert sorted(os.path.basename(p) for p in written) == ["vigil.service", "vigil.socket"]
    text = (target / "vigil.service").read_text()
    assert f"ExecStart={service.vigild_path()}\n" in text and "@VIGILD@" not in text
    assert "Type=notify" in text and "Restart=on-failure" in text
    assert "RuntimeDirectory=" not in text.replace("add\n# RuntimeDirectory=", "")
    sock = (target / "vigil.socket").read_text()
    for line in ("ListenStream=%t/vigil/vigil.sock", "SocketMode=0600", "DirectoryMode=0700"):
        assert line in sock
    runtime = home.root / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    proc = subprocess.run(["systemd-analyze", "verify", "--user", "vigil.socket", "vigil.service"],
                          cwd=target, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


@needs_analyze
def test_verify_catches_a_broken_unit(home):
    bad = home.root / "bad.service"
    bad.write_text("[Service]\nExecStart=/nonexistent/vigild\n")
    proc = subprocess.run(["systemd-analyze", "verify", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0 and "is not executable" in proc.stderr


def test_service_install_cli(home):
    proc = home.cli("service", "install", "--json")
    assert proc.returncode == 0, proc.stderr
    import json
    written = json.loads(proc.stdout)["written"]
    assert written == [str(home.config / "systemd" / "user" / "vigil.service"),
                       str(home.config / "systemd" / "user" / "vigil.socket")]


@needs_activate
def test_socket_activated_start(home):
    home.socket.parent.mkdir(mode=0o700)
    env = dict(home.env)
    env.pop("VIGIL_SOCKET")  # the daemon must learn its socket from the fd systemd passes
    proc = subprocess.Popen(
        ["systemd-socket-activate", "-l", str(home.socket),
         "-E", f"VIGIL_STATE_DIR={home.state}", sys.executable, "-m", "vigil.daemon"],
        env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # "Listening on PATH as 3." once the socket exists
        assert line.startswith(f"Listening on {home.socket}"), line
        with home.client() as c:  # queued by the kernel until the daemon accepts
            st = c.call("status")
        assert st["socket_activated"] is True and st["socket"] == str(home.socket)
        assert st["pid"] == proc.pid  # systemd-socket-activate execs the daemon in place
    finally:
        proc.terminate()
        proc.wait(10)
    assert home.socket.exists()  # systemd owns the path: the daemon must not unlink it
