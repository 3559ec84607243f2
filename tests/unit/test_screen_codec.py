"""Snapshot codec: bounded msgpack, trimmed from the top, old records still decode."""

from __future__ import annotations

import msgspec
import pytest

from vigil.daemon.screen import ScreenKeeper, ScreenSnapshot, SnapshotCodecError, decode_snapshot, encode_snapshot
from vigil.protocol.errors import ErrorCode


def snap_of(text: str, rows=50, cols=200) -> ScreenSnapshot:
    k = ScreenKeeper(rows, cols)
    k.feed(text.encode())
    while k.process(10.0, backlog_seconds=1e9):
        pass
    return k.snapshot()


def test_roundtrip_exact():
    snap = snap_of("\x1b]2;title\x07hello 中文\r\n$ ")
    data = encode_snapshot(snap, 64 * 1024)
    assert decode_snapshot(data) == snap
    assert decode_snapshot(data).trimmed_lines == 0


def test_trims_whole_lines_from_the_top():
    text = "\r\n".join(f"{i:03d} " + "é" * 150 for i in range(50))
    snap = snap_of(text)
    data = encode_snapshot(snap, 4096)
    assert len(data) <= 4096
    out = decode_snapshot(data)
    assert out.trimmed_lines > 0
    assert out.lines == snap.lines[out.trimmed_lines:]
    assert out.lines[-1].startswith("049 ")
    # It kept as many lines as fit: one more would not.
    bigger = msgspec.structs.replace(out, lines=snap.lines[out.trimmed_lines - 1:], trimmed_lines=out.trimmed_lines - 1)
    assert len(msgspec.msgpack.encode(bigger)) > 4096


def test_huge_title_is_cut_when_lines_are_not_enough():
    snap = msgspec.structs.replace(snap_of("x"), title="t" * 5000)
    data = encode_snapshot(snap, 1024)
    out = decode_snapshot(data)
    assert len(data) <= 1024 and out.lines == [] and out.title.startswith("ttt")


def test_old_record_without_new_fields_decodes():
    old = msgspec.msgpack.encode(
        {"revision": 3, "fidelity": "exact", "rows": 2, "cols": 4, "lines": ["ab", ""], "cursor": [0, 2]}
    )
    snap = decode_snapshot(old)
    assert snap.trimmed_lines == 0 and snap.title == "" and snap.cursor == (0, 2) and snap.cursor_visible


@pytest.mark.parametrize("data", [b"", b"\xc1", msgspec.msgpack.encode({"revision": "x"}), b"\x93\x01\x02\x03"])
def test_garbage_is_a_storage_error(data):
    with pytest.raises(SnapshotCodecError) as info:
        decode_snapshot(data)
    assert info.value.code is ErrorCode.STORAGE_ERROR
    assert str(info.value).startswith("storage_error: invalid screen snapshot: ")
