"""Cursors and scopes at the daemon's door: a cursor is only good for the store, scope,
execution and source that issued it (forged, altered and foreign ones are all refused with
one code and one message), and what belongs to another scope reads exactly like what does
not exist at all, so no answer is an oracle."""

import base64
import secrets

import pytest

from tests.support.daemon import VigilHome
from tests.support.executions import Session, kill_leftover_children, remote_error

REFUSED = ("invalid_cursor", "invalid or foreign execution cursor")


def refusal(fn, *args, **kwargs) -> tuple[str, str]:
    err = remote_error(fn, *args, **kwargs)
    return err.code.value, err.message


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def world():
    """One daemon for the whole module (every test here only reads): a session, and two
    finished executions of its scope with output to page through."""
    home = VigilHome()
    try:
        home.start_daemon()
        workspace = home.root / "ws"
        workspace.mkdir()
        s = Session(home, workspace)
        try:
            a = s.run(command="echo alpha-alpha-alpha")["execution_id"]
            b = s.run(command="echo beta-beta-beta")["execution_id"]
            s.wait_exit(a)
            s.wait_exit(b)
            yield home, workspace, s, (a, b)
        finally:
            s.close()
    finally:
        kill_leftover_children()
        home.cleanup()


@pytest.fixture
def home(world):
    return world[0]


@pytest.fixture
def workspace(world):
    return world[1]


@pytest.fixture
def session(world):
    return world[2]


@pytest.fixture
def two(world):
    return world[3]


def test_own_cursor_continues_exactly(session, two):
    a, _ = two
    first = session.read(a, page_bytes=6)
    second = session.read(a, cursor=first["next_cursor"], page_bytes=6)
    assert (first["text"], second["text"]) == ("alpha-", "alpha-")
    assert second["start_offset"] == first["end_offset"] == 6


def test_forged_cursors_are_refused(session, two):
    a, _ = two
    real = session.read(a, page_bytes=6)["next_cursor"]
    forged = [
        b64(secrets.token_bytes(len(unb64(real)))),  # random bytes of the right size
        b64(secrets.token_bytes(8)),
        secrets.token_urlsafe(300),
        "not base64 at all!",
        real + "=",  # a non-canonical spelling of a real cursor
        "A" * 600,  # longer than any cursor
    ]
    for cursor in forged:
        assert refusal(session.read, a, cursor=cursor) == REFUSED, cursor


def test_every_altered_byte_is_refused(session, two):
    a, _ = two
    real = session.read(a, page_bytes=6)["next_cursor"]
    raw = unb64(real)
    for i in range(len(raw)):
        altered = bytearray(raw)
        altered[i] ^= 0x01
        assert refusal(session.read, a, cursor=b64(bytes(altered))) == REFUSED, f"byte {i}"
    assert refusal(session.read, a, cursor=b64(raw[:-1])) == REFUSED  # truncated MAC


def test_cursor_of_another_execution_is_refused(session, two):
    a, b = two
    cursor_a = session.read(a, page_bytes=6)["next_cursor"]
    assert refusal(session.read, b, cursor=cursor_a) == REFUSED


def test_cursor_of_another_source_or_kind_is_refused(session, two):
    a, _ = two
    output_cursor = session.read(a, page_bytes=6)["next_cursor"]
    screen_cursor = session.read(a, source="screen", page_bytes=6)["next_cursor"]
    catalog_cursor = session.list()["catalog_cursor"]
    assert refusal(session.read, a, cursor=screen_cursor) == REFUSED
    assert refusal(session.read, a, cursor=catalog_cursor) == REFUSED
    assert refusal(session.read, a, cursor=output_cursor, source="screen") == REFUSED


def test_cursor_of_another_scope_is_refused(home, session, two, workspace):
    a, _ = two
    other = Session(home, workspace, thread_name="another thread")
    try:
        assert other.thread_id != session.thread_id
        c = other.run(command="echo other-scope")["execution_id"]
        other.wait_exit(c)
        foreign = other.read(c, page_bytes=6)["next_cursor"]
    finally:
        other.close()
    assert refusal(session.read, a, cursor=foreign) == REFUSED


def test_cursor_of_another_store_is_refused(session, two):
    a, _ = two
    elsewhere = VigilHome()
    try:
        elsewhere.start_daemon()
        ws = elsewhere.root / "ws"
        ws.mkdir()
        far = Session(elsewhere, ws)
        try:
            c = far.run(command="echo far-away")["execution_id"]
            far.wait_exit(c)
            foreign = far.read(c, page_bytes=6)["next_cursor"]
        finally:
            far.close()
    finally:
        elsewhere.cleanup()
    assert refusal(session.read, a, cursor=foreign) == REFUSED


def test_another_scopes_execution_reads_as_not_found(home, session, workspace):
    other = Session(home, workspace, thread_name="another thread")
    try:
        theirs = other.run(command="echo theirs")["execution_id"]
        other.wait_exit(theirs)
        assert other.get(theirs)["execution_id"] == theirs
    finally:
        other.close()
    random_id = secrets.token_hex(16)

    def answers(eid):
        out = []
        for call in (lambda: session.get(eid), lambda: session.read(eid),
                     lambda: session.call("signal", execution_id=eid, signal="TERM")):
            err = remote_error(call)
            out.append((err.code.value, err.message, err.data))
        return out

    assert answers(theirs) == answers(random_id)
    assert [a[:2] for a in answers(theirs)] == [("not_found", "execution not found")] * 3
    assert theirs not in [e["execution_id"] for e in session.list()["executions"]]
    # A prefix of their id resolves to nothing here either.
    assert refusal(session.call, "resolve", prefix=theirs[:12]) == \
        refusal(session.call, "resolve", prefix=random_id[:12])


def test_workspace_mismatch_reads_exactly_like_a_missing_thread(home, session, workspace):
    elsewhere = home.root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    c = session.client

    def answer(thread_id, workspace_root):
        err = remote_error(c.call, "Execution", {"thread_id": thread_id,
                                                 "workspace_root": workspace_root,
                                                 "action": {"type": "list"}})
        return err.code.value, err.message, err.data

    wrong_workspace = answer(session.thread_id, str(elsewhere))
    missing_thread = answer(secrets.token_hex(16), session.workspace_root)
    assert wrong_workspace == missing_thread
    assert wrong_workspace == ("not_found", "no such thread for this workspace; call Initialize",
                               {"field": "params.thread_id"})
    # Resuming the thread by id under the wrong workspace is refused the same way.
    err = remote_error(c.call, "Initialize", {"workspace_root": str(elsewhere),
                                              "thread_id": session.thread_id})
    err2 = remote_error(c.call, "Initialize", {"workspace_root": str(elsewhere),
                                               "thread_id": secrets.token_hex(16)})
    assert (err.code, err.message, err.data) == (err2.code, err2.message, err2.data)
