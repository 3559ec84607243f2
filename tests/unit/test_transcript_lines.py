"""Framing an appended log into lines: whole, byte by byte, in random chunks; the held
half-written line; lines past the limit; offsets; reset."""

from __future__ import annotations

import random

import pytest

from vigil.daemon.transcript.providers.lines import CUT_HEAD_BYTES, CutLine, LineFramer

DATA = b'{"a":1}\n\n{"b":"two"}\n{"c":3}\npartial'
EXPECTED = [(0, b'{"a":1}'), (8, b""), (9, b'{"b":"two"}'), (21, b'{"c":3}')]


def feed_in(framer: LineFramer, data: bytes, sizes) -> list:
    out, at = [], 0
    for size in sizes:
        out += framer.feed(data[at:at + size])
        at += size
    assert at >= len(data)
    return out


@pytest.mark.parametrize("how", ["whole", "bytewise", "random"])
def test_lines_and_offsets_whatever_the_chunking(how):
    sizes = {"whole": [len(DATA)], "bytewise": [1] * len(DATA),
             "random": [random.Random(7).randint(1, 9) for _ in range(len(DATA))]}[how]
    framer = LineFramer(100)
    assert feed_in(framer, DATA, sizes) == EXPECTED
    assert framer.partial_offset == 29
    assert framer.offset == len(DATA)
    assert framer.finish() == (29, b"partial")
    assert framer.partial_offset is None
    assert framer.finish() is None


def test_held_line_completes_when_its_lf_arrives():
    framer = LineFramer(100, offset=1000)
    assert framer.feed(b'{"x":') == []
    assert framer.feed(b'1}') == []
    assert framer.partial_offset == 1000
    assert framer.feed(b'\n{"y":2}\n') == [(1000, b'{"x":1}'), (1008, b'{"y":2}')]
    assert framer.partial_offset is None
    assert framer.offset == 1016


def test_a_line_past_the_limit_in_one_chunk_is_cut():
    big = b"x" * (CUT_HEAD_BYTES + 10)
    framer = LineFramer(len(big) - 1)
    assert framer.feed(b"ok\n" + big + b"\nnext\n") == [
        (0, b"ok"), CutLine(3, big[:CUT_HEAD_BYTES], len(big)), (4 + len(big), b"next")]


def test_a_line_growing_past_the_limit_keeps_only_its_head():
    framer = LineFramer(1024)
    assert framer.feed(b"a" * 1000) == []
    assert framer.feed(b"b" * 1000) == []  # past the limit: only the head is kept from here
    assert framer._parts == [] and framer._cut_head == b"a" * 1000 + b"b" * 1000
    assert framer.feed(b"c" * 5000) == []
    assert framer.feed(b"c\n{}\n") == [CutLine(0, b"a" * 1000 + b"b" * 1000, 7001), (7002, b"{}")]


def test_a_line_exactly_at_the_limit_is_whole():
    framer = LineFramer(4)
    assert framer.feed(b"abcd\nabcde\n") == [(0, b"abcd"), CutLine(5, b"abcde", 5)]
    assert framer.feed(b"ab") + framer.feed(b"cd\n") == [(11, b"abcd")]


def test_an_unfinished_cut_line_comes_out_cut_at_finish():
    framer = LineFramer(8)
    framer.feed(b"0123456789")
    assert framer.finish() == CutLine(0, b"0123456789", 10)


def test_reset_drops_the_unfinished_line_and_restarts():
    framer = LineFramer(100)
    framer.feed(b'{"a":1}\n{"b"')
    assert framer.reset(0) == 4
    assert framer.offset == 0 and framer.partial_offset is None
    assert framer.feed(b'{"c":3}\n') == [(0, b'{"c":3}')]
