"""Starting an execution completes whatever the caller does; no retained record can break a
listing; a store that cannot be written loses no exit and no output (issue: "seven ways
vigil lost data or froze", items 1, 2 and 5)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.daemon import RawConnection, VigilHome, wait_for
from tests.support.executions import Session, workspace  # noqa: F401 (fixture)
from vigil.protocol.codec import Encoding
from vigil.protocol.connection import ClientConnection


def test_a_client_that_goes_away_during_run_leaves_a_tracked_execution(home, daemon, workspace):
    """`run` then close the socket at once or a moment later (SIGINT of the CLI mid-`run`):
    every accepted execution is recorded, attached and killable; none is a phantom."""
    s = Session(home, workspace)
    try:
        for delay in (0.0, 0.005, 0.02, 0.05, 0.1):
            raw = RawConnection(home.socket)
            conn = ClientConnection(encoding=Encoding.MSGPACK)
            raw.send(conn.hello()[1])
            while conn.welcome is None:
                conn.receive_data(raw.sock.recv(65536))
                conn.next_message()
            raw.send(conn.request("run", s.scoped(argv=["sleep", "600"]))[1])
            if delay:
                time.sleep(delay)  # the moment the client gives up (not a synchronisation)
            raw.close()
        # Whatever the moment, each request that reached the daemon became a full execution.
        # (A close before the daemon read the request may drop it: then there is no record.)
        def settled():
            listing = s.list()["executions"]
            return listing if all(e["runtime"] for e in listing) else None
        listing = wait_for(settled, what="every started run to be attached")
        assert listing and all(e["status"] == "running" for e in listing)
        for e in listing:
            result = s.call("signal", execution_id=e["execution_id"], signal="TERM")
            assert result["delivered"] is True
            assert s.wait_exit(e["execution_id"])["signal"] == signal.SIGTERM
    finally:
        s.close()


def test_large_argv_never_breaks_a_listing(home, daemon, workspace):
    """12 runs of ~840 KB argv each made `vigil ls` fail with frame_too_large for good."""
    s = Session(home, workspace)
    try:
        words = ["x" * 100_000] * 8 + ["y" * 40_000]  # each word under MAX_ARG_STRLEN
        for _ in range(12):
            eid = s.run(argv=["true", *words])["execution_id"]
            s.wait_exit(eid)
        out = home.cli("--workspace", str(workspace), "--json", "ls", timeout=60)
        assert out.returncode == 0, out.stderr
        listing = json.loads(out.stdout)["executions"]
        assert len(listing) == 12
        for e in listing:
            assert e["command_truncated"] and e["argv_truncated"]
            assert len(e["command"].encode()) <= 2048
            assert sum(len(w.encode()) for w in e["argv"]) <= 2048
        got = s.get(listing[0]["execution_id"])
        assert got["argv_truncated"] and got["argv"][:1] == ["true"]
        assert sum(len(w.encode()) for w in got["argv"]) <= 64 * 1024
    finally:
        s.close()


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(mode=0o700, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                           str(path)], capture_output=True)
    return done.returncode == 0


def _fill(path: Path) -> Path:
    """Fill the file system of `path` to the last byte; returns the filler file."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # big writes, then the last pages, then bytes
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_loses_no_exit_and_no_output_and_recovers_by_itself():
    home = VigilHome()
    if not _mount_tmpfs(home.state, "16m"):
        home.cleanup()
        pytest.skip("needs permission to mount a small tmpfs for the state directory")
    try:
        ws = home.root / "ws"
        ws.mkdir()
        d = home.start_daemon()
        s = Session(home, ws)
        eid = s.run(command="read x; echo small; exit 5")["execution_id"]
        s.read_until(eid, lambda p: True)  # attached and committed once
        filler = _fill(home.state)
        s.call("input", execution_id=eid, text="go\r")
        wait_for(lambda: not s.client.call("status", {})["store"]["ok"],
                 what="the daemon to notice the store fails")
        status = s.client.call("status", {})["store"]
        assert status["last_error"] and status["failing_since_unix_ms"]
        # Nothing was acknowledged: the record is still running, the guardian keeps the exit.
        rec = s.get(eid)
        assert rec["status"] == "running"
        guardian = rec["runtime"]["guardian_pid"]
        os.kill(guardian, 0)
        # Writes say the store is failing.
        with pytest.raises(Exception) as info:
            s.run(argv=["true"])
        assert getattr(info.value, "code", None) == "storage_error"
        # Space returns: everything pending lands with nothing else happening.
        filler.unlink()
        record = s.wait_exit(eid)
        assert (record["status"], record["exit_code"]) == ("exited", 5)
        assert "small" in s.follow(eid).text
        wait_for(lambda: s.client.call("status", {})["store"]["ok"], what="the store to recover")
        assert "ingest commit failed" in d.log.read_text()
        s.close()
    finally:
        for d in home.daemons:
            d.stop()
        subprocess.run(["umount", "-l", str(home.state)], capture_output=True)
        home.cleanup()
