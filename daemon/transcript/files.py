"""Transcript files: `<state>/transcripts/<run_id>.jsonl`, exactly the seed's properties
(seeds/003, "File Properties"): mode 0600, opened `O_APPEND`, one `write()` per line, writes
serialized by a lock (a line may be longer than `PIPE_BUF`), UTF-8 JSON with LF endings,
`seq` strictly monotonic from 1 per file.

A file outlives the daemon: after a restart (a SIGKILL included) the next event of a run
continues the file's sequence. `RunFile.open` reads the file once to learn where it stands
— the last `seq`, the steps still open, the number of agent turns — and cuts a half-written
last line (a write the kernel took only in part, a crash mid-write) so every line stays
parseable; the cut is logged with its size, never silent.

Retention (`transcript_retention_seconds` after a run's last write, and a total size cap with
oldest-first deletion) is applied by `TranscriptFiles.prune`, at start and every
`transcript_prune_interval_seconds` (`keep_pruned`), with a log line for every file removed.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path

import trio

from vigil.daemon.settings import Settings
from vigil.protocol.transcript import EventLineError, ExchangeEvent, decode_event, encode_event

log = logging.getLogger("vigild.transcript")

#: A run id: the 32-hex id of a thread or an execution. Nothing else ever becomes a name.
RUN_ID = re.compile(r"[0-9a-f]{32}")


class RunState:
    """What a run's file says about the run, kept while the file is open."""

    __slots__ = ("last_seq", "open_steps", "turns", "completed", "parent_run_id")

    def __init__(self) -> None:
        self.last_seq = 0
        #: path → kind of every step started and not completed.
        self.open_steps: dict[str, str] = {}
        self.turns = 0
        self.completed = False
        self.parent_run_id: str | None = None

    def account(self, event: ExchangeEvent) -> None:
        self.last_seq = event.seq
        if event.parent_run_id:
            self.parent_run_id = event.parent_run_id
        kind = _kind(event.payload)
        if event.type == "step.started":
            self.open_steps[event.path] = kind or ""
            if kind == "agent":
                self.turns += 1
        elif event.type == "step.completed":
            self.open_steps.pop(event.path, None)
        elif event.type == "run.completed":
            self.completed = True


def _kind(payload) -> str | None:
    if isinstance(payload, dict):
        return payload.get("kind")
    return getattr(payload, "kind", None)


class RunFile:
    """One run's open transcript file."""

    def __init__(self, path: Path, fd: int, state: RunState):
        self.path = path
        self.fd = fd
        self.state = state
        self.lock = threading.Lock()
        self.size = os.fstat(fd).st_size

    @classmethod
    def open(cls, path: Path) -> "RunFile":
        """Open (creating) `path` for appending and learn the run's state from it.

        Raises:
            OSError: it cannot be opened, or it is not a regular file of ours (a symlink or
                anything else planted there is refused, never followed).
        """
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                raise OSError(f"{path} is not a regular file of ours")
            return cls(path, fd, _recover(path, fd, st.st_size))
        except BaseException:
            os.close(fd)
            raise

    def append(self, build) -> ExchangeEvent:
        """Write the event `build(seq)` makes for the next seq: one `write()` of one line."""
        with self.lock:
            event = build(self.state.last_seq + 1)
            line = encode_event(event)
            view = memoryview(line)
            while view:  # a regular file takes it whole; a short write continues the line
                view = view[os.write(self.fd, view):]
            self.size += len(line)
            self.state.account(event)
            return event

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


def _recover(path: Path, fd: int, size: int) -> RunState:
    """Read the whole file once: its state, and a half-written last line cut off."""
    state = RunState()
    if not size:
        return state
    data = os.pread(fd, size, 0)
    end = data.rfind(b"\n") + 1
    if end < size:
        os.ftruncate(fd, end)
        log.warning("transcript %s: cut a half-written last line (%d bytes)", path.name, size - end)
    for line in data[:end].splitlines():
        try:
            state.account(decode_event(line))
        except EventLineError:
            log.warning("transcript %s: an unreadable line (%d bytes) is kept as is", path.name,
                        len(line))
    return state


class TranscriptFiles:
    """The transcripts directory: run files opened on demand, at most
    `transcript_open_files_max` at once (the least recently written is closed first; it is
    reopened, state and all, when its run writes again)."""

    def __init__(self, root: Path, settings: Settings):
        self.root = Path(root)
        self.settings = settings
        self._open: OrderedDict[str, RunFile] = OrderedDict()
        self._lock = threading.Lock()
        self._last_prune = 0.0

    def path(self, run_id: str) -> Path:
        if not RUN_ID.fullmatch(run_id):
            raise ValueError(f"not a run id: {run_id!r}")
        return self.root / f"{run_id}.jsonl"

    def get(self, run_id: str) -> RunFile:
        """The open file of `run_id` (opening it, and the directory, if needed).

        Raises:
            OSError: the directory or the file cannot be created or opened.
        """
        with self._lock:
            run = self._open.get(run_id)
            if run is not None:
                self._open.move_to_end(run_id)
                return run
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            run = RunFile.open(self.path(run_id))
            self._open[run_id] = run
            while len(self._open) > self.settings.transcript_open_files_max:
                _, oldest = self._open.popitem(last=False)
                oldest.close()
            return run

    def release(self, run_id: str) -> None:
        """Close `run_id`'s file now (its run completed): an ended run holds no descriptor.
        A later event of the run reopens it."""
        with self._lock:
            run = self._open.pop(run_id, None)
        if run is not None:
            run.close()

    def exists(self, run_id: str) -> bool:
        return self.path(run_id).exists()

    def close(self) -> None:
        """Close every file (idempotent)."""
        with self._lock:
            for run in self._open.values():
                run.close()
            self._open.clear()

    async def keep_pruned(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Apply retention now and every `transcript_prune_interval_seconds` for the
        daemon's life, in a worker thread (a directory scan of weeks of runs is no work for
        the trio thread, nor for start-up to wait on)."""
        task_status.started()
        while True:
            await trio.to_thread.run_sync(lambda: self.prune(force=True))
            await trio.sleep(self.settings.transcript_prune_interval_seconds)

    def prune(self, now: float | None = None, *, force: bool = False) -> list[str]:
        """Delete files past retention, then the oldest while the total is over the cap.

        Lazy: at most once per `transcript_prune_interval_seconds` unless `force`. A file of
        a run still being written (open here) is never deleted. Returns the removed run ids.
        """
        s = self.settings
        now = time.time() if now is None else now
        if not force and now - self._last_prune < s.transcript_prune_interval_seconds:
            return []
        self._last_prune = now
        try:
            entries = [(st.st_mtime, st.st_size, e.name) for e in os.scandir(self.root)
                       if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
                       for st in (e.stat(follow_symlinks=False),)]
        except FileNotFoundError:
            return []
        with self._lock:
            active = {f"{run_id}.jsonl" for run_id in self._open}
        entries.sort()
        total = sum(size for _, size, _ in entries)
        removed = []
        for mtime, size, name in entries:
            expired = now - mtime > s.transcript_retention_seconds
            if (expired or total > s.transcript_total_bytes_max) and name not in active:
                try:
                    os.unlink(self.root / name)
                except FileNotFoundError:
                    continue
                total -= size
                removed.append(name[:-len(".jsonl")])
                log.info("transcript %s removed (%s, %d bytes)", name,
                         "retention" if expired else "total size cap", size)
        return removed
