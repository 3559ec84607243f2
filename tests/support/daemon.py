"""Real daemons for tests: each in its own private temp dir, started through the same
readiness pipe an autostarting CLI uses, stopped with SIGTERM (or killed on purpose)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vigil.client.connection import Client
from vigil.protocol.frames import FrameDecoder

REPO = Path(__file__).resolve().parents[2]


def wait_for(condition, timeout: float = 10.0, what: str = "condition"):
    """Return condition()'s first truthy value, re-checking until the deadline.

    Only for states that have no event to wait on (a process disappearing, a count that the
    daemon reports); each check is a real observation, never a fixed sleep.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


class VigilHome:
    """A private world for one test: socket, state, config, all under a short temp path
    (Unix socket paths must stay under 108 bytes, pytest's tmp_path can be longer)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="vg", dir="/tmp"))
        os.chmod(self.root, 0o700)
        self.socket = self.root / "run" / "vigil.sock"
        self.state = self.root / "state"
        self.config = self.root / "config"
        self.config.mkdir()
        self.env = dict(os.environ)
        for name in list(self.env):
            if name.startswith(("VIGIL_", "LISTEN_", "NOTIFY_SOCKET", "INVOCATION_ID")):
                del self.env[name]
        self.env.update(VIGIL_SOCKET=str(self.socket), VIGIL_STATE_DIR=str(self.state),
                        XDG_CONFIG_HOME=str(self.config),
                        VIGIL_CONFIG=str(self.config / "vigil" / "config.toml"))
        self.daemons: list[DaemonProcess] = []

    def write_config(self, text: str) -> None:
        path = Path(self.env["VIGIL_CONFIG"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def start_daemon(self, **kwargs) -> "DaemonProcess":
        d = DaemonProcess(self, **kwargs)
        self.daemons.append(d)
        d.start()
        return d

    def client(self, **kwargs) -> Client:
        return Client(self.socket, **kwargs)

    def cli(self, *args: str, input: str | None = None, timeout: float = 30.0,
            env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "vigil.client.cli", *args],
                              env=env or self.env, capture_output=True, text=True,
                              input=input, timeout=timeout)

    def cleanup(self) -> None:
        for d in self.daemons:
            d.stop()
        # Guardians (and their children) outlive the daemon by design; this test's ones
        # carry its VIGIL_SOCKET in their environment, so they can be found and ended.
        for pid in processes_with_env(f"VIGIL_SOCKET={self.socket}"):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)


def processes_with_env(entry: str) -> list[int]:
    """Live processes whose environment contains exactly `entry` (read from /proc)."""
    needle = entry.encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    found.append(int(name))
        except OSError:
            continue
    return found


class DaemonProcess:
    def __init__(self, home: VigilHome, extra_env: dict | None = None,
                 prefix: list[str] | None = None):
        self.home = home
        self.extra_env = extra_env or {}
        #: Run the daemon under a wrapper (e.g. setpriv to drop capabilities).
        self.prefix = prefix or []
        self.proc: subprocess.Popen | None = None
        self.log = home.root / f"vigild-{len(home.daemons)}.log"

    def start(self, timeout: float = 15.0) -> None:
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        env = dict(self.home.env, **self.extra_env)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.prefix + [sys.executable, "-m", "vigil.daemon", "--ready-fd", str(write_fd)],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(write_fd,), start_new_session=True)
        os.close(write_fd)
        try:
            ready, _, _ = select.select([read_fd], [], [], timeout)
            answer = os.read(read_fd, 4096) if ready else b""
        finally:
            os.close(read_fd)
        if answer != b"READY\n":
            raise AssertionError(f"daemon did not start: {answer!r}\n{self.log.read_text()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: the crash case (no cleanup runs)."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))


def start_once(env: dict, timeout: float = 15.0) -> tuple[bytes, subprocess.CompletedProcess]:
    """Run a daemon with a readiness pipe and wait for it to end: for daemons expected to
    refuse to start. Returns (what it wrote to the pipe, the ended process, text output)."""
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    proc = subprocess.Popen([sys.executable, "-m", "vigil.daemon", "--ready-fd", str(write_fd)],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, pass_fds=(write_fd,), text=True)
    os.close(write_fd)
    try:
        out, err = proc.communicate(timeout=timeout)
        answer = os.read(read_fd, 4096)
    finally:
        os.close(read_fd)
    return answer, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class RawConnection:
    """A socket speaking bytes, for feeding the daemon exactly what a test wants."""

    def __init__(self, path: Path):
        import socket

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        self.frames = FrameDecoder()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next frame, or None at end of stream."""
        while True:
            frame = self.frames.next_frame()
            if frame is not None:
                return frame
            data = self.sock.recv(65536)
            if not data:
                return None
            self.frames.feed(data)

    def read_eof(self) -> bool:
        return self.sock.recv(1) == b""

    def close(self) -> None:
        self.sock.close()
