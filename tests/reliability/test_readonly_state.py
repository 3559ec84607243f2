"""The state directory turns read-only: the daemon still starts and serves reads, writes
fail with a clear `storage_error`, and nothing committed before is lost.

An open descriptor keeps its write access after a chmod, so the realistic case a test can
make is a daemon *starting* on a read-only state dir (a full or remounted disk, a restored
backup). Root ignores file modes, so the daemon runs with every capability dropped
(`setpriv`), as a user's daemon would."""

import os
import shutil
import stat
import subprocess

import pytest

from tests.support.daemon import VigilHome
from tests.support.executions import Session, python_child
from vigil.protocol.errors import RemoteError

pytestmark = pytest.mark.skipif(shutil.which("setpriv") is None or os.getuid() != 0,
                                reason="needs root and setpriv to drop capabilities")


def chmod_tree(root, dirs: int, files: int) -> None:
    for path, dirnames, filenames in os.walk(root):
        os.chmod(path, dirs)
        for name in filenames:
            os.chmod(os.path.join(path, name), files)


def test_read_only_state_dir_serves_reads_and_refuses_writes_clearly():
    home = VigilHome()
    try:
        ws = home.root / "ws"
        ws.mkdir()
        home.start_daemon()
        s = Session(home, ws)
        eid = s.run(argv=python_child("print('kept before the disk went read-only')"))["execution_id"]
        before = s.wait_exit(eid)
        text = "".join(p["text"] for p in s.follow(eid).pages)
        thread, workspace = s.thread_id, s.workspace_root
        s.close()
        assert home.daemons[0].stop() == 0

        chmod_tree(home.state, 0o500, 0o400)
        prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
        probe = subprocess.run(prefix + ["sh", "-c", f"touch {home.state}/probe"],
                               capture_output=True)
        assert probe.returncode != 0, "capabilities were not dropped: root can still write"
        d = home.start_daemon(prefix=prefix)
        with home.client() as c:
            scoped = {"thread_id": thread, "workspace_root": workspace}
            got = c.call("Execution", dict(scoped, action={"type": "get", "execution_id": eid}))
            assert got["data"]["execution"]["status"] == "exited"
            assert got["data"]["execution"]["exit_code"] == before["exit_code"] == 0
            page = c.call("Execution", dict(scoped, action={"type": "read", "execution_id": eid,
                                                            "page_bytes": 65536}))
            assert page["data"]["page"]["text"] == text
            with pytest.raises(RemoteError) as info:
                c.call("run", dict(scoped, argv=["true"]))
            print("\nrefused write:", info.value.code.value, info.value.message)
            assert info.value.code.value == "storage_error"
            assert "read-only" in info.value.message or "not writable" in info.value.message \
                or "permission" in info.value.message.lower(), info.value.message
            # Still serving after the refused write.
            assert c.call("ping") == {"pong": True, "payload": ""}
        assert d.proc.poll() is None
    finally:
        chmod_tree(home.state, 0o700, 0o600) if home.state.exists() else None
        home.cleanup()
