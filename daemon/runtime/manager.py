"""Runtimes: the guardians the daemon is connected to, and what to do when one is lost.

The manager owns one task per live runtime (in its own nursery): connect to the guardian
(checking its *whole* identity), subscribe from the last persisted offset, hand every
Output to `Ingest`, acknowledge what the store made durable, and on `Exited` persist the
outcome before sending `ExitAck`. When a guardian's connection ends any other way, the
outcome is settled from what is left: the guardian's exit record and output tail, or else
`unknown` — never a guessed success.

At start, `recover()` runs the same task for every record that was not terminal when the
previous daemon stopped: nothing is re-run, only re-attached or settled.
"""

from __future__ import annotations

import logging
import os
import signal as signal_mod
from dataclasses import dataclass, field
from typing import Any

import trio

from vigil.daemon.guardian import wire
from vigil.daemon.guardian.errors import (
    GuardianClosed,
    GuardianError,
    GuardianLaunchError,
)
from vigil.daemon.guardian.identity import identity_alive
from vigil.daemon.guardian.launch import launch_guardian, make_launch_spec
from .link import GuardianLink
from vigil.daemon.guardian.records import delete_exit_records, read_exit_records, RecordsError
from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.screen.driver import ScreenTask
from vigil.daemon.screen.snapshot import ScreenSnapshot as LiveScreen
from vigil.daemon.store import (
    ExecutionRecord,
    RuntimeIdentity,
    ScreenSnapshot,
    Store,
    new_execution_id,
)
from vigil.protocol.errors import ErrorCode, VigilError
from vigil.daemon.settings import Settings

from .ingest import Ingest
from .lifecycle import LifecycleBus, LifecycleEvent

log = logging.getLogger("vigild.runtimes")

#: Variables of the daemon's own service context that a child must not inherit: they would
#: make it believe systemd handed *it* sockets or a notify channel.
_SERVICE_ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET",
                "INVOCATION_ID", "JOURNAL_STREAM", "WATCHDOG_PID", "WATCHDOG_USEC")


