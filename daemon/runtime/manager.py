"""Runtimes: the guardians the daemon is connected to, and what to do when one is lost.

The manager owns one task per live runtime (in its own nursery): connect to the guardian
(checking its *whole* identity), subscribe from the last persisted offset, hand every
Output to `Ingest`, acknowledge what the store made durable, and on `Exited` persist the
outcome — durably — before sending `ExitAck`. When a guardian's connection ends any other
way, the outcome is settled from what is left: the guardian's exit record and output tail,
or else `unknown` — never a guessed success.

At start, `recover()` runs the same task for every record that was not terminal when the
previous daemon stopped: nothing is re-run, only re-attached or settled.

Commands to a runtime (input, signal, resize) go through its `GuardianLink`, which numbers
them and waits for the guardian's answer under a deadline, so every result says what the
guardian did — accepted, refused with its reason, or did not answer in time.
"""

from __future__ import annotations

import logging
import os
import signal as signal_mod
from typing import Callable, Protocol

import msgspec
import trio

from vigil.daemon.guardian import wire
from vigil.daemon.guardian.errors import GuardianClosed, GuardianError, GuardianLaunchError
from vigil.daemon.guardian.identity import identity_alive, parse_stat
from vigil.daemon.guardian.launch import launch_guardian, make_launch_spec
from vigil.daemon.guardian.records import RecordsError, delete_exit_records, read_exit_records
from vigil.daemon.recognize.live import RecognitionFactory
from vigil.daemon.screen import ScreenKeeper
from vigil.daemon.screen.driver import ScreenTask
from vigil.daemon.screen.snapshot import ScreenSnapshot
from vigil.daemon.settings import Settings
from vigil.daemon.store import (
    ExecutionRecord,
    RuntimeIdentity,
    Store,
    StoredScreen,
    new_execution_id,
)
from vigil.protocol.errors import ErrorCode, VigilError

from .ingest import Ingest
from .lifecycle import LifecycleBus, LifecycleEvent
from .link import GuardianLink, GuardianRefused
from .live import Follower, Live, OutputObserver

log = logging.getLogger("vigild.runtimes")

#: Variables of the daemon's own service context that a child must not inherit: they would
#: make it believe systemd handed *it* sockets or a notify channel.
_SERVICE_ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET",
                "INVOCATION_ID", "JOURNAL_STREAM", "WATCHDOG_PID", "WATCHDOG_USEC")


class RuntimeHooks(Protocol):
    """What the runtimes of another service need at recovery and at their end (the
    persistent shell: its marker scanner on a re-attached shell, its commands)."""

    def observers_for(self, record: ExecutionRecord) -> list[OutputObserver]:
        """Output observers for a record being re-attached at recovery."""

    def settle_orphans(self, records: list[ExecutionRecord]) -> list[tuple[str, dict]]:
        """Non-terminal records without a runtime of their own (shell commands): re-bind
        them, or return (execution_id, fields) to settle each."""

    def runtime_ended(self, record: ExecutionRecord) -> None:
        """A runtime ended (exited or unknown); `record` is its final record."""


#: Builds the output observers of a new runtime from its record.
ObserverFactory = Callable[[ExecutionRecord], list[OutputObserver]]


class InputOutcome(msgspec.Struct, frozen=True):
    """What the guardian did with input: `accepted` bytes; `confirmed` false only for a v1
    guardian, which cannot say (the bytes were handed over, acceptance unknown)."""

    accepted: int
    confirmed: bool


