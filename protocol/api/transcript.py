"""`transcript`: read a run's exchange transcript (seeds/003), and follow it live.

A run is a thread or an execution. The answer is a page of the run's events in `seq` order
(as in its file, `<state>/transcripts/<run_id>.jsonl`); with `follow`, the call then stays
open and pushes `TranscriptEventPush` events as they are written, until the run completes
(`TranscriptEnd`) or the caller closes the connection. The stream is lossless while the
caller keeps up: if it falls behind the subscriber's buffer, the daemon fills the gap from
the file, which is always complete.
"""

from __future__ import annotations

import msgspec

from ..transcript import ExchangeEvent
from .scope import Scoped


class TranscriptParams(Scoped, kw_only=True):
    #: A thread id or an execution id (32 hex) the caller may read.
    run_id: str
    #: Events with a greater `seq` (0: from the start).
    after_seq: int = 0
    #: Page size in bytes of the events' JSON lines (default and cap: wire limits).
    max_bytes: int | None = None
    follow: bool = False


class TranscriptResult(msgspec.Struct, kw_only=True):
    run_id: str
    events: list[ExchangeEvent]
    #: The last `seq` in `events` (or `after_seq` when there are none): the next after_seq.
    next_seq: int
    #: More events are in the file already (read again from next_seq).
    has_more: bool
    #: `run.completed` is in the file: nothing more will be written.
    completed: bool


class TranscriptEventPush(msgspec.Struct, tag_field="kind", tag="event", kw_only=True):
    """One event, as soon as it was written."""

    event: ExchangeEvent


class TranscriptEnd(msgspec.Struct, tag_field="kind", tag="end", kw_only=True):
    """The run completed: the follow is over."""

    run_id: str
    last_seq: int


TranscriptStreamEvent = TranscriptEventPush | TranscriptEnd
