"""asciicast v2 from an execution's recording pages (`vigil export`).

The format (asciinema's, https://docs.asciinema.org/manual/asciicast/v2/): a JSON header
line `{"version": 2, "width", "height", "timestamp", "title"}`, then one JSON array a line,
`[seconds, code, data]`, with seconds from the start, never decreasing:
- `"o"`: output text. The daemon gives bytes exactly as the program wrote them; they are
  decoded here as ONE UTF-8 stream (incrementally, so a character split between two
  arrivals or two pages stays whole; invalid bytes become U+FFFD, as a terminal shows them);
- `"r"`: a resize, `"COLSxROWS"`;
- `"m"`: a marker. vigil puts one where output is missing (not retained by retention, or
  lost in the guardian's ring), and one before output whose arrival time was not recorded.

Times: an event's seconds are its arrival time less the execution's start. Output with no
arrival time (records from before vigil kept timings) takes the time of the event before
it, so such a record plays as one screenful at once: the documented fallback. A time
that would go backwards (the wall clock was set back) is held at the previous one.

Sans-IO: `Writer` takes `RecordingResult` pages and returns the text to write.
"""

from __future__ import annotations

import codecs
import json

#: The marker text before output with no arrival time.
UNTIMED_MARKER = "vigil: arrival times were not recorded for this output; it is shown at once"


def gap_marker(from_offset: int, to_offset: int) -> str:
    return (f"vigil: {to_offset - from_offset} bytes of output not retained "
            f"(stream offsets {from_offset}-{to_offset})")


def _line(value) -> str:
    return json.dumps(value, ensure_ascii=False) + "\n"


class Writer:
    """Turns recording pages, in order, into asciicast v2 text."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._start_us = 0
        self._last = 0.0
        self._header_done = False
        self._untimed_marked = False

    def page(self, page) -> str:
        """The lines for one page (the header first, from the first page)."""
        out = []
        if not self._header_done:
            self._header_done = True
            self._start_us = page.started_unix_ms * 1000
            out.append(_line({"version": 2, "width": page.cols, "height": page.rows,
                              "timestamp": page.started_unix_ms // 1000,
                              "title": page.command}))
        for event in page.events:
            kind = type(event).__struct_config__.tag
            if kind == "output":
                if event.at_unix_us is None and not self._untimed_marked:
                    self._untimed_marked = True
                    out.append(self._event(None, "m", UNTIMED_MARKER))
                text = self._decoder.decode(event.data)
                if text:
                    out.append(self._event(event.at_unix_us, "o", text))
            elif kind == "gap":
                out += self._flush(event.at_unix_us)
                out.append(self._event(event.at_unix_us, "m",
                                       gap_marker(event.from_offset, event.to_offset)))
            elif kind == "resize":
                out.append(self._event(event.at_unix_us, "r", f"{event.cols}x{event.rows}"))
        return "".join(out)

    def end(self) -> str:
        """What is left: a character cut at the very end, as U+FFFD."""
        return "".join(self._flush(None))

    def _flush(self, at_unix_us: int | None) -> list[str]:
        text = self._decoder.decode(b"", final=True)
        self._decoder.reset()
        return [self._event(at_unix_us, "o", text)] if text else []

    def _event(self, at_unix_us: int | None, code: str, data: str) -> str:
        if at_unix_us is not None:
            self._last = max(self._last, (at_unix_us - self._start_us) / 1e6)
        return _line([round(self._last, 6), code, data])
