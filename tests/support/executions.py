"""Executions against a real daemon: a scoped session (Initialize once, quote the pair on
every call), reads that follow an execution to its end with the daemon's long-poll, and
process waits on pidfds (the kernel's event for "this process ended"), so no test sleeps.

Also: `Gate`, a FIFO a child blocks on until the test releases it (so "while the daemon is
down" or "while it still runs" is decided by the test, not by timing), and `spawn_at_pid`,
which forces the kernel to hand a chosen pid to a new process (for the pid-reuse test).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.daemon import VigilHome, wait_for
from vigil.client.connection import Client
from vigil.protocol.errors import RemoteError

#: Every test waits at most this long for one execution to end (a few hundred ms normally;
#: generous for a loaded 2-core CI machine, and still a bounded failure, never a hang).
EXIT_TIMEOUT = 30.0


class Session:
    """One thread of one workspace: `Initialize` once, then every call quotes its pair.

    thread_name "cli" by default: the CLI opens the same thread for the same workspace,
    so a test can mix API calls and `vigil …` subprocesses over the same executions.
    """

    def __init__(self, home: VigilHome, workspace: Path, thread_name: str = "cli",
                 thread_id: str = ""):
        self.home = home
        self.workspace = workspace
        self.client: Client = home.client()
        params = {"workspace_root": str(workspace)}
        if thread_id:
            params["thread_id"] = thread_id
        else:
            params["thread_name"] = thread_name
        init = self.client.call("Initialize", params)
        self.thread_id = init["thread_id"]
        self.workspace_root = init["workspace_root"]

    def close(self) -> None:
        self.client.close()

    def scoped(self, **params) -> dict:
        return {"thread_id": self.thread_id, "workspace_root": self.workspace_root, **params}

    def call(self, method: str, **params):
        return self.client.call(method, self.scoped(**params))

    def execution(self, action: dict) -> dict:
        return self.client.call("Execution", self.scoped(action=action))

    # --- actions ---------------------------------------------------------------------------

    def run(self, argv: list[str] | None = None, command: str | None = None, **params) -> dict:
        if argv is not None:
            params["argv"] = argv
        if command is not None:
            params["command"] = command
        return _track(self.call("run", **params)["execution"])

    def run_many(self, params: list[dict]) -> list[dict]:
        """Start several executions at once: the requests are pipelined on the connection
        and the daemon serves them concurrently (guardian launches overlap)."""
        ids = [self.client.send("run", self.scoped(**p)) for p in params]
        return [_track(self.client.receive(i)["execution"]) for i in ids]

    def get(self, execution_id: str) -> dict:
        return self.execution({"type": "get", "execution_id": execution_id})["data"]["execution"]

    def list(self, limit: int | None = None) -> dict:
        action: dict = {"type": "list"}
        if limit is not None:
            action["limit"] = limit
        return self.execution(action)["data"]

    def read(self, execution_id: str, cursor: str | None = None, page_bytes: int | None = None,
             wait_seconds: float = 0.0, source: str = "output") -> dict:
        action: dict = {"type": "read", "execution_id": execution_id, "source": source}
        if cursor is not None:
            action["cursor"] = cursor
        if page_bytes is not None:
            action["page_bytes"] = page_bytes
        if wait_seconds:
            action["wait_seconds"] = wait_seconds
        return self.execution(action)["data"]["page"]

    def read_until(self, execution_id: str, predicate, cursor: str | None = None,
                   page_bytes: int | None = None, timeout: float = EXIT_TIMEOUT) -> dict:
        """The first page (re-read from `cursor` with the daemon's long-poll) that satisfies
        `predicate`. A long-poll may return early on another event of the execution (its
        screen, its state), so one read is not enough."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no page of {execution_id} satisfied the test in {timeout} s")
            page = self.read(execution_id, cursor=cursor, page_bytes=page_bytes,
                             wait_seconds=min(left, 5.0))
            if predicate(page):
                return page

    def follow(self, execution_id: str, page_bytes: int = 65536,
               timeout: float = EXIT_TIMEOUT, cursor: str | None = None) -> "Transcript":
        """Every page from `cursor` (the start by default) until `has_more` is false: the
        execution has ended and everything retained was read. Each read long-polls in the
        daemon, which wakes on new output or the exit."""
        deadline = time.monotonic() + timeout
        out = Transcript()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"execution {execution_id} still running after {timeout} s")
            page = self.read(execution_id, cursor=cursor, page_bytes=page_bytes,
                             wait_seconds=min(left, 5.0))
            out.pages.append(page)
            cursor = page["next_cursor"]
            if not page["has_more"]:
                out.record = self.get(execution_id)
                return out

    def wait_exit(self, execution_id: str, timeout: float = EXIT_TIMEOUT) -> dict:
        """The record once the execution is terminal and all its output is persisted."""
        return self.follow(execution_id, timeout=timeout).record


