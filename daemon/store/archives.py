"""The turn archives' catalog: three named dbs beside the execution history.

| db | key | value |
|---|---|---|
| archives | scope hash (16) + ref (16) | `ArchiveEntry` |
| archive_expiry | expires_at_unix_ms (u64) + scope hash + ref | b"" |
| turns | scope hash + execution id (16) + turn (u64) | `TurnRecord` |

Ownership comes first by construction: every read is keyed by the caller's scope hash, so
another scope's ref or trace key is not found — it is answered exactly like one that never
existed, and the entry's own `scope` field is compared as well (a hash collision could not
leak it). The cleanup reads `archive_expiry` oldest first and nothing else: what decides an
archive's end is the expiry stamped in its entry, never the configuration of the day.

Turn records die with their execution (retention.remove_record), like receipts; archives
live until their own expiry. Functions of a `Tx`: they run inside the caller's transaction.
"""

from __future__ import annotations

from . import keys
from .records import ArchiveEntry, TurnRecord, decode_archive, decode_turn, encode, scope_hash
from .tx import Tx


def put_archive(tx: Tx, entry: ArchiveEntry) -> None:
    """Insert or replace `entry`, keeping its expiry index exact; the first put of an entry
    also writes its turn record."""
    shash = scope_hash(entry.scope)
    ref = bytes.fromhex(entry.archive_ref)
    db = tx.dbs["archives"]
    key = keys.archive_key(shash, ref)
    old_raw = tx.txn.get(key, db=db)
    if old_raw is not None:
        old = decode_archive(old_raw)
        tx.txn.delete(keys.archive_expiry_key(old.expires_at_unix_ms, shash, ref),
                      db=tx.dbs["archive_expiry"])
    else:
        turn = TurnRecord(archive_ref=entry.archive_ref, opened_at_unix_ms=entry.opened_at_unix_ms)
        tx.txn.put(keys.turn_key(shash, bytes.fromhex(entry.execution_id), entry.turn),
                   encode(turn), db=tx.dbs["turns"])
    tx.txn.put(key, encode(entry), db=db)
    tx.txn.put(keys.archive_expiry_key(entry.expires_at_unix_ms, shash, ref), b"",
               db=tx.dbs["archive_expiry"])


def get_archive(tx: Tx, scope: str, ref: str) -> ArchiveEntry | None:
    """The entry of `ref` if `scope` owns it, else None. `ref` must be a parsed ArchiveRef."""
    raw = tx.txn.get(keys.archive_key(scope_hash(scope), bytes.fromhex(ref)),
                     db=tx.dbs["archives"])
    if raw is None:
        return None
    entry = decode_archive(raw)
    return entry if entry.scope == scope else None


def get_turn(tx: Tx, scope: str, execution_id: str, turn: int) -> ArchiveEntry | None:
    """The archive of turn `turn` of `scope`'s execution `execution_id`, if both exist."""
    raw = tx.txn.get(keys.turn_key(scope_hash(scope), bytes.fromhex(execution_id), turn),
                     db=tx.dbs["turns"])
    return None if raw is None else get_archive(tx, scope, decode_turn(raw).archive_ref)


def latest_turn(tx: Tx, scope: str, execution_id: str) -> ArchiveEntry | None:
    """The archive of the execution's latest turn (one cursor step back from the end of
    its key range)."""
    prefix = scope_hash(scope) + bytes.fromhex(execution_id)
    cur = tx.txn.cursor(db=tx.dbs["turns"])
    end = keys.prefix_end(prefix)
    ok = cur.prev() if end is not None and cur.set_range(end) else cur.last()
    if not ok or not cur.key().startswith(prefix):
        return None
    return get_archive(tx, scope, decode_turn(cur.value()).archive_ref)


def due(tx: Tx, limit: int) -> list[ArchiveEntry]:
    """Entries whose expiry is at or before `tx.now_ms`, oldest first, at most `limit`."""
    out: list[ArchiveEntry] = []
    cur = tx.txn.cursor(db=tx.dbs["archive_expiry"])
    ok = cur.first()
    while ok and len(out) < limit:
        key = bytes(cur.key())
        if keys.read_u64(key) > tx.now_ms:
            break
        raw = tx.txn.get(key[8:], db=tx.dbs["archives"])
        if raw is not None:
            out.append(decode_archive(raw))
        ok = cur.next()
    return out


def delete_archive(tx: Tx, entry: ArchiveEntry) -> None:
    """Remove `entry` and its expiry index entry (its turn record stays with its execution:
    a trace key of a removed archive then reads as absent)."""
    shash = scope_hash(entry.scope)
    ref = bytes.fromhex(entry.archive_ref)
    tx.txn.delete(keys.archive_key(shash, ref), db=tx.dbs["archives"])
    tx.txn.delete(keys.archive_expiry_key(entry.expires_at_unix_ms, shash, ref),
                  db=tx.dbs["archive_expiry"])


def uncommitted(tx: Tx) -> list[ArchiveEntry]:
    """Every entry whose turn was never committed (read at daemon start: turns a stopped
    daemon left open)."""
    out = []
    for _, raw in tx.txn.cursor(db=tx.dbs["archives"]):
        entry = decode_archive(raw)
        if entry.committed_at_unix_ms is None:
            out.append(entry)
    return out
