"""The persistent shell of each thread: BashCommand semantics over a guardian running bash.

One shell per thread, started on first use in the workspace root, with vigil's own start-up
file (`shell_markers.rcfile`; the user's rc files are never read or edited). Each `command`
is an execution of kind `shell_command` on the shell's runtime with the next `generation`;
its output is the slice of the shell's stream between the start and end markers, and its
exit code comes from the end marker only. A new command while one runs is refused (not
queued, not interleaved); input goes to the current generation only.

Commands that are long or span lines are written to a private file and sourced, so the
kernel's 4,095-character canonical line limit and line-by-line prompting can't split them.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections import deque

import trio

from vigil.daemon.guardian.launch import ensure_private_dir
from vigil.daemon.store import ExecutionRecord, Store, new_execution_id
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.keys import UnknownKey, key_bytes
from vigil.daemon.settings import Settings
from vigil.protocol.api.shell import BashCommandResult

from ..runtime.lifecycle import LifecycleEvent
from ..runtime.manager import RuntimeManager
from ..rpc.scopes import Scopes, ThreadRecord
from ..telemetry.phases import phase
from .markers import Done, MarkerScanner, Segment, Started, rcfile

log = logging.getLogger("vigild.shell")

def keys_to_bytes(names: list[str], field: str) -> bytes:
    """The bytes of named keys (vigil.protocol.keys), or `invalid_request` naming the field."""
    try:
        return b"".join(key_bytes(name) for name in names)
    except UnknownKey as exc:
        raise invalid_request(str(exc), field) from None


class ShellSession:
    """Runtime-only state of one thread's shell."""

    def __init__(self, manager: "ShellManager", thread: ThreadRecord, record: ExecutionRecord,
                 nonce: str):
        self.manager = manager
        self.thread = thread
        self.shell_eid = record.execution_id
        self.record = record
        self.scanner = MarkerScanner(nonce, record.output_total_bytes)
        self.generation = record.generation
        self.cwd = thread.workspace_root
        self.ready = trio.Event()
        self.cmd_eid: str | None = None
        self.cmd_start: int | None = None
        self.cmd_done = trio.Event()
        self.cmd_done.set()
        #: Set once bash announced the current command's start (PS0): input typed before
        #: that would reach readline, not the command.
        self.cmd_started = trio.Event()
        self.cmd_started.set()
        self.last_exit: int | None = None
        self.last_cmd_eid: str | None = None
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.truncated = False

    # Called by the runtime for every Output, before ingest (never blocks).
    def observe(self, offset: int, data: bytes) -> None:
        ingest = self.manager.runtimes.ingest
        for event in self.scanner.feed(offset, data):
            if isinstance(event, Segment):
                if self.cmd_eid is not None and self.cmd_start is not None:
                    ingest.add_output(self.cmd_eid, event.offset - self.cmd_start, event.data)
                    self._keep(event.data)
            elif isinstance(event, Started):
                if self.cmd_eid is not None and self.cmd_start is None:
                    self.cmd_start = event.offset
                    ingest.set_fields(self.cmd_eid, shell_offset=event.offset)
                self.cmd_started.set()
            elif isinstance(event, Done):
                self.cwd = event.cwd or self.cwd
                self.ready.set()
                if self.cmd_eid is not None:
                    self._finish(event.status)

    def _keep(self, data: bytes) -> None:
        limit = self.manager.settings.bash_output_max_bytes
        self.tail.append(data)
        self.tail_bytes += len(data)
        while self.tail_bytes - len(self.tail[0]) >= limit:
            self.tail_bytes -= len(self.tail.popleft())
            self.truncated = True

    def _finish(self, status: int | None, *, unknown_reason: str | None = None) -> None:
        ingest = self.manager.runtimes.ingest
        if unknown_reason is not None:
            ingest.set_fields(self.cmd_eid, status="unknown", unknown_reason=unknown_reason)
        else:
            ingest.set_fields(self.cmd_eid, status="exited", exit_code=status, signal=None,
                              ended_unix_ms=self.manager.store.clock(), cwd=self.cwd)
        self.last_exit = status
        self.last_cmd_eid = self.cmd_eid
        self.cmd_eid = None
        self.cmd_start = None
        self.cmd_done.set()
        self.cmd_started.set()

    def output_text(self) -> tuple[str, bool]:
        data = b"".join(self.tail)
        limit = self.manager.settings.bash_output_max_bytes
        truncated = self.truncated or len(data) > limit
        data = data[-limit:]
        text = data.decode("utf-8", "replace")
        if truncated and text.startswith("\ufffd"):
            text = text.lstrip("\ufffd")
        return text, truncated

    @property
    def alive(self) -> bool:
        live = self.manager.runtimes.live.get(self.shell_eid)
        return live is not None and live.link is not None


