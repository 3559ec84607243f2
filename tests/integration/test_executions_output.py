"""Output as it comes back through the whole path (child → PTY → guardian ring → daemon
ingest → LMDB chunks → pages): UTF-8 characters cut by writes, PTY reads, store chunks and
page limits come back whole and exact; a 50 MB stream keeps exactly its last 1 MiB and says
exactly how much of the head is gone."""

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Gate,
    Session,
    python_child,
    session,
    wait_pid_exit,
    workspace,
)

#: Store chunks of 4 KiB (the setting's minimum) instead of 64 KiB, so a ~10 KB text crosses
#: a chunk boundary; the text below is laid out so that a character straddles it.
SMALL_CHUNKS = "output_chunk_bytes = 4096\n"

#: One line mixes 1-, 2-, 3- and 4-byte characters (31 bytes; 32 after the PTY's \r).
LINE = "aé日本🎉 Ωx ñ 🧪€\n"
LINES = 170
#: 5 ASCII bytes first put byte 4096 of the stream (a chunk boundary) inside a character.
PREFIX = "ppppp"


def utf8_child(text: str) -> list[str]:
    """A child writing `text` in tiny writes whose sizes (1, 2, 3, 5, 7 bytes) cut through
    characters all along."""
    return python_child(
        "import os\n"
        f"data = {PREFIX + text!r}.encode()\n"
        "sizes, i, k = (1, 2, 3, 5, 7), 0, 0\n"
        "while i < len(data):\n"
        "    n = sizes[k % 5]; k += 1\n"
        "    os.write(1, data[i:i + n]); i += n\n")


@pytest.fixture
def chunky_session(home, workspace):
    home.write_config(SMALL_CHUNKS)
    home.start_daemon()
    s = Session(home, workspace)
    try:
        yield s
    finally:
        s.close()


def test_utf8_split_by_writes_chunks_and_pages_comes_back_exact(chunky_session):
    s = chunky_session
    text = PREFIX + LINE * LINES
    expected = text.replace("\n", "\r\n")
    raw = expected.encode()
    # The layout does what this test is about: store chunk boundaries fall inside characters.
    assert raw[4096] & 0xC0 == 0x80, "the chunk boundary is not inside a character"

    eid = s.run(argv=utf8_child(LINE * LINES))["execution_id"]
    rec = s.wait_exit(eid)
    assert (rec["status"], rec["exit_code"]) == ("exited", 0)
    assert rec["output"]["total_bytes"] == rec["output"]["retained_bytes"] == len(raw)

    for size in (5, 7, 13, 16384):
        pages = s.follow(eid, page_bytes=size).pages
        assert "".join(p["text"] for p in pages) == expected, f"page_bytes={size}"
        at = 0
        for p in pages:
            body = p["text"].encode()
            assert "\ufffd" not in p["text"]
            assert (p["start_offset"], p["end_offset"]) == (at, at + len(body))
            assert 0 < len(body) <= size or p is pages[-1]
            # Whole characters only: the page's bytes are exactly the stream's bytes there.
            assert raw[p["start_offset"]:p["end_offset"]] == body
            assert p["gap"] is None
            at = p["end_offset"]
        assert at == len(raw) and pages[-1]["has_more"] is False


def test_partial_character_is_held_back_while_running_and_final_when_ended(session, workspace):
    gate = Gate(workspace / "gate")
    head, tail = "日".encode()[:2], "日".encode()[2:]
    child = python_child(
        "import os\n"
        f"os.write(1, b'ab' + {head!r})\n"
        + gate.wait_source() +
        f"os.write(1, {tail!r} + b'\\n' + b'x\\xe6\\x97')\n")
    eid = session.run(argv=child)["execution_id"]
    # The first page holds back the two bytes that do not make a character yet.
    first = session.read_until(eid, lambda p: p["text"])
    assert (first["text"], first["start_offset"], first["end_offset"], first["has_more"]) == \
        ("ab", 0, 2, True)
    assert session.get(eid)["output"]["total_bytes"] == 4
    again = session.read(eid, cursor=first["next_cursor"])
    assert (again["text"], again["start_offset"], again["end_offset"], again["has_more"]) == \
        ("", 2, 2, True)
    gate.open()
    rest = session.follow(eid, cursor=first["next_cursor"])
    # The character is whole once its last byte came; the incomplete sequence the child
    # ended with is decoded (as U+FFFD) once nothing more can follow.
    assert rest.text == "日\r\nx\ufffd"
    assert rest.record["output"]["total_bytes"] == 2 + 3 + 2 + 3


def numbered(first: int, last: int) -> bytes:
    """Lines first..last-1 as `seq -f %09.0f` prints them, after the PTY (\\n → \\r\\n)."""
    return b"".join(b"%09d\r\n" % i for i in range(first, last))


LINE_BYTES = 11  # nine digits, \r, \n


def test_fifty_megabytes_keep_exactly_the_last_mebibyte(session):
    lines = 4_600_000  # 50.6 MB once the PTY made every \n a \r\n
    total = lines * LINE_BYTES
    # Through `cat`: seq on a terminal writes line by line (4.6 M syscalls); cat writes blocks.
    e = session.run(command=f"seq -f %09.0f 0 {lines - 1} | cat")
    eid = e["execution_id"]
    # Not following while it runs (that is not what this is about): the guardian exits once
    # the daemon has persisted the exit and acknowledged it.
    wait_pid_exit(e["runtime"]["guardian_pid"], timeout=120)
    rec = session.get(eid)
    out = rec["output"]
    assert (rec["status"], rec["exit_code"]) == ("exited", 0)
    assert out["total_bytes"] == total
    # Default retention: 1 MiB per execution, cut exactly (ASCII: no character to protect).
    assert out["retained_bytes"] == 1 << 20
    assert out["retained_start"] == total - (1 << 20)
    assert out["dropped_bytes"] == total - (1 << 20)

    # Reading from the start: the head is gone, and the page says exactly how much.
    transcript = session.follow(eid)
    first = transcript.pages[0]
    assert first["gap"] == {"bytes_skipped": total - (1 << 20), "from_offset": 0,
                            "to_offset": total - (1 << 20)}
    assert first["start_offset"] == total - (1 << 20)
    assert [p["gap"] for p in transcript.pages[1:]] == [None] * (len(transcript.pages) - 1)
    # The retained tail is exactly the last 1 MiB the child printed.
    start = total - (1 << 20)
    first_line = start // LINE_BYTES
    expected = numbered(first_line, lines)[start - first_line * LINE_BYTES:]
    assert transcript.text.encode() == expected
