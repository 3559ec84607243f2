"""Cursors: opaque, authenticated, bound to store, scope, kind, execution and source.

Every refusal carries exactly the spec's message `invalid or foreign execution cursor`.
"""

from __future__ import annotations

import base64
import secrets

import pytest

from tests.unit.test_store_support import new_record, open_store
from vigil.daemon.store import (
    CURSOR_MESSAGE,
    CursorError,
    CursorFields,
    ExecutionUpdate,
    StoredScreen,
    decode_catalog_cursor,
    decode_cursor,
    encode_catalog_cursor,
    encode_cursor,
    read_output_page,
    read_screen_page,
    scope_hash,
)

KEY = bytes(range(32))
EPOCH = bytes(range(100, 116))
SCOPE = "local\0t1\0/w"
EID = "ab" * 16


def _fields(**over) -> CursorFields:
    base = dict(
        kind="page", scope=scope_hash(SCOPE), store_epoch=EPOCH, execution_id=bytes.fromhex(EID), source="output",
        generation=2, snapshot=0, offset=4096,
    )
    base.update(over)
    return CursorFields(**base)


def _decode(text, key=KEY, **over):
    kw = dict(expect_kind="page", expect_scope=SCOPE, store_epoch=EPOCH, expect_execution_id=EID, expect_source="output")
    kw.update(over)
    return decode_cursor(key, text, **kw)


def _refused(fn, *args, **kw):
    with pytest.raises(CursorError) as info:
        fn(*args, **kw)
    assert info.value.message == CURSOR_MESSAGE == "invalid or foreign execution cursor"
    assert info.value.code.value == "invalid_cursor"


def test_round_trip_and_shape():
    text = encode_cursor(KEY, _fields())
    assert _decode(text) == _fields()
    assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(text) < 140
    assert b"/w" not in base64.urlsafe_b64decode(text + "==")  # the scope text never shows


@pytest.mark.parametrize(
    "garbage",
    ["", "x", "====", "not a cursor", "A" * 600, "é" * 10, None, 12, b"bytes", "AAAA" * 20,
     base64.urlsafe_b64encode(secrets.token_bytes(60)).decode().rstrip("=")],
)
def test_garbage_is_refused(garbage):
    _refused(_decode, garbage)


def test_every_altered_character_is_refused():
    text = encode_cursor(KEY, _fields())
    alphabet = "AQgw_-9"
    for i in range(len(text)):
        for c in alphabet:
            if c != text[i]:
                _refused(_decode, text[:i] + c + text[i + 1 :])
    _refused(_decode, text[:-1])
    _refused(_decode, text + "A")
    _refused(_decode, text + "=")  # no alternate spellings


def test_forged_with_another_key_is_refused():
    _refused(_decode, encode_cursor(secrets.token_bytes(32), _fields()))


@pytest.mark.parametrize(
    "over",
    [
        {"execution_id": bytes.fromhex("cd" * 16)},
        {"source": "screen"},
        {"scope": scope_hash("local\0t2\0/w")},
        {"store_epoch": bytes(16)},
        {"kind": "catalog"},
        {"v": 2},
    ],
)
def test_a_cursor_for_something_else_is_refused(over):
    _refused(_decode, encode_cursor(KEY, _fields(**over)))


def test_catalog_cursor_round_trip_and_binding():
    text = encode_catalog_cursor(KEY, EPOCH, SCOPE, 1234)
    assert decode_catalog_cursor(KEY, text, EPOCH, SCOPE) == 1234
    _refused(decode_catalog_cursor, KEY, text, EPOCH, "local\0t2\0/w")
    _refused(decode_catalog_cursor, KEY, text, bytes(16), SCOPE)
    _refused(decode_catalog_cursor, KEY, encode_cursor(KEY, _fields()), EPOCH, SCOPE)  # a page cursor
    _refused(_decode, text)  # and a catalog cursor is not a page cursor


def test_page_cursors_through_the_store(tmp_path):
    store = open_store(tmp_path)
    other_scope = "local\0t2\0/w2"
    a = store.create_execution(new_record())
    b = store.create_execution(new_record())
    c = store.create_execution(new_record(scope=other_scope))
    for rec in (a, b, c):
        store.commit_batch(
            [ExecutionUpdate(execution_id=rec.execution_id, output=[(0, b"hello world")],
                             screen=StoredScreen(snapshot=0, text="screen", rows=1, cols=6))]
        )
    page = read_output_page(store, SCOPE, a.execution_id, None, 5)
    assert page.text == "hello"
    assert read_output_page(store, SCOPE, a.execution_id, page.next_cursor, 64).text == " world"
    _refused(read_output_page, store, SCOPE, b.execution_id, page.next_cursor)  # another execution
    _refused(read_screen_page, store, SCOPE, a.execution_id, page.next_cursor)  # another source
    c_page = read_output_page(store, other_scope, c.execution_id, None, 5)
    _refused(read_output_page, store, SCOPE, a.execution_id, c_page.next_cursor)  # another scope
    screen = read_screen_page(store, SCOPE, a.execution_id, None, 4)
    _refused(read_output_page, store, SCOPE, a.execution_id, screen.next_cursor)
    store.close()
    # Another store (another key and epoch), same execution id and scope.
    other = open_store(tmp_path / "second")
    other.create_execution(a)
    other.commit_batch([ExecutionUpdate(execution_id=a.execution_id, output=[(0, b"hello world")])])
    _refused(read_output_page, other, SCOPE, a.execution_id, page.next_cursor)
    other.close()
