"""Transaction-level primitives shared by every store operation: records, per-scope usage,
and the change log. A `Tx` wraps one LMDB transaction (read or write) for one call.

Nothing here commits or begins anything: `env.LmdbEnv` owns transaction lifetimes, so all
the invariants below hold per transaction (they are updated in the same txn that changes
what they count, or not at all).

Invariants kept exact in every write txn:
- `scopes[h].records` == number of by_scope keys with prefix h;
- `scopes[h].bytes` == sum over those records of output_stored_bytes + screen_bytes;
- `scopes[h].shell_pool` == how many of those records are persistent shells or their
  commands (they have a record cap of their own: retention.py);
- `meta.change_seq` == the largest seq ever allocated (entries may have been coalesced or
  trimmed away); every entry with seq <= `meta.changes_low` is gone.
"""

from __future__ import annotations

from typing import Iterator

import msgspec

from vigil.daemon.settings import Settings

from . import keys
from .records import ChangeEntry, ExecutionRecord, decode_record, encode, scope_hash


class ScopeUsage(msgspec.Struct, array_like=True):
    """Per-scope totals (value of the `scopes` db). New fields go at the end with
    defaults (array_like tolerates that)."""

    records: int = 0
    bytes: int = 0
    #: Records in the shell pool (`ExecutionRecord.in_shell_pool`); -1 in a value written
    #: before this count existed: `Tx.usage` counts them then.
    shell_pool: int = -1


class ChangeValue(msgspec.Struct, array_like=True, frozen=True):
    """Value of one `changes` entry. array_like: there may be 10^5 of them, keep them small.

    Compatibility: new fields go at the end with defaults (array_like tolerates that).
    """

    scope: bytes  # scope hash
    eid: bytes
    what: str
    state: str | None = None
    at: int = 0


_usage_dec = msgspec.msgpack.Decoder(ScopeUsage)
_change_dec = msgspec.msgpack.Decoder(ChangeValue)
_enc = msgspec.msgpack.Encoder()


class Tx:
    """One transaction plus the store's db handles, settings and the time of this call."""

    def __init__(self, txn, dbs: dict, settings: Settings, now_ms: int) -> None:
        self.txn = txn
        self.dbs = dbs
        self.settings = settings
        self.now_ms = now_ms

    # --- records ------------------------------------------------------------------------------

    def get_record(self, eid: bytes) -> ExecutionRecord | None:
        raw = self.txn.get(eid, db=self.dbs["executions"])
        return None if raw is None else decode_record(raw)

    def delete_prefix(self, db: str, prefix: bytes) -> None:
        """Delete every key of `db` that starts with `prefix` (an execution's chunks, its
        receipts)."""
        cur = self.txn.cursor(db=self.dbs[db])
        ok = cur.set_range(prefix)
        while ok:
            key = cur.key()
            if not key or key[: len(prefix)] != prefix:
                break
            ok = cur.delete()  # deletes and moves to the next entry

    def put_record(self, rec: ExecutionRecord) -> None:
        self.txn.put(bytes.fromhex(rec.execution_id), encode(rec), db=self.dbs["executions"])

    def scope_records(self, shash: bytes, newest_first: bool) -> Iterator[ExecutionRecord]:
        """Records of one scope in listing order (by_scope), skipping dangling keys."""
        cur = self.txn.cursor(db=self.dbs["by_scope"])
        if newest_first:
            end = keys.prefix_end(shash)
            ok = cur.prev() if end is not None and cur.set_range(end) else cur.last()
            step = cur.prev
        else:
            ok = cur.set_range(shash)
            step = cur.next
        while ok:
            key = cur.key()
            if not key.startswith(shash):
                break
            rec = self.get_record(keys.by_scope_eid(key))
            if rec is not None:
                yield rec
            ok = step()

    # --- scope usage --------------------------------------------------------------------------

    def usage(self, shash: bytes) -> ScopeUsage:
        raw = self.txn.get(shash, db=self.dbs["scopes"])
        if raw is None:
            return ScopeUsage(shell_pool=0)
        u = _usage_dec.decode(raw)
        if u.shell_pool < 0:  # a store from before the count: count once
            u.shell_pool = sum(1 for r in self.scope_records(shash, newest_first=False)
                               if r.in_shell_pool)
        return u

    def add_usage(self, shash: bytes, records: int = 0, nbytes: int = 0,
                  shell_pool: int = 0) -> ScopeUsage:
        u = self.usage(shash)
        u.records += records
        u.bytes += nbytes
        u.shell_pool += shell_pool
        if u.records <= 0 and u.bytes <= 0:
            self.txn.delete(shash, db=self.dbs["scopes"])
        else:
            self.txn.put(shash, _enc.encode(u), db=self.dbs["scopes"])
        return u

    # --- change log ---------------------------------------------------------------------------

    def meta_u64(self, name: bytes) -> int:
        raw = self.txn.get(name, db=self.dbs["meta"])
        return 0 if raw is None else keys.read_u64(raw)

    def latest_change_seq(self) -> int:
        return self.meta_u64(b"change_seq")

    def changes_low(self) -> int:
        return self.meta_u64(b"changes_low")

    def add_change(self, rec: ExecutionRecord, what: str, state: str | None = None) -> int:
        """Append one entry for `rec`; trim the log to Settings.change_log_entries. Returns seq."""
        meta, changes = self.dbs["meta"], self.dbs["changes"]
        seq = self.latest_change_seq() + 1
        self.txn.put(b"change_seq", keys.u64(seq), db=meta)
        value = ChangeValue(
            scope=scope_hash(rec.scope), eid=bytes.fromhex(rec.execution_id), what=what, state=state, at=self.now_ms
        )
        self.txn.put(keys.u64(seq), _enc.encode(value), db=changes)
        threshold = seq - self.settings.change_log_entries
        if threshold > self.changes_low():
            cur = self.txn.cursor(db=changes)
            ok = cur.first()
            while ok:
                key = cur.key()  # empty once delete() moved past the last entry
                if not key or keys.read_u64(key) > threshold:
                    break
                ok = cur.delete()  # deletes and moves to the next entry
            self.txn.put(b"changes_low", keys.u64(threshold), db=meta)
        return seq

    def drop_change(self, seq: int) -> None:
        if seq:
            self.txn.delete(keys.u64(seq), db=self.dbs["changes"])

    def changes_since(
        self, after: int, shash: bytes, eids: set[bytes] | None, limit: int
    ) -> tuple[list[ChangeEntry], int, bool]:
        latest = self.latest_change_seq()
        if after < self.changes_low() or after > latest:
            return [], latest, True
        out: list[ChangeEntry] = []
        cur = self.txn.cursor(db=self.dbs["changes"])
        ok = cur.set_range(keys.u64(after + 1))
        while ok:
            seq = keys.read_u64(cur.key())
            v = _change_dec.decode(cur.value())
            if v.scope == shash and (eids is None or v.eid in eids):
                out.append(ChangeEntry(seq=seq, execution_id=v.eid.hex(), what=v.what, state=v.state, at_unix_ms=v.at))
                if len(out) >= limit:
                    return out, seq, False
            ok = cur.next()
        return out, latest, False
