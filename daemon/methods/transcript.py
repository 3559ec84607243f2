"""`transcript`: a run's exchange transcript, paged from its file and followed live.

Who may read what: a thread reads its own run, the runs of its scope's executions, and the
threads opened from inside those (a child run's parent chain leads back to it), all of one
principal. Anything else — another scope's execution, another principal's thread, an id
that names nothing — is answered exactly like a run that does not exist.
"""

from __future__ import annotations

import trio

from vigil.daemon.rpc.authority import Need
from vigil.daemon.rpc.dispatch import ANSWERED, CallContext, Dispatcher
from vigil.daemon.rpc.scopes import Scopes
from vigil.daemon.settings import Settings
from vigil.daemon.store import Store
from vigil.daemon.transcript.files import RUN_ID
from vigil.daemon.transcript.recorder import Recorder
from vigil.protocol.api.transcript import (
    TranscriptEnd,
    TranscriptEventPush,
    TranscriptParams,
    TranscriptResult,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.transcript import EventLineError, ExchangeEvent, decode_event

#: How far up a thread's parent chain a reader is looked for.
_PARENT_DEPTH = 16


def _no_such_run() -> VigilError:
    return VigilError(ErrorCode.NOT_FOUND, "no such run (thread or execution) in this scope",
                      {"field": "params.run_id"})


def read_events(path, after_seq: int, max_bytes: int) -> tuple[list[ExchangeEvent], bool, bool]:
    """Events with seq > after_seq from a transcript file, at most `max_bytes` of lines (at
    least one event); (events, has_more, completed). A line that is not an event is skipped.
    Blocking: call it in a worker thread."""
    events: list[ExchangeEvent] = []
    used, has_more, completed = 0, False, False
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return events, False, False
    with f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # being written: the next read has it whole
            try:
                event = decode_event(line)
            except EventLineError:
                continue
            completed = completed or event.type == "run.completed"
            if event.seq <= after_seq:
                continue
            if events and used + len(line) > max_bytes:
                has_more = True
                break
            events.append(event)
            used += len(line)
    return events, has_more, completed


def install(dispatcher: Dispatcher, *, store: Store, scopes: Scopes,
            transcripts: Recorder | None, settings: Settings) -> None:
    async def readable(ctx: CallContext, run_id: str) -> bool:
        thread = ctx.thread
        seen = 0
        while seen < _PARENT_DEPTH:
            seen += 1
            if run_id == thread.thread_id:
                return True
            if await trio.to_thread.run_sync(store.get, ctx.scope, run_id) is not None:
                return True
            other = scopes.get(run_id)
            if other is None or other.principal != thread.principal or not other.parent_run_id:
                return False
            run_id = other.parent_run_id  # a thread opened from inside an execution
        return False

    @dispatcher.route("transcript", authority=Need.OBSERVE)
    async def transcript(ctx: CallContext, params: TranscriptParams):
        if not RUN_ID.fullmatch(params.run_id):
            raise invalid_request("run_id must be 32 lowercase hexadecimal characters",
                                  "params.run_id")
        limit = settings.transcript_page_bytes_default if params.max_bytes is None else params.max_bytes
        if not 1024 <= limit <= settings.transcript_page_bytes_max:
            raise invalid_request(f"max_bytes must be from 1024 to "
                                  f"{settings.transcript_page_bytes_max}", "params.max_bytes")
        if params.after_seq < 0:
            raise invalid_request("after_seq must be 0 or more", "params.after_seq")
        if transcripts is None:
            raise VigilError(ErrorCode.UNAVAILABLE, "transcripts are off (transcripts_enabled)")
        if not await readable(ctx, params.run_id):
            raise _no_such_run()
        path = transcripts.files.path(params.run_id)
        if not params.follow:
            events, has_more, completed = await trio.to_thread.run_sync(
                read_events, path, params.after_seq, limit)
            return TranscriptResult(run_id=params.run_id, events=events,
                                    next_seq=events[-1].seq if events else params.after_seq,
                                    has_more=has_more, completed=completed)
        return await follow(ctx, params, path, limit)

    async def follow(ctx: CallContext, params: TranscriptParams, path, limit: int):
        """Answer with the backlog, then push events until the run completes. Subscribed
        before the backlog is read, so nothing falls in between; a gap from a full buffer is
        filled from the file (the stream stays lossless while the caller keeps up)."""
        sub = transcripts.fanout.subscribe(frozenset({params.run_id}))
        conn = ctx.connection
        try:
            events, has_more, completed = await trio.to_thread.run_sync(
                read_events, path, params.after_seq, limit)
            last = events[-1].seq if events else params.after_seq
            await ctx.send(conn.send_result(ctx.request_id, TranscriptResult(
                run_id=params.run_id, events=events, next_seq=last, has_more=has_more,
                completed=completed)))
            while not completed:
                if has_more or sub.take_dropped():
                    backlog, has_more, completed = await trio.to_thread.run_sync(
                        read_events, path, last, settings.transcript_page_bytes_max)
                else:
                    try:
                        backlog = [await sub.receive()]
                    except trio.EndOfChannel:
                        break
                for event in backlog:
                    if event.seq <= last:
                        continue  # already sent (read from the file, then offered live)
                    await ctx.send(conn.send_event(TranscriptEventPush(event=event)))
                    last = event.seq
                    completed = completed or event.type == "run.completed"
            await ctx.send(conn.send_event(TranscriptEnd(run_id=params.run_id, last_seq=last)))
            return ANSWERED
        finally:
            sub.close()