def to_store_identity(identity: wire.RuntimeIdentity) -> RuntimeIdentity:
    """The guardian wire's identity as the store keeps it (each format versioned on its own;
    this is the one place they convert)."""
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
                 recognitions: RecognitionFactory, *, guardian_dir: str, log_dir: str):
        self.store = store
        self.settings = settings
        self.bus = bus
        self.recognitions = recognitions
        self.guardian_dir = guardian_dir
        self.records_dir = os.path.join(guardian_dir, "records")
        self.log_dir = log_dir
        self.live: dict[str, Live] = {}
        self.ingest = Ingest(store, settings, bus, self._committed)
        self._nursery: trio.Nursery | None = None
        self._hooks: RuntimeHooks | None = None

    # --- task tree ------------------------------------------------------------------------

    async def run(self, hooks: RuntimeHooks, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Run ingest and every runtime's task; recover first. `hooks` are told about
        recovered and ended runtimes (the persistent shells)."""
        self._hooks = hooks
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.ingest.run)
            await self.recover()
            task_status.started()
            await trio.sleep_forever()

    def socket_path(self, runtime_id: str) -> str:
        return os.path.join(self.guardian_dir, f"{runtime_id}.sock")

    # --- starting -------------------------------------------------------------------------

    def child_environment(self, env: dict[str, str], base: str = "daemon") -> dict[str, str]:
        """The environment a child is started with: `env` over the daemon's own (less its
        service variables) for base `daemon`, or `env` alone for base `none`."""
        if base == "none":
            return dict(env)
        child_env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV}
        child_env.update(env)
        return child_env

    async def start(self, *, scope: str, thread_id: str, workspace_root: str,
                    argv: list[str], command: str, cwd: str, env: dict[str, str],
                    rows: int | None, cols: int | None, name: str,
                    kind: str = "standalone",
                    observers: ObserverFactory | None = None,
                    keep_env: bool = False,
                    followers: tuple[Follower, ...] = ()) -> ExecutionRecord:
        """Record the execution, launch its guardian, attach; returns the running record
        (or, when the command could not be started, the record exited 127 or 126 with its
        `start_error`).

        `env` is the child's whole environment (see `child_environment`); with `keep_env`
        it is also kept, private, on the record. `followers` are fed from the first byte.

        `observers(record)`, when given, returns the output observers of the new runtime
        (called once the record exists, before any output is read).

        The record is created *before* the guardian exists, so a daemon that dies in between
        leaves a record that recovery settles as `unknown`, never an untracked process.

        Cancellation: once begun, creating the record, launching the guardian, recording
        its identity and attaching complete whatever happens to the caller (shielded), so a
        client that disconnects mid-`run` leaves a tracked, attached execution — never a
        phantom record or an untracked process. Only the final wait for the connection is
        cancellable.
        """
        eid = new_execution_id()
        rows = rows or self.settings.terminal_rows
        cols = cols or self.settings.terminal_cols
        record = ExecutionRecord(
            execution_id=eid, scope=scope, thread_id=thread_id, workspace_root=workspace_root,
            command=command, argv=argv, cwd=cwd, name=name or None, kind=kind,
            status="running", started_unix_ms=self.store.clock(), rows=rows, cols=cols,
            env=dict(env) if keep_env else None)
        with trio.CancelScope(shield=True):
            live = await self._launch(record, env, observers or (lambda record: []), followers)
        if isinstance(live, ExecutionRecord):
            return live  # the command could not be started: exited 127/126, with the reason
        # Answer once the daemon can act on it: a signal, input or resize sent right after
        # `run` returns must find the guardian connected.
        with trio.move_on_after(self.settings.guardian_start_timeout_seconds):
            await trio.lowlevel.checkpoint()
            while not (live.attached.is_set() or live.done.is_set()):
                await _first_of(live.attached, live.done)
        return live.record

    async def _launch(self, record: ExecutionRecord, env: dict[str, str],
                      observers: ObserverFactory, followers: tuple[Follower, ...] = ()
                      ) -> Live | ExecutionRecord:
        """Create the record and start its guardian: the live runtime, or — when the
        command itself could not be started — the record, already exited 127/126."""
        eid = record.execution_id
        record = await trio.to_thread.run_sync(self.store.create_execution, record)
        spec = make_launch_spec(runtime_id=eid, argv=record.argv, cwd=record.cwd, env=env,
                                socket_path=self.socket_path(eid), records_dir=self.records_dir,
                                settings=self.settings, rows=record.rows, cols=record.cols)
        try:
            identity = await trio.to_thread.run_sync(
                lambda: launch_guardian(spec, self.settings,
                                        stderr_path=os.path.join(self.log_dir, "guardians.log")))
        except GuardianLaunchError as exc:
            if exc.exit_code is not None:
                # The guardian ran but the command could not (not found, not executable): a
                # definite outcome, recorded as a shell reports it — never `unknown`.
                now = self.store.clock()
                record = await trio.to_thread.run_sync(lambda: self.store.update(
                    eid, status="exited", exit_code=exc.exit_code, ended_unix_ms=now,
                    start_error=exc.message, recognized_state="exited"))
                for kind in ("started", "exited"):
                    self.bus.publish(LifecycleEvent(kind=kind, scope=record.scope,
                                                    execution_id=eid,
                                                    at_unix_ms=record.observed_at_unix_ms))
                return record
            # It never ran: say so on the record (unknown, with the reason) and to the caller.
            reason = f"launch failed: {exc.message}"
            await trio.to_thread.run_sync(lambda: self.store.update(
                eid, status="unknown", unknown_reason=reason))
            raise VigilError(exc.code, exc.message, {"execution_id": eid}) from None
        record = await trio.to_thread.run_sync(
            lambda: self.store.update(eid, runtime=to_store_identity(identity)))
        self.bus.publish(LifecycleEvent(kind="started", scope=record.scope, execution_id=eid,
                                        at_unix_ms=record.observed_at_unix_ms, record=record))
        return self._attach(record, observers(record), followers)

    def _attach(self, record: ExecutionRecord, observers: list[OutputObserver],
                followers: tuple[Follower, ...] = ()) -> Live:
        live = self.live[record.execution_id] = Live(record, observers=list(observers),
                                                     followers=set(followers))
        assert self._nursery is not None
        self._nursery.start_soon(self._run_runtime, live)
        return live

    # --- recovery -------------------------------------------------------------------------

    async def recover(self) -> int:
        """Re-attach or settle every non-terminal record. Never re-runs anything."""
        assert self._hooks is not None
        records = await trio.to_thread.run_sync(self.store.non_terminal_records)
        commands = [r for r in records if r.kind == "shell_command"]
        records = [r for r in records if r.kind != "shell_command"]
        for record in records:
            if record.runtime is None:
                await trio.to_thread.run_sync(lambda r=record: self.store.update(
                    r.execution_id, status="unknown",
                    unknown_reason="the daemon stopped before the guardian was started"))
                continue
            self._attach(record, self._hooks.observers_for(record))
        for eid, fields in self._hooks.settle_orphans(commands):
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
            for follower in live.followers:
                follower.close()
            if live.record.is_terminal and self._hooks is not None:
                self._hooks.runtime_ended(live.record)
            live.done.set()

    async def _follow_guardian(self, live: Live) -> None:
        record = live.record
        eid = record.execution_id
        assert record.runtime is not None
        s = self.settings
        try:
            with trio.fail_after(s.guardian_start_timeout_seconds):
                live.link = await GuardianLink.connect(
                    self.socket_path(record.runtime.runtime_id), to_wire_identity(record.runtime),
                    max_frame_bytes=s.max_frame_bytes,
                    command_timeout=s.guardian_command_timeout_seconds,
                    outbox_bytes=s.guardian_outbox_bytes)
        except (GuardianError, trio.TooSlowError) as exc:
            log.info("guardian of %s unreachable: %s", eid, exc)
            await self._settle_lost(live, "the guardian vanished without an exit record")
            return
        link = live.link
        welcome = link.welcome
        stored_end = record.output_total_bytes
        keeper = ScreenKeeper(welcome.rows, welcome.cols, s)
        replay_from = await self._restore_screen(live, keeper, welcome.ring_start)
        link.subscribe(replay_from)
        live.acked = stored_end
        live.caught_up_to = welcome.ring_end
        live.received_end = stored_end
        live.screen_origin = replay_from - keeper.fed_bytes
        live.screen = ScreenTask(keeper, s, lambda snap, quiet: self.screen_changed(live, snap))
        live.recognition = self.recognitions(
            record.runtime.child_pid,
            lambda state: self.ingest.set_fields(eid, recognized_state=state))
        replaying = replay_from < stored_end
        live.held = False
        self._hold(live)  # a `run --wait` follows from the first byte
        async with trio.open_nursery() as nursery:
            nursery.start_soon(link.run_sender)
            nursery.start_soon(self._acknowledge, live)
            await nursery.start(live.screen.run)
            live.attached.set()
            nursery.start_soon(live.recognition.run)
            if keeper.fed_bytes and not replaying:
                self.screen_changed(live, keeper.snapshot())  # recognize the restored screen now
            try:
                while True:
                    msg = await link.receive()
                    if isinstance(msg, wire.Output):
                        offset, data = msg.offset, msg.data
                        if offset < stored_end:
                            # Replayed from the ring into the restored screen only: the
                            # store (and everyone else) has these bytes already; the answers
                            # to old terminal queries in them are stale.
                            old = data[:stored_end - offset]
                            live.screen.feed(old)
                            live.screen.take_replies()
                            offset, data = offset + len(old), data[len(old):]
                            if offset >= stored_end and replaying:
                                replaying = False
                                keeper.catch_up()
                                self.screen_changed(live, keeper.snapshot())
                            if not data:
                                continue
                        await self.ingest.wait_room()
                        for follower in tuple(live.followers):
                            await follower.wait_room(s.follow_stall_seconds)
                        for observer in live.observers:
                            observer(offset, data)
                        self.ingest.add_output(eid, offset, data)
                        live.screen.feed(data)
                        live.received_end = offset + len(data)
                        for viewer in tuple(live.viewers):
                            viewer.offer(data)
                        for follower in tuple(live.followers):
                            follower.offer(offset, data)
                        replies = live.screen.take_replies()
                        if replies and not live.viewers:
                            # A TUI asking "who are you?" (DA) or "where is the cursor?"
                            # (CPR) hangs until answered; with no human attached, we answer.
                            # Posted, not awaited: this loop is what reads the answer.
                            link.post(wire.Input(data=replies))
                    elif isinstance(msg, wire.Exited):
                        self._final_screen(live)
                        await self._exited(live, msg.status)
                        link.exit_ack()
                        await link.flush()
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
                await self.ingest.durable()
                await self._settle_lost(live, "the guardian vanished without an exit record")
            finally:
                nursery.cancel_scope.cancel()

    async def _restore_screen(self, live: Live, keeper: ScreenKeeper, ring_start: int) -> int:
        """Give a re-attached runtime its screen back; returns the offset to subscribe from.

        A fresh keeper starts blank, so after a daemon restart `vigil screen` of an idle
        REPL would show nothing and recognition would see no prompt until new output came.
        Instead: when the guardian's ring still holds the whole output, all of it is
        replayed into the keeper (exact); otherwise the persisted screen is drawn into it
        and the ring is replayed from the offset that screen was current at. Replayed bytes
        feed only the screen (the caller skips ingest for them). When neither joins up, the
        persisted screen is shown and marked as not exact until the program redraws.
        """
        record = live.record
        end = record.output_total_bytes
        if ring_start == 0:
            return 0
        stored = await trio.to_thread.run_sync(self.store.get_screen, record.scope,
                                               record.execution_id)
        if stored is not None:
            keeper.feed(repaint_bytes(stored))
            keeper.catch_up()
            keeper.take_replies()
            if stored.output_offset is not None and ring_start <= stored.output_offset <= end:
                return stored.output_offset
        keeper.lost()
        return end

    def _final_screen(self, live: Live) -> None:
        """Bring the screen fully up to date once, so an exited execution keeps its last screen."""
        if live.screen is None:
            return
        keeper = live.screen.keeper
        keeper.catch_up()
        if keeper.resync():
            keeper.catch_up()
        self.screen_changed(live, keeper.snapshot())

    def screen_changed(self, live: Live, snap: ScreenSnapshot) -> None:
        """Persist the screen with the next ingest batch, and let the recognizer look at it.
        A revision already handed to ingest is not handed again (the keeper's quiet publish
        repeats the last one): that was a second store transaction per line of output —
        unless it was handed without the output offset it is current at (the keeper had
        bytes left to parse then), which a re-attaching daemon restores the screen from."""
        keeper = live.screen.keeper if live.screen is not None else None
        offset = None
        if keeper is not None and not keeper.pending_bytes:
            offset = live.screen_origin + keeper.fed_bytes  # every byte fed is on this screen
        if snap.revision != live.screen_revision or (offset is not None
                                                     and live.screen_offset is None):
            live.screen_revision = snap.revision
            live.screen_offset = offset
            self.ingest.set_screen(live.record.execution_id,
                                   stored_screen(snap, self.store.clock(), offset))
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
                    live.link.ack(end)
                except GuardianError:
                    return
                live.acked = end
                # One ack per interval, not per commit: each wakes the guardian, and 500
                # executions each printing a line a second made 500 acks a second.
                await trio.sleep(self.settings.guardian_ack_interval_seconds)

    async def _exited(self, live: Live, status: wire.ExitStatus) -> None:
        """Persist the outcome and everything before it; returns once that is durable (a
        failing store is retried meanwhile: only then may the guardian forget its records)."""
        self.ingest.set_fields(live.record.execution_id, status="exited",
                               exit_code=status.exit_code, signal=status.signal,
                               ended_unix_ms=status.ended_unix_ms, recognized_state="exited")
        await self.ingest.durable()

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
                await self._exited(live, left.exit.status)
                await trio.to_thread.run_sync(delete_exit_records, self.records_dir,
                                              runtime.runtime_id)
                return
        self.ingest.set_fields(eid, status="unknown", unknown_reason=reason,
                               recognized_state="unknown")
        await self.ingest.durable()

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

    # --- what clients see -------------------------------------------------------------------

    def output_pending(self, record: ExecutionRecord) -> bool:
        """True while output the daemon knows of is not yet persisted: bytes handed to ingest
        and not committed, or a re-attached guardian whose ring held more than the store had
        (spec: `output_pending`)."""
        if self.ingest.has_pending_output(record.execution_id):
            return True
        live = self.live.get(record.execution_id)
        return live is not None and live.record.output_total_bytes < live.caught_up_to

    # --- followers (`follow` streams) -----------------------------------------------------

    def add_follower(self, live: Live, follower: Follower) -> None:
        """A `follow` stream joins. While anyone follows, the guardian holds its child
        rather than overrun its ring (guardian protocol v3): a daemon that is late on a
        loaded machine then costs the child time, as a slow terminal would, not bytes. A
        follower that stalls itself still only loses its own oldest bytes (live.py)."""
        live.followers.add(follower)
        self._hold(live)

    def remove_follower(self, live: Live, follower: Follower) -> None:
        live.followers.discard(follower)
        self._hold(live)

    def _hold(self, live: Live) -> None:
        want = bool(live.followers)
        if live.link is None or live.held == want:
            return
        try:
            if live.link.hold(want):
                live.held = want
        except GuardianError:
            pass  # the connection is ending; a new one starts unheld

    def execution_of_process(self, pid: int) -> str | None:
        """The live execution whose child is `pid` or one of its ancestors (a caller that
        runs under vigil: an agent calling vigil from inside its terminal), else None."""
        children = {live.record.runtime.child_pid: eid for eid, live in self.live.items()
                    if live.record.runtime is not None}
        for _ in range(_ANCESTRY_DEPTH):
            if pid in children:
                return children[pid]
            pid = parent_pid(pid)
            if pid is None or pid <= 1:
                return None
        return None

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

    async def signal(self, execution_id: str, signum: int) -> tuple[bool, str | None]:
        """Signal the execution's process group: (delivered, why not). A group that is
        already gone (ESRCH) is not delivered, with the reason; any other refusal raises.

        Raises:
            VigilError: the guardian refused for another reason, did not answer in time
                (`timeout`), or is not reading (`busy`); `conflict` if not running.
        """
        live = await self.connected(execution_id)
        try:
            await live.link.signal(signum, group=True)
        except GuardianRefused as exc:
            if exc.code == ErrorCode.NOT_FOUND:
                return False, exc.message
            raise _control_error(exc, execution_id, "signal") from None
        except GuardianError as exc:
            raise _control_error(exc, execution_id, "signal") from None
        return True, None

    async def send_input(self, execution_id: str, data: bytes) -> InputOutcome:
        """Write `data` to the execution's terminal; what the guardian accepted.

        Raises:
            VigilError: refused by the guardian with its code (`limit_exceeded`: the child is
                not reading; `unavailable`: it exited), `timeout` (no answer: the input may
                still arrive), `busy`, or `conflict` if not running.
        """
        live = await self.connected(execution_id)
        try:
            done = await live.link.send_input(data)
        except GuardianError as exc:
            raise _control_error(exc, execution_id, "input") from None
        if done is None:
            return InputOutcome(accepted=len(data), confirmed=False)
        return InputOutcome(accepted=done.accepted, confirmed=True)

    async def resize(self, execution_id: str, rows: int, cols: int) -> None:
        live = await self.connected(execution_id)
        try:
            await live.link.resize(rows, cols)
        except GuardianError as exc:
            raise _control_error(exc, execution_id, "resize") from None
        if live.screen is not None:
            live.screen.keeper.resize(rows, cols)
        self.ingest.set_fields(execution_id, rows=rows, cols=cols)


def _control_error(exc: GuardianError, execution_id: str, what: str) -> VigilError:
    """A guardian's refusal or silence, as the answer to the caller's command."""
    if isinstance(exc, GuardianClosed):
        return VigilError(ErrorCode.CONFLICT, f"the execution is not running ({what} not sent)",
                          {"execution_id": execution_id})
    return VigilError(exc.code, f"the guardian did not take the {what}: {exc.message}",
                      {"execution_id": execution_id})


async def _first_of(*events: trio.Event) -> None:
    """Return when any of the events is set."""
    async with trio.open_nursery() as nursery:
        for event in events:
            async def wait(e=event):
                await e.wait()
                nursery.cancel_scope.cancel()
            nursery.start_soon(wait)


def stored_screen(snap: ScreenSnapshot, now_ms: int, output_offset: int | None = None
                  ) -> StoredScreen:
    """The live screen as the store keeps it (`output_offset`: see StoredScreen)."""
    row, col = snap.cursor
    return StoredScreen(snapshot=snap.revision, text=snap.text, rows=snap.rows, cols=snap.cols,
                        cursor_row=row, cursor_col=col, fidelity=snap.fidelity,
                        title=snap.title or None, captured_unix_ms=now_ms,
                        output_offset=output_offset)


def repaint_bytes(stored: StoredScreen) -> bytes:
    """Terminal output that draws a persisted screen (its text, title and cursor) on a
    blank terminal: how a restored keeper starts. Colours were not persisted: plain text."""
    rows = stored.text.split("\n")[: stored.rows]
    out = ["\x1b[H\x1b[2J"]
    if stored.title:
        out.append(f"\x1b]2;{stored.title}\x07")
    out.append("\r\n".join(line[: stored.cols] for line in rows))
    out.append(f"\x1b[{stored.cursor_row + 1};{stored.cursor_col + 1}H")
    return "".join(out).encode("utf-8", "surrogateescape")


#: How far up the process tree a caller is traced to an execution.
_ANCESTRY_DEPTH = 64
#: Field 4 of /proc/PID/stat (ppid); fields after comm start at field 3.
_PPID_AFTER_COMM = 4 - 3


def parent_pid(pid: int) -> int | None:
    """The parent of `pid` (/proc), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(parse_stat(f.read())[1][_PPID_AFTER_COMM])
    except (OSError, ValueError, IndexError):
        return None


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
