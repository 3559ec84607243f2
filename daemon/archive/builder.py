"""Building archives from transcript events: one archive per agent turn (seeds/002).

The recorder hands the builder every event it wrote (`observe`), after the transcript line
is on disk; the builder keeps those of agent turns — an execution's steps `turn.N`:

| event | what the archive gets |
|---|---|
| `step.started` (kind `agent`) | a new archive: a fresh ref, the policy stamped, `<ref>.open` created, the catalog entry queued |
| `message.user` | a `prompt` line (router: what vigil delivered; agent_emitted: the agent's record of it) |
| `message.assistant` | a step (`action` line): seq, iteration, timestamp, its blocks |
| `tool.result` | a `result` line, paired with the step of its call |
| `step.completed` (kind `agent`) | the commit: pairing validated in full, the summary, the expiry from the stamp; the file fsynced and renamed, the catalog entry updated |

`tool.call` events are not needed: the calls are the `tool_use` blocks of the reply they
belong to. Payloads are redacted here, before anything is written (redact.py), with the
stamp's mode. The archive is built from the events themselves, never from rendered text,
and it never replaces the agent's reply (the transcript and the agent's own log keep it).

Threads: `observe` runs on the daemon's trio thread, as the recorder does, and appends one
line per event to the turn's file (one small `write()`). What touches the store or syncs a
file is queued to `CatalogWriter`, one task that applies it in a worker thread, in order;
readers `flush()` it first, so a ref handed out is always found. A daemon stopped mid-turn
leaves `<ref>.open` and an uncommitted catalog entry: `resume` (at start) lets the next event
of that turn continue the same file.

The builder is an observer: a failure to write an archive is logged and never fails the
transcript, the call or the execution it describes.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field
from typing import Callable

import trio

from vigil.daemon.settings import Settings
from vigil.daemon.store import ExecutionRecord, Store, StoreError
from vigil.daemon.store.records import ArchiveEntry
from vigil.protocol.api.trace import (
    ArchiveStamp,
    TracePrompt,
    TraceResult,
    TraceText,
    TraceThinking,
    TraceToolUse,
    TurnSummary,
)
from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.transcript import (
    ExchangeEvent,
    MessageAssistantPayload,
    MessageUserPayload,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultPayload,
    ToolUseBlock,
)

from . import policy
from .files import ArchiveFiles
from .format import (
    ActionLine,
    CommittedLine,
    OpenedLine,
    PromptLine,
    ResultLine,
    encode_line,
    parse,
)
from .pairing import Shape, blocked_steps, summarize
from .redact import Redactor

log = logging.getLogger("vigild.archive")


@dataclass
class OpenTurn:
    """A turn being archived: its file, its stamp, and the shapes of its steps so far."""

    ref: str
    execution_id: str
    turn: int
    scope: str
    stamp: ArchiveStamp
    opened_at_unix_ms: int
    fd: int
    redactor: Redactor
    shapes: list[Shape] = field(default_factory=list)
    early_results: list[str] = field(default_factory=list)
    last_message_id: str | None = None

    @property
    def trace_key(self) -> str:
        return f"{self.execution_id}:{self.turn}"

    def entry(self, **changes) -> ArchiveEntry:
        fields = dict(archive_ref=self.ref, scope=self.scope, execution_id=self.execution_id,
                      turn=self.turn, stamp=self.stamp, opened_at_unix_ms=self.opened_at_unix_ms,
                      expires_at_unix_ms=policy.expiry(self.stamp, self.opened_at_unix_ms, None))
        fields.update(changes)
        return ArchiveEntry(**fields)

    def summary(self) -> TurnSummary:
        blocked = blocked_steps(self.shapes, self.early_results, complete=False)
        return summarize(archive_ref=self.ref, execution_id=self.execution_id, turn=self.turn,
                         shapes=self.shapes, early_results=self.early_results, blocked=blocked,
                         state="open", status=None, failed=False)


def _turn_number(path: str) -> int | None:
    if not path.startswith("turn."):
        return None
    digits = path[5:]
    return int(digits) if digits.isdigit() and len(digits) < 19 else None


def _kind(payload) -> str | None:
    return payload.get("kind") if isinstance(payload, dict) else getattr(payload, "kind", None)


class ArchiveBuilder:
    def __init__(self, files: ArchiveFiles, writer: "CatalogWriter", settings: Settings,
                 records: Callable[[str], ExecutionRecord | None], clock: Callable[[], int]):
        """
        Args:
            records: the live record of an execution (its scope and workspace), or None.
            clock: unix milliseconds (the store's clock).
        """
        self.files = files
        self.writer = writer
        self.settings = settings
        self._records = records
        self._clock = clock
        #: The turn being archived per execution (an execution has one turn at a time).
        self._open: dict[str, OpenTurn] = {}
        #: Turns a stopped daemon left open: (execution, turn) → their catalog entry.
        self._resumable: dict[tuple[str, int], ArchiveEntry] = {}
        self._committed: dict[tuple[str, int], trio.Event] = {}
        self._failing: set[str] = set()

    # --- what the recorder and the daemon call -------------------------------------------------

    def resume(self, entries: list[ArchiveEntry]) -> None:
        """Turns left open by a stopped daemon (the catalog's uncommitted entries): the next
        event of such a turn continues its file."""
        for entry in entries:
            self._resumable[(entry.execution_id, entry.turn)] = entry

    def observe(self, event: ExchangeEvent) -> None:
        """One transcript event, just written. Never raises."""
        turn = _turn_number(event.path)
        if turn is None:
            return
        eid = event.run_id
        try:
            self._observe(eid, turn, event)
        except OSError as exc:
            t = self._open.pop(eid, None)
            if eid not in self._failing:
                self._failing.add(eid)
                log.error("the archive of turn %d of %s cannot be written: %s", turn, eid, exc)
            if t is not None:
                self.writer.abandon(t.fd)
        except Exception:  # an observer must not break the recorder
            log.exception("archiving turn %d of %s failed", turn, eid)

    def current(self, execution_id: str) -> OpenTurn | None:
        """The execution's turn being archived now, if any."""
        return self._open.get(execution_id)

    def open_refs(self) -> set[str]:
        """Refs of the archives being written (the cleanup leaves them alone)."""
        return {t.ref for t in self._open.values()}

    async def wait_committed(self, execution_id: str, turn: int, timeout: float) -> None:
        """Until turn `turn` of the execution is committed (at once if it is not open), or
        `timeout` passes."""
        t = self._open.get(execution_id)
        if t is None or t.turn != turn:
            return
        event = self._committed.setdefault((execution_id, turn), trio.Event())
        with trio.move_on_after(timeout):
            await event.wait()

    # --- the turn's events ----------------------------------------------------------------------

    def _observe(self, eid: str, turn: int, event: ExchangeEvent) -> None:
        t = self._open.get(eid)
        if event.type == "step.started":
            if _kind(event.payload) == "agent" and (t is None or t.turn != turn):
                if t is not None:  # never expected: the recorder ends a turn before the next
                    self._commit(t, "superseded")
                self._start(eid, turn)
            return
        if t is None or t.turn != turn:
            t = self._resume(eid, turn)
            if t is None:
                return
        payload = event.payload
        if event.type == "message.user" and isinstance(payload, MessageUserPayload):
            self._prompt(t, event, payload)
        elif event.type == "message.assistant" and isinstance(payload, MessageAssistantPayload):
            self._action(t, event, payload)
        elif event.type == "tool.result" and isinstance(payload, ToolResultPayload):
            for block in payload.blocks:
                if isinstance(block, ToolResultBlock):
                    self._result(t, event, block, payload.cut_bytes)
        elif event.type == "step.completed" and _kind(payload) == "agent":
            self._commit(t, getattr(payload, "status", None) or "unknown")

    def _start(self, eid: str, turn: int) -> None:
        rec = self._records(eid)
        if rec is None:
            log.warning("turn %d of %s is not archived: its execution is not live", turn, eid)
            return
        ref = uuid.uuid4().hex
        stamp = policy.stamp_for(self.settings, rec.workspace_root)
        now = self._clock()
        fd = self.files.create(ref)
        t = OpenTurn(ref=ref, execution_id=eid, turn=turn, scope=rec.scope, stamp=stamp,
                     opened_at_unix_ms=now, fd=fd,
                     redactor=Redactor(stamp.redaction, stamp.payload_chars))
        self._open[eid] = t
        self.files.append(fd, encode_line(OpenedLine(
            archive_ref=ref, execution_id=eid, turn=turn, opened_at_unix_ms=now, stamp=stamp)))
        self._failing.discard(eid)
        self.writer.put(t.entry())

    def _resume(self, eid: str, turn: int) -> OpenTurn | None:
        entry = self._resumable.pop((eid, turn), None)
        if entry is None:
            return None
        found = self.files.read(entry.archive_ref)
        if found is None or found[1]:
            return None
        archive = parse(found[0])
        t = OpenTurn(ref=entry.archive_ref, execution_id=eid, turn=turn, scope=entry.scope,
                     stamp=entry.stamp, opened_at_unix_ms=entry.opened_at_unix_ms,
                     fd=self.files.reopen(entry.archive_ref),
                     redactor=Redactor(entry.stamp.redaction, entry.stamp.payload_chars))
        t.shapes = [Shape.of(step) for step in archive.steps]
        t.early_results = [r.tool_id for r in archive.early_results]
        if archive.steps:
            t.last_message_id = archive.steps[-1].action.message_id
        self._open[eid] = t
        log.info("turn %d of %s: its archive continues after a restart", turn, eid)
        return t

    def _prompt(self, t: OpenTurn, event: ExchangeEvent, payload: MessageUserPayload) -> None:
        text = "\n".join(b.text for b in payload.blocks if isinstance(b, TextBlock))
        kept = t.redactor.text(text)
        prompt = TracePrompt(fidelity=payload.fidelity, timestamp=event.timestamp, text=kept.text,
                             bytes=kept.bytes, truncated=kept.truncated, masked=kept.masked)
        self.files.append(t.fd, encode_line(PromptLine(prompt=prompt)))

    def _action(self, t: OpenTurn, event: ExchangeEvent, payload: MessageAssistantPayload) -> None:
        same_reply = payload.continued or (
            payload.message_id is not None and payload.message_id == t.last_message_id)
        iteration = (t.shapes[-1].iteration if t.shapes else 0) + (0 if same_reply and t.shapes else 1)
        t.last_message_id = payload.message_id
        seq = len(t.shapes) + 1
        blocks = []
        shape = Shape(seq, iteration)
        for block in payload.blocks:
            if isinstance(block, TextBlock):
                kept = t.redactor.text(block.text)
                blocks.append(TraceText(text=kept.text, bytes=kept.bytes,
                                        truncated=kept.truncated, masked=kept.masked))
            elif isinstance(block, ThinkingBlock):
                kept = t.redactor.text(block.text)
                blocks.append(TraceThinking(text=kept.text, bytes=kept.bytes,
                                            truncated=kept.truncated, masked=kept.masked,
                                            redacted=block.redacted))
            elif isinstance(block, ToolUseBlock):
                kept = t.redactor.arguments(block.tool_input)
                blocks.append(TraceToolUse(tool_id=block.tool_id, name=block.tool_name,
                                           input=kept.value, input_bytes=kept.bytes,
                                           input_truncated=kept.truncated, masked=kept.masked,
                                           input_error=block.input_error))
                shape.calls.append((block.tool_id, block.tool_name))
        t.shapes.append(shape)
        self.files.append(t.fd, encode_line(ActionLine(
            seq=seq, iteration=iteration, timestamp=event.timestamp, action=blocks,
            message_id=payload.message_id, model=payload.model, stop_reason=payload.stop_reason,
            continued=payload.continued, cut_bytes=payload.cut_bytes)))

    def _result(self, t: OpenTurn, event: ExchangeEvent, block: ToolResultBlock,
                cut_bytes: int) -> None:
        failed = block.is_error or block.exit_code not in (None, 0)
        kept = t.redactor.text(block.tool_content)
        result = TraceResult(tool_id=block.tool_id, status="error" if failed else "ok",
                             content=kept.text, bytes=kept.bytes, truncated=kept.truncated,
                             masked=kept.masked, is_error=block.is_error,
                             exit_code=block.exit_code, omitted_images=block.omitted_images,
                             cut_bytes=cut_bytes)
        step = _pair(t.shapes, block.tool_id)
        if step is None:
            t.early_results.append(block.tool_id)
        else:
            step.results.append((block.tool_id, result.status))
        self.files.append(t.fd, encode_line(ResultLine(
            seq=step.seq if step else 0, timestamp=event.timestamp, result=result)))

    def _commit(self, t: OpenTurn, status: str) -> None:
        """The turn ended: validate, summarize, stamp the expiry, queue the seal."""
        now = self._clock()
        blocked = blocked_steps(t.shapes, t.early_results, complete=True)
        failed = policy.failed(status)
        summary = summarize(archive_ref=t.ref, execution_id=t.execution_id, turn=t.turn,
                            shapes=t.shapes, early_results=t.early_results, blocked=blocked,
                            state="committed", status=status, failed=failed)
        expires = policy.expiry(t.stamp, now, status)
        self.files.append(t.fd, encode_line(CommittedLine(
            committed_at_unix_ms=now, status=status, expires_at_unix_ms=expires,
            summary=summary, blocked=blocked)))
        del self._open[t.execution_id]
        self.writer.commit(t.ref, t.fd, t.entry(committed_at_unix_ms=now,
                                                 expires_at_unix_ms=expires, summary=summary))
        event = self._committed.pop((t.execution_id, t.turn), None)
        if event is not None:
            event.set()


def _pair(shapes: list[Shape], tool_id: str) -> Shape | None:
    """The step a result belongs to: the first with that call still unanswered, else the
    last with that call (a second result), else the latest step (no such call)."""
    last = None
    for shape in shapes:
        if any(call_id == tool_id for call_id, _ in shape.calls):
            if not any(result_id == tool_id for result_id, _ in shape.results):
                return shape
            last = shape
    return last or (shapes[-1] if shapes else None)


# --- the catalog writer ------------------------------------------------------------------------


@dataclass
class _Op:
    entry: ArchiveEntry
    #: The turn's file descriptor to seal (commit), or None (a plain catalog write).
    fd: int | None = None
    sealed: bool = False


class CatalogWriter:
    """Applies the builder's catalog writes and file commits in order, in a worker thread,
    batched (one store transaction per wake). A failing store is retried with the ingest's
    backoff settings, keeping the queue; readers that `flush()` meanwhile get
    `storage_error` instead of waiting."""

    def __init__(self, store: Store, files: ArchiveFiles, settings: Settings):
        self.store = store
        self.files = files
        self.settings = settings
        self._queue: list[_Op] = []
        self._queued = 0
        self._applied = 0
        self._wake = trio.Event()
        self._progress = trio.Event()
        self.failing: StoreError | None = None

    def put(self, entry: ArchiveEntry) -> None:
        self._enqueue(_Op(entry))

    def commit(self, ref: str, fd: int, entry: ArchiveEntry) -> None:
        self._enqueue(_Op(entry, fd))

    @staticmethod
    def abandon(fd: int) -> None:
        """Close a turn's file that could not be written (it stays `.open`, readable)."""
        try:
            os.close(fd)
        except OSError:
            pass

    def _enqueue(self, op: _Op) -> None:
        self._queue.append(op)
        self._queued += 1
        self._wake.set()

    async def flush(self) -> None:
        """Until everything queued before this call is applied.

        Raises:
            VigilError(storage_error): the store is failing (the queue is kept and retried).
        """
        target = self._queued
        while self._applied < target:
            if self.failing is not None:
                raise VigilError(ErrorCode.STORAGE_ERROR,
                                 f"the archive catalog cannot be written: {self.failing.message}")
            progress = self._progress
            await progress.wait()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        pause = self.settings.ingest_retry_initial_seconds
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._queue:
                ops = list(self._queue)
                try:
                    await trio.to_thread.run_sync(self._apply, ops)
                except StoreError as exc:
                    if self.failing is None:
                        log.error("the archive catalog cannot be written (retrying): %s",
                                  exc.message)
                    self.failing = exc
                    self._notify()
                    await trio.sleep(pause)
                    pause = min(pause * 2, self.settings.ingest_retry_max_seconds)
                    continue
                if self.failing is not None:
                    log.info("the archive catalog is written again")
                self.failing = None
                pause = self.settings.ingest_retry_initial_seconds
                del self._queue[:len(ops)]
                self._applied += len(ops)
                self._notify()

    def _notify(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    def _apply(self, ops: list[_Op]) -> None:
        for op in ops:
            if op.fd is not None and not op.sealed:
                op.sealed = True
                try:
                    self.files.commit(op.entry.archive_ref, op.fd)
                except OSError as exc:  # it stays `.open`: readable, cleaned up at expiry
                    log.error("archive %s could not be committed to disk: %s",
                              op.entry.archive_ref, exc)
        self.store.put_archives([op.entry for op in ops])
