"""The shell marker scanner: any split of the stream gives the same events."""

from hypothesis import given, settings, strategies as st

from vigil.daemon.shell.markers import Done, MarkerScanner, Segment, Started

N = "0123abcd"
START = b"\x1b]7770;" + N.encode() + b";S\x07"


def done(status: int, cwd: str) -> bytes:
    return b"\x1b]7770;" + N.encode() + f";D;{status};{cwd}".encode() + b"\x07"


STREAM = b"$ echo hi\r\n" + START + b"hi\r\n" + done(0, "/tmp/a b") + b"$ " + START + \
    b"\x1b]7770;deadbeef;D;0;/x\x07oops\r\n" + done(130, "/") + b"$ "


def collapse(events):
    """Merge adjacent segments so results compare independently of how bytes were split."""
    out = []
    for e in events:
        if isinstance(e, Segment) and out and isinstance(out[-1], Segment) and \
                out[-1].offset + len(out[-1].data) == e.offset:
            out[-1] = Segment(out[-1].offset, out[-1].data + e.data)
        else:
            out.append(e)
    return out


def test_whole_stream():
    events = collapse(MarkerScanner(N).feed(0, STREAM))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Segment", "Started", "Segment", "Done", "Segment", "Started", "Segment", "Done", "Segment"]
    assert events[1] == Started(11 + len(START))
    assert events[2].data == b"hi\r\n"
    assert events[3] == Done(events[2].offset + 4, 0, "/tmp/a b")
    # A marker with the wrong nonce is plain output: it cannot complete the command.
    assert events[6].data == b"\x1b]7770;deadbeef;D;0;/x\x07oops\r\n"
    assert events[7].status == 130 and events[7].cwd == "/"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_split_same_events(cuts):
    points = sorted(set(cuts) | {0, len(STREAM)})
    scanner = MarkerScanner(N)
    events = []
    for a, b in zip(points, points[1:]):
        events += scanner.feed(a, STREAM[a:b])
    assert collapse(events) == collapse(MarkerScanner(N).feed(0, STREAM))


def test_gap_flushes_partial_marker():
    scanner = MarkerScanner(N)
    assert scanner.feed(0, b"x\x1b]77") == [Segment(0, b"x")]
    assert scanner.feed(100, b"y") == [Segment(1, b"\x1b]77"), Segment(100, b"y")]
