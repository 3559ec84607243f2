"""`vigild`: take the daemon's place, then serve until SIGTERM/SIGINT.

Start-up order matters: settings are read and the runtime dir, lock and socket are claimed
before anything else, so a second daemon (or one started with a bad config) exits at once
with one clear line instead of half-starting. Readiness is announced last — to systemd with
`READY=1`, to an autostarting CLI through `--ready-fd` — once the socket is accepting.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

import trio

import msgspec

from vigil.daemon.agent.prompts import PromptService
from vigil.daemon.history.follow import OutputStream
from vigil.daemon.history.service import ExecutionService
from vigil.daemon.methods import agent as agent_methods
from vigil.daemon.methods import daemon_info, execution, scope, shell, terminal
from vigil.daemon.process import logs, rendezvous, systemd
from vigil.daemon.process.state import DaemonState
from vigil.daemon.recognize import Registry
from vigil.daemon.recognize.live import RecognitionFactory
from vigil.daemon.rpc.dispatch import Dispatcher
from vigil.daemon.rpc.scopes import Scopes, ThreadRecord
from vigil.daemon.rpc.server import Server
from vigil.daemon.runtime.lifecycle import LifecycleBus
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import SettingsError, load_settings
from vigil.daemon.shell.manager import ShellManager
from vigil.daemon.store import Store
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


def load_scopes(store: Store) -> Scopes:
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

    return Scopes(threads, save, store.clock)


async def serve(state: DaemonState, claim: rendezvous.Claim, ready_fd: int | None,
                store: Store) -> None:
    """The composition root: every service is built here, with its collaborators as
    constructor parameters, and every route installed; nothing is wired anywhere else."""
    settings = state.settings
    bus = LifecycleBus()
    scopes = load_scopes(store)
    registry = Registry()
    for error in registry.errors:
        log.warning("recognizer manifest rejected: %s", error)
    runtimes = RuntimeManager(store, settings, bus, RecognitionFactory(registry, settings),
                              guardian_dir=paths.guardian_dir(), log_dir=str(state.state_dir))
    shells = ShellManager(scopes, store, runtimes, settings,
                          shell_dir=os.path.join(paths.guardian_dir(), "shells"))
    executions = ExecutionService(store, runtimes, bus, registry, settings)
    prompts = PromptService(store, runtimes, registry, settings)

    dispatcher = Dispatcher(scopes)
    daemon_info.install(dispatcher, state=state, ingest=runtimes.ingest)
    scope.install(dispatcher, scopes=scopes)
    execution.install(dispatcher, store=store, runtimes=runtimes, service=executions,
                      outputs=OutputStream(store, runtimes, bus, settings), settings=settings)
    terminal.install(dispatcher, store=store, runtimes=runtimes, settings=settings)
    shell.install(dispatcher, shells=shells, runtimes=runtimes, settings=settings)
    agent_methods.install(dispatcher, service=executions, prompts=prompts, settings=settings)
    server = Server(state, dispatcher)
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(runtimes.run, shells)
            await nursery.start(server.serve, claim.listener)
            systemd.notify("READY=1")
            _signal_ready(ready_fd, READY)
            log.info("vigild %s listening on %s (pid %d)", VERSION, state.socket_path, os.getpid())
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                systemd.notify("STOPPING=1")
                break
            nursery.cancel_scope.cancel()


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas. Store reads and writes run in trio worker threads, and
    glibc gives each thread its own arena (up to 8 per core): under 50 clients the daemon's
    anonymous memory grew ~14 MiB a round, to 104 MiB, against ~40 MiB flat with two arenas
    (tests/reliability/test_load.py). A no-op where malloc is not glibc's."""
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vigild", description="the vigil daemon")
    parser.add_argument("--ready-fd", type=int, default=None,
                        help="write READY or EXISTS to this fd once the socket accepts")
    parser.add_argument("--version", action="version", version=f"vigild {VERSION}")
    args = parser.parse_args(argv)
    limit_malloc_arenas()
    logs.setup()
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
    try:
        claim = rendezvous.claim(socket_path, lock_path, activated[0] if activated else None)
    except rendezvous.AlreadyRunning as exc:
        log.info("%s", exc)
        _signal_ready(ready_fd, EXISTS)
        return 0 if ready_fd is not None else 1
    except rendezvous.RendezvousError as exc:
        log.error("%s", exc)
        _signal_ready(ready_fd, b"ERROR " + str(exc).encode() + b"\n")
        return 1
    state_dir = Path(paths.state_dir())
    try:
        rendezvous.ensure_private_dir(state_dir)
    except rendezvous.RendezvousError as exc:
        log.error("%s", exc)
        claim.release()
        _signal_ready(ready_fd, b"ERROR " + str(exc).encode() + b"\n")
        return 1
    try:
        store = Store.open(state_dir / "store", settings)
    except VigilError as exc:
        log.error("cannot open the store: %s", exc.message)
        claim.release()
        _signal_ready(ready_fd, b"ERROR " + exc.message.encode() + b"\n")
        return 1
    state = DaemonState(settings=settings, socket_path=socket_path, state_dir=state_dir,
                        socket_activated=bool(activated))
    try:
        trio.run(serve, state, claim, ready_fd, store)
    finally:
        claim.release()
        store.close()
    log.info("vigild stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
