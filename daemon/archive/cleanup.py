"""The archive cleanup job: every `archive_cleanup_interval_seconds` (and once at start),
remove the archives whose stamped expiry has passed.

What decides is the catalog's `expires_at_unix_ms` alone — written from the archive's stamp
when its turn ended — never the configuration of the day: lowering a TTL does not shorten an
archive already written, raising one does not extend it. An archive still being written (a
turn that runs longer than its provisional expiry) is left alone; its commit sets its real
expiry. The file goes first, then the entry: a crash in between leaves an entry whose file is
missing, which the next run removes (an archive file never outlives its entry unseen).
"""

from __future__ import annotations

import logging

import trio

from vigil.daemon.settings import Settings
from vigil.daemon.store import Store, StoreError

from .builder import ArchiveBuilder
from .files import ArchiveFiles

log = logging.getLogger("vigild.archive")

#: Entries removed per transaction (a backlog is worked through in several).
BATCH = 1000


def remove_due(store: Store, files: ArchiveFiles, keep: set[str]) -> int:
    """Remove every due archive except those in `keep`; how many were removed. Blocking."""
    removed = 0
    while True:
        due = [e for e in store.archives_due(BATCH) if e.archive_ref not in keep]
        if not due:
            return removed
        for entry in due:
            files.remove(entry.archive_ref)
        store.delete_archives(due)
        removed += len(due)
        log.info("removed %d expired archive(s)", len(due))
        if len(due) < BATCH:
            return removed


async def run_cleanup(store: Store, files: ArchiveFiles, builder: ArchiveBuilder,
                      settings: Settings, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    while True:
        try:
            await trio.to_thread.run_sync(remove_due, store, files, builder.open_refs())
        except (StoreError, OSError) as exc:
            log.error("archive cleanup failed (retried next round): %s", exc)
        await trio.sleep(settings.archive_cleanup_interval_seconds)