class Viewer:
    """One attached human: a bounded byte queue; a viewer that falls behind is dropped."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.chunks: list[bytes] = []
        self.size = 0
        self.ready = trio.Event()
        self.closed: str | None = None
        self.repaint = False

    def offer(self, data: bytes) -> None:
        if self.closed:
            return
        if self.size + len(data) > self.capacity:
            self.close("dropped")
            return
        self.chunks.append(data)
        self.size += len(data)
        self.ready.set()

    def lost(self) -> None:
        """Output was lost before it reached us (a guardian ring gap): what is queued no
        longer joins up with what follows, so the viewer gets a repaint instead — unless it
        is already half its buffer behind, which is a viewer that stopped reading: dropped."""
        if self.size > self.capacity // 2:
            self.close("dropped")
            return
        self.chunks.clear()
        self.size = 0
        self.repaint = True
        self.ready.set()

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = reason
            self.ready.set()

    async def get(self) -> bytes | None:
        """Everything queued so far, or None once closed and drained. Check `repaint` first."""
        while not self.chunks and not self.repaint:
            if self.closed:
                return None
            self.ready = trio.Event()
            await self.ready.wait()
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        return data


@dataclass
class Live:
    """Runtime-only state of one execution whose guardian the daemon is attached to."""

    record: ExecutionRecord
    link: GuardianLink | None = None
    screen: ScreenTask | None = None
    recognition: Any = None
    #: Humans attached to the terminal: while there are any, they answer terminal queries.
    viewers: set[Viewer] = field(default_factory=set)
    #: Called with (offset, data) for every Output, before ingest (the persistent shell's
    #: marker scanner hangs here).
    observers: list[Any] = field(default_factory=list)
    committed: trio.Event = field(default_factory=trio.Event)
    #: Set once connected and subscribed: control calls wait for it (a just-started run).
    attached: trio.Event = field(default_factory=trio.Event)
    acked: int = 0
    #: The screen revision last handed to ingest (screen_changed).
    screen_revision: int = -1
    done: trio.Event = field(default_factory=trio.Event)
    cancel: trio.CancelScope = field(default_factory=trio.CancelScope)


def to_store_identity(identity: wire.RuntimeIdentity) -> RuntimeIdentity:
    return RuntimeIdentity(runtime_id=identity.runtime_id, boot_id=identity.boot_id,
                           guardian_pid=identity.guardian_pid,
                           guardian_start_ticks=identity.guardian_start_ticks,
                           child_pid=identity.child_pid)


def to_wire_identity(identity: RuntimeIdentity) -> wire.RuntimeIdentity:
    return wire.RuntimeIdentity(runtime_id=identity.runtime_id, boot_id=identity.boot_id,
                                guardian_pid=identity.guardian_pid,
                                guardian_start_ticks=identity.guardian_start_ticks,
                                child_pid=identity.child_pid)


class RuntimeManager:
    def __init__(self, store: Store, settings: Settings, bus: LifecycleBus,
                 guardian_dir: str, log_dir: str):
        self.store = store
        self.settings = settings
        self.bus = bus
        self.guardian_dir = guardian_dir
        self.records_dir = os.path.join(guardian_dir, "records")
        self.log_dir = log_dir
        self.live: dict[str, Live] = {}
        self.ingest = Ingest(store, settings, bus, self._committed)
        self._nursery: trio.Nursery | None = None
        #: Set by the shell manager: observers for a record being re-attached at recovery.
        self.observer_factory: Any = None
        #: Called with the final record when a runtime ends (exited or unknown).
        self.on_ended: list[Any] = []
        #: Non-terminal records that belong to another runtime (shell commands), handed to
        #: `settle_commands` after recovery.
        self.settle_commands: Any = None
        #: Set by the daemon: builds a `Recognition` for a live runtime (None: no recognizers).
        self.recognition_factory: Any = None

    # --- task tree ------------------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.ingest.run)
            await self.recover()
            task_status.started()
            await trio.sleep_forever()

    def socket_path(self, runtime_id: str) -> str:
        return os.path.join(self.guardian_dir, f"{runtime_id}.sock")

    # --- starting -------------------------------------------------------------------------

    async def start(self, *, scope: str, thread_id: str, workspace_root: str,
                    argv: list[str], command: str, cwd: str, env: dict[str, str],
                    rows: int | None, cols: int | None, name: str,
                    kind: str = "standalone", observers: Any = None) -> ExecutionRecord:
        """Record the execution, launch its guardian, attach; returns the running record.

        The record is created *before* the guardian exists, so a daemon that dies in between
        leaves a record that recovery settles as `unknown`, never an untracked process.
        """
        eid = new_execution_id()
        rows = rows or self.settings.terminal_rows
        cols = cols or self.settings.terminal_cols
        record = ExecutionRecord(
            execution_id=eid, scope=scope, thread_id=thread_id, workspace_root=workspace_root,
            command=command, argv=argv, cwd=cwd, name=name or None, kind=kind,
            status="running", started_unix_ms=self.store.clock(), rows=rows, cols=cols)
        record = await trio.to_thread.run_sync(self.store.create_execution, record)
        child_env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV}
        child_env.update(env)
        spec = make_launch_spec(runtime_id=eid, argv=argv, cwd=cwd, env=child_env,
                                socket_path=self.socket_path(eid), records_dir=self.records_dir,
                                settings=self.settings, rows=rows, cols=cols)
        try:
            identity = await trio.to_thread.run_sync(
                lambda: launch_guardian(spec, self.settings,
                                        stderr_path=os.path.join(self.log_dir, "guardians.log")))
        except GuardianLaunchError as exc:
            # It never ran: say so on the record (unknown, with the reason) and to the caller.
            reason = f"launch failed: {exc.message}"
            await trio.to_thread.run_sync(lambda: self.store.update(
                eid, status="unknown", unknown_reason=reason))
            raise VigilError(exc.code, exc.message, {"execution_id": eid}) from None
        record = await trio.to_thread.run_sync(
            lambda: self.store.update(eid, runtime=to_store_identity(identity)))
        self.bus.publish(LifecycleEvent(kind="started", scope=scope, execution_id=eid,
                                        at_unix_ms=record.observed_at_unix_ms))
        live = self._attach(record, observers(record) if observers else [])
        # Answer once the daemon can act on it: a signal, input or resize sent right after
        # `run` returns must find the guardian connected.
        with trio.move_on_after(self.settings.guardian_start_timeout_seconds):
            await trio.lowlevel.checkpoint()
            while not (live.attached.is_set() or live.done.is_set()):
                await _first_of(live.attached, live.done)
        return live.record

    def _attach(self, record: ExecutionRecord, observers: list | None = None) -> Live:
        live = self.live[record.execution_id] = Live(record, observers=list(observers or []))
        assert self._nursery is not None
        self._nursery.start_soon(self._run_runtime, live)
        return live

    # --- recovery -------------------------------------------------------------------------

    async def recover(self) -> int:
        """Re-attach or settle every non-terminal record. Never re-runs anything."""
        records = await trio.to_thread.run_sync(self.store.non_terminal_records)
        commands = [r for r in records if r.kind == "shell_command"]
        records = [r for r in records if r.kind != "shell_command"]
        for record in records:
            if record.runtime is None:
                await trio.to_thread.run_sync(lambda r=record: self.store.update(
                    r.execution_id, status="unknown",
                    unknown_reason="the daemon stopped before the guardian was started"))
                continue
            observers = self.observer_factory(record) if self.observer_factory else []
            self._attach(record, observers)
        if commands:
            settle = self.settle_commands(commands) if self.settle_commands else [
                (r.execution_id, {"status": "unknown",
                                  "unknown_reason": "its shell could not be re-attached"})
                for r in commands]
            for eid, fields in settle:
                self.ingest.set_fields(eid, **fields)
        if records:
            log.info("recovery: %d executions to re-attach or settle", len(records))
        return len(records)

    # --- one runtime ----------------------------------------------------------------------

    async def _run_runtime(self, live: Live) -> None:
        eid = live.record.execution_id
        try:
            with live.cancel:
                await self._follow_guardian(live)
        except Exception:
            log.exception("runtime %s failed", eid)
            await self._settle_lost(live, "the daemon lost track of the guardian (internal error)")
        finally:
            if live.link is not None:
                with trio.CancelScope(shield=True):
                    await live.link.aclose()
            self.live.pop(eid, None)
            for viewer in live.viewers:
                viewer.close("exited")
            if live.record.is_terminal:
                for callback in self.on_ended:
                    callback(live.record)
            live.done.set()

    async def _follow_guardian(self, live: Live) -> None:
        record = live.record
        eid = record.execution_id
        assert record.runtime is not None
        try:
            with trio.fail_after(self.settings.guardian_start_timeout_seconds):
                live.link = await GuardianLink.connect(
                    self.socket_path(record.runtime.runtime_id),
                    to_wire_identity(record.runtime),
                    max_frame_bytes=self.settings.max_frame_bytes)
        except (GuardianError, trio.TooSlowError) as exc:
            log.info("guardian of %s unreachable: %s", eid, exc)
            await self._settle_lost(live, "the guardian vanished without an exit record")
            return
        link = live.link
        try:
            await link.subscribe(record.output_total_bytes)
        except GuardianError as exc:
            # Lost right after its Welcome: settle it like any other lost guardian.
            log.info("guardian of %s lost after the handshake: %s", eid, exc)
            live.link = None
            await self._settle_lost(live, "the guardian vanished without an exit record")
            return
        live.acked = record.output_total_bytes
        welcome = link.welcome
        keeper = ScreenKeeper(welcome.rows, welcome.cols, self.settings)
        live.screen = ScreenTask(keeper, self.settings,
                                 lambda snap, quiet: self.screen_changed(live, snap))
        if self.recognition_factory is not None:
            live.recognition = self.recognition_factory(live)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._acknowledge, live)
            await nursery.start(live.screen.run)
            live.attached.set()
            if live.recognition is not None:
                nursery.start_soon(live.recognition.run)
            try:
                while True:
                    msg = await link.receive()
                    if isinstance(msg, wire.Output):
                        await self.ingest.wait_room()
                        for observer in live.observers:
                            observer(msg.offset, msg.data)
                        self.ingest.add_output(eid, msg.offset, msg.data)
                        live.screen.feed(msg.data)
                        for viewer in tuple(live.viewers):
                            viewer.offer(msg.data)
                        replies = live.screen.take_replies()
                        if replies and not live.viewers:
                            # A TUI asking "who are you?" (DA) or "where is the cursor?"
                            # (CPR) hangs until answered; with no human attached, we answer.
                            await link.send_input(replies)
                    elif isinstance(msg, wire.Exited):
                        self._final_screen(live)
                        await self._exited(live, msg.status, msg.end_offset)
                        await link.exit_ack()
                        break
                    elif isinstance(msg, wire.Error):
                        log.warning("guardian of %s: %s: %s", eid, msg.code, msg.message)
                    elif isinstance(msg, wire.Gap):
                        # The store records the gap from the next Output's offset; viewers
                        # would see a silent hole, so they get a repaint instead.
                        live.screen.keeper.lost()
                        for viewer in tuple(live.viewers):
                            viewer.lost()
            except GuardianClosed:
                await self.ingest.flush()
                await self._settle_lost(live, "the guardian vanished without an exit record")
            finally:
                nursery.cancel_scope.cancel()

    def _final_screen(self, live: Live) -> None:
        """Bring the screen fully up to date once, so an exited execution keeps its last screen."""
        if live.screen is None:
            return
        keeper = live.screen.keeper
        # Each pass is bounded: the keeper fast-forwards a backlog longer than
        # screen_backlog_seconds, and a resync replays at most screen_replay_bytes.
        while keeper.process(0.05):
            pass
        if keeper.resync():
            while keeper.process(0.05):
                pass
        self.screen_changed(live, keeper.snapshot())

    def screen_changed(self, live: Live, snap: LiveScreen) -> None:
        """Persist the screen with the next ingest batch, and let the recognizer look at it.
        A revision already handed to ingest is not handed again (the keeper's quiet publish
        repeats the last one): that was a second store transaction per line of output."""
        if snap.revision != live.screen_revision:
            live.screen_revision = snap.revision
            self.ingest.set_screen(live.record.execution_id, store_screen(snap, self.store.clock()))
        if live.recognition is not None:
            live.recognition.observe(snap)

    async def _acknowledge(self, live: Live) -> None:
        """Tell the guardian what is durable, so its exit tail stays small and exact."""
        while True:
            await live.committed.wait()
            live.committed = trio.Event()
            end = live.record.output_total_bytes
            if end > live.acked and live.link is not None:
                try:
                    await live.link.ack(end)
                except GuardianError:
                    return
                live.acked = end
                # One ack per interval, not per commit: each wakes the guardian, and 500
                # executions each printing a line a second made 500 acks a second.
                await trio.sleep(self.settings.guardian_ack_interval_seconds)

    async def _exited(self, live: Live, status: wire.ExitStatus, end_offset: int) -> None:
        eid = live.record.execution_id
        self.ingest.set_fields(eid, status="exited", exit_code=status.exit_code,
                               signal=status.signal, ended_unix_ms=status.ended_unix_ms,
                               output_pending=False, recognized_state="exited")
        await self.ingest.flush()

    async def _settle_lost(self, live: Live, reason: str) -> None:
        """The connection is gone: exit record and tail if the guardian left them, else unknown."""
        record = live.record
        eid = record.execution_id
        runtime = record.runtime
        if runtime is not None and not await self._guardian_gone(runtime):
            # Alive but not talking to us: we can't observe it, so we can't claim an outcome.
            reason = "the guardian is alive but does not answer"
        elif runtime is not None:
            try:
                left = await trio.to_thread.run_sync(read_exit_records, self.records_dir,
                                                     runtime.runtime_id)
            except (RecordsError, ValueError) as exc:
                left = None
                reason = f"the guardian's exit record is unreadable: {exc}"
            if left is not None and left.exit.identity == to_wire_identity(runtime):
                if left.tail is not None and left.tail.data:
                    self.ingest.add_output(eid, left.tail.start_offset, left.tail.data)
                await self._exited(live, left.exit.status, left.exit.end_offset)
                await trio.to_thread.run_sync(delete_exit_records, self.records_dir,
                                              runtime.runtime_id)
                return
        self.ingest.set_fields(eid, status="unknown", unknown_reason=reason, output_pending=False,
                               recognized_state="unknown")
        await self.ingest.flush()

    async def _guardian_gone(self, runtime: RuntimeIdentity) -> bool:
        """True once the guardian process is gone. A guardian closes its sockets a moment
        before it becomes a zombie, so after its connection ends we wait on a pidfd (readable
        at exit) for up to `guardian_exit_wait_seconds` instead of reading /proc once."""
        identity = to_wire_identity(runtime)
        try:
            fd = os.pidfd_open(runtime.guardian_pid)
        except ProcessLookupError:
            return True
        try:
            if not identity_alive(identity):
                return True  # that pid is no longer our guardian (gone, or reused)
            with trio.move_on_after(self.settings.guardian_exit_wait_seconds):
                await trio.lowlevel.wait_readable(fd)
            return not identity_alive(identity)
        finally:
            os.close(fd)

    # --- called by Ingest after each commit -------------------------------------------------

    def _committed(self, record: ExecutionRecord) -> None:
        live = self.live.get(record.execution_id)
        if live is not None:
            live.record = record
            live.committed.set()

    # --- control --------------------------------------------------------------------------

    async def connected(self, execution_id: str) -> Live:
        """The live runtime, once connected (a re-attaching one gets a moment to connect)."""
        live = self.live.get(execution_id)
        if live is not None and not live.attached.is_set():
            with trio.move_on_after(self.settings.guardian_start_timeout_seconds):
                await _first_of(live.attached, live.done)
        return self.get_live(execution_id)

    def get_live(self, execution_id: str) -> Live:
        live = self.live.get(execution_id)
        if live is None or live.link is None:
            raise VigilError(ErrorCode.CONFLICT, "the execution is not running",
                             {"execution_id": execution_id})
        return live

    async def signal(self, execution_id: str, signum: int) -> None:
        live = await self.connected(execution_id)
        try:
            await live.link.signal(signum, group=True)
        except GuardianError as exc:
            raise VigilError(ErrorCode.CONFLICT, f"the guardian did not take the signal: {exc.message}",
                             {"execution_id": execution_id}) from None

    async def send_input(self, execution_id: str, data: bytes) -> None:
        live = await self.connected(execution_id)
        try:
            await live.link.send_input(data)
        except GuardianError as exc:
            raise VigilError(ErrorCode.CONFLICT, f"the guardian did not take the input: {exc.message}",
                             {"execution_id": execution_id}) from None

    async def resize(self, execution_id: str, rows: int, cols: int) -> None:
        live = await self.connected(execution_id)
        await live.link.resize(rows, cols)
        if live.screen is not None:
            live.screen.keeper.resize(rows, cols)
        self.ingest.set_fields(execution_id, rows=rows, cols=cols)


async def _first_of(*events: trio.Event) -> None:
    """Return when any of the events is set."""
    async with trio.open_nursery() as nursery:
        for event in events:
            async def wait(e=event):
                await e.wait()
                nursery.cancel_scope.cancel()
            nursery.start_soon(wait)


def store_screen(snap: LiveScreen, now_ms: int) -> ScreenSnapshot:
    row, col = snap.cursor
    return ScreenSnapshot(snapshot=snap.revision, text=snap.text, rows=snap.rows, cols=snap.cols,
                          cursor_row=row, cursor_col=col, fidelity=snap.fidelity,
                          title=snap.title or None, captured_unix_ms=now_ms,
                          truncated=bool(snap.trimmed_lines))


def parse_signal(value: int | str) -> int:
    """A signal number from a number or a name (TERM, SIGTERM, term)."""
    if isinstance(value, int):
        if 1 <= value <= 64:
            return value
    else:
        name = value.upper()
        name = name if name.startswith("SIG") else "SIG" + name
        try:
            return int(signal_mod.Signals[name])
        except KeyError:
            pass
    raise VigilError(ErrorCode.INVALID_REQUEST, f"unknown signal {value!r}",
                     {"field": "params.signal"})
