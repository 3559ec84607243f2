"""`screen`, `input`, `resize`, `attach` and `recording`: an execution's terminal, directly
(vigil's extensions beside the spec's tools; `attach` is what `vigil attach` and editor
plugins use, `recording` what `vigil export` reads).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from .execution import TerminalSize
from .scope import Scoped


class ScreenParams(Scoped, kw_only=True):
    """The current screen of an execution (`vigil screen`); `ansi` adds colours and modes
    (live executions only: an exited one keeps its text). `history` also returns up to that
    many scrollback lines — the rows that scrolled off the top of the main screen, newest
    last — at most `screen_history_lines_max`; an ended execution's come from the store,
    as plain text (the `scrollback` read source pages all of them)."""

    execution_id: str
    ansi: bool = False
    history: int = 0


class ScreenResult(msgspec.Struct, kw_only=True):
    execution_id: str
    text: str
    rows: int
    cols: int
    cursor: tuple[int, int]
    fidelity: str
    title: str
    live: bool
    revision: int = 0
    alt_screen: bool = False
    #: With `ansi`: a repaint (clear, each row placed, cursor and modes restored); with
    #: `history` too, the rows one per CRLF without cursor motion, to follow the scrollback.
    ansi: str | None = None
    #: Scrollback lines just above the screen, oldest first (up to `history` of them).
    scrollback: list[str] = []
    #: The same lines with SGR attributes, when `ansi` was asked.
    scrollback_ansi: list[str] | None = None
    #: Indexes into `scrollback` of lines the keeper rendered by its fast path while it was
    #: behind: they may differ from what a terminal showed.
    scrollback_fast_forwarded: list[int] = []
    #: Absolute number of `scrollback[0]` (0 = the first line the execution scrolled away).
    scrollback_first: int = 0
    #: Lines scrolled away so far (kept or dropped); the next one gets this number.
    scrollback_total: int = 0


class InputParams(Scoped, kw_only=True):
    """Send bytes to an execution's terminal: `text` (UTF-8), then named `keys`, then `data`."""

    execution_id: str
    text: str = ""
    keys: list[str] = []
    data: bytes = b""
    #: When set, refused as stale unless it is the execution's current generation.
    generation: int | None = None


class InputResult(msgspec.Struct, kw_only=True):
    """`bytes_sent` is what the guardian accepted for the terminal (a refusal is an error,
    never a count). `confirmed` is false only with a guardian too old to confirm (its
    protocol v1): the bytes were handed over, acceptance unknown."""

    execution_id: str
    bytes_sent: int
    confirmed: bool = True


class ResizeParams(Scoped, kw_only=True):
    execution_id: str
    rows: TerminalSize
    cols: TerminalSize


class ResizeResult(msgspec.Struct, kw_only=True):
    execution_id: str
    rows: int
    cols: int


class AttachParams(Scoped, kw_only=True):
    """Become a live viewer: the answer repaints the screen, then events (`AttachEvent`)
    carry output until the execution exits or the viewer is dropped (a viewer that stops
    reading is dropped, never slowing the child). Close the connection to detach."""

    execution_id: str
    rows: TerminalSize | None = None
    cols: TerminalSize | None = None


class AttachResult(msgspec.Struct, kw_only=True):
    execution_id: str
    repaint: str
    rows: int
    cols: int


class AttachOutput(msgspec.Struct, tag_field="kind", tag="output", kw_only=True):
    """Bytes the program wrote, exactly as written."""

    execution_id: str
    data: bytes


class AttachRepaint(msgspec.Struct, tag_field="kind", tag="repaint", kw_only=True):
    """Output was lost before it reached this viewer: draw this screen instead."""

    execution_id: str
    data: bytes


class AttachExited(msgspec.Struct, tag_field="kind", tag="exited", kw_only=True):
    """The program exited: the stream is over."""

    execution_id: str


class AttachDropped(msgspec.Struct, tag_field="kind", tag="dropped", kw_only=True):
    """This viewer fell too far behind and was dropped (the program runs on)."""

    execution_id: str


AttachEvent = AttachOutput | AttachRepaint | AttachExited | AttachDropped


class RecordingParams(Scoped, kw_only=True):
    """A page of an execution's recording (`vigil export`): its retained output from stream
    `offset` with the time each part arrived, the terminal's size and its changes, and what
    was not retained. Start at 0 and continue from `end_offset` while `has_more`."""

    execution_id: str
    offset: Annotated[int, Meta(ge=0)] = 0
    #: Bytes of output at most in this page (default and largest: the daemon's
    #: read_page_bytes_default and read_page_bytes_max).
    page_bytes: int | None = None


class RecordingOutput(msgspec.Struct, tag_field="kind", tag="output", kw_only=True):
    """Bytes the program wrote from stream `offset`, exactly as written, that arrived at
    `at_unix_us` (null: not recorded, an execution from before vigil kept arrival times)."""

    offset: int
    at_unix_us: int | None
    data: bytes


class RecordingGap(msgspec.Struct, tag_field="kind", tag="gap", kw_only=True):
    """Output from `from_offset` to `to_offset` is not retained (pruned by retention, or
    lost in the guardian's ring while no daemon read it)."""

    from_offset: int
    to_offset: int
    at_unix_us: int | None


class RecordingResize(msgspec.Struct, tag_field="kind", tag="resize", kw_only=True):
    """From stream `offset` on, the terminal is `rows`×`cols` (resized at `at_unix_us`)."""

    offset: int
    at_unix_us: int
    rows: int
    cols: int


RecordingEvent = RecordingOutput | RecordingGap | RecordingResize


class RecordingResult(msgspec.Struct, kw_only=True):
    """One page of a recording. `rows`/`cols` is the size in effect at `start_offset` (the
    recording's size on the first page); `timed` is false when no byte of the page has an
    arrival time (an older record: a player shows its output at once)."""

    execution_id: str
    command: str
    started_unix_ms: int
    ended_unix_ms: int | None
    status: str
    rows: int
    cols: int
    timed: bool
    events: list[RecordingEvent]
    start_offset: int
    end_offset: int
    #: Every byte the execution had produced when the page was read, retained or not: an
    #: export of a running execution stops at the first page's value instead of chasing
    #: output that keeps coming.
    total_bytes: int
    has_more: bool
