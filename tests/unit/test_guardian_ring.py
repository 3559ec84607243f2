"""The guardian's output ring: absolute offsets, exact retention, exact errors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.daemon.guardian.ring import Ring


def test_empty_ring():
    ring = Ring(8)
    assert (ring.start, ring.end, len(ring)) == (0, 0, 0)
    assert ring.read(0, 100) == b""


def test_append_and_read_before_wrap():
    ring = Ring(8)
    ring.append(b"abc")
    ring.append(b"de")
    assert (ring.start, ring.end) == (0, 5)
    assert ring.read(0, 100) == b"abcde"
    assert ring.read(2, 2) == b"cd"
    assert ring.read(5, 10) == b""


def test_wrap_keeps_newest_bytes_at_their_offsets():
    ring = Ring(8)
    ring.append(b"0123456")  # 7 bytes
    ring.append(b"789ab")  # 12 bytes in all: 4 fell out
    assert (ring.start, ring.end, len(ring)) == (4, 12, 8)
    assert ring.read(4, 100) == b"456789ab"
    assert ring.read(6, 3) == b"678"
    assert ring.read(7, 100) == b"789ab"  # a read across the physical end of the buffer


def test_append_larger_than_capacity_keeps_only_the_tail():
    ring = Ring(4)
    ring.append(b"xy")
    ring.append(b"abcdefghij")
    assert (ring.start, ring.end) == (8, 12)
    assert ring.read(8, 10) == b"ghij"


def test_append_larger_than_capacity_into_empty_ring():
    ring = Ring(4)
    ring.append(b"abcdefg")
    assert (ring.start, ring.end) == (3, 7)
    assert ring.read(3, 10) == b"defg"
    ring.append(b"h")
    assert ring.read(4, 10) == b"efgh"


@pytest.mark.parametrize("offset", [-1, 2, 13])
def test_read_outside_the_ring_is_an_error(offset):
    ring = Ring(10)
    ring.append(b"0123456789ab")  # [2, 12)
    if offset == 2:
        assert ring.read(offset, 1) == b"2"
        return
    with pytest.raises(ValueError, match=rf"offset {offset} is outside the ring \[2, 12\)"):
        ring.read(offset, 1)


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="ring capacity must be at least 1 byte, got 0"):
        Ring(0)


@settings(max_examples=200, deadline=None)
@given(capacity=st.integers(1, 40), chunks=st.lists(st.binary(max_size=60), max_size=30))
def test_ring_matches_a_model(capacity, chunks):
    ring = Ring(capacity)
    stream = b""
    for chunk in chunks:
        ring.append(chunk)
        stream += chunk
        assert ring.end == len(stream)
        assert ring.start == max(0, len(stream) - capacity)
        for offset in range(ring.start, ring.end + 1):
            assert ring.read(offset, capacity) == stream[offset:]
            assert ring.read(offset, 3) == stream[offset : offset + 3]