class ShellManager:
    def __init__(self, scopes: Scopes, store: Store, runtimes: RuntimeManager, settings: Settings,
                 shell_dir: str):
        self.scopes = scopes
        self.store = store
        self.runtimes = runtimes
        self.settings = settings
        self.shell_dir = shell_dir
        self.sessions: dict[str, ShellSession] = {}
        self._starting: dict[str, trio.Event] = {}

    # --- RuntimeHooks: what the runtime manager tells us -------------------------------------

    def observers_for(self, record: ExecutionRecord) -> list:
        """A shell being re-attached at recovery gets its session (and marker scanner) back."""
        if record.kind != "shell":
            return []
        thread = next((t for t in self.scopes.all() if t.shell_execution_id == record.execution_id),
                      None)
        if thread is None or not thread.shell_nonce:
            return []
        session = ShellSession(self, thread, record, thread.shell_nonce)
        session.ready.set()
        self.sessions[thread.thread_id] = session
        return [session.observe]

    def settle_orphans(self, records: list[ExecutionRecord]) -> list[tuple[str, dict]]:
        """Re-bind running shell commands to their recovered shells; settle the orphans."""
        settle = []
        for rec in records:
            if rec.kind != "shell_command":
                continue
            session = self.sessions.get(rec.thread_id)
            if session is not None and session.generation == rec.generation and session.cmd_eid is None:
                session.cmd_eid = rec.execution_id
                session.cmd_start = rec.shell_offset
                session.cmd_done = trio.Event()
            else:
                settle.append((rec.execution_id, {
                    "status": "unknown",
                    "unknown_reason": "its shell ended while the daemon was not watching"}))
        return settle

    # --- sessions -----------------------------------------------------------------------------

    async def session(self, thread: ThreadRecord) -> ShellSession:
        session = self.sessions.get(thread.thread_id)
        if session is not None and session.alive:
            return session
        starting = self._starting.get(thread.thread_id)
        if starting is not None:
            await starting.wait()
            return await self.session(self.scopes.check(thread.thread_id, thread.workspace_root,
                                                        thread.principal))
        self._starting[thread.thread_id] = trio.Event()
        try:
            return await self._start(thread)
        finally:
            self._starting.pop(thread.thread_id).set()

    async def _start(self, thread: ThreadRecord) -> ShellSession:
        nonce = secrets.token_hex(16)
        ensure_private_dir(self.shell_dir)
        rc_path = os.path.join(self.shell_dir, f"rc-{secrets.token_hex(8)}.sh")
        fd = os.open(rc_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(rcfile(nonce, rc_path))
        argv = ["bash", "--noprofile", "--rcfile", rc_path, "-i"]
        session_holder: list[ShellSession] = []

        def observers(record: ExecutionRecord) -> list:
            session = ShellSession(self, thread, record, nonce)
            session_holder.append(session)
            return [session.observe]

        record = await self.runtimes.start(
            scope=thread.scope, thread_id=thread.thread_id, workspace_root=thread.workspace_root,
            argv=argv, command="bash (persistent shell)", cwd=thread.workspace_root,
            env=self.runtimes.child_environment({"VIGIL_SHELL": "1", "PAGER": "cat",
                                                  "GIT_PAGER": "cat"}), rows=None, cols=None,
            name="shell", kind="shell", observers=observers)
        previous = thread.shell_execution_id
        thread = self.scopes.update(thread, shell_execution_id=record.execution_id,
                                    shell_nonce=nonce)
        session = session_holder[0]
        if previous:
            # Generations count the thread's commands, across shells: input quoting an old
            # shell's generation must never match a command of the new one.
            old = await trio.to_thread.run_sync(self.store.get, thread.scope, previous)
            if old is not None and old.generation:
                session.generation = old.generation
                self.runtimes.ingest.set_fields(record.execution_id, generation=old.generation)
        session.thread = thread
        self.sessions[thread.thread_id] = session
        with trio.move_on_after(self.settings.guardian_start_timeout_seconds):
            await session.ready.wait()
        if not session.ready.is_set():
            raise VigilError(ErrorCode.TIMEOUT, "the shell did not show its first prompt in time")
        return session

    # --- actions ------------------------------------------------------------------------------

    async def command(self, thread: ThreadRecord, text: str) -> ShellSession:
        session = await self.session(thread)
        if session.cmd_eid is not None:
            raise VigilError(
                ErrorCode.BUSY,
                f"a command is still running in generation {session.generation}; use "
                "status_check, send_text/send_specials, or send Ctrl-c first",
                {"generation": session.generation, "execution_id": session.cmd_eid})
        if not text.strip():
            raise VigilError(ErrorCode.INVALID_REQUEST, "command is empty",
                             {"field": "params.action.command"})
        if len(text.encode()) > self.settings.bash_text_max_bytes or "\0" in text:
            raise VigilError(ErrorCode.INVALID_REQUEST,
                             f"command must be at most {self.settings.bash_text_max_bytes} bytes "
                             "and contain no NUL", {"field": "params.action.command"})
        generation = session.generation + 1
        eid = new_execution_id()
        shell = session.record
        record = ExecutionRecord(
            execution_id=eid, scope=thread.scope, thread_id=thread.thread_id,
            workspace_root=thread.workspace_root, command=text, argv=None, cwd=session.cwd,
            kind="shell_command", status="running", started_unix_ms=self.store.clock(),
            runtime=self.runtimes.live[session.shell_eid].record.runtime, generation=generation,
            rows=shell.rows, cols=shell.cols)
        record = await trio.to_thread.run_sync(self.store.create_execution, record)
        self.runtimes.bus.publish(LifecycleEvent(kind="started", scope=record.scope,
                                                 execution_id=eid,
                                                 at_unix_ms=record.observed_at_unix_ms,
                                                 record=record))
        self.runtimes.ingest.set_fields(session.shell_eid, generation=generation)
        session.generation = generation
        session.cmd_eid = eid
        session.cmd_start = None
        session.cmd_done = trio.Event()
        session.cmd_started = trio.Event()
        session.tail.clear()
        session.tail_bytes = 0
        session.truncated = False
        line = text.rstrip("\n")
        if "\n" in line or len(line.encode()) > self.settings.canonical_line_max_bytes - 64:
            path = os.path.join(self.shell_dir, f"cmd-{eid}.sh")
            with phase("temporary_file_audit"):
                ensure_private_dir(self.shell_dir)  # the runtime dir may have been deleted since
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    # The file removes itself first: `. FILE` then ends with the command's
                    # own status, which the end marker reports.
                    f.write(f"rm -f -- '{path}'\n{line}\n")
            line = f". '{path}'"
        await self.runtimes.send_input(session.shell_eid, line.encode() + b"\r")
        return session

    async def send(self, thread: ThreadRecord, data: bytes, generation: int | None) -> ShellSession:
        session = await self.session(thread)
        if generation is not None and generation != session.generation:
            raise VigilError(ErrorCode.STALE_GENERATION,
                             f"generation {generation} is stale; the shell is at "
                             f"generation {session.generation}",
                             {"generation": session.generation})
        if not session.cmd_started.is_set():
            # The command line may still be with readline (Enter would stay a raw CR there).
            with trio.move_on_after(self.settings.shell_start_wait_seconds):
                await session.cmd_started.wait()
        await self.runtimes.send_input(session.shell_eid, data)
        return session

    async def wait(self, session: ShellSession, seconds: float) -> None:
        if seconds > 0:
            with phase("wait_sleep"), trio.move_on_after(seconds):
                await session.cmd_done.wait()

    # --- Tasks: commands as executions of their own ------------------------------------------

    async def start_task(self, thread: ThreadRecord, text: str) -> tuple[ShellSession, ExecutionRecord]:
        """Start `text` as a background execution of its own (`bash -c`, in the shell's
        current directory): a Task, observed through `Execution`. The shell stays free."""
        if not text.strip():
            raise invalid_request("command is empty", "params.action.command")
        if len(text.encode()) > self.settings.bash_text_max_bytes or "\0" in text:
            raise invalid_request(f"command must be at most {self.settings.bash_text_max_bytes} "
                                  "bytes and contain no NUL", "params.action.command")
        session = await self.session(thread)
        record = await self.runtimes.start(
            scope=thread.scope, thread_id=thread.thread_id, workspace_root=thread.workspace_root,
            argv=["bash", "-c", text], command=text, cwd=session.cwd,
            env=self.runtimes.child_environment({}), rows=None, cols=None, name="task")
        return session, record

    async def wait_task(self, execution_id: str, seconds: float) -> bool:
        """Wait up to `seconds` for a Task to end; True when it did (and its end, with all
        its output, is committed)."""
        live = self.runtimes.live.get(execution_id)
        if live is not None and seconds > 0:
            with phase("wait_sleep"), trio.move_on_after(seconds):
                await live.done.wait()
        if live is not None and not live.done.is_set():
            return False
        await self.runtimes.ingest.flush()
        return True

    def result(self, session: ShellSession, *, eid: str | None = None,
               background: bool = False) -> BashCommandResult:
        text, truncated = session.output_text()
        if session.cmd_eid is not None:
            status = "running"
        elif session.last_exit is None:
            status = "idle"
        else:
            status = "completed"
        return BashCommandResult(
            status=status, generation=session.generation,
            execution_id=eid or session.cmd_eid or self._last_cmd(session),
            shell_execution_id=session.shell_eid,
            exit_code=None if status != "completed" else session.last_exit,
            cwd=session.cwd, output=text, output_truncated=truncated,
            shell_exited=not session.alive)

    def running_command(self, shell_execution_id: str) -> str | None:
        """The command running now in the shell `shell_execution_id`, if any."""
        for session in self.sessions.values():
            if session.shell_eid == shell_execution_id:
                return session.cmd_eid
        return None

    def _last_cmd(self, session: ShellSession) -> str | None:
        return session.last_cmd_eid

    def runtime_ended(self, record: ExecutionRecord) -> None:
        """The shell itself ended (e.g. `exit`): its running command ends with it."""
        for session in list(self.sessions.values()):
            if session.shell_eid != record.execution_id:
                continue
            if session.cmd_eid is not None:
                if record.status == "exited":
                    code = record.exit_code if record.signal is None else 128 + record.signal
                    session._finish(code)
                else:
                    session._finish(None, unknown_reason="the shell's guardian vanished")
            self.sessions.pop(session.thread.thread_id, None)
