"""Security: a peer of another uid is refused before a byte is read; the socket and every
state file are private (0600, dirs 0700); an execution of another scope is
indistinguishable from one that does not exist; and no error message echoes a command's
text or output."""

import os
import stat
import subprocess
import sys
import uuid

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    python_child,
    remote_error,
    workspace,
)
from vigil.protocol.connection import ClientConnection

NOBODY = 65534
#: The system interpreter: `nobody` may not traverse the venv's home (stdlib only needed).
NOBODY_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

#: Runs as `nobody`: connect, send the hello it is given (hex), read to EOF. Prints
#: "connected" then the bytes the daemon answered (b'' = closed without a word).
NOBODY_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
print("connected", flush=True)
try:
    s.sendall(bytes.fromhex(sys.argv[2]))
except OSError:
    pass  # the daemon may have closed first: what matters is that nothing came back
data = b""
try:
    while chunk := s.recv(65536):
        data += chunk
except ConnectionResetError:
    pass
print(repr(data))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"),
                    reason="needs root and setpriv to become another uid")
def test_peer_of_another_uid_is_refused_without_an_answer(home, daemon):
    assert stat.S_IMODE(os.stat(home.socket).st_mode) == 0o600
    # Open the path to `nobody` only now that the daemon runs (it refuses a runtime dir
    # that is not 0700 at start): the peer-uid check is the one thing left to stop them.
    for d in (home.root, home.socket.parent):
        os.chmod(d, 0o711)
    os.chmod(home.socket, 0o666)
    _, hello = ClientConnection().hello()
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         NOBODY_PYTHON, "-I", "-S", "-c", NOBODY_CLIENT, str(home.socket), hello.hex()],
        capture_output=True, text=True, timeout=30, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["connected", "b''"], done.stdout
    wait_for(lambda: f"refused connection from uid {NOBODY}" in daemon.log.read_text(),
             what="the refusal in the daemon log")
    with home.client() as c:  # the owner is still served
        assert c.call("ping", {}) is not None


def test_socket_and_state_are_private(home, daemon, workspace):
    s = Session(home, workspace)
    eid = s.run(argv=python_child("print('x' * 100)"))["execution_id"]
    s.wait_exit(eid)
    s.close()
    assert stat.S_IMODE(os.stat(home.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home.socket.parent).st_mode) == 0o700
    seen = 0
    for root, dirs, files in os.walk(home.state):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for name in files:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                continue
            assert stat.S_IMODE(mode) == 0o600, f"{path}: {oct(stat.S_IMODE(mode))}"
            seen += 1
    assert seen > 0, "the state dir holds no file: the walk checked nothing"


SECRET_CMD = "sekrit" + uuid.uuid4().hex[:8]
SECRET_OUT = "hush" + uuid.uuid4().hex[:8]


@pytest.fixture
def two_scopes(home, daemon):
    a_ws, b_ws = home.root / "a", home.root / "b"
    a_ws.mkdir()
    b_ws.mkdir()
    a, b = Session(home, a_ws), Session(home, b_ws)
    # Prints a secret (built at run time, so it is not in the command text) and waits.
    e = a.run(command=f"# {SECRET_CMD}\nprintf '%s%s\\n' hush {SECRET_OUT[4:]}; sleep 30")
    a.read_until(e["execution_id"], lambda p: SECRET_OUT in p["text"])
    try:
        yield a, b, e["execution_id"]
    finally:
        a.call("signal", execution_id=e["execution_id"], signal="KILL")
        a.close()
        b.close()


def _probes(b: Session, eid: str):
    return {
        "get": lambda: b.get(eid),
        "read": lambda: b.read(eid),
        "signal": lambda: b.call("signal", execution_id=eid, signal="TERM"),
        "screen": lambda: b.call("screen", execution_id=eid),
        "input": lambda: b.call("input", execution_id=eid, text="hello"),
        "explain": lambda: b.execution({"type": "explain", "execution_id": eid}),
    }


def _shape(err, eid: str):
    """(code, message, data) with the id asked for replaced by a placeholder."""
    def scrub(v):
        if isinstance(v, str):
            return v.replace(eid, "<id>")
        if isinstance(v, dict):
            return {k: scrub(x) for k, x in v.items()}
        if isinstance(v, list):
            return [scrub(x) for x in v]
        return v
    return (err.code, scrub(err.message), scrub(dict(err.data or {})))


def test_other_scopes_ids_are_indistinguishable_from_absent_ones(two_scopes):
    a, b, eid = two_scopes
    absent = uuid.uuid4().hex
    assert len(absent) == len(eid)
    foreign = {name: _shape(remote_error(fn), eid) for name, fn in _probes(b, eid).items()}
    missing = {name: _shape(remote_error(fn), absent) for name, fn in _probes(b, absent).items()}
    assert foreign == missing
    assert {code for code, _, _ in foreign.values()} == {"not_found"}, foreign
    # The owner still sees it, untouched by the probes (signal/input did not reach it).
    assert a.get(eid)["status"] == "running"


def test_errors_do_not_echo_command_text_or_output(home, two_scopes):
    a, b, eid = two_scopes
    other = a.run(argv=["true"])["execution_id"]
    a.wait_exit(other)
    page = a.read(eid)
    errors = [remote_error(fn) for fn in _probes(b, eid).values()]
    errors += [
        remote_error(a.read, other, cursor=page["next_cursor"]),  # another execution's cursor
        remote_error(a.read, eid, cursor=page["next_cursor"][:-2] + "AA"),  # altered
        remote_error(a.call, "input", execution_id=other, text="x"),  # ended
        remote_error(a.call, "resize", execution_id=eid, rows=0, cols=0),  # bad values
        remote_error(a.call, "run", argv=[], name=SECRET_CMD * 0),  # empty argv
        remote_error(a.execution, {"type": "nope", "execution_id": eid}),
        remote_error(a.execution, {"type": "read", "execution_id": eid, "page_bytes": -1}),
    ]
    for err in errors:
        text = f"{err.message} {err.data!r}"
        assert SECRET_CMD not in text and SECRET_OUT not in text, text
    logs = "".join(d.log.read_text() for d in home.daemons)
    assert SECRET_CMD not in logs and SECRET_OUT not in logs