@dataclass
class Transcript:
    """The pages `follow` read, in order, and the record once it ended."""

    pages: list[dict] = field(default_factory=list)
    record: dict | None = None

    @property
    def text(self) -> str:
        return "".join(p["text"] for p in self.pages)


def cli_bytes(env: dict, *args: str, timeout: float = EXIT_TIMEOUT) -> subprocess.CompletedProcess:
    """`vigil ARGS` with stdout/stderr as bytes: text mode would turn the PTY's \\r\\n into
    \\n and hide what the CLI really wrote."""
    return subprocess.run([sys.executable, "-m", "vigil.client.cli", *args], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


def remote_error(fn, *args, **kwargs) -> RemoteError:
    """The RemoteError `fn(*args, **kwargs)` raises (and fail if it returns)."""
    with pytest.raises(RemoteError) as info:
        fn(*args, **kwargs)
    return info.value


# --- processes --------------------------------------------------------------------------------


def wait_pid_exit(pid: int, timeout: float = EXIT_TIMEOUT) -> None:
    """Return once process `pid` has terminated (zombie or gone): its pidfd turns readable.

    Works for processes that are not our children (guardians, their children), which
    os.waitpid cannot wait for.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"process {pid} still running after {timeout} s")
    finally:
        os.close(fd)


def wait_pid_reaped(pid: int, start_ticks: int, timeout: float = 10.0) -> None:
    """Return once `pid` (the process that started at `start_ticks`) no longer exists at
    all, not even as a zombie. Orphans are reaped by PID 1 on its own schedule (about 1 s
    in this sandbox) and there is no event for another process's reaping: a condition."""
    from vigil.daemon.guardian.identity import read_start_ticks

    wait_for(lambda: read_start_ticks(pid) != start_ticks, timeout=timeout,
             what=f"process {pid} to be reaped")


#: (pid, start ticks) of every child a Session started in this test: what a failing test
#: may leave running (held at a gate, sleeping) is killed at teardown — by identity, so a
#: pid reused since is never hit.
_started: list[tuple[int, int]] = []


def _track(execution: dict) -> dict:
    from vigil.daemon.guardian.identity import read_start_ticks

    runtime = execution.get("runtime")
    if runtime:
        ticks = read_start_ticks(runtime["child_pid"])
        if ticks is not None:
            _started.append((runtime["child_pid"], ticks))
    return execution


def kill_leftover_children() -> None:
    from vigil.daemon.guardian.identity import read_start_ticks

    while _started:
        pid, ticks = _started.pop()
        if read_start_ticks(pid) == ticks:
            kill_quietly(pid)


def kill_quietly(pid: int | None, sig: int = 9) -> None:
    if pid:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


_NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def spawn_at_pid(pid: int, argv: list[str], attempts: int = 20) -> subprocess.Popen | None:
    """Start `argv` as process `pid` (the kernel gives the next pid after ns_last_pid), or
    None when this machine does not let us choose (no privilege; or other processes kept
    taking the pid first `attempts` times)."""
    for _ in range(attempts):
        try:
            with open(_NS_LAST_PID, "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


# --- children -----------------------------------------------------------------------------------


def python_child(source: str) -> list[str]:
    """argv running `source` in this interpreter, unbuffered (what it writes is written)."""
    return [sys.executable, "-S", "-u", "-c", source]  # -S: stdlib only, starts faster


class Gate:
    """A FIFO a child blocks on (`open(path).read()`) until the test opens it: the test
    decides exactly when the child goes on, with no polling on either side."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path, 0o600)

    def wait_source(self) -> str:
        """Python source for the child: block until the test opens the gate."""
        return f"open({str(self.path)!r}).read()\n"

    def open(self, timeout: float = EXIT_TIMEOUT) -> None:
        """Release the child. Opening a FIFO for writing blocks until a reader has it open
        (the child at the gate): that rendezvous is the event; a thread bounds the wait."""
        opened = threading.Thread(target=lambda: os.close(os.open(self.path, os.O_WRONLY)))
        opened.start()
        opened.join(timeout)
        if opened.is_alive():
            os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))  # unblock our thread
            opened.join()
            raise AssertionError(f"no child waited at {self.path} within {timeout} s")


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def workspace(home) -> Path:
    ws = home.root / "ws"
    ws.mkdir()
    try:
        yield ws
    finally:
        kill_leftover_children()


@pytest.fixture
def cli_env(home, workspace) -> dict:
    """The CLI's environment: this home's daemon, this test's workspace (thread "cli")."""
    return dict(home.env, VIGIL_WORKSPACE=str(workspace))


@pytest.fixture
def session(home, daemon, workspace):
    s = Session(home, workspace)
    try:
        yield s
    finally:
        s.close()
