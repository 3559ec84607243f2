"""`follow`: one execution's output as a stream of events, every byte or an exact gap
(`vigil run --wait`, `vigil logs -f`).

Reading pages of the store behind retention loses output when the child is faster than the
reader (the store keeps 1 MiB per execution): `seq 1 300000` lost a third of its lines that
way. So a stream of a live execution takes its bytes from the output path itself, as
`attach` does: a `Follower` (runtime/live.py) registered on the runtime is offered every
Output the guardian sends, with its offset, before ingest. What came before the follower
registered is read from the store, up to exactly the offset where the follower starts.

    store part: [from_offset, follower.start)   → Output events (or gap: `retention`)
    live part:  [follower.start, the exit)      → Output events (or gap: `ring`, `slow_reader`)
    store part: [where live ended, the end)     → whatever the exit added (a guardian's tail)
    end:        the final record

A reader that keeps up loses nothing. One that stalls costs a bounded buffer: past
`follow_buffer_bytes` its oldest queued bytes are dropped and it is told the exact range
once it reads again; the child, ingest and other clients never wait for it. An execution
without a live runtime of its own (a persistent shell's command) is followed from the store
with the long-poll loop, woken by the lifecycle bus.

Cancellation: a cancelled stream (the client went away) leaves nothing behind; its follower
is unregistered.
"""

from __future__ import annotations

import trio

from vigil.daemon.rpc.dispatch import ANSWERED, CallContext
from vigil.daemon.rpc.views import execution_view
from vigil.daemon.runtime.lifecycle import LifecycleBus
from vigil.daemon.runtime.live import Follower
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord, Store
from vigil.protocol.api.execution import FollowEnd, FollowGap, FollowOutput, FollowResult

from .longpoll import poll_until


class OutputStream:
    """Serves `follow` calls (one instance, shared)."""

    def __init__(self, store: Store, runtimes: RuntimeManager, bus: LifecycleBus,
                 settings: Settings):
        self.store = store
        self.runtimes = runtimes
        self.bus = bus
        self.settings = settings

    async def serve(self, ctx: CallContext, record: ExecutionRecord, from_offset: int,
                    until_now: bool = False, *, answer=None, follower: Follower | None = None):
        """Answer (with `answer`, by default a FollowResult), then stream events until the
        execution ended and everything was sent (with `until_now`: until what is retained
        now was sent). `follower`: one registered already (`run` with `follow`)."""
        stream = _Stream(self, ctx, record.execution_id)
        try:
            if until_now:
                await stream.run_until_now(from_offset)
            else:
                await stream.run(from_offset, answer, follower)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away: nothing to tell anyone
        return ANSWERED


