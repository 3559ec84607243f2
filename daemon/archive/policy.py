"""The archive policy (seeds/002, "Policy: retention and redaction"), decided once per
archive and stamped on it.

Retention: the **base TTL** is the workspace's day count for a completed turn or for a
failed one (failures usually deserve to outlive successes); the class applies to it:
`ephemeral` caps it at `archive_ephemeral_cap_seconds` (1 h: it backs a transient recovery
window, it is not a second durable store), `standard` keeps it, `extended` multiplies it by
`archive_extended_factor` (12). Both lifetimes are computed when the archive opens and
stamped (`ArchiveStamp.ttl_*_seconds`); the commit picks one by the turn's outcome and
writes the expiry into the catalog, and the cleanup reads only that. So changing the
configuration never shortens nor extends an archive already written.

Per workspace: `[[archive_workspaces]]` entries of config.toml (daemon/settings.py,
`ArchiveWorkspace`); the longest `root` that is the workspace or one of its parents wins,
and what it leaves out comes from the global `archive_*` settings.

A turn **failed** unless it ended at the agent's input: the recognizer saw the input again
(`awaiting_input`) or the agent said so itself (`end_turn`, `task_complete`).
"""

from __future__ import annotations

import os

from vigil.daemon.settings import ArchiveWorkspace, Settings
from vigil.protocol.api.trace import POLICY_VERSION, ArchiveStamp

COMPLETED_STATUSES = frozenset({"awaiting_input", "end_turn", "task_complete"})
_DAY = 86400.0


def workspace_policy(settings: Settings, workspace_root: str) -> ArchiveWorkspace:
    """The configured policy of `workspace_root`, the globals filling what it leaves out."""
    best: ArchiveWorkspace | None = None
    for entry in settings.archive_workspaces:
        root = os.path.normpath(entry.root)
        if workspace_root == root or workspace_root.startswith(root.rstrip("/") + "/"):
            if best is None or len(root) > len(os.path.normpath(best.root)):
                best = entry
    return ArchiveWorkspace(
        root=best.root if best else "/",
        retention_class=(best and best.retention_class) or settings.archive_retention_class,
        redaction=(best and best.redaction) or settings.archive_redaction,
        completed_days=(best and best.completed_days) or settings.archive_completed_days,
        failed_days=(best and best.failed_days) or settings.archive_failed_days)


def stamp_for(settings: Settings, workspace_root: str) -> ArchiveStamp:
    """The stamp of an archive opening now for an execution of `workspace_root`."""
    p = workspace_policy(settings, workspace_root)
    return ArchiveStamp(
        retention_class=p.retention_class, redaction=p.redaction, policy_version=POLICY_VERSION,
        ttl_completed_seconds=lifetime(settings, p.retention_class, p.completed_days * _DAY),
        ttl_failed_seconds=lifetime(settings, p.retention_class, p.failed_days * _DAY),
        payload_chars=0 if p.redaction == "strict" else
        settings.archive_balanced_payload_chars if p.redaction == "balanced" else
        settings.archive_diagnostic_payload_chars)


def lifetime(settings: Settings, retention_class: str, base_seconds: float) -> float:
    if retention_class == "ephemeral":
        return min(base_seconds, settings.archive_ephemeral_cap_seconds)
    if retention_class == "extended":
        return base_seconds * settings.archive_extended_factor
    return base_seconds


def failed(status: str | None) -> bool:
    return status not in COMPLETED_STATUSES


def expiry(stamp: ArchiveStamp, ended_at_unix_ms: int, status: str | None) -> int:
    """When an archive whose turn ended at `ended_at_unix_ms` with `status` expires."""
    ttl = stamp.ttl_failed_seconds if failed(status) else stamp.ttl_completed_seconds
    return ended_at_unix_ms + int(ttl * 1000)
