"""`Temporary`: the thread's managed directory of throwaway helpers (seeds/000, "Release
managed temporary helpers", and the `temporary_usage_schema` paragraph).

Agents write helper scripts and data files; `Initialize` hands each thread a private
directory for them (`temporary_dir`). `list` shows what is in it — name, size, mtime — with
the directory's `revision` (it changes on every change) and the budget measured in this
call. `release_temporary` deletes individually named helpers, and only when the caller read
the current revision: a stale revision is refused whole, a helper still in use by the
thread's processes stays (`in_use`), and every name gets its own result.

The budget measurement follows `temporary_usage_schema=1`: a count the daemon could not
measure is omitted (never sent as zero), and a measured empty directory reports numeric
zeros and `temporary_over_budget=false`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .scope import Scoped

#: The schema of the budget measurements below (spec: `temporary_usage_schema=1`).
TEMPORARY_USAGE_SCHEMA = 1

ReleaseStatus = Literal["released", "in_use", "not_found", "refused"]
#: Why a name got its status (in_use, refused, and a repeated release).
ReleaseReason = Literal["open", "mapped", "cwd", "executable", "named_by_command", "symlink",
                        "not_a_file", "bad_name", "ownership_unresolved",
                        "unsupported_platform", "changed", "already_released"]


class ListTemporary(msgspec.Struct, tag_field="type", tag="list", kw_only=True):
    """The helpers in the thread's managed directory, its revision and its budget."""


class ReleaseTemporary(msgspec.Struct, tag_field="type", tag="release_temporary", kw_only=True):
    """Delete individually named helpers, if `revision` is still the directory's."""

    #: Plain names in the managed directory (no `/`, no `..`, no NUL; symlinks are refused).
    names: list[str]
    #: The revision the caller last read (`list`, or the previous release's answer).
    revision: str


TemporaryAction = ListTemporary | ReleaseTemporary


class TemporaryParams(Scoped, kw_only=True):
    action: TemporaryAction


class Helper(msgspec.Struct, kw_only=True):
    """One entry of the managed directory."""

    name: str
    #: "file", "directory", "symlink" or "other": only files are ever released.
    kind: Literal["file", "directory", "symlink", "other"]
    size_bytes: int
    mtime_unix_ms: int


class TemporaryUsage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The budget as measured in this call. Absent fields were not measured (an entry
    vanished or could not be read while counting): never read a missing count as zero."""

    temporary_usage_schema: int
    temporary_file_count: int | None = None
    temporary_bytes: int | None = None
    #: The budget (settings `temporary_budget_files`, `temporary_budget_bytes`).
    temporary_budget_files: int | None = None
    temporary_budget_bytes: int | None = None
    #: Over either budget; reported only, nothing is ever deleted for it.
    temporary_over_budget: bool | None = None


class SiblingDirectory(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Another managed directory of the same principal: another thread's, or one whose
    thread is gone (`thread_known` false). Reported, never touched."""

    thread_id: str
    thread_known: bool
    temporary_file_count: int | None = None
    temporary_bytes: int | None = None
    newest_mtime_unix_ms: int | None = None


class Maintenance(msgspec.Struct, kw_only=True):
    """What maintenance noticed and left alone: helpers of this thread older than
    `temporary_old_seconds`, and the principal's other managed directories."""

    old_helpers: list[str]
    old_after_seconds: float
    siblings: list[SiblingDirectory]
    #: Sibling directories past `temporary_siblings_reported_max` (not listed).
    siblings_omitted: int = 0


class TemporaryListResult(msgspec.Struct, kw_only=True):
    directory: str
    revision: str
    helpers: list[Helper]
    #: Helpers past `temporary_list_entries_max`, not listed by name (the usage counts them).
    helpers_omitted: int
    usage: TemporaryUsage
    maintenance: Maintenance


class ReleaseItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The outcome for one requested name."""

    name: str
    status: ReleaseStatus
    #: Why (for in_use, refused and a repeated release).
    reason: ReleaseReason | None = None
    #: For in_use: the process that holds it (its pid, as seen in /proc).
    pid: int | None = None


class TemporaryReleaseResult(msgspec.Struct, kw_only=True):
    directory: str
    #: The directory's revision after this call: quote it on a retry.
    revision: str
    results: list[ReleaseItem]
    #: Some names were not released (in_use, not_found or refused).
    partial: bool
    usage: TemporaryUsage


RESULTS = {"list": TemporaryListResult, "release_temporary": TemporaryReleaseResult}