class _Stream:
    def __init__(self, owner: OutputStream, ctx: CallContext, execution_id: str):
        self.o = owner
        self.ctx = ctx
        self.eid = execution_id
        self.scope = ctx.scope

    async def send(self, event) -> None:
        await self.ctx.send(self.ctx.connection.send_event(event))

    def register(self) -> tuple[Follower, object] | None:
        """A follower on the execution's live runtime, if it has one that is attached."""
        live = self.o.runtimes.live.get(self.eid)
        if live is None or live.link is None or not live.attached.is_set() or live.done.is_set():
            return None
        follower = Follower(self.o.settings.follow_buffer_bytes, live.received_end)
        self.o.runtimes.add_follower(live, follower)
        return follower, live

    async def run(self, offset: int, answer=None, follower: Follower | None = None) -> None:
        if follower is not None:
            registered = (follower, self.o.runtimes.live.get(self.eid))
        else:
            registered = self.register()
        ctx = self.ctx
        if answer is None:
            answer = FollowResult(execution_id=self.eid, live=registered is not None)
        await ctx.send(ctx.connection.send_result(ctx.request_id, answer))
        while True:
            if registered is not None:
                follower, live = registered
                try:
                    offset = await self.from_store(offset, until=follower.start)
                    offset = await self.from_follower(follower, offset)
                finally:
                    if live is not None:
                        self.o.runtimes.remove_follower(live, follower)
                registered = None
            ended, offset = await self.from_store_until_progress(offset)
            if ended is not None:
                await self.end(ended)
                return
            registered = self.register()

    async def run_until_now(self, offset: int) -> None:
        ctx = self.ctx
        await ctx.send(ctx.connection.send_result(ctx.request_id, FollowResult(
            execution_id=self.eid, live=False)))
        await self.o.runtimes.ingest.flush()  # what the daemon received is retained now
        rec, _, _ = await self.read(offset, 0)
        offset = await self.from_store(offset, until=rec.output_total_bytes)
        rec, _, _ = await self.read(offset, 0)
        await self.end(rec)

    async def end(self, rec: ExecutionRecord) -> None:
        await self.send(FollowEnd(execution_id=self.eid, execution=execution_view(
            rec, command_bytes=self.o.settings.view_get_command_bytes,
            pending=self.o.runtimes.output_pending(rec))))

    async def read(self, offset: int, want: int) -> tuple[ExecutionRecord, int, bytes]:
        return await trio.to_thread.run_sync(self.o.store.read_output, self.scope, self.eid,
                                             offset, want)

    async def gap(self, rec: ExecutionRecord, start: int, end: int, reason: str | None = None
                  ) -> None:
        if reason is None:
            ring = any(a <= start < b for a, b in rec.gaps)
            reason = "ring" if ring else "retention"
        await self.send(FollowGap(execution_id=self.eid, from_offset=start, to_offset=end,
                                  reason=reason))

    async def from_store(self, offset: int, until: int) -> int:
        """Send what the store holds in [offset, until): bytes already handed to ingest
        before the follower registered (committed first if they were not yet)."""
        flushed = 0
        while offset < until:
            rec, first, data = await self.read(offset, min(until - offset,
                                                           self.o.settings.follow_event_bytes))
            if first > offset:
                end = min(first, until)
                await self.gap(rec, offset, end)
                offset = end
                continue
            if data:
                await self.send(FollowOutput(execution_id=self.eid, offset=offset, data=data))
                offset += len(data)
                flushed = 0
            elif flushed == 0:
                await self.o.runtimes.ingest.flush()  # handed over, not committed yet
                flushed = 1
            elif flushed == 1:
                # Still not stored after a commit: that commit failed (the store is failing);
                # `durable` waits until it is, however long the store takes.
                await self.o.runtimes.ingest.durable()
                flushed = 2
            else:
                await self.gap(rec, offset, until, "retention")  # durable, yet not there
                offset = until
        return offset

    async def from_follower(self, follower: Follower, offset: int) -> int:
        limit = self.o.settings.follow_event_bytes
        while (chunks := await follower.take(limit)) is not None:
            parts: list[bytes] = []
            start = offset
            for chunk_offset, data in chunks:
                if chunk_offset > offset:
                    if parts:
                        await self.send(FollowOutput(execution_id=self.eid, offset=start,
                                                     data=b"".join(parts)))
                        parts = []
                    slow = follower.dropped_to > offset
                    await self.send(FollowGap(
                        execution_id=self.eid, from_offset=offset, to_offset=chunk_offset,
                        reason="slow_reader" if slow else "ring"))
                    offset = start = chunk_offset
                skip = offset - chunk_offset
                if skip >= len(data):
                    continue
                parts.append(data[skip:] if skip else data)
                offset = chunk_offset + len(data)
            if parts:
                await self.send(FollowOutput(execution_id=self.eid, offset=start,
                                             data=b"".join(parts)))
        return offset

    async def from_store_until_progress(self, offset: int
                                        ) -> tuple[ExecutionRecord | None, int]:
        """Send what the store holds from `offset`; when there is nothing, sleep on the
        lifecycle bus until there is, the execution ended (returns its final record), or it
        gained a live runtime to follow (returns None)."""
        sent = False
        state: list = [offset]

        async def look():
            nonlocal sent
            rec, first, data = await self.read(state[0], self.o.settings.follow_event_bytes)
            if first > state[0]:
                await self.gap(rec, state[0], first)
                state[0] = first
                sent = True
            if data:
                await self.send(FollowOutput(execution_id=self.eid, offset=first, data=data))
                state[0] = first + len(data)
                return "sent"
            if rec.is_terminal and not self.o.runtimes.output_pending(rec):
                return rec
            if self.register_possible():
                return "live"
            return "sent" if sent else None

        while True:
            found = await poll_until(self.o.bus, [self.eid], look, float("inf"))
            if isinstance(found, ExecutionRecord):
                return found, state[0]
            if found == "live":
                return None, state[0]
            sent = False

    def register_possible(self) -> bool:
        live = self.o.runtimes.live.get(self.eid)
        return (live is not None and live.link is not None and live.attached.is_set()
                and not live.done.is_set())
