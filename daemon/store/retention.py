"""Retention (spec: "Retention and recovery"), enforced inside the transaction that grows
what it bounds, so the store never holds more than its limits between two commits.

Order of sacrifice, from the spec:
1. Per execution: output beyond Settings.retention_output_bytes is pruned oldest first
   (metadata stays; `output_retained_start` moves forward; `output_dropped_bytes` counts it).
2. Per scope, output + screen beyond retention_scope_bytes: first the output and screens of
   exited/unknown records, oldest record first; then the oldest output of active records,
   oldest record first. Active records' metadata and screens are never evicted.
3. Per scope, records beyond their cap: the oldest exited/unknown records are removed
   whole, when a new record is created (to make room for it). There are two pools, each
   with its own cap: the persistent shells and their commands (kinds `shell` and
   `shell_command`: retention_shell_commands_per_scope) and everything else (standalone
   runs, background commands: retention_records_per_scope). A new record only ever removes
   records of its own pool, so an agent's hundreds of quick shell commands never push a
   person's runs out, and the reverse (issue 12). Active records are never removed, so a
   scope with more active records than the cap keeps them all; a record that ends while
   its pool is over the cap stays readable until the next creation needs its place (its
   exit code is not lost the moment it is recorded).
4. Exited/unknown records expire retention_terminal_seconds after `terminal_at_unix_ms`,
   lazily: during catalog operations and appends (`expire_due`), never by a timer.
"""

from __future__ import annotations

import msgspec

from . import keys, timings
from .output import prune_output
from .records import ExecutionRecord, scope_hash
from .scrollback import delete_scrollback
from .tx import Tx


def remove_record(tx: Tx, rec: ExecutionRecord) -> None:
    """Delete a record and everything hanging off it, keeping scope usage exact."""
    eid = bytes.fromhex(rec.execution_id)
    shash = scope_hash(rec.scope)
    txn, dbs = tx.txn, tx.dbs
    # Usage first, while the record is still listed (an old scope's first count sees it).
    tx.add_usage(shash, records=-1, nbytes=-(rec.output_stored_bytes + rec.screen_bytes),
                 shell_pool=-1 if rec.in_shell_pool else 0)
    tx.delete_prefix("output", eid)
    timings.remove(tx, eid)
    txn.delete(eid, db=dbs["screens"])
    delete_scrollback(tx, eid)
    txn.delete(eid, db=dbs["executions"])
    txn.delete(keys.by_scope_key(shash, rec.started_unix_ms, eid), db=dbs["by_scope"])
    if rec.terminal_at_unix_ms is not None:
        txn.delete(keys.expiry_key(rec.terminal_at_unix_ms, eid), db=dbs["expiry"])
    tx.delete_prefix("receipts", eid)
    tx.delete_prefix("events", eid)
    tx.delete_prefix("turns", shash + eid)  # the archives themselves live by their own expiry
    tx.add_change(rec, "removed")


def strip_payload(tx: Tx, rec: ExecutionRecord) -> tuple[ExecutionRecord, int]:
    """Drop all output, the screen and the scrollback of `rec` (metadata stays). Returns
    (record, bytes freed)."""
    rec, freed = prune_output(tx, rec, 0)
    delete_scrollback(tx, bytes.fromhex(rec.execution_id))
    if rec.screen_bytes:
        tx.txn.delete(bytes.fromhex(rec.execution_id), db=tx.dbs["screens"])
        freed += rec.screen_bytes
        rec = msgspec.structs.replace(rec, screen_bytes=0)
    return rec, freed


def enforce_scope_bytes(tx: Tx, shash: bytes, written: dict[str, ExecutionRecord]) -> None:
    """Bring a scope's output+screen under retention_scope_bytes (order: module docstring).

    `written` maps execution ids to records already updated in this txn (they are re-read
    from it, so the caller must have put them); records changed here are put back.
    """
    cap = tx.settings.retention_scope_bytes
    usage = tx.usage(shash)
    if usage.bytes <= cap:
        return
    over = usage.bytes - cap
    for active_pass in (False, True):
        for rec in list(tx.scope_records(shash, newest_first=False)):
            if over <= 0:
                return
            if rec.is_terminal == active_pass:
                continue
            if active_pass:
                rec, freed = prune_output(tx, rec, rec.output_stored_bytes - over)
            else:
                rec, freed = strip_payload(tx, rec)
            if freed:
                over -= freed
                tx.add_usage(shash, nbytes=-freed)
                tx.put_record(rec)
                written[rec.execution_id] = rec
                tx.add_change(rec, "pruned")


def enforce_record_count(tx: Tx, shash: bytes, shell_pool: bool) -> None:
    """Remove the oldest exited/unknown records of one pool (the shells and their commands,
    or the rest) while that pool is above its cap (order: module docstring)."""
    usage = tx.usage(shash)
    if shell_pool:
        over = usage.shell_pool - tx.settings.retention_shell_commands_per_scope
    else:
        over = usage.records - usage.shell_pool - tx.settings.retention_records_per_scope
    if over <= 0:
        return
    for rec in list(tx.scope_records(shash, newest_first=False)):
        if over <= 0:
            break
        if rec.is_terminal and rec.in_shell_pool == shell_pool:
            remove_record(tx, rec)
            over -= 1


def _retention_ms(tx: Tx) -> int:
    return int(tx.settings.retention_terminal_seconds * 1000)


def expiry_due(tx: Tx) -> bool:
    """Is any terminal record past its retention deadline? One cursor.first(): cheap."""
    cur = tx.txn.cursor(db=tx.dbs["expiry"])
    return cur.first() and keys.read_u64(cur.key()) + _retention_ms(tx) <= tx.now_ms


def expire_due(tx: Tx) -> int:
    """Remove every exited/unknown record past its deadline. Returns how many were removed."""
    cur = tx.txn.cursor(db=tx.dbs["expiry"])
    limit = tx.now_ms - _retention_ms(tx)
    due: list[bytes] = []
    ok = cur.first()
    while ok and keys.read_u64(cur.key()) <= limit:
        due.append(bytes(cur.key()))
        ok = cur.next()
    for key in due:
        rec = tx.get_record(key[8:])
        if rec is not None and rec.is_terminal:
            remove_record(tx, rec)
        else:
            tx.txn.delete(key, db=tx.dbs["expiry"])  # dangling index entry
    return len(due)
