"""`screen`, `input`, `resize` and `attach`: an execution's terminal, directly (vigil's
extensions beside the spec's tools; `attach` is what `vigil attach` and editor plugins use).
"""

from __future__ import annotations

import msgspec

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
