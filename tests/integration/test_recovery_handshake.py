"""Recovery against whatever answers on a dead guardian's socket path, driven step by step
with a fake guardian (tests/support/fake_guardian.py): something claiming another identity
is not taken for the guardian, and a guardian that dies between its Welcome and the
daemon's Subscribe is an ordinary loss, not an internal error."""

import os
import signal

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    kill_quietly,
    wait_pid_exit,
    workspace,
)
from tests.support.fake_guardian import FakeGuardian
from vigil.daemon.guardian import wire

VANISHED = "the guardian vanished without an exit record"


@pytest.fixture
def orphaned(home, workspace):
    """An execution whose daemon and guardian were both SIGKILLed: (record, socket path)."""
    home.start_daemon()
    s = Session(home, workspace)
    e = s.run(argv=["sleep", "100"])
    s.close()
    home.daemons[-1].kill()
    rt = e["runtime"]
    os.kill(rt["guardian_pid"], signal.SIGKILL)
    kill_quietly(rt["child_pid"])
    wait_pid_exit(rt["guardian_pid"])
    wait_pid_exit(rt["child_pid"])
    path = home.socket.parent / "guardians" / f"{rt['runtime_id']}.sock"
    assert path.exists()  # the SIGKILLed guardian could not remove it
    return e, str(path)


def settle(home, workspace, eid: str) -> dict:
    s = Session(home, workspace)
    try:
        return s.wait_exit(eid)
    finally:
        s.close()


def test_a_guardian_with_another_identity_is_not_trusted(home, workspace, orphaned):
    e, path = orphaned
    fake = FakeGuardian(path)
    try:
        home.start_daemon()
        fake.accept()
        assert isinstance(fake.receive(), wire.Hello)
        claimed = dict(e["runtime"], guardian_start_ticks=e["runtime"]["guardian_start_ticks"] + 1)
        fake.welcome(wire.RuntimeIdentity(**claimed))
        # The daemon hangs up on it without subscribing or sending anything else.
        assert fake.receive() is None
    finally:
        fake.close()
    rec = settle(home, workspace, e["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["signal"], rec["unknown_reason"]) == \
        ("unknown", None, None, VANISHED)


def test_guardian_lost_between_welcome_and_subscribe_is_an_ordinary_loss(
        home, workspace, orphaned):
    e, path = orphaned
    fake = FakeGuardian(path)
    try:
        daemon = home.start_daemon()
        fake.accept()
        assert isinstance(fake.receive(), wire.Hello)
        # Freeze the daemon so that the Welcome and the hang-up are both there before it
        # reads either: it then reads a good Welcome and fails to send its Subscribe.
        os.kill(daemon.pid, signal.SIGSTOP)
        try:
            fake.welcome(wire.RuntimeIdentity(**e["runtime"]))
            fake.close()
        finally:
            os.kill(daemon.pid, signal.SIGCONT)
    finally:
        fake.close()
    rec = settle(home, workspace, e["execution_id"])
    assert (rec["status"], rec["exit_code"], rec["signal"]) == ("unknown", None, None)
    assert rec["unknown_reason"] == VANISHED
    assert "Traceback" not in daemon.log.read_text()
