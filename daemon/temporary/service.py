"""Managed temporary helpers: a thread's private directory, listed and released safely
(seeds/000, "Release managed temporary helpers").

The daemon is the runtime owner: it alone knows which processes belong to a thread (its
live runtimes), so it alone decides whether a helper may go. A release proceeds in this
order, and any step that cannot be completed leaves the files in place:

1. the request's shape (at most `temporary_release_names_max` names): else `invalid_request`;
2. the revision: the directory is measured again, and a revision other than the caller's
   refuses the whole request (`conflict`): the caller decided on a listing that is gone;
3. each name on its own: not a plain name (`/`, `.`, `..`, NUL, empty, too long) →
   `refused bad_name`; missing → `not_found` (or `released already_released` when this
   thread released it earlier: a retry is idempotent); a symlink or anything but a
   regular file → `refused`;
4. ownership: every running execution of the thread must have a live runtime, and every
   process of those runtimes must be readable in /proc; else every remaining name is
   `refused ownership_unresolved` (`unsupported_platform` without /proc);
5. activity (`activity.holders`): a helper open, mapped, the cwd or executable of a thread
   process, or named by a running command stays, `in_use`;
6. the rest is unlinked relative to the directory's descriptor, after its inode was checked
   once more (`refused changed` when another file took the name meanwhile).

The answer carries the directory's revision after the call, so a retry of the names that
stayed quotes a current revision. Maintenance (in every `list`) reports old helpers and
the principal's other managed directories — other threads', and those of threads that are
gone — and never deletes any of them: whether their owners still need them cannot be
established here.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import trio

from vigil.daemon.rpc.scopes import Scopes, ThreadRecord
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import Settings
from vigil.daemon.shell.manager import ShellManager
from vigil.daemon.store import ExecutionRecord, Store
from vigil.daemon.telemetry.phases import phase
from vigil.protocol.api.temporary import (
    TEMPORARY_USAGE_SCHEMA,
    Helper,
    Maintenance,
    ReleaseItem,
    SiblingDirectory,
    TemporaryListResult,
    TemporaryReleaseResult,
    TemporaryUsage,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request

from . import activity
from .directory import DirectoryError, ManagedDirectories, Measurement, measure

log = logging.getLogger("vigild.temporary")

#: Longest file name the kernel accepts (NAME_MAX).
_NAME_MAX = 255


def bad_name(name: str) -> bool:
    """Whether `name` is anything but one plain entry of a directory."""
    return (not name or name in (".", "..") or "/" in name or "\0" in name
            or len(os.fsencode(name)) > _NAME_MAX)


def usage_of(m: Measurement, settings: Settings) -> TemporaryUsage:
    """The budget fields of one measurement: unmeasured counts omitted, never zero; over
    budget is known when both counts are, or when the one measured is over already."""
    files, size = m.count, m.total_bytes
    over = None
    if files is not None and files > settings.temporary_budget_files:
        over = True
    elif size is not None and size > settings.temporary_budget_bytes:
        over = True
    elif files is not None and size is not None:
        over = False
    return TemporaryUsage(temporary_usage_schema=TEMPORARY_USAGE_SCHEMA,
                          temporary_file_count=files, temporary_bytes=size,
                          temporary_budget_files=settings.temporary_budget_files,
                          temporary_budget_bytes=settings.temporary_budget_bytes,
                          temporary_over_budget=over)


def _unavailable(exc: Exception) -> VigilError:
    return VigilError(ErrorCode.UNAVAILABLE,
                      f"the thread's managed directory cannot be opened safely: {exc}")


@dataclass
class ThreadActivity:
    """What the thread runs now, as the runtime manager knows it (read on the trio side)."""

    sessions: set[int] = field(default_factory=set)
    guardians: set[int] = field(default_factory=set)
    #: Running commands' text and argv.
    commands: list[str] = field(default_factory=list)
    #: The calling process and its ancestors: their argv does not make a helper in use.
    callers: set[int] = field(default_factory=set)
    #: Why ownership cannot be established, or None.
    unresolved: str | None = None


class TemporaryHelpers:
    """Every thread's managed directory: made at Initialize, listed and released here."""

    def __init__(self, directories: ManagedDirectories, store: Store,
                 runtimes: RuntimeManager, shells: ShellManager, scopes: Scopes,
                 settings: Settings):
        self.directories = directories
        self._store = store
        self._runtimes = runtimes
        self._shells = shells
        self._scopes = scopes
        self._settings = settings
        #: thread_id → names it released (oldest first), for idempotent retries.
        self._released: dict[str, OrderedDict[str, None]] = {}

    def prepare(self, thread: ThreadRecord) -> str | None:
        """Make the thread's directory (private) and return its path; None, logged, when it
        cannot be made safely (Initialize still succeeds: helpers are an extra)."""
        try:
            os.close(self.directories.open(thread.principal, thread.thread_id, create=True))
        except (DirectoryError, OSError) as exc:
            log.warning("no managed directory for thread %s: %s", thread.thread_id, exc)
            return None
        return self.directories.path(thread.principal, thread.thread_id)

    def _open(self, thread: ThreadRecord) -> int:
        try:
            return self.directories.open(thread.principal, thread.thread_id, create=True)
        except (DirectoryError, OSError) as exc:
            raise _unavailable(exc) from None

    # --- list -------------------------------------------------------------------------------

    async def listing(self, thread: ThreadRecord) -> TemporaryListResult:
        with phase("temporary_file_audit"):
            return await trio.to_thread.run_sync(self._list, thread)

    def _list(self, thread: ThreadRecord) -> TemporaryListResult:
        fd = self._open(thread)
        try:
            m = measure(fd)
        finally:
            os.close(fd)
        shown = m.entries[: self._settings.temporary_list_entries_max]
        return TemporaryListResult(
            directory=self.directories.path(thread.principal, thread.thread_id),
            revision=m.revision,
            helpers=[Helper(name=e.name, kind=e.kind, size_bytes=e.size_bytes,
                            mtime_unix_ms=e.mtime_ns // 1_000_000) for e in shown],
            helpers_omitted=len(m.entries) - len(shown), usage=usage_of(m, self._settings),
            maintenance=self._maintenance(thread, m))

    def _maintenance(self, thread: ThreadRecord, m: Measurement) -> Maintenance:
        """Old helpers and the principal's other directories: reported, never deleted."""
        settings = self._settings
        cutoff_ns = time.time_ns() - int(settings.temporary_old_seconds * 1e9)
        old = [e.name for e in m.entries if e.mtime_ns < cutoff_ns]
        old = old[: settings.temporary_list_entries_max]
        ids = self.directories.siblings(thread.principal, thread.thread_id)
        reported = ids[: settings.temporary_siblings_reported_max]
        siblings = []
        if reported:
            principal_fd = self.directories.open_principal(thread.principal)
            try:
                for thread_id in reported:
                    siblings.append(self._sibling(thread, principal_fd, thread_id))
            finally:
                os.close(principal_fd)
        return Maintenance(old_helpers=old, old_after_seconds=settings.temporary_old_seconds,
                           siblings=siblings, siblings_omitted=len(ids) - len(reported))

    def _sibling(self, thread: ThreadRecord, principal_fd: int, thread_id: str) -> SiblingDirectory:
        other = self._scopes.get(thread_id)
        known = other is not None and other.principal == thread.principal
        try:
            fd = self.directories.open_sibling(principal_fd, thread_id)
        except (DirectoryError, OSError):
            return SiblingDirectory(thread_id=thread_id, thread_known=known)
        try:
            m = measure(fd)
        finally:
            os.close(fd)
        return SiblingDirectory(thread_id=thread_id, thread_known=known,
                                temporary_file_count=m.count, temporary_bytes=m.total_bytes,
                                newest_mtime_unix_ms=m.newest_mtime_ns // 1_000_000 or None)

    # --- release ----------------------------------------------------------------------------

    async def release(self, thread: ThreadRecord, names: list[str], revision: str,
                      caller_pid: int) -> TemporaryReleaseResult:
        """Release `names` for a call made by process `caller_pid` (the socket peer).

        The caller is not a holder by naming what it asks to release: an agent running
        `vigil tmp release h.py` in the thread's own shell names h.py in its argv and in
        the shell command's text. Its own process chain and the command it runs under are
        left out of the naming check (their open files and maps still count).
        """
        limit = self._settings.temporary_release_names_max
        if not 1 <= len(names) <= limit:
            raise invalid_request(f"names must list 1 to {limit} helpers "
                                  "(temporary_release_names_max)", "params.action.names")
        running = await trio.to_thread.run_sync(self._running_records, thread.scope)
        seen = self._activity(thread, running, caller_pid)
        with phase("temporary_file_audit"):
            return await trio.to_thread.run_sync(self._release, thread, names, revision, seen)

    def _running_records(self, scope: str) -> list[ExecutionRecord]:
        """The scope's running records (every page of its listing)."""
        page_size = self._settings.list_limit_max
        running, offset = [], 0
        while True:
            listing = self._store.list(scope, page_size, offset)
            running += [r for r in listing.records if r.status == "running"]
            offset += len(listing.records)
            if not listing.records or offset >= listing.total:
                return running

    def _activity(self, thread: ThreadRecord, running: list[ExecutionRecord],
                  caller_pid: int) -> ThreadActivity:
        """The thread's processes as the runtime manager knows them (trio side: `live` is
        its state). A running record without a live runtime leaves ownership unresolved."""
        seen = ThreadActivity(callers=activity.ancestry(caller_pid))
        calling = self._shells.caller_execution(caller_pid)
        live_ids = set()
        for live in list(self._runtimes.live.values()):
            runtime = live.record.runtime
            if live.record.scope != thread.scope:
                continue
            if runtime is None:
                seen.unresolved = f"execution {live.record.execution_id} is still starting"
                continue
            live_ids.add(runtime.runtime_id)
            seen.sessions.add(runtime.child_pid)
            seen.guardians.add(runtime.guardian_pid)
        for record in running:
            if record.runtime is None or record.runtime.runtime_id not in live_ids:
                seen.unresolved = (f"running execution {record.execution_id} has no live "
                                   "runtime to examine")
            # The shell's own command line names no helper; the caller's names what it
            # asks to release.
            if record.kind != "shell" and record.execution_id != calling:
                seen.commands.append(record.command)
                if record.argv:
                    seen.commands.append(" ".join(record.argv))
        return seen

    def _release(self, thread: ThreadRecord, names: list[str], revision: str,
                 seen: ThreadActivity) -> TemporaryReleaseResult:
        fd = self._open(thread)
        try:
            before = measure(fd)
            if revision != before.revision:
                raise VigilError(
                    ErrorCode.CONFLICT,
                    "the managed directory changed since that revision was read; list it "
                    "again (Temporary list) and decide on what it holds now",
                    {"field": "params.action.revision"})
            results = self._decide(thread, fd, list(dict.fromkeys(names)), seen)
            after = measure(fd)
        finally:
            os.close(fd)
        return TemporaryReleaseResult(
            directory=self.directories.path(thread.principal, thread.thread_id),
            revision=after.revision, results=results,
            partial=any(r.status != "released" for r in results),
            usage=usage_of(after, self._settings))

    def _decide(self, thread: ThreadRecord, fd: int, names: list[str],
                seen: ThreadActivity) -> list[ReleaseItem]:
        remembered = self._released.setdefault(thread.thread_id, OrderedDict())
        base = self.directories.path(thread.principal, thread.thread_id)
        results: dict[str, ReleaseItem] = {}
        candidates: list[activity.Candidate] = []
        for name in names:
            if bad_name(name):
                results[name] = ReleaseItem(name=name, status="refused", reason="bad_name")
                continue
            try:
                st = os.lstat(name, dir_fd=fd)
            except FileNotFoundError:
                results[name] = (ReleaseItem(name=name, status="released",
                                             reason="already_released")
                                 if name in remembered else
                                 ReleaseItem(name=name, status="not_found"))
                continue
            if stat.S_ISLNK(st.st_mode):
                results[name] = ReleaseItem(name=name, status="refused", reason="symlink")
            elif not stat.S_ISREG(st.st_mode):
                results[name] = ReleaseItem(name=name, status="refused", reason="not_a_file")
            else:
                candidates.append(activity.Candidate(name, os.path.join(base, name),
                                                     st.st_dev, st.st_ino))
        held = self._holders(seen, candidates, results)
        for c in candidates:
            if c.name in results:
                continue
            holder = held.get(c.name)
            if holder is not None:
                results[c.name] = ReleaseItem(name=c.name, status="in_use", reason=holder.reason,
                                              pid=holder.pid)
                continue
            results[c.name] = self._unlink(fd, c, remembered)
        return [results[name] for name in names]

    def _holders(self, seen: ThreadActivity, candidates: list[activity.Candidate],
                 results: dict[str, ReleaseItem]) -> dict[str, activity.Holder]:
        """Who holds which candidate; every candidate refused (in `results`) when that
        cannot be established."""
        if not candidates:
            return {}
        reason = None
        if not activity.supported():
            reason = "unsupported_platform"
        elif seen.unresolved is not None:
            reason = "ownership_unresolved"
            log.info("release refused: %s", seen.unresolved)
        else:
            try:
                pids = activity.thread_processes(seen.sessions, seen.guardians)
                return activity.holders(pids, seen.commands, candidates, seen.callers)
            except activity.Unresolved as exc:
                reason = "ownership_unresolved"
                log.info("release refused: %s", exc)
        for c in candidates:
            results[c.name] = ReleaseItem(name=c.name, status="refused", reason=reason)
        return {}

    def _unlink(self, fd: int, c: activity.Candidate,
                remembered: OrderedDict[str, None]) -> ReleaseItem:
        try:
            st = os.lstat(c.name, dir_fd=fd)
            if (st.st_dev, st.st_ino) != (c.dev, c.ino):
                return ReleaseItem(name=c.name, status="refused", reason="changed")
            os.unlink(c.name, dir_fd=fd)
        except FileNotFoundError:
            return ReleaseItem(name=c.name, status="not_found")
        remembered[c.name] = None
        remembered.move_to_end(c.name)
        while len(remembered) > self._settings.temporary_released_remembered:
            remembered.popitem(last=False)
        return ReleaseItem(name=c.name, status="released")
