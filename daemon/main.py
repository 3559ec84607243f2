"""`vigild`: take the daemon's place, then serve until SIGTERM/SIGINT.

Start-up order matters: settings are read and the runtime dir, lock and socket are claimed
before anything else, so a second daemon (or one started with a bad config) exits at once
with one clear line instead of half-starting. Readiness is announced last — to systemd with
`READY=1`, to an autostarting CLI through `--ready-fd` — once the socket is accepting.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import signal
import sys
from pathlib import Path

import trio

import msgspec

from vigil.daemon.agent.prompts import PromptService
from vigil.daemon.archive.builder import ArchiveBuilder, CatalogWriter
from vigil.daemon.archive.cleanup import run_cleanup
from vigil.daemon.archive.files import ArchiveFiles
from vigil.daemon.archive.service import TraceService
from vigil.daemon.history.follow import OutputStream
from vigil.daemon.history.service import ExecutionService
from vigil.daemon.methods import agent as agent_methods
from vigil.daemon.methods import daemon_info, execution, scope, shell, terminal
from vigil.daemon.methods import temporary as temporary_methods
from vigil.daemon.methods import projection as projection_methods
from vigil.daemon.methods import transcript as transcript_methods
from vigil.daemon.process import logs, memory, rendezvous, systemd
from vigil.daemon.process.keeper import keep_reachable
from vigil.daemon.process.state import DaemonState
from vigil.daemon.recognize import Registry
from vigil.daemon.recognize.live import RecognitionFactory
from vigil.daemon.rpc.dispatch import Dispatcher
from vigil.daemon.rpc.scopes import Scopes, ThreadRecord
from vigil.daemon.rpc.server import Server
from vigil.daemon.runtime.controls import Controls
from vigil.daemon.runtime.events import ExecutionLog
from vigil.daemon.projection.hub import ProjectionHub
from vigil.daemon.runtime.lifecycle import LifecycleBus
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import Settings, SettingsError, load_settings
from vigil.daemon.shell.manager import ShellManager
from vigil.daemon.store import Store
from vigil.daemon.temporary.directory import ManagedDirectories
from vigil.daemon.temporary.service import TemporaryHelpers
from vigil.daemon.transcript.agents import AgentLogs
from vigil.daemon.transcript.fanout import FanOut
from vigil.daemon.transcript.files import TranscriptFiles
from vigil.daemon.transcript.observer import TranscriptObserver
from vigil.daemon.transcript.recorder import Recorder
from vigil.daemon.telemetry.usage_log import FILE_NAME as USAGE_FILE, UsageLog
from vigil.protocol import paths
from vigil.protocol.errors import VigilError
from vigil.protocol.version import VERSION

log = logging.getLogger("vigild")

#: Written to --ready-fd: the first line an autostarting client reads.
READY = b"READY\n"
EXISTS = b"EXISTS\n"


def _signal_ready(fd: int | None, message: bytes) -> None:
    if fd is None:
        return
    try:
        os.write(fd, message)
    except OSError:
        pass  # the starter gave up waiting; nothing to tell
    finally:
        os.close(fd)


def load_scopes(store: Store, settings: Settings) -> Scopes:
    decoder = msgspec.msgpack.Decoder(ThreadRecord)
    encoder = msgspec.msgpack.Encoder()
    threads = []
    for raw in store.all_threads():
        try:
            threads.append(decoder.decode(raw))
        except msgspec.DecodeError as exc:
            log.error("skipping an unreadable thread record: %s", exc)

    def save(thread: ThreadRecord) -> None:
        store.put_thread(thread.thread_id, encoder.encode(thread))

    return Scopes(threads, save, store.delete_thread, store.clock, settings)


async def serve(state: DaemonState, claim: rendezvous.Claim, ready_fd: int | None,
                store: Store) -> None:
    """The composition root: every service is built here, with its collaborators as
    constructor parameters, and every route installed; nothing is wired anywhere else."""
    settings = state.settings
    bus = LifecycleBus()
    scopes = load_scopes(store, settings)
    registry = Registry()
    for error in registry.errors:
        log.warning("recognizer manifest rejected: %s", error)
    events = ExecutionLog(store, settings)
    bus.observe(events.observe)
    runtimes = RuntimeManager(store, settings, bus, RecognitionFactory(registry, settings),
                              guardian_dir=paths.guardian_dir(), log_dir=str(state.state_dir),
                              events=events)
    helper_dirs = ManagedDirectories(state.state_dir)
    shells = ShellManager(scopes, store, runtimes, settings,
                          shell_dir=os.path.join(paths.guardian_dir(), "shells"),
                          helper_dirs=helper_dirs)
    projection = ProjectionHub(
        settings, lambda tid: thread.principal if (thread := scopes.get(tid)) else None,
        lambda: [live.record for live in runtimes.live.values()])
    transcripts = traces = None
    if settings.transcripts_enabled:
        if settings.archives_enabled:  # built from the transcript's events
            archive_files = ArchiveFiles(state.state_dir / "archives")
            writer = CatalogWriter(store, archive_files, settings)
            builder = ArchiveBuilder(
                archive_files, writer, settings, clock=store.clock,
                records=lambda eid: live.record if (live := runtimes.live.get(eid)) else None)
            builder.resume(store.uncommitted_archives())
            traces = TraceService(store, archive_files, builder, writer, settings)
        transcripts = Recorder(TranscriptFiles(state.state_dir / "transcripts", settings),
                               FanOut(settings.subscriber_buffer_events), settings,
                               archives=traces.builder if traces else None,
                               observers=(projection,))
    agent_logs = AgentLogs(transcripts, bus, settings) if transcripts else None
    executions = ExecutionService(store, runtimes, bus, registry, settings, agent_logs)
    prompts = PromptService(store, runtimes, registry, settings, transcripts,
                            traces.builder if traces else None)
    if transcripts is not None:
        bus.observe(TranscriptObserver(transcripts, agent_logs, runtimes))
    bus.observe(projection.lifecycle)  # after the transcript: a step ends before its run

    helpers = TemporaryHelpers(helper_dirs, store, runtimes, shells, scopes, settings)
    usage = UsageLog(state.state_dir / USAGE_FILE, settings)
    dispatcher = Dispatcher(scopes, usage, transcripts)
    daemon_info.install(dispatcher, state=state, ingest=runtimes.ingest, transcripts=transcripts)
    scope.install(dispatcher, scopes=scopes, shells=shells, transcripts=transcripts,
                  helpers=helpers)
    temporary_methods.install(dispatcher, helpers=helpers)
    transcript_methods.install(dispatcher, store=store, scopes=scopes, transcripts=transcripts,
                               settings=settings)
    execution.install(dispatcher, store=store, runtimes=runtimes, service=executions,
                      outputs=OutputStream(store, runtimes, bus, settings), settings=settings,
                      controls=Controls(store, runtimes, settings), shells=shells)
    terminal.install(dispatcher, store=store, runtimes=runtimes, settings=settings)
    shell.install(dispatcher, shells=shells, runtimes=runtimes, settings=settings, store=store,
                  service=executions, prompts=prompts)
    agent_methods.install(dispatcher, service=executions, prompts=prompts, settings=settings,
                          traces=traces)
    projection_methods.install(dispatcher, hub=projection, store=store, settings=settings)
    server = Server(state, dispatcher)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(usage.run)
            await nursery.start(events.run)
            await nursery.start(projection.run)
            if transcripts is not None:
                await nursery.start(agent_logs.run)
                await nursery.start(transcripts.files.keep_pruned)
            if traces is not None:
                await nursery.start(traces.writer.run)
                await nursery.start(run_cleanup, store, traces.files, traces.builder, settings)
            await nursery.start(runtimes.run, shells)
            await nursery.start(server.serve, claim.listener)
            await nursery.start(keep_reachable, claim, server.adopt,
                                settings.runtime_dir_settle_seconds,
                                settings.runtime_dir_retry_seconds)
            await nursery.start(memory.collect_on_a_timer, settings.gc_collect_seconds,
                                settings.gc_allocations_max, settings.gc_thaw_seconds)
            # Logged before readiness is told, so a starter that reads the log after READY
            # finds this line there.
            log.info("vigild %s listening on %s (pid %d)", VERSION, state.socket_path, os.getpid())
            systemd.notify("READY=1")
            _signal_ready(ready_fd, READY)
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                systemd.notify("STOPPING=1")
                break
            nursery.cancel_scope.cancel()
    projection.close()
    if transcripts is not None:
        transcripts.close()


def _refused(ready_fd: int | None, exc: rendezvous.RendezvousError) -> int:
    """Tell the log and the starter why we do not take the daemon's place; the exit status.
    Another daemon already in place is no error for a starter (it connects to that one)."""
    if isinstance(exc, rendezvous.AlreadyRunning):
        log.info("%s", exc)
        _signal_ready(ready_fd, EXISTS)
        return 0 if ready_fd is not None else 1
    log.error("%s", exc)
    _signal_ready(ready_fd, b"ERROR " + str(exc).encode() + b"\n")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vigild", description="the vigil daemon")
    parser.add_argument("--ready-fd", type=int, default=None,
                        help="write READY or EXISTS to this fd once the socket accepts")
    parser.add_argument("--version", action="version", version=f"vigild {VERSION}")
    args = parser.parse_args(argv)
    memory.limit_malloc_arenas()
    logs.setup()
    # A fatal signal (SIGBUS from a store file cut short under us, SIGSEGV) would otherwise
    # end the daemon without a line: this dumps "Fatal Python error" and the stacks to
    # stderr, which is the log (the autostarting CLI shows that line).
    faulthandler.enable()
    ready_fd = args.ready_fd
    if ready_fd is not None:
        os.set_inheritable(ready_fd, False)
    try:
        settings = load_settings()
    except SettingsError as exc:
        log.error("bad configuration: %s", exc)
        _signal_ready(ready_fd, b"ERROR " + str(exc).encode() + b"\n")
        return 2
    activated = systemd.take_listen_fds()
    if activated:
        socket_path = Path(activated[0].getsockname())
        for extra in activated[1:]:
            extra.close()
    else:
        socket_path = Path(paths.socket_path())
    lock_path = socket_path.with_name(socket_path.name + ".lock")
    state_dir = Path(paths.state_dir())
    with contextlib.ExitStack() as held:  # released in reverse order, however we leave
        try:
            # The state dir first: a daemon that may not own the store never touches the socket.
            held.callback(os.close, rendezvous.lock_state_dir(state_dir, socket_path))
            claim = rendezvous.claim(socket_path, lock_path, activated[0] if activated else None)
            held.callback(claim.release)
        except rendezvous.RendezvousError as exc:
            return _refused(ready_fd, exc)
        try:
            store = Store.open(state_dir / "store", settings)
        except VigilError as exc:
            log.error("cannot open the store: %s", exc.message)
            _signal_ready(ready_fd, b"ERROR " + exc.message.encode() + b"\n")
            return 1
        held.callback(store.close)
        state = DaemonState(settings=settings, socket_path=socket_path, state_dir=state_dir,
                            socket_activated=bool(activated))
        trio.run(serve, state, claim, ready_fd, store)
    log.info("vigild stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
